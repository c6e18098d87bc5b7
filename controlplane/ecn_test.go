package controlplane

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
)

// renderRed renders ecn_red entries as dscp:kmin:kmax:mask.
func renderRed(es []ECNRedEntry) string {
	var s []string
	for _, e := range es {
		s = append(s, fmt.Sprintf("%d:%d:%d:%#x", e.DSCP, e.KminCells, e.KmaxCells, e.RandMask))
	}
	return strings.Join(s, " ")
}

// TestECNRed: the exact Egress.ecn_red entries of switch.ecn configs: one
// per DSCP the map puts on a marked priority; thresholds in whole cells
// rounded down (80-byte cells unless told), saturated at 19 bits; the
// random mask one below the power of two nearest in ratio to
// (kmax − kmin)/pmax, in cells.
func TestECNRed(t *testing.T) {
	def := (&config.NIC{}).DSCPToPriority()
	moved := (&config.NIC{PrioDSCPMap: map[int][]int{0: {24}, 3: {46}}}).DSCPToPriority()
	for _, tc := range []struct {
		name string
		ecn  *config.ECN
		m    [64]uint8
		cell int
		want string
	}{
		{"off", nil, def, 0, ""},
		// 102400/80 = 1280, 409600/80 = 5120; 3840/0.2 = 19200 ≈ 2^14.23 → 2^14:
		// pmax' = 3840/16384 = 0.234.
		{"issue example", &config.ECN{Priorities: []int{3}, KminKB: 100, KmaxKB: 400, Pmax: 0.2}, def, 0,
			"24:1280:5120:0x3fff 25:1280:5120:0x3fff 26:1280:5120:0x3fff 27:1280:5120:0x3fff " +
				"28:1280:5120:0x3fff 29:1280:5120:0x3fff 30:1280:5120:0x3fff 31:1280:5120:0x3fff"},
		// DSCP 24 moved to priority 0, 46 to priority 3.
		{"prio-dscp-map", &config.ECN{Priorities: []int{3}, KminKB: 0, KmaxKB: 10, Pmax: 1}, moved, 0,
			"25:0:128:0x7f 26:0:128:0x7f 27:0:128:0x7f 28:0:128:0x7f 29:0:128:0x7f 30:0:128:0x7f 31:0:128:0x7f 46:0:128:0x7f"},
		// Two priorities; 176-byte cells: 1024/176 = 5, 2048/176 = 11;
		// 6/0.5 = 12 ≈ 2^3.58 → 2^4.
		{"two priorities, Tofino 2 cells", &config.ECN{Priorities: []int{0, 7}, KminKB: 1, KmaxKB: 2, Pmax: 0.5}, def, 176,
			"0:5:11:0xf 1:5:11:0xf 2:5:11:0xf 3:5:11:0xf 4:5:11:0xf 5:5:11:0xf 6:5:11:0xf 7:5:11:0xf " +
				"56:5:11:0xf 57:5:11:0xf 58:5:11:0xf 59:5:11:0xf 60:5:11:0xf 61:5:11:0xf 62:5:11:0xf 63:5:11:0xf"},
		// 1 KiB = 12 cells, 2 KiB = 25: 13/0.9 = 14.4 ≈ 2^3.85 → 2^4.
		{"rounds up", &config.ECN{Priorities: []int{6}, KminKB: 1, KmaxKB: 2, Pmax: 0.9}, def, 0,
			"48:12:25:0xf 49:12:25:0xf 50:12:25:0xf 51:12:25:0xf 52:12:25:0xf 53:12:25:0xf 54:12:25:0xf 55:12:25:0xf"},
		// 1 KiB = 12 cells, 3 KiB = 38: 26/1 ≈ 2^4.70 → 2^5 (pmax' 0.81).
		{"pmax 1", &config.ECN{Priorities: []int{5}, KminKB: 1, KmaxKB: 3, Pmax: 1}, def, 0,
			"40:12:38:0x1f 41:12:38:0x1f 42:12:38:0x1f 43:12:38:0x1f 44:12:38:0x1f 45:12:38:0x1f 46:12:38:0x1f 47:12:38:0x1f"},
		// kmin 40000 KiB = 512000 cells; kmax 1 GiB saturates at 2^19 − 1;
		// 12287/1e-9 is far above 2^32: the mask is 32 bits of ones.
		{"saturated", &config.ECN{Priorities: []int{1}, KminKB: 40000, KmaxKB: config.MaxECNKB, Pmax: 1e-9}, def, 0,
			"8:512000:524287:0xffffffff 9:512000:524287:0xffffffff 10:512000:524287:0xffffffff 11:512000:524287:0xffffffff " +
				"12:512000:524287:0xffffffff 13:512000:524287:0xffffffff 14:512000:524287:0xffffffff 15:512000:524287:0xffffffff"},
		// Both thresholds in one cell (1 and 2 KiB with 4096-byte cells):
		// 0 cells apart, mask 0 (marked above the cell).
		{"one cell apart", &config.ECN{Priorities: []int{2}, KminKB: 1, KmaxKB: 2, Pmax: 0.5}, def, 4096,
			"16:0:0:0x0 17:0:0:0x0 18:0:0:0x0 19:0:0:0x0 20:0:0:0x0 21:0:0:0x0 22:0:0:0x0 23:0:0:0x0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderRed(ECNRed(tc.ecn, tc.m, tc.cell)); got != tc.want {
				t.Errorf("ECNRed = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTranslateECN: Translate puts the intent's ECN entries in the plan
// and leaves everything else as without ECN; without ECN there are none.
func TestTranslateECN(t *testing.T) {
	conns := []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA1, 5, 0xB1, 7)}
	in := Intent{Events: []config.ExpandedEvent{{QP: 0, RelPSN: 1, Iter: 1, Type: config.EventDrop}}}
	plain, err := Translate(in, conns, testPorts)
	if err != nil {
		t.Fatal(err)
	}
	if plain.ECNRed != nil {
		t.Errorf("ECNRed without ECN = %v, want none", plain.ECNRed)
	}
	in.ECN = &config.ECN{Priorities: []int{3}, KminKB: 100, KmaxKB: 400, Pmax: 0.2}
	in.DSCPToPriority = (&config.NIC{PrioDSCPMap: map[int][]int{3: {26}, 0: {24, 25, 27, 28, 29, 30, 31}}}).DSCPToPriority()
	p, err := Translate(in, conns, testPorts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := renderRed(p.ECNRed), "26:1280:5120:0x3fff"; got != want {
		t.Errorf("ECNRed = %s, want %s", got, want)
	}
	p.ECNRed = nil
	if got, want := fmt.Sprintf("%+v", *p), fmt.Sprintf("%+v", *plain); got != want {
		t.Errorf("plan with ECN, its entries aside = %s, want %s", got, want)
	}
	e := ECNRedEntry{DSCP: 26, KminCells: 1280, KmaxCells: 5120, RandMask: 0x3fff}
	if name, params := e.Action(); fmt.Sprintf("%s %v", name, params) != "Egress.set_red [{1280 19} {5120 19} {16383 32}]" {
		t.Errorf("Action() = %s %v, want Egress.set_red [{1280 19} {5120 19} {16383 32}]", name, params)
	}
}
