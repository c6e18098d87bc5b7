// Package roce implements the RoCEv2 wire format: typed views of the
// InfiniBand transport headers, opcodes, ICRC, 24-bit PSN arithmetic, a frame
// builder and an allocation-free parser, and the codec of the metadata
// Lumina's injector embeds in mirror copies.
//
// # Frames
//
// A RoCEv2 frame is Ethernet (optionally VLAN-tagged) / IPv4 or IPv6 / UDP to
// port 4791 / BTH / extended headers / payload / 0-3 pad bytes / ICRC. Which
// extended headers follow the BTH depends on the opcode alone (Opcode.ExtLen
// and the Has* methods), in the order RDETH, DETH, FETH, RETH, AtomicETH,
// AETH, AtomicAckETH, ImmDt, IETH. A CNP (opcode 0x81) carries 16 reserved
// zero bytes, treated here as a header so its payload length is 0.
//
// Headers are views: BTH, RETH, AETH, ... are []byte types whose getters are
// named after the specification's fields. They do not check bounds; Parser
// hands out only views that are fully captured. FrameSpec builds frames
// (ICRC included) into a caller-provided buffer.
//
// Parser.Parse fills a Packet from a frame without allocating. Lengths come
// from the IP and UDP headers, not from the capture, so a frame cut by a
// snap length (128 bytes in Lumina's dumpers) still reports its payload
// length; its ICRC status is ICRCTruncated.
//
// # ICRC
//
// CRC-32 over 8 bytes of 0xFF, then the IP header with TOS/traffic class,
// TTL/hop limit, header checksum and IPv6 flow label forced to ones, the UDP
// header with checksum forced to ones, the BTH with byte 4 (FECN, BECN,
// resv6) forced to ones, and the rest of the packet up to the pad; written
// least significant byte first. A switch may therefore change ECN/DSCP and
// TTL without breaking the ICRC, but not the IP identification, the ports or
// the BTH; Lumina's "corrupt" event flips the IP identification for exactly
// that reason. Verified against a ConnectX-4 Lx capture (testdata).
//
// # PSNs
//
// PSN arithmetic is modulo 2^24; PSN.Sub, LessThan and InWindow are
// wrap-safe within the 2^23 window the IBA guarantees. Never compare PSNs
// with < directly.
//
// # Mirror metadata
//
// Lumina's injector mirrors every RoCE packet to dumpers and rewrites the copy
// (ApplyMirror): the event type goes in the IP TTL (0 none, 1 drop, 2 ECN, 3
// corrupt), the switch id (bits 41..45) and its mirror sequence number
// (bits 0..39) in the source MAC (48 bits, big-endian; MirrorSeqField), the
// switch ingress timestamp in ns (48 bits) in the destination MAC.
//
// The UDP ports are rewritten too, so that dumpers can filter mirror copies
// and spread them over CPU cores with RSS. We follow the public Lumina tool,
// not the paper's wording ("rewrite the destination port to a random
// number"): the destination port becomes a fixed, configurable port
// (rewrite-udp-dst-port, DefaultMirrorPort 9741), the source port becomes a
// random value, and the original source port is kept in the UDP checksum
// field. A fixed destination port lets a dumper's filter select mirror copies
// exactly; a random source port still gives RSS many flows. RoCE senders put
// 0 in the UDP checksum, so nothing is lost by borrowing it.
//
// The copy of a packet the switch held (EventDelay, EventReorder) carries
// its hold, a HoldCode (EncodeHold), in the source port instead of a random
// value.
//
// Every copy of a forwarded packet carries the depth in bytes of the egress
// queue (egress port, priority) the packet joined, measured before it
// joined, as Tofino's enq_qdepth is: an 11-bit DepthCode (EncodeDepth,
// exponent code>>8, mantissa code&0xFF, depth = m<<(3e) bytes, exact below
// 256 bytes), its top 5 bits in TTL bits 3..7 (above the event in bits
// 0..2) and its low 6 bits in the BTH's resv6 (byte 4 bits 0..5, FECN and
// BECN untouched). Both fields are ICRC-masked, so the copy's ICRC still
// verifies. A switch without a queue model writes 0, so such copies keep
// the TTL equal to the event. Readers take the event as TTL & 7
// (MirrorMeta.Event) and the depth from Packet.DepthCode.
//
// RestoreMirror (run by the dumper before it writes its pcap) puts the source
// port back, sets the destination port to 4791 and the checksum to 0, or to
// a held copy's HoldCode: the restored copy equals the packet as the switch
// forwarded it, except for the MACs and the TTL, which keep the metadata,
// and a held copy's UDP checksum (masked by the ICRC). Parser.MirrorPort decodes raw,
// unrestored copies as well (with ports restored in the Packet and the ICRC
// checked against the original ports).
//
// Pitfalls: the public tool's sequence number is 31 bits (bytes 0-1 of the
// source MAC zero); ours is 48 bits and wraps at 2^48. Packet.LooksMirrored
// is a heuristic for restored copies (a TTL and resv6 that read as an event
// and a canonical DepthCode, and a source MAC whose first two bytes are
// zero); callers that know what they read should not guess.
package roce
