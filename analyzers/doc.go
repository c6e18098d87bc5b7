// Package analyzers runs lumina's trace analyzers over a trace and builds
// the report: the integrity check (analyzers/integrity) and then, if the
// trace is valid, the Go-back-N logic check (gbn), the retransmission
// breakdown (retransmission), the timeout check (timeout), the CNP pacing
// check (cnp) and the NIC counter cross-check (counters), and, when the
// switch delayed, reordered or duplicated packets, the events report
// (events; it compares them with Meta.Events), with PFC frames in the
// trace the pfc analysis (pfc), and when the connections name their flows
// (a many-host test) the flows analysis (flows: per flow goodput, queue
// depth, fairness, victim flows). Package model
// holds the common trace and connection model and the run metadata;
// package report the report, its JSON schema and its text and HTML forms.
//
// # Use
//
//	meta, _ := model.LoadMeta("meta.json")        // optional
//	r, err := analyzers.AnalyzeFile(ctx, "trace.pcap", meta, analyzers.Options{})
//	report.WriteFiles("out", r)
//	if !r.Passed() { ... }
//
// The orchestrator (lumina run) calls Analyze with the run's metadata; the
// CLI (lumina analyze) reads it from a file or a run directory. The trace
// may be any pcap or pcapng file: a merged Lumina mirror trace (switch
// timestamps and injected events in the MACs and TTL, detected
// automatically) or a foreign RoCEv2 capture (pcap timestamps, every
// packet delivered, integrity skip).
//
// # Passes
//
// With connections in the metadata the analysis is one streaming pass:
// every frame is parsed once into a model.Pkt and handed to each
// analyzer's per-connection state machine. Without them, a first pass
// infers the connections (model.Inferrer) and the MTU, so the source must
// be readable twice (Source). Memory does not grow with the trace except
// for what is reported (violations, losses, timeouts) and the bounded plot
// data; the steady state of a pass does not allocate (tested with
// testing.AllocsPerRun, measured by BenchmarkAnalyze).
//
// All analyzers always run; Options.Checks selects which verdicts the
// report carries (the others are skip, "not selected").
//
// # Timestamp uncertainty
//
// The bound checks compare intervals between switch timestamps with NIC
// parameters (timeout, cnp). Meta.TimestampUncertaintyNs (U: how late a
// timestamp may be; 0 on sim) makes each interval uncertain by ±U; a check
// whose margin is within U is model.Inconclusive, which does not fail the
// report (Report.Passed) and which Report.Result calls INCONCLUSIVE. U
// must be in the metadata when the analysis starts (Analyze, NewStream):
// the CNP pacers are replayed with it while the packets flow.
//
// # Concurrency
//
// Analyze shares nothing between calls; concurrent calls on different
// sources are safe.
package analyzers
