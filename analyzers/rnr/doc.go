// Package rnr is the rnr check: RNR NAK waits, RNR retries and the
// classification of every stall of a trace, for runs with receiver-not-ready
// NAKs or on-demand paging (ODP) memory.
//
// An RNR NAK (IBA 9.7.5.2.8) carries the responder QP's minimum RNR NAK
// timer code (0..31, decoded by roce.RNRTimer: 14 is 1.28 ms, 0 is
// 655.36 ms). The requester must wait at least that long before it sends
// the NAK'd request again. An RNR wait is measured at the switch, from the
// RNR NAK to the first re-sent request at or after the NAK'd PSN: the NAK
// reaches the requester after the switch saw it and the retry leaves the
// requester before the switch sees it, so the wait measured is at least the
// requester's. A wait shorter than the encoded timer fails; one within the
// timestamp uncertainty U (model.Params.TimestampUncertaintyNs) of it is
// inconclusive. Each wait reports its ratio to the timer: ConnectX-4 waits
// about 3 times the timer (Fukuoka et al., Analyzing Performance Pitfalls
// of On-Demand Paging of InfiniBand, Figs. 2, 6, 11: 3.77–4.42 ms at
// 1.28 ms).
//
// RNR retries: the requester re-sends at most rnr_retry times
// (model.Params.RNRRetry; nil 7; 7 retries for ever) after RNR NAKs in a row
// for one PSN; a further retry fails the check.
//
// Stalls: every go-back the retransmission tracker found (a re-sent request
// after a gap, retransmission.GoBack) is classified by what the trace shows
// triggered it, in this order: ClassRNR (an RNR NAK), ClassNAK (a PSN
// sequence error NAK), ClassImplied (a READ response gap), and, for a
// timeout, ClassLoss when an injected event (the mirror copies' drop,
// corrupt, delay or reorder tag) hit a packet of the connection since its
// previous timeout, else a silent drop: nothing in the trace explains it, a
// NIC dropped a packet silently. A silent drop re-sent sooner than the
// requester's transport timeout can expire (T_tr of its timeout exponent,
// Options.TimeoutNs) by a requester with ODP memory (Options.RequesterODP)
// is ClassSilentRestart: the requester recovered by itself, as an ODP
// requester whose READ response buffer page-faulted does when the fault
// resolves (Fig. 2 middle); it is reported, not a failure.
// Any other is ClassSilentTimeout: only the transport timeout recovered it
// (an ODP responder that dropped a request arriving while it served a
// duplicate READ, Figs. 6, 7). A silent timeout fails the check, naming the
// connection, PSN and stall length.
//
// Counters (when the run recorded NIC counters): a responder NIC RNR
// NAK'd at most page_faults + out_of_buffer requests (RNR NAKs in a row for
// one PSN of a connection, with no ACK or READ response at or past it in
// between, are one request: a fault is NAK'd again each time its request is
// re-sent while it is pending; each NAK'd request is a page fault or a
// missing receive WQE, and one fault may serve several requests, so not
// equal), and a requester NIC's rnr_nak_retry_err + req_rnr_retries_exceeded
// equals the RNR NAKs the trace delivered to it (mlx5 and the software RNIC
// count the NAK that exhausts rnr_retry in the latter; a NIC lacking one of
// the two counts it 0 when it has the other). A NIC without these counters
// is not compared, and the result says so.
//
// The check applies, and Result is non-zero, only when the trace has an RNR
// NAK or the run used ODP memory (Options.ODP): reports of other runs do not
// have it.
package rnr
