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
//     copies and the packet's ingress time as the ns timestamp (see
//     Timestamps); the copy is the packet as forwarded (CE mark and
//     corruption included) and egress rewrites it with roce.ApplyMirror
//     (event in TTL, sequence in source MAC, timestamp in destination MAC,
//     UDP ports).
//
// # Timestamps
//
// A mirror timestamp is on the Loop's clock. For a port that is a
// sim.TimedPort (an AF_PACKET port on the netns or remote testbed) it is
// the packet's arrival time as the port reports it (the kernel's receive
// timestamp), not the time the pipeline got round to the packet: a
// RealLoop under CPU load runs milliseconds late, and a timestamp taken
// then would shorten the intervals the analyzers measure. For other ports
// (sim links) it is the Loop's time at processing, which on virtual time
// is the arrival.
//
// Packets of different ports can be processed in another order than they
// arrived, so each timestamp is max(arrival, previous mirror timestamp):
// timestamps never decrease in mirror-sequence order, as the integrity
// check requires. The price is that a timestamp can be later than its
// packet's arrival; Switch.Timing reports the largest such clamp (the
// switch's timestamp uncertainty) and how late the pipeline ran (also over
// the Injector service's Timing RPC).
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
// Server implements arbitration for the default role only (another role is
// NOT_FOUND; election IDs; primary = highest with an open stream; backups
// get ALREADY_EXISTS in their arbitration update and PERMISSION_DENIED on
// Write and SetForwardingPipelineConfig, which also need the primary's
// stream open; a departing primary promotes the next), SetForwardingPipelineConfig (the P4Info must describe the objects
// the Go pipeline implements — names and bit widths; IDs are mapped),
// Write (INSERT/MODIFY/DELETE of table entries, default entries, indirect
// counters, registers and clone sessions; CONTINUE_ON_ERROR applies what it
// can, ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC all or nothing; failures are
// UNKNOWN with one p4.v1.Error per update as the spec says) and Read (table
// ID 0, empty match, missing index and session 0 are wildcards; values come
// back canonical; Read copies entry pointers and counter/register cells
// under the switch lock and sorts, encodes and streams without it, so the
// packet pipeline never waits on a reader, however large the read or slow
// the client). Packet I/O is not supported.
//
// Pitfalls: exact match only; the sequence register counts mirrored copies,
// so a WRR slot without a clone session makes copies (and sequence numbers)
// disappear; all state is lost on SetForwardingPipelineConfig.
package injector
