package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A small fabric for the error table: h1 and h2 on s1, h3 on s2, s1-s2
// linked. Lines 1..9; flows start at line 10.
const (
	fabHosts    = "hosts: {h1: {}, h2: {}, h3: {}}\n"
	fabSwitches = "switches:\n  s1: {}\n  s2: {}\n"
	fabLinks    = "links:\n  - {a: h1, b: s1}\n  - {a: h2, b: s1}\n  - {a: h3, b: s2}\n  - {a: s1, b: s2}\n"
	fabBase     = fabHosts + fabSwitches + fabLinks
	fabFlow     = "flows:\n  - {name: f, from: h1, to: h3}\n"
)

// A line of three switches s1-s2-s3 with h1 on s1, h2 on s2, h3 on s3
// (lines 1..8; flows start at line 9).
const (
	lineBase = "hosts: {h1: {}, h2: {}, h3: {}}\nswitches: {s1: {}, s2: {}, s3: {}}\nlinks:\n" +
		"  - {a: h1, b: s1}\n  - {a: h2, b: s2}\n  - {a: h3, b: s3}\n  - {a: s1, b: s2}\n  - {a: s2, b: s3}\n"
)

// manySwitchLinks returns a fabric of 18 switches s0..s17, h1 on s0 and
// h2 on s1, and n distinct switch-to-switch links (n ≤ 153).
func manySwitchLinks(n int) string {
	s := "hosts: {h1: {}, h2: {}}\nswitches:\n"
	for i := range 18 {
		s += fmt.Sprintf("  s%d: {}\n", i)
	}
	s += "links:\n  - {a: h1, b: s0}\n  - {a: h2, b: s1}\n"
	k := 0
	for i := 0; i < 18 && k < n; i++ {
		for j := i + 1; j < 18 && k < n; j++ {
			s += fmt.Sprintf("  - {a: s%d, b: s%d}\n", i, j)
			k++
		}
	}
	return s + "flows: [{name: f, from: h1, to: h2}]\n"
}

// fabricErrorTests maps a fabric input to the exact error of Parse.
var fabricErrorTests = []struct {
	name string
	in   string
	want string
}{
	// Fabric keys without switches, and with switch.
	{"switch and switches", "switch: {}\n" + fabBase + fabFlow,
		`t.yaml:3:1: switches (line 3) and switch (line 1): give switches for a fabric (each switch takes switch's keys), or switch for one switch`},
	{"links without switches", twoHosts + oneFlow + "links: [{a: h1, b: h2}]\n",
		`t.yaml:6:1: links needs switches: without switches the test has one switch (give switches and links for a fabric)`},
	{"routing without switches", twoHosts + oneFlow + "routing: shortest\n",
		`t.yaml:6:1: routing needs switches: without switches the test has one switch (give switches and links for a fabric)`},
	{"deadlock-ms without switches", twoHosts + oneFlow + "deadlock-ms: 20\n",
		`t.yaml:6:1: deadlock-ms needs switches: a PFC deadlock is a cycle of switches pausing each other, and the test has one switch`},
	{"path without switches", twoHosts + "flows:\n  - {name: a, from: h1, to: h2, path: [s1]}\n",
		`t.yaml:5:33: path needs switches: without switches every flow crosses the one switch`},
	{"at without switches", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 0, type: drop, at: s1}\n",
		`t.yaml:3:36: at needs switches: without switches every event is at the one switch`},
	{"pfc at without switches", "requester: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, start: {qpn: 0, psn: 0}, at: s1}\n",
		`t.yaml:4:74: at needs switches: without switches every event is at the one switch`},

	// Keys of the one partitioned switch on another switch.
	{"control-ip on the second switch", fabHosts + "switches:\n  s1: {control-ip: 10.0.0.9}\n  s2: {control-ip: 10.0.0.8}\n" + fabLinks + fabFlow,
		`t.yaml:4:8: control-ip: switch s2 gives 10.0.0.8, the first switch s1 10.0.0.9: the switches of a fabric are logical switches of one switch, which the first switch's control-ip configures (each switch has its own pfc-watchdog and ecn); give it on s1 only`},
	{"listen-port on the second switch", fabHosts + "switches:\n  s1: {}\n  s2: {listen-port: 9559}\n" + fabLinks + fabFlow,
		`t.yaml:4:8: listen-port: switch s2 gives 9559, the first switch s1 9000: the switches of a fabric are logical switches of one switch, which the first switch's listen-port configures (each switch has its own pfc-watchdog and ecn); give it on s1 only`},

	// switches.
	{"switches a list", fabHosts + "switches: [s1]\n" + fabFlow,
		`t.yaml:2:11: switches: want a mapping from switch name to switch (1..32 switches), got a list`},
	{"null switches", fabHosts + "switches:\nlinks:\n- {a: h1, b: h2}\n" + fabFlow, `t.yaml:2:1: switches: want 1..32 switches, got null`},
	{"no switches", fabHosts + "switches: {}\n" + fabFlow, `t.yaml:2:11: switches: want 1..32 switches, got 0`},
	{"33 switches", manyLines(fabHosts+"switches:\n", 33, func(i int) string { return fmt.Sprintf("  s%d: {}\n", i) }, fabFlow),
		`t.yaml:3:3: switches: want 1..32 switches, got 33`},
	{"switch name", fabHosts + "switches: {s.1: {}}\n" + fabFlow,
		`t.yaml:2:12: switches: a switch's name: want 1..64 letters, digits, '_' or '-', got "s.1"`},
	{"switch named as a host", fabHosts + "switches:\n  s1: {}\n  h2: {}\n" + fabLinks + fabFlow,
		`t.yaml:4:3: switch name "h2" is also the name of a host (at 1:17): links name hosts and switches alike, so every name must be unique`},
	{"unknown key in a switch", fabHosts + "switches:\n  s1: {pfc-watchdg: {}}\n  s2: {}\n" + fabLinks + fabFlow,
		`t.yaml:3:8: unknown key "pfc-watchdg" in switches.s1; did you mean "pfc-watchdog"?`},
	{"ecn of a switch", fabHosts + "switches:\n  s1: {}\n  s2: {ecn: {priorities: [3], kmin-kb: 400, kmax-kb: 100, pmax: 0.2}}\n" + fabLinks + fabFlow,
		`t.yaml:4:54: kmax-kb: want more than kmin-kb (400), got 100`},
	{"two-host form: responder on no switch", "requester: {}\nswitches: {s1: {}}\nlinks: [{a: requester, b: s1}]\n",
		`t.yaml:2:1: host responder is on no switch: add a link {a: responder, b: SWITCH} to links`},
	{"switches without links", fabHosts + fabSwitches + fabFlow,
		`t.yaml:2:1: switches needs links: cable each host to its switch ({a: HOST, b: SWITCH}) and the switches to each other`},
	{"remote fabric without the cables' ports", "testbed: remote\nhosts: {h1: {control-ip: a}, h2: {control-ip: b}, h3: {control-ip: c}}\n" + "switches:\n  s1: {control-ip: s}\n  s2: {}\n" + fabLinks + fabFlow + "dumpers: [{control-ip: d}]\n",
		"t.yaml:2:9: testbed remote: host h1 needs nic.switch-port in a fabric: the switch port its cable plugs into, which puts it in its logical switch\n" +
			"t.yaml:2:30: testbed remote: host h2 needs nic.switch-port in a fabric: the switch port its cable plugs into, which puts it in its logical switch\n" +
			"t.yaml:2:51: testbed remote: host h3 needs nic.switch-port in a fabric: the switch port its cable plugs into, which puts it in its logical switch\n" +
			"t.yaml:10:5: testbed remote: link s1–s2 needs a-port and b-port: the switch ports of its ends (a-port on s1, b-port on s2), which its loopback cable joins (docs/fabric.md)"},
	{"routing", fabBase + fabFlow + "routing: ecmp\n",
		`t.yaml:12:10: routing: want shortest, got "ecmp"`},
	{"deadlock-ms", fabBase + fabFlow + "deadlock-ms: 0\n",
		`t.yaml:12:14: deadlock-ms: want 1..60000, got 0 (deadlock-ms: how long the switches run on after the last flow ended)`},

	// links.
	{"unknown name in a link", fabHosts + fabSwitches + "links:\n  - {a: h1, b: s1}\n  - {a: h2, b: s1}\n  - {a: h3, b: s3}\n  - {a: s1, b: s2}\n" + fabFlow,
		`t.yaml:8:16: b: no host or switch named "s3" (switches: s1, s2; hosts: h1, h2, h3); did you mean "s1"?`},
	{"link of two hosts", fabBase + "  - {a: h1, b: h2}\n" + fabFlow,
		`t.yaml:10:5: link joins two hosts, h1 and h2: a host is cabled to a switch`},
	{"link of a switch to itself", fabBase + "  - {a: s2, b: s2}\n" + fabFlow,
		`t.yaml:10:5: link joins switch s2 to itself`},
	{"host on two switches", fabBase + "  - {a: s2, b: h1}\n" + fabFlow,
		`t.yaml:10:16: host h1 is on two switches, s1 (link at 6:5) and s2: a host is cabled to exactly one switch`},
	{"host linked twice", fabBase + "  - {a: h1, b: s1}\n" + fabFlow,
		`t.yaml:10:5: host h1 and switch s1 are linked twice (first at 6:5)`},
	{"host on no switch", fabHosts + fabSwitches + "links:\n  - {a: h1, b: s1}\n  - {a: h3, b: s2}\n  - {a: s1, b: s2}\n" + "flows:\n  - {name: f, from: h1, to: h3}\n",
		`t.yaml:1:17: host h2 is on no switch: add a link {a: h2, b: SWITCH} to links`},
	{"switch with no link", fabHosts + "switches:\n  s1: {}\n  s2: {}\n  s3: {}\n" + fabLinks + fabFlow,
		`t.yaml:5:3: switch s3 has no link: link it to a host or a switch in links, or remove it`},
	{"switches linked twice", fabBase + "  - {a: s2, b: s1}\n" + fabFlow,
		`t.yaml:10:5: switches s2 and s1 are linked twice (first at 9:5): one link per pair of switches`},
	{"gbps and delay-ns on a host's link", fabHosts + fabSwitches + "links:\n  - {a: h1, b: s1, gbps: 25, delay-ns: 10}\n  - {a: h2, b: s1}\n  - {a: h3, b: s2}\n  - {a: s1, b: s2}\n" + fabFlow,
		"t.yaml:6:26: gbps: h1's link runs at its NIC's line rate (its personality): gbps applies to links between switches\n" +
			`t.yaml:6:40: delay-ns: h1's link runs at its NIC's line rate (its personality): delay-ns applies to links between switches`},
	{"gbps out of range", fabHosts + fabSwitches + "links:\n  - {a: h1, b: s1}\n  - {a: h2, b: s1}\n  - {a: h3, b: s2}\n  - {a: s1, b: s2, gbps: 0}\n" + fabFlow,
		`t.yaml:9:26: gbps: want a rate 0 < gbps <= 1600 in Gb/s, got "0"`},
	{"link without b", fabBase + "  - {a: s1}\n" + fabFlow,
		`t.yaml:10:5: missing key "b" in links[4]`},
	{"151 switch links", manySwitchLinks(151),
		`t.yaml:174:5: more than 150 switch-to-switch links: their ports 200..499 are all taken`},

	// Routes and paths.
	{"host on two switches, as a", fabHosts + fabSwitches + "links:\n  - {a: h1, b: s1}\n  - {a: h2, b: s1}\n  - {a: h3, b: s2}\n  - {a: h2, b: s2}\n" + fabFlow,
		`t.yaml:9:9: host h2 is on two switches, s1 (link at 7:5) and s2: a host is cabled to exactly one switch`},
	{"disconnected flow", fabHosts + "switches:\n  s1: {}\n  s2: {}\n  s3: {}\n" +
		"links:\n  - {a: h1, b: s1}\n  - {a: h2, b: s2}\n  - {a: h3, b: s3}\n  - {a: s1, b: s2}\n" +
		"flows:\n  - {name: f, from: h1, to: h2}\n  - {name: g, from: h3, to: h1}\n",
		`t.yaml:13:5: flow g: no path from h3 (on s3) to h1 (on s1): no links join their switches`},
	{"path with a loop", lineBase + "flows:\n  - {name: f, from: h1, to: h3, path: [s1, s2, s1, s3]}\n",
		`t.yaml:10:48: path[2]: a loop: switch s1 is also path[0]; a path crosses each switch once`},
	{"path from another switch", lineBase + "flows:\n  - {name: f, from: h1, to: h3, path: [s2, s3]}\n",
		`t.yaml:10:40: path[0]: the path starts at s1, the switch of h1 (the flow's from); got s2`},
	{"path to another switch", lineBase + "flows:\n  - {name: f, from: h1, to: h3, path: [s1, s2]}\n",
		`t.yaml:10:44: path[1]: the path ends at s3, the switch of h3 (the flow's to); got s2`},
	{"path over an unlinked pair", lineBase + "flows:\n  - {name: f, from: h1, to: h3, path: [s1, s3]}\n",
		`t.yaml:10:44: path[1]: switches s1 and s3 are not linked`},
	{"path of an unknown switch", lineBase + "flows:\n  - {name: f, from: h1, to: h3, path: [s1, s9, s3]}\n",
		`t.yaml:10:44: path[1]: no switch named "s9" (switches: s1, s2, s3); did you mean "s1"?`},
	{"two paths of a host pair", lineBase + "  - {a: s1, b: s3}\nflows:\n  - {name: f, from: h1, to: h3, path: [s1, s2, s3]}\n  - {name: g, from: h3, to: h1, path: [s3, s1]}\n",
		`t.yaml:12:39: path: flow g joins hosts h1 and h3, as flow f does with another path (at 11:39): a route is per host pair, both ways; give both flows the same path (reversed for the other direction)`},

	// at.
	{"at of an unknown switch", lineBase + "flows:\n  - {name: f, from: h1, to: h3, data-pkt-events: [{qpn: 0, psn: 0, type: drop, at: s4}]}\n",
		`t.yaml:10:84: at: no switch named "s4" (switches: s1, s2, s3); did you mean "s1"?`},
	{"at off the path", lineBase + "flows:\n  - {name: f, from: h1, to: h2, data-pkt-events: [{qpn: 0, psn: 0, type: drop, at: s3}]}\n",
		`t.yaml:10:84: at: switch s3 is not on flow f's path (s1, s2)`},
	{"events of a flow at two switches", lineBase + "flows:\n  - name: f\n    from: h1\n    to: h3\n    data-pkt-events:\n      - {qpn: 0, psn: 0, type: drop, at: s2}\n      - {qpn: 0, psn: 1, type: drop, at: s3}\n",
		`t.yaml:15:42: at: flow f's events are at s2 (at 14:42): all events of a flow are at one switch`},
	{"pfc at of a flow's other switch", "hosts: {h1: {nic: {pfc: {priorities: [3]}}}, h2: {}, h3: {}}\n" + lineBase[len("hosts: {h1: {}, h2: {}, h3: {}}\n"):] +
		"flows:\n  - {name: f, from: h1, to: h3, data-pkt-events: [{qpn: 0, psn: 0, type: drop, at: s2}]}\n" +
		"pfc-events:\n  - {type: pause, to: h1, priority: 3, start: {flow: f, qpn: 0, psn: 0}, at: s1}\n",
		`t.yaml:12:78: at: flow f's events are at s2 (at 10:84): all events of a flow are at one switch`},
	{"pfc at off the start flow's path", "hosts: {h1: {nic: {pfc: {priorities: [3]}}}, h2: {}, h3: {}}\n" + lineBase[len("hosts: {h1: {}, h2: {}, h3: {}}\n"):] +
		"flows:\n  - {name: f, from: h1, to: h2}\n" +
		"pfc-events:\n  - {type: pause, to: h1, priority: 3, start: {flow: f, qpn: 0, psn: 0}, at: s3}\n",
		`t.yaml:12:78: at: switch s3 is not on flow f's path (s1, s2)`},
	{"pfc at without start", "hosts: {h1: {nic: {pfc: {priorities: [3]}}}, h2: {}, h3: {}}\n" + lineBase[len("hosts: {h1: {}, h2: {}, h3: {}}\n"):] +
		"flows:\n  - {name: f, from: h1, to: h2}\n" +
		"pfc-events:\n  - {type: pause, to: h1, priority: 3, at: s1}\n",
		`t.yaml:12:44: at applies to a pfc event with start: the switch that sees the start packet (a pause at start-us comes from the paused host's switch)`},
}

func TestParseFabricErrors(t *testing.T) {
	for _, tt := range fabricErrorTests {
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

// closYAML is a 2-ToR, 2-leaf, 1-spine Clos (RDMA at scale, Fig. 5):
// h1, h2 on tor1, h3, h4 on tor2; flow g from h4 to h2 takes the explicit
// path tor2, leaf2, tor1.
const closYAML = `hosts: {h1: {}, h2: {}, h3: {}, h4: {}}
switches:
  tor1: {pfc-watchdog: {detection-ms: 50}}
  tor2: {}
  leaf1: {}
  leaf2: {}
  spine: {ecn: {priorities: [3], kmin-kb: 100, kmax-kb: 400, pmax: 0.2}}
links:
  - {a: h1, b: tor1}
  - {a: h2, b: tor1}
  - {a: tor1, b: leaf1}
  - {a: h3, b: tor2}
  - {a: tor2, b: h4}
  - {a: tor1, b: leaf2, gbps: 40, delay-ns: 500}
  - {a: leaf1, b: tor2}
  - {a: tor2, b: leaf2}
  - {a: leaf1, b: spine}
  - {a: spine, b: leaf2}
flows:
  - {name: f, from: h1, to: h3}
  - {name: g, from: h4, to: h2, path: [tor2, leaf2, tor1]}
`

// parseClos parses closYAML with seed.
func parseClos(t *testing.T, seed uint64) *Test {
	t.Helper()
	cfg, err := Parse("clos.yaml", []byte(fmt.Sprintf("seed: %d\n%s", seed, closYAML)))
	if err != nil {
		t.Fatalf("Parse(clos) error = %v", err)
	}
	return cfg
}

func TestFabricTopology(t *testing.T) {
	cfg := parseClos(t, 1)
	if !cfg.Fabric() || cfg.Routing != RoutingShortest {
		t.Errorf("Fabric(), Routing = %v, %q; want true, shortest", cfg.Fabric(), cfg.Routing)
	}
	// Positions are one line further down than in closYAML (the seed line).
	want := &Topology{
		Switches: []string{"tor1", "tor2", "leaf1", "leaf2", "spine"},
		Ports: []TopoPort{
			{Port: 1, Switch: 0, Host: 0, PeerSwitch: -1, Pos: Pos{10, 5}},
			{Port: 2, Switch: 0, Host: 1, PeerSwitch: -1, Pos: Pos{11, 5}},
			{Port: 32, Switch: 1, Host: 2, PeerSwitch: -1, Pos: Pos{13, 5}},
			{Port: 33, Switch: 1, Host: 3, PeerSwitch: -1, Pos: Pos{14, 5}},
			{Port: 200, Switch: 0, Host: -1, PeerPort: 201, PeerSwitch: 2, Pos: Pos{12, 5}},
			{Port: 201, Switch: 2, Host: -1, PeerPort: 200, PeerSwitch: 0, Pos: Pos{12, 5}},
			{Port: 202, Switch: 0, Host: -1, PeerPort: 203, PeerSwitch: 3, Gbps: 40, DelayNs: 500, Pos: Pos{15, 5}},
			{Port: 203, Switch: 3, Host: -1, PeerPort: 202, PeerSwitch: 0, Gbps: 40, DelayNs: 500, Pos: Pos{15, 5}},
			{Port: 204, Switch: 2, Host: -1, PeerPort: 205, PeerSwitch: 1, Pos: Pos{16, 5}},
			{Port: 205, Switch: 1, Host: -1, PeerPort: 204, PeerSwitch: 2, Pos: Pos{16, 5}},
			{Port: 206, Switch: 1, Host: -1, PeerPort: 207, PeerSwitch: 3, Pos: Pos{17, 5}},
			{Port: 207, Switch: 3, Host: -1, PeerPort: 206, PeerSwitch: 1, Pos: Pos{17, 5}},
			{Port: 208, Switch: 2, Host: -1, PeerPort: 209, PeerSwitch: 4, Pos: Pos{18, 5}},
			{Port: 209, Switch: 4, Host: -1, PeerPort: 208, PeerSwitch: 2, Pos: Pos{18, 5}},
			{Port: 210, Switch: 4, Host: -1, PeerPort: 211, PeerSwitch: 3, Pos: Pos{19, 5}},
			{Port: 211, Switch: 3, Host: -1, PeerPort: 210, PeerSwitch: 4, Pos: Pos{19, 5}},
		},
	}
	tp := cfg.Topology()
	if !reflect.DeepEqual(tp, want) {
		t.Errorf("Topology() =\n%+v\nwant\n%+v", tp, want)
	}
	for h, sw := range []int{0, 0, 1, 1} {
		if got := tp.HostSwitch(h); got != sw {
			t.Errorf("HostSwitch(%d) = %d, want %d", h, got, sw)
		}
	}
	if got := tp.HostSwitch(4); got != -1 {
		t.Errorf("HostSwitch(4) = %d, want -1", got)
	}
	if got := tp.Port(207); got == nil || got.Switch != 3 || got.PeerPort != 206 {
		t.Errorf("Port(207) = %+v, want leaf2's end of tor2-leaf2", got)
	}
	if got := tp.Port(199); got != nil {
		t.Errorf("Port(199) = %+v, want nil", got)
	}
	// Switch is the first switch's configuration; SwitchConfig each one's.
	if cfg.Switch.PFCWatchdog == nil || cfg.Switch.PFCWatchdog.DetectionMs != 50 {
		t.Errorf("Switch.PFCWatchdog = %+v, want tor1's (detection-ms 50)", cfg.Switch.PFCWatchdog)
	}
	if sc := cfg.SwitchConfig(4); sc == nil || sc.ECN == nil || sc.ECN.KmaxKB != 400 || sc.ListenPort != 9000 {
		t.Errorf("SwitchConfig(4) = %+v, want spine's (ecn, default listen-port)", sc)
	}
	if sc := cfg.SwitchConfig(5); sc != nil {
		t.Errorf("SwitchConfig(5) = %+v, want nil", sc)
	}
	for name, want := range map[string]int{"tor1": 0, "spine": 4, "switch": -1, "h1": -1} {
		if got := cfg.SwitchIndex(name); got != want {
			t.Errorf("SwitchIndex(%q) = %d, want %d", name, got, want)
		}
	}
	checkRoundTrip(t, cfg)
}

// TestPairHash checks the ECMP hash against FNV-1a-64 computed
// independently (Python: seed, lo, hi packed '<QQQ', offset basis
// 0xcbf29ce484222325, prime 0x100000001b3).
func TestPairHash(t *testing.T) {
	tests := []struct {
		seed   uint64
		lo, hi int
		want   uint64
	}{
		{1, 0, 2, 0x992024ad58b0cce6},
		{1, 0, 3, 0xb81aebb663a01707},
		{1, 1, 2, 0xe81e3a756bc5e527},
		{1, 1, 3, 0xc923736c60d69b06},
		{2, 0, 2, 0x912c043c65316385},
		{2, 1, 3, 0x6128b57d5d0b9565},
	}
	for _, tt := range tests {
		if got := pairHash(tt.seed, tt.lo, tt.hi); got != tt.want {
			t.Errorf("pairHash(%d, %d, %d) = %#x, want %#x", tt.seed, tt.lo, tt.hi, got, tt.want)
		}
	}
}

// TestFabricRoutes checks the routes of the Clos: ToR to ToR is two
// equal-cost paths, via leaf1 (index 0) or leaf2 (index 1), chosen by
// pairHash mod 2 (TestPairHash's values: seed 1 gives (h1,h3) 0, (h1,h4)
// 1, (h2,h3) 1; seed 2 gives (h1,h3) 1); (h2,h4) takes flow g's path
// whatever the hash says (seed 1: 0, leaf1; seed 2: 1).
func TestFabricRoutes(t *testing.T) {
	viaLeaf1 := []Hop{{0, 1, 200}, {2, 201, 204}, {1, 205, 32}}  // h1 → h3 via leaf1
	viaLeaf2 := []Hop{{0, 1, 202}, {3, 203, 207}, {1, 206, 32}}  // h1 → h3 via leaf2
	h1h4Leaf2 := []Hop{{0, 1, 202}, {3, 203, 207}, {1, 206, 33}} // h1 → h4 via leaf2
	h2h3Leaf2 := []Hop{{0, 2, 202}, {3, 203, 207}, {1, 206, 32}} // h2 → h3 via leaf2
	h2h4Path := []Hop{{0, 2, 202}, {3, 203, 207}, {1, 206, 33}}  // h2 → h4: g's path reversed
	h2h4Leaf1 := []Hop{{0, 2, 200}, {2, 201, 204}, {1, 205, 33}}
	tests := []struct {
		seed     uint64
		from, to int
		want     []Hop
	}{
		{1, 0, 2, viaLeaf1},
		{2, 0, 2, viaLeaf2},
		{1, 0, 3, h1h4Leaf2},
		{1, 1, 2, h2h3Leaf2},
		{1, 1, 3, h2h4Path},
		{2, 1, 3, h2h4Path},
		{1, 0, 1, []Hop{{0, 1, 2}}}, // same ToR
		{1, 1, 0, []Hop{{0, 2, 1}}},
		{1, 0, 0, nil},
		{1, 0, 4, nil},
		{1, -1, 0, nil},
	}
	for _, tt := range tests {
		cfg := parseClos(t, tt.seed)
		got := cfg.Route(tt.from, tt.to)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("seed %d: Route(%d, %d) = %v, want %v", tt.seed, tt.from, tt.to, got, tt.want)
		}
		if tt.want == nil {
			continue
		}
		// Symmetric: the reverse route is the same switches backwards.
		var rev []Hop
		for i := len(tt.want) - 1; i >= 0; i-- {
			h := tt.want[i]
			rev = append(rev, Hop{h.Switch, h.Out, h.In})
		}
		if got := cfg.Route(tt.to, tt.from); !reflect.DeepEqual(got, rev) {
			t.Errorf("seed %d: Route(%d, %d) = %v, want %v", tt.seed, tt.to, tt.from, got, rev)
		}
	}
	// Without g's path, (h2,h4) follows the hash: seed 1, index 0, leaf1.
	cfg := parseClos(t, 1)
	cfg.Flows[1].Path = nil
	if got := cfg.Route(1, 3); !reflect.DeepEqual(got, h2h4Leaf1) {
		t.Errorf("without path: Route(1, 3) = %v, want %v", got, h2h4Leaf1)
	}
}

// TestShortestLexicographic checks the index order of equal-cost paths on
// a graph with four of them: a to d through b1 or b2, then c1 or c2.
func TestShortestLexicographic(t *testing.T) {
	// Switch ids: a 0, b1 1, b2 2, c1 3, c2 4, d 5.
	g := &graph{n: 6, adj: [][]int{{1, 2}, {0, 3, 4}, {0, 3, 4}, {1, 2, 5}, {1, 2, 5}, {3, 4}}}
	want := [][]int{{0, 1, 3, 5}, {0, 1, 4, 5}, {0, 2, 3, 5}, {0, 2, 4, 5}}
	for h := range uint64(9) {
		if got := g.shortest(0, 5, h); !slices.Equal(got, want[h%4]) {
			t.Errorf("shortest(0, 5, %d) = %v, want %v", h, got, want[h%4])
		}
	}
	if got := g.shortest(5, 5, 3); !slices.Equal(got, []int{5}) {
		t.Errorf("shortest(5, 5, 3) = %v, want [5]", got)
	}
	g.adj = append(g.adj, nil)
	g.n++
	if got := g.shortest(0, 6, 0); got != nil {
		t.Errorf("shortest to an unlinked switch = %v, want nil", got)
	}
}

func TestObservedSwitch(t *testing.T) {
	cfg := parseClos(t, 1)
	// f: h1 → h3, first switch tor1; g: h4 → h2, first switch tor2.
	if got := cfg.ObservedSwitch(0); got != 0 {
		t.Errorf("ObservedSwitch(f) = %d, want 0 (tor1)", got)
	}
	if got := cfg.ObservedSwitch(1); got != 1 {
		t.Errorf("ObservedSwitch(g) = %d, want 1 (tor2)", got)
	}
	in := "hosts: {h1: {nic: {pfc: {priorities: [3]}}}, h2: {}, h3: {}, h4: {}}\n" + closYAML[len("hosts: {h1: {}, h2: {}, h3: {}, h4: {}}\n"):] +
		"  - {name: e, from: h1, to: h3, data-pkt-events: [{qpn: 0, psn: 0, type: drop}, {qpn: 0, psn: 1, type: drop, at: leaf1}]}\n" +
		"pfc-events:\n  - {type: pause, to: h1, priority: 3, start: {flow: g, qpn: 0, psn: 0}, at: leaf2}\n"
	cfg, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse error = %v", err)
	}
	for f, want := range []int{0, 3, 2, -1} {
		if got := cfg.ObservedSwitch(f); got != want {
			t.Errorf("ObservedSwitch(%d) = %d, want %d", f, got, want)
		}
	}
	if got := cfg.Flows[2].Events[1].At; got != "leaf1" {
		t.Errorf("Flows[2].Events[1].At = %q, want leaf1", got)
	}
	if got := cfg.PFCEvents[0].At; got != "leaf2" {
		t.Errorf("PFCEvents[0].At = %q, want leaf2", got)
	}
	checkRoundTrip(t, cfg)
}

// TestOneSwitchTopology checks the one-switch form: one switch, a port
// per host, one-hop routes, observed switch 0.
func TestOneSwitchTopology(t *testing.T) {
	for _, in := range []string{
		"name: two\n",
		"hosts: {a: {}, b: {}, c: {}}\nflows: [{name: f, from: c, to: a}]\n",
	} {
		cfg, err := Parse("t.yaml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		tp := cfg.Topology()
		if cfg.Fabric() || !slices.Equal(tp.Switches, []string{"switch"}) || len(tp.Ports) != len(cfg.Hosts) {
			t.Fatalf("%q: Fabric() = %v, Topology() = %+v; want false, one switch with a port per host", in, cfg.Fabric(), tp)
		}
		for i, p := range tp.Ports {
			if want := (TopoPort{Port: HostPort(i), Host: i, PeerSwitch: -1, Pos: cfg.Hosts[i].Pos}); p != want {
				t.Errorf("%q: Ports[%d] = %+v, want %+v", in, i, p, want)
			}
		}
		last := len(cfg.Hosts) - 1
		if got, want := cfg.Route(last, 0), []Hop{{0, HostPort(last), 1}}; !reflect.DeepEqual(got, want) {
			t.Errorf("%q: Route(%d, 0) = %v, want %v", in, last, got, want)
		}
		if got := cfg.ObservedSwitch(0); got != 0 {
			t.Errorf("%q: ObservedSwitch(0) = %d, want 0", in, got)
		}
		if sc := cfg.SwitchConfig(0); sc != &cfg.Switch {
			t.Errorf("%q: SwitchConfig(0) = %p, want &Switch", in, sc)
		}
		if cfg.Routing != "" {
			t.Errorf("%q: Routing = %q, want empty", in, cfg.Routing)
		}
	}
	for i, want := range map[int]uint32{0: 1, 1: 2, 2: 32, 3: 33, 63: 93} {
		if got := HostPort(i); got != want {
			t.Errorf("HostPort(%d) = %d, want %d", i, got, want)
		}
	}
}

// TestFabricValid checks fabric files that must parse: the two-host form
// on two switches, 150 switch-to-switch links, a path of one switch.
func TestFabricValid(t *testing.T) {
	for _, in := range []string{
		"switches: {s1: {}, s2: {}}\nlinks: [{a: requester, b: s1}, {a: s2, b: responder}, {a: s1, b: s2}]\n" +
			"traffic: {data-pkt-events: [{qpn: 0, psn: 0, type: drop, at: s2}]}\ndeadlock-ms: 60000\n",
		manySwitchLinks(150),
		fabBase + "flows:\n  - {name: f, from: h1, to: h2, path: [s1]}\n  - {name: g, from: h3, to: h1, path: [s2, s1]}\n  - {name: h, from: h1, to: h3, path: [s1, s2]}\n",
	} {
		cfg, err := Parse("t.yaml", []byte(in))
		if err != nil {
			t.Errorf("Parse(%q) error = %v", in, err)
			continue
		}
		checkRoundTrip(t, cfg)
	}
	cfg, _ := Parse("t.yaml", []byte(manySwitchLinks(150)))
	if tp := cfg.Topology(); tp.Ports[len(tp.Ports)-1].Port != 499 {
		t.Errorf("150 links: last port = %d, want 499", tp.Ports[len(tp.Ports)-1].Port)
	}
	cfg, _ = Parse("t.yaml", []byte("switches: {s1: {}, s2: {}}\nlinks: [{a: requester, b: s1}, {a: s2, b: responder}, {a: s1, b: s2}]\ndeadlock-ms: 200\n"))
	if got := cfg.Route(0, 1); !reflect.DeepEqual(got, []Hop{{0, 1, 200}, {1, 201, 2}}) || cfg.DeadlockMs != 200 || cfg.ObservedSwitch(0) != 0 {
		t.Errorf("two-host fabric: Route(0, 1) = %v, DeadlockMs %d, ObservedSwitch(0) %d; want [{0 1 200} {1 201 2}], 200, 0", got, cfg.DeadlockMs, cfg.ObservedSwitch(0))
	}
}

// TestFabricDocExample parses the yaml blocks of docs/fabric.md.
func TestFabricDocExample(t *testing.T) {
	data, err := os.ReadFile("../docs/fabric.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(data), "```yaml\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("docs/fabric.md has no yaml examples")
	}
	for i, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		cfg, err := Parse("fabric.md", []byte(b))
		if err != nil {
			t.Errorf("example %d in docs/fabric.md: Parse error = %v", i, err)
			continue
		}
		if cfg.Testbed == TestbedRemote {
			// The remote example: its route crosses the loopback cable.
			want := []Hop{{Switch: 0, In: 144, Out: 160}, {Switch: 1, In: 16, Out: 8}}
			if got := cfg.Route(0, 1); !cfg.Fabric() || !reflect.DeepEqual(got, want) {
				t.Errorf("example %d: Fabric() = %v, Route(h1, h2) = %v; want true, %v", i, cfg.Fabric(), got, want)
			}
			continue
		}
		if !cfg.Fabric() || cfg.DeadlockMs != 200 {
			t.Errorf("example %d: Fabric() = %v, DeadlockMs = %d; want true, 200", i, cfg.Fabric(), cfg.DeadlockMs)
		}
	}
}

// TestFabricExamples loads the fabric examples and checks the routes the
// deadlock examples are built on: in pfc-deadlock.yaml the four flows go
// two hops clockwise round the ring (ports 200..207: s1-s2, s2-s3, s3-s4,
// s4-s1), in pfc-deadlock-fixed.yaml c and d go the other way.
func TestFabricExamples(t *testing.T) {
	for _, name := range []string{"hawkeye-fig1", "pfc-storm-clos", "pfc-storm-clos-nowatchdog", "pfc-deadlock", "pfc-deadlock-fixed"} {
		if _, err := Load("../examples/fabric/" + name + ".yaml"); err != nil {
			t.Errorf("Load(%s) error = %v", name, err)
		}
	}
	// Hosts h1..h4 are 0..3 (ports 1, 2, 32, 33), r1..r4 4..7 (34..37).
	tests := []struct {
		file string
		want [][]Hop // per flow a, b, c, d
	}{
		{"pfc-deadlock", [][]Hop{
			{{0, 1, 200}, {1, 201, 202}, {2, 203, 36}},  // a h1→r3 via s1, s2, s3
			{{1, 2, 202}, {2, 203, 204}, {3, 205, 37}},  // b h2→r4 via s2, s3, s4
			{{2, 32, 204}, {3, 205, 206}, {0, 207, 34}}, // c h3→r1 via s3, s4, s1
			{{3, 33, 206}, {0, 207, 200}, {1, 201, 35}}, // d h4→r2 via s4, s1, s2
		}},
		{"pfc-deadlock-fixed", [][]Hop{
			{{0, 1, 200}, {1, 201, 202}, {2, 203, 36}},
			{{1, 2, 202}, {2, 203, 204}, {3, 205, 37}},
			{{2, 32, 203}, {1, 202, 201}, {0, 200, 34}}, // c h3→r1 via s3, s2, s1
			{{3, 33, 205}, {2, 204, 203}, {1, 202, 35}}, // d h4→r2 via s4, s3, s2
		}},
	}
	for _, tt := range tests {
		cfg, err := Load("../examples/fabric/" + tt.file + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		for f, want := range tt.want {
			fl := cfg.Flows[f]
			if got := cfg.Route(cfg.HostIndex(fl.From), cfg.HostIndex(fl.To)); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: flow %s: Route = %v, want %v", tt.file, fl.Name, got, want)
			}
		}
		if cfg.DeadlockMs != 20 {
			t.Errorf("%s: DeadlockMs = %d, want 20", tt.file, cfg.DeadlockMs)
		}
	}
}

// TestFabricSharedKeysSame: a key of the one partitioned switch may be
// repeated on another switch with the first switch's value, and every
// switch takes its own pfc-watchdog and ecn.
func TestFabricSharedKeysSame(t *testing.T) {
	in := fabHosts + "switches:\n  s1: {control-ip: 10.0.0.9, pfc-watchdog: {detection-ms: 5}}\n  s2: {control-ip: 10.0.0.9, pfc-watchdog: {detection-ms: 7}}\n" + fabLinks + fabFlow
	tc, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse = %v, want no error", err)
	}
	if got := [2]int{tc.SwitchConfig(0).PFCWatchdog.DetectionMs, tc.SwitchConfig(1).PFCWatchdog.DetectionMs}; got != [2]int{5, 7} {
		t.Errorf("detection-ms by switch = %v, want [5 7]", got)
	}
}
