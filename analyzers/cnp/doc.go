// Package cnp checks CNP generation against the notification point's
// pacing (Lumina §4 and §6.4, Tables 3-4; docs/personality.md).
//
// Triggers are the ECN-marked data packets delivered to a notification
// point (NP: the data receiver; the injector's ecn event, or IP ECN = 11)
// and, when configured (nak_triggers_cnp: CX5/CX6 with slow restart), the
// NAKs it sends. For each pacing scope the analyzer replays the NP's pacer
// on the switch timestamps of the triggers, the way Lumina's checker does:
// a trigger at time t produces a CNP iff its domain has not produced one,
// or t − last > min_time_between_cnps (strictly greater); last is then t.
// Domains:
//
//	per-qp       the NP's QP
//	per-port     the NP's port (Endpoint.Port, else its host, else its IP address)
//	per-dest-ip  (the NP's host, the CNP's destination: the data sender's IP)
//	per-ip-pair  (NP IP, data sender IP)
//
// # Many hosts
//
// With several senders per receiver (incast) and receivers of several
// senders, every domain above is the NP's own: a receiver's pacer never
// paces another receiver's CNPs. In a many-host test (Options.Hosts, from
// model.Params.Hosts) each NP is a host known by its addresses: it is
// paced with its own min_time_between_cnps and NAK trigger setting, its
// per-port domain is the host (one NIC whatever its addresses) and its
// per-dest-ip domains are (host, destination). Without hosts (the
// two-host form, a trace without a run) every NP takes the test's one
// setting, a per-port domain is the NP's IP address and a per-dest-ip
// domain is the destination alone: there, the NP of a destination is
// always the other host, so the two keyings agree.
//
// Observed CNPs are counted per connection (the QP they are addressed to).
// A scope is consistent with the trace when its expected count equals the
// observed count on every connection; the report lists the consistent
// scopes. Verdict: pass if the expected scope (Meta cnp_scope) is
// consistent, or, with none configured, if any scope is; skip when
// min_time_between_cnps is unknown (the counts are then computed with 0).
//
// # Egress queues
//
// A trigger's mirror copy is stamped when it reached the switch, but with
// a queue model (PFC, or ECN by queue depth: Options.EgressQueues) it
// then waits behind the frames ahead of it on the NP's port, and the NP
// paces on when it arrives. The wait changes from trigger to trigger (an
// incast queue of 300 KB is 24 µs at 100 Gb/s), so pacing replayed on the
// stamps disagreed with a correct NP: incast-ecn on sim, a per-port CX6
// receiving from four senders, got "consistent with no pacing scope"
// although each of its 54 CNPs followed, by the same 1006 ns, the first
// trigger to leave the queue more than 4 µs after the previous CNP's.
// The analyzer therefore replays each egress port as a FIFO served at
// Options.LinkBps (the software switch serves a port's queues in arrival
// order): departure = max(stamp, previous departure) + serialization, for
// every delivered frame to the port, and paces ECN triggers on their
// departures (NAK triggers stay at their stamps: the NP sent them). A
// wait shorter than the copy's queue depth takes at the link speed (a
// paused port, frames the trace lacks) is raised to it and counted
// (Result.InexactWaits); a pass is then inconclusive.
//
// # Timestamp uncertainty
//
// Switch timestamps may be late by up to U (Options.UncertaintyNs, from
// model.Params.TimestampUncertaintyNs), never early. The gap t − last
// between two trigger stamps is therefore uncertain by ±U — not ±2U: each
// stamp is late by 0..U, so their difference is off by −U..U. A pacing
// decision is ambiguous when the true gap may lie on either side of
// min_time: min_time − U < t − last ≤ min_time + U (roughly |t − last −
// min_time| ≤ U). The analyzer replays every pacer three times: with
// min_time (Expected, the counts at the timestamps as they are), with
// min_time + U (ExpectedMin: a CNP only where one surely follows) and with
// min_time − U (ExpectedMax: a CNP wherever one may follow); the number of
// CNPs of one domain is non-increasing in the threshold, so the true count
// lies between the two (for triggers that reached the switch in trace
// order). AmbiguousDecisions counts the ambiguous decisions
// of the first replay per scope.
//
// # Lateness of the notification point
//
// The NP paces on its own clock, at the time it handles a trigger, not at
// the switch's stamp: a software switch and RNIC on a real clock (netns)
// hand a trigger over up to L later than its arrival at the switch, beyond
// the fixed delays (Options.LatenessNs, model.Params.CNPLatenessNs:
// lumina run's switch pipeline lateness plus the RNICs' receive lateness).
// The gap the NP saw between two triggers then differs from their stamps'
// by up to ±(U + L): the replays above use W = U + L wherever U is named,
// so a late component makes a decision near min_time ambiguous (the
// verdict inconclusive), never a wrong fail. Without it a netns run whose
// switch pipeline ran 24 ms late, the responder getting three triggers
// stamped 122 and 182 µs apart together, failed a correct per-port NIC
// (TestLateness). L is 0 on sim and for hardware.
//
// A scope is surely consistent (ConsistentScopes) when none of its
// decisions was ambiguous and its expected counts equal the observed ones
// — the true pacer then made exactly the replayed decisions; possibly
// consistent (PossibleScopes) when some decision was ambiguous and every
// connection's observed count lies within the range of the three replays;
// not consistent otherwise. Verdict: pass when the expected scope (or,
// with none configured, some scope) is surely consistent; fail when it
// (or every scope) is not even possibly consistent; inconclusive
// otherwise, the reason giving observed and expected counts, the range and
// the ambiguous decisions. With U = 0 no decision is ambiguous and the
// check is exactly the replay above.
//
// Pitfalls: the pacer is modelled on trigger arrival times at the switch,
// not on the NP's clock; triggers closer to a boundary than the half RTT
// can be classified differently from the NIC. In a domain shared with
// other connections (per-port, per-dest-ip) the replays can give one
// connection's CNP to another (a netns run: both CNPs to connection 0,
// the min_time + W replay gave the second to connection 1, and the check
// failed a correct NIC), so a connection's range also covers an interval
// analysis of each decision (Analyzer.fire: CNP sure, suppressed sure, or
// either), which is sound per connection; with W = 0 it is the replay.
package cnp
