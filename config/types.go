package config

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// Verb is the RDMA verb that the traffic generator uses (YAML key
// traffic.rdma-verb): lumina's one verb type, generator.Verb, spelled in
// YAML as it is in Go. Parse sets VerbWrite when the key is absent.
type Verb = generator.Verb

// Verbs.
const (
	VerbWrite    = generator.VerbWrite    // "write": RDMA WRITE; the requester sends the data packets.
	VerbRead     = generator.VerbRead     // "read": RDMA READ; the responder sends the data (response) packets.
	VerbSend     = generator.VerbSend     // "send": SEND/RECV; the requester sends the data packets.
	VerbSendRead = generator.VerbSendRead // "send_read": num-qps "a,b": a SEND QPs, then b READ QPs.
)

var verbNames = []string{string(VerbWrite), string(VerbRead), string(VerbSend), string(VerbSendRead)}

// EventType is what the injector does to a matched data packet (YAML key
// type of a data-pkt-events entry): lumina's one event type, roce.Event,
// whose number mirror copies carry in their TTL, spelled in YAML as its
// String. In an Event the zero value (roce.EventNone) is invalid.
type EventType = roce.Event

// Event types: the data-pkt-events types of roce.Event.
const (
	EventDrop    = roce.EventDrop    // "drop": the packet is not forwarded (it is still mirrored).
	EventECN     = roce.EventECN     // "ecn": the IP ECN field is set to CE.
	EventCorrupt = roce.EventCorrupt // "corrupt" (alias "bit-error"): a bit flip that breaks the ICRC.
	// "delay": the switch holds the packet Event.DelayUs, then forwards it.
	EventDelay = roce.EventDelay
	// "reorder": the switch holds the packet until Event.Overtakers later
	// packets of its flow have passed, or for at most Event.MaxHoldUs.
	EventReorder = roce.EventReorder
	// "duplicate": the switch forwards the packet, then Event.Copies
	// identical copies.
	EventDuplicate = roce.EventDuplicate
)

// Testbed selects where a test runs (YAML key testbed). The zero value is
// TestbedSim, which never touches the host or real hardware.
type Testbed int

// Testbeds.
const (
	TestbedSim    Testbed = iota // "sim": everything in one process, on virtual time.
	TestbedNetns                 // "netns": local network namespaces and veth pairs.
	TestbedRemote                // "remote": real hosts, switch and RNICs reached by control-ip.
)

var testbedNames = []string{"sim", "netns", "remote"}

// String returns the YAML spelling, e.g. "netns".
func (t Testbed) String() string {
	if t >= 0 && int(t) < len(testbedNames) {
		return testbedNames[t]
	}
	return fmt.Sprintf("Testbed(%d)", int(t))
}

// IterScope says what an event's iter counts (YAML key iter-scope). The
// zero value is IterScopeMessage, the default.
type IterScope int

// Iter scopes.
const (
	// IterScopeMessage is the public tool's semantics: ITER counts
	// transmission rounds within one message and resets to 1 when the first
	// packet of the next message arrives in order.
	IterScopeMessage IterScope = iota
	// IterScopeConnection is the paper's §3.4 semantics: ITER counts
	// transmission rounds over the whole connection (QP); it grows by one
	// each time a packet's PSN is not larger than the previous packet's.
	IterScopeConnection
)

var iterScopeNames = []string{"message", "connection"}

// String returns the YAML spelling, e.g. "connection".
func (s IterScope) String() string {
	if s >= 0 && int(s) < len(iterScopeNames) {
		return iterScopeNames[s]
	}
	return fmt.Sprintf("IterScope(%d)", int(s))
}

// DumperBackend is how a dumper captures mirrored packets (YAML key backend
// of a dumpers entry). The zero value is BackendSim.
type DumperBackend int

// Dumper backends.
const (
	BackendSim      DumperBackend = iota // "sim": in-process ports of the sim testbed.
	BackendAFPacket                      // "afpacket": Linux AF_PACKET TPACKET_V3 with fanout.
	BackendDPDK                          // "dpdk": DPDK poll-mode driver (build tag dpdk).
)

var backendNames = []string{"sim", "afpacket", "dpdk"}

// String returns the YAML spelling, e.g. "afpacket".
func (b DumperBackend) String() string {
	if b >= 0 && int(b) < len(backendNames) {
		return backendNames[b]
	}
	return fmt.Sprintf("DumperBackend(%d)", int(b))
}

// Test is one resolved test file: every default filled in, the paper's and
// the public tool's spellings mapped to ours, and requester-mirror and
// responder-mirror turned into Dumpers.
//
// A Test built by hand is usable at its zero value where that makes sense
// (sim testbed, write verb, message iter scope); Parse always returns fully
// resolved values, and the field comments give the defaults it fills in.
type Test struct {
	// File is the file name given to Parse or Load. It is not a YAML key;
	// Event.Pos positions refer to this file.
	File string
	// Name is the test name. YAML key name; default: the file's base name
	// without its extension ("test" if that is empty).
	Name string
	// Seed seeds every random choice of the test (initial PSNs, QPNs,
	// mirror UDP source ports, ...). YAML key seed; default 1.
	Seed uint64
	// Testbed is where the test runs. YAML key testbed; default remote if
	// a traffic host (the requester, the responder, or any of hosts) or
	// the switch has a control-ip, else sim.
	Testbed Testbed
	// IterScope is what an event's iter counts. YAML key iter-scope;
	// default message.
	IterScope IterScope
	// ResultPath is the directory that results are written under. YAML key
	// result-path; default "results".
	ResultPath string
	// LocalWorkspace is the public tool's local source tree. YAML key
	// local-workspace; default empty. Accepted for compatibility; unused by
	// lumina itself.
	LocalWorkspace string
	// AggregatePcapFilename is the file name of the merged trace of every
	// repeat. YAML key aggregate-pcap-filename; default "trace.pcap".
	AggregatePcapFilename string
	// NumRepeats is how many times the test runs. YAML key num-repeats;
	// default 1.
	NumRepeats int
	// KeepDumperFiles keeps each dumper's pcap in a repeat's dumpers/
	// folder after the merge. With false they are removed once the merged
	// trace passed the integrity check, so a long test does not take twice
	// its trace on disk (an invalid run keeps them, to be looked at). YAML
	// key keep-dumper-files; default true.
	KeepDumperFiles bool
	// NetnsSlowdown makes the software RNICs and switch of the netns
	// testbed run their clocks this many times slower than the wall clock
	// (sim.NewRealLoopSlow): a model of a 100 Gb/s link then offers frames
	// 1/NetnsSlowdown as fast as it models, within what veth and AF_PACKET
	// carry, and wall-clock lateness shrinks as much on the models' clock;
	// timeouts and watchdogs take as many times longer in wall time.
	// Ignored on sim (virtual clock); above 1 refused on remote (hardware
	// runs in real time). YAML key netns-slowdown; default 1.
	NetnsSlowdown int
	// RewriteUDPDstPort is the UDP destination port written into mirrored
	// copies, so that dumpers can tell them from live RoCEv2 traffic (4791).
	// YAML key rewrite-udp-dst-port; default 9741.
	RewriteUDPDstPort int
	// Switch is the programmable switch (the event injector). YAML key switch.
	Switch Switch
	// Requester is the host that posts the work requests. YAML key
	// requester. Zero in the hosts form.
	Requester Host
	// Responder is the other traffic host. YAML key responder. Zero in
	// the hosts form.
	Responder Host
	// Dumpers is the dumper pool that mirrored packets are spread over by
	// weighted round robin. YAML key dumpers, or the public tool's
	// requester-mirror and responder-mirror; default: two dumpers named
	// dumper-0 and dumper-1 with default settings.
	Dumpers []Dumper
	// Traffic is the workload and the injected events. YAML key traffic.
	// Zero in the hosts form.
	Traffic Traffic

	// Hosts are the traffic hosts, in file order. YAML key hosts (2..64
	// named hosts, each taking every key requester and responder take).
	// Parse fills it for the two-host form too: the requester (named
	// "requester") then the responder ("responder"). Code past the parser
	// reads Hosts and Flows, not Requester, Responder and Traffic.
	Hosts []NamedHost
	// Flows are the workloads between hosts, in file order. YAML key flows
	// (1..256). The two-host form is one flow named "traffic" from
	// "requester" to "responder" whose Traffic is the test's traffic.
	Flows []Flow
	// PFCEvents are the pause and rx-stall events of the hosts form (YAML
	// key pfc-events at the top level; to/host name a host). Parse fills it
	// for the two-host form too, from traffic.pfc-events, so code past the
	// parser reads this one.
	PFCEvents []PFCEvent
	// HostsForm says the file used the hosts/flows keys (not requester,
	// responder and traffic); a Test built by hand in that form must set
	// it (Normalize). Reports name flows only in this form.
	HostsForm bool

	// Switches are the switches of the fabric form, in file order (a
	// switch's id is its index). YAML key switches (1..MaxSwitches named
	// switches, each taking every key switch takes); default absent: one
	// switch, Switch. With switches, Parse sets Switch to the first
	// switch's configuration; SwitchConfig(i) gives switch i's.
	Switches []NamedSwitch
	// Links cable each host to its switch and switches to each other. YAML
	// key links; default none (required with switches).
	Links []Link
	// Routing is how routes are chosen: only RoutingShortest (see Route).
	// YAML key routing; default "shortest" with switches, else empty (""
	// is shortest too).
	Routing string
	// DeadlockMs is how long the switches keep running after the last
	// flow ended, for the pfc analysis's deadlock check. YAML key
	// deadlock-ms, 1..MaxDeadlockMs; default 0: no deadlock check.
	DeadlockMs int
}

// Names of the two-host form's hosts and flow in Hosts and Flows.
const (
	RequesterName = "requester"
	ResponderName = "responder"
	TrafficName   = "traffic"
)

// Normalize (re)builds Hosts, Flows and PFCEvents from Requester,
// Responder and Traffic for a Test not in the hosts form (HostsForm false:
// parsed from the two-host form, or built or changed by hand), so that
// code past the parser reads one form. A hosts-form Test (HostsForm true)
// is left alone. Call it again after changing a two-host Test's fields.
//
// The PFC events are copies of traffic.pfc-events whose Start.Flow names
// the one flow ("traffic"), as in the hosts form every start names its
// flow.
func (t *Test) Normalize() {
	if t.HostsForm {
		return
	}
	t.Hosts = []NamedHost{{Name: RequesterName, Host: t.Requester}, {Name: ResponderName, Host: t.Responder}}
	t.Flows = []Flow{{Name: TrafficName, From: RequesterName, To: ResponderName, Traffic: t.Traffic}}
	t.Flows[0].PFCEvents = nil // a flow's are the test's PFCEvents
	t.PFCEvents = nil
	for _, ev := range t.Traffic.PFCEvents {
		if ev.Start != nil {
			ref := *ev.Start
			ref.Flow = TrafficName
			ev.Start = &ref
		}
		t.PFCEvents = append(t.PFCEvents, ev)
	}
}

// MaxHosts and MaxFlows bound hosts (2..MaxHosts) and flows
// (1..MaxFlows) in the hosts form.
const (
	MaxHosts = 64
	MaxFlows = 256
)

// MaxTotalQPs is the most QPs of all flows together: the switch tracks
// this many connections (controlplane.MaxConnEntries, the size of its
// per-connection registers; controlplane imports config, so the number is
// repeated here).
const MaxTotalQPs = 16384

// MaxNameLen is the longest host or flow name, in bytes.
const MaxNameLen = 64

// NamedHost is one entry of hosts: a traffic host and its name.
type NamedHost struct {
	// Name is the host's key in hosts ("requester" or "responder" in the
	// two-host form).
	Name string
	Host
	// Pos is where the entry starts in Test.File.
	Pos Pos
}

// Flow is one entry of flows: a workload from one host to another. Its
// Traffic takes every key traffic takes; its Events (data-pkt-events)
// address the flow's own QPs, relative QPN/PSN/ITER as in the two-host
// form. Traffic.PFCEvents is nil in a flow (pfc-events is top level:
// Test.PFCEvents).
type Flow struct {
	// Name is the flow's name. YAML key name; required in flows ("traffic"
	// in the two-host form).
	Name string
	// From is the requester host's name, To the responder host's. YAML
	// keys from and to; required, different.
	From, To string
	// StartUs delays the flow's first post after traffic starts. YAML key
	// start-us; default 0.
	StartUs int
	// Path is the flow's route as switch names, from the from-host's
	// switch to the to-host's: it sets the route of the flow's host pair,
	// both ways (Test.Route). YAML key path; default empty (routing).
	// Fabric form only.
	Path []string
	Traffic
	// Pos is where the entry starts in Test.File.
	Pos Pos
}

// Host returns the host named name, or nil.
func (t *Test) Host(name string) *NamedHost {
	for i := range t.Hosts {
		if t.Hosts[i].Name == name {
			return &t.Hosts[i]
		}
	}
	return nil
}

// HostIndex returns the index in Hosts of the host named name, or -1.
func (t *Test) HostIndex(name string) int {
	for i := range t.Hosts {
		if t.Hosts[i].Name == name {
			return i
		}
	}
	return -1
}

// FlowIndex returns the index in Flows of the flow named name, or -1.
// In a two-host Test the empty name is its one flow (a hand-built
// PacketRef without Flow).
func (t *Test) FlowIndex(name string) int {
	if name == "" && !t.HostsForm && len(t.Flows) == 1 {
		return 0
	}
	for i := range t.Flows {
		if t.Flows[i].Name == name {
			return i
		}
	}
	return -1
}

// TotalQPs returns the number of QPs (connections) of all flows.
func (t *Test) TotalQPs() int { return t.QPOffset(len(t.flows())) }

// flows returns Flows, or for a two-host Test that was never normalized
// (built by hand without Normalize) its one flow from Traffic.
func (t *Test) flows() []Flow {
	if len(t.Flows) == 0 && !t.HostsForm {
		return []Flow{{Name: TrafficName, From: RequesterName, To: ResponderName, Traffic: t.Traffic}}
	}
	return t.Flows
}

// QPOffset returns the global index of flow f's first connection: the
// connections of every flow are numbered in flow order, so the two-host
// form's connection i is global i.
func (t *Test) QPOffset(f int) int {
	flows := t.flows()
	n := 0
	for i := range min(f, len(flows)) {
		n += max(flows[i].NumQPs, 0)
	}
	return n
}

// ECN is RED/ECN marking on the switch's egress queue depth (YAML key
// switch.ecn; absent: off): DCQCN's switch side. A packet of an
// ECN-capable transport on one of Priorities joining an egress queue
// holding d bytes is marked CE with probability 0 for d ≤ KminKB KiB,
// Pmax × (d − Kmin)/(Kmax − Kmin) between, and 1 above KmaxKB. The
// switch runs it as lumina.p4's Egress.ecn_red entries
// (controlplane.ECNRed: cells, a power-of-two slope; docs/tofino.md).
type ECN struct {
	// Priorities are the marked priorities (0..7). YAML key priorities;
	// required.
	Priorities []int
	// KminKB and KmaxKB are the thresholds in KiB. YAML keys kmin-kb and
	// kmax-kb; required, 0 ≤ kmin-kb < kmax-kb.
	KminKB, KmaxKB int
	// Pmax is the marking probability at Kmax. YAML key pmax; required,
	// 0 < pmax ≤ 1.
	Pmax float64
	// Pos is where the section starts in Test.File.
	Pos Pos
}

// Switch is the programmable switch that forwards, injects events and
// mirrors. Except for ListenPort, its keys matter only on the remote testbed.
type Switch struct {
	// SDEPath is the Barefoot SDE directory on the switch. YAML key
	// sde-path; default empty. Hardware only.
	SDEPath string
	// Workspace is the working directory on the switch. YAML key workspace;
	// default empty. Hardware only.
	Workspace string
	// ControlIP is the switch's management address or host name. YAML key
	// control-ip; default empty (which, with the hosts', selects testbed sim).
	ControlIP string
	// Username is the login name on the switch. YAML key username; default
	// empty. Hardware only.
	Username string
	// SSHKeyFilepath is the public tool's SSH key path. YAML key
	// ssh-key-filepath; default empty. Accepted for compatibility.
	SSHKeyFilepath string
	// PortSpeed is the speed of the test ports: NONE, 1G, 10G, 25G, 40G,
	// 50G, 100G, 200G or 400G. YAML key port-speed (case-insensitive,
	// stored upper-case); default empty (the target's default). Hardware only.
	PortSpeed string
	// FECType is the forward error correction of the test ports: NONE, FC
	// or RS. YAML key fec-type (case-insensitive, stored upper-case);
	// default empty (the target's default). Hardware only.
	FECType string
	// ListenPort is the TCP port on which the control plane receives the
	// traffic generator's runtime metadata. YAML key listen-port; default 9000.
	ListenPort int
	// LocalSwitchConfigPath is where the public tool wrote the generated
	// controller config. YAML key local-switch-config-path; default empty.
	// Accepted for compatibility.
	LocalSwitchConfigPath string
	// TimestampUncertaintyNs is how much later than a packet's arrival the
	// switch's mirror timestamp may be, in ns, for a switch that cannot
	// measure it itself (a Tofino: a few ns plus the NIC/PHY path). YAML key
	// timestamp-uncertainty-ns; default 0. lumina's software switch
	// measures its own and the larger of the two is used.
	TimestampUncertaintyNs int
	// TimestampToleranceNs is how far a mirror copy's timestamp may be
	// before the previous copy's (in switch sequence order) without
	// failing the integrity check: a real switch's pipes stamp with clocks
	// a few ns apart (the public Lumina allows 50 ns across directions).
	// YAML key timestamp-tolerance-ns; default 0 (timestamps must not step
	// back).
	TimestampToleranceNs int
	// PFCWatchdog is the software switch's PFC watchdog. YAML key
	// pfc-watchdog; default absent (none). On the remote testbed the
	// watchdog is the switch's own.
	PFCWatchdog *PFCWatchdog
	// ECN turns on RED/ECN marking by egress queue depth. YAML key ecn;
	// default nil (off).
	ECN *ECN
}

// Host is the requester or the responder: a traffic host with an RNIC.
type Host struct {
	// Workspace is the working directory on the host. YAML key workspace;
	// default empty. Hardware only.
	Workspace string
	// ControlIP is the host's management address or host name. YAML key
	// control-ip; default empty.
	ControlIP string
	// Username is the login name on the host. YAML key username; default
	// empty. Hardware only.
	Username string
	// SSHKeyFilepath is the public tool's SSH key path. YAML key
	// ssh-key-filepath; default empty. Accepted for compatibility.
	SSHKeyFilepath string
	// NIC is the RNIC under test. YAML key nic.
	NIC NIC
	// RoCE is the RNIC's congestion-control and loss-recovery settings.
	// YAML key roce-parameters.
	RoCE RoCEParameters
}

// NIC describes an RNIC (on a traffic host) or a capture NIC (on a dumper).
// Keys marked "traffic hosts only" or "dumpers only" are unknown keys
// elsewhere.
type NIC struct {
	// Type is the NIC model: cx4, cx5, cx6 or e810, and also xl710 on
	// dumpers. YAML key type (case-insensitive: the paper writes cx4, the
	// public tool CX4; stored lower-case); default empty (no hardware NIC).
	Type string
	// Personality is the software RNIC's behaviour profile: spec, cx4, cx5,
	// cx6, or the path of a YAML file (ending in .yaml or .yml; relative to
	// the test file's directory). YAML key personality; default: Type when
	// it is cx4, cx5 or cx6, else spec. Traffic hosts only.
	Personality string
	// IfName is the kernel interface name. YAML key if-name; default empty.
	IfName string
	// PCIAddr is the PCI address, e.g. 0000:3b:00.0. YAML key pci-addr;
	// default empty. Hardware only.
	PCIAddr string
	// IBDevice is the verbs device name, e.g. mlx5_0. YAML key ib-device;
	// default empty. Traffic hosts only; hardware only.
	IBDevice string
	// IBPort is the verbs port number. YAML key ib-port; default 1.
	// Traffic hosts only.
	IBPort int
	// SwitchPort is the switch (Tofino dev) port the NIC is cabled to. YAML
	// key switch-port; default 0. Hardware only.
	SwitchPort int
	// RTEPortID is the DPDK port id of the capture NIC. YAML key
	// rte-port-id; default 0. Dumpers only; backend dpdk only.
	RTEPortID int
	// IPList is the NIC's IPv4 addresses, each a CIDR prefix or a plain
	// address (stored as /32). YAML key ip-list; default empty. The first
	// responder address is the one the requester connects to; multi-gid
	// uses all of them. Traffic hosts only.
	IPList []netip.Prefix
	// PrioDSCPMap maps a priority (0..7) to the DSCP values (0..63) that
	// map to it. YAML key prio-dscp-map, written {prio: "d,d,..."}; default
	// empty (priority p gets DSCP 8p..8p+7); a DSCP it does not name keeps
	// that default priority. Traffic hosts only. Used on every testbed: the
	// software NIC and switch (sim, netns) and the pfc analyzer take
	// priorities from it, and on a ConnectX host nic.Configure sets it
	// with mlnx_qos (docs/config.md, docs/hardware.md §3).
	PrioDSCPMap map[int][]int
	// PFC turns priority flow control on for the NIC's lossless
	// priorities. YAML key pfc; default absent (off). Traffic hosts only.
	PFC *PFC
	// ODP is the NIC's On-Demand Paging. YAML key odp; default absent
	// (nil: pinned memory). Traffic hosts only.
	ODP *ODP
}

// DSCPToPriority returns the priority of each DSCP: the one PrioDSCPMap
// gives it, else the default d/8, as nic.DSCP2Prio (what mlnx_qos
// --dscp2prio sets on hardware) and the pfc analyzer
// (model.Params.PriorityOfDSCP) read the map.
func (n *NIC) DSCPToPriority() [64]uint8 {
	var m [64]uint8
	for d := range m {
		m[d] = uint8(d / 8)
	}
	for p, ds := range n.PrioDSCPMap {
		for _, d := range ds {
			if d >= 0 && d < 64 {
				m[d] = uint8(p)
			}
		}
	}
	return m
}

// RoCEParameters are the RNIC's congestion-control and loss-recovery
// knobs. The first five are Mellanox (cx4/cx5/cx6) knobs, DCQCNEnable is
// Intel's (e810). The software RNIC honours all of them.
type RoCEParameters struct {
	// DCQCNRPEnable enables the DCQCN reaction point (rate limiting on
	// CNPs). YAML key dcqcn-rp-enable; default true.
	DCQCNRPEnable bool
	// DCQCNNPEnable enables the DCQCN notification point (CNPs on CE
	// marks). YAML key dcqcn-np-enable; default true.
	DCQCNNPEnable bool
	// MinTimeBetweenCNPs is the minimum gap between two CNPs of one QP, in
	// microseconds. YAML key min-time-between-cnps; default 4.
	MinTimeBetweenCNPs int
	// AdaptiveRetrans enables adaptive retransmission timeouts. YAML key
	// adaptive-retrans; default false.
	AdaptiveRetrans bool
	// SlowRestart enables slow restart after a retransmission timeout. YAML
	// key slow-restart; default false.
	SlowRestart bool
	// DCQCNEnable enables DCQCN on Intel NICs. YAML key dcqcn-enable;
	// default true.
	DCQCNEnable bool
}

// Dumper is one host of the dumper pool.
type Dumper struct {
	// Name identifies the dumper in logs and results. YAML key name;
	// default dumper-<i> with i the 0-based index in dumpers. Mirrors are
	// named requester-mirror and responder-mirror.
	Name string
	// Weight is the dumper's share in the injector's weighted round robin,
	// 1..255. YAML key weight; default 1.
	Weight int
	// Workers is how many capture workers (cores, queues, fanout members)
	// the dumper runs. YAML key workers; default 1.
	Workers int
	// Backend is the capture method. YAML key backend; default sim on
	// testbed sim, else afpacket.
	Backend DumperBackend
	// SnapLen is how many bytes of each packet are kept, 64..9216. YAML key
	// snap-len (pkt-dump-conf.snap-len on mirrors); default 128.
	SnapLen int
	// NumPkts is the most packets each worker of the dumper writes (a disk
	// budget; memory does not depend on it). YAML key num-pkts
	// (pkt-dump-conf.num-pkts on mirrors); default 0: no limit but the
	// disk. Validation refuses a test whose packets certainly exceed it.
	NumPkts int
	// DumpFilename is the name of the dumper's pcap in a repeat's results.
	// YAML key dump-filename (pkt-dump-conf.dump-filename on mirrors);
	// default Name + ".pcap".
	DumpFilename string
	// ControlIP is the dumper host's management address. YAML key
	// control-ip; default empty. Hardware only.
	ControlIP string
	// Username is the login name on the dumper host. YAML key username;
	// default empty. Hardware only.
	Username string
	// SSHKeyFilepath is the public tool's SSH key path. YAML key
	// ssh-key-filepath; default empty. Accepted for compatibility.
	SSHKeyFilepath string
	// Workspace is the working directory on the dumper host. YAML key
	// workspace; default empty. Hardware only.
	Workspace string
	// NIC is the capture NIC (keys if-name, pci-addr, switch-port,
	// rte-port-id, type). YAML key nic.
	NIC NIC
	// EALArgs are extra DPDK EAL arguments. YAML key eal-args; default
	// empty. Backend dpdk only.
	EALArgs []string
}

// Traffic is the workload and the events injected into it.
type Traffic struct {
	// NumQPs is the number of QPs (connections). YAML key num-qps, or the
	// paper's num-connections; 1..16384; default 1. With rdma-verb
	// send_read it is written "a,b" and NumQPs is a+b.
	NumQPs int
	// NumReadQPs is, for VerbSendRead only, the b of num-qps "a,b": QPs
	// 0..a-1 use SEND and QPs a..a+b-1 use READ. Zero for other verbs.
	NumReadQPs int
	// Verb is the RDMA verb. YAML key rdma-verb; default write.
	Verb Verb
	// NumMsgsPerQP is how many messages each QP sends. YAML key
	// num-msgs-per-qp; default 1.
	NumMsgsPerQP int
	// MTU is the RoCE path MTU in bytes: 256, 512, 1024, 2048 or 4096. YAML
	// key mtu; default 1024.
	MTU int
	// MessageSize is the size of every message in bytes. YAML key
	// message-size; default 4096.
	MessageSize int
	// ListenPort is the TCP port on which the responder's traffic generator
	// listens for the requester. YAML key listen-port; default 12345.
	ListenPort int
	// MultiGID spreads QPs over every address of the ip-lists. YAML key
	// multi-gid; default false.
	MultiGID bool
	// BarrierSync makes the requester post the next round of requests only
	// after every QP completed the current one. YAML key barrier-sync;
	// default false.
	BarrierSync bool
	// TxDepth is the maximum number of outstanding requests per QP. YAML
	// key tx-depth; default 1.
	TxDepth int
	// MinRetransmitTimeout is the QP's local ACK timeout exponent t (the
	// timeout is 4.096 µs × 2^t), 0..31. YAML key min-retransmit-timeout;
	// default 14.
	MinRetransmitTimeout int
	// MaxRetransmitRetry is the QP's retry count, 0..7. YAML key
	// max-retransmit-retry; default 7.
	MaxRetransmitRetry int
	// MinRNRTimer is the QP's min_rnr_timer, the RNR NAK timer its
	// responder advertises, in the IBA encoding 0..31 (IBA Vol. 1
	// Table 45: 14 is 1.28 ms, 0 is 655.36 ms; roce.RNRTimer), as
	// ibv_modify_qp takes it. YAML key min-rnr-timer; default 12
	// (0.64 ms, the software RNIC's and lumina's verbs default).
	MinRNRTimer int
	// RNRRetry is the QP's rnr_retry, how many RNR NAKs in a row the
	// requester takes before it fails the WR, 0..7 (7: infinite). YAML
	// key rnr-retry; default 7.
	RNRRetry int
	// PostIntervalUs is the time between posting successive messages of
	// a QP, in µs, 0..MaxPostIntervalUs: message k is posted k ×
	// PostIntervalUs after the flow's start, or later when tx-depth
	// messages are still outstanding (with barrier-sync, when the round
	// before is not complete). YAML key post-interval-us; default 0:
	// back to back (each message as soon as tx-depth allows).
	PostIntervalUs int
	// DSCPList gives each QP's DSCP (0..63), one entry per QP. YAML key
	// dscp-list; default empty (the generator's default traffic class).
	DSCPList []int
	// Events are the injected events, in file order. YAML key
	// data-pkt-events; default none.
	Events []Event
	// PFCEvents are pause injections and NIC receive stalls. YAML key
	// pfc-events; default none.
	PFCEvents []PFCEvent
}

// AllPackets as Event.PSN means every packet of the message (YAML psn: all).
const AllPackets = -1

// AllMessages as Event.Msg means every message of the QP (msg omitted).
const AllMessages = -1

// Event is one injection intent on data packets: do Type to packet PSN of
// message Msg of QP QPN in its Iter-th transmission round.
type Event struct {
	// QPN is the 0-based QP index (not the runtime QP number). YAML key
	// qpn; required. The paper's Listing 2 counts from 1; the public tool
	// and lumina count from 0.
	QPN int
	// PSN is the 0-based index of the packet within its message, or
	// AllPackets. YAML key psn (an integer or "all"); required.
	PSN int
	// Type is what is done to the packet. YAML key type; required.
	Type EventType
	// Iter is the 1-based transmission round (1 is the first
	// transmission, 2 the first retransmission, ...), counted per message
	// or per connection according to Test.IterScope. YAML key iter;
	// default 1.
	Iter int
	// Msg is the 0-based message index, or AllMessages. YAML key msg;
	// default AllMessages (the public tool applies every event to every
	// message).
	Msg int
	// Direction is which packets of the QP the event matches: DirData
	// (the data packets: requests of WRITE/SEND, READ responses),
	// DirResponse (the responder's ACK/NAK packets of a WRITE/SEND QP) or
	// DirRequest (the READ requests of a READ QP), PSN counted as for data
	// packets. YAML key direction; default data.
	Direction Direction
	// DelayUs is how long a delay event holds the packet, in µs
	// (1..4294967). YAML key delay-us; required with type delay.
	DelayUs int
	// Overtakers is how many later packets of the flow pass a reordered
	// packet (1..255). YAML key overtakers; required with type reorder.
	Overtakers int
	// MaxHoldUs bounds a reorder hold in µs: the packet leaves when it
	// expires (1..4294967). YAML key max-hold-us; default 1000 with type
	// reorder.
	MaxHoldUs int
	// Copies is how many identical copies follow a duplicated packet
	// (1..255). YAML key copies; required with type duplicate.
	Copies int
	// At is the switch that applies the event, on the flow's route. YAML
	// key at; default empty: the flow's observed switch
	// (Test.ObservedSwitch). All events of a flow are at one switch.
	// Fabric form only.
	At string
	// Pos is where the event's mapping starts in Test.File. It is not part
	// of the event's meaning: a Marshal/Parse round trip changes it.
	Pos Pos
}

// Direction selects the data packets or the responder's answers.
type Direction int

// Directions.
const (
	DirData     Direction = 0 // "data"
	DirResponse Direction = 1 // "response"
	DirRequest  Direction = 2 // "request"
)

// String returns the YAML spelling.
func (d Direction) String() string {
	switch d {
	case DirResponse:
		return "response"
	case DirRequest:
		return "request"
	}
	return "data"
}

// DefaultMaxHoldUs is a reorder event's hold bound when max-hold-us is not
// given.
const DefaultMaxHoldUs = 1000

// EventParams are an event's parameters in switch units.
type EventParams struct {
	Direction  Direction
	DelayNs    int64 // delay
	Overtakers int   // reorder
	MaxHoldNs  int64 // reorder
	Copies     int   // duplicate
}

// Params returns the event's parameters in switch units (a reorder
// event's MaxHoldUs 0 counts as DefaultMaxHoldUs).
func (e *Event) Params() EventParams {
	p := EventParams{Direction: e.Direction}
	switch e.Type {
	case EventDelay:
		p.DelayNs = int64(e.DelayUs) * 1000
	case EventReorder:
		p.Overtakers = e.Overtakers
		hold := e.MaxHoldUs
		if hold == 0 {
			hold = DefaultMaxHoldUs
		}
		p.MaxHoldNs = int64(hold) * 1000
	case EventDuplicate:
		p.Copies = e.Copies
	}
	return p
}

// ExpandedEvent is one (event, message, packet) after ExpandEvents
// resolved AllMessages and AllPackets.
type ExpandedEvent struct {
	// QP is the 0-based QP index: the global connection index
	// (Test.QPOffset(f)+qpn) from ExpandEvents, the flow's own qpn from
	// ExpandFlowEvents.
	QP int
	// Msg is the 0-based message index.
	Msg int
	// PSN is the 0-based packet index within the message.
	PSN int
	// RelPSN is the packet index relative to the QP's initial PSN:
	// Msg*PacketsPerMessage()+PSN. Add it to the IPSN modulo 2^24.
	RelPSN int
	// Iter is the 1-based transmission round.
	Iter int
	// Type is what is done to the packet.
	Type EventType
	// EventParams are the event's direction and parameters.
	EventParams
}

// mtuOrDefault returns MTU, or 1024 for the zero value.
func (tr *Traffic) mtuOrDefault() int {
	if tr.MTU <= 0 {
		return defaultMTU
	}
	return tr.MTU
}

// PacketsPerMessage returns how many data packets one message takes:
// max(1, ceil(MessageSize/MTU)). For READ these are the response packets;
// the count is the same. A zero MTU counts as the default, 1024.
func (tr *Traffic) PacketsPerMessage() int {
	mtu := tr.mtuOrDefault()
	if tr.MessageSize <= 0 {
		return 1
	}
	return (tr.MessageSize-1)/mtu + 1
}

// QPVerb returns the verb that QP qp (0-based) uses: Verb itself, except
// for VerbSendRead, where the first NumQPs-NumReadQPs QPs use VerbSend and
// the rest VerbRead.
func (tr *Traffic) QPVerb(qp int) Verb {
	if tr.Verb != VerbSendRead {
		return tr.Verb
	}
	if qp < tr.NumQPs-tr.NumReadQPs {
		return VerbSend
	}
	return VerbRead
}

// ExpandEvents returns the events of every flow (ExpandFlowEvents) with
// QP the global connection index QPOffset(f)+qp, sorted by (QP, Msg, PSN,
// Iter) and by flow and event order after that. For the two-host form
// (one flow at offset 0) that is the flow's own expansion. Parse rejects
// files whose events expand to more than 1<<16 entries in all (the
// switch's event table); a hand-built Test is expanded as is.
func (t *Test) ExpandEvents() []ExpandedEvent {
	var out []ExpandedEvent
	for f := range t.flows() {
		off := t.QPOffset(f)
		for _, e := range t.ExpandFlowEvents(f) {
			e.QP += off
			out = append(out, e)
		}
	}
	sortExpanded(out)
	return out
}

// ExpandFlowEvents returns one entry per (event, message, packet) of flow
// f's data-pkt-events, QP relative to the flow: an event without msg
// applies to every message, and psn all to every packet of the message.
// Entries are sorted by (QP, Msg, PSN, Iter), and by event order after
// that. Iter zero (a hand-built Event) counts as 1.
func (t *Test) ExpandFlowEvents(f int) []ExpandedEvent {
	tr := &t.flows()[f].Traffic
	ppm := tr.PacketsPerMessage()
	nmsgs := max(tr.NumMsgsPerQP, 1)
	var out []ExpandedEvent
	for _, ev := range tr.Events {
		m0, m1 := ev.Msg, ev.Msg+1
		if ev.Msg == AllMessages {
			m0, m1 = 0, nmsgs
		}
		p0, p1 := ev.PSN, ev.PSN+1
		if ev.PSN == AllPackets {
			p0, p1 = 0, ppm
		}
		iter := ev.Iter
		if iter == 0 {
			iter = 1
		}
		for m := m0; m < m1; m++ {
			for p := p0; p < p1; p++ {
				out = append(out, ExpandedEvent{QP: ev.QPN, Msg: m, PSN: p, RelPSN: m*ppm + p, Iter: iter, Type: ev.Type, EventParams: ev.Params()})
			}
		}
	}
	sortExpanded(out)
	return out
}

// sortExpanded sorts by (QP, Msg, PSN, Iter), stably.
func sortExpanded(out []ExpandedEvent) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.QP != b.QP {
			return a.QP < b.QP
		}
		if a.Msg != b.Msg {
			return a.Msg < b.Msg
		}
		if a.PSN != b.PSN {
			return a.PSN < b.PSN
		}
		return a.Iter < b.Iter
	})
}
