// Package config reads lumina test files: the YAML schema, its defaults,
// and validation with a file:line:col position on every error.
//
// A test file describes one Lumina experiment (SIGCOMM'23): a requester and
// a responder host with RNICs (or up to 64 named hosts and the flows among
// them), a programmable switch that injects events and
// mirrors every RoCEv2 packet, a pool of dumpers, the traffic, and the events
// to inject. The schema is compatible with the public Lumina tool's
// conf/example.yml (every key of it is accepted) and with the spellings of
// the paper's Listings 1 and 2 (num-connections for num-qps, lower-case NIC
// types, bit-error for corrupt). lumina adds name, seed, testbed,
// iter-scope, nic.personality, dumpers, and the msg and packet keys of
// events. docs/config.md lists every key with its type and default.
//
// # The schema table
//
// The schema is one table, in schema.go: a section per YAML mapping
// (topSection, switchSection, ..., trafficSection, eventSection) holding a
// key row per YAML key, in order. A row names the Go field that the key
// sets, its default, how a value is decoded and checked (a decodeFunc such
// as ints(lo, hi, ""), oneOf(names) or decStr), and whether Marshal leaves
// the key out when it holds its default. Parse takes the known keys,
// defaults and decoders of every mapping from the table; Marshal writes
// the rows in table order, each field by its Go type. Values that fit no
// generic decoder (num-qps "a,b", ip-list, prio-dscp-map, psn "all", the
// dumpers and data-pkt-events lists, the mirrors) have a decodeFunc of
// their own next to the generic ones in decode.go.
//
// To add a key: add the field, with a comment, to its struct in types.go;
// add one row to its section in schema.go; add it to the section's key
// table in docs/config.md (the table under the heading section.doc).
// TestSchemaDocs fails until the docs list exactly the table's keys with
// the same defaults. Checks that involve other keys go to validate.go, and
// defaults that depend on other keys to resolve.
//
// Load and Parse return a resolved *Test: every default filled in, aliases
// mapped to lumina's names, and requester-mirror/responder-mirror turned
// into Dumpers. Test.Marshal writes the canonical YAML of a resolved Test;
// parsing it again gives an equal Test (apart from Event.Pos).
//
// # Two forms: requester/responder, or hosts and flows
//
// A test names its traffic hosts in one of two forms. The two-host form
// (requester, responder, traffic) is the public tool's. The hosts form
// (issue #30) names 2..MaxHosts hosts (hosts, each taking every key of
// requester and responder), 1..MaxFlows flows between them (flows, each
// taking every key of traffic but pfc-events, plus name, from, to and
// start-us) and its PFC events at the top level (pfc-events, whose to and
// host name a host and whose start names its flow). A file giving both
// forms' keys is an error. The schema decodes both through the same
// sections: a host is a hostSection, a flow a flowSection that inherits
// every row of trafficSection (sectInherit), so a key added to traffic is
// a key of every flow.
//
// Parse fills Test.Hosts, Test.Flows and Test.PFCEvents in both forms
// (Normalize makes the two-host form one flow "traffic" from host
// "requester" to host "responder"), and code past the parser reads only
// those; Test.HostsForm says which form the file used, and in the hosts
// form Requester, Responder and Traffic are zero. The connections of all
// flows are numbered in flow order (Test.QPOffset), so the two-host
// form's connection i stays i. Every check of the two-host form applies
// per host and per flow, at the flow's or host's keys (an event's qpn
// against its flow's num-qps, a pause's host without nic.pfc, a host
// without control-ip on remote); the hosts form adds its own: unknown or
// identical from and to, an address on two hosts, duplicate names, and
// the QPs of all flows within what the switch tracks (MaxTotalQPs).
//
// # Fabric
//
// Either form may put its hosts on several switches (fabric.go,
// docs/fabric.md): switches (named, each with switch's keys; file order
// is the switch id), links (each host to one switch, switches to each
// other), routing, a flow's path, an event's at, deadlock-ms. Without
// switches the test has one switch, Test.Switch. Test.Topology resolves
// the switches' ports (global numbers: HostPort for hosts, FirstLinkPort
// and up for switch-to-switch links), Test.Route a host pair's switches
// with their in and out ports (per host pair, symmetric; a flow's path
// overrides the pair's shortest path, else a seeded hash picks among the
// equal-cost ones), Test.ObservedSwitch the one switch where a flow's
// events apply. They are computed from the Test's fields on each call,
// so a hand-built Test gets them too; Parse has checked that every host
// is on a switch, every flow has a route and every path and at is sound.
//
// # Errors
//
// Parsing walks the yaml.Node tree itself, so every problem carries the
// position of the offending node: unknown keys (with a did-you-mean
// suggestion), duplicate keys, values of the wrong type or out of range,
// YAML syntax errors, and semantic errors such as an event's qpn beyond
// num-qps. All problems are collected (up to 50) and returned together as
// an ErrorList, which errors.Is matches against ErrInvalid. Checks that
// depend on a rejected value are skipped rather than reported again: a bad
// mtu does not also make every psn "out of range". An unreadable file is
// not an ErrorList: Load wraps the os error with the path.
//
// With LoadOptions.Personalities (lumina validate and run), the personality
// files that nic.personality names are read and decoded as the run will
// (softrnic.DecodePersonality owns their format, docs/personality.md): a
// missing file is an error at the personality value, a bad one an error
// there and its own problems at FILE:LINE:COL in the personality file,
// after the test file's, with the same did-you-mean suggestions.
//
// # Limits
//
// Load reads at most MaxFileSize (4 MiB) of a regular file and refuses a
// larger one (ErrFileTooLarge); a FIFO, a device or a socket is refused
// before it is read, without blocking. Values that become
// one component of a results path (name, a dumper's name, dump-filename,
// aggregate-pcap-filename) hold no '/', '\' or NUL and are not "." or
// "..". num-repeats is at most MaxRepeats. A dumper's num-pkts is a disk
// budget per worker: a test that certainly exceeds it is refused there.
// With LoadOptions.Resources, a test that needs more memory or disk than
// the machine has (Estimate) is refused too, so that validate refuses what
// a run would fail on.
//
// # Overriding the testbed
//
// lumina run --testbed runs a valid file on another testbed. The rule is
// (*Test).WithTestbed: Testbed is replaced and every dumper's backend
// follows it (all sim on sim; sim becomes afpacket elsewhere), and the
// result is an error where it cannot run (remote without control-ips,
// eal-args without dpdk). LoadWith and ParseWith with LoadOptions.Testbed
// apply the same rule and report its errors at the keys concerned, for
// lumina validate --testbed.
//
// # Events: relative QPN, PSN, ITER and msg
//
// Users do not know the runtime QP numbers and initial PSNs (IPSNs): the
// RNICs choose them when the test starts. An event therefore names its
// packet relatively:
//
//   - qpn is the 0-based index of the QP among the test's QPs;
//   - psn is the 0-based index of the packet within its message, or "all"
//     for every packet of the message; a message is
//     Traffic.PacketsPerMessage() = max(1, ceil(message-size/mtu)) data
//     packets (for READ, the data packets are the read responses, sent by
//     the responder);
//   - msg is the 0-based message index; without it the event applies to
//     every message of the QP, as in the public tool, whose events are
//     per-message templates;
//   - iter is the 1-based transmission round: 1 is the first transmission
//     of the packet, 2 its first retransmission, and so on.
//
// Test.ExpandFlowEvents resolves a flow's msg and psn "all" into one
// ExpandedEvent per packet, with RelPSN = msg*PacketsPerMessage()+psn, the
// offset from the QP's IPSN that the control plane adds (modulo 2^24) once
// the runtime metadata is known; Test.ExpandEvents does so for every flow,
// with the QP made global (QPOffset(f)+qpn). A parsed Test never has two events that match the
// same (qpn, msg, psn, iter): duplicates, conflicts and redundant events
// are errors.
//
// # iter-scope
//
// The injector recognises retransmissions by counting rounds (ITER): a
// packet whose PSN does not move forward from the previous packet's starts
// a new round (the injector documents its exact rule). What a round counts
// is a choice, made by iter-scope:
//
//   - message (default; the public tool's behaviour): ITER restarts at 1
//     when the first packet of the next message arrives in order, so iter
//     counts rounds within one message;
//   - connection (the paper's §3.4): ITER counts rounds over the whole QP
//     and never restarts.
//
// With tx-depth > 1 several messages are in flight, so a retransmission of
// an earlier message cannot be told apart from a round of a later one under
// iter-scope message; only ecn events (which do not cause retransmissions)
// are allowed then. Use iter-scope: connection to inject drops and
// corruptions with tx-depth > 1.
//
// # Pitfalls
//
//   - qpn and psn are 0-based. The paper's Listing 2 counts both from 1
//     ("qpn: 1, psn: 4" is the 4th packet of the 1st QP): written as is, it
//     addresses the 5th packet of the 2nd QP here, and its "qpn: 2" is out
//     of range for 2 QPs. The error says so.
//   - psn is relative to the message, not to the QP: with 10 packets per
//     message, psn 12 is an error, not the 3rd packet of the 2nd message;
//     write psn: 2 with msg: 1.
//   - Without msg an event hits every message: "drop psn 0" with 100
//     messages drops 100 packets. Give msg to hit one message only.
//   - Events match data packets only; packet: ack (or nak, cnp, ...) is
//     rejected, because the injector does not match control packets.
//   - The zero values of Test and its parts are usable (sim testbed, write,
//     message iter scope), but booleans that default to true, such as
//     RoCEParameters.DCQCNRPEnable, are false in a hand-built struct.
//
// Nothing in this package is safe for concurrent mutation; a *Test that is
// no longer modified may be read from many goroutines.
package config
