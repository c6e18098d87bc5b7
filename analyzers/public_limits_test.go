package analyzers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #38, point 6: a public counter dump is walked in linear time and a
// mapping of more than MaxCounterKeys keys is refused at the first key
// beyond the limit, FILE:LINE:COL (yaml.v3 decoding it into a Go map took
// 3.7 s at 40,000 keys, quadratic in them).
func TestReadPublicCountersLimits(t *testing.T) {
	var many strings.Builder
	many.WriteString("port-counters: {port_rcv_packets: 7}\nhw-counters:\n")
	for i := range MaxCounterKeys + 1 {
		fmt.Fprintf(&many, "  c%d: %d\n", i, i)
	}
	for _, tc := range []struct {
		name, yaml string
		want       string // the error with the file's path as FILE, or the counters
	}{
		{name: "counters", yaml: "port-counters: {port_rcv_packets: 7}\nhw-counters:\n  out_of_sequence: 2\n  rate: 1.5\n  neg: -1\n  hex: 0x10\n",
			want: "map[hex:16 out_of_sequence:2 port_rcv_packets:7]"},
		{name: "empty", yaml: "", want: "map[]"},
		{name: "too many keys", yaml: many.String(),
			want: fmt.Sprintf("FILE:%d:3: more than %d keys in hw-counters (analyzers.MaxCounterKeys)", MaxCounterKeys+3, MaxCounterKeys)},
		{name: "duplicate", yaml: "hw-counters:\n  a: 1\n  a: 2\n", want: `FILE:3:3: duplicate key "a" in hw-counters (first at 2:3)`},
		{name: "not a mapping", yaml: "hw-counters: [1, 2]\n", want: "FILE:1:14: hw-counters: want a mapping of counters"},
		{name: "top level", yaml: "- 1\n", want: "FILE:1:1: want a mapping of counter types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "requester_counter_start.yml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := readPublicCounters(path)
			got := fmt.Sprint(c)
			if err != nil {
				got = strings.ReplaceAll(err.Error(), path, "FILE")
			}
			if got != tc.want {
				t.Errorf("readPublicCounters(%s) = %s, want %s", tc.name, got, tc.want)
			}
		})
	}
}
