package tracetest

// The READ sequences of Fukuoka et al., Analyzing Performance Pitfalls of
// On-Demand Paging of InfiniBand (ConnectX-4, minimum RNR timer code 14 =
// 1.28 ms), as Timed scripts of one READ connection with IPSN 0 and
// one-packet READs, times in ns after the first request.
var (
	// ODPRemote is Fig. 2 left, a responder page fault: the READ, the RNR
	// NAK 141 µs later, the READ response when the fault resolved (538 µs;
	// the requester, waiting, discards it), the retry after 4.424 ms of
	// RNR wait (3.456 × 1.28 ms) and its response 74 µs later.
	ODPRemote = Timed(At{0, "Q0:1"}, At{141_000, "R0:14"}, At{538_000, "r0"}, At{4_565_000, "Q0:1"}, At{4_639_000, "r0"})
	// ODPLocal is Fig. 2 middle, a requester page fault: the response
	// (5 µs) dropped by the requester, which re-sends the READ when its
	// fault resolved (527 µs, no NAK, no timeout) and gets the response at
	// 620 µs.
	ODPLocal = Timed(At{0, "Q0:1"}, At{5_000, "r0"}, At{527_000, "Q0:1"}, At{620_000, "r0"})
	// ODPTwoReads is Fig. 6 left (remote, interval 3000 µs): the 2nd READ,
	// posted during the RNR wait, leaves 3 µs behind the retry of the 1st
	// and gets no response and no NAK (the responder, serving the
	// duplicate READ, dropped it); the requester times out 500 ms later
	// and re-sends it, answered at once.
	ODPTwoReads = Timed(At{0, "Q0:1"}, At{141_000, "R0:14"}, At{538_000, "r0"}, At{4_565_000, "Q0:1"}, At{4_568_000, "Q1:1"},
		At{4_645_000, "r0"}, At{504_568_000, "Q1:1"}, At{504_573_000, "r1"})
	// ODPTwoReadsLocal is Fig. 6 middle (local, interval 500 µs): the 2nd
	// READ, posted while the requester's page fault is pending, leaves
	// 3 µs behind the restarted 1st and gets no response (the responder,
	// serving the duplicate, dropped it); it is re-sent 500 ms later.
	ODPTwoReadsLocal = Timed(At{0, "Q0:1"}, At{5_000, "r0"}, At{527_000, "Q0:1"}, At{530_000, "Q1:1"}, At{610_000, "r0"},
		At{500_530_000, "Q1:1"}, At{500_535_000, "r1"})
	// ODPThreeReads is Fig. 11 (interval 3000 µs): as ODPTwoReads, then
	// the 3rd READ (6 ms) meets a PSN sequence error NAK for the 2nd's PSN,
	// and the requester re-sends the 2nd and 3rd: both answered, no
	// timeout.
	ODPThreeReads = Timed(At{0, "Q0:1"}, At{141_000, "R0:14"}, At{538_000, "r0"}, At{4_565_000, "Q0:1"}, At{4_568_000, "Q1:1"},
		At{4_645_000, "r0"}, At{6_000_000, "Q2:1"}, At{6_005_000, "N1"}, At{6_010_000, "Q1:1"}, At{6_012_000, "Q2:1"},
		At{6_017_000, "r1"}, At{6_019_000, "r2"})
	// ODPThreeReadsOvertaken is ODPThreeReads with the go-back's second
	// request (the 3rd READ) leaving 7 µs after the response to its first
	// (a busy requester; seen on the netns testbed): one go-back still,
	// no timeout.
	ODPThreeReadsOvertaken = Timed(At{0, "Q0:1"}, At{141_000, "R0:14"}, At{538_000, "r0"}, At{4_565_000, "Q0:1"}, At{4_568_000, "Q1:1"},
		At{4_645_000, "r0"}, At{6_000_000, "Q2:1"}, At{6_005_000, "N1"}, At{6_010_000, "Q1:1"}, At{6_011_000, "r1"},
		At{6_018_000, "Q2:1"}, At{6_020_000, "r2"})
)
