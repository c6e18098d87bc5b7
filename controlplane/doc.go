// Package controlplane turns a test's intent and the generator's runtime
// connection metadata into switch state, and installs it over P4Runtime on
// the event injector (lumina's software target or a Tofino).
//
// Translate is pure and table-tested: for connection i it keys data
// packets by (ingress port of the data sender, destination QPN of the data
// receiver) — requester → responder QPN for WRITE/SEND, responder →
// requester QPN for READ, whose responses use the requester's PSN space —
// and every expanded event by (port, QPN, IPSN + relative PSN mod 2^24,
// ITER). Dumpers get clone sessions 1..N and a smooth weighted round robin
// slot sequence (every prefix within one packet of each dumper's share).
//
// A fabric (Ports.Fabric, fabric.go) partitions the switch's ports into
// logical switches, as Hawkeye does on one Tofino: Translate writes an
// Ingress.port_switch entry per port, an Ingress.fabric_forward entry per
// hop of every route (switch, source host MAC, destination host MAC → out
// port), Egress.ecn_red_port entries for the ports of each switch with
// switch.ecn, and keys each connection and its events by the in-port of
// its flow's observed switch on the route of each direction (data from the
// data sender, ACK/NAKs or READ requests the other way), not by the hosts'
// ports. Without a fabric the plan is exactly a one-switch test's.
//
// Switch (Dial, SetPipeline, Install, ReadCounters, Cleanup) is the
// P4Runtime client, built on github.com/antoninbas/p4runtime-go-client: it
// arbitrates as primary (election ID 1, or one above the primary the device
// reports, unless DialOptions.ElectionID fixes it), writes in batches on
// the stream's connection (the server refuses writes from elsewhere), and
// Cleanup is idempotent. CheckInstalled compares every table it installed
// with the plan.
// Intake is the callback the generator calls before traffic: it returns
// only after every entry is installed.
//
// Pitfalls: the relative PSN is 0-based within the QP (message index ×
// packets per message + packet index); PSN keys wrap at 2^24; two
// connections may not receive data on the same (port, QPN).
package controlplane
