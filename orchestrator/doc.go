// Package orchestrator runs lumina tests: RunTest runs every repeat of a
// test on a testbed and publishes each repeat's results directory.
//
// # One driver, three testbeds
//
// A testbed only decides where a repeat's components live: sim starts
// them as agents in this process on one virtual clock, netns as `lumina
// agent` processes in network namespaces, remote finds agents already
// running on real hosts. Its place method returns a placement: gRPC
// clients for the agents' services (package orchestrator/agent, services
// in proto/lumina/v1) and the wiring (switch ports, interfaces, where the
// dumpers write, P4Runtime and Intake addresses and credentials). The
// driver (drive) then runs the same phases on every testbed:
//
//  1. switch: Injector.Start on the switch's agent (or a P4Runtime target
//     of its own on remote), connect as primary, push the pipeline;
//  2. dumpers: Dumper.Start on each dumper's agent;
//  3. RNICs: Generator.StartNIC on both traffic hosts, Generator.Serve on
//     the responder;
//  4. intake: the driver serves the Intake service; the control plane
//     installs the test's entries when the requester reports its
//     connections (Lumina §3.4), before any traffic;
//  5. traffic: Generator.Run on the requester, bounded on the testbed's
//     clock (virtual in sim, wall in netns and remote);
//  6. collect: switch counters over P4Runtime, NIC counters, stop the
//     dumpers and fetch their files;
//  7. merge: the dumps merged by mirror sequence number into the trace,
//     in the same pass as the integrity check (analyzers.RunIntegrity),
//     the search for the packets the events hit and the analyzers (an
//     analyzers.Stream with the run's metadata), so the run never reads
//     its own trace back;
//  8. analyze: a valid trace's analysis is finished with the integrity
//     verdict of the merge; an invalid one's is discarded;
//  9. publish: the results directory is written once, in a temporary
//     directory renamed into place.
//
// Sim reaches its agents over an in-memory network (internal/memnet), so
// the distributed path (the same requests, typed messages and decoders)
// runs in every testbed, and no other process can reach a sim run.
//
// # A run is a value
//
// Run holds one repeat from the resolved test to the merged trace: the
// seeds, personalities, intent, runtime connections, plan, generator
// results, counters, dumper reports and the integrity verdict. Report
// (report.json, docs/run.md) is derived from it. RunTest copies its input
// test before applying overrides, and every seed a repeat uses is derived
// from the test's seed and the repeat number and recorded in Report.Seeds,
// so a repeat can be replayed on any testbed.
//
// # Pitfalls
//
// A failed phase keeps what was collected: the repeat's directory is still
// published, marked invalid with the reason. An invalid trace is retried
// (Options.Retries) and never analyzed. The sim testbed's components share
// one virtual clock guarded by one mutex; the requester's Run drives the
// clock while it holds it, so no other control call may need the clock
// during traffic.
package orchestrator
