// Package gbn checks a trace against the Go-back-N rules of RC transport
// (IBA Vol. 1 §9.7, Lumina §4): one finite-state machine for the
// requester and one for the responder of every connection, fed the
// connection's packets in trace order.
//
// For WRITE and SEND the requester is the data sender and the responder the
// data receiver, with ACKs and NAKs as feedback. For READ the roles swap:
// the responder sends the data (READ responses) and the requester receives
// it; a READ request re-issued from the first missing PSN plays the NAK's
// role (an "implied NAK" when the requester saw a later response, a
// timeout otherwise).
//
// # Rules
//
// Receiver side (WRITE/SEND responder, READ requester):
//
//	missing-nak            an out-of-sequence packet was delivered, and the
//	                       loss was repaired (or the trace ended) without a
//	                       NAK (READ: without a re-issued request)
//	duplicate-nak          a second NAK in one loss episode
//	nak-wrong-psn          a NAK (re-issued READ) whose PSN is not the
//	                       expected PSN (the first missing one)
//	unexpected-nak         a NAK although nothing arrived out of sequence
//	ack-backwards          an ACK below an earlier ACK
//	ack-unreceived         an ACK for a PSN not yet received in order
//	reissue-wrong-range    a re-issued READ whose range does not end where
//	                       the original request's did
//	incomplete             at the end, data sent was not all received and
//	                       acknowledged
//	duplicate-unanswered   a duplicate WRITE/SEND request with AckReq set
//	                       got no ACK for the last executed PSN (ePSN-1)
//	                       after it; a duplicate READ request copied by the
//	                       switch whose responses were not sent again
//	duplicate-ack-wrong-psn  the same, and the first ACK after the duplicate
//	                       acknowledged an earlier PSN (e.g. the duplicate's
//	                       own)
//	msn-jump               an ACK/NAK whose MSN grew by more than the PSNs
//	                       executed since the previous one: a duplicate was
//	                       executed again
//
// Sender side (WRITE/SEND requester, READ responder):
//
//	start-psn              the first PSN is not the IPSN of the metadata
//	psn-gap                new data skips PSNs that were never sent (not
//	                       checked on foreign captures, which may miss
//	                       packets lost before the capture point)
//	retransmit-wrong-psn   a go-back does not start at the NAK'd PSN (READ:
//	                       the re-issued request's PSN), or a timeout
//	                       go-back starts after the oldest unacknowledged PSN
//	skipped-retransmission a retransmission sequence jumps over PSNs that are
//	                       neither retransmitted nor acknowledged
//	missing-retransmission a NAK (re-issued READ) that no retransmission
//	                       from its PSN followed
//	unsolicited-retransmission  READ responses re-sent without a request
//	response-unrequested   a READ response beyond every requested PSN
//	incomplete             at the end, data was not all acknowledged
//
// PSNs are compared modulo 2^24. Coalesced ACKs, duplicates (ignored by
// the receiver, re-ACKed) and several messages and QPs are handled. A
// connection whose requester exhausted its retries (at least retry_cnt
// go-backs without progress at the end of the trace) or that ended with a
// fatal NAK is not required to complete. Connections of verb "mixed" are
// not checked.
//
// # Duplicates and switch events
//
// A duplicate WRITE/SEND request (PSN < ePSN) is not executed; a re-ACK
// with the last executed PSN, at or after it (in any position, a late
// or stale ACK may come between), answers it. The re-ACK is required only
// when the duplicate had AckReq set (IBA C9-105 as rxe and the software
// NIC read it; a responder may re-ACK every duplicate, which is accepted);
// duplicates without AckReq are never flagged for lacking one.
//
// Packets tagged delay or reorder were mirrored when they left the switch,
// after packets sent later: the sender rules do not see them as
// retransmissions, a psn-gap they leave is withdrawn when they fill it,
// a missing-nak they repair is withdrawn when the NAK follows them, and a
// held ACK below a later one is no ack-backwards. Packets tagged duplicate
// are copies the switch made: the sender rules ignore them, the receiver
// rules see them as the duplicates they are, and a copied ACK or NAK is not
// the responder's (no duplicate-nak, not counted in NAKs). Withdrawable
// violations are kept in the order they were found. Limitation: a held
// retransmission that starts a go-back is judged where it left the switch.
//
// # Timing caveat
//
// The trace is in switch order. A NAK or ACK is in the trace before the
// sender receives it, and a data packet before the receiver does; the
// rules above only rely on orders that causality preserves at the switch.
//
// # Allocation
//
// Observe does not allocate except to record a violation (at most
// MaxViolationsPerConn per connection; Result.Dropped counts the rest).
package gbn
