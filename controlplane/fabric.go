package controlplane

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"

	"github.com/netlumina/lumina/config"
)

// MaxSwitches is how many logical switches lumina.p4 partitions its ports
// into (NUM_SWITCHES: ids 0..31).
const MaxSwitches = 32

// Sizes of the fabric's tables in lumina.p4.
const (
	MaxFabricForward = 16384 // Ingress.fabric_forward (FABRIC_ROUTES)
	MaxECNRedPort    = 8192  // Egress.ecn_red_port
)

// Fabric is a test's fabric of logical switches on the one switch
// (Ports.Fabric; nil: the one switch of a test without a fabric): which
// logical switch each port is in, the route between each ordered pair of
// hosts, where each flow is observed, and each switch's ECN marking. The
// run driver fills it from the test's resolved topology.
type Fabric struct {
	// PortSwitch is the logical switch id (0..MaxSwitches−1) of every
	// port: the hosts', the dumpers' and both ends of every
	// switch-to-switch link. Each becomes an Ingress.port_switch entry.
	PortSwitch map[uint32]uint8
	// Routes are the routes between hosts, one per ordered pair that
	// exchanges traffic (both (a, b) and (b, a) for a connection between
	// a and b).
	Routes []Route
	// Observed is the logical switch at which each flow
	// (generator.Connection.Flow) is observed: its connections' entries
	// and events are at that switch's in-port on the route. A flow not
	// listed is observed at the first switch of its route (its requester's
	// switch).
	Observed map[string]uint8
	// ECN is each logical switch's marking by queue depth (switch.ecn;
	// absent or nil: none): Egress.ecn_red_port entries for every port of
	// the switch, with Intent.DSCPToPriority and Intent.CellBytes.
	// Intent.ECN, if also set, stays the default of ports without entries
	// (Egress.ecn_red).
	ECN map[uint8]*config.ECN
}

// Route is the path of the frames from host From to host To (indices in
// Ports.Hosts): the hops in order, the first one's In the port of From,
// the last one's Out the port of To.
type Route struct {
	From, To int
	Hops     []Hop
}

// Hop is a route's passage through a logical switch: in by port In, out by
// port Out.
type Hop struct {
	Switch  uint8
	In, Out uint32
}

// PortSwitchEntry is an Ingress.port_switch entry: ingress port → logical
// switch.
type PortSwitchEntry struct {
	Port   uint32
	Switch uint8
}

// FabricForwardEntry is an Ingress.fabric_forward entry: at logical switch
// Switch, a frame from MAC Src to MAC Dst leaves by Port.
type FabricForwardEntry struct {
	Switch   uint8
	Src, Dst [6]byte
	Port     uint32
}

// ECNRedPortEntry is an Egress.ecn_red_port entry: RED for packets with
// the entry's DSCP leaving by Port.
type ECNRedPortEntry struct {
	Port uint32
	ECNRedEntry
}

// Action returns ecn_red_port's action for e and its parameters.
func (e *ECNRedPortEntry) Action() (name string, params []ActionParam) { return e.ECNRedEntry.Action() }

// ErrFabric is returned, wrapped, for a fabric that does not fit the hosts
// or the switch.
var ErrFabric = errors.New("controlplane: invalid fabric")

// fabricPlan is the fabric's part of a plan and the lookups Translate
// needs: the route of each ordered host pair.
type fabricPlan struct {
	f      *Fabric
	routes map[[2]int]*Route
}

// planFabric checks the fabric against the hosts and writes its
// port_switch, fabric_forward and ecn_red_port entries into p.
func planFabric(f *Fabric, ports *Ports, in *Intent, p *Plan) (*fabricPlan, error) {
	fp := &fabricPlan{f: f, routes: map[[2]int]*Route{}}
	for _, port := range slices.Sorted(maps.Keys(f.PortSwitch)) {
		sw := f.PortSwitch[port]
		if sw >= MaxSwitches || port > 511 {
			return nil, fmt.Errorf("%w: port %d in switch %d (ports 0..511, switches 0..%d)", ErrFabric, port, sw, MaxSwitches-1)
		}
		p.PortSwitch = append(p.PortSwitch, PortSwitchEntry{Port: port, Switch: sw})
	}
	for _, h := range ports.Hosts {
		if _, ok := f.PortSwitch[h.Port]; !ok {
			return nil, fmt.Errorf("%w: host %s's port %d is in no switch", ErrFabric, h.Name, h.Port)
		}
	}
	type fkey struct {
		sw       uint8
		src, dst [6]byte
	}
	seen := map[fkey]uint32{}
	for i := range f.Routes {
		r := &f.Routes[i]
		if r.From < 0 || r.From >= len(ports.Hosts) || r.To < 0 || r.To >= len(ports.Hosts) || r.From == r.To {
			return nil, fmt.Errorf("%w: route %d → %d: not between two of the %d hosts", ErrFabric, r.From, r.To, len(ports.Hosts))
		}
		from, to := ports.Hosts[r.From], ports.Hosts[r.To]
		if len(r.Hops) == 0 || r.Hops[0].In != from.Port || r.Hops[len(r.Hops)-1].Out != to.Port {
			return nil, fmt.Errorf("%w: the route %s → %s must enter by port %d and leave by port %d", ErrFabric, from.Name, to.Name, from.Port, to.Port)
		}
		k := [2]int{r.From, r.To}
		if fp.routes[k] != nil {
			return nil, fmt.Errorf("%w: two routes %s → %s", ErrFabric, from.Name, to.Name)
		}
		fp.routes[k] = r
		for _, h := range r.Hops {
			if sw, ok := f.PortSwitch[h.In]; !ok || sw != h.Switch {
				return nil, fmt.Errorf("%w: route %s → %s enters switch %d by port %d, which is not one of its ports", ErrFabric, from.Name, to.Name, h.Switch, h.In)
			}
			if sw, ok := f.PortSwitch[h.Out]; !ok || sw != h.Switch {
				return nil, fmt.Errorf("%w: route %s → %s leaves switch %d by port %d, which is not one of its ports", ErrFabric, from.Name, to.Name, h.Switch, h.Out)
			}
			fk := fkey{h.Switch, from.MAC, to.MAC}
			if out, dup := seen[fk]; dup {
				return nil, fmt.Errorf("%w: route %s → %s passes switch %d twice (ports %d and %d)", ErrFabric, from.Name, to.Name, h.Switch, out, h.Out)
			}
			seen[fk] = h.Out
			p.FabricForward = append(p.FabricForward, FabricForwardEntry{Switch: h.Switch, Src: from.MAC, Dst: to.MAC, Port: h.Out})
		}
	}
	if len(p.FabricForward) > MaxFabricForward {
		return nil, fmt.Errorf("%w: %d fabric_forward entries, the switch holds %d", ErrFabric, len(p.FabricForward), MaxFabricForward)
	}
	for _, sw := range slices.Sorted(maps.Keys(f.ECN)) {
		reds := ECNRed(f.ECN[sw], in.DSCPToPriority, in.CellBytes)
		for _, pe := range p.PortSwitch {
			if pe.Switch != sw {
				continue
			}
			for _, e := range reds {
				p.ECNRedPort = append(p.ECNRedPort, ECNRedPortEntry{Port: pe.Port, ECNRedEntry: e})
			}
		}
	}
	if len(p.ECNRedPort) > MaxECNRedPort {
		return nil, fmt.Errorf("%w: %d ecn_red_port entries, the switch holds %d", ErrFabric, len(p.ECNRedPort), MaxECNRedPort)
	}
	return fp, nil
}

// observed returns the logical switch at which flow is observed on the
// route from host a to host b.
func (fp *fabricPlan) observed(flow string, a, b int) (uint8, error) {
	if sw, ok := fp.f.Observed[flow]; ok {
		return sw, nil
	}
	r := fp.routes[[2]int{a, b}]
	if r == nil {
		return 0, fmt.Errorf("%w: no route from host %d to host %d", ErrFabric, a, b)
	}
	return r.Hops[0].Switch, nil
}

// inPort returns the port by which the frames from host a to host b enter
// logical switch sw.
func (fp *fabricPlan) inPort(ports *Ports, a, b int, sw uint8) (uint32, error) {
	r := fp.routes[[2]int{a, b}]
	if r == nil {
		return 0, fmt.Errorf("%w: no route from %s to %s", ErrFabric, ports.Hosts[a].Name, ports.Hosts[b].Name)
	}
	for _, h := range r.Hops {
		if h.Switch == sw {
			return h.In, nil
		}
	}
	return 0, fmt.Errorf("%w: switch %d, where the connection is observed, is not on the route from %s to %s", ErrFabric, sw, ports.Hosts[a].Name, ports.Hosts[b].Name)
}

// The plan's fabric entries as describeEntry renders them.
func planPortSwitch(p *Plan) map[string]string {
	m := map[string]string{}
	for _, e := range p.PortSwitch {
		m[fmt.Sprintf("ig_intr_md.ingress_port=%d", e.Port)] = describeAction("Ingress.set_switch", []ActionParam{{Value: uint64(e.Switch)}})
	}
	return m
}

func planFabricForward(p *Plan) map[string]string {
	m := map[string]string{}
	for _, f := range p.FabricForward {
		m[fmt.Sprintf("meta.switch_id=%d hdr.ethernet.src_addr=%s hdr.ethernet.dst_addr=%s", f.Switch, net.HardwareAddr(f.Src[:]), net.HardwareAddr(f.Dst[:]))] =
			describeAction("Ingress.forward", []ActionParam{{Value: uint64(f.Port)}})
	}
	return m
}

func planECNRedPort(p *Plan) map[string]string {
	m := map[string]string{}
	for _, e := range p.ECNRedPort {
		act, params := e.Action()
		m[fmt.Sprintf("eg_intr_md.egress_port=%d hdr.ipv4.dscp=%d", e.Port, e.DSCP)] = describeAction(act, params)
	}
	return m
}
