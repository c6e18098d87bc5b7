package config

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Two hosts and one flow of the hosts form, for the error table.
const (
	twoHosts = "hosts:\n  h1: {nic: {ip-list: [10.0.0.1/24]}}\n  h2: {nic: {ip-list: [10.0.0.2/24]}}\n"
	oneFlow  = "flows:\n  - {name: a, from: h1, to: h2}\n"
)

// manyLines returns head, then line(i) for i in 0..n-1, then tail.
func manyLines(head string, n int, line func(i int) string, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		b.WriteString(line(i))
	}
	return b.String() + tail
}

// hostsErrorTests maps a hosts-form input to the exact error of Parse.
var hostsErrorTests = []struct {
	name string
	in   string
	want string
}{
	{"unknown host in to", twoHosts + "flows:\n  - {name: a, from: h1, to: hx}\n",
		`t.yaml:5:29: to: no host named "hx" (hosts: h1, h2); did you mean "h1"?`},
	{"unknown host in from", twoHosts + "flows:\n  - {name: a, from: h3, to: h2}\n",
		`t.yaml:5:21: from: no host named "h3" (hosts: h1, h2); did you mean "h1"?`},
	{"flow to itself", twoHosts + "flows:\n  - {name: a, from: h1, to: h1}\n",
		`t.yaml:5:29: to: flow a goes from h1 to itself; want another host`},
	{"duplicate IP", "hosts:\n  h1: {nic: {ip-list: [10.0.0.1/24]}}\n  h2: {nic: {ip-list: [10.0.0.3/24, 10.0.0.1]}}\n" + oneFlow,
		`t.yaml:3:37: ip-list[1]: 10.0.0.1 is also an address of host h1 (at 2:24): every host needs its own addresses`},
	{"duplicate flow name", twoHosts + "flows:\n  - {name: a, from: h1, to: h2}\n  - {name: a, from: h2, to: h1}\n",
		`t.yaml:6:12: duplicate flow name "a" (first at 5:12)`},
	{"duplicate host name", "hosts:\n  h1: {}\n  h1: {}\n  h2: {}\n" + oneFlow,
		`t.yaml:3:3: duplicate key "h1" in hosts (first at 2:3)`},
	{"hosts with requester and traffic", twoHosts + oneFlow + "requester: {}\ntraffic: {}\n",
		"t.yaml:6:1: requester: the hosts form (hosts and flows) replaces requester, responder and traffic: give hosts and flows, or requester, responder and traffic\n" +
			"t.yaml:7:1: traffic: the hosts form (hosts and flows) replaces requester, responder and traffic: give hosts and flows, or requester, responder and traffic"},
	{"hosts with responder", "responder: {}\n" + twoHosts + oneFlow,
		`t.yaml:1:1: responder: the hosts form (hosts and flows) replaces requester, responder and traffic: give hosts and flows, or requester, responder and traffic`},
	{"flows without hosts", oneFlow,
		`t.yaml:1:1: flows needs hosts: the hosts of the flows' from and to (in the two-host form, give traffic instead)`},
	{"hosts without flows", twoHosts,
		`t.yaml:1:1: hosts needs flows: the traffic of the hosts form is a list of flows, each {name, from, to, ...} with the keys of traffic`},
	{"null hosts", "hosts:\n" + oneFlow, `t.yaml:1:1: hosts: want 2..64 hosts, got null`},
	{"null flows", twoHosts + "flows:\n", `t.yaml:4:1: flows: want 1..256 flows, got null`},
	{"no flows", twoHosts + "flows: []\n", `t.yaml:4:8: flows: want 1..256 flows, got 0`},
	{"hosts a list", "hosts: [h1, h2]\n" + oneFlow,
		`t.yaml:1:8: hosts: want a mapping from host name to host (2..64 hosts), got a list`},
	{"pfc-events in a flow", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, pfc-events: []}\n",
		`t.yaml:5:33: pfc-events in a flow: in the hosts form pfc-events is a top-level key (its to and host name a host, its start names the flow)`},
	{"event qpn beyond the flow's num-qps", twoHosts + "flows:\n  - {name: a, from: h1, to: h2}\n  - name: b\n    from: h1\n    to: h2\n    num-qps: 2\n    data-pkt-events:\n      - {qpn: 2, psn: 0, type: drop}\n",
		`t.yaml:11:15: qpn: want 0..1, got 2 (num-qps is 2); qpn is 0-based; the paper's Listing 2 counts from 1`},
	{"flow's bad mtu does not cascade", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, mtu: 1000, data-pkt-events: [{qpn: 0, psn: 7, type: drop}]}\n",
		`t.yaml:5:38: mtu: want 256, 512, 1024, 2048 or 4096, got 1000`},
	{"flow send_read num-qps", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, rdma-verb: send_read, num-qps: 3}\n",
		`t.yaml:5:64: num-qps: rdma-verb send_read wants "a,b" (a SEND QPs, then b READ QPs), got 3`},
	{"flow num-connections and num-qps", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, num-qps: 2, num-connections: 2}\n",
		`t.yaml:5:45: num-connections and num-qps are the same setting (the paper's and the public tool's spelling): give only one`},
	{"flow dscp-list length", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, num-qps: 2, dscp-list: [1]}\n",
		`t.yaml:5:56: dscp-list: want 2 entries (one per QP; num-qps is 2), got 1`},
	{"flow without name", twoHosts + "flows:\n  - {from: h1, to: h2}\n", `t.yaml:5:5: missing key "name" in flows[0]`},
	{"flow name", twoHosts + "flows:\n  - {name: \"a b\", from: h1, to: h2}\n", `t.yaml:5:12: name: want 1..64 letters, digits, '_' or '-', got "a b"`},
	{"host name", "hosts:\n  h.1: {}\n  h2: {}\n" + oneFlow, `t.yaml:2:3: hosts: a host's name: want 1..64 letters, digits, '_' or '-', got "h.1"`},
	{"start-us", "hosts: {h1: {}, h2: {}}\nflows: [{name: a, from: h1, to: h2, start-us: -1}]\n",
		`t.yaml:2:47: start-us: want 0..3600000000, got -1 (start-us: µs after traffic starts)`},
	{"one host", "hosts:\n  h1: {}\n" + oneFlow, `t.yaml:2:3: hosts: want 2..64 hosts, got 1`},
	{"65 hosts", manyLines("hosts:\n", 65, func(i int) string { return fmt.Sprintf("  h%d: {}\n", i) }, "flows:\n  - {name: a, from: h0, to: h1}\n"),
		`t.yaml:2:3: hosts: want 2..64 hosts, got 65`},
	{"257 flows", manyLines("hosts: {h1: {}, h2: {}}\nflows:\n", 257, func(i int) string { return fmt.Sprintf("  - {name: f%d, from: h1, to: h2}\n", i) }, ""),
		`t.yaml:3:3: flows: want 1..256 flows, got 257`},
	{"QPs over the switch's connections", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, num-qps: 10000}\n  - {name: b, from: h2, to: h1, num-qps: 6385}\n",
		`t.yaml:5:3: flows: 16385 QPs in all, more than the 16384 connections the switch tracks; use fewer num-qps`},
	{"events of all flows over the event table", "hosts: {h1: {}, h2: {}}\nflows:\n" +
		"  - {name: a, from: h1, to: h2, num-msgs-per-qp: 40000, data-pkt-events: [{qpn: 0, psn: 2, type: ecn}]}\n" +
		"  - {name: b, from: h1, to: h2, num-msgs-per-qp: 40000, data-pkt-events: [{qpn: 0, psn: 2, type: ecn}]}\n",
		`t.yaml:3:3: the flows' data-pkt-events expand to more than 65536 (event, message, packet) entries in all, the switch's event table; give msg, or fewer psn: all events`},

	// Top-level pfc-events.
	{"pause to an unknown host", twoHosts + oneFlow + "pfc-events:\n  - {type: pause, to: hx, priority: 3}\n",
		`t.yaml:7:23: to: no host named "hx" (hosts: h1, h2); did you mean "h1"?`},
	{"rx-stall of an unknown host", twoHosts + oneFlow + "pfc-events:\n  - {type: rx-stall, host: h3}\n",
		`t.yaml:7:28: host: no host named "h3" (hosts: h1, h2); did you mean "h1"?`},
	{"pause to a host without pfc", twoHosts + oneFlow + "pfc-events:\n  - {type: pause, to: h2, priority: 3}\n",
		`t.yaml:7:23: to: h2 has no nic.pfc, so its NIC would discard the pauses instead of pausing; add nic.pfc with priority 3 to hosts.h2 (nic: {pfc: {priorities: [3]}})`},
	{"pause without to", twoHosts + oneFlow + "pfc-events:\n  - {type: pause, priority: 3}\n",
		`t.yaml:7:5: type pause needs to: the host the switch pauses (a host of hosts)`},
	{"start without flow", "hosts:\n  h1: {nic: {pfc: {priorities: [3]}}}\n  h2: {}\n" + oneFlow + "pfc-events:\n  - {type: pause, to: h1, priority: 3, start: {qpn: 0, psn: 0}}\n",
		`t.yaml:7:47: missing key "flow" in pfc-events[0].start: in the hosts form the start packet names its flow`},
	{"start of an unknown flow", "hosts:\n  h1: {nic: {pfc: {priorities: [3]}}}\n  h2: {}\n" + oneFlow + "pfc-events:\n  - {type: pause, to: h1, priority: 3, start: {flow: zz, qpn: 0, psn: 0}}\n",
		`t.yaml:7:54: flow: no flow named "zz" (flows: a)`},
	{"start qpn beyond the flow's", "hosts:\n  h1: {nic: {pfc: {priorities: [3]}}}\n  h2: {}\n" + oneFlow + "pfc-events:\n  - {type: pause, to: h1, priority: 3, start: {flow: a, qpn: 1, psn: 0}}\n",
		`t.yaml:7:62: qpn: want 0..0, got 1 (num-qps of flow a is 1)`},
	{"top-level pfc-events in the two-host form", "pfc-events: []\n",
		`t.yaml:1:1: pfc-events at the top level belongs to the hosts form; with requester and responder give traffic.pfc-events`},
	{"two-host start of another flow", "requester: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, start: {flow: b, qpn: 0, psn: 0}}\n",
		`t.yaml:4:63: flow: want traffic (the one flow of the two-host form), got "b"; or omit flow`},

	// switch.ecn.
	{"ecn kmin above kmax", twoHosts + oneFlow + "switch:\n  ecn: {priorities: [3], kmin-kb: 400, kmax-kb: 100, pmax: 0.2}\n",
		`t.yaml:7:49: kmax-kb: want more than kmin-kb (400), got 100`},
	{"ecn kmin equal to kmax", "switch:\n  ecn: {priorities: [3], kmin-kb: 100, kmax-kb: 100, pmax: 1}\n",
		`t.yaml:2:49: kmax-kb: want more than kmin-kb (100), got 100`},
	{"ecn priorities twice, pmax 0", twoHosts + oneFlow + "switch:\n  ecn: {priorities: [3, 3], kmin-kb: 0, kmax-kb: 100, pmax: 0}\n",
		"t.yaml:7:25: priorities[1]: priority 3 listed twice\n" +
			`t.yaml:7:61: pmax: want a probability 0 < pmax <= 1 (the marking probability at kmax-kb), got "0"`},
	{"ecn bounds", twoHosts + oneFlow + "switch:\n  ecn: {priorities: [], kmin-kb: -1, kmax-kb: 2000000, pmax: 1.5}\n",
		"t.yaml:7:21: priorities: want at least one priority 0..7 (omit ecn to turn marking by queue depth off)\n" +
			"t.yaml:7:34: kmin-kb: want 0..1048576, got -1 (kmin-kb: KiB of egress queue up to which nothing is marked)\n" +
			"t.yaml:7:47: kmax-kb: want 1..1048576, got 2000000 (kmax-kb: KiB of egress queue above which every packet is marked)\n" +
			`t.yaml:7:62: pmax: want a probability 0 < pmax <= 1 (the marking probability at kmax-kb), got "1.5"`},
	{"ecn priority 8", "switch:\n  ecn: {priorities: [8], kmin-kb: 0, kmax-kb: 1, pmax: 1}\n",
		`t.yaml:2:22: priorities[0]: want 0..7, got 8 (a priority)`},
	{"ecn pmax NaN", "switch:\n  ecn: {priorities: [1], kmin-kb: 0, kmax-kb: 1, pmax: .nan}\n",
		`t.yaml:2:56: pmax: want a probability 0 < pmax <= 1 (the marking probability at kmax-kb), got ".nan"`},
	{"ecn keys missing", twoHosts + oneFlow + "switch:\n  ecn: {priorities: [3]}\n",
		"t.yaml:7:8: missing key \"kmin-kb\" in switch.ecn\n" +
			"t.yaml:7:8: missing key \"kmax-kb\" in switch.ecn\n" +
			`t.yaml:7:8: missing key "pmax" in switch.ecn`},

	// Per-host checks of the two-host form.
	{"remote without a host's control-ip", "testbed: remote\nswitch: {control-ip: s}\nhosts:\n  h1: {control-ip: a}\n  h2: {}\n" + oneFlow + "dumpers: [{control-ip: d}]\n",
		`t.yaml:1:10: testbed remote: host h2 has no control-ip`},
	{"derived remote without a host's control-ip", "switch: {control-ip: s}\nhosts:\n  h1: {}\n  h2: {control-ip: b}\n" + oneFlow + "dumpers: [{control-ip: d}]\n",
		`t.yaml:4:20: testbed remote: host h1 has no control-ip`},
	{"e810 without personality off remote", "hosts:\n  h1: {nic: {type: e810}}\n  h2: {}\n" + oneFlow,
		`t.yaml:2:20: nic type e810: no software personality for this NIC model: the Lumina paper measured only CX4 Lx, CX5 and CX6 Dx (§6) and there are no published E810 NACK, timeout or retry numbers to build one from, so personality "spec" would only pretend; use type cx4, cx5 or cx6, give nic.personality a .yaml personality file of your own, or run on the remote testbed with a real E810 (testbed sim)`},
	{"unknown key in a host", "hosts:\n  h1: {nic: {ip-lst: []}}\n  h2: {}\n" + oneFlow,
		`t.yaml:2:14: unknown key "ip-lst" in hosts.h1.nic; did you mean "ip-list"?`},
	{"unknown key in a flow", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, num-qp: 2}\n",
		`t.yaml:5:33: unknown key "num-qp" in flows[0]; did you mean "num-qps"?`},
}

func TestParseHostsErrors(t *testing.T) {
	for _, tt := range hostsErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, nil; want error %q", tt.in, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n%s\nwant\n%s", tt.in, err, tt.want)
			}
		})
	}
}

// defaultRoCE is roce-parameters with every default.
var defaultRoCE = RoCEParameters{DCQCNRPEnable: true, DCQCNNPEnable: true, MinTimeBetweenCNPs: 4, DCQCNEnable: true}

// TestParseHostsForm checks every value Parse gives testdata/hosts-incast.yaml.
func TestParseHostsForm(t *testing.T) {
	got, err := Load("testdata/hosts-incast.yaml")
	if err != nil {
		t.Fatalf("Load(hosts-incast.yaml) error = %v", err)
	}
	pfc := func() *PFC { return &PFC{Priorities: []int{3}, PageSize: 4096} }
	nic := func(pers, ip string) NIC {
		return NIC{Personality: pers, IBPort: 1, IPList: []netip.Prefix{netip.MustParsePrefix(ip)}, PFC: pfc()}
	}
	wantHosts := []NamedHost{
		{Name: "h1", Host: Host{NIC: nic("cx5", "10.0.0.1/24"), RoCE: defaultRoCE}, Pos: Pos{5, 3}},
		{Name: "h2", Host: Host{NIC: nic("cx5", "10.0.0.2/24"), RoCE: defaultRoCE}, Pos: Pos{6, 3}},
		{Name: "r", Host: Host{NIC: nic("cx6", "10.0.0.9/24"), RoCE: defaultRoCE}, Pos: Pos{7, 3}},
	}
	if !reflect.DeepEqual(got.Hosts, wantHosts) {
		t.Errorf("Hosts =\n%+v\nwant\n%+v", got.Hosts, wantHosts)
	}
	tr := func(dscp []int) Traffic {
		return Traffic{NumQPs: 2, Verb: VerbWrite, NumMsgsPerQP: 20, MTU: 1024, MessageSize: 1048576, ListenPort: 12345,
			TxDepth: 1, MinRetransmitTimeout: 14, MaxRetransmitRetry: 7, MinRNRTimer: 12, RNRRetry: 7, DSCPList: dscp}
	}
	b := tr([]int{26, 26})
	b.Events = []Event{{QPN: 1, PSN: 3, Type: EventDrop, Iter: 1, Msg: 0, Pos: Pos{22, 9}}}
	wantFlows := []Flow{
		{Name: "a", From: "h1", To: "r", Traffic: tr([]int{26, 26}), Pos: Pos{11, 5}},
		{Name: "b", From: "h2", To: "r", StartUs: 50, Traffic: b, Pos: Pos{12, 5}},
	}
	if !reflect.DeepEqual(got.Flows, wantFlows) {
		t.Errorf("Flows =\n%+v\nwant\n%+v", got.Flows, wantFlows)
	}
	wantPFC := []PFCEvent{
		{Type: PFCPause, To: "h1", Priority: 3, Quanta: 65535, StartUs: 200, DurationUs: 100, IntervalUs: 20, Pos: Pos{24, 5}},
		{Type: PFCPause, To: "h2", Priority: 3, Quanta: 65535, Start: &PacketRef{Flow: "b", QPN: 1, PSN: 2, Iter: 1, Msg: 4}, Pos: Pos{25, 5}},
	}
	if !reflect.DeepEqual(got.PFCEvents, wantPFC) {
		t.Errorf("PFCEvents =\n%+v\nwant\n%+v", got.PFCEvents, wantPFC)
	}
	wantECN := &ECN{Priorities: []int{3}, KminKB: 100, KmaxKB: 400, Pmax: 0.2, Pos: Pos{9, 8}}
	if !reflect.DeepEqual(got.Switch.ECN, wantECN) {
		t.Errorf("Switch.ECN = %+v, want %+v", got.Switch.ECN, wantECN)
	}
	if !got.HostsForm || !reflect.DeepEqual(got.Requester, Host{}) || !reflect.DeepEqual(got.Responder, Host{}) || !reflect.DeepEqual(got.Traffic, Traffic{}) {
		t.Errorf("HostsForm = %v, Requester %+v, Responder %+v, Traffic %+v; want true and zero values", got.HostsForm, got.Requester, got.Responder, got.Traffic)
	}
	if got.Testbed != TestbedSim {
		t.Errorf("Testbed = %v, want sim", got.Testbed)
	}
	for _, tc := range []struct {
		name      string
		host, flw int
	}{{"h1", 0, -1}, {"r", 2, -1}, {"b", -1, 1}, {"zz", -1, -1}} {
		if h := got.HostIndex(tc.name); h != tc.host {
			t.Errorf("HostIndex(%q) = %d, want %d", tc.name, h, tc.host)
		}
		if f := got.FlowIndex(tc.name); f != tc.flw {
			t.Errorf("FlowIndex(%q) = %d, want %d", tc.name, f, tc.flw)
		}
	}
	if n := got.TotalQPs(); n != 4 {
		t.Errorf("TotalQPs() = %d, want 4", n)
	}
}

// TestTwoHostFormNormalized: the two-host form's Hosts, Flows and
// PFCEvents, the start's flow set to the one flow.
func TestTwoHostFormNormalized(t *testing.T) {
	in := "requester: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  num-qps: 2\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, start: {qpn: 1, psn: 0}}\n    - {type: pause, to: requester, priority: 3, start: {flow: traffic, qpn: 0, psn: 0}}\n"
	got, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got.HostsForm || len(got.Hosts) != 2 || got.Hosts[0].Name != RequesterName || got.Hosts[1].Name != ResponderName ||
		len(got.Flows) != 1 || got.Flows[0].Name != TrafficName || got.Flows[0].From != RequesterName || got.Flows[0].To != ResponderName {
		t.Fatalf("Hosts %+v, Flows %+v; want requester, responder and one flow traffic", got.Hosts, got.Flows)
	}
	for i, want := range []PacketRef{{Flow: TrafficName, QPN: 1, Iter: 1}, {Flow: TrafficName, Iter: 1}} {
		if ref := got.PFCEvents[i].Start; ref == nil || *ref != want {
			t.Errorf("PFCEvents[%d].Start = %+v, want %+v", i, ref, want)
		}
	}
	// traffic.pfc-events keep what the file said (Marshal writes them).
	if f0, f1 := got.Traffic.PFCEvents[0].Start.Flow, got.Traffic.PFCEvents[1].Start.Flow; f0 != "" || f1 != TrafficName {
		t.Errorf("Traffic.PFCEvents start flows = %q, %q; want \"\", %q", f0, f1, TrafficName)
	}
	if got.Flows[0].PFCEvents != nil {
		t.Errorf("Flows[0].PFCEvents = %+v, want nil (they are the test's PFCEvents)", got.Flows[0].PFCEvents)
	}
	if f := got.FlowIndex(""); f != 0 {
		t.Errorf("FlowIndex(\"\") = %d, want 0 in the two-host form", f)
	}
	checkRoundTrip(t, got)
}

// TestHostsDefaults: each host gets the defaults requester/responder get.
func TestHostsDefaults(t *testing.T) {
	in := "hosts:\n  a: {nic: {type: CX4}}\n  b: {nic: {type: e810, personality: x.yaml}}\n  c:\nflows: [{name: f, from: a, to: c, rdma-verb: send_read}]\n"
	got, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []NIC{{Type: "cx4", Personality: "cx4", IBPort: 1}, {Type: "e810", Personality: "x.yaml", IBPort: 1}, {Personality: "spec", IBPort: 1}} {
		if h := got.Hosts[i]; !reflect.DeepEqual(h.NIC, want) || h.RoCE != defaultRoCE {
			t.Errorf("Hosts[%d] = %+v, want NIC %+v and default roce-parameters", i, h, want)
		}
	}
	if f := got.Flows[0]; f.NumQPs != 2 || f.NumReadQPs != 1 || f.StartUs != 0 {
		t.Errorf("Flows[0] = %+v, want send_read's default num-qps \"1,1\", start-us 0", f)
	}
	remote, err := Parse("t.yaml", []byte("switch: {control-ip: s}\nhosts:\n  a: {control-ip: x}\n  b: {control-ip: y}\nflows: [{name: f, from: a, to: b}]\ndumpers: [{control-ip: d}]\n"))
	if err != nil || remote.Testbed != TestbedRemote {
		t.Errorf("Parse(hosts with control-ips) = %v, %v; want testbed remote", remote, err)
	}
}

// TestExpandFlowEvents: each flow's events relative to it, and
// ExpandEvents with global QPs (flow b's QP 1 is global 3).
func TestExpandFlowEvents(t *testing.T) {
	in := "hosts: {h1: {}, h2: {}, h3: {}}\nflows:\n" +
		"  - {name: a, from: h1, to: h3, num-qps: 2, message-size: 2048, data-pkt-events: [{qpn: 1, psn: 1, type: drop, msg: 0}]}\n" +
		"  - {name: b, from: h2, to: h3, num-qps: 2, num-msgs-per-qp: 2, data-pkt-events: [{qpn: 1, psn: 2, type: ecn}, {qpn: 0, psn: 0, type: delay, delay-us: 5, msg: 1}]}\n"
	got, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	a := []ExpandedEvent{{QP: 1, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: EventDrop}}
	b := []ExpandedEvent{
		{QP: 0, Msg: 1, PSN: 0, RelPSN: 4, Iter: 1, Type: EventDelay, EventParams: EventParams{DelayNs: 5000}},
		{QP: 1, Msg: 0, PSN: 2, RelPSN: 2, Iter: 1, Type: EventECN},
		{QP: 1, Msg: 1, PSN: 2, RelPSN: 6, Iter: 1, Type: EventECN},
	}
	if g := got.ExpandFlowEvents(0); !reflect.DeepEqual(g, a) {
		t.Errorf("ExpandFlowEvents(0) =\n%+v\nwant\n%+v", g, a)
	}
	if g := got.ExpandFlowEvents(1); !reflect.DeepEqual(g, b) {
		t.Errorf("ExpandFlowEvents(1) =\n%+v\nwant\n%+v", g, b)
	}
	all := []ExpandedEvent{a[0], b[0], b[1], b[2]}
	all[1].QP, all[2].QP, all[3].QP = 2, 3, 3
	if g := got.ExpandEvents(); !reflect.DeepEqual(g, all) {
		t.Errorf("ExpandEvents() =\n%+v\nwant\n%+v", g, all)
	}
	if o := got.QPOffset(1); o != 2 {
		t.Errorf("QPOffset(1) = %d, want 2", o)
	}
}

// TestEstimateFlows: Estimate sums the flows: exact numbers for two
// flows, and the same as the sum of each flow run alone as a two-host test.
func TestEstimateFlows(t *testing.T) {
	const a = "num-qps: 2, num-msgs-per-qp: 3, message-size: 4096"
	const b = "rdma-verb: read, num-msgs-per-qp: 2, message-size: 2048, data-pkt-events: [{qpn: 0, psn: 1, type: drop}]"
	hosts, err := Parse("t.yaml", []byte("hosts: {h1: {}, h2: {}, h3: {}}\nflows:\n  - {name: a, from: h1, to: h2, "+a+"}\n  - {name: b, from: h3, to: h2, "+b+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := hosts.Estimate()
	// a: 2 QPs × 3 messages × 4 packets = 24; b: 1 QP × 2 messages × (2
	// responses + 1 request) = 6, and the drop in every message adds a
	// go-back-N 2 × 2 messages × 2 packets = 8. Packets: 24·2.2 = 52 and
	// 6·2.2 + 8 = 21.
	// The trace at its smallest: the 24 and 2 × 2 data packets of 144 B
	// (the READ requests not counted). Records: the graph data of the 73
	// packets, the 8 packets the drops add, 8 messages.
	want := Estimate{MinPackets: 30, EventPackets: 8, Packets: 73,
		TraceBytes: 73 * (128 + 16), MinTraceBytes: 28 * (128 + 16), GeneratorBytes: 3*2*4096 + 3*1*2048, DumperBytes: 2 * (4 << 20),
		PlotBytes: 73 * PlotPacketMemory, RecordBytes: 73*PlotPacketMemory + 8*PacketMemory + (2*3+1*2)*MessageMemory}
	want.DiskBytes, want.SpoolBytes = 2*want.TraceBytes, want.TraceBytes
	want.MemoryBytes = want.GeneratorBytes + want.DumperBytes + want.RecordBytes + BaseMemory
	if got != want {
		t.Errorf("Estimate() =\n%+v\nwant\n%+v", got, want)
	}
	var sum Estimate
	for _, tr := range []string{a, b} {
		one, err := Parse("t.yaml", []byte("traffic: {"+tr+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		e := one.Estimate()
		sum.MinPackets += e.MinPackets
		sum.Packets += e.Packets
		sum.TraceBytes += e.TraceBytes
		sum.GeneratorBytes += e.GeneratorBytes
	}
	if sum.MinPackets != got.MinPackets || sum.Packets != got.Packets || sum.TraceBytes != got.TraceBytes || sum.GeneratorBytes != got.GeneratorBytes {
		t.Errorf("Estimate() = %+v, want the two-host estimates' sum %+v", got, sum)
	}
}

// TestHostsWarnings: a pause of a priority no flow of the paused host uses.
func TestHostsWarnings(t *testing.T) {
	const hosts = "hosts:\n  h1: {nic: {pfc: {priorities: [3]}}}\n  h2: {nic: {pfc: {priorities: [3]}}}\n  h3: {nic: {pfc: {priorities: [3]}}}\n"
	for _, tc := range []struct {
		name, rest string
		want       []string
	}{
		{"flow of another host on the priority",
			"flows:\n  - {name: a, from: h1, to: h2}\n  - {name: b, from: h3, to: h2, dscp-list: [26]}\npfc-events:\n  - {type: pause, to: h1, priority: 3}\n",
			[]string{"t.yaml:9:5: warning: pfc-events[0] pauses h1 on priority 3, but no flow of h1 uses it (its flows' QPs have priority 0 (DSCP 0 without dscp-list)): " +
				"the pause stops nothing and the pfc check has nothing to check; give the dscp-list of a flow from or to h1 a DSCP of priority 3, such as 26"}},
		{"host without flows",
			"flows:\n  - {name: a, from: h1, to: h2, dscp-list: [26]}\npfc-events:\n  - {type: pause, to: h3, priority: 3}\n",
			[]string{"t.yaml:8:5: warning: pfc-events[0] pauses h3 on priority 3, but no flow of h3 uses it (no flow goes from or to h3): " +
				"the pause stops nothing and the pfc check has nothing to check; give the dscp-list of a flow from or to h3 a DSCP of priority 3, such as 26"}},
		{"the receiver of a flow on the priority",
			"flows:\n  - {name: a, from: h1, to: h2, dscp-list: [26]}\npfc-events:\n  - {type: pause, to: h2, priority: 3}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt, err := Parse("t.yaml", []byte(hosts+tc.rest))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range Warnings(tt) {
				got = append(got, w.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Warnings = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHostsWithTestbed: --testbed remote needs every host's control-ip,
// reported at the host.
func TestHostsWithTestbed(t *testing.T) {
	in := "testbed: sim\nswitch: {control-ip: s}\nhosts:\n  h1: {control-ip: a}\n  h2: {}\nflows: [{name: f, from: h1, to: h2}]\ndumpers: [{control-ip: d}]\n"
	_, err := ParseWith("t.yaml", []byte(in), LoadOptions{Testbed: new(TestbedRemote)})
	if want := "t.yaml:5:3: --testbed remote: host h2 has no control-ip"; err == nil || err.Error() != want {
		t.Errorf("ParseWith(--testbed remote) error = %v, want %s", err, want)
	}
	tt, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tt.WithTestbed(TestbedRemote); err == nil || err.Error() != "t.yaml: --testbed remote: host h2 has no control-ip" {
		t.Errorf("WithTestbed(remote) error = %v", err)
	}
}

// TestHostsResources: the machine checks count every flow and point at
// flows and at the entry of a flow.
func TestHostsResources(t *testing.T) {
	const two = "hosts: {h1: {}, h2: {}}\nflows:\n  - {name: a, from: h1, to: h2, num-qps: 4, message-size: 1073741824}\n  - {name: b, from: h2, to: h1, num-qps: 2, message-size: 1073741824}\n"
	tests := []struct {
		name, in string
		o        LoadOptions
		want     string
	}{
		// 3 × 6 QPs × 1 GiB = 18 GiB of messages; the graph data and 6
		// messages of records (none per packet).
		{"memory", two, LoadOptions{Resources: Resources{MemoryBytes: 4 << 30}},
			"t.yaml:3:3: the test needs about 18.4 GiB of memory on this machine (messages 3 × 6 QPs of 2 flows × their message-size = 18 GiB, dumpers 8 MiB, held packets 0 B, records 128 MiB: graph data 128 MiB, 0 packets of events and PFC frames, 6 messages, base 256 MiB), more than the limit of 4 GiB; use fewer QPs, messages or events, smaller messages or fewer dumper workers, or raise the limit with --memory-limit"},
		{"memory fits", two, LoadOptions{Resources: Resources{MemoryBytes: 19 << 30}}, ""},
		// The top-level rx-stall ends at 9.0001 s × 10000: 25 h; flow b's
		// hold, 4.29 s × 10000, is within the limit.
		{"netns wall time of a top-level event", "testbed: netns\nnetns-slowdown: 10000\nhosts: {h1: {}, h2: {}}\nflows:\n  - {name: a, from: h1, to: h2}\n  - {name: b, from: h1, to: h2, message-size: 2048, data-pkt-events: [{qpn: 0, psn: 1, type: delay, delay-us: 4294967}]}\n" +
			"pfc-events: [{type: rx-stall, host: h2, start-us: 100, duration-us: 9000000}]\n",
			LoadOptions{}, "t.yaml:7:14: on netns this entry takes at least 25h0m1s of wall-clock time (its hold or end × netns-slowdown 10000), more than the limit of 24h0m0s; shorten it or lower netns-slowdown (docs/run.md#netns-slowdown)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseError(tt.in, tt.o); got != tt.want {
				t.Errorf("ParseWith(%q) error =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
		})
	}
}

// TestTrafficDeadlineFlows: all flows' bytes at 1 Gb/s, then the
// slowest flow's retries after its start.
func TestTrafficDeadlineFlows(t *testing.T) {
	one, err := Parse("t.yaml", []byte("name: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	// 4096 B at 1 Gb/s; 8 tries × 8 × 4.096 µs × 2^14 = 4.29 s, raised to
	// the adaptive stages' 14 s; 1 s of slack.
	if got, want := one.TrafficDeadline(), 32768*time.Nanosecond+14*time.Second+time.Second; got != want {
		t.Errorf("two-host TrafficDeadline() = %v, want %v", got, want)
	}
	two, err := Parse("t.yaml", []byte("hosts: {h1: {}, h2: {}}\nflows: [{name: a, from: h1, to: h2}, {name: b, from: h2, to: h1, start-us: 1000}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := two.TrafficDeadline(), 2*32768*time.Nanosecond+time.Millisecond+14*time.Second+time.Second; got != want {
		t.Errorf("two flows' TrafficDeadline() = %v, want %v", got, want)
	}
}
