// Package agent hosts lumina's components for an orchestrator: a dumper,
// an RNIC (lumina's software RNIC, or a real one through libibverbs) with
// the generator roles of its host, and the software switch with its
// P4Runtime server.
// One agent runs per machine, per network namespace (netns testbed), or
// per component inside the orchestrator's process (sim testbed).
//
// # Services and messages
//
// Agent.Register adds the Dumper, Generator and Injector services of
// proto/lumina/v1. Every payload is a typed message; wire.go converts them
// to and from the Go types and rejects what the Go types cannot hold with
// ErrWire, naming the field.
//
// # Where components live
//
// An Env says where: Real (a machine: real-time loops, AF_PACKET
// interfaces, sockets, TLS) or the sim testbed's (a shared virtual clock,
// in-process links, an in-memory network). The services are the same code
// on both.
//
// # Several flows per host
//
// A host may be requester of some flows and responder of others (#30):
// the agent's RNIC is a generator.Mux, so each requester and responder
// session gets the completions of its own QPs; Serve may be called once
// per flow that ends at the host (each with its listener and token) and
// Run once per flow that starts there, concurrently. Run reports its
// connections to the intake with its flow index (InstallRequest.flow);
// the agent numbers a flow's connections from 0 and leaves
// Connection.Flow empty: the driver names them and numbers them across
// flows. The Env sequences the flows (SetUp, Traffic): on the sim
// testbed's shared virtual clock (SimFlows) they set up one at a time in
// flow order, the clock stands still until all are ready, then all start
// at one instant in flow order, each after its start_delay_ns, so the
// trace depends on the seed only; on a real clock each starts its delay
// after it is ready.
//
// # Security boundary
//
// An agent obeys whoever holds its token, so a networked agent accepts
// only TLS connections that present it ("authorization: Bearer TOKEN" on
// every call; ServerOptions) and its certificate is self-signed and pinned
// by the orchestrator (DialOptions trusts exactly that certificate; no
// CA). What an orchestrator can make an agent do is bounded: open the
// interfaces and listeners it names, write only the dumper output path it
// names, and Fetch only that one file (any other path is refused). The
// agent calls back only the Intake address the orchestrator gives, with
// the certificate and token it gives. Its listeners hold at most
// MaxConnsPerListener connections and close one that has not authenticated
// within DefaultAuthTimeout, evicting an unauthenticated one for a new
// connection when full (NewLimitListener); the responder's generator
// control connection takes only a requester that presents the run's
// secret (Serve). The token is read from a file, never
// from the command line. Configuring a real NIC (verbs) changes host state,
// which Close restores.
package agent
