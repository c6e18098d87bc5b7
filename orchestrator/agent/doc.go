// Package agent hosts lumina's components for an orchestrator: a dumper,
// an RNIC (lumina's software RNIC, or a real one through libibverbs) with
// one generator role, and the software switch with its P4Runtime server.
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
