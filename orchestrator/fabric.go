package orchestrator

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/sim"
)

// fabric is the driver's view of a test with several switches (test keys
// switches, links, routing; docs/fabric.md): the logical switches of the
// one software switch, the cables between their ports and every host's
// cable, the routes and the switch each flow is observed at. Nil: one
// switch, as every test before fabrics. Port numbers are global (the
// ports of one software switch or Tofino partitioned into logical
// switches), as config.Test.Topology numbers them: on sim and netns host
// i keeps config.HostPort(i), the l-th switch-to-switch link has ports
// 200+2l (its a end) and 201+2l (its b end); on remote they are the real
// switch's ports, each host's nic.switch-port and each link's a-port and
// b-port (the two ends of its loopback cable).
type fabric struct {
	// switches are the switches' names by id (the mirror copies' switch).
	switches []string
	// hosts are the hosts' cables, t.Hosts order.
	hosts []hostCable
	// links are the switch-to-switch links, in the links file order.
	links []switchLink
	// routes are the routes of the flows' host pairs, both ways, in the
	// order of the flows that first join each pair.
	routes []hostRoute
	// flows are the flows' names as their connections carry them
	// (generator.Connection.Flow), t.Flows order.
	flows []string
	// observe is each flow's observed switch (by id), t.Flows order.
	observe []int
	// watchdogs are the switches' PFC watchdogs by id (nil: none).
	watchdogs []*injector.PFCWatchdog
	// ecn is each switch's switch.ecn by id (nil: none).
	ecn []*config.ECN
}

// hostRoute is the route from host from to host to (t.Hosts indices).
type hostRoute struct {
	from, to int
	hops     []config.Hop
}

// hostCable is a host's cable to its switch.
type hostCable struct {
	sw   int    // the switch's id
	port uint32 // the switch port (global)
	cable
}

// switchLink is a switch-to-switch link: ports[0] (200+2l; a-port on
// remote) on switch sw[0], its a end, and ports[1] (201+2l; b-port) on
// sw[1], its b end.
type switchLink struct {
	sw    [2]int
	ports [2]uint32
	cable
}

// cable is a link's speed and delay as the test sets them.
type cable struct {
	// gbps is the link's speed (0: the hosts' line rate).
	gbps float64
	// delayNs is its propagation delay (0: the testbed's default, as the
	// hosts' links: sim.DefaultDelay on sim).
	delayNs int64
}

// newFabric resolves t's fabric (nil without switches) from its topology
// (config.Test.Topology), routes (config.Test.Route) and observed
// switches (config.Test.ObservedSwitch).
func newFabric(t *config.Test) *fabric {
	if !t.Fabric() {
		return nil
	}
	tp := t.Topology()
	fb := &fabric{switches: tp.Switches, hosts: make([]hostCable, len(t.Hosts))}
	aEnd := true // Topology lists each link's a end, then its b end
	for _, p := range tp.Ports {
		switch {
		case p.Host >= 0:
			fb.hosts[p.Host] = hostCable{sw: p.Switch, port: p.Port}
		case aEnd: // its b end is p.PeerPort, on p.PeerSwitch
			c := cable{gbps: p.Gbps, delayNs: p.DelayNs}
			fb.links = append(fb.links, switchLink{sw: [2]int{p.Switch, p.PeerSwitch}, ports: [2]uint32{p.Port, p.PeerPort}, cable: c})
			aEnd = false
		default:
			aEnd = true
		}
	}
	seen := map[[2]int]bool{}
	for f, fl := range t.Flows {
		a, b := t.HostIndex(fl.From), t.HostIndex(fl.To)
		fb.observe = append(fb.observe, t.ObservedSwitch(f))
		if seen[[2]int{a, b}] || seen[[2]int{b, a}] {
			continue
		}
		seen[[2]int{a, b}] = true
		for _, d := range [][2]int{{a, b}, {b, a}} {
			fb.routes = append(fb.routes, hostRoute{from: d[0], to: d[1], hops: t.Route(d[0], d[1])})
		}
	}
	for _, fl := range t.Flows {
		name := ""
		if t.HostsForm {
			name = fl.Name // as globalConns names the connections
		}
		fb.flows = append(fb.flows, name)
	}
	for i := range fb.switches {
		fb.ecn = append(fb.ecn, t.SwitchConfig(i).ECN)
		fb.watchdogs = append(fb.watchdogs, injectorWatchdog(t.SwitchConfig(i).PFCWatchdog))
	}
	return fb
}

// controlplane is the fabric as the control plane installs it
// (controlplane.Ports.Fabric): every host, link and dumper port in its
// logical switch (the dumpers in switch 0: nothing enters by their
// ports), the routes by host index, each flow's observed switch by the
// name its connections carry and each switch's ECN marking.
func (fb *fabric) controlplane(dumperPorts []uint32) *controlplane.Fabric {
	f := &controlplane.Fabric{PortSwitch: map[uint32]uint8{}, Observed: map[string]uint8{}, ECN: map[uint8]*config.ECN{}}
	for _, h := range fb.hosts {
		f.PortSwitch[h.port] = uint8(h.sw)
	}
	for _, l := range fb.links {
		for end, p := range l.ports {
			f.PortSwitch[p] = uint8(l.sw[end])
		}
	}
	for _, p := range dumperPorts {
		f.PortSwitch[p] = 0
	}
	for _, r := range fb.routes {
		cr := controlplane.Route{From: r.from, To: r.to}
		for _, h := range r.hops {
			cr.Hops = append(cr.Hops, controlplane.Hop{Switch: uint8(h.Switch), In: h.In, Out: h.Out})
		}
		f.Routes = append(f.Routes, cr)
	}
	for i, sw := range fb.observe {
		f.Observed[fb.flows[i]] = uint8(sw)
	}
	for i, e := range fb.ecn {
		if e != nil {
			f.ECN[uint8(i)] = e
		}
	}
	return f
}

// ecnOn reports whether a switch of the fabric marks by queue depth.
func (fb *fabric) ecnOn() bool {
	for _, e := range fb.ecn {
		if e != nil {
			return true
		}
	}
	return false
}

// simLink is the sim.LinkConfig of a cable named name whose default speed
// is lineGbps: the cable's gbps and delay-ns when the test gives them, the
// sim defaults otherwise.
func (c cable) simLink(name string, lineGbps float64) sim.LinkConfig {
	return sim.LinkConfig{Name: name, BandwidthBps: c.bps(lineGbps), Delay: time.Duration(c.delayNs)}
}

// bps is the cable's speed in bits per second, lineGbps when the test
// gives none.
func (c cable) bps(lineGbps float64) int64 {
	if c.gbps > 0 {
		return int64(c.gbps * 1e9)
	}
	return int64(lineGbps * 1e9)
}

// switchOf returns the id of the switch that holds port p, or -1.
func (fb *fabric) switchOf(p uint32) int {
	for _, h := range fb.hosts {
		if h.port == p {
			return h.sw
		}
	}
	for _, l := range fb.links {
		for end := range 2 {
			if l.ports[end] == p {
				return l.sw[end]
			}
		}
	}
	return -1
}

// linkIface names the software switch's interface of link l's end (sim
// port name, netns veth name): "l<l>a", "l<l>b".
func linkIface(l, end int) string { return "l" + strconv.Itoa(l) + string("ab"[end]) }

// model is the fabric as the run record keeps it (model.Meta.Fabric):
// every switch port with its host or peer, in port order, the routes and
// the observed switch of each flow (by name). A host's cable runs at its
// NIC's line rate, hostGbps[i] (t.Hosts order); a switch-to-switch link
// at its gbps, else lineGbps (the hosts' line rate).
func (fb *fabric) model(hostNames, flowNames []string, hostGbps []float64, lineGbps float64) *model.Fabric {
	m := &model.Fabric{Switches: fb.switches, Observe: map[string]string{}}
	var ports []model.FabricPort
	for i, h := range fb.hosts {
		ports = append(ports, model.FabricPort{Port: h.port, Switch: fb.switches[h.sw], Host: hostNames[i],
			Gbps: float64(h.bps(hostGbps[i])) / 1e9, DelayNs: h.delay()})
	}
	for _, l := range fb.links {
		for end := range 2 {
			ports = append(ports, model.FabricPort{Port: l.ports[end], Switch: fb.switches[l.sw[end]],
				PeerSwitch: fb.switches[l.sw[1-end]], PeerPort: l.ports[1-end], Gbps: float64(l.bps(lineGbps)) / 1e9, DelayNs: l.delay()})
		}
	}
	slices.SortFunc(ports, func(a, b model.FabricPort) int { return cmp.Compare(a.Port, b.Port) })
	m.Ports = ports
	for _, r := range fb.routes {
		mr := model.Route{From: hostNames[r.from], To: hostNames[r.to]}
		for _, h := range r.hops {
			mr.Hops = append(mr.Hops, model.Hop{Switch: fb.switches[h.Switch], In: h.In, Out: h.Out})
		}
		m.Routes = append(m.Routes, mr)
	}
	for f, sw := range fb.observe {
		m.Observe[flowNames[f]] = fb.switches[sw]
	}
	return m
}

// delay is the cable's delay in ns as the sim testbed applies it.
func (c cable) delay() int64 {
	if c.delayNs == 0 {
		return int64(sim.DefaultDelay)
	}
	return c.delayNs
}
