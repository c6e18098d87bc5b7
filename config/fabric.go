package config

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The fabric form: several named switches, the links that cable hosts
// and switches, and the routes between hosts (docs/fabric.md). Its keys
// decode through the schema like the rest: a switch is a switchSection,
// a link a linkSection.

// Fabric limits and constants.
const (
	// MaxSwitches bounds switches (1..MaxSwitches): a mirror copy names
	// its switch in 5 bits (roce.MirrorMeta.Switch).
	MaxSwitches = 32
	// MaxSwitchLinks bounds the switch-to-switch links: their ports
	// 200..499 (FirstLinkPort+2l and +2l+1) fit the switch's 9-bit ports.
	MaxSwitchLinks = 150
	// FirstLinkPort is the port of the a end of the first switch-to-switch
	// link: the l-th such link (0-based, in links file order, counting
	// only switch-to-switch links) has ports FirstLinkPort+2l (a end) and
	// FirstLinkPort+2l+1 (b end).
	FirstLinkPort = 200
	// RoutingShortest is the one routing: fewest switches, equal-cost
	// paths chosen per host pair by a seeded hash (Test.Route).
	RoutingShortest = "shortest"
	// MaxDeadlockMs bounds deadlock-ms.
	MaxDeadlockMs = 60000
	// OneSwitchName is the name of the one switch of a test without
	// switches, in Topology.Switches.
	OneSwitchName = "switch"
)

// Switch ports of the first hosts: the two-host form's requester and
// responder on 1 and 2, host i ≥ 2 on hostPort2+i-2 (32..93 for 64 hosts).
const (
	portRequester = 1
	portResponder = 2
	hostPort2     = 32
)

// HostPort returns the switch port of host i (Test.Hosts order) on the
// sim and netns testbeds, in both forms: 1, 2, then 32+i-2. Ports are
// global in a fabric (one switch partitioned into logical switches,
// docs/fabric.md), so a host keeps its port whichever switch it is on.
func HostPort(i int) uint32 {
	switch i {
	case 0:
		return portRequester
	case 1:
		return portResponder
	}
	return uint32(hostPort2 + i - 2)
}

// HostSwitchPort returns the switch port of host i (Test.Hosts order)
// on t's testbed: its nic.switch-port on testbed remote (the port of the
// real switch it is cabled to), HostPort(i) on sim and netns.
func (t *Test) HostSwitchPort(i int) uint32 {
	if t.Testbed == TestbedRemote && i >= 0 && i < len(t.Hosts) {
		return uint32(t.Hosts[i].NIC.SwitchPort)
	}
	return HostPort(i)
}

// NamedSwitch is one entry of switches: a switch and its name.
type NamedSwitch struct {
	// Name is the switch's key in switches.
	Name string
	// Switch takes every key of the top-level switch.
	Switch Switch
	// Pos is where the entry (its name) is in Test.File.
	Pos Pos
}

// Link is one entry of links: a cable between a host and a switch, or
// between two switches.
type Link struct {
	// A and B name a host or a switch each (not two hosts). YAML keys a
	// and b; required.
	A, B string
	// Gbps is a switch-to-switch link's rate in Gb/s. YAML key gbps;
	// default 0: the hosts' line rate (the NIC's, from its personality).
	// A host's link runs at its NIC's line rate: refused there.
	Gbps float64
	// DelayNs is a switch-to-switch link's propagation delay in ns. YAML
	// key delay-ns; default 0 (as the hosts' links). Refused on a host's
	// link.
	DelayNs int
	// APort and BPort are the switch ports (device ports, as a host's
	// nic.switch-port) of a switch-to-switch link's a and b ends on
	// testbed remote: the two ports of one switch that its loopback cable
	// joins. YAML keys a-port and b-port; -1 when not given (a Link built
	// in Go sets them). Required on testbed remote for a link between
	// switches; refused on sim and netns, which number a link's ports
	// FirstLinkPort+2l and +2l+1, and on a host's link.
	APort, BPort int
	// Pos is where the entry starts in Test.File.
	Pos Pos
}

// Topology is a test's switches and their ports, resolved from switches
// and links (or the one switch of a test without them).
type Topology struct {
	// Switches are the switch names by id (switches file order; the one
	// switch of a test without switches is OneSwitchName).
	Switches []string
	// Ports are every host port, in host order, then the ports of the
	// switch-to-switch links in links order, a end before b end.
	Ports []TopoPort
}

// TopoPort is one port of a switch.
type TopoPort struct {
	// Port is the global port number: HostSwitchPort(Host) for a host's
	// port; for the ends of switch-to-switch link l, FirstLinkPort+2l or
	// +2l+1 on sim and netns, its a-port or b-port on testbed remote.
	Port uint32
	// Switch is the id of the switch the port belongs to.
	Switch int
	// Host is the host cabled to the port, or -1 for a switch link.
	Host int
	// PeerPort is the port at the other end of a switch link (0 for a
	// host's port: the NIC).
	PeerPort uint32
	// PeerSwitch is the switch at the other end, or -1 for a host's port.
	PeerSwitch int
	// Gbps is the link's rate; 0 is the hosts' line rate.
	Gbps float64
	// DelayNs is the link's propagation delay in ns.
	DelayNs int64
	// Pos is where the link is in Test.File (the host's entry in a test
	// without switches).
	Pos Pos
}

// Hop is one switch on a route.
type Hop struct {
	// Switch is the switch's id.
	Switch int
	// In is the port where packets of the route enter the switch, Out the
	// one where they leave it.
	In, Out uint32
}

// Fabric reports whether t has switches (the fabric form).
func (t *Test) Fabric() bool { return len(t.Switches) > 0 }

// SwitchConfig returns the configuration of switch i: Switches[i].Switch
// in the fabric form, Switch for i 0 without switches; nil for another i.
func (t *Test) SwitchConfig(i int) *Switch {
	if !t.Fabric() {
		if i == 0 {
			return &t.Switch
		}
		return nil
	}
	if i < 0 || i >= len(t.Switches) {
		return nil
	}
	return &t.Switches[i].Switch
}

// SwitchIndex returns the id of the switch named name, or -1. Without
// switches the one switch is OneSwitchName, id 0.
func (t *Test) SwitchIndex(name string) int {
	if !t.Fabric() {
		if name == OneSwitchName {
			return 0
		}
		return -1
	}
	for i := range t.Switches {
		if t.Switches[i].Name == name {
			return i
		}
	}
	return -1
}

// graph is the switch graph of a fabric as far as it resolves: links
// naming unknown names, two hosts or a host's second switch are left out,
// so that it serves validation as well as a valid Test.
type graph struct {
	n      int               // switches
	hostSw []int             // per host: its switch, or -1
	hostAt []Pos             // per host: its link's position
	adj    [][]int           // per switch: linked switches, ascending
	port   map[[2]int]uint32 // (switch, neighbour): the port of switch toward it
	ports  []TopoPort        // the switch-to-switch link ports, in Topology order
}

// graph resolves t's links.
func (t *Test) graph() *graph {
	g := &graph{n: len(t.Switches), port: map[[2]int]uint32{}}
	g.hostSw = make([]int, len(t.Hosts))
	g.hostAt = make([]Pos, len(t.Hosts))
	hostIdx := make(map[string]int, len(t.Hosts))
	for i := len(t.Hosts) - 1; i >= 0; i-- { // the first of a name wins, as HostIndex
		hostIdx[t.Hosts[i].Name] = i
	}
	swIdx := make(map[string]int, len(t.Switches))
	for i := len(t.Switches) - 1; i >= 0; i-- {
		swIdx[t.Switches[i].Name] = i
	}
	index := func(m map[string]int, name string) int {
		if i, ok := m[name]; ok {
			return i
		}
		return -1
	}
	for i := range g.hostSw {
		g.hostSw[i] = -1
	}
	g.adj = make([][]int, g.n)
	l := 0
	for _, lk := range t.Links {
		ha, hb := index(hostIdx, lk.A), index(hostIdx, lk.B)
		sa, sb := index(swIdx, lk.A), index(swIdx, lk.B)
		switch {
		case sa >= 0 && sb >= 0 && sa != sb:
			if _, dup := g.port[[2]int{sa, sb}]; dup || l >= MaxSwitchLinks {
				continue
			}
			pa, pb := uint32(FirstLinkPort+2*l), uint32(FirstLinkPort+2*l+1)
			if t.Testbed == TestbedRemote {
				pa, pb = uint32(lk.APort), uint32(lk.BPort)
			}
			l++
			g.port[[2]int{sa, sb}], g.port[[2]int{sb, sa}] = pa, pb
			g.adj[sa] = append(g.adj[sa], sb)
			g.adj[sb] = append(g.adj[sb], sa)
			g.ports = append(g.ports,
				TopoPort{Port: pa, Switch: sa, Host: -1, PeerPort: pb, PeerSwitch: sb, Gbps: lk.Gbps, DelayNs: int64(lk.DelayNs), Pos: lk.Pos},
				TopoPort{Port: pb, Switch: sb, Host: -1, PeerPort: pa, PeerSwitch: sa, Gbps: lk.Gbps, DelayNs: int64(lk.DelayNs), Pos: lk.Pos})
		case ha >= 0 && sb >= 0 && g.hostSw[ha] < 0:
			g.hostSw[ha], g.hostAt[ha] = sb, lk.Pos
		case hb >= 0 && sa >= 0 && g.hostSw[hb] < 0:
			g.hostSw[hb], g.hostAt[hb] = sa, lk.Pos
		}
	}
	for i := range g.adj {
		slices.Sort(g.adj[i])
	}
	return g
}

// Topology returns t's switches and ports. Without switches it is one
// switch, OneSwitchName, with a port HostSwitchPort(i) per host. Ports are
// numbered as the testbed's switch has them (HostSwitchPort; a link's
// ends FirstLinkPort+2l and +2l+1 on sim and netns, its a-port and b-port
// on remote; docs/fabric.md). It is computed
// from t's fields on each call (a few hundred ports at most), so it always
// describes t as it is; for a Test that Parse returned it is complete
// (every host on a switch, every link resolved).
func (t *Test) Topology() *Topology {
	if !t.Fabric() {
		tp := &Topology{Switches: []string{OneSwitchName}}
		for i := range t.Hosts {
			tp.Ports = append(tp.Ports, TopoPort{Port: t.HostSwitchPort(i), Switch: 0, Host: i, PeerSwitch: -1, Pos: t.Hosts[i].Pos})
		}
		return tp
	}
	g := t.graph()
	tp := &Topology{}
	for i := range t.Switches {
		tp.Switches = append(tp.Switches, t.Switches[i].Name)
	}
	for i, s := range g.hostSw {
		if s >= 0 {
			tp.Ports = append(tp.Ports, TopoPort{Port: t.HostSwitchPort(i), Switch: s, Host: i, PeerSwitch: -1, Pos: g.hostAt[i]})
		}
	}
	tp.Ports = append(tp.Ports, g.ports...)
	return tp
}

// HostSwitch returns the id of the switch host is cabled to, or -1.
func (tp *Topology) HostSwitch(host int) int {
	for i := range tp.Ports {
		if tp.Ports[i].Host == host && host >= 0 {
			return tp.Ports[i].Switch
		}
	}
	return -1
}

// Port returns the port numbered p, or nil.
func (tp *Topology) Port(p uint32) *TopoPort {
	for i := range tp.Ports {
		if tp.Ports[i].Port == p {
			return &tp.Ports[i]
		}
	}
	return nil
}

// Route returns the switches that packets from host from to host to cross
// (host indices), with each switch's in and out port; nil if from or to
// is not a host, they are the same, or no path joins them. Without
// switches it is one hop, HostSwitchPort(from) to HostSwitchPort(to).
// Ports are numbered as in Topology.
//
// Routes are per host pair and symmetric: Route(b, a) is Route(a, b)
// reversed, In and Out swapped. A flow's path sets the route of its host
// pair, both ways. Otherwise (routing shortest) the route has the fewest
// switches; among the equal-cost paths from the lower-indexed host's
// switch to the other's, in lexicographic order of their switch-id
// sequences, it is the one whose 0-based index is FNV-1a-64 of (Seed,
// min(from,to), max(from,to)), each as 8 bytes little-endian, modulo
// their count. docs/fabric.md says why per host pair.
func (t *Test) Route(from, to int) []Hop {
	if from < 0 || to < 0 || from >= len(t.Hosts) || to >= len(t.Hosts) || from == to {
		return nil
	}
	if !t.Fabric() {
		return []Hop{{Switch: 0, In: t.HostSwitchPort(from), Out: t.HostSwitchPort(to)}}
	}
	g := t.graph()
	seq := t.switchPath(g, from, to)
	if seq == nil {
		return nil
	}
	hops := make([]Hop, len(seq))
	for k, s := range seq {
		hops[k].Switch = s
		if k == 0 {
			hops[k].In = t.HostSwitchPort(from)
		} else {
			hops[k].In = g.port[[2]int{s, seq[k-1]}]
		}
		if k == len(seq)-1 {
			hops[k].Out = t.HostSwitchPort(to)
		} else {
			hops[k].Out = g.port[[2]int{s, seq[k+1]}]
		}
	}
	return hops
}

// switchPath returns the switch ids from host from's switch to host to's:
// the explicit path of a flow of the pair, or the chosen shortest path;
// nil if there is none.
func (t *Test) switchPath(g *graph, from, to int) []int {
	sa, sb := g.hostSw[from], g.hostSw[to]
	if sa < 0 || sb < 0 {
		return nil
	}
	if p, ok := t.explicitPath(from, to); ok {
		return p
	}
	lo, hi := min(from, to), max(from, to)
	p := g.shortest(g.hostSw[lo], g.hostSw[hi], pairHash(t.Seed, lo, hi))
	if p != nil && lo != from {
		slices.Reverse(p)
	}
	return p
}

// explicitPath returns the path of the first flow between hosts from and
// to (either direction) that gives one, oriented from from's switch.
func (t *Test) explicitPath(from, to int) ([]int, bool) {
	for i := range t.Flows {
		fl := &t.Flows[i]
		if len(fl.Path) == 0 {
			continue
		}
		a, b := t.HostIndex(fl.From), t.HostIndex(fl.To)
		if !(a == from && b == to || a == to && b == from) {
			continue
		}
		p := make([]int, 0, len(fl.Path))
		for _, name := range fl.Path {
			s := t.SwitchIndex(name)
			if s < 0 {
				return nil, true
			}
			p = append(p, s)
		}
		if a != from {
			slices.Reverse(p)
		}
		return p, true
	}
	return nil, false
}

// pairHash is FNV-1a-64 of seed, lo and hi, each 8 bytes little-endian.
func pairHash(seed uint64, lo, hi int) uint64 {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(lo))
	binary.LittleEndian.PutUint64(b[16:], uint64(hi))
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64()
}

// shortest returns the shortest path from switch a to switch b with index
// h mod count among all shortest paths in lexicographic order, or nil if b
// is not reachable. It counts the paths (at most a few times 10^4 on 32
// switches) instead of listing them.
func (g *graph) shortest(a, b int, h uint64) []int {
	dist := make([]int, g.n)
	for i := range dist {
		dist[i] = -1
	}
	dist[b] = 0
	order := []int{b}
	for q := 0; q < len(order); q++ {
		v := order[q]
		for _, u := range g.adj[v] {
			if dist[u] < 0 {
				dist[u] = dist[v] + 1
				order = append(order, u)
			}
		}
	}
	if dist[a] < 0 {
		return nil
	}
	// count[v]: shortest paths from v to b, in BFS order (nearer first).
	count := make([]uint64, g.n)
	count[b] = 1
	for _, v := range order[1:] {
		for _, u := range g.adj[v] {
			if dist[u] == dist[v]-1 {
				count[v] += count[u]
			}
		}
	}
	k := h % count[a]
	path := []int{a}
	for v := a; v != b; {
		for _, u := range g.adj[v] {
			if dist[u] != dist[v]-1 {
				continue
			}
			if k < count[u] {
				v = u
				break
			}
			k -= count[u]
		}
		path = append(path, v)
	}
	return path
}

// ObservedSwitch returns the id of the switch where flow f's events apply
// and its connections are checked: the at of its events (data-pkt-events
// and pfc-events started by its packets), else the first switch of its
// route; 0 without switches, -1 if the flow has no route.
func (t *Test) ObservedSwitch(f int) int {
	if !t.Fabric() {
		return 0
	}
	if f < 0 || f >= len(t.Flows) {
		return -1
	}
	fl := &t.Flows[f]
	for _, ev := range fl.Events {
		if s := t.SwitchIndex(ev.At); ev.At != "" && s >= 0 {
			return s
		}
	}
	for _, ev := range t.PFCEvents {
		if s := t.SwitchIndex(ev.At); ev.At != "" && s >= 0 && ev.Start != nil && t.FlowIndex(ev.Start.Flow) == f {
			return s
		}
	}
	r := t.Route(t.HostIndex(fl.From), t.HostIndex(fl.To))
	if len(r) == 0 {
		return -1
	}
	return r[0].Switch
}

// --- decoding -----------------------------------------------------------

var routingNames = []string{RoutingShortest}

var linkSection = sect[Link]("`links`", []key{
	{name: "a", field: "A", req: true, dec: decHostRef},
	{name: "b", field: "B", req: true, dec: decHostRef},
	{name: "gbps", field: "Gbps", dec: decGbps, omit: true, doc: "the hosts' line rate"},
	{name: "delay-ns", field: "DelayNs", dec: ints(0, 1_000_000_000, "(delay-ns: the link's propagation delay)"), omit: true},
	{name: "a-port", field: "APort", dec: ints(0, maxSwitchPort, "(a-port: the remote switch's port of the link's a end)"), def: -1, omit: true, doc: "none (required on testbed `remote` between switches)"},
	{name: "b-port", field: "BPort", dec: ints(0, maxSwitchPort, "(b-port: the remote switch's port of the link's b end)"), def: -1, omit: true, doc: "none (required on testbed `remote` between switches)"},
})

// maxSwitchPort is the largest switch port (a Tofino's 9-bit device
// port), as nic.switch-port takes.
const maxSwitchPort = 511

// MaxLinkGbps bounds a link's gbps.
const MaxLinkGbps = 1600

// decGbps decodes a link's gbps: a rate 0 < gbps ≤ MaxLinkGbps.
func decGbps(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	s, ok := d.scalar(v, path, "a rate in Gb/s")
	if !ok {
		return
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(x > 0 && x <= MaxLinkGbps) {
		d.fail(v, path, "want a rate 0 < gbps <= %d in Gb/s, got %s", MaxLinkGbps, describe(v))
		return
	}
	f.SetFloat(x)
}

// decSwitches decodes switches: a mapping from switch name to switch, in
// file order.
func decSwitches(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	decNamed(d, v, path, "switch", "switches", 1, MaxSwitches, switchSection, ptr[[]NamedSwitch](f), func(name string, pos Pos) (NamedSwitch, func(*NamedSwitch) reflect.Value) {
		return NamedSwitch{Name: name, Pos: pos}, func(s *NamedSwitch) reflect.Value { return reflect.ValueOf(&s.Switch).Elem() }
	})
}

// decLinks decodes links: a list of linkSection mappings.
func decLinks(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	elems, ok := d.seq(v, path)
	if !ok {
		return
	}
	links := ptr[[]Link](f)
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		lk := Link{Pos: Pos{max(e.Line, 1), max(e.Column, 1)}}
		rv := reflect.ValueOf(&lk).Elem()
		setDefaults(linkSection, rv)
		d.nodes[p] = e
		if !d.section(e, p, linkSection, rv) {
			continue
		}
		*links = append(*links, lk)
		if len(*links) != i+1 {
			d.bad[path] = true // indices no longer match paths
		}
	}
}

// decFlowPath decodes a flow's path: a list of switch names.
func decFlowPath(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	l, ok := d.strList(v, path)
	if !ok {
		return
	}
	if len(l) == 0 {
		d.fail(v, path, "want the switches from the from-host's switch to the to-host's, got an empty list")
		return
	}
	f.Set(reflect.ValueOf(l))
}

// decSwitchRef decodes an event's at; validateFabric checks it.
func decSwitchRef(d *decoder, v *yaml.Node, path string, f, s reflect.Value) {
	decHostRef(d, v, path, f, s)
}

// encSwitch writes the top-level switch; nothing in the fabric form.
func encSwitch(s reflect.Value) *yaml.Node {
	t := ptr[Test](s)
	if t.Fabric() {
		return nil
	}
	return marshalSection(switchSection, s.FieldByName("Switch"))
}

// encSwitches writes switches; nothing without.
func encSwitches(s reflect.Value) *yaml.Node {
	t := ptr[Test](s)
	if !t.Fabric() {
		return nil
	}
	m := mapping()
	for i := range t.Switches {
		m.Content = append(m.Content, str(t.Switches[i].Name), marshalSection(switchSection, reflect.ValueOf(&t.Switches[i].Switch).Elem()))
	}
	return m
}

// --- validation ---------------------------------------------------------

// switchNames returns the names of t's switches, for messages.
func switchNames(t *Test) []string {
	out := make([]string, len(t.Switches))
	for i := range t.Switches {
		out[i] = t.Switches[i].Name
	}
	return out
}

// noSwitch is the message for a name that names no switch (and, with
// hosts, no host either).
func noSwitch(key, name string, t *Test, hosts bool) string {
	names := switchNames(t)
	what, list := "switch", "switches: "+strings.Join(names, ", ")
	if hosts {
		what, list = "host or switch", list+"; hosts: "+strings.Join(hostNames(t), ", ")
		names = append(names, hostNames(t)...)
	}
	msg := fmt.Sprintf("%s: no %s named %q (%s)", key, what, name, list)
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}

// switchList renders switch ids as names: "tor1, spine, tor2".
func switchList(t *Test, ids []int) string {
	names := make([]string, len(ids))
	for i, s := range ids {
		names[i] = t.Switches[s].Name
	}
	return strings.Join(names, ", ")
}

// validateFabric checks switches, links, routing, flow paths and the
// events' at.
func (d *decoder) validateFabric(t *Test) {
	if d.keys["switches"] == nil {
		for _, k := range []string{"links", "routing"} {
			if kn := d.keys[k]; kn != nil {
				d.errorf(kn, "%s needs switches: without switches the test has one switch (give switches and links for a fabric)", k)
			}
		}
		if kn := d.keys["deadlock-ms"]; kn != nil {
			// A cyclic buffer dependency needs links between switches:
			// one switch's queues cannot pause each other in a cycle.
			d.errorf(kn, "deadlock-ms needs switches: a PFC deadlock is a cycle of switches pausing each other, and the test has one switch")
		}
		for _, a := range d.ats(t) {
			d.errorf(d.keys[a.path], "at needs switches: without switches every event is at the one switch")
		}
		for i := range t.Flows {
			if kn := d.keys[flowPath(t, i)+".path"]; kn != nil {
				d.errorf(kn, "path needs switches: without switches every flow crosses the one switch")
			}
		}
		return
	}
	if kn := d.keys["switch"]; kn != nil {
		sk := d.keys["switches"]
		d.errorf(sk, "switches (line %d) and switch (line %d): give switches for a fabric (each switch takes switch's keys), or switch for one switch", sk.Line, kn.Line)
	}
	if !d.given("switches") && !d.bad["switches"] {
		d.errorf(d.keys["switches"], "switches: want 1..%d switches, got null", MaxSwitches)
		return
	}
	if d.bad["switches"] || len(t.Switches) == 0 {
		return
	}
	clash := false
	for i := range t.Switches {
		sw := &t.Switches[i]
		if h := t.Host(sw.Name); h != nil {
			d.errorAt(sw.Pos, fmt.Sprintf("switch name %q is also the name of a host (at %s): links name hosts and switches alike, so every name must be unique", sw.Name, h.Pos))
			clash = true
		}
	}
	if d.keys["links"] == nil {
		d.errorf(d.keys["switches"], "switches needs links: cable each host to its switch ({a: HOST, b: SWITCH}) and the switches to each other")
		return
	}
	if clash || !d.validateLinks(t) {
		return
	}
	d.validateRemotePorts(t)
	d.validateSharedKeys(t)
	d.validatePaths(t)
	d.validateAt(t)
}

// validateLinks checks links; it reports whether the graph is sound
// enough to check routes on.
func (d *decoder) validateLinks(t *Test) bool {
	if d.bad["links"] || d.bad["hosts"] {
		return false
	}
	hostSw := make([]int, len(t.Hosts))
	hostAt := make([]Pos, len(t.Hosts))
	for i := range hostSw {
		hostSw[i] = -1
	}
	linked := make([]bool, len(t.Switches))
	pairs := map[[2]int]Pos{}
	sound, n := true, 0
	for i := range t.Links {
		lk := &t.Links[i]
		p := fmt.Sprintf("links[%d]", i)
		if d.bad[p] || d.bad[p+".a"] || d.bad[p+".b"] {
			sound = false
			continue
		}
		known := true
		for _, e := range []struct{ key, name string }{{"a", lk.A}, {"b", lk.B}} {
			if t.HostIndex(e.name) < 0 && t.SwitchIndex(e.name) < 0 {
				d.errorAt(d.firstPos(p+"."+e.key, p), noSwitch(e.key, e.name, t, true))
				known = false
			}
		}
		if !known {
			sound = false
			continue
		}
		ha, hb := t.HostIndex(lk.A), t.HostIndex(lk.B)
		sa, sb := t.SwitchIndex(lk.A), t.SwitchIndex(lk.B)
		switch {
		case ha >= 0 && hb >= 0:
			d.errorAt(lk.Pos, fmt.Sprintf("link joins two hosts, %s and %s: a host is cabled to a switch", lk.A, lk.B))
			sound = false
		case sa >= 0 && sb >= 0:
			if sa == sb {
				d.errorAt(lk.Pos, fmt.Sprintf("link joins switch %s to itself", lk.A))
				sound = false
				continue
			}
			linked[sa], linked[sb] = true, true
			key := [2]int{min(sa, sb), max(sa, sb)}
			if first, dup := pairs[key]; dup {
				d.errorAt(lk.Pos, fmt.Sprintf("switches %s and %s are linked twice (first at %s): one link per pair of switches", lk.A, lk.B, first))
				sound = false
				continue
			}
			pairs[key] = lk.Pos
			if n++; n == MaxSwitchLinks+1 {
				d.errorAt(lk.Pos, fmt.Sprintf("more than %d switch-to-switch links: their ports %d..%d are all taken", MaxSwitchLinks, FirstLinkPort, FirstLinkPort+2*MaxSwitchLinks-1))
				sound = false
			}
			d.checkLinkPorts(t, p, lk, n-1)
		default:
			h, s, hk := ha, sb, "a"
			if hb >= 0 {
				h, s, hk = hb, sa, "b"
			}
			linked[s] = true
			for _, k := range []string{"gbps", "delay-ns"} {
				if d.given(p + "." + k) {
					d.errorAt(d.pos(p+"."+k), fmt.Sprintf("%s: %s's link runs at its NIC's line rate (its personality): %s applies to links between switches", k, t.Hosts[h].Name, k))
				}
			}
			for _, k := range []string{"a-port", "b-port"} {
				if d.given(p + "." + k) {
					d.errorAt(d.pos(p+"."+k), fmt.Sprintf("%s: %s's switch port is its nic.switch-port: a-port and b-port apply to links between switches", k, t.Hosts[h].Name))
				}
			}
			if hostSw[h] >= 0 && hostSw[h] != s {
				d.errorAt(d.firstPos(p+"."+hk, p), fmt.Sprintf("host %s is on two switches, %s (link at %s) and %s: a host is cabled to exactly one switch", t.Hosts[h].Name, t.Switches[hostSw[h]].Name, hostAt[h], t.Switches[s].Name))
				sound = false
			} else if hostSw[h] == s {
				d.errorAt(lk.Pos, fmt.Sprintf("host %s and switch %s are linked twice (first at %s)", t.Hosts[h].Name, t.Switches[s].Name, hostAt[h]))
				sound = false
			} else {
				hostSw[h], hostAt[h] = s, lk.Pos
			}
		}
	}
	if !sound {
		return false
	}
	for i, s := range hostSw {
		if s < 0 {
			at := t.Hosts[i].Pos
			if at.Line == 0 { // the two-host form's requester or responder
				at = d.pos(hostPath(t, i))
				if k := d.keys["switches"]; at.Line == 0 {
					at = Pos{k.Line, k.Column}
				}
			}
			d.errorAt(at, fmt.Sprintf("host %s is on no switch: add a link {a: %s, b: SWITCH} to links", t.Hosts[i].Name, t.Hosts[i].Name))
			sound = false
		}
	}
	for i, ok := range linked {
		if !ok {
			d.errorAt(t.Switches[i].Pos, fmt.Sprintf("switch %s has no link: link it to a host or a switch in links, or remove it", t.Switches[i].Name))
			sound = false
		}
	}
	return sound
}

// checkLinkPorts checks the a-port and b-port of lk, the l-th
// switch-to-switch link, at path p: required on testbed remote, refused
// on sim and netns, which number its ports themselves.
func (d *decoder) checkLinkPorts(t *Test, p string, lk *Link, l int) {
	if d.bad["testbed"] {
		return
	}
	if t.Testbed == TestbedRemote {
		if msg := missingLinkPorts(lk, d.given(p+".a-port") || d.bad[p+".a-port"], d.given(p+".b-port") || d.bad[p+".b-port"]); msg != "" {
			d.errorAt(lk.Pos, "testbed remote: "+msg)
		}
		return
	}
	for _, k := range []string{"a-port", "b-port"} {
		if d.given(p + "." + k) {
			d.errorAt(d.pos(p+"."+k), fmt.Sprintf("%s: testbed %s numbers a switch-to-switch link's ports itself, %d+2l and %d+2l (here %d for a, %d for b); a-port and b-port are the remote switch's ports (testbed remote)",
				k, t.Testbed, FirstLinkPort, FirstLinkPort+1, FirstLinkPort+2*l, FirstLinkPort+2*l+1))
		}
	}
}

// missingLinkPorts says which of a-port (given: hasA) and b-port (hasB) a
// switch-to-switch link lacks on testbed remote; "" if none.
func missingLinkPorts(lk *Link, hasA, hasB bool) string {
	var miss []string
	if !hasA {
		miss = append(miss, "a-port")
	}
	if !hasB {
		miss = append(miss, "b-port")
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("link %s–%s needs %s: the switch ports of its ends (a-port on %s, b-port on %s), which its loopback cable joins (docs/fabric.md)",
		lk.A, lk.B, strings.Join(miss, " and "), lk.A, lk.B)
}

// portUse is a port of the remote switch that a test uses.
type portUse struct {
	port int
	what string // "host h1's nic.switch-port"
	path string // the key's path, or "" (then at)
	at   string // the path of the entry that holds it, for a key not given
}

// remotePortUses returns every switch port a fabric on testbed remote
// uses: each host's and dumper's nic.switch-port, each switch-to-switch
// link's a-port and b-port (given ones only).
func remotePortUses(t *Test, dumperPath func(int) string) []portUse {
	var out []portUse
	for i := range t.Hosts {
		hp := hostPath(t, i)
		out = append(out, portUse{t.Hosts[i].NIC.SwitchPort, fmt.Sprintf("host %s's nic.switch-port", t.Hosts[i].Name), hp + ".nic.switch-port", hp})
	}
	for i := range t.Dumpers {
		dp := dumperPath(i)
		if dp == "" {
			continue // the default dumpers: testbed remote refuses them (no control-ip)
		}
		out = append(out, portUse{t.Dumpers[i].NIC.SwitchPort, fmt.Sprintf("dumper %s's nic.switch-port", t.Dumpers[i].Name), join(dp, "nic.switch-port"), dp})
	}
	for i := range t.Links {
		lk := &t.Links[i]
		if t.SwitchIndex(lk.A) < 0 || t.SwitchIndex(lk.B) < 0 {
			continue
		}
		p := fmt.Sprintf("links[%d]", i)
		for _, e := range []struct {
			key  string
			port int
		}{{"a-port", lk.APort}, {"b-port", lk.BPort}} {
			if e.port >= 0 {
				out = append(out, portUse{e.port, fmt.Sprintf("%s of link %s–%s", e.key, lk.A, lk.B), p + "." + e.key, p})
			}
		}
	}
	return out
}

// validateRemotePorts checks that a fabric on testbed remote uses each
// switch port once: one port is one cable.
func (d *decoder) validateRemotePorts(t *Test) {
	if t.Testbed != TestbedRemote || d.bad["testbed"] || d.bad["dumpers"] {
		return
	}
	given := map[string]bool{}
	for i := range t.Hosts {
		hp := hostPath(t, i)
		if given[hp] = d.given(hp+".nic.switch-port") || d.bad[hp+".nic.switch-port"]; !given[hp] {
			at := d.firstPos(hp)
			if t.Hosts[i].Pos.Line > 0 {
				at = t.Hosts[i].Pos
			}
			d.errorAt(at, fmt.Sprintf("testbed remote: host %s needs nic.switch-port in a fabric: the switch port its cable plugs into, which puts it in its logical switch", t.Hosts[i].Name))
		}
	}
	first := map[int]portUse{}
	for _, u := range remotePortUses(t, d.dumperPath) {
		if _, host := given[u.at]; host && !given[u.at] {
			continue // reported above
		}
		f, dup := first[u.port]
		if !dup {
			first[u.port] = u
			continue
		}
		at := d.firstPos(u.path, u.at)
		d.errorAt(at, fmt.Sprintf("testbed remote: switch port %d is both %s (at %s) and %s: each port of the switch is one cable, so every host, dumper and loopback cable end needs its own",
			u.port, f.what, d.firstPos(f.path, f.at), u.what))
	}
}

// remoteFabricProblems returns why t, a fabric, cannot run on testbed
// remote (WithTestbed): a switch-to-switch link without a-port or
// b-port, a switch port used twice.
func remoteFabricProblems(t *Test) []tbProblem {
	var out []tbProblem
	for i := range t.Links {
		lk := &t.Links[i]
		if t.SwitchIndex(lk.A) < 0 || t.SwitchIndex(lk.B) < 0 {
			continue
		}
		if msg := missingLinkPorts(lk, lk.APort >= 0, lk.BPort >= 0); msg != "" {
			out = append(out, tbProblem{path: fmt.Sprintf("links[%d]", i), msg: msg})
		}
	}
	first := map[int]portUse{}
	for _, u := range remotePortUses(t, func(i int) string { return fmt.Sprintf("dumpers[%d]", i) }) {
		if f, dup := first[u.port]; dup {
			out = append(out, tbProblem{path: u.path, msg: fmt.Sprintf("switch port %d is both %s and %s: give each its own nic.switch-port, a-port or b-port", u.port, f.what, u.what)})
		} else {
			first[u.port] = u
		}
	}
	return out
}

// validatePaths checks the flows' paths and that every flow has a route.
func (d *decoder) validatePaths(t *Test) {
	g := t.graph()
	type seen struct {
		flow string
		seq  []int // oriented from the lower host index
		at   Pos
	}
	pairPath := map[[2]int]seen{}
	for f := range t.Flows {
		fl := &t.Flows[f]
		fp := flowPath(t, f)
		from, to := t.HostIndex(fl.From), t.HostIndex(fl.To)
		if d.bad[fp] || from < 0 || to < 0 || from == to {
			continue
		}
		if len(fl.Path) == 0 {
			if _, explicit := t.explicitPath(from, to); !explicit && g.shortest(g.hostSw[from], g.hostSw[to], 0) == nil {
				d.errorAt(fl.Pos, fmt.Sprintf("flow %s: no path from %s (on %s) to %s (on %s): no links join their switches",
					fl.Name, fl.From, t.Switches[g.hostSw[from]].Name, fl.To, t.Switches[g.hostSw[to]].Name))
			}
			continue
		}
		pp := fp + ".path"
		if d.bad[pp] {
			continue
		}
		seq, ok := d.checkPath(t, g, f, pp)
		if !ok {
			continue
		}
		key := [2]int{min(from, to), max(from, to)}
		if from > to {
			slices.Reverse(seq)
		}
		at := d.firstPos(pp)
		if first, dup := pairPath[key]; dup && !slices.Equal(first.seq, seq) {
			d.errorAt(at, fmt.Sprintf("path: flow %s joins hosts %s and %s, as flow %s does with another path (at %s): a route is per host pair, both ways; give both flows the same path (reversed for the other direction)",
				fl.Name, t.Hosts[key[0]].Name, t.Hosts[key[1]].Name, first.flow, first.at))
		} else if !dup {
			pairPath[key] = seen{fl.Name, seq, at}
		}
	}
}

// checkPath checks flow f's path at pp and returns it as switch ids.
func (d *decoder) checkPath(t *Test, g *graph, f int, pp string) ([]int, bool) {
	fl := &t.Flows[f]
	elem := func(i int) Pos {
		if n := d.nodes[pp]; n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
			return Pos{n.Content[i].Line, n.Content[i].Column}
		}
		return d.firstPos(pp)
	}
	seq := make([]int, len(fl.Path))
	firstAt := map[int]int{}
	ok := true
	for i, name := range fl.Path {
		s := t.SwitchIndex(name)
		if s < 0 {
			d.errorAt(elem(i), noSwitch(fmt.Sprintf("path[%d]", i), name, t, false))
			ok = false
			continue
		}
		if j, dup := firstAt[s]; dup {
			d.errorAt(elem(i), fmt.Sprintf("path[%d]: a loop: switch %s is also path[%d]; a path crosses each switch once", i, name, j))
			ok = false
			continue
		}
		firstAt[s] = i
		seq[i] = s
	}
	if !ok {
		return nil, false
	}
	from, to := t.HostIndex(fl.From), t.HostIndex(fl.To)
	if s := g.hostSw[from]; seq[0] != s {
		d.errorAt(elem(0), fmt.Sprintf("path[0]: the path starts at %s, the switch of %s (the flow's from); got %s", t.Switches[s].Name, fl.From, fl.Path[0]))
		ok = false
	}
	last := len(seq) - 1
	if s := g.hostSw[to]; seq[last] != s {
		d.errorAt(elem(last), fmt.Sprintf("path[%d]: the path ends at %s, the switch of %s (the flow's to); got %s", last, t.Switches[s].Name, fl.To, fl.Path[last]))
		ok = false
	}
	for i := 1; i < len(seq); i++ {
		if _, linked := g.port[[2]int{seq[i-1], seq[i]}]; !linked {
			d.errorAt(elem(i), fmt.Sprintf("path[%d]: switches %s and %s are not linked", i, fl.Path[i-1], fl.Path[i]))
			ok = false
		}
	}
	return seq, ok
}

// atRef is one given at of an event.
type atRef struct {
	path string // the at key's path
	flow int    // the flow the event belongs to; -1: a pfc event without start or with an unknown flow
	pfc  int    // the index in PFCEvents of a pfc event; -1 for a data-pkt-event
	name string
}

// ats returns every given at of an event, in file order.
func (d *decoder) ats(t *Test) []atRef {
	var out []atRef
	for f := range t.Flows {
		for j, ev := range t.Flows[f].Events {
			if p := fmt.Sprintf("%s.data-pkt-events[%d].at", flowPath(t, f), j); d.keys[p] != nil && !d.bad[p] && ev.At != "" {
				out = append(out, atRef{p, f, -1, ev.At})
			}
		}
	}
	for j, ev := range t.PFCEvents {
		p := fmt.Sprintf("%s[%d].at", pfcEventsPath(t), j)
		if d.keys[p] == nil || d.bad[p] || ev.At == "" {
			continue
		}
		f := -1
		if ev.Start != nil {
			f = t.FlowIndex(ev.Start.Flow)
		}
		out = append(out, atRef{p, f, j, ev.At})
	}
	slices.SortStableFunc(out, func(a, b atRef) int {
		pa, pb := d.pos(a.path), d.pos(b.path)
		if pa.Line != pb.Line {
			return pa.Line - pb.Line
		}
		return pa.Col - pb.Col
	})
	return out
}

// validateAt checks the events' at: a known switch on the flow's route,
// the same for every event of a flow.
func (d *decoder) validateAt(t *Test) {
	type named struct {
		name string
		at   Pos
	}
	first := map[int]named{}
	for _, a := range d.ats(t) {
		at := d.pos(a.path)
		s := t.SwitchIndex(a.name)
		if s < 0 {
			d.errorAt(at, noSwitch("at", a.name, t, false))
			continue
		}
		if a.pfc >= 0 && t.PFCEvents[a.pfc].Start == nil {
			d.errorAt(at, "at applies to a pfc event with start: the switch that sees the start packet (a pause at start-us comes from the paused host's switch)")
			continue
		}
		if a.flow < 0 {
			continue // the start's unknown flow is reported by validatePFC
		}
		fl := &t.Flows[a.flow]
		r := t.Route(t.HostIndex(fl.From), t.HostIndex(fl.To))
		var ids []int
		on := false
		for _, h := range r {
			ids = append(ids, h.Switch)
			on = on || h.Switch == s
		}
		if r != nil && !on {
			d.errorAt(at, fmt.Sprintf("at: switch %s is not on flow %s's path (%s)", a.name, fl.Name, switchList(t, ids)))
			continue
		}
		if fst, ok := first[a.flow]; ok && fst.name != a.name {
			d.errorAt(at, fmt.Sprintf("at: flow %s's events are at %s (at %s): all events of a flow are at one switch", fl.Name, fst.name, fst.at))
		} else if !ok {
			first[a.flow] = named{a.name, at}
		}
	}
}

// perSwitchKeys are the switch keys each switch of a fabric has for
// itself; the others configure the one switch the logical switches are
// partitions of (docs/fabric.md), which the first switch's keys give.
var perSwitchKeys = []string{"pfc-watchdog", "ecn"}

// validateSharedKeys refuses a key of the one partitioned switch
// (control-ip, listen-port, timestamp-tolerance-ns, ...) that a switch
// other than the first gives with another value than the first's: it
// would be silently ignored.
func (d *decoder) validateSharedKeys(t *Test) {
	first := &t.Switches[0]
	fv := reflect.ValueOf(&first.Switch).Elem()
	for i := 1; i < len(t.Switches); i++ {
		sw := &t.Switches[i]
		sv := reflect.ValueOf(&sw.Switch).Elem()
		for _, k := range switchSection.keys {
			kn := d.keys["switches."+sw.Name+"."+k.name]
			if kn == nil || k.field == "" || slices.Contains(perSwitchKeys, k.name) {
				continue
			}
			if a, b := fv.FieldByName(k.field).Interface(), sv.FieldByName(k.field).Interface(); !reflect.DeepEqual(a, b) {
				d.errorf(kn, "%s: switch %s gives %v, the first switch %s %v: the switches of a fabric are logical switches of one switch, which the first switch's %s configures (each switch has its own pfc-watchdog and ecn); give it on %s only",
					k.name, sw.Name, b, first.Name, a, k.name, first.Name)
			}
		}
	}
}
