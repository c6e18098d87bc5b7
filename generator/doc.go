// Package generator is lumina's traffic generator: the requester and
// responder roles of a test, on any RNIC behind the Device interface (the
// software RNIC in generator/softrnic now; libibverbs later).
//
// A test runs in phases:
//
//  1. Handshake: the requester creates its QPs and memory, sends the traffic
//     parameters and its QP endpoints (IP, MAC, QPN, IPSN) to the responder
//     over a TCP control connection (JSON lines, see protocol.go); the
//     responder creates, connects and arms its QPs (RECVs for SEND) and
//     answers with its endpoints and memory; the requester connects its QPs.
//  2. The requester hands the connection list to OnConnections — the
//     control plane installs its injection entries there — and traffic
//     waits until it returns (Lumina §3.4: traffic never starts early).
//  3. Start posts the first work requests (tx-depth per QP, or one per QP
//     per round with barrier sync); completions post the rest.
//  4. Finish tells the responder traffic is over; the responder verifies
//     its memory (the requester's data pattern) and reports its counters.
//
// Device calls must run on the device's Loop. Exec says how: directly (the
// sim testbed, where the event loop is not running during the handshake and
// a mutex serializes the two sides) or through the Loop's Post
// (PostAndWait, real time).
//
// One RNIC may carry several requesters and responder sessions at once (a
// host in several flows): wrap its Device in a Mux, and each takes the
// completions of its own QPs. On a bare Device a role takes the device's
// one completion handler, so it must be the only one.
//
// Results: goodput, per-message completion times (post to completion), the
// public tool's per-QP average (last completion − start)/messages, errors.
//
// Pitfalls: multi-GID gives QP i the i-th address of each side (modulo the
// number of addresses); with barrier sync tx-depth must be 1; a control
// plane error aborts the test before any traffic.
package generator
