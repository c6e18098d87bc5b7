package roce

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Event is the injected event a mirror copy reports in its IP TTL (IPv6 hop
// limit) bits 0..2; the bits above carry the queue depth (DepthCode). 0 none, 1 drop, 2 ECN mark and 3 corruption are Lumina's
// numbering; lumina adds 4 delay, 5 reorder and 6 duplicate. A delayed or
// reordered packet is mirrored when it leaves the switch; a duplicated one
// is mirrored once for the original and once for every copy, each tagged
// EventDuplicate.
type Event uint8

// Events.
const (
	EventNone      Event = 0
	EventDrop      Event = 1
	EventECN       Event = 2
	EventCorrupt   Event = 3
	EventDelay     Event = 4
	EventReorder   Event = 5
	EventDuplicate Event = 6
	// EventPause tags a PFC/PAUSE frame the switch sent because the test
	// asked for it (traffic.pfc-events), as opposed to one its buffer
	// accounting or a host generated.
	EventPause Event = 7
)

// String returns "none", "drop", "ecn", "corrupt", "delay", "reorder",
// "duplicate" or "pause" ("event(N)" otherwise).
func (e Event) String() string {
	switch e {
	case EventNone:
		return "none"
	case EventDrop:
		return "drop"
	case EventECN:
		return "ecn"
	case EventCorrupt:
		return "corrupt"
	case EventDelay:
		return "delay"
	case EventReorder:
		return "reorder"
	case EventDuplicate:
		return "duplicate"
	case EventPause:
		return "pause"
	}
	return "event(" + strconv.Itoa(int(e)) + ")"
}

// Valid reports whether e is one of the defined events.
func (e Event) Valid() bool { return e <= EventPause }

// MarshalText returns e's name (String): report.json and the run record
// spell events as the test file does.
func (e Event) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("roce: event %d is not defined", uint8(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText parses a name String returns for a defined event.
func (e *Event) UnmarshalText(b []byte) error {
	for v := EventNone; v <= EventPause; v++ {
		if v.String() == string(b) {
			*e = v
			return nil
		}
	}
	return fmt.Errorf("roce: unknown event %q (want none, drop, ecn, corrupt, delay, reorder, duplicate or pause)", b)
}

// DefaultMirrorPort is the UDP destination port the public Lumina tool
// writes into mirror copies (its rewrite-udp-dst-port example value).
const DefaultMirrorPort = 9741

// MirrorMeta is the metadata the injector embeds in a mirror copy.
type MirrorMeta struct {
	// Seq is the mirror sequence number of the copy's switch, 40 bits
	// (MirrorSeqMask), and Switch the logical switch that made the copy
	// (0..MaxSwitches-1): both in the 48-bit mirror sequence field (the
	// source MAC) as Switch<<MirrorSwitchShift | Seq (MirrorSeqField), so
	// its first byte is Switch<<1, never a multicast address, and a copy
	// of switch 0 has the bytes of a one-switch run.
	Seq         uint64
	Switch      uint8
	TimestampNs uint64 // switch ingress time in ns, 48 bits, in the destination MAC
	Event       Event  // event type, in the IP TTL / hop limit bits 0..2
	// HoldNs is, for a copy tagged EventDelay or EventReorder, how long
	// the switch held the packet: its stamp minus its arrival, as a
	// HoldCode (so at most one Unit below the true hold) in the UDP source
	// port of the raw copy and, once restored, in its UDP checksum: a field
	// the ICRC masks (IBA Annex A17) and RoCEv2 senders leave 0, so the
	// copy's ICRC still verifies. Other copies report 0.
	HoldNs int64
	// QDepth is the depth in bytes of the egress queue the packet joined,
	// measured before it joined (Tofino's enq_qdepth), as a DepthCode (so
	// at most one Unit below the true depth): its top 5 bits in the TTL /
	// hop limit bits 3..7, its low 6 bits in the BTH's resv6 (byte 4 bits
	// 0..5). Both are ICRC-masked (IBA Annex A17), so the copy's ICRC
	// still verifies. 0 from a switch without a queue model.
	QDepth int64
}

// DepthCode is the 11-bit encoding of a queue depth: a 3-bit exponent e =
// code>>8 and an 8-bit mantissa m = code&0xFF, depth = m << (3e) bytes.
// Depths below 256 bytes are exact; longer ones are rounded down to a
// multiple of 8^e bytes (a relative error below 1/32), up to MaxDepth,
// where the code saturates.
type DepthCode uint16

// MaxDepth is the deepest queue a DepthCode represents (255 << 21 bytes,
// about 535 MB).
const MaxDepth = 0xFF << 21

// MaxDepthCode is the largest DepthCode (MaxDepth).
const MaxDepthCode DepthCode = 0x7FF

// EncodeDepth returns the code of bytes rounded down (0 for a negative
// depth, MaxDepthCode above MaxDepth). The exponent is the smallest that
// fits the mantissa in 8 bits, so a code with e > 0 has m >= 32
// (Canonical).
func EncodeDepth(bytes int64) DepthCode {
	if bytes <= 0 {
		return 0
	}
	e, m := octalFloat(min(bytes, MaxDepth), 0xFF)
	return DepthCode(e<<8 | m)
}

// octalFloat returns the smallest exponent e with v>>(3e) ≤ maxM and that
// mantissa: v ≥ m<<(3e) > v − 8^e, the rounding of DepthCode and
// HoldCode.
func octalFloat(v int64, maxM int64) (e, m int) {
	for v>>(3*e) > maxM {
		e++
	}
	return e, int(v >> (3 * e))
}

// Bytes returns the depth c encodes: the true depth is in [Bytes,
// Bytes+Unit).
func (c DepthCode) Bytes() int64 { return int64(c&0xFF) << (3 * (c >> 8 & 7)) }

// Unit returns the resolution of c: 1 byte for an exact code, 8^e bytes.
func (c DepthCode) Unit() int64 { return 1 << (3 * (c >> 8 & 7)) }

// Canonical reports whether EncodeDepth can return c: an 11-bit code
// whose mantissa is at least 32 when its exponent is not 0.
func (c DepthCode) Canonical() bool { return c <= MaxDepthCode && (c>>8 == 0 || c&0xFF >= 0x20) }

// Held reports whether copies tagged e carry a hold (MirrorMeta.HoldNs).
func (e Event) Held() bool { return e == EventDelay || e == EventReorder }

// HoldCode is the 16-bit encoding of a hold: a 3-bit exponent e and a
// 13-bit mantissa m, hold = m << (3e) ns. Holds up to 8191 ns are exact;
// longer ones are rounded down to a multiple of 8^e ns (a relative error
// below 1/1024), up to 8191 << 21 ns ≈ 17.2 s, where the code saturates.
type HoldCode uint16

// MaxHoldNs is the longest hold a HoldCode represents.
const MaxHoldNs = 0x1FFF << 21

// EncodeHold returns the code of ns rounded down (0 for a negative ns,
// the largest code above MaxHoldNs).
func EncodeHold(ns int64) HoldCode {
	if ns <= 0 {
		return 0
	}
	e, m := octalFloat(min(ns, MaxHoldNs), 0x1FFF)
	return HoldCode(e<<13 | m)
}

// Ns returns the hold c encodes: the true hold is in [Ns, Ns+Unit).
func (c HoldCode) Ns() int64 { return int64(c&0x1FFF) << (3 * (c >> 13)) }

// Unit returns the resolution of c: 1 ns for an exact code, 8^e ns.
func (c HoldCode) Unit() int64 { return 1 << (3 * (c >> 13)) }

// MirrorSeqMask is the width of a switch's mirror sequence number (40
// bits) and MirrorTimeMask that of the timestamp (48 bits); both wrap.
const (
	MirrorSeqMask  = 1<<40 - 1
	MirrorTimeMask = 1<<48 - 1
)

// MaxSwitches is the number of logical switch ids a mirror copy can name
// (MirrorMeta.Switch 0..31: 5 bits of the sequence field).
const MaxSwitches = 32

// MirrorSwitchShift is the position of the switch id in the 48-bit mirror
// sequence field: bits 41..45 (bit 40 and bits 46..47 are 0).
const MirrorSwitchShift = 41

// MirrorSeqField returns the 48-bit mirror sequence field of a copy of
// switch sw (taken modulo MaxSwitches) with sequence number seq (taken
// modulo 2^40): sw<<MirrorSwitchShift | seq.
func MirrorSeqField(sw uint8, seq uint64) uint64 {
	return uint64(sw%MaxSwitches)<<MirrorSwitchShift | seq&MirrorSeqMask
}

// SplitMirrorSeq is the inverse of MirrorSeqField: the switch id (bits
// 41..45) and sequence number (bits 0..39) of a 48-bit mirror sequence
// field. Bits 40, 46 and 47 are ignored.
func SplitMirrorSeq(field uint64) (sw uint8, seq uint64) {
	return uint8(field>>MirrorSwitchShift) % MaxSwitches, field & MirrorSeqMask
}

// Mirror returns the mirror metadata carried by a decoded mirror copy. It
// does not check that p is one; see LooksMirrored.
func (p *Packet) Mirror() MirrorMeta {
	sw, seq := SplitMirrorSeq(MAC(p.SrcMAC).Uint64())
	m := MirrorMeta{
		Seq:         seq,
		Switch:      sw,
		TimestampNs: MAC(p.DstMAC).Uint64(),
		Event:       Event(p.TTL & 7),
		QDepth:      p.DepthCode().Bytes(),
	}
	if m.Event.Held() {
		m.HoldNs = p.HoldCode().Ns()
	}
	return m
}

// FrameEvent returns the event of a mirror copy (MirrorMeta.Event, what
// Parse and Mirror give) straight from its frame: the low 3 bits of the
// TTL of an IPv4 or the hop limit of an IPv6 packet in an Ethernet frame
// with up to two VLAN tags (the bits above carry the queue depth,
// DepthCode); EventNone for other frames.
func FrameEvent(frame []byte) Event {
	off := 12
	for range 3 {
		if len(frame) < off+2 {
			return EventNone
		}
		l3 := off + 2
		switch binary.BigEndian.Uint16(frame[off:]) {
		case EtherTypeVLAN, EtherTypeQinQ:
			off += 4
			continue
		case EtherTypeIPv4:
			if len(frame) > l3+8 {
				return Event(frame[l3+8] & 7)
			}
		case EtherTypeIPv6:
			if len(frame) > l3+7 {
				return Event(frame[l3+7] & 7)
			}
		}
		return EventNone
	}
	return EventNone
}

// HoldCode returns the hold field of a mirror copy (MirrorMeta.HoldNs): the
// UDP source port of a raw copy, the UDP checksum of a restored one. It is
// meaningful only on a copy whose event is Held.
func (p *Packet) HoldCode() HoldCode {
	if p.MirrorRaw {
		return HoldCode(p.MirrorSrcPort)
	}
	return HoldCode(p.UDPChecksum)
}

// DepthCode returns the queue-depth field of a mirror copy
// (MirrorMeta.QDepth): TTL bits 3..7 are its top 5 bits, the BTH's resv6
// its low 6 bits (0 when the capture ends before the BTH's byte 4).
func (p *Packet) DepthCode() DepthCode {
	c := DepthCode(p.TTL>>3) << 6
	switch {
	case p.BTH != nil:
		c |= DepthCode(p.BTH[bthFB] & bthResv6)
	case p.BTHOff > 0 && len(p.Frame) > p.BTHOff+bthFB: // BTH cut after byte 4
		c |= DepthCode(p.Frame[p.BTHOff+bthFB] & bthResv6)
	}
	return c
}

// LooksMirrored is the heuristic "lumina decode --mirror auto" uses on a
// frame whose ports were already restored: the source MAC's first byte is
// a switch id shifted left by one (MirrorSeqField; 0 for switch 0) and its
// second byte is zero, as a sequence number below 2^32 has them (real
// unicast MACs carry an OUI there), and the TTL and resv6 read as a mirror copy's event and
// depth (TTL below 8, or a Canonical DepthCode: a sender's TTL 64 with
// resv6 0 is none). Raw mirror copies (Packet.MirrorRaw) are recognised by
// their port instead.
func (p *Packet) LooksMirrored() bool {
	return p.MirrorRaw || ((p.TTL < 8 || p.DepthCode().Canonical()) && p.SrcMAC[0]&^((MaxSwitches-1)<<1) == 0 && p.SrcMAC[1] == 0)
}

func putMAC48(b []byte, v uint64) {
	m := MACFromUint64(v)
	copy(b, m[:])
}

// ApplyMirror rewrites a mirror copy in place the way the injector's egress
// does: event in the TTL bits 0..2 and the DepthCode of m.QDepth in the TTL
// bits 3..7 and, if the BTH's byte 4 is in frame, its resv6 (IPv4 header
// checksum updated; FECN and BECN kept), switch and sequence number in
// the source MAC (MirrorSeqField), timestamp in the destination MAC, the original UDP source
// port stashed in the UDP checksum field, UDP source port = srcPort (random,
// to spread RSS) or, for a Held event, the HoldCode of m.HoldNs, and UDP
// destination port = mirrorPort. frame must be an
// untagged or tagged Ethernet/IP/UDP frame to port 4791 with at least the
// UDP header captured; ApplyMirror reports false otherwise and leaves frame
// unchanged.
func ApplyMirror(frame []byte, m MirrorMeta, mirrorPort, srcPort uint16) bool {
	l3, l4, ok := udpOffsets(frame)
	if !ok || binary.BigEndian.Uint16(frame[l4+2:]) != UDPPort {
		return false
	}
	putMAC48(frame[0:6], m.TimestampNs&MirrorTimeMask)
	putMAC48(frame[6:12], MirrorSeqField(m.Switch, m.Seq))
	dc := EncodeDepth(m.QDepth)
	ttl := byte(m.Event&7) | byte(dc>>6)<<3
	if frame[l3]>>4 == 4 {
		frame[l3+8] = ttl
		setIPv4Checksum(frame[l3:l4])
	} else {
		frame[l3+7] = ttl
	}
	if fb := l4 + UDPLen + bthFB; len(frame) > fb {
		frame[fb] = frame[fb]&^bthResv6 | byte(dc)&bthResv6
	}
	if m.Event.Held() {
		srcPort = uint16(EncodeHold(m.HoldNs))
	}
	udp := frame[l4:]
	copy(udp[6:8], udp[0:2])
	binary.BigEndian.PutUint16(udp[0:], srcPort)
	binary.BigEndian.PutUint16(udp[2:], mirrorPort)
	return true
}

// RestoreMirror undoes the port rewrite of a mirror copy in place, as the
// dumper does before writing its pcap: UDP source port from the checksum
// field, destination port 4791, checksum 0 (what RNICs send) or, for a copy
// whose event (TTL) is Held, its HoldCode from the source port. The MACs
// and the TTL keep the metadata. It reports false, leaving frame unchanged, if
// frame is not an IP/UDP frame to mirrorPort.
func RestoreMirror(frame []byte, mirrorPort uint16) bool {
	// The common case without the general walk (it is on the dumpers'
	// per-packet path): untagged IPv4 without options.
	l3, l4 := EthernetLen, EthernetLen+IPv4MinLen
	if len(frame) < l4+UDPLen || frame[12] != EtherTypeIPv4>>8 || frame[13] != EtherTypeIPv4&0xFF ||
		frame[EthernetLen] != 0x45 || frame[EthernetLen+9] != ipProtoUDP {
		var ok bool
		if l3, l4, ok = udpOffsets(frame); !ok {
			return false
		}
	}
	if binary.BigEndian.Uint16(frame[l4+2:]) != mirrorPort {
		return false
	}
	ttl := frame[l3+8]
	if frame[l3]>>4 == 6 {
		ttl = frame[l3+7]
	}
	udp := frame[l4:]
	hold := [2]byte{}
	if Event(ttl & 7).Held() {
		hold = [2]byte{udp[0], udp[1]}
	}
	copy(udp[0:2], udp[6:8])
	binary.BigEndian.PutUint16(udp[2:], UDPPort)
	udp[6], udp[7] = hold[0], hold[1]
	return true
}

// udpOffsets finds the IP and UDP headers of an Ethernet frame (up to two
// VLAN tags), requiring the UDP header to be captured.
func udpOffsets(frame []byte) (l3, l4 int, ok bool) {
	if len(frame) < EthernetLen {
		return 0, 0, false
	}
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	for n := 0; (et == EtherTypeVLAN || et == EtherTypeQinQ) && n < 2; n++ {
		off += VLANTagLen
		if len(frame) < off+2 {
			return 0, 0, false
		}
		et = binary.BigEndian.Uint16(frame[off:])
	}
	l3 = off + 2
	switch et {
	case EtherTypeIPv4:
		if len(frame) < l3+IPv4MinLen || frame[l3]>>4 != 4 || frame[l3+9] != ipProtoUDP {
			return 0, 0, false
		}
		ihl := int(frame[l3]&0x0F) * 4
		if ihl < IPv4MinLen {
			return 0, 0, false
		}
		l4 = l3 + ihl
	case EtherTypeIPv6:
		if len(frame) < l3+IPv6Len || frame[l3]>>4 != 6 || frame[l3+6] != ipProtoUDP {
			return 0, 0, false
		}
		l4 = l3 + IPv6Len
	default:
		return 0, 0, false
	}
	if len(frame) < l4+UDPLen {
		return 0, 0, false
	}
	return l3, l4, true
}

func setIPv4Checksum(h []byte) {
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], IPv4Checksum(h))
}
