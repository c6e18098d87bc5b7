package tests

import (
	"bytes"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
)

// TestWiresharkSwitch: the dissector reads the switch of a fabric's copy
// from its source MAC (lumina.switch: bits 41..45) and the sequence number
// without it (lumina.seq: bits 0..39), and its Info column ends with the
// "[mirror sw=N …]" lumina decode prints; a copy of switch 0 shows no sw=.
func TestWiresharkSwitch(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	spec := roce.FrameSpec{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC123,
		Opcode: roce.RCWriteMiddle, DestQP: 0x12, PSN: 100, Payload: bytes.Repeat([]byte{0xAB}, 64),
	}
	tests := []struct {
		sw   uint8
		seq  uint64
		raw  bool // big sequence numbers fail the auto heuristic when restored
		want string
		info string
	}{
		{0, 5, false, "0|5", "[mirror seq=5 ts=1000 event=none]"},
		{3, 6, false, "3|6", "[mirror sw=3 seq=6 ts=1001 event=none]"},
		{31, 7, true, "31|7", "[mirror sw=31 seq=7 ts=1002 event=none]"},
		{3, roce.MirrorSeqMask, true, "3|1099511627775", "[mirror sw=3 seq=1099511627775 ts=1003 event=none]"},
	}
	var copies []mirrorCopy
	for i, tc := range tests {
		copies = append(copies, mirrorCopy{spec, roce.MirrorMeta{Switch: tc.sw, Seq: tc.seq, TimestampNs: uint64(1000 + i)}, tc.raw})
	}
	path := writeMirrorCopies(t, 0, copies)
	got := luaFields(t, tshark, path, "", "lumina.switch", "lumina.seq", "_ws.col.Info")
	r := luminaExit(t, 0, "decode", path)
	decoded := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(got) != len(tests) || len(decoded) != len(tests) {
		t.Fatalf("tshark printed %d frames, lumina decode %d, want %d", len(got), len(decoded), len(tests))
	}
	mirrorRe := regexp.MustCompile(` (\[mirror [^\]]*\])$`)
	for i, tc := range tests {
		f := strings.Split(got[i], "|")
		if len(f) != 3 {
			t.Fatalf("tshark %q: want 3 fields", got[i])
		}
		if g := f[0] + "|" + f[1]; g != tc.want {
			t.Errorf("copy %d: lumina.switch|lumina.seq = %q, want %q", i, g, tc.want)
		}
		if !strings.HasSuffix(f[2], " "+tc.info) {
			t.Errorf("copy %d: Info %q, want it to end with %q", i, f[2], tc.info)
		}
		if m := mirrorRe.FindStringSubmatch(decoded[i]); m == nil || m[1] != tc.info {
			t.Errorf("copy %d: lumina decode %q, want it to end with %q", i, decoded[i], tc.info)
		}
	}
}
