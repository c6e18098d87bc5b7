// Package cnp checks CNP generation against the notification point's
// pacing (Lumina §4 and §6.4, Tables 3-4; roce-facts §5.1).
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
//	per-port     the NP's port (Endpoint.Port, else its IP address)
//	per-dest-ip  the CNP's destination, the data sender's IP
//	per-ip-pair  (NP IP, data sender IP)
//
// Observed CNPs are counted per connection (the QP they are addressed to).
// A scope is consistent with the trace when its expected count equals the
// observed count on every connection; the report lists the consistent
// scopes. Verdict: pass if the expected scope (Meta cnp_scope) is
// consistent, or, with none configured, if any scope is; skip when
// min_time_between_cnps is unknown (the counts are then computed with 0).
//
// Pitfall: the pacer is modelled on trigger arrival times at the switch,
// not on the NP's clock; triggers closer to a boundary than the half RTT
// can be classified differently from the NIC.
package cnp
