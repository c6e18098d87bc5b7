package roce

import (
	"encoding/binary"
	"hash/crc32"
)

// The ICRC is CRC-32 (IEEE 802.3, reflected, init and final XOR 0xFFFFFFFF)
// over, in order: 8 bytes of 0xFF standing in for the LRH; the IP header with
// its variant fields forced to all ones (IPv4: TOS, TTL, header checksum;
// IPv6: traffic class, flow label, hop limit); the UDP header with checksum
// 0xFFFF; the BTH with byte 4 (FECN, BECN, resv6) 0xFF; everything after the
// BTH up to the last pad byte. The 32-bit result goes on the wire least
// significant byte first, like an Ethernet FCS.
//
// The masked header bytes (at most 60+8+12) are fed through the table one at
// a time from a stack copy; the rest goes through crc32.Update.

// icrcSeed is the raw CRC register after the 8 bytes of 0xFF (0xDEBB20E3).
var icrcSeed = func() uint32 {
	raw := ^uint32(0)
	for range 8 {
		raw = crc32.IEEETable[byte(raw)^0xFF] ^ raw>>8
	}
	return raw
}()

// portOverride carries UDP ports to use in place of the ones in the frame:
// mirror copies carry rewritten ports, but the ICRC was computed over the
// original ones.
type portOverride struct {
	set      bool
	src, dst uint16
}

// icrc computes the ICRC of l3[:end], where l3 starts at the IP header, ipHdr
// is the IP header length (IPv4 IHL×4, or 40 for IPv6) and end is the offset
// of the ICRC (just past the pad). The caller guarantees
// end >= ipHdr+8+BTHLen and len(l3) >= end.
func icrc(l3 []byte, v6 bool, ipHdr, end int, ports portOverride) uint32 {
	// Masked copy of IP+UDP+BTH in a stack array (at most 60+8+12 bytes),
	// fed through the table in one tight loop.
	var h [60 + UDPLen + BTHLen]byte
	n := copy(h[:], l3[:ipHdr+UDPLen+BTHLen])
	if v6 {
		h[0] |= 0x0F // low nibble of the traffic class
		h[1], h[2], h[3], h[7] = 0xFF, 0xFF, 0xFF, 0xFF
	} else {
		h[1], h[8], h[10], h[11] = 0xFF, 0xFF, 0xFF, 0xFF // TOS, TTL, checksum
	}
	u := h[ipHdr:n]
	if ports.set {
		u[0], u[1], u[2], u[3] = byte(ports.src>>8), byte(ports.src), byte(ports.dst>>8), byte(ports.dst)
	}
	u[6], u[7] = 0xFF, 0xFF
	u[UDPLen+bthFB] = 0xFF
	tab := crc32.IEEETable
	raw := icrcSeed
	for _, b := range h[:n] {
		raw = tab[byte(raw)^b] ^ raw>>8
	}
	// The rest comes from the caller's slice, which crc32 may vectorise
	// (a stack array would escape through crc32's function pointers).
	return crc32.Update(^raw, tab, l3[n:end])
}

// ComputeICRC returns the ICRC of a complete RoCEv2 frame (Ethernet header
// first) as the uint32 whose little-endian bytes go on the wire, and false
// if the frame is not a complete RoCEv2 frame. Mirror copies whose ports
// were rewritten must be restored first (see RestoreMirror).
func ComputeICRC(frame []byte) (uint32, bool) {
	var p Packet
	if err := (&Parser{}).Parse(frame, 0, &p); err != nil || p.Truncated() {
		return 0, false
	}
	return p.computeICRC(), true
}

// VerifiedICRC returns p.ICRC as a Parser with VerifyICRC would have set
// it: for a packet parsed without verification, it computes and compares
// the ICRC (p is not modified).
func (p *Packet) VerifiedICRC() ICRCStatus {
	if p.ICRC != ICRCUnchecked {
		return p.ICRC
	}
	if p.computeICRC() == p.ICRCOnWire {
		return ICRCOK
	}
	return ICRCBad
}

func (p *Packet) computeICRC() uint32 {
	l3 := p.Frame[p.L3:]
	return icrc(l3, p.IPVersion == 6, p.L4-p.L3, p.ICRCOff-p.L3, p.ports)
}

// SetICRC computes the ICRC of a complete RoCEv2 frame and writes it into the
// frame's last four bytes (of the IP payload). It reports false if the frame
// does not parse or is truncated.
func SetICRC(frame []byte) bool {
	var p Packet
	if err := (&Parser{}).Parse(frame, 0, &p); err != nil || p.Truncated() {
		return false
	}
	binary.LittleEndian.PutUint32(frame[p.ICRCOff:], p.computeICRC())
	return true
}
