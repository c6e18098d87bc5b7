package pfc

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// fabric is the state of the fabric-wide analysis (Options.Fabric): the
// topology resolved for lookups, the last RoCE copy of every flow at every
// switch, and the PFC frames each port sent in the deadlock window.
type fabric struct {
	f        *model.Fabric
	swID     map[string]int
	portSw   map[uint16]int // the switch of every cabled port
	port     map[uint16]model.FabricPort
	hostIdx  map[netip.Addr]int // address → index in hosts
	hosts    []string
	route    map[routeKey]hopPorts
	seen     [][]fseen // per switch, per flow (2 × connection + direction)
	lastRoCE int64
	anyRoCE  bool
	epoch    int
	win      map[uint32]*winCount // port<<3 | priority
	deadline int64                // Options.DeadlockNs
	// unrouted counts the RoCE copies of a connection made at a switch
	// its route (Fabric.Routes) does not cross: a run record that does
	// not describe its trace, whose paths cannot be traced.
	unrouted int
}

type routeKey struct{ from, to, sw int }

type hopPorts struct{ in, out uint16 }

// fseen is the last RoCE copy of a flow at one switch.
type fseen struct {
	t, depth int64
	in, out  uint16
	prio     int8
	ok       bool
}

// winCount counts the PFC frames a port sent after the last RoCE copy
// (epoch: the RoCE copy it counts from).
type winCount struct {
	epoch, frames int
}

// fcause is what a sent episode of a switch waited on when it opened:
// the egress port whose queue held the packets that came in on its port.
type fcause struct {
	sw      int
	egress  uint16
	found   bool  // some flow entered by the port shortly before
	paused  bool  // the egress was paused then (rxEp: by the received episode)
	later   bool  // paused only after the episode began (sustained)
	rxEp    int   // -1: not kept
	depth   int64 // deepest queue the flows' last packets joined at the egress
	from    []int // flows (2 × connection + direction) from the port to the egress
	waiting []int // every flow whose last packet went out the egress
}

func newFabric(f *model.Fabric, hosts []Host, deadline int64) *fabric {
	fb := &fabric{f: f, swID: f.SwitchIDs(), portSw: map[uint16]int{}, port: map[uint16]model.FabricPort{},
		hostIdx: map[netip.Addr]int{}, route: map[routeKey]hopPorts{}, win: map[uint32]*winCount{}, deadline: deadline}
	fb.seen = make([][]fseen, len(f.Switches))
	for _, p := range f.Ports {
		fb.port[uint16(p.Port)] = p
		if sw, ok := fb.swID[p.Switch]; ok {
			fb.portSw[uint16(p.Port)] = sw
		}
	}
	names := map[string]int{}
	for _, h := range hosts {
		names[h.Name] = len(fb.hosts)
		fb.hosts = append(fb.hosts, h.Name)
		for _, ip := range h.IPs {
			if _, ok := fb.hostIdx[ip]; !ok {
				fb.hostIdx[ip] = names[h.Name]
			}
		}
	}
	for _, r := range f.Routes {
		from, ok1 := names[r.From]
		to, ok2 := names[r.To]
		if !ok1 || !ok2 {
			continue
		}
		for _, h := range r.Hops {
			if sw, ok := fb.swID[h.Switch]; ok {
				fb.route[routeKey{from, to, sw}] = hopPorts{uint16(h.In), uint16(h.Out)}
			}
		}
	}
	return fb
}

// switchName returns the name of switch id sw.
func (fb *fabric) switchName(sw int) string {
	if sw >= 0 && sw < len(fb.f.Switches) {
		return fb.f.Switches[sw]
	}
	return fmt.Sprintf("switch %d", sw)
}

// fabricObserve records a RoCE copy made by switch sw: the last RoCE
// stamp (the deadlock window's start) and the flow's last packet there.
func (a *Analyzer) fabricObserve(p *model.Pkt, sw, prio int) {
	fb := a.fab
	if !fb.anyRoCE || p.TimeNs >= fb.lastRoCE {
		fb.lastRoCE, fb.anyRoCE = p.TimeNs, true
		fb.epoch++
	}
	if p.Late() || p.Copy() || p.Conn < 0 || p.Dir == model.DirNone || sw < 0 || sw >= len(fb.seen) {
		return
	}
	src, ok1 := fb.hostIdx[p.SrcIP.Addr()]
	dst, ok2 := fb.hostIdx[p.DstIP.Addr()]
	if !ok1 || !ok2 {
		fb.unrouted++
		return
	}
	h, ok := fb.route[routeKey{src, dst, sw}]
	if !ok {
		fb.unrouted++
		return
	}
	fi := 2 * p.Conn
	if p.Dir == model.ToRequester {
		fi++
	}
	if fb.seen[sw] == nil {
		fb.seen[sw] = make([]fseen, len(a.flows))
	}
	if fi < len(fb.seen[sw]) {
		fb.seen[sw][fi] = fseen{t: p.TimeNs, depth: p.QDepth, in: h.in, out: h.out, prio: int8(prio), ok: true}
	}
}

// atHostSwitch reports whether a copy made by switch sw is one of the
// switch the host owning ip is cabled to (true for an unknown host): the
// one-switch reaction check reads a host's frames there only.
func (a *Analyzer) atHostSwitch(ip netip.Addr, sw int) bool {
	h, ok := a.hostOf[ip]
	if !ok {
		return true
	}
	s, ok := a.fab.portSw[a.hosts[h].Port]
	return !ok || s == sw
}

// fabricFrame counts a PFC frame a switch sent on (port, prio) at now in
// the deadlock window.
func (a *Analyzer) fabricFrame(port uint16, prio int, now int64) {
	fb := a.fab
	if !fb.anyRoCE || fb.deadline <= 0 || now < fb.lastRoCE || now > fb.lastRoCE+fb.deadline {
		return
	}
	k := uint32(port)<<3 | uint32(prio)
	w := fb.win[k]
	if w == nil {
		w = &winCount{}
		fb.win[k] = w
	}
	if w.epoch != fb.epoch {
		w.epoch, w.frames = fb.epoch, 0
	}
	w.frames++
}

func (fb *fabric) windowFrames(port uint16, prio int) int {
	if w := fb.win[uint32(port)<<3|uint32(prio)]; w != nil && w.epoch == fb.epoch {
		return w.frames
	}
	return 0
}

// fabricCause finds what the pause a switch starts sending on x's port at
// now waits on: of the egress ports the flows that came in on the port in
// the last FlowActiveNs leave by, one paused then by the pauses received
// on it (the one most of those flows go out of), else the one whose queue
// their last packets found deepest.
func (a *Analyzer) fabricCause(x *portPrio, now int64) *fcause {
	fb := a.fab
	sw, ok := fb.portSw[x.port]
	if !ok {
		return nil
	}
	c := &fcause{sw: sw, rxEp: -1}
	seen := fb.seen[sw]
	type cand struct {
		from, waiting []int
		depth         int64
		paused        bool
		rx            int
	}
	cands := map[uint16]*cand{}
	for fi, f := range seen {
		if !f.ok || int(f.prio) != x.prio || f.t < now-FlowActiveNs || f.t > now {
			continue
		}
		k := cands[f.out]
		if k == nil {
			k = &cand{rx: -1}
			cands[f.out] = k
		}
		k.waiting = append(k.waiting, fi)
		k.depth = max(k.depth, f.depth)
		if f.in == x.port {
			k.from = append(k.from, fi)
		}
	}
	var best *cand
	var bestQ uint16
	for _, q := range slices.Sorted(mapKeys(cands)) {
		k := cands[q]
		if len(k.from) == 0 {
			continue
		}
		if y := a.pp[uint32(q)<<3|uint32(x.prio)]; y != nil && y.rx.on && y.rx.until >= now {
			k.paused, k.rx = true, y.rx.epIdx
		}
		better := best == nil
		if !better {
			switch {
			case k.paused != best.paused:
				better = k.paused
			case k.paused:
				better = len(k.from) > len(best.from)
			default:
				better = k.depth > best.depth || k.depth == best.depth && len(k.from) > len(best.from)
			}
		}
		if better {
			best, bestQ = k, q
		}
	}
	if best == nil {
		return c
	}
	c.found, c.egress, c.paused, c.rxEp, c.depth = true, bestQ, best.paused, best.rx, best.depth
	c.from, c.waiting = best.from, best.waiting
	return c
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Roots of a fabric chain (FabricRoot.Kind).
const (
	RootCongestion   = "congestion"    // an egress queue not paused, filled by the flows
	RootSlowReceiver = "slow-receiver" // a host paused its switch and drained (XON) or paused briefly
	RootStalledNIC   = "stalled-nic"   // a host paused its switch continuously (a storm)
	RootInjected     = "injected"      // a pause the test injected
	RootCycle        = "cycle"         // the chain returns to a port already in it
	RootUnknown      = "unknown"       // no flow came in on the paused port shortly before
)

// FabricHop is one switch port of a fabric chain: Switch paused what is
// cabled to Port (Paused: a host, or "switch:port") because the packets
// that came in on Port waited in the queue of Egress, which PausedBy paused
// from PausedAtNs (absent at the root).
type FabricHop struct {
	Switch     string   `json:"switch"`
	Port       uint16   `json:"port"`
	Paused     string   `json:"paused"`
	Priority   int      `json:"priority"`
	Episode    int      `json:"episode"`
	StartNs    int64    `json:"start_ns"`
	EndNs      int64    `json:"end_ns"`
	Egress     uint16   `json:"egress,omitempty"`
	PausedBy   string   `json:"paused_by,omitempty"`
	PausedAtNs *int64   `json:"paused_at_ns,omitempty"`
	Waiting    []string `json:"waiting,omitempty"`
}

// FabricRoot is where a fabric chain starts.
type FabricRoot struct {
	Kind     string `json:"kind"`
	Switch   string `json:"switch,omitempty"`
	Port     uint16 `json:"port,omitempty"`
	Host     string `json:"host,omitempty"`
	Priority int    `json:"priority"`
	// Episode is the root's episode: the host's received episode, or the
	// sent episode of the last hop (congestion).
	Episode int `json:"episode"`
	// QDepthBytes (congestion) is the deepest queue the flows' last
	// packets before the pause joined at the port.
	QDepthBytes int64    `json:"qdepth_bytes,omitempty"`
	Flows       []string `json:"flows,omitempty"`
	Detail      string   `json:"detail"`
}

// StalledFlow is a flow whose packets waited in a paused (or, at the
// root, congested) queue of a chain: at Switch's egress Egress, Hops
// switch-to-switch links from the root's switch. A victim never crosses
// the root port.
type StalledFlow struct {
	Flow      string `json:"flow"`
	Conn      int    `json:"conn"`
	Direction string `json:"direction"`
	Switch    string `json:"switch"`
	Egress    uint16 `json:"egress"`
	Hops      int    `json:"hops"`
}

// FabricChain is the provenance of one pause (Hawkeye): from the port
// paused furthest from the root, hop by hop to the root.
type FabricChain struct {
	Hops []FabricHop `json:"hops"`
	Root FabricRoot  `json:"root"`
	Text string      `json:"text"`
	// Path is Text without the times and queue depth: the same for every
	// chain along the same ports to the same root.
	Path    string        `json:"path"`
	Stalled []StalledFlow `json:"stalled,omitempty"`
	Victims []StalledFlow `json:"victims,omitempty"`
}

// Reached is a port a storm's pause spread to.
type Reached struct {
	Switch  string `json:"switch"`
	Port    uint16 `json:"port"`
	Paused  string `json:"paused"`
	FirstNs int64  `json:"first_ns"`
	Hops    int    `json:"hops"`
}

// FabricStorm is a root pausing continuously beyond the detection time
// (a storm) and how far its pauses spread.
type FabricStorm struct {
	Root       FabricRoot `json:"root"`
	StartNs    int64      `json:"start_ns"`
	DurationNs int64      `json:"duration_ns"`
	Hops       int        `json:"hops"`
	Reached    []Reached  `json:"reached"`
	Switches   []string   `json:"switches"`
	Hosts      []string   `json:"hosts,omitempty"`
	Stopped    string     `json:"stopped"`
}

// FabricPortPause is one cabled port and when the pauses on its link
// began (for the fabric drawing).
type FabricPortPause struct {
	Port       uint16 `json:"port"`
	Switch     string `json:"switch"`
	Host       string `json:"host,omitempty"`
	PeerSwitch string `json:"peer_switch,omitempty"`
	PeerPort   uint16 `json:"peer_port,omitempty"`
	// FirstSentNs: the first pause the switch sent on the port;
	// FirstReceivedNs: the first it received on it.
	FirstSentNs     *int64 `json:"first_sent_ns,omitempty"`
	FirstReceivedNs *int64 `json:"first_received_ns,omitempty"`
	SentFrames      int64  `json:"sent_frames,omitempty"`
	ReceivedFrames  int64  `json:"received_frames,omitempty"`
}

// FabricResult is the fabric-wide PFC analysis (a run with several
// switches, model.Meta.Fabric).
type FabricResult struct {
	Switches []string          `json:"switches"`
	Ports    []FabricPortPause `json:"ports"`
	Chains   []FabricChain     `json:"chains"`
	Storms   []FabricStorm     `json:"storms,omitempty"`
}

// CyclePort is one port of a deadlock cycle with the PFC frames it sent
// in the window.
type CyclePort struct {
	Switch   string `json:"switch"`
	Port     uint16 `json:"port"`
	Priority int    `json:"priority"`
	Frames   int    `json:"frames"`
}

// Deadlock is the deadlock check (a run with several switches).
type Deadlock struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	// WindowStartNs is the last RoCE copy's stamp, WindowEndNs it +
	// Params.DeadlockNs.
	WindowStartNs int64       `json:"window_start_ns,omitempty"`
	WindowEndNs   int64       `json:"window_end_ns,omitempty"`
	Cycle         []CyclePort `json:"cycle,omitempty"`
}

// fabricFinish builds the fabric result and the deadlock verdict.
func (a *Analyzer) fabricFinish(r *Result) {
	fb := a.fab
	fr := &FabricResult{Switches: fb.f.Switches, Ports: []FabricPortPause{}, Chains: []FabricChain{}}
	for _, p := range fb.f.Ports {
		pp := FabricPortPause{Port: uint16(p.Port), Switch: p.Switch, Host: p.Host, PeerSwitch: p.PeerSwitch, PeerPort: uint16(p.PeerPort)}
		for _, e := range a.eps {
			if e.Port != pp.Port {
				continue
			}
			t := e.StartNs
			if e.Direction == DirSent && (pp.FirstSentNs == nil || t < *pp.FirstSentNs) {
				pp.FirstSentNs = &t
			}
			if e.Direction == DirReceived && (pp.FirstReceivedNs == nil || t < *pp.FirstReceivedNs) {
				pp.FirstReceivedNs = &t
			}
		}
		for _, x := range a.order {
			if x.port == pp.Port {
				pp.SentFrames += x.tx.st.Frames + x.tx.st.PauseFrames
				pp.ReceivedFrames += x.rx.st.Frames + x.rx.st.PauseFrames
			}
		}
		fr.Ports = append(fr.Ports, pp)
	}
	a.sustained()
	// next: the sent episode of the next hop each sent episode waited on.
	next := map[int]int{}
	referenced := map[int]bool{}
	for _, e := range a.eps {
		if n, ok := a.nextHop(e); ok {
			next[e.ID] = n
			referenced[n] = true
		}
	}
	done := map[int]bool{}
	var heads []*Episode
	for _, e := range a.eps {
		if e.Direction == DirSent && e.fc != nil && !referenced[e.ID] {
			heads = append(heads, e)
		}
	}
	for _, e := range a.eps { // cycles: no head reaches them
		if e.Direction == DirSent && e.fc != nil && referenced[e.ID] {
			heads = append(heads, e)
		}
	}
	for _, e := range heads {
		if len(fr.Chains) == MaxCauses {
			break
		}
		if done[e.ID] {
			continue
		}
		c, ids := a.fabricChain(e, next)
		for _, id := range ids {
			done[id] = true
		}
		fr.Chains = append(fr.Chains, c)
	}
	fr.Storms = a.fabricStorms(fr.Chains)
	r.Fabric = fr
	r.Deadlock = a.deadlock()
}

// sustained traces an episode that began without its egress paused
// (congestion) but then went on through a storm through the pause of its
// egress that began during it: the first such received episode if the
// episode is a storm itself (longer than the detection time: the brief
// congestion at its start does not explain it), else the first such
// received episode that is a storm. Short pauses of short episodes leave
// the cause congestion.
func (a *Analyzer) sustained() {
	for _, e := range a.eps {
		fc := e.fc
		if e.Direction != DirSent || fc == nil || !fc.found || fc.paused {
			continue
		}
		x := a.pp[uint32(fc.egress)<<3|uint32(e.Priority)]
		if x == nil {
			continue
		}
		for _, i := range x.rx.episodes {
			if r := a.eps[i]; (e.Storm || r.Storm) && r.StartNs > e.StartNs && r.StartNs <= e.EndNs {
				fc.paused, fc.rxEp, fc.later = true, i, true
				break
			}
		}
	}
}

// nextHop returns the sent episode of the next switch that sent episode e
// waited on: its egress was paused by pauses received from a switch, which
// sent them on the link's other port.
func (a *Analyzer) nextHop(e *Episode) (int, bool) {
	fc := e.fc
	if e.Direction != DirSent || fc == nil || !fc.paused || fc.rxEp < 0 {
		return 0, false
	}
	peer := a.fab.port[fc.egress]
	if peer.PeerSwitch == "" {
		return 0, false
	}
	rx := a.eps[fc.rxEp]
	s := a.sentBefore(uint16(peer.PeerPort), e.Priority, rx.StartNs)
	if s == nil {
		return 0, false
	}
	return s.ID, true
}

// sentBefore returns the last sent episode on (port, prio) starting at
// or before t (the pause a received episode at the link's other end
// began with), nil if none.
func (a *Analyzer) sentBefore(port uint16, prio int, t int64) *Episode {
	x := a.pp[uint32(port)<<3|uint32(prio)]
	if x == nil {
		return nil
	}
	eps := x.tx.episodes
	k := sort.Search(len(eps), func(i int) bool { return a.eps[eps[i]].StartNs > t }) - 1
	if k < 0 {
		return nil
	}
	return a.eps[eps[k]]
}

// paused names what is cabled to a switch port: its host, or the other
// switch's "name:port".
func (fb *fabric) paused(port uint16) string {
	p := fb.port[port]
	if p.Host != "" {
		return p.Host
	}
	if p.PeerSwitch != "" {
		return fmt.Sprintf("%s:%d", p.PeerSwitch, p.PeerPort)
	}
	return fmt.Sprintf("port %d", port)
}

func (a *Analyzer) flowName(fi int) string {
	if a.table == nil || fi/2 >= len(a.table.Conns) {
		return fmt.Sprintf("flow %d", fi)
	}
	c := a.table.Conns[fi/2]
	n := c.Flow
	if n == "" {
		n = fmt.Sprintf("conn %d", c.ID)
	}
	if fi%2 == 1 {
		n += " (responses)"
	}
	return n
}

func (a *Analyzer) flowNames(fis []int) []string {
	out := make([]string, 0, len(fis))
	for _, fi := range fis {
		out = append(out, a.flowName(fi))
	}
	return out
}

// crosses reports whether flow fi's route enters or leaves switch sw by
// port.
func (a *Analyzer) crosses(fi, sw int, port uint16) bool {
	fb := a.fab
	if a.table == nil || fi/2 >= len(a.table.Conns) {
		return false
	}
	c := a.table.Conns[fi/2]
	src, dst := c.Requester.IP, c.Responder.IP
	if fi%2 == 1 {
		src, dst = dst, src
	}
	s, ok1 := fb.hostIdx[src]
	d, ok2 := fb.hostIdx[dst]
	if !ok1 || !ok2 {
		return false
	}
	h, ok := fb.route[routeKey{s, d, sw}]
	return ok && (h.in == port || h.out == port)
}

// fabricChain follows sent episode e hop by hop to its root; it returns
// the chain and the sent episodes in it.
func (a *Analyzer) fabricChain(e *Episode, next map[int]int) (FabricChain, []int) {
	fb := a.fab
	var c FabricChain
	var ids []int
	var fcs []*fcause
	in := map[int]bool{}
	for {
		in[e.ID] = true
		ids = append(ids, e.ID)
		fc := e.fc
		if fc == nil { // a port the fabric does not list
			fc = &fcause{sw: -1, rxEp: -1}
		}
		fcs = append(fcs, fc)
		h := FabricHop{Switch: fb.switchName(fc.sw), Port: e.Port, Paused: fb.paused(e.Port), Priority: e.Priority, Episode: e.ID,
			StartNs: e.StartNs, EndNs: e.EndNs}
		if fc.found {
			h.Egress = fc.egress
			h.Waiting = a.flowNames(fc.waiting)
		}
		root := FabricRoot{Switch: h.Switch, Priority: e.Priority, Episode: e.ID}
		if fc.found && fc.paused && fc.rxEp >= 0 {
			rx := a.eps[fc.rxEp]
			t := rx.StartNs
			h.PausedAtNs = &t
			h.PausedBy = fb.paused(fc.egress)
			if p := fb.port[fc.egress]; p.PeerSwitch != "" {
				h.PausedBy = p.PeerSwitch
			}
		}
		c.Hops = append(c.Hops, h)
		n, ok := next[e.ID]
		switch {
		case e.Injected:
			root.Kind, root.Port, root.Host = RootInjected, e.Port, fb.port[e.Port].Host
			root.Detail = "pause injected by the test (pfc-events)"
		case !fc.found:
			root.Kind, root.Port = RootUnknown, e.Port
			root.Detail = fmt.Sprintf("no flow came in on port %d in the %s before", e.Port, model.FormatMicros(FlowActiveNs))
		case ok && in[n]:
			root.Kind, root.Port, root.Episode = RootCycle, a.eps[n].Port, n
			root.Switch = fb.switchName(fb.portSw[a.eps[n].Port])
			root.Detail = fmt.Sprintf("back to %s port %d: a cyclic buffer dependency", root.Switch, root.Port)
		case ok:
			e = a.eps[n]
			continue
		case fc.paused && fc.rxEp >= 0 && fb.port[fc.egress].Host != "":
			rx := a.eps[fc.rxEp]
			root.Port, root.Host, root.Episode = fc.egress, fb.port[fc.egress].Host, rx.ID
			root.Flows = a.flowNames(fc.waiting)
			if rx.Storm || rx.End == EndTraceEnd && rx.DurationNs > a.opt.DetectionNs {
				root.Kind = RootStalledNIC
				root.Detail = fmt.Sprintf("%s paused continuously for %s (from %s, ended by %s), beyond the detection time %s (from the pause pattern)",
					root.Host, model.FormatMicros(rx.DurationNs), model.FormatMicros(rx.StartNs), rx.End, model.FormatMicros(a.opt.DetectionNs))
			} else {
				root.Kind = RootSlowReceiver
				root.Detail = fmt.Sprintf("%s paused after data arrived, for %s (from %s, ended by %s) (from the pause pattern)",
					root.Host, model.FormatMicros(rx.DurationNs), model.FormatMicros(rx.StartNs), rx.End)
			}
		case fc.paused:
			root.Kind, root.Port = RootUnknown, fc.egress
			root.Detail = fmt.Sprintf("egress port %d paused by %s, whose pause was not traced", fc.egress, fb.paused(fc.egress))
		default:
			root.Kind, root.Port, root.QDepthBytes = RootCongestion, fc.egress, fc.depth
			root.Host = fb.port[fc.egress].Host
			root.Flows = a.flowNames(fc.waiting)
			root.Detail = fmt.Sprintf("the queue of %s port %d was not paused: congestion (qdepth %s)", root.Switch, fc.egress, kb(fc.depth))
		}
		c.Root = root
		break
	}
	a.stalled(&c, fcs)
	c.Text, c.Path = chainText(&c, true), chainText(&c, false)
	return c, ids
}

// stalled lists the flows that waited at each hop and the victims: those
// whose route never crosses the root port.
func (a *Analyzer) stalled(c *FabricChain, fcs []*fcause) {
	fb := a.fab
	n := len(c.Hops)
	rootSw := -1
	if c.Root.Kind == RootCongestion || c.Root.Kind == RootSlowReceiver || c.Root.Kind == RootStalledNIC {
		rootSw = fcs[n-1].sw
	}
	best := map[int]StalledFlow{}
	for k, fc := range fcs {
		if !fc.found {
			continue
		}
		for _, fi := range fc.waiting {
			s := StalledFlow{Flow: a.flowName(fi), Conn: fi / 2, Direction: flowDir(fi), Switch: fb.switchName(fc.sw), Egress: fc.egress, Hops: n - 1 - k}
			if a.table != nil && fi/2 < len(a.table.Conns) {
				s.Conn = a.table.Conns[fi/2].ID
			}
			if o, ok := best[fi]; !ok || s.Hops < o.Hops {
				best[fi] = s
			}
		}
	}
	for _, fi := range slices.Sorted(mapKeys(best)) {
		s := best[fi]
		c.Stalled = append(c.Stalled, s)
		if rootSw >= 0 && !a.crosses(fi, rootSw, c.Root.Port) {
			c.Victims = append(c.Victims, s)
		}
	}
}

// kb formats a queue depth in bytes as KB (1000 bytes).
func kb(b int64) string {
	return strconv.FormatFloat(float64(b)/1000, 'f', -1, 64) + " KB"
}

// chainText is a chain on one line, e.g. "s1 paused h1 (port 1) at 10 µs
// ← s1 port 201 paused by s2 at 9 µs ← congestion at s2 port 3 (qdepth
// 30 KB, flows A1, A2)"; timed false leaves out the times and the queue
// depth (FabricChain.Path).
func chainText(c *FabricChain, timed bool) string {
	var b strings.Builder
	at := func(ns int64) string {
		if !timed {
			return ""
		}
		return " at " + model.FormatMicros(ns)
	}
	h0 := c.Hops[0]
	fmt.Fprintf(&b, "%s paused %s (port %d)%s", h0.Switch, h0.Paused, h0.Port, at(h0.StartNs))
	for _, h := range c.Hops {
		if h.PausedAtNs != nil {
			fmt.Fprintf(&b, " ← %s port %d paused by %s%s", h.Switch, h.Egress, h.PausedBy, at(*h.PausedAtNs))
		}
	}
	r := c.Root
	switch r.Kind {
	case RootCongestion:
		fmt.Fprintf(&b, " ← congestion at %s port %d", r.Switch, r.Port)
		if timed {
			fmt.Fprintf(&b, " (qdepth %s, flows %s)", kb(r.QDepthBytes), strings.Join(r.Flows, ", "))
		}
	case RootSlowReceiver:
		fmt.Fprintf(&b, " ← slow receiver %s", r.Host)
	case RootStalledNIC:
		fmt.Fprintf(&b, " ← stalled NIC %s", r.Host)
	case RootInjected:
		b.WriteString(" ← injected pause")
	case RootCycle:
		fmt.Fprintf(&b, " ← cycle back to %s port %d", r.Switch, r.Port)
	default:
		fmt.Fprintf(&b, " ← unknown: %s", r.Detail)
	}
	return b.String()
}

// fabricStorms groups the chains by root and reports the roots that
// paused continuously beyond the detection time, with their spread.
func (a *Analyzer) fabricStorms(chains []FabricChain) []FabricStorm {
	fb := a.fab
	type key struct {
		kind string
		ep   int
	}
	var order []key
	groups := map[key][]*FabricChain{}
	for i := range chains {
		c := &chains[i]
		if c.Root.Kind == RootCycle || c.Root.Kind == RootUnknown {
			continue
		}
		k := key{c.Root.Kind, c.Root.Episode}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	grace := int64(roce.QuantaToDuration(0xFFFF, a.bps))
	var out []FabricStorm
	for _, k := range order {
		cs := groups[k]
		root := cs[0].Root
		re := a.eps[root.Episode]
		storm := re.Storm || re.End == EndTraceEnd && re.DurationNs > a.opt.DetectionNs
		for _, c := range cs {
			for _, h := range c.Hops {
				if a.eps[h.Episode].Storm {
					storm = true
				}
			}
		}
		if !storm {
			continue
		}
		s := FabricStorm{Root: root, StartNs: re.StartNs, DurationNs: re.DurationNs, Reached: []Reached{}, Switches: []string{}}
		reached := map[uint16]*Reached{}
		lastEnd := int64(0)
		for _, c := range cs {
			n := len(c.Hops)
			for i, h := range c.Hops {
				hops := n - 1 - i
				lastEnd = max(lastEnd, h.EndNs)
				if r := reached[h.Port]; r != nil {
					r.FirstNs, r.Hops = min(r.FirstNs, h.StartNs), max(r.Hops, hops)
					continue
				}
				reached[h.Port] = &Reached{Switch: h.Switch, Port: h.Port, Paused: h.Paused, FirstNs: h.StartNs, Hops: hops}
			}
		}
		for _, r := range reached {
			s.Reached = append(s.Reached, *r)
		}
		sort.Slice(s.Reached, func(i, j int) bool {
			if s.Reached[i].FirstNs != s.Reached[j].FirstNs {
				return s.Reached[i].FirstNs < s.Reached[j].FirstNs
			}
			return s.Reached[i].Port < s.Reached[j].Port
		})
		sws := map[string]bool{}
		for _, r := range s.Reached {
			s.Hops = max(s.Hops, r.Hops)
			sws[r.Switch] = true
			if fb.port[r.Port].Host != "" {
				s.Hosts = append(s.Hosts, r.Paused)
			}
		}
		s.Switches = slices.Sorted(mapKeys(sws))
		slices.Sort(s.Hosts)
		s.Hosts = slices.Compact(s.Hosts)
		s.Stopped = a.stormStop(root, re, lastEnd, grace)
		out = append(out, s)
	}
	return out
}

// stormStop says where a storm's spread stopped: a switch watchdog that
// fired on the root port (the switch's log, Options.SwitchWatchdog, else
// inferred from the trace), after which every port the storm reached
// stopped pausing within one maximal pause time while the root still
// paused.
func (a *Analyzer) stormStop(root FabricRoot, re *Episode, lastEnd, grace int64) string {
	port := root.Port
	type firing struct {
		at  int64
		src string
	}
	var fs []firing
	if a.opt.SwitchWatchdog != nil {
		for _, w := range a.opt.SwitchWatchdog {
			if w.Kind == "storm" && uint16(w.Port) == port && w.Priority == root.Priority {
				fs = append(fs, firing{w.AtNs, "the switch's watchdog log"})
			}
		}
	} else {
		for _, w := range a.wd {
			if w.Kind == WatchdogSwitchStorm && w.Port == port && w.Priority == root.Priority {
				fs = append(fs, firing{w.AtNs, "inferred: paused for the detection time"})
			}
		}
	}
	for _, w := range fs {
		if w.at < re.StartNs || w.at > re.EndNs {
			continue
		}
		if lastEnd <= w.at+grace && re.EndNs > w.at+grace {
			return fmt.Sprintf("stopped at %s: watchdog fired on port %d at %s (%s; the pauses it caused ended by %s, the root paused until %s)",
				root.Switch, port, model.FormatMicros(w.at), w.src, model.FormatMicros(lastEnd), model.FormatMicros(re.EndNs))
		}
	}
	if lastEnd >= a.last {
		return fmt.Sprintf("not stopped: still spreading at the end of the trace (%s)", model.FormatMicros(a.last))
	}
	return fmt.Sprintf("not stopped by a watchdog: the pauses it caused ended at %s, the root paused until %s", model.FormatMicros(lastEnd), model.FormatMicros(re.EndNs))
}

// deadlock is the deadlock verdict: a cycle of switch ports, each sending
// pauses because its egress is paused by the next, through the window
// [last RoCE copy, + DeadlockNs] (sonic-mgmt's rule: PFC counters still
// rising deadlock-ms after the traffic stopped). A trace ending before the
// window closes (its last copy: nothing was mirrored after it) is
// inconclusive only if a cycle still paused then: without new traffic a
// cycle cannot form once none is left, so no cycle at the trace's end
// passes.
func (a *Analyzer) deadlock() *Deadlock {
	fb := a.fab
	if fb.deadline <= 0 {
		return &Deadlock{Verdict: model.Skip, Reason: "the test sets no deadlock-ms"}
	}
	if !fb.anyRoCE {
		return &Deadlock{Verdict: model.Skip, Reason: "no RoCE packet in the trace: no window after the traffic"}
	}
	d := &Deadlock{WindowStartNs: fb.lastRoCE, WindowEndNs: fb.lastRoCE + fb.deadline}
	win := fmt.Sprintf("%s .. %s", model.FormatMicros(d.WindowStartNs), model.FormatMicros(d.WindowEndNs))
	at := min(d.WindowEndNs, a.last)
	cycle := a.cycleAt(at)
	switch {
	case cycle != nil && a.last >= d.WindowEndNs:
		d.Verdict, d.Cycle = model.Fail, cycle
		d.Reason = fmt.Sprintf("%s kept pausing each other through %s (frames in the window: %s)", cycleText(cycle), win, cycleFrames(cycle))
	case cycle != nil:
		d.Verdict, d.Cycle = model.Inconclusive, cycle
		d.Reason = fmt.Sprintf("the trace ends at %s, before the window %s closes, with %s still pausing each other", model.FormatMicros(a.last), win, cycleText(cycle))
	case len(fb.unlistedWindowPorts()) > 0:
		d.Verdict = model.Inconclusive
		d.Reason = fmt.Sprintf("switch ports the run's fabric does not place on its switches (%s) sent PFC frames in the window %s: a cycle through them cannot be traced",
			joinPorts(fb.unlistedWindowPorts()), win)
	case fb.unrouted > 0 && len(fb.win) > 0 && fb.anyWindowFrames():
		d.Verdict = model.Inconclusive
		d.Reason = fmt.Sprintf("PFC frames in the window %s, and %s of connections at switches their routes in the run record do not cross: the paths a cycle would follow cannot be traced",
			win, copies(fb.unrouted))
	default:
		d.Verdict = model.Pass
		d.Reason = fmt.Sprintf("no cycle of switch ports pausing each other through %s", win)
	}
	return d
}

// unlistedWindowPorts are the ports, in order, that sent PFC frames in the
// deadlock window but that Fabric.Ports does not list (a run record that
// does not describe its trace).
func (fb *fabric) unlistedWindowPorts() []uint16 {
	var out []uint16
	for k, w := range fb.win {
		port := uint16(k >> 3)
		if _, ok := fb.portSw[port]; !ok && w.epoch == fb.epoch && w.frames > 0 && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	slices.Sort(out)
	return out
}

// anyWindowFrames reports whether some port sent PFC frames in the
// deadlock window.
func (fb *fabric) anyWindowFrames() bool {
	for _, w := range fb.win {
		if w.epoch == fb.epoch && w.frames > 0 {
			return true
		}
	}
	return false
}

// copies is "1 RoCE copy" or "N RoCE copies".
func copies(n int) string {
	if n == 1 {
		return "1 RoCE copy"
	}
	return strconv.Itoa(n) + " RoCE copies"
}

// joinPorts is "201, 203".
func joinPorts(ps []uint16) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

// cycleAt returns a cycle of switch ports sending pauses at t, each
// waiting on the next: packets that came in on the port (the flows whose
// last packets at the switch entered by it) leave by an egress paused at
// t by the pauses the next port sends; frames sent in the window on every
// port. The cycle starts at its lowest port; nil if none.
func (a *Analyzer) cycleAt(t int64) []CyclePort {
	fb := a.fab
	type node struct {
		port uint16
		prio int
	}
	// next: the lowest egress of the port's flows paused at t by a switch.
	nextOf := func(n node) (node, bool) {
		sw, ok := fb.portSw[n.port]
		if !ok || a.findEpisode(DirSent, n.port, n.prio, t, -1) == nil || fb.windowFrames(n.port, n.prio) == 0 {
			return node{}, false
		}
		best, found := node{}, false
		for _, f := range fb.seen[sw] {
			if !f.ok || f.in != n.port || int(f.prio) != n.prio {
				continue
			}
			p := fb.port[f.out]
			if p.PeerSwitch == "" || a.findEpisode(DirReceived, f.out, n.prio, t, -1) == nil {
				continue
			}
			if m := (node{uint16(p.PeerPort), n.prio}); !found || m.port < best.port {
				best, found = m, true
			}
		}
		return best, found
	}
	for _, x := range a.order {
		if fb.port[x.port].PeerSwitch == "" {
			continue
		}
		var path []node
		pos := map[node]int{}
		n := node{x.port, x.prio}
		for {
			if i, ok := pos[n]; ok {
				cyc := path[i:]
				lo := 0
				for j, c := range cyc {
					if c.port < cyc[lo].port {
						lo = j
					}
				}
				out := make([]CyclePort, 0, len(cyc))
				for j := range cyc {
					c := cyc[(lo+j)%len(cyc)]
					out = append(out, CyclePort{Switch: fb.switchName(fb.portSw[c.port]), Port: c.port, Priority: c.prio, Frames: fb.windowFrames(c.port, c.prio)})
				}
				return out
			}
			pos[n] = len(path)
			path = append(path, n)
			m, ok := nextOf(n)
			if !ok {
				break
			}
			n = m
		}
	}
	return nil
}

// cycleText is "s1:201 → s2:203 → s1".
func cycleText(c []CyclePort) string {
	var b strings.Builder
	for _, p := range c {
		fmt.Fprintf(&b, "%s:%d → ", p.Switch, p.Port)
	}
	b.WriteString(c[0].Switch)
	return b.String()
}

func cycleFrames(c []CyclePort) string {
	s := make([]string, len(c))
	for i, p := range c {
		s[i] = fmt.Sprintf("%s:%d %d", p.Switch, p.Port, p.Frames)
	}
	return strings.Join(s, ", ")
}
