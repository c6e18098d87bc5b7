package roce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

func TestPSN(t *testing.T) {
	tests := []struct {
		a, b    PSN
		sub     int
		less    bool
		lessEq  bool
		comment string
	}{
		{5, 3, 2, false, false, "plain"},
		{3, 5, -2, true, true, "plain"},
		{7, 7, 0, false, true, "equal"},
		{0, 0xFFFFFF, 1, false, false, "wrap: 0 is after 2^24-1"},
		{0xFFFFFE, 1, -3, true, true, "wrap backwards"},
		{0x800000, 0, -0x800000, true, true, "half window: p-q = 2^23 is 'before' (rxe)"},
		{0x7FFFFF, 0, 0x7FFFFF, false, false, "just inside the window"},
	}
	for _, tt := range tests {
		if got := tt.a.Sub(tt.b); got != tt.sub {
			t.Errorf("%s: PSN(%#x).Sub(%#x) = %d, want %d", tt.comment, tt.a, tt.b, got, tt.sub)
		}
		if got := tt.a.LessThan(tt.b); got != tt.less {
			t.Errorf("%s: PSN(%#x).LessThan(%#x) = %v, want %v", tt.comment, tt.a, tt.b, got, tt.less)
		}
		if got := tt.a.LessThanEq(tt.b); got != tt.lessEq {
			t.Errorf("%s: PSN(%#x).LessThanEq(%#x) = %v, want %v", tt.comment, tt.a, tt.b, got, tt.lessEq)
		}
	}
	if got := PSN(0xFFFFFE).Add(3); got != 1 {
		t.Errorf("PSN(0xFFFFFE).Add(3) = %#x, want 1", got)
	}
	if got := PSN(1).Add(-3); got != 0xFFFFFE {
		t.Errorf("PSN(1).Add(-3) = %#x, want 0xFFFFFE", got)
	}
	if got := PSN(0xFFFFFF).Next(); got != 0 {
		t.Errorf("PSN(0xFFFFFF).Next() = %#x, want 0", got)
	}
	for _, tt := range []struct {
		p, start PSN
		size     uint32
		want     bool
	}{
		{0xFFFFFF, 0xFFFFFE, 4, true},
		{1, 0xFFFFFE, 4, true},
		{2, 0xFFFFFE, 4, false},
		{0xFFFFFD, 0xFFFFFE, 4, false},
		{10, 10, 0, false},
	} {
		if got := tt.p.InWindow(tt.start, tt.size); got != tt.want {
			t.Errorf("PSN(%#x).InWindow(%#x, %d) = %v, want %v", tt.p, tt.start, tt.size, got, tt.want)
		}
	}
}

func TestOpcodeTable(t *testing.T) {
	tests := []struct {
		op     Opcode
		name   string
		ext    int
		first  bool
		last   bool
		isData bool
	}{
		{RCSendFirst, "RC_SEND_FIRST", 0, true, false, true},
		{RCSendMiddle, "RC_SEND_MIDDLE", 0, false, false, true},
		{RCSendLast, "RC_SEND_LAST", 0, false, true, true},
		{RCSendLastWithImmediate, "RC_SEND_LAST_WITH_IMMEDIATE", 4, false, true, true},
		{RCSendOnly, "RC_SEND_ONLY", 0, true, true, true},
		{RCSendOnlyWithImmediate, "RC_SEND_ONLY_WITH_IMMEDIATE", 4, true, true, true},
		{RCWriteFirst, "RC_RDMA_WRITE_FIRST", 16, true, false, true},
		{RCWriteMiddle, "RC_RDMA_WRITE_MIDDLE", 0, false, false, true},
		{RCWriteLast, "RC_RDMA_WRITE_LAST", 0, false, true, true},
		{RCWriteLastWithImmediate, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", 4, false, true, true},
		{RCWriteOnly, "RC_RDMA_WRITE_ONLY", 16, true, true, true},
		{RCWriteOnlyWithImmediate, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 20, true, true, true},
		{RCReadRequest, "RC_RDMA_READ_REQUEST", 16, true, true, true},
		{RCReadResponseFirst, "RC_RDMA_READ_RESPONSE_FIRST", 4, true, false, true},
		{RCReadResponseMiddle, "RC_RDMA_READ_RESPONSE_MIDDLE", 0, false, false, true},
		{RCReadResponseLast, "RC_RDMA_READ_RESPONSE_LAST", 4, false, true, true},
		{RCReadResponseOnly, "RC_RDMA_READ_RESPONSE_ONLY", 4, true, true, true},
		{RCAcknowledge, "RC_ACKNOWLEDGE", 4, true, true, false},
		{RCAtomicAcknowledge, "RC_ATOMIC_ACKNOWLEDGE", 12, true, true, false},
		{RCCompareSwap, "RC_COMPARE_SWAP", 28, true, true, true},
		{RCFetchAdd, "RC_FETCH_ADD", 28, true, true, true},
		{RCSendLastWithInvalidate, "RC_SEND_LAST_WITH_INVALIDATE", 4, false, true, true},
		{RCSendOnlyWithInvalidate, "RC_SEND_ONLY_WITH_INVALIDATE", 4, true, true, true},
		{RCFlush, "RC_FLUSH", 20, true, true, true},
		{RCAtomicWrite, "RC_ATOMIC_WRITE", 16, true, true, true},
		{UCSendOnly, "UC_SEND_ONLY", 0, true, true, true},
		{UCWriteOnlyWithImmediate, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 20, true, true, true},
		{UDSendOnly, "UD_SEND_ONLY", 8, true, true, true},
		{UDSendOnlyWithImmediate, "UD_SEND_ONLY_WITH_IMMEDIATE", 12, true, true, true},
		{0x40 | 0x04, "RD_SEND_ONLY", 12, true, true, true},
		{0x40 | 0x11, "RD_ACKNOWLEDGE", 8, true, true, false},
		{CNP, "CNP", 16, true, true, false},
	}
	for _, tt := range tests {
		if !tt.op.Valid() {
			t.Errorf("Opcode(%#x).Valid() = false", uint8(tt.op))
		}
		if got := tt.op.String(); got != tt.name {
			t.Errorf("Opcode(%#x).String() = %q, want %q", uint8(tt.op), got, tt.name)
		}
		if got := tt.op.ExtLen(); got != tt.ext {
			t.Errorf("%v.ExtLen() = %d, want %d", tt.op, got, tt.ext)
		}
		if got := tt.op.IsFirst(); got != tt.first {
			t.Errorf("%v.IsFirst() = %v, want %v", tt.op, got, tt.first)
		}
		if got := tt.op.IsLast(); got != tt.last {
			t.Errorf("%v.IsLast() = %v, want %v", tt.op, got, tt.last)
		}
		if got := tt.op.IsData(); got != tt.isData {
			t.Errorf("%v.IsData() = %v, want %v", tt.op, got, tt.isData)
		}
	}
	// Every RC opcode 0x00-0x17 except RESYNC (RD only), and 0x1C, 0x1D.
	for op := Opcode(0); op <= 0x1F; op++ {
		want := op <= 0x17 && op != 0x15 || op == 0x1C || op == 0x1D
		if op.Valid() != want {
			t.Errorf("Opcode(%#x).Valid() = %v, want %v", uint8(op), op.Valid(), want)
		}
	}
	for _, op := range []Opcode{0x18, 0x2C, 0x60, 0x80, 0xA0, 0xFF} {
		if op.Valid() || op.String() != "UNKNOWN_0x"+hexByte(uint8(op)) {
			t.Errorf("Opcode(%#x) = valid %v, name %q; want unknown", uint8(op), op.Valid(), op.String())
		}
	}
	if !RCReadRequest.IsReadRequest() || RCReadResponseLast.IsReadRequest() || !RCReadResponseMiddle.IsReadResponse() {
		t.Error("READ classification wrong")
	}
	if !RCWriteLastWithImmediate.IsWrite() || RCSendOnly.IsWrite() || !RCSendOnlyWithInvalidate.IsSend() || CNP.IsSend() {
		t.Error("WRITE/SEND classification wrong")
	}
	if !RCAcknowledge.IsAck() || !RCAtomicAcknowledge.IsAck() || UCSendOnly.IsAck() || !CNP.IsCNP() {
		t.Error("ACK/CNP classification wrong")
	}
}

func hexByte(b uint8) string {
	const hex = "0123456789ABCDEF"
	return string([]byte{hex[b>>4], hex[b&15]})
}

func TestSyndrome(t *testing.T) {
	tests := []struct {
		s     Syndrome
		typ   AckType
		value uint8
		str   string
	}{
		{0x1F, AckTypeACK, 31, "ack(credit=31)"},
		{0x00, AckTypeACK, 0, "ack(credit=0)"},
		{0x2C, AckTypeRNR, 12, "rnr(timer=12)"},
		{0x60, AckTypeNAK, 0, "nak(psn_sequence_error)"},
		{0x61, AckTypeNAK, 1, "nak(invalid_request)"},
		{0x62, AckTypeNAK, 2, "nak(remote_access_error)"},
		{0x63, AckTypeNAK, 3, "nak(remote_operational_error)"},
		{0x64, AckTypeNAK, 4, "nak(invalid_rd_request)"},
		{0x65, AckTypeNAK, 5, "nak(reserved_5)"},
		{0x40, AckTypeReserved, 0, "reserved(0)"},
	}
	for _, tt := range tests {
		if tt.s.Type() != tt.typ || tt.s.Value() != tt.value || tt.s.String() != tt.str {
			t.Errorf("Syndrome(%#x) = (%v, %d, %q), want (%v, %d, %q)", uint8(tt.s),
				tt.s.Type(), tt.s.Value(), tt.s.String(), tt.typ, tt.value, tt.str)
		}
	}
	if NAKSyndrome(NAKRemoteAccessError) != 0x62 || RNRSyndrome(12) != 0x2C || ACKSyndrome(CreditCountInvalid) != 0x1F {
		t.Error("syndrome constructors wrong")
	}
	if n, ok := CreditCount(10); n != 32 || !ok {
		t.Errorf("CreditCount(10) = %d, %v; want 32, true", n, ok)
	}
	if _, ok := CreditCount(31); ok {
		t.Error("CreditCount(31) ok, want false")
	}
	if got := RNRTimer(12); got != 640*time.Microsecond {
		t.Errorf("RNRTimer(12) = %v, want 640µs", got)
	}
	if got := RNRTimer(0); got != 655360*time.Microsecond {
		t.Errorf("RNRTimer(0) = %v, want 655.36ms", got)
	}
	if got := TransportTimeout(14); got != 67108864*time.Nanosecond {
		t.Errorf("TransportTimeout(14) = %v, want 67.108864ms", got)
	}
	if got := TransportTimeout(0); got != 0 {
		t.Errorf("TransportTimeout(0) = %v, want 0 (disabled)", got)
	}
}

// slowICRC is the obvious reference: copy, mask, checksum (IBA Vol. 1 Annex A17, RoCEv2: the ICRC).
func slowICRC(l3 []byte, v6 bool, ipHdr, end int) uint32 {
	b := append([]byte(nil), l3[:end]...)
	if v6 {
		b[0] |= 0x0F
		b[1], b[2], b[3], b[7] = 0xFF, 0xFF, 0xFF, 0xFF
	} else {
		b[1], b[8], b[10], b[11] = 0xFF, 0xFF, 0xFF, 0xFF
	}
	b[ipHdr+6], b[ipHdr+7] = 0xFF, 0xFF
	b[ipHdr+8+4] = 0xFF
	return crc32.ChecksumIEEE(append(bytes.Repeat([]byte{0xFF}, 8), b...))
}

// randomSpec draws a valid FrameSpec: any known opcode, IPv4 or IPv6,
// random fields and payload.
func randomSpec(r *rand.Rand) FrameSpec {
	var ops []Opcode
	for op := range 256 {
		if Opcode(op).Valid() {
			ops = append(ops, Opcode(op))
		}
	}
	f := FrameSpec{
		Opcode: ops[r.IntN(len(ops))], TOS: uint8(r.Uint32()), TTL: uint8(r.Uint32()),
		IPID: uint16(r.Uint32()), UDPSrc: uint16(r.Uint32()), SE: r.IntN(2) == 0, BECN: r.IntN(2) == 0,
		FECN: r.IntN(2) == 0, DestQP: r.Uint32() & PSNMask, AckReq: r.IntN(2) == 0, PSN: PSN(r.Uint32() & PSNMask),
		RETH: RETHFields{r.Uint64(), r.Uint32(), r.Uint32()}, AETH: AETHFields{Syndrome(r.Uint32()), r.Uint32() & PSNMask},
		Immediate: r.Uint32(), HasVLAN: r.IntN(4) == 0, VLANID: uint16(r.IntN(4096)),
	}
	if r.IntN(3) == 0 {
		f.SrcIP, f.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
		f.FlowLabel = r.Uint32() & 0xFFFFF
	} else {
		f.SrcIP, f.DstIP = netip.AddrFrom4([4]byte{10, 0, 0, byte(r.Uint32())}), netip.AddrFrom4([4]byte{10, 0, 1, byte(r.Uint32())})
	}
	if f.Opcode.HasPayload() {
		f.Payload = make([]byte, r.IntN(2100))
		for i := range f.Payload {
			f.Payload[i] = byte(r.Uint32())
		}
	}
	return f
}

func TestICRCDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pr := Parser{VerifyICRC: true}
	for i := range 2000 {
		f := randomSpec(r)
		frame, err := f.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		var p Packet
		if err := pr.Parse(frame, 0, &p); err != nil {
			t.Fatalf("#%d %v: Parse() = %v", i, f.Opcode, err)
		}
		want := slowICRC(frame[p.L3:], p.IPVersion == 6, p.L4-p.L3, p.ICRCOff-p.L3)
		if p.ICRCOnWire != want || p.ICRC != ICRCOK {
			t.Fatalf("#%d %v: ICRC on wire %08x (%v), reference %08x", i, f.Opcode, p.ICRCOnWire, p.ICRC, want)
		}
		if p.Opcode != f.Opcode || p.BTH.PSN() != f.PSN || p.BTH.DestQP() != f.DestQP || !bytes.Equal(p.Payload, f.Payload) ||
			p.PayloadLen != len(f.Payload) || p.SrcIP != f.SrcIP || p.TTL != max(f.TTL, 64*boolInt(f.TTL == 0)) || p.TOS != f.TOS {
			t.Fatalf("#%d: round trip of %+v gave %+v", i, f, p)
		}
		if f.HasVLAN && (p.VLANs != 1 || p.VLANID != f.VLANID) {
			t.Fatalf("#%d: VLAN = %d/%d, want 1/%d", i, p.VLANs, p.VLANID, f.VLANID)
		}
		// Variant fields do not change the ICRC; covered ones do.
		frame[p.L3+1] ^= 0x03 // ECN (IPv4 TOS / IPv6 TC low bits sit elsewhere, see below)
		if p.IPVersion == 6 {
			frame[p.L3+1] ^= 0x03
			frame[p.L3+7]++ // hop limit
		}
		frame[p.BTHOff+4] ^= 0xC0 // FECN/BECN
		if err := pr.Parse(frame, 0, &p); err != nil || p.ICRC != ICRCOK {
			t.Fatalf("#%d: after changing masked fields: %v %v, want ok", i, err, p.ICRC)
		}
		var q Packet // parsed without verification
		if err := (&Parser{}).Parse(frame, 0, &q); err != nil || q.ICRC != ICRCUnchecked || q.VerifiedICRC() != ICRCOK {
			t.Fatalf("#%d: unverified: %v %v, VerifiedICRC %v, want ok", i, err, q.ICRC, q.VerifiedICRC())
		}
		frame[p.BTHOff+11] ^= 1 // PSN
		if err := pr.Parse(frame, 0, &p); err != nil || p.ICRC != ICRCBad || p.VerifiedICRC() != ICRCBad {
			t.Fatalf("#%d: after changing the PSN: %v %v, want bad", i, err, p.ICRC)
		}
		if err := (&Parser{}).Parse(frame, 0, &q); err != nil || q.VerifiedICRC() != ICRCBad {
			t.Fatalf("#%d: unverified, after changing the PSN: %v VerifiedICRC %v, want bad", i, err, q.VerifiedICRC())
		}
	}
}

func TestParseTruncatedAndErrors(t *testing.T) {
	write := vectorSpecs[1]
	write.Payload = bytes.Repeat([]byte{0xAB}, 1024)
	full, _ := write.Append(nil)
	pr := Parser{VerifyICRC: true}

	t.Run("snaplen 128", func(t *testing.T) {
		var p Packet
		if err := pr.Parse(full[:128], len(full), &p); err != nil {
			t.Fatal(err)
		}
		if p.ICRC != ICRCTruncated || p.PayloadLen != 1024 || len(p.Payload) != 128-p.PayloadOff || p.RETH == nil ||
			p.RETH.DMALength() != 16 || p.OrigLen != len(full) {
			t.Errorf("truncated parse = icrc %v payload %d/%d reth %v origlen %d", p.ICRC, p.PayloadLen, len(p.Payload), p.RETH != nil, p.OrigLen)
		}
	})
	t.Run("snaplen cuts RETH", func(t *testing.T) {
		var p Packet
		if err := pr.Parse(full[:60], 0, &p); err != nil {
			t.Fatal(err)
		}
		if p.RETH != nil || p.ICRC != ICRCTruncated || p.BTH.PSN() != 0x123456 {
			t.Errorf("RETH = %v, ICRC = %v, PSN = %v", p.RETH, p.ICRC, p.BTH.PSN())
		}
	})
	t.Run("ethernet padding ignored", func(t *testing.T) {
		ack, _ := vectorSpecs[2].Append(nil)
		ack = append(ack, 0, 0, 0, 0)
		var p Packet
		if err := pr.Parse(ack, 0, &p); err != nil || p.ICRC != ICRCOK {
			t.Errorf("Parse(padded ACK) = %v, %v", err, p.ICRC)
		}
	})
	bad := func(mod func(b []byte) []byte) []byte { return mod(append([]byte(nil), full...)) }
	errTests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrTruncated},
		{"ethernet only", full[:14], ErrTruncated},
		{"cut in BTH", full[:50], ErrTruncated},
		{"arp", bad(func(b []byte) []byte { b[12], b[13] = 0x08, 0x06; return b }), ErrNotRoCE},
		{"tcp", bad(func(b []byte) []byte { b[14+9] = 6; return b }), ErrNotRoCE},
		{"other port", bad(func(b []byte) []byte { b[14+20+3] = 0x53; return b }), ErrNotRoCE},
		{"fragment", bad(func(b []byte) []byte { b[14+6] = 0x20; return b }), ErrNotRoCE},
		{"udp len short", bad(func(b []byte) []byte { binary.BigEndian.PutUint16(b[14+24:], 20); return b }), ErrMalformed},
		{"ip len < ihl", bad(func(b []byte) []byte { binary.BigEndian.PutUint16(b[14+2:], 10); return b }), ErrMalformed},
		{"no room for RETH", bad(func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[14+2:], 20+8+12+4+4)
			binary.BigEndian.PutUint16(b[14+24:], 8+12+4+4)
			return b
		}), ErrMalformed},
	}
	for _, tt := range errTests {
		var p Packet
		if err := pr.Parse(tt.frame, 0, &p); !errors.Is(err, tt.want) {
			t.Errorf("%s: Parse() = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	f := vectorSpecs[1]
	f.DstIP = netip.MustParseAddr("fd00::1")
	if _, err := f.Append(nil); !errors.Is(err, ErrBadSpec) {
		t.Errorf("mixed families: %v, want ErrBadSpec", err)
	}
	f = vectorSpecs[2]
	f.Payload = []byte{1}
	if _, err := f.Append(nil); !errors.Is(err, ErrBadSpec) {
		t.Errorf("payload on ACK: %v, want ErrBadSpec", err)
	}
	f.Payload, f.Opcode = nil, 0x18
	if _, err := f.Append(nil); !errors.Is(err, ErrBadSpec) {
		t.Errorf("unknown opcode: %v, want ErrBadSpec", err)
	}
}

func TestMirrorRoundTrip(t *testing.T) {
	orig, _ := vectorSpecs[1].Append(nil)
	cp := append([]byte(nil), orig...)
	m := MirrorMeta{Seq: 0x0000_1234_5678, TimestampNs: 0xABCD_0000_0001, Event: EventECN}
	if !ApplyMirror(cp, m, DefaultMirrorPort, 0x4242) {
		t.Fatal("ApplyMirror() = false")
	}
	if got := binary.BigEndian.Uint16(cp[36:]); got != DefaultMirrorPort {
		t.Errorf("mirror dst port = %d, want %d", got, DefaultMirrorPort)
	}
	if got := IPv4Checksum(cp[14:34]); got != 0 {
		t.Errorf("IP checksum of mirror copy invalid (residual %#x)", got)
	}

	// A raw copy decodes with its original ports and a valid ICRC.
	var p Packet
	if err := (&Parser{VerifyICRC: true, MirrorPort: DefaultMirrorPort}).Parse(cp, 0, &p); err != nil {
		t.Fatal(err)
	}
	if !p.MirrorRaw || p.UDPSrc != 0xC001 || p.UDPDst != UDPPort || p.ICRC != ICRCOK || p.Mirror() != m || !p.LooksMirrored() {
		t.Errorf("raw copy: raw %v ports %#x/%d icrc %v meta %+v", p.MirrorRaw, p.UDPSrc, p.UDPDst, p.ICRC, p.Mirror())
	}
	if err := (&Parser{}).Parse(cp, 0, &p); !errors.Is(err, ErrNotRoCE) {
		t.Errorf("raw copy without MirrorPort: %v, want ErrNotRoCE", err)
	}

	// Restored: equal to the original except MACs, TTL and IP checksum.
	if !RestoreMirror(cp, DefaultMirrorPort) {
		t.Fatal("RestoreMirror() = false")
	}
	if RestoreMirror(cp, DefaultMirrorPort) {
		t.Error("RestoreMirror() on a restored copy = true")
	}
	want := append([]byte(nil), orig...)
	copy(want[0:12], cp[0:12])
	want[14+8] = byte(EventECN)
	setIPv4Checksum(want[14:34])
	if !bytes.Equal(cp, want) {
		t.Errorf("restored copy\n%x\nwant\n%x", cp, want)
	}
	if err := (&Parser{VerifyICRC: true}).Parse(cp, 0, &p); err != nil || p.ICRC != ICRCOK || p.Mirror() != m || !p.LooksMirrored() {
		t.Errorf("restored copy: %v icrc %v meta %+v", err, p.ICRC, p.Mirror())
	}

	// The original frame does not look mirrored (its MAC has an OUI-like prefix).
	if err := (&Parser{}).Parse(orig, 0, &p); err != nil || p.LooksMirrored() {
		t.Errorf("original LooksMirrored() = true")
	}
	if ApplyMirror(orig[:30], m, 1, 1) || RestoreMirror(orig[:30], 1) {
		t.Error("Apply/RestoreMirror accepted a truncated frame")
	}
}

func TestUDPSourcePort(t *testing.T) {
	// Independent computation of rdma_calc_flow_label + rdma_flow_label_to_udp_sport.
	for _, tt := range []struct{ l, r uint32 }{{0x11, 0x22}, {0xFFFFFF, 0xFFFFFF}, {1, 0}, {0x1234, 0xABCDE}} {
		v := uint64(tt.l) * uint64(tt.r)
		v ^= v >> 20
		v ^= v >> 40
		fl := v & 0xFFFFF
		want := uint16(((fl & 0x3FFF) ^ (fl&0xFC000)>>14) | 0xC000)
		if got := UDPSourcePort(tt.l, tt.r); got != want || got < 0xC000 {
			t.Errorf("UDPSourcePort(%#x, %#x) = %#x, want %#x", tt.l, tt.r, got, want)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	frame, _ := vectorSpecs[1].Append(nil)
	pr := Parser{VerifyICRC: true}
	var p Packet
	if n := testing.AllocsPerRun(100, func() { _ = pr.Parse(frame, 0, &p) }); n != 0 {
		t.Errorf("Parse allocs = %v, want 0", n)
	}
	buf := make([]byte, 0, 2048)
	spec := vectorSpecs[4]
	if n := testing.AllocsPerRun(100, func() { _, _ = spec.Append(buf[:0]) }); n != 0 {
		t.Errorf("Append allocs = %v, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { ApplyMirror(frame, MirrorMeta{Seq: 1}, 9741, 7); RestoreMirror(frame, 9741) }); n != 0 {
		t.Errorf("mirror codec allocs = %v, want 0", n)
	}
}

func benchFrame(b *testing.B, payload int) []byte {
	f := vectorSpecs[1]
	f.Opcode = RCWriteMiddle
	f.Payload = bytes.Repeat([]byte{0x5A}, payload)
	frame, err := f.Append(nil)
	if err != nil {
		b.Fatal(err)
	}
	return frame
}

func BenchmarkParse(b *testing.B) {
	for _, size := range []int{0, 1024} {
		frame := benchFrame(b, size)
		for _, v := range []struct {
			name string
			pr   Parser
		}{{"headers", Parser{}}, {"icrc", Parser{VerifyICRC: true}}} {
			b.Run(v.name+"/payload="+itoa(size), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(frame)))
				var p Packet
				for b.Loop() {
					if err := v.pr.Parse(frame, 0, &p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	f := vectorSpecs[1]
	f.Opcode = RCWriteMiddle
	f.Payload = make([]byte, 1024)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Append(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func boolInt(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
