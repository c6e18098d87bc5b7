package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/netlumina/lumina/roce"
)

// Fabric is the topology of a run with several switches (test keys
// switches, links, routing; docs/fabric.md), as the run record keeps it
// for the analyzers: the switches by their id in mirror copies, every
// switch port with what is cabled to it, the route of every host pair
// and the switch each flow's per-connection checks read. Nil (Meta.Fabric
// absent): one switch, as every trace before fabrics.
type Fabric struct {
	// Switches are the switches' names, indexed by the switch id their
	// mirror copies carry (roce.MirrorMeta.Switch).
	Switches []string `json:"switches"`
	// Ports are every switch port a host or another switch is cabled to,
	// in port order.
	Ports []FabricPort `json:"ports"`
	// Routes are the paths of every ordered pair of hosts that exchange
	// packets (the flows' from and to, both ways).
	Routes []Route `json:"routes,omitempty"`
	// Observe maps a flow to the switch whose copies of its packets the
	// per-connection checks read: where its events are applied.
	Observe map[string]string `json:"observe,omitempty"`
}

// FabricPort is one switch port and what its cable leads to: a host, or a
// port of another switch. Port numbers are global: the ports of one
// software switch or Tofino partitioned into logical switches.
type FabricPort struct {
	Port   uint32 `json:"port"`
	Switch string `json:"switch"`
	// Host is the host cabled to the port ("" for a switch-to-switch link).
	Host string `json:"host,omitempty"`
	// PeerSwitch and PeerPort are the switch port at the other end of a
	// switch-to-switch link.
	PeerSwitch string  `json:"peer_switch,omitempty"`
	PeerPort   uint32  `json:"peer_port,omitempty"`
	Gbps       float64 `json:"gbps,omitempty"`
	// DelayNs is the cable's propagation delay as the sim testbed applies
	// it; 0 (absent) on netns and remote, where it is the cable's own.
	DelayNs int64 `json:"delay_ns,omitempty"`
}

// Route is the path of the packets from host From to host To: the
// switches they cross in order, each with the port they enter and leave
// by.
type Route struct {
	From string `json:"from"`
	To   string `json:"to"`
	Hops []Hop  `json:"hops"`
}

// Hop is one switch of a Route.
type Hop struct {
	Switch string `json:"switch"`
	In     uint32 `json:"in"`
	Out    uint32 `json:"out"`
}

// MaxDeadlockNs is the longest deadlock window (Params.DeadlockNs): the
// test key deadlock-ms is at most 60000.
const MaxDeadlockNs = 60000 * 1000000

// SwitchIDs maps each switch's name to its id: its index in Switches, the
// id its mirror copies carry.
func (f *Fabric) SwitchIDs() map[string]int {
	ids := make(map[string]int, len(f.Switches))
	for i, s := range f.Switches {
		ids[s] = i
	}
	return ids
}

// validate checks that a run record's fabric is one the analyzers can
// read: at most roce.MaxSwitches switches with distinct non-empty names
// (a mirror copy's switch id indexes them), each port listed once with a
// port number a mirror copy can carry (16 bits) and a listed switch (its
// peer too, whose port is listed and cabled back to it), and routes and observed switches naming listed switches. A
// nil Fabric (one switch) is valid.
func (f *Fabric) validate() error {
	if f == nil {
		return nil
	}
	if len(f.Switches) == 0 || len(f.Switches) > roce.MaxSwitches {
		return fmt.Errorf("%d switches (want 1..%d)", len(f.Switches), roce.MaxSwitches)
	}
	known := map[string]bool{}
	for i, s := range f.Switches {
		if s == "" {
			return fmt.Errorf("switch %d has no name", i)
		}
		if known[s] {
			return fmt.Errorf("switch %q appears twice", s)
		}
		known[s] = true
	}
	ports := map[uint32]bool{}
	for _, p := range f.Ports {
		if p.Port > 0xFFFF {
			return fmt.Errorf("port %d beyond 16 bits", p.Port)
		}
		if ports[p.Port] {
			return fmt.Errorf("port %d appears twice", p.Port)
		}
		ports[p.Port] = true
		if !known[p.Switch] {
			return fmt.Errorf("port %d: no switch %q (switches: %s)", p.Port, p.Switch, strings.Join(f.Switches, ", "))
		}
		if p.PeerSwitch != "" && !known[p.PeerSwitch] {
			return fmt.Errorf("port %d: peer_switch: no switch %q (switches: %s)", p.Port, p.PeerSwitch, strings.Join(f.Switches, ", "))
		}
		if p.PeerSwitch != "" && p.PeerPort > 0xFFFF {
			return fmt.Errorf("port %d: peer_port %d beyond 16 bits", p.Port, p.PeerPort)
		}
	}
	byPort := map[uint32]FabricPort{}
	for _, p := range f.Ports {
		byPort[p.Port] = p
	}
	for _, p := range f.Ports {
		if p.PeerSwitch == "" {
			continue
		}
		q, ok := byPort[p.PeerPort]
		if !ok || q.Switch != p.PeerSwitch || q.PeerSwitch != p.Switch || q.PeerPort != p.Port {
			return fmt.Errorf("port %d: its peer, %s port %d, is not listed as %s's port cabled back to it", p.Port, p.PeerSwitch, p.PeerPort, p.PeerSwitch)
		}
	}
	for _, r := range f.Routes {
		for _, h := range r.Hops {
			if !known[h.Switch] {
				return fmt.Errorf("route %s → %s: no switch %q (switches: %s)", r.From, r.To, h.Switch, strings.Join(f.Switches, ", "))
			}
		}
	}
	for _, fl := range slices.Sorted(maps.Keys(f.Observe)) {
		if sw := f.Observe[fl]; !known[sw] {
			return fmt.Errorf("observe: flow %q: no switch %q (switches: %s)", fl, sw, strings.Join(f.Switches, ", "))
		}
	}
	return nil
}
