// Package injector is lumina's software switch target: the pipeline of
// p4src/lumina.p4 in Go over sim.Ports (sim links, or AF_PACKET sockets in
// real time), served through the standard P4Runtime gRPC API for lumina's
// P4Info. It is what users run when they have no Tofino, and what the
// controlplane package programs, unchanged, in every testbed.
//
// # Pipeline (lumina.p4, Ingress then Egress)
//
//   - proxy ARP for the hosts' addresses; L2 forwarding by destination MAC
//     (no entry: drop);
//   - for every RoCEv2 packet: rx_roce[ingress port]++; if (ingress port,
//     destination QPN) is a tracked connection and the packet is a data
//     packet (not ACK/ATOMIC_ACK/CNP), update its ITER, then look up
//     event_table[(port, QPN, PSN, ITER)]: drop (event 1), mark_ecn (CE,
//     event 2) or corrupt (IP identification ^= 0xFFFF, IP checksum kept
//     valid, so the ICRC fails: event 3);
//   - mirror every RoCE packet to the clone session of the next weighted
//     round robin slot, with a 48-bit sequence number counting mirrored
//     copies and the Loop's time as the ns timestamp; the copy is the packet
//     as forwarded (CE mark and corruption included) and egress rewrites it
//     with roce.ApplyMirror (event in TTL, sequence in source MAC, timestamp
//     in destination MAC, UDP ports).
//
// ITER: expected_psn[c] holds the connection's next PSN and iter_reg[c] its
// round. Message scope (public tool): a FIRST/ONLY/READ-request/READ-response
// FIRST|ONLY packet with PSN == expected restarts at 1; any other PSN !=
// expected increments. Connection scope (paper §3.4): a PSN not after the
// previous one increments. Both then set expected = PSN + 1 modulo 2^24 —
// before the event lookup, so a dropped packet still advances it.
//
// # P4Runtime
//
// Server implements arbitration (election IDs; primary = highest; backups
// get ALREADY_EXISTS in their arbitration update and PERMISSION_DENIED on
// Write and SetForwardingPipelineConfig; a departing primary promotes the
// next), SetForwardingPipelineConfig (the P4Info must describe the objects
// the Go pipeline implements — names and bit widths; IDs are mapped),
// Write (INSERT/MODIFY/DELETE of table entries, default entries, indirect
// counters, registers and clone sessions; CONTINUE_ON_ERROR applies what it
// can, ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC all or nothing; failures are
// UNKNOWN with one p4.v1.Error per update as the spec says) and Read (table
// ID 0, empty match, missing index and session 0 are wildcards; values come
// back canonical). Packet I/O is not supported.
//
// Pitfalls: exact match only; the sequence register counts mirrored copies,
// so a WRR slot without a clone session makes copies (and sequence numbers)
// disappear; all state is lost on SetForwardingPipelineConfig.
package injector
