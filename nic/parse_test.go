package nic

import (
	"errors"
	"maps"
	"testing"
)

var mlxregTests = []struct {
	name string
	in   string
	want map[string]uint64
}{
	{"nvidia sample", `Sending access register...

Field Name                    | Data
============================================
roce_adp_retrans_field_select | 0x00000001
roce_slow_restart_field_select | 0x00000001
roce_adp_retrans_en           | 0x00000001
roce_slow_restart_en          | 0x00000000
adp_retx_base_timeout_min     | 0x00000fa0
============================================
`, map[string]uint64{"roce_adp_retrans_field_select": 1, "roce_slow_restart_field_select": 1, "roce_adp_retrans_en": 1,
		"roce_slow_restart_en": 0, "adp_retx_base_timeout_min": 4000}},
	{"decimal and noise", "Field Name | Data\nx | 7\nnot a line\ny|0x10\n", map[string]uint64{"x": 7, "y": 16}},
	{"empty", "", nil},
	{"error text", "-E- Failed to open device: 0000:3b:00.0\n", nil},
}

func TestParseMlxreg(t *testing.T) {
	for _, tt := range mlxregTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMlxreg([]byte(tt.in))
			if tt.want == nil {
				if !errors.Is(err, ErrCommand) {
					t.Errorf("ParseMlxreg = %v, %v, want ErrCommand", got, err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("ParseMlxreg = %v, %v, want %v", got, err, tt.want)
			}
		})
	}
}

var qosTests = []struct {
	name    string
	in      string
	trust   string
	dscp    map[int]int
	wantErr bool
}{
	{"dscp", "DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n\tprio:0 dscp:07,06,05,04,03,02,01,00,\n\tprio:3 dscp:26,24,\ndefault priority:\n",
		"dscp", map[int]int{0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 24: 3, 26: 3}, false},
	{"pcp without map", "Priority trust state: pcp\nReceive buffer size (bytes): 0,\n", "pcp", nil, false},
	{"no trust", "mlnx_qos: error\n", "", nil, true},
	{"bad dscp", "Priority trust state: dscp\n\tprio:1 dscp:99,\n", "", nil, true},
}

func TestParseMlnxQoS(t *testing.T) {
	for _, tt := range qosTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMlnxQoS([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrCommand) {
					t.Errorf("ParseMlnxQoS = %+v, %v, want ErrCommand", got, err)
				}
				return
			}
			if err != nil || got.Trust != tt.trust || !maps.Equal(got.DSCP2Prio, tt.dscp) {
				t.Errorf("ParseMlnxQoS = %+v, %v, want trust %s map %v", got, err, tt.trust, tt.dscp)
			}
		})
	}
}

func FuzzParseMlxreg(f *testing.F) {
	for _, tt := range mlxregTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMlxreg(b)
		if err == nil && len(m) == 0 {
			t.Fatal("no error and no fields")
		}
	})
}

func FuzzParseMlnxQoS(f *testing.F) {
	for _, tt := range qosTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseMlnxQoS(b)
		if err != nil {
			return
		}
		for d, p := range q.DSCP2Prio {
			if d < 0 || d > 63 || p < 0 || p > 7 {
				t.Fatalf("out of range %d→%d", d, p)
			}
		}
	})
}
