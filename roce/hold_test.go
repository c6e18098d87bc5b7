package roce

import (
	"encoding/binary"
	"testing"
)

func TestEncodeHold(t *testing.T) {
	for _, tc := range []struct {
		ns         int64
		code       HoldCode
		back, unit int64
	}{
		{-5, 0, 0, 1},
		{0, 0, 0, 1},
		{88, 88, 88, 1},
		{5000, 5000, 5000, 1},
		{8191, 0x1FFF, 8191, 1},
		{8192, 1<<13 | 1024, 8192, 8},
		{20000, 1<<13 | 2500, 20000, 8},
		{20007, 1<<13 | 2500, 20000, 8},
		{65535, 1<<13 | 8191, 65528, 8},
		{65536, 2<<13 | 1024, 65536, 64},
		{1_000_000, 3<<13 | 1953, 999936, 512},
		{100_000_000, 5<<13 | 3051, 99975168, 32768},
		{MaxHoldNs, 0xFFFF, MaxHoldNs, 1 << 21},
		{MaxHoldNs * 4, 0xFFFF, MaxHoldNs, 1 << 21},
	} {
		c := EncodeHold(tc.ns)
		if c != tc.code || c.Ns() != tc.back || c.Unit() != tc.unit {
			t.Errorf("EncodeHold(%d) = %#x (%d ns, unit %d), want %#x (%d ns, unit %d)", tc.ns, c, c.Ns(), c.Unit(), tc.code, tc.back, tc.unit)
		}
		if tc.ns >= 0 && tc.ns <= MaxHoldNs && (c.Ns() > tc.ns || tc.ns >= c.Ns()+c.Unit()) {
			t.Errorf("EncodeHold(%d) = [%d, %d), not around it", tc.ns, c.Ns(), c.Ns()+c.Unit())
		}
	}
	// Every hold up to 2^24 ns decodes to at most itself, within one unit.
	for ns := int64(0); ns < 1<<24; ns += 7 {
		c := EncodeHold(ns)
		if c.Ns() > ns || ns-c.Ns() >= c.Unit() {
			t.Fatalf("EncodeHold(%d) = %d ns, unit %d", ns, c.Ns(), c.Unit())
		}
	}
}

// TestMirrorHold: a held copy carries its hold in the UDP source port
// (raw) and the UDP checksum (restored), and its ICRC still verifies; an
// unheld copy's restored checksum is 0.
func TestMirrorHold(t *testing.T) {
	for _, tc := range []struct {
		ev       Event
		hold     int64
		wantHold int64
		wantCsum uint16
	}{
		{EventDelay, 20000, 20000, 1<<13 | 2500},
		{EventReorder, 176, 176, 176},
		{EventNone, 20000, 0, 0},
		{EventDuplicate, 20000, 0, 0},
	} {
		t.Run(tc.ev.String(), func(t *testing.T) {
			orig, _ := vectorSpecs[1].Append(nil)
			cp := append([]byte(nil), orig...)
			m := MirrorMeta{Seq: 7, TimestampNs: 1000, Event: tc.ev, HoldNs: tc.hold}
			if !ApplyMirror(cp, m, DefaultMirrorPort, 0x4242) {
				t.Fatal("ApplyMirror() = false")
			}
			want := m
			want.HoldNs = tc.wantHold
			var p Packet
			if err := (&Parser{VerifyICRC: true, MirrorPort: DefaultMirrorPort}).Parse(cp, 0, &p); err != nil || p.ICRC != ICRCOK || p.Mirror() != want {
				t.Errorf("raw copy: %v icrc %v meta %+v, want ok, %+v", err, p.ICRC, p.Mirror(), want)
			}
			if !RestoreMirror(cp, DefaultMirrorPort) {
				t.Fatal("RestoreMirror() = false")
			}
			if got := binary.BigEndian.Uint16(cp[40:]); got != tc.wantCsum {
				t.Errorf("restored UDP checksum = %#x, want %#x", got, tc.wantCsum)
			}
			if err := (&Parser{VerifyICRC: true}).Parse(cp, 0, &p); err != nil || p.ICRC != ICRCOK || p.Mirror() != want || p.UDPSrc != 0xC001 {
				t.Errorf("restored copy: %v icrc %v meta %+v port %#x, want ok, %+v, 0xc001", err, p.ICRC, p.Mirror(), p.UDPSrc, want)
			}
		})
	}
}

func TestEventText(t *testing.T) {
	for e := EventNone; e <= EventPause; e++ {
		b, err := e.MarshalText()
		if err != nil || string(b) != e.String() {
			t.Errorf("Event(%d).MarshalText() = %q, %v, want %q", e, b, err, e.String())
		}
		var got Event
		if err := got.UnmarshalText(b); err != nil || got != e {
			t.Errorf("UnmarshalText(%q) = %v, %v, want %v", b, got, err, e)
		}
	}
	if b, err := Event(8).MarshalText(); err == nil {
		t.Errorf("Event(8).MarshalText() = %q, want an error", b)
	}
	for _, in := range []string{"", "bit-error", "DROP", "event(8)"} {
		var e Event
		if err := e.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("UnmarshalText(%q) = %v, want an error", in, e)
		}
	}
}
