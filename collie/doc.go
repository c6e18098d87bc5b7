// Package collie implements Collie's search for performance anomalies of
// RDMA subsystems (Kong et al., NSDI'22): a workload search space built from
// the verbs abstractions, simulated annealing driven by performance and
// diagnostic counters, an anomaly monitor, and minimal feature sets (MFS)
// that describe each anomaly, speed the search up and let applications
// check their own restricted spaces against known anomalies.
//
// # Concepts
//
// A Workload is a list of Traffics run together between host A and host B.
// Each traffic sets every dimension of the Space (§4): direction (uni A→B,
// bi, loopback on B), memory (host topology), num_mrs and mr_size, qp_type,
// opcode, num_qps, mtu, wq_depth, wqe_batch, sge_per_wqe and the request
// vector message_sizes (at most n entries). Numeric dimensions are
// discretised into levels (powers of two between the bounds). Constraints
// (wqe_batch ≤ wq_depth; UD: SEND only and messages ≤ MTU; UC: no READ;
// messages ≤ mr_size; num_mrs × mr_size ≤ max_registered_bytes) hold after
// every draw and mutation. Random draws are uniform over the valid points
// (rejection sampling). The lumina engine adds event slots (which message,
// packet and round to drop or mark).
//
// An Engine runs one experiment and returns Metrics: the monitored host's
// (B's) throughput in both directions, its pause duration ratio, diagnostic
// counters, optionally samples. Engines: Model (a built-in performance
// model with NIC profiles and planted anomaly regions), ExecEngine (any
// external command, JSON over stdin/stdout) and LuminaEngine (the lumina
// harness on the sim testbed).
//
// The Monitor flags a pause (pause duration ratio > 0.1%) and low throughput
// (bps and pps both more than 20% below the line rate in a direction the
// workload loads).
//
// Search runs Algorithm 1: counters are ranked by std/mean over the first
// random points; each counter in turn is driven by annealing (performance
// counters minimised with ΔE = (B−A)/A, diagnostic counters maximised with
// ΔE = (A−B)/B, Metropolis acceptance exp(−ΔE/T)); after each anomaly the
// MFS is built (BuildMFS) and the search restarts from a random point;
// candidates inside a known MFS are skipped. Baselines: random sampling and
// SA without MFS. Every experiment is appended to a JSONL log, and a search
// whose log exists replays it, so a killed search resumes exactly.
//
// # Pitfalls
//
//   - MFS probes are experiments: they count against the budget (the
//     paper's "flat" periods after each anomaly); a probe of a workload
//     measured before reuses that measurement.
//   - Matching is exact: a workload matches an MFS when each entry is
//     satisfied by a distinct traffic; a pattern "mix" is expressed as
//     msg_size_min ≤ small and msg_size_max ≥ large, never as a flag.
//   - The model's diagnostic counters are computed from modelled subsystem
//     loads, never from the planted regions; a planted anomaly is active
//     where its Table-2 conditions hold and its root-cause counter reaches
//     its load. Several Table-2 regions are still broad in the uniform
//     space (#9, #11, #12, #13: 5–15% of random points); see docs/collie.md
//     for what the benchmark shows.
//   - Resume requires the same options (seed, space, algorithm, budget
//     may grow); a mismatch is ErrLog.
//
// Search is not safe for concurrent use on one log; Model, ExecEngine and
// LuminaEngine are safe for concurrent use.
package collie
