package config

import (
	"slices"
	"testing"
)

// TestDSCPListString: dscp-list accepts the public Lumina's string forms,
// expanded as its generator's get_dscp_list does ("a-b" is a to b
// inclusive), and a list of the wrong length names both lengths.
func TestDSCPListString(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []int
		err        string
	}{
		{"ranges", `traffic: {num-qps: 4, dscp-list: "1-2,5-6"}`, []int{1, 2, 5, 6}, ""},
		{"repeats", `traffic: {num-qps: 4, dscp-list: "26,26,26,26"}`, []int{26, 26, 26, 26}, ""},
		{"one range", `traffic: {num-qps: 3, dscp-list: "10-12"}`, []int{10, 11, 12}, ""},
		{"integer", `traffic: {num-qps: 1, dscp-list: 26}`, []int{26}, ""},
		{"spaces", `traffic: {num-qps: 2, dscp-list: "26, 28"}`, []int{26, 28}, ""},
		{"list", `traffic: {num-qps: 2, dscp-list: [26, 28]}`, []int{26, 28}, ""},
		{"wrong length", `traffic: {num-qps: 4, dscp-list: "1-2"}`, nil,
			"t.yaml:1:34: dscp-list: want 4 entries (one per QP; num-qps is 4), got 2"},
		{"backwards", `traffic: {num-qps: 2, dscp-list: "6-5"}`, nil,
			`t.yaml:1:34: dscp-list: "6-5": range "6-5" runs backwards (want a-b with a ≤ b)`},
		{"out of range", `traffic: {num-qps: 2, dscp-list: "63-64"}`, nil,
			`t.yaml:1:34: dscp-list: "63-64": "63-64" out of range 0..63`},
		{"garbage", `traffic: {num-qps: 2, dscp-list: "1,,2"}`, nil,
			`t.yaml:1:34: dscp-list: "1,,2": bad item "": want a list or a string like "26,28" or "1-2,5-6" (DSCPs or ranges a-b in 0..63)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tt.yaml))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("Parse(%s) error = %v, want %s", tt.yaml, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.yaml, err)
			}
			if !slices.Equal(got.Traffic.DSCPList, tt.want) {
				t.Errorf("Parse(%s).Traffic.DSCPList = %v, want %v", tt.yaml, got.Traffic.DSCPList, tt.want)
			}
		})
	}
}
