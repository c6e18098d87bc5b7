// Package timeout checks retransmission timeouts against the QP's
// configured timeout (Lumina §6.3, Fig. 12, Table 2).
//
// With the QP attribute timeout t, the local ACK timeout is
// T_tr = 4.096 µs × 2^t, and the IBA bounds the actual detection time:
// T_tr ≤ T_o ≤ 4·T_tr. Every timeout go-back the retransmission tracker
// found is measured as the idle time before it: from the requester's last
// transmission or the last progress (an ACK or in-order READ response that
// acknowledged something new) to the first packet of the go-back (READ:
// the re-issued request), in switch timestamps. An ACK stamped at most
// model.Params.CNPLatenessNs (netns: switch and RNIC lateness) before a
// WRITE/SEND re-send of what it acknowledged had not reached the
// requester: that interval runs from before the ACK, in the episode the
// ACK would have ended (retransmission.Options.AckLatenessNs).
// Consecutive timeouts of a connection without progress between them
// form one episode, reported with
// its intervals, its number of retries, and how it ended (recovered,
// gave-up, unresolved).
//
// Verdict: fail if an interval is outside [T_tr − tolerance,
// 4·T_tr + tolerance] or an episode retried more often than retry_cnt
// (timeouts and NAK-triggered go-backs both consume retries). Adaptive
// retransmission is expected to fail both (Lumina §6.3); so are NICs whose
// later timeouts are 8·T_tr (Mellanox non-adaptive: 0.537 s for t = 14).
// Without a known timeout the bounds are not checked and the verdict is
// skip, unless a retry limit was exceeded (fail) or there was no timeout
// at all (pass).
//
// # Timestamp uncertainty
//
// Switch timestamps may be late by up to U (Options.UncertaintyNs, from
// model.Params.TimestampUncertaintyNs), never early, so a measured
// interval v stands for a true one in [v − U, v + U]. With the bound
// [lower, upper] an interval is out of bound only when v < lower − U or
// v > upper + U, and inconclusive when it is within U of a bound on either
// side (lower − U ≤ v < lower + U, or upper − U < v ≤ upper + U).
// Episodes mark both (OutOfBoundIntervals, InconclusiveIntervals). The
// verdict is fail if any episode fails, else inconclusive if any interval
// is inconclusive (the reason names the episodes, intervals, bound and U),
// else as above. With U = 0 (sim) the inconclusive ranges are empty and
// the bound is exact: an interval 1 ns short of lower fails.
package timeout
