package roce

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
)

func TestEncodeDepth(t *testing.T) {
	for _, tc := range []struct {
		bytes       int64
		code        DepthCode
		back, unit  int64
		canonical   bool
		description string
	}{
		{-1, 0, 0, 1, true, "negative"},
		{0, 0, 0, 1, true, "empty"},
		{1, 1, 1, 1, true, "one byte"},
		{255, 0xFF, 255, 1, true, "largest exact"},
		{256, 1<<8 | 32, 256, 8, true, "first rounded"},
		{263, 1<<8 | 32, 256, 8, true, "rounded down"},
		{2040, 1<<8 | 255, 2040, 8, true, "largest e=1"},
		{2041, 1<<8 | 255, 2040, 8, true, "2041 rounds to 2040"},
		{2047, 1<<8 | 255, 2040, 8, true, "last of e=1"},
		{2048, 2<<8 | 32, 2048, 64, true, "first e=2"},
		{3234, 2<<8 | 50, 3200, 64, true, "three 1078-byte frames"},
		{100 * 1024, 3<<8 | 200, 102400, 512, true, "100 KiB"},
		{MaxDepth, MaxDepthCode, MaxDepth, 1 << 21, true, "max"},
		{MaxDepth + 1<<21, MaxDepthCode, MaxDepth, 1 << 21, true, "saturated"},
		{1 << 40, MaxDepthCode, MaxDepth, 1 << 21, true, "far beyond"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			c := EncodeDepth(tc.bytes)
			if c != tc.code || c.Bytes() != tc.back || c.Unit() != tc.unit || c.Canonical() != tc.canonical {
				t.Errorf("EncodeDepth(%d) = %#x (%d B, unit %d, canonical %v), want %#x (%d B, unit %d, canonical %v)",
					tc.bytes, c, c.Bytes(), c.Unit(), c.Canonical(), tc.code, tc.back, tc.unit, tc.canonical)
			}
		})
	}
	// Every depth up to 2^26 bytes decodes to at most itself, within one
	// unit, and every code EncodeDepth returns is canonical.
	for b := int64(0); b < 1<<26; b += 13 {
		c := EncodeDepth(b)
		if c.Bytes() > b || b-c.Bytes() >= c.Unit() || !c.Canonical() || c > MaxDepthCode {
			t.Fatalf("EncodeDepth(%d) = %#x: %d B, unit %d", b, c, c.Bytes(), c.Unit())
		}
	}
	for _, c := range []DepthCode{2 << 8, 1<<8 | 31, 0x800} {
		if c.Canonical() {
			t.Errorf("DepthCode(%#x).Canonical() = true, want false", c)
		}
	}
}

// TestMirrorDepth: ApplyMirror writes the depth code into TTL bits 3..7 and
// the BTH's resv6, keeps the event in TTL bits 0..2 and FECN/BECN as they
// were; the ICRC of the raw and the restored copy still verifies and
// Mirror() reads the depth back (rounded down to the code).
func TestMirrorDepth(t *testing.T) {
	for _, tc := range []struct {
		spec    int // vectorSpecs index
		ipv6    bool
		ev      Event
		depth   int64
		ttl     byte
		wantQ   int64
		wantFB  byte // BTH byte 4 of the copy
		hold    int64
		wantHld int64
	}{
		{1, false, EventNone, 0, 0, 0, 0, 0, 0},
		{1, false, EventNone, 3234, (2<<8 | 50) >> 6 << 3, 3200, (2<<8 | 50) & 0x3F, 0, 0},
		{1, false, EventECN, 255, 0xFF>>6<<3 | 2, 255, 0x3F, 0, 0},
		{1, false, EventDelay, MaxDepth * 2, 0x1F<<3 | 4, MaxDepth, 0x3F, 20000, 20000},
		{0, false, EventDuplicate, 2041, (1<<8|255)>>6<<3 | 6, 2040, 0x40 | 0x3F, 0, 0}, // CNP: BECN kept
		{1, true, EventReorder, 256, (1<<8|32)>>6<<3 | 5, 256, 32, 176, 176},
	} {
		t.Run(fmt.Sprintf("%v/%d/v6=%v", tc.ev, tc.depth, tc.ipv6), func(t *testing.T) {
			spec := vectorSpecs[tc.spec]
			if tc.ipv6 {
				spec.SrcIP, spec.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
			}
			orig, err := spec.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			var p Packet
			if err := (&Parser{}).Parse(orig, 0, &p); err != nil {
				t.Fatal(err)
			}
			ttlOff, fbOff := p.L3+8, p.BTHOff+4
			if tc.ipv6 {
				ttlOff = p.L3 + 7
			}
			cp := append([]byte(nil), orig...)
			m := MirrorMeta{Seq: 9, TimestampNs: 77, Event: tc.ev, HoldNs: tc.hold, QDepth: tc.depth}
			if !ApplyMirror(cp, m, DefaultMirrorPort, 0x4242) {
				t.Fatal("ApplyMirror() = false")
			}
			if cp[ttlOff] != tc.ttl || cp[fbOff] != tc.wantFB {
				t.Errorf("copy TTL = %#x, BTH byte 4 = %#x, want %#x, %#x", cp[ttlOff], cp[fbOff], tc.ttl, tc.wantFB)
			}
			if cp[fbOff]&0xC0 != orig[fbOff]&0xC0 {
				t.Errorf("FECN/BECN = %#x, want %#x", cp[fbOff]&0xC0, orig[fbOff]&0xC0)
			}
			if !tc.ipv6 && IPv4Checksum(cp[p.L3:p.L4]) != 0 {
				t.Error("IPv4 header checksum of the copy invalid")
			}
			want := MirrorMeta{Seq: 9, TimestampNs: 77, Event: tc.ev, HoldNs: tc.wantHld, QDepth: tc.wantQ}
			if err := (&Parser{VerifyICRC: true, MirrorPort: DefaultMirrorPort}).Parse(cp, 0, &p); err != nil || p.ICRC != ICRCOK || p.Mirror() != want || !p.LooksMirrored() {
				t.Errorf("raw copy: %v icrc %v meta %+v, want ok, %+v", err, p.ICRC, p.Mirror(), want)
			}
			if p.DepthCode() != EncodeDepth(tc.depth) {
				t.Errorf("raw copy DepthCode() = %#x, want %#x", p.DepthCode(), EncodeDepth(tc.depth))
			}
			if !RestoreMirror(cp, DefaultMirrorPort) {
				t.Fatal("RestoreMirror() = false")
			}
			if err := (&Parser{VerifyICRC: true}).Parse(cp, 0, &p); err != nil || p.ICRC != ICRCOK || p.Mirror() != want || !p.LooksMirrored() {
				t.Errorf("restored copy: %v icrc %v meta %+v, want ok, %+v", err, p.ICRC, p.Mirror(), want)
			}
			// From the UDP payload on, the restored copy equals the
			// original but for the BTH's resv6.
			rest, origRest := append([]byte(nil), cp[p.BTHOff:]...), orig[p.BTHOff:]
			rest[4] = rest[4]&^0x3F | origRest[4]&0x3F
			if !bytes.Equal(rest, origRest) {
				t.Errorf("restored copy from the BTH on\n%x\nwant\n%x", rest, origRest)
			}
		})
	}
}

// TestMirrorDepthShortCopy: a copy cut before the BTH's byte 4 gets the
// depth's top bits in the TTL only, and reads back its TTL part.
func TestMirrorDepthShortCopy(t *testing.T) {
	orig, _ := vectorSpecs[1].Append(nil)
	cp := append([]byte(nil), orig[:14+20+8+4]...) // up to the BTH's P_Key
	if !ApplyMirror(cp, MirrorMeta{Event: EventDrop, QDepth: 3234}, DefaultMirrorPort, 1) {
		t.Fatal("ApplyMirror() = false")
	}
	if got, want := cp[14+8], byte((2<<8|50)>>6<<3|1); got != want {
		t.Errorf("short copy TTL = %#x, want %#x", got, want)
	}
	p := Packet{TTL: cp[14+8]}
	if got, want := p.DepthCode(), DepthCode(2<<8|50)&^0x3F; got != want {
		t.Errorf("DepthCode() without BTH = %#x, want %#x", got, want)
	}
}

// TestLooksMirroredDepth: a sender's TTL 64 (resv6 0) reads as a
// non-canonical code, so a frame with a zero-prefixed source MAC and TTL 64
// is not taken for a copy.
func TestLooksMirroredDepth(t *testing.T) {
	for _, tc := range []struct {
		ttl   uint8
		resv6 byte
		want  bool
	}{
		{0, 0, true},
		{6, 0, true},
		{64, 0, false},
		{64, 0x20, true},
		{(2<<8 | 50) >> 6 << 3, (2<<8 | 50) & 0x3F, true},
		{128, 0, false},
	} {
		bth := make(BTH, BTHLen)
		bth[4] = tc.resv6
		p := Packet{TTL: tc.ttl, BTH: bth}
		if got := p.LooksMirrored(); got != tc.want {
			t.Errorf("LooksMirrored(TTL %d, resv6 %#x) = %v, want %v", tc.ttl, tc.resv6, got, tc.want)
		}
	}
}
