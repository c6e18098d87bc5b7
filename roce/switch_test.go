package roce

import (
	"encoding/hex"
	"testing"
)

// TestMirrorSwitchField pins the 48-bit mirror sequence field of both copy
// formats: Switch<<41 | Seq, so switch 0 keeps a one-switch run's bytes and
// switch 5 puts 5<<1 = 0x0a in the first byte.
func TestMirrorSwitchField(t *testing.T) {
	orig, _ := vectorSpecs[1].Append(nil)
	pfc := BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 65535})
	for _, tc := range []struct {
		name   string
		sw     uint8
		seq    uint64
		srcMAC string // source MAC of the RoCE copy = bytes 6..11 of the wrapped one
		looks  bool   // LooksMirrored: only sequence numbers below 2^32
	}{
		{name: "switch-0", sw: 0, seq: 0x12_3456_789a, srcMAC: "00123456789a"},
		{name: "switch-5", sw: 5, seq: 0x12_3456_789a, srcMAC: "0a123456789a"},
		{name: "switch-31-last-seq", sw: 31, seq: MirrorSeqMask, srcMAC: "3effffffffff"},
		{name: "switch-0-seq-1", sw: 0, seq: 1, srcMAC: "000000000001", looks: true},
		{name: "switch-5-seq-1", sw: 5, seq: 1, srcMAC: "0a0000000001", looks: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MirrorMeta{Seq: tc.seq, Switch: tc.sw, TimestampNs: 0xABCD_0000_0001, Event: EventECN}
			if got := MirrorSeqField(tc.sw, tc.seq); got != MAC(macHex(t, tc.srcMAC)).Uint64() {
				t.Errorf("MirrorSeqField(%d, %#x) = %#x, want %s", tc.sw, tc.seq, got, tc.srcMAC)
			}
			cp := append([]byte(nil), orig...)
			if !ApplyMirror(cp, m, DefaultMirrorPort, 0x4242) {
				t.Fatal("ApplyMirror() = false")
			}
			if got := hex.EncodeToString(cp[0:12]); got != "abcd00000001"+tc.srcMAC {
				t.Errorf("ApplyMirror MACs = %s, want abcd00000001%s", got, tc.srcMAC)
			}
			var p Packet
			if err := (&Parser{VerifyICRC: true, MirrorPort: DefaultMirrorPort}).Parse(cp, 0, &p); err != nil {
				t.Fatal(err)
			}
			if p.ICRC != ICRCOK || p.Mirror() != m || !p.LooksMirrored() {
				t.Errorf("raw copy: icrc %v, Mirror() = %+v, LooksMirrored %v; want ok, %+v, true (a raw copy)", p.ICRC, p.Mirror(), p.LooksMirrored(), m)
			}
			if !RestoreMirror(cp, DefaultMirrorPort) {
				t.Fatal("RestoreMirror() = false")
			}
			if err := (&Parser{VerifyICRC: true}).Parse(cp, 0, &p); err != nil || p.ICRC != ICRCOK || p.Mirror() != m || p.LooksMirrored() != tc.looks {
				t.Errorf("restored copy: %v, icrc %v, Mirror() = %+v, LooksMirrored %v; want ok, %+v, %v", err, p.ICRC, p.Mirror(), p.LooksMirrored(), m, tc.looks)
			}

			mm := MirrorMeta{Seq: tc.seq, Switch: tc.sw, TimestampNs: 0xA0B0C0D0E0F0, Event: EventPause}
			b := AppendMACMirror(nil, mm, false, 9, pfc)
			if got, want := hex.EncodeToString(b[:MACMirrorHeaderLen]), "a0b0c0d0e0f0"+tc.srcMAC+"88b5"+"07"+"00"+"0009"; got != want {
				t.Errorf("AppendMACMirror header = %s, want %s", got, want)
			}
			var w MACMirror
			if err := ParseMACMirror(b, &w); err != nil || w.MirrorMeta != mm {
				t.Errorf("ParseMACMirror = %+v, %v; want %+v", w.MirrorMeta, err, mm)
			}
		})
	}
}

// TestLooksMirroredSwitchByte checks the heuristic's first byte: a switch
// id shifted left by one passes, a multicast bit or bits 46..47 do not.
func TestLooksMirroredSwitchByte(t *testing.T) {
	orig, _ := vectorSpecs[1].Append(nil)
	for _, tc := range []struct {
		b0, b1 byte
		want   bool
	}{{0x00, 0, true}, {0x0a, 0, true}, {0x3e, 0, true}, {0x01, 0, false}, {0x40, 0, false}, {0x0a, 1, false}} {
		cp := append([]byte(nil), orig...)
		ApplyMirror(cp, MirrorMeta{Seq: 1, Event: EventNone}, DefaultMirrorPort, 1)
		RestoreMirror(cp, DefaultMirrorPort)
		cp[6], cp[7] = tc.b0, tc.b1
		var p Packet
		if err := (&Parser{}).Parse(cp, 0, &p); err != nil {
			t.Fatal(err)
		}
		if got := p.LooksMirrored(); got != tc.want {
			t.Errorf("LooksMirrored(src MAC %02x%02x…) = %v, want %v", tc.b0, tc.b1, got, tc.want)
		}
	}
}

func macHex(t *testing.T, s string) [6]byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 6 {
		t.Fatalf("bad MAC %q", s)
	}
	return [6]byte(b)
}
