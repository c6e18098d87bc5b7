package roce

import (
	"encoding/json"
	"testing"
)

// TestParseMAC: every 6-byte form net.ParseMAC takes parses; other lengths
// and garbage are errors.
func TestParseMAC(t *testing.T) {
	want := MAC{0x02, 0x00, 0x5e, 0x10, 0xab, 0xcd}
	for _, tc := range []struct {
		in  string
		err bool
	}{
		{"02:00:5e:10:ab:cd", false},
		{"02-00-5E-10-AB-CD", false},
		{"0200.5e10.abcd", false},
		{"", true},
		{"02:00:5e:10:ab", true},
		{"02:00:5e:10:ab:cd:ef:01", true}, // EUI-64
		{"02:00:5e:10:ab:zz", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMAC(tc.in)
			if tc.err {
				if err == nil {
					t.Errorf("ParseMAC(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != want {
				t.Errorf("ParseMAC(%q) = %v, %v; want %v", tc.in, got, err, want)
			}
		})
	}
}

// TestMACText: JSON carries a MAC as its string, and back; a bad string
// is an error.
func TestMACText(t *testing.T) {
	type doc struct {
		M MAC `json:"mac"`
	}
	b, err := json.Marshal(doc{M: MAC{2, 0, 0, 0, 0, 0x1f}})
	if err != nil || string(b) != `{"mac":"02:00:00:00:00:1f"}` {
		t.Errorf("json.Marshal = %s, %v; want {\"mac\":\"02:00:00:00:00:1f\"}", b, err)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil || d.M != (MAC{2, 0, 0, 0, 0, 0x1f}) {
		t.Errorf("json.Unmarshal(%s) = %v, %v", b, d.M, err)
	}
	if err := json.Unmarshal([]byte(`{"mac":"02:00"}`), &d); err == nil {
		t.Error(`json.Unmarshal({"mac":"02:00"}) succeeded, want an error`)
	}
}

// TestMACUint64: the 48-bit number is big-endian, and MACFromUint64 keeps
// only its low 48 bits.
func TestMACUint64(t *testing.T) {
	m := MAC{0x01, 0x23, 0x45, 0x67, 0x89, 0xab}
	if got := m.Uint64(); got != 0x0123456789ab {
		t.Errorf("Uint64() = %#x, want 0x0123456789ab", got)
	}
	if got := MACFromUint64(0xffff_0123456789ab); got != m {
		t.Errorf("MACFromUint64(0xffff0123456789ab) = %v, want %v", got, m)
	}
	if !(MAC{}).IsZero() || m.IsZero() {
		t.Error("IsZero: want true only for 00:00:00:00:00:00")
	}
}
