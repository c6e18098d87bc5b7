// Package retransmission measures how each lost packet was recovered (the
// Lumina paper's retransmission performance analyzer, §4 and Fig. 5).
//
// A lost packet is a data packet (WRITE/SEND request, READ response) the
// injector dropped or corrupted, or, in a capture without mirror metadata,
// a PSN the receiver never got before a later one (a "gap"; its loss time
// is then the arrival of that later packet). For each loss the tracker
// finds, on the same connection:
//
//   - the next delivered data packet after it (the out-of-order arrival
//     that reveals the gap to the receiver);
//   - the first NAK delivered to the sender after it with a PSN at or
//     before the lost one (READ: the re-issued READ request, when the
//     requester had seen a later response);
//   - the retransmission: the next transmission of the same PSN.
//
// A loss with such a NAK before its retransmission is "fast"; with an RNR
// NAK "rnr"; otherwise "timeout". When the NAK's PSN is the lost PSN
// (the NAK was for this loss):
//
//	nack_generation_ns = t(NAK) − t(next delivered packet)
//	nack_reaction_ns   = t(retransmission) − t(NAK)
//
// and for every loss retransmission_ns = t(retransmission) − t(loss).
// A NAK for an earlier PSN covers later losses (Go-back-N resends them),
// and then only retransmission_ns is given. Times are switch timestamps,
// so nack_generation includes half an RTT (switch → receiver → switch)
// and nack_reaction the other half: with Options.RTTNs set, the
// *_corrected_ns fields subtract half of it from each.
//
// iter is the transmission round of the lost packet: 1 for its first
// transmission, 2 for its first retransmission, and so on.
//
// The tracker also records every go-back of a requester (GoBack): its
// trigger (fast, rnr, timeout), its first PSN, and for timeouts the idle
// time before it (since the requester's last transmission or the last
// progress), which the timeout analyzer turns into timeout intervals.
//
// Packets the switch held (event delay or reorder) are not lost: a gap
// they leave is no loss once they arrive, and they are not
// retransmissions. Copies the switch made (event duplicate) are ignored.
//
// A go-back is spurious when it re-sends nothing lost: cause "delivered"
// when no lost packet was outstanding (a dropped or held ACK, an early
// timer), cause "late" when the PSN it re-sent was held by the switch and
// arrived afterwards (a delay past the timeout: the retransmission looked
// like new data, or repaired a gap the held packet then filled).
// Result.Spurious lists them, ConnStats.Spurious counts them; both are
// omitted when there are none.
//
// Verdict: fail if a lost packet was never retransmitted, unless its
// connection gave up (retry_cnt go-backs without progress) or ended with a
// fatal NAK.
package retransmission
