package orchestrator

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/sim"
)

// TestFabricModel: a two-switch fabric as the run record keeps it: every
// port in port order with its host or its peer, the link's gbps and
// delay-ns (the hosts' line rate and the sim default delay when the test
// gives none), each host's cable at its own NIC's line rate, the routes
// and each flow's observed switch by name.
func TestFabricModel(t *testing.T) {
	routes := []model.Route{
		{From: "a", To: "b", Hops: []model.Hop{{Switch: "tor1", In: 1, Out: 200}, {Switch: "tor2", In: 201, Out: 2}}},
		{From: "b", To: "a", Hops: []model.Hop{{Switch: "tor2", In: 2, Out: 201}, {Switch: "tor1", In: 200, Out: 1}}},
	}
	fb := &fabric{switches: []string{"tor1", "tor2", "spine"},
		hosts: []hostCable{{sw: 0, port: 1}, {sw: 1, port: 2}, {sw: 1, port: 32}},
		links: []switchLink{
			{sw: [2]int{0, 1}, ports: [2]uint32{200, 201}, cable: cable{gbps: 40, delayNs: 1000}},
			{sw: [2]int{2, 0}, ports: [2]uint32{202, 203}},
		},
		routes: []hostRoute{{from: 0, to: 1, hops: []config.Hop{{Switch: 0, In: 1, Out: 200}, {Switch: 1, In: 201, Out: 2}}},
			{from: 1, to: 0, hops: []config.Hop{{Switch: 1, In: 2, Out: 201}, {Switch: 0, In: 200, Out: 1}}}},
		observe: []int{1, 0}, flows: []string{"f1", "f2"}, ecn: []*config.ECN{nil, {Priorities: []int{3}}, nil}}
	got := fb.model([]string{"a", "b", "c"}, []string{"f1", "f2"}, []float64{100, 100, 40}, 100)
	want := &model.Fabric{Switches: []string{"tor1", "tor2", "spine"},
		Ports: []model.FabricPort{
			{Port: 1, Switch: "tor1", Host: "a", Gbps: 100, DelayNs: 500},
			{Port: 2, Switch: "tor2", Host: "b", Gbps: 100, DelayNs: 500},
			{Port: 32, Switch: "tor2", Host: "c", Gbps: 40, DelayNs: 500}, // a 40 Gb/s NIC (CX4 Lx)
			{Port: 200, Switch: "tor1", PeerSwitch: "tor2", PeerPort: 201, Gbps: 40, DelayNs: 1000},
			{Port: 201, Switch: "tor2", PeerSwitch: "tor1", PeerPort: 200, Gbps: 40, DelayNs: 1000},
			{Port: 202, Switch: "spine", PeerSwitch: "tor1", PeerPort: 203, Gbps: 100, DelayNs: 500},
			{Port: 203, Switch: "tor1", PeerSwitch: "spine", PeerPort: 202, Gbps: 100, DelayNs: 500},
		},
		Routes:  routes,
		Observe: map[string]string{"f1": "tor2", "f2": "tor1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("model() =\n%+v\nwant\n%+v", got, want)
	}
	cp := fb.controlplane([]uint32{10})
	wantCP := &controlplane.Fabric{PortSwitch: map[uint32]uint8{1: 0, 2: 1, 32: 1, 200: 0, 201: 1, 202: 2, 203: 0, 10: 0},
		Routes: []controlplane.Route{{From: 0, To: 1, Hops: []controlplane.Hop{{Switch: 0, In: 1, Out: 200}, {Switch: 1, In: 201, Out: 2}}},
			{From: 1, To: 0, Hops: []controlplane.Hop{{Switch: 1, In: 2, Out: 201}, {Switch: 0, In: 200, Out: 1}}}},
		Observed: map[string]uint8{"f1": 1, "f2": 0}, ECN: map[uint8]*config.ECN{1: fb.ecn[1]}}
	if !reflect.DeepEqual(cp, wantCP) {
		t.Errorf("controlplane() =\n%+v\nwant\n%+v", cp, wantCP)
	}
	for _, tc := range []struct {
		port uint32
		sw   int
	}{{1, 0}, {32, 1}, {200, 0}, {201, 1}, {202, 2}, {203, 0}, {204, -1}, {10, -1}} {
		if got := fb.switchOf(tc.port); got != tc.sw {
			t.Errorf("switchOf(%d) = %d, want %d", tc.port, got, tc.sw)
		}
	}
}

// TestFabricSimLink: a cable's sim link runs at its gbps (else the hosts'
// line rate) with its delay-ns (else the sim default).
func TestFabricSimLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    cable
		want sim.LinkConfig
	}{
		{"defaults", cable{}, sim.LinkConfig{Name: "x", BandwidthBps: 25e9}},
		{"gbps and delay", cable{gbps: 100, delayNs: 1000}, sim.LinkConfig{Name: "x", BandwidthBps: 100e9, Delay: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.simLink("x", 25); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("simLink = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got, want := []string{linkIface(0, 0), linkIface(3, 1)}, []string{"l0a", "l3b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("linkIface = %q, want %q", got, want)
	}
}

// remoteFabYAML is a fabric on testbed remote: h1 on tor1 at switch port
// 5, h2 on tor2 at port 6, the loopback cable tor1–tor2 between ports 41
// (tor1) and 44 (tor2), dumpers on ports 10 and 11; flow f's drop is at
// tor2.
const remoteFabYAML = `name: fab
testbed: remote
switches: {tor1: {control-ip: 192.0.2.9}, tor2: {}}
links: [{a: h1, b: tor1}, {a: h2, b: tor2}, {a: tor1, b: tor2, a-port: 41, b-port: 44}]
hosts:
  h1: {control-ip: 192.0.2.1, nic: {if-name: eth0, switch-port: 5, ip-list: [10.0.0.1/24]}}
  h2: {control-ip: 192.0.2.2, nic: {if-name: eth0, switch-port: 6, ip-list: [10.0.0.2/24]}}
dumpers:
  - {control-ip: 192.0.2.3, nic: {if-name: eth0, switch-port: 10}}
  - {control-ip: 192.0.2.4, nic: {if-name: eth0, switch-port: 11}}
flows: [{name: f, from: h1, to: h2, data-pkt-events: [{qpn: 0, psn: 3, type: drop, at: tor2}]}]
`

// TestFabricRemote: on the remote testbed the fabric the control plane
// installs uses the real switch's ports: each host's nic.switch-port, the
// loopback cable's a-port and b-port, the dumpers' ports in switch 0; the
// routes cross the cable; flow f is observed at tor2.
func TestFabricRemote(t *testing.T) {
	tc, err := config.Parse("fab.yaml", []byte(remoteFabYAML))
	if err != nil {
		t.Fatal(err)
	}
	fb := newFabric(tc)
	cp := fb.controlplane([]uint32{10, 11})
	want := &controlplane.Fabric{PortSwitch: map[uint32]uint8{5: 0, 6: 1, 41: 0, 44: 1, 10: 0, 11: 0},
		Routes: []controlplane.Route{{From: 0, To: 1, Hops: []controlplane.Hop{{Switch: 0, In: 5, Out: 41}, {Switch: 1, In: 44, Out: 6}}},
			{From: 1, To: 0, Hops: []controlplane.Hop{{Switch: 1, In: 6, Out: 44}, {Switch: 0, In: 41, Out: 5}}}},
		Observed: map[string]uint8{"f": 1}, ECN: map[uint8]*config.ECN{}}
	if !reflect.DeepEqual(cp, want) {
		t.Errorf("controlplane() =\n%+v\nwant\n%+v", cp, want)
	}
	if got, want := fb.links, []switchLink{{sw: [2]int{0, 1}, ports: [2]uint32{41, 44}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("links = %+v, want %+v", got, want)
	}
	// Not refused any more: without remote options the testbed says what
	// it needs, as for one switch.
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
	if !errors.Is(res.Err, ErrTestbed) || !strings.Contains(res.Err.Error(), "remote needs --agent-token-file and --agent-certs") {
		t.Errorf("RunTest on remote without options: %v, want ErrTestbed asking for the agents' token and certificates", res.Err)
	}
}

// TestFabricSwitchPFC: a fabric's switch PFC config: each link's two ports
// at its gbps (or the hosts' line rate), the hosts' ports at their line
// rate, and each logical switch's watchdog on its own ports (tor2 has
// none: nil entries), no switch-wide watchdog; the queue model is on.
func TestFabricSwitchPFC(t *testing.T) {
	tc, err := config.Parse("fab.yaml", []byte(`name: fab
switches:
  tor1: {pfc-watchdog: {detection-ms: 50, restoration-ms: 100}}
  tor2: {}
  spine: {pfc-watchdog: {detection-ms: 10, restoration-ms: 20}}
links: [{a: h1, b: tor1}, {a: h2, b: tor2}, {a: tor1, b: spine, gbps: 40}, {a: spine, b: tor2}]
hosts:
  h1: {nic: {personality: cx4, ip-list: [10.0.0.1/24], pfc: {priorities: [3]}}}
  h2: {nic: {personality: cx5, ip-list: [10.0.0.2/24], pfc: {priorities: [3]}}}
flows: [{name: f, from: h1, to: h2}]
`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := newRun(tc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !run.pfcOn() || !run.queuesOn() {
		t.Errorf("pfcOn %v, queuesOn %v; want both", run.pfcOn(), run.queuesOn())
	}
	c := run.switchPFC(&placement{hostPorts: []uint32{1, 2}})
	if want := map[uint32]int64{1: 40e9, 2: 100e9, 200: 40e9, 201: 40e9, 202: 100e9, 203: 100e9}; !reflect.DeepEqual(c.PortBps, want) {
		t.Errorf("PortBps = %v, want %v", c.PortBps, want)
	}
	w1 := &injector.PFCWatchdog{Detection: 50 * time.Millisecond, Restoration: 100 * time.Millisecond}
	ws := &injector.PFCWatchdog{Detection: 10 * time.Millisecond, Restoration: 20 * time.Millisecond}
	if want := map[uint32]*injector.PFCWatchdog{1: w1, 2: nil, 200: w1, 201: ws, 202: ws, 203: nil}; c.Watchdog != nil || !reflect.DeepEqual(c.WatchdogPorts, want) {
		t.Errorf("Watchdog %+v, WatchdogPorts %+v; want none and %+v", c.Watchdog, c.WatchdogPorts, want)
	}
	if c.Lossless != 1<<3 {
		t.Errorf("Lossless = %#x, want priority 3", c.Lossless)
	}
}
