// Package flows measures the flows of a many-host test (the hosts form's
// flows; issue #30): per flow goodput over time, the egress queue depth
// toward each host over time, convergence and Jain's fairness index among
// the flows sharing a bottleneck, CNPs and rate cuts per flow, and victim
// flows — flows stalled by PFC pauses that another flow's congestion
// caused (Hawkeye, Fig. 1).
//
// It runs when the connections name their flow (model.Connection.Flow,
// set by the generator in the hosts form); a two-host test, or a trace
// whose connections were inferred, has no flows analysis (the zero
// Result, omitted from the report).
//
// # Goodput
//
// A flow's goodput counts the payload its data receivers accepted: WRITE
// and SEND request packets to the responder (READ response packets to the
// requester) that the switch delivered (neither dropped nor corrupted, not
// an extra duplicate copy) with the PSN the receiver expected next — the
// connection's IPSN, then one more per accepted packet — as a Go-back-N
// receiver accepts them: a packet after a loss is discarded until the lost
// one comes again, a retransmission of a lost packet counts, one of a
// packet already accepted does not. Time is the switch timestamp. The
// data sender of a READ flow is its responder.
//
// # Bins
//
// Rates and depths are kept in at most Options.MaxBins time bins (default
// 256, at most 4096) from the trace's first RoCE packet: bins start
// Options.MinBinNs wide (default 1 µs); whenever a packet falls beyond the
// last bin, the width doubles and neighbouring bins merge (goodput summed,
// depth maximum), so the bins cover the whole trace with between MaxBins/2
// and MaxBins of them once it is longer than MaxBins × MinBinNs. Memory is
// flows × MaxBins + hosts × (MaxBins + 2048) integers, fixed when the
// analyzer is built; Observe does not allocate.
//
// # Queue depth
//
// Every mirror copy of a forwarded packet carries the depth of the egress
// queue (egress port, priority) it joined (model.Pkt.QDepth,
// roce.DepthCode; Tofino enq_qdepth). The queue of a packet is its
// destination host's port; the depths of a port's priorities are merged.
// Per port: the greatest depth in each bin, the maximum and the 99th
// percentile (the least depth of the mirror format's unit holding the
// sample of rank ⌈0.99 n⌉, from a histogram over the format's 2048
// codes). The bottleneck is the port with the greatest depth. A switch
// without a queue model writes 0: DepthRecorded is then false and no
// victim is looked for.
//
// # Convergence and fairness
//
// Flows with the same data receiver share its egress queue: a group.
// The group's common window is the full bins in which every flow sent:
// from the bin after the latest first-packet bin to the bin before the
// earliest last-packet bin. It is cut into steps of m bins, m the least
// power of two that leaves at most ConvergenceSteps (32) of them (a
// remainder at the end is left out), so that a step holds enough packets
// of each flow that their discreteness does not pass for unfairness. The
// convergence step k is the first step of the window such that over steps
// k..end (at least MinConvergedBins of them) every flow's rate in every
// step stays within ±X (Options.Tolerance, default 20%) of its own mean
// over k..end. The time to converge is the start of step k less the first
// packet of the flow of the group that started last (so it is exact to
// one step, Group.StepNs). Jain's
// fairness index J = (Σx)² / (n Σx²) (R. Jain, D. Chiu, W. Hawe, "A
// Quantitative Measure of Fairness and Discrimination for Resource
// Allocation in Shared Computer Systems", DEC-TR-301, 1984) measures the
// fair sharing DCQCN aims for (Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments", SIGCOMM 2015); it is taken over the
// flows' mean rates x after convergence: 1 for equal shares, 1/n when one flow has
// everything. Groups that never converge get J over the whole window and
// a note; windows shorter than MinConvergedBins are not compared.
//
// # CNPs and rate cuts
//
// A flow's CNPs are the CNPs the trace shows addressed to its
// connections, i.e. to its data sender. Its rate cuts are the sender
// NIC's rp_cnp_handled (E810: cnpHandled) over the test, from the run's
// NIC counters: per host, not per flow, so a host sending several flows
// reports one count for all (a note says so); without counters they are
// unknown (a note says so).
//
// # Victims
//
// For each episode in which the switch paused a host H (pfc sent
// episodes, not injected ones): the congested port C is, of the ports H
// sends a flow to (H's ingress buffer holds its packets queued there),
// the one with the deepest queue during the episode (the bins it
// overlaps); it counts only at Options.CongestedBytes or more (default
// 9216: more than one jumbo frame waiting). A flow F of H that the pfc analyzer lists as active
// around the episode in its data direction is a victim when its own
// receiver D is not C and D's queue stayed below CongestedBytes during the
// episode: F was stopped by a pause its own path did not cause. The
// victim names F, the pausing port and priority (H's), the congested port,
// the flows with data to C during the episode, and the pfc causality
// chain's origin. Episodes of the same (flow, pausing port, priority,
// congested port) are merged.
//
// # Verdict
//
// The flows check asserts progress: fail when a flow delivered no new
// data (naming it); otherwise skip when there is one flow (nothing to
// compare) or the packets span no time; pass otherwise. Fairness,
// convergence, depth and victims are measurements, never a verdict: a
// test that requires them asserts on the report.
//
// Pitfalls: bins are coarse for long traces (a 10 ms trace in 256 bins:
// 64 µs), and rates in the first and last bin of a flow are partial; the
// window excludes them. Depth is per egress port, the priorities merged.
package flows
