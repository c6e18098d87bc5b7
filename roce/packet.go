package roce

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
)

// UDPPort is the IANA port of RoCEv2.
const UDPPort = 4791

// Ethernet, IP and UDP constants used by the parser and builder.
const (
	EthernetLen   = 14
	VLANTagLen    = 4
	IPv4MinLen    = 20
	IPv6Len       = 40
	UDPLen        = 8
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86DD
	EtherTypeVLAN = 0x8100
	EtherTypeQinQ = 0x88A8
	ipProtoUDP    = 17
)

// Errors returned by Parser.Parse. They are sentinels (compare with
// errors.Is) and never wrapped on the hot path.
var (
	// ErrNotRoCE: the frame is not IPv4/IPv6 + UDP to a RoCEv2 port (or is
	// an IP fragment other than the first).
	ErrNotRoCE = errors.New("roce: not a RoCEv2 frame")
	// ErrTruncated: the capture ends before the BTH is complete.
	ErrTruncated = errors.New("roce: frame truncated before the BTH")
	// ErrMalformed: lengths in the IP or UDP header are inconsistent with
	// the headers the opcode requires.
	ErrMalformed = errors.New("roce: malformed RoCEv2 frame")
)

// ICRCStatus is the outcome of ICRC verification.
type ICRCStatus uint8

// ICRC verification outcomes.
const (
	ICRCUnchecked ICRCStatus = iota // Parser.VerifyICRC was false
	ICRCOK
	ICRCBad
	ICRCTruncated // the capture does not contain the whole frame
)

// String returns "unchecked", "ok", "bad" or "truncated".
func (s ICRCStatus) String() string {
	switch s {
	case ICRCOK:
		return "ok"
	case ICRCBad:
		return "bad"
	case ICRCTruncated:
		return "truncated"
	}
	return "unchecked"
}

// Parser decodes Ethernet frames carrying RoCEv2. The zero value accepts UDP
// port 4791 only and does not verify the ICRC. A Parser is read-only after
// set-up and safe for concurrent use.
type Parser struct {
	// VerifyICRC makes Parse compute and compare the ICRC. Default false.
	VerifyICRC bool
	// MirrorPort, when non-zero, is the UDP destination port that Lumina's
	// injector writes into mirror copies (rewrite-udp-dst-port, 9741 in the
	// public tool). Frames to that port are decoded as RoCEv2 with their
	// original ports restored from the copy (see the package doc), and
	// Packet.MirrorRaw is set.
	MirrorPort uint16
}

// Packet is a decoded RoCEv2 frame. Its slices alias the frame passed to
// Parse; nothing is copied. Extended headers absent from the opcode or cut
// off by the capture are nil.
type Packet struct {
	Frame   []byte // the captured bytes
	OrigLen int    // length of the frame on the wire (>= len(Frame))

	DstMAC, SrcMAC [6]byte
	VLANs          int    // number of 802.1Q/802.1ad tags
	VLANID         uint16 // VID of the innermost tag
	EtherType      uint16 // EtherType after the tags

	L3, L4, BTHOff, ExtOff, PayloadOff, ICRCOff int // offsets into Frame

	IPVersion    int // 4 or 6
	SrcIP, DstIP netip.Addr
	TOS          uint8  // IPv4 TOS / IPv6 traffic class: DSCP<<2 | ECN
	TTL          uint8  // IPv4 TTL / IPv6 hop limit
	IPID         uint16 // IPv4 identification (0 for IPv6)
	FlowLabel    uint32 // IPv6 flow label
	IPLen        int    // IP header + IP payload, from the IP header

	UDPSrc, UDPDst uint16 // original ports (restored for raw mirror copies)
	UDPChecksum    uint16 // as captured
	UDPLength      int    // UDP length field
	// MirrorRaw is set when the frame was addressed to Parser.MirrorPort: an
	// unrestored mirror copy. UDPSrc is then the value of the UDP checksum
	// field and UDPDst is 4791.
	MirrorRaw bool
	// MirrorSrcPort is a raw mirror copy's UDP source port as captured
	// (random, or a held copy's HoldCode); 0 otherwise.
	MirrorSrcPort uint16

	BTH    BTH
	Opcode Opcode

	RETH         RETH
	AETH         AETH
	ImmDt        ImmDt
	IETH         IETH
	AtomicETH    AtomicETH
	AtomicAckETH AtomicAckETH
	DETH         DETH
	RDETH        RDETH
	FETH         FETH

	PadLen     int    // BTH PadCnt
	PayloadLen int    // payload length without pad, from the UDP length
	Payload    []byte // the captured part of the payload (may be short)

	ICRC       ICRCStatus
	ICRCOnWire uint32 // little-endian value of the ICRC bytes, if captured

	ports portOverride
}

// Truncated reports whether the capture holds less than the whole IP packet.
func (p *Packet) Truncated() bool { return len(p.Frame) < p.L3+p.IPLen }

// AppendTuple appends "srcIP:port > dstIP:port" (the UDP addresses, as
// lumina decode and report.html print them) to b.
func (p *Packet) AppendTuple(b []byte) []byte {
	b = p.SrcIP.AppendTo(b)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(p.UDPSrc), 10)
	b = append(b, " > "...)
	b = p.DstIP.AppendTo(b)
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(p.UDPDst), 10)
}

// ECN returns the two ECN bits of the IP header (3 = CE).
func (p *Packet) ECN() uint8 { return p.TOS & 3 }

// DSCP returns the DSCP of the IP header.
func (p *Packet) DSCP() uint8 { return p.TOS >> 2 }

// Parse decodes frame into p. origLen is the frame's length on the wire (0
// means len(frame)); it only matters for snaplen-truncated captures. Parse
// does not allocate. On error p holds whatever was decoded before the error
// (the L2/L3 fields for ErrNotRoCE).
func (pr *Parser) Parse(frame []byte, origLen int, p *Packet) error {
	*p = Packet{Frame: frame, OrigLen: max(origLen, len(frame))}
	if len(frame) < EthernetLen {
		return ErrTruncated
	}
	copy(p.DstMAC[:], frame[0:6])
	copy(p.SrcMAC[:], frame[6:12])
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	for (et == EtherTypeVLAN || et == EtherTypeQinQ) && p.VLANs < 2 {
		if len(frame) < off+2+VLANTagLen {
			return ErrTruncated
		}
		p.VLANs++
		p.VLANID = binary.BigEndian.Uint16(frame[off+2:]) & 0x0FFF
		off += VLANTagLen
		et = binary.BigEndian.Uint16(frame[off:])
	}
	p.EtherType = et
	off += 2
	p.L3 = off
	l3 := frame[off:]
	switch et {
	case EtherTypeIPv4:
		if len(l3) < IPv4MinLen {
			return ErrTruncated
		}
		ihl := int(l3[0]&0x0F) * 4
		if l3[0]>>4 != 4 || ihl < IPv4MinLen {
			return ErrNotRoCE
		}
		if len(l3) < ihl {
			return ErrTruncated
		}
		p.IPVersion = 4
		p.TOS = l3[1]
		p.IPLen = int(binary.BigEndian.Uint16(l3[2:]))
		p.IPID = binary.BigEndian.Uint16(l3[4:])
		p.TTL = l3[8]
		p.SrcIP = netip.AddrFrom4([4]byte(l3[12:16]))
		p.DstIP = netip.AddrFrom4([4]byte(l3[16:20]))
		if l3[9] != ipProtoUDP || binary.BigEndian.Uint16(l3[6:])&0x3FFF != 0 { // fragment
			return ErrNotRoCE
		}
		if p.IPLen < ihl {
			return ErrMalformed
		}
		p.L4 = off + ihl
	case EtherTypeIPv6:
		if len(l3) < IPv6Len {
			return ErrTruncated
		}
		if l3[0]>>4 != 6 {
			return ErrNotRoCE
		}
		p.IPVersion = 6
		vtf := binary.BigEndian.Uint32(l3)
		p.TOS = uint8(vtf >> 20)
		p.FlowLabel = vtf & 0xFFFFF
		p.IPLen = IPv6Len + int(binary.BigEndian.Uint16(l3[4:]))
		p.TTL = l3[7]
		p.SrcIP = netip.AddrFrom16([16]byte(l3[8:24]))
		p.DstIP = netip.AddrFrom16([16]byte(l3[24:40]))
		if l3[6] != ipProtoUDP {
			return ErrNotRoCE
		}
		p.L4 = off + IPv6Len
	default:
		return ErrNotRoCE
	}
	if len(frame) < p.L4+UDPLen {
		return ErrTruncated
	}
	udp := frame[p.L4:]
	p.UDPSrc = binary.BigEndian.Uint16(udp[0:])
	p.UDPDst = binary.BigEndian.Uint16(udp[2:])
	p.UDPLength = int(binary.BigEndian.Uint16(udp[4:]))
	p.UDPChecksum = binary.BigEndian.Uint16(udp[6:])
	switch {
	case p.UDPDst == UDPPort:
	case pr.MirrorPort != 0 && p.UDPDst == pr.MirrorPort:
		p.MirrorRaw, p.MirrorSrcPort = true, p.UDPSrc
		p.UDPSrc, p.UDPDst = p.UDPChecksum, UDPPort
		p.ports = portOverride{set: true, src: p.UDPSrc, dst: UDPPort}
	default:
		return ErrNotRoCE
	}
	p.BTHOff = p.L4 + UDPLen
	if len(frame) < p.BTHOff+BTHLen {
		return ErrTruncated
	}
	p.BTH = BTH(frame[p.BTHOff : p.BTHOff+BTHLen])
	p.Opcode = p.BTH.Opcode()
	p.PadLen = p.BTH.PadCount()
	p.ExtOff = p.BTHOff + BTHLen

	// Lengths come from the headers, not from the capture, so that
	// snaplen-truncated frames still report their payload length.
	ipEnd := p.L3 + p.IPLen
	if p.L4+p.UDPLength != ipEnd || p.UDPLength < UDPLen+BTHLen+ICRCLen {
		return ErrMalformed
	}
	p.ICRCOff = ipEnd - ICRCLen
	ext := p.Opcode.ExtLen()
	p.PayloadOff = p.ExtOff + ext
	p.PayloadLen = p.ICRCOff - p.PayloadOff - p.PadLen
	if p.PayloadLen < 0 {
		p.PayloadLen = 0
		return ErrMalformed
	}
	p.decodeExt()
	if n := min(len(frame), p.PayloadOff+p.PayloadLen); n > p.PayloadOff {
		p.Payload = frame[p.PayloadOff:n]
	}
	if p.Truncated() {
		p.ICRC = ICRCTruncated
		return nil
	}
	p.ICRCOnWire = binary.LittleEndian.Uint32(frame[p.ICRCOff:])
	if pr.VerifyICRC {
		p.ICRC = ICRCBad
		if p.computeICRC() == p.ICRCOnWire {
			p.ICRC = ICRCOK
		}
	}
	return nil
}

// decodeExt slices the extended headers that are present and captured, in
// wire order: RDETH, DETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
// IETH.
func (p *Packet) decodeExt() {
	flags := opTable[p.Opcode].flags
	off := p.ExtOff
	take := func(flag uint16, n int) []byte {
		if flags&flag == 0 {
			return nil
		}
		start := off
		off += n
		if off > len(p.Frame) {
			return nil
		}
		return p.Frame[start:off:off]
	}
	p.RDETH = take(hasRDETH, RDETHLen)
	p.DETH = take(hasDETH, DETHLen)
	p.FETH = take(hasFETH, FETHLen)
	p.RETH = take(hasRETH, RETHLen)
	p.AtomicETH = take(hasAtomicETH, AtomicETHLen)
	p.AETH = take(hasAETH, AETHLen)
	p.AtomicAckETH = take(hasAtomicAckETH, AtomicAckETHLen)
	p.ImmDt = take(hasImmDt, ImmDtLen)
	p.IETH = take(hasIETH, IETHLen)
}
