// Package model is the common trace and connection model of lumina's
// analyzers: the run metadata they accept (Meta), the connections of a run
// (Connection, Table), the decoded per-packet record every analyzer
// consumes (Pkt), connection inference for traces that come without
// metadata (Inferrer), and the verdict type of the report.
//
// # Connections and directions
//
// A Connection is one RC QP pair seen from its requester: the requester
// sends requests (SEND, WRITE, READ requests) to the responder's QPN; the
// responder sends ACKs, NAKs and READ responses to the requester's QPN.
// Every packet of a connection therefore travels either ToResponder or
// ToRequester, and Table maps a packet (source IP, destination IP,
// destination QPN, request or not) to its connection and direction. CNPs go
// from the notification point to the data sender: ToRequester for WRITE and
// SEND, ToResponder for READ.
//
// Two QPs that both issue requests to each other make two Connections with
// swapped roles; the request/response bit of the lookup key keeps them
// apart.
//
// # Packets
//
// Pkt is what the pipeline hands to each analyzer, one per RoCE packet in
// trace order: its connection and direction, a coarse Kind, the PSN, the
// switch timestamp and the injector's event. Delivered means the packet
// reached its destination intact: not dropped and not corrupted. Foreign
// captures (no mirror metadata) have every packet delivered and pcap
// timestamps. A mirror trace also holds wrapped copies of the PFC and PAUSE
// frames the switch saw (trace.IsMACMirror); they take mirror sequence
// numbers (the integrity check counts them) but are no RoCE packets:
// Decoder.Decode rejects them, as it rejects any other non-RoCE frame.
//
// # Pitfalls
//
//   - PSNs are 24-bit and wrap: compare them with roce.PSN.Sub/LessThan,
//     never with <.
//   - Timestamps are taken where the packets were mirrored (the switch), not
//     at the NICs: a latency between a packet of one direction and one of
//     the other includes the propagation between switch and NIC (half an
//     RTT, Lumina §4).
//   - Switch timestamps may be late, never early, by up to
//     Params.TimestampUncertaintyNs (U; 0 on sim): an interval between two
//     of them is uncertain by ±U. Checks that compare an interval with a
//     NIC parameter say Inconclusive when their margin is within U.
//   - A READ request consumes one PSN per response packet; its range is
//     computed with the connection's MTU (Meta.MTU, or inferred from the
//     largest FIRST/MIDDLE payload, default 1024).
package model
