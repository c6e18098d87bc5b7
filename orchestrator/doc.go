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
// dumpers write, P4Runtime and Intake addresses and credentials), per host
// in the test's hosts order and per flow in its flows order. The driver
// (drive, a driver with one method per phase) then runs the same phases on
// every testbed:
//
//  1. startSwitch: Injector.Start on the switch's agent (or a P4Runtime
//     target of its own on remote), connect as primary, push the pipeline;
//  2. startDumpers: Dumper.Start on each dumper's agent;
//  3. startNICs: Generator.StartNIC on every traffic host;
//  4. serveResponders, tofinoSetup, startIntake: Generator.Serve on each
//     flow's to host (one responder per flow); on a Tofino, the BfRt
//     set-up of PFC, counters and the pauses' packet generator up to the
//     apps' enables, which the intake sends (tofino.go); and the Intake
//     service: each flow's
//     requester reports its connections (Lumina §3.4), and once every flow
//     has, the control plane installs the test's entries for all of them,
//     numbered globally in flow order, before any traffic (intakeBarrier);
//  5. traffic: Generator.Run on each flow's from host, all flows at once,
//     bounded on the testbed's clock (virtual in sim, wall in netns and
//     remote); rx-stalls and pauses start with it;
//  6. settle: on a real-time testbed, wait for held packets and PFC
//     frames;
//  7. collect: switch counters, PFC state and tables over P4Runtime, NIC
//     counters of every host, stop the dumpers and fetch their files;
//  8. merge (once the testbed is closed): the dumps merged by mirror
//     sequence number into the trace, in the same pass as the integrity
//     check (analyzers.RunIntegrity), the search for the packets the
//     events hit and the analyzers (an analyzers.Stream with the run's
//     metadata), so the run never reads its own trace back; a valid
//     trace's analysis is finished with the integrity verdict of the
//     merge, an invalid one's discarded.
//
// RunTest then publishes the results directory once, from a temporary
// directory renamed into place. Tests reach into a run only through
// hooks (Options.hooks): named callbacks at the plan's installation, at
// the start of traffic and when the merge has streamed the whole trace.
//
// Sim reaches its agents over an in-memory network (package memnet), so
// the distributed path (the same requests, typed messages and decoders)
// runs in every testbed, and no other process can reach a sim run.
//
// # A run is a value
//
// Run holds one repeat from the resolved test to the merged trace: the
// seeds, personalities, intent, runtime connections, plan, generator
// results, counters, dumper reports and the integrity verdict; its methods
// compute (configurations, pause injections, the analyzers' metadata) and
// never call an agent. Report (report.json, docs/run.md) is derived from
// it. RunTest copies its input
// test before applying overrides, and every seed a repeat uses is derived
// from the test's seed and the repeat number and recorded in Report.Seeds,
// so a repeat can be replayed on any testbed.
//
// # Pitfalls
//
// A failed phase keeps what was collected: the repeat's directory is still
// published, marked invalid with the reason. A flow whose Run fails
// releases the others waiting at the intake with its error. An invalid trace is retried
// (Options.Retries) and never analyzed. The sim testbed's components share
// one virtual clock guarded by one mutex; the requesters' Runs drive the
// clock while they hold it, so no other control call may need the clock
// during traffic.
package orchestrator
