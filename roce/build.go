package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// FrameSpec describes a RoCEv2 frame to build. The zero value of every
// field is a sensible RNIC default, noted per field. Which extended headers
// are written is decided by Opcode alone; the values of the others are
// ignored.
type FrameSpec struct {
	DstMAC, SrcMAC [6]byte
	// VLANID, when HasVLAN is set, adds one 802.1Q tag with this VID and
	// priority VLANPCP.
	HasVLAN bool
	VLANID  uint16
	VLANPCP uint8

	// SrcIP and DstIP must both be IPv4 or both IPv6 (IPv4-mapped IPv6
	// addresses count as IPv4).
	SrcIP, DstIP netip.Addr
	TOS          uint8  // DSCP<<2 | ECN (IPv6 traffic class). Default 0.
	TTL          uint8  // TTL / hop limit. Default (0) 64.
	IPID         uint16 // IPv4 identification. Default 0.
	NoDF         bool   // clear IPv4 Don't Fragment (RNICs set it). Default false.
	FlowLabel    uint32 // IPv6 flow label. Default 0.

	UDPSrc      uint16 // default 0; RNICs use per-QP entropy, see UDPSourcePort
	UDPDst      uint16 // default (0) 4791
	UDPChecksum uint16 // default 0, as RNICs send

	Opcode    Opcode
	SE, Mig   bool
	PKey      uint16 // default (0) 0xFFFF
	FECN      bool
	BECN      bool
	DestQP    uint32
	AckReq    bool
	PSN       PSN
	RETH      RETHFields
	AETH      AETHFields
	Immediate uint32 // ImmDt
	InvRKey   uint32 // IETH
	Atomic    AtomicFields
	AtomicAck uint64 // AtomicAckETH original data
	QKey      uint32 // DETH
	SrcQP     uint32 // DETH
	EEContext uint32 // RDETH
	FETH      uint32
	Payload   []byte // pad bytes are added to reach a multiple of 4
}

// RETHFields are the values of a RETH.
type RETHFields struct {
	VA     uint64
	RKey   uint32
	Length uint32
}

// AETHFields are the values of an AETH.
type AETHFields struct {
	Syndrome Syndrome
	MSN      uint32
}

// AtomicFields are the values of an AtomicETH.
type AtomicFields struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// ErrBadSpec is returned by FrameSpec.Append for specs that cannot be built.
var ErrBadSpec = errors.New("roce: invalid frame spec")

// PadLen returns the number of pad bytes after a payload of n bytes.
func PadLen(n int) int { return -n & 3 }

// Len returns the length of the frame the spec builds.
func (f *FrameSpec) Len() int {
	n := EthernetLen + UDPLen + BTHLen + f.Opcode.ExtLen() + len(f.Payload) + PadLen(len(f.Payload)) + ICRCLen
	if f.HasVLAN {
		n += VLANTagLen
	}
	if f.SrcIP.Is4() || f.SrcIP.Is4In6() {
		return n + IPv4MinLen
	}
	return n + IPv6Len
}

// Append appends the frame, ICRC included, to dst and returns the extended
// slice. It does not allocate when dst has room for Len() more bytes.
func (f *FrameSpec) Append(dst []byte) ([]byte, error) {
	v4 := (f.SrcIP.Is4() || f.SrcIP.Is4In6()) && (f.DstIP.Is4() || f.DstIP.Is4In6())
	v6 := f.SrcIP.Is6() && !f.SrcIP.Is4In6() && f.DstIP.Is6() && !f.DstIP.Is4In6()
	if !v4 && !v6 {
		return dst, fmt.Errorf("%w: addresses %v and %v are not both IPv4 or both IPv6", ErrBadSpec, f.SrcIP, f.DstIP)
	}
	if !f.Opcode.Valid() {
		return dst, fmt.Errorf("%w: unknown opcode 0x%02x", ErrBadSpec, uint8(f.Opcode))
	}
	if !f.Opcode.HasPayload() && len(f.Payload) > 0 {
		return dst, fmt.Errorf("%w: %v carries no payload", ErrBadSpec, f.Opcode)
	}
	pad := PadLen(len(f.Payload))
	l4len := UDPLen + BTHLen + f.Opcode.ExtLen() + len(f.Payload) + pad + ICRCLen
	if l4len > 0xFFFF-IPv6Len {
		return dst, fmt.Errorf("%w: payload of %d bytes too large", ErrBadSpec, len(f.Payload))
	}
	start := len(dst)
	total := f.Len()
	dst = grow(dst, total)
	b := dst[start:]

	b = b[copy(b, f.DstMAC[:]):]
	b = b[copy(b, f.SrcMAC[:]):]
	if f.HasVLAN {
		binary.BigEndian.PutUint16(b, EtherTypeVLAN)
		binary.BigEndian.PutUint16(b[2:], uint16(f.VLANPCP&7)<<13|f.VLANID&0x0FFF)
		b = b[VLANTagLen:]
	}
	ttl := f.TTL
	if ttl == 0 {
		ttl = 64
	}
	l3 := b[2:]
	if v4 {
		binary.BigEndian.PutUint16(b, EtherTypeIPv4)
		h := l3[:IPv4MinLen]
		h[0] = 0x45
		h[1] = f.TOS
		binary.BigEndian.PutUint16(h[2:], uint16(IPv4MinLen+l4len))
		binary.BigEndian.PutUint16(h[4:], f.IPID)
		binary.BigEndian.PutUint16(h[6:], 0x4000)
		if f.NoDF {
			binary.BigEndian.PutUint16(h[6:], 0)
		}
		h[8] = ttl
		h[9] = ipProtoUDP
		h[10], h[11] = 0, 0
		s, d := f.SrcIP.Unmap().As4(), f.DstIP.Unmap().As4()
		copy(h[12:], s[:])
		copy(h[16:], d[:])
		binary.BigEndian.PutUint16(h[10:], IPv4Checksum(h))
	} else {
		binary.BigEndian.PutUint16(b, EtherTypeIPv6)
		h := l3[:IPv6Len]
		binary.BigEndian.PutUint32(h, 6<<28|uint32(f.TOS)<<20|f.FlowLabel&0xFFFFF)
		binary.BigEndian.PutUint16(h[4:], uint16(l4len))
		h[6] = ipProtoUDP
		h[7] = ttl
		s, d := f.SrcIP.As16(), f.DstIP.As16()
		copy(h[8:], s[:])
		copy(h[24:], d[:])
	}
	ipHdr := IPv4MinLen
	if v6 {
		ipHdr = IPv6Len
	}
	udp := l3[ipHdr:]
	dport := f.UDPDst
	if dport == 0 {
		dport = UDPPort
	}
	binary.BigEndian.PutUint16(udp[0:], f.UDPSrc)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(l4len))
	binary.BigEndian.PutUint16(udp[6:], f.UDPChecksum)

	bth := BTH(udp[UDPLen : UDPLen+BTHLen])
	pkey := f.PKey
	if pkey == 0 {
		pkey = 0xFFFF
	}
	bth[0], bth[1], bth[4], bth[8] = byte(f.Opcode), 0, 0, 0
	bth.SetSolicitedEvent(f.SE)
	bth.SetMigReq(f.Mig)
	bth.SetPadCount(pad)
	bth.SetPKey(pkey)
	bth.SetFECN(f.FECN)
	bth.SetBECN(f.BECN)
	bth.SetDestQP(f.DestQP)
	bth.SetAckReq(f.AckReq)
	bth.SetPSN(f.PSN & PSNMask)

	e := udp[UDPLen+BTHLen:]
	flags := opTable[f.Opcode].flags
	if flags&hasRDETH != 0 {
		RDETH(e).SetEEContext(f.EEContext)
		e = e[RDETHLen:]
	}
	if flags&hasDETH != 0 {
		DETH(e).SetQKey(f.QKey)
		DETH(e).SetSrcQP(f.SrcQP)
		e = e[DETHLen:]
	}
	if flags&hasFETH != 0 {
		FETH(e).SetValue(f.FETH)
		e = e[FETHLen:]
	}
	if flags&hasRETH != 0 {
		r := RETH(e)
		r.SetVirtualAddress(f.RETH.VA)
		r.SetRKey(f.RETH.RKey)
		r.SetDMALength(f.RETH.Length)
		e = e[RETHLen:]
	}
	if flags&hasAtomicETH != 0 {
		a := AtomicETH(e)
		a.SetVirtualAddress(f.Atomic.VA)
		a.SetRKey(f.Atomic.RKey)
		a.SetSwapAdd(f.Atomic.SwapAdd)
		a.SetCompare(f.Atomic.Compare)
		e = e[AtomicETHLen:]
	}
	if flags&hasAETH != 0 {
		AETH(e).SetSyndrome(f.AETH.Syndrome)
		AETH(e).SetMSN(f.AETH.MSN)
		e = e[AETHLen:]
	}
	if flags&hasAtomicAckETH != 0 {
		AtomicAckETH(e).SetOriginalData(f.AtomicAck)
		e = e[AtomicAckETHLen:]
	}
	if flags&hasImmDt != 0 {
		ImmDt(e).SetImmediate(f.Immediate)
		e = e[ImmDtLen:]
	}
	if flags&hasIETH != 0 {
		IETH(e).SetRKey(f.InvRKey)
		e = e[IETHLen:]
	}
	if flags&hasCNPPad != 0 {
		clear(e[:CNPPadLen])
		e = e[CNPPadLen:]
	}
	e = e[copy(e, f.Payload):]
	clear(e[:pad])
	e = e[pad:]
	icrcOff := len(l3) - len(e)
	binary.LittleEndian.PutUint32(e, icrc(l3, v6, ipHdr, icrcOff, portOverride{}))
	return dst, nil
}

// grow extends b by n bytes, reallocating only when the capacity is short.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// IPv4Checksum returns the Internet checksum of an IPv4 header whose
// checksum field is zero (or, if it is not, 0 when the header is valid).
func IPv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	if len(h)%2 == 1 {
		sum += uint32(h[len(h)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

// UDPSourcePort returns the UDP source port Linux derives for a RoCEv2 QP
// pair with no flow label (rdma_get_udp_sport / rdma_calc_flow_label): a
// value in 0xC000-0xFFFF that is constant for the connection.
func UDPSourcePort(localQPN, remoteQPN uint32) uint16 {
	v := uint64(localQPN&PSNMask) * uint64(remoteQPN&PSNMask)
	v ^= v >> 20
	v ^= v >> 40
	fl := uint32(v & 0xFFFFF)
	return uint16((fl&0x3FFF)^((fl&0xFC000)>>14)) | 0xC000
}
