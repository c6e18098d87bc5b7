package pfc

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// Defaults of Options.
const (
	DefaultLinkBps       = 100e9
	DefaultDetectionNs   = int64(100 * time.Millisecond)
	DefaultRestorationNs = int64(200 * time.Millisecond)
	// RatioWarning is Collie's anomaly threshold of the pause duration
	// ratio (0.1%).
	RatioWarning = 0.001
	// MaxEpisodes bounds the episodes kept (later ones are counted only).
	MaxEpisodes = 10000
	// MaxViolations bounds the violations listed.
	MaxViolations = 1000
	// MaxCauses bounds the causality chains built.
	MaxCauses = 1000
	// FlowActiveNs: a flow whose last packet came at most this long before
	// a pause of its sender counts as stalled by it.
	FlowActiveNs = int64(time.Millisecond)
	pfcWireBits  = (roce.MACControlMinLen + 4 + 20) * 8 // frame, FCS, preamble and IFG
)

// Host is a host cabled to a switch port.
type Host struct {
	Name string
	Port uint16
	IPs  []netip.Addr
}

// Options configure an Analyzer. The zero value is usable.
type Options struct {
	// LinkBps is the link speed. Default (0) DefaultLinkBps.
	LinkBps int64
	// UncertaintyNs is the timestamp uncertainty U: how much later than
	// its arrival a frame's timestamp may be. Default 0.
	UncertaintyNs int64
	// SentUncertaintyNs, W, is how much later than its departure the
	// timestamp of a PFC frame the switch sent may be
	// (model.Params.SentUncertaintyNs). Default nil: UncertaintyNs.
	SentUncertaintyNs *int64
	// LatenessNs is how much later than its reaction time a host may have
	// applied a pause (a software RNIC on a real clock,
	// model.Params.PauseLatenessNs). A frame beyond the reaction bound by at
	// most UncertaintyNs + LatenessNs is inconclusive. Default 0.
	LatenessNs int64
	// RTTNs is the switch↔host round trip added to the reaction bound.
	// Default 0.
	RTTNs int64
	// DetectionNs, RestorationNs: storm detection and watchdog
	// restoration times. Default (0) DefaultDetectionNs, DefaultRestorationNs.
	DetectionNs, RestorationNs int64
	// DSCPToPriority maps a DSCP to its priority. Default nil: DSCP >> 3.
	DSCPToPriority *[64]uint8
	// Hosts maps ports to hosts. Default nil: ports only.
	Hosts []Host
	// Fabric is the topology of a run with several switches
	// (model.Meta.Fabric): the analysis then also builds the fabric-wide
	// wait-for graph (Result.Fabric) and the deadlock check
	// (Result.Deadlock). Default nil: one switch.
	Fabric *model.Fabric
	// FabricHosts are the hosts of the fabric with their addresses (their
	// ports in Fabric.Ports): the routes name them.
	FabricHosts []Host
	// SwitchWatchdog is the switches' PFC watchdog log
	// (model.Switch.Watchdog): with a fabric, a storm stopped at the switch
	// whose logged watchdog storm fired on its root port. Nil: firings are
	// inferred from the trace.
	SwitchWatchdog []model.WatchdogEvent
	// DeadlockNs is the deadlock window after the last RoCE copy
	// (model.Params.DeadlockNs); 0: the deadlock check is skipped.
	DeadlockNs int64
}

// ReactionBoundNs returns the 802.3 reaction bound D(s) at linkBps
// (roce.PauseReactionBoundNs: the nearest listed speed at or above an
// unlisted one, the last beyond).
func ReactionBoundNs(linkBps int64) int64 {
	ns, _ := roce.PauseReactionBoundNs(linkBps)
	return ns
}

// dirState is one direction of one (port, priority).
type dirState struct {
	st       DirStats
	on       bool
	start    int64
	until    int64
	ep       *Episode // current episode (nil when not paused or not kept)
	epIdx    int      // its index in the Analyzer's episodes, -1 none
	await    *Episode // last closed sent episode waiting for first-after packets
	curStart int64
	curIndex int
	curInj   bool
	// covers are the episode's pause frames (XOFF) whose time has not run
	// out, oldest first: a frame the host sends is measured from the
	// oldest pause still in force, not from the episode's first.
	covers []cover
	frames int
	xoff   int
	lastNs int64 // last frame
	// storm state (received)
	storming    bool
	stormEp     int
	episodes    []int // indices of kept episodes
	lastClose   int64
	maxReaction int64
	hasMax      bool
}

// cover is one pause frame of an episode: its stamp, when its quanta run
// out, and its trace index.
type cover struct {
	at, end int64
	index   int
}

// maxCovers bounds an episode's covers (the oldest go first: measuring
// from a later pause is only ever more lenient).
const maxCovers = 4096

type portPrio struct {
	port uint16
	prio int
	host int // index in hosts, -1
	rx   dirState
	tx   dirState
	// bytesTo counts bytes of RoCE frames to the host of this priority.
	bytesTo int64
	// checked counts the RoCE frames of this priority the host sent once
	// the switch had paused it on this priority: what the reaction check
	// looked at (none: nothing to check).
	checked int
}

type flowSeen struct {
	t     int64
	depth int64 // egress queue depth its last packet joined (model.Pkt.QDepth)
	prio  int8
	ok    bool
}

// Analyzer collects the PFC statistics as the packets flow. MAC and
// Observe do not allocate in steady state (they may when an episode
// opens or a port is first seen).
type Analyzer struct {
	opt     Options
	sentU   int64 // W (Options.SentUncertaintyNs, its default applied)
	table   *model.Table
	bps     int64
	bound   int64
	hosts   []Host
	hostOf  map[netip.Addr]int
	pp      map[uint32]*portPrio // port<<3 | prio
	order   []*portPrio
	flows   []flowSeen
	eps     []*Episode
	dropped int
	viol    []Violation // the first MaxViolations
	nfail   int         // violations that fail, listed or not
	ninc    int         // violations within U + lateness, listed or not
	bad     []Malformed
	frames  int
	first   int64
	last    int64
	started bool
	mm      roce.MACMirror
	mf      roce.MACControlFrame
	wd      []Watchdog
	fab     *fabric // nil: one switch
}

// New returns an Analyzer for the connections of t.
func New(t *model.Table, opt Options) *Analyzer {
	a := &Analyzer{opt: opt, table: t, hostOf: map[netip.Addr]int{}, pp: map[uint32]*portPrio{}}
	a.sentU = opt.UncertaintyNs
	if w := opt.SentUncertaintyNs; w != nil {
		a.sentU = max(0, *w)
	}
	a.bps = opt.LinkBps
	if a.bps <= 0 {
		a.bps = DefaultLinkBps
	}
	if a.opt.DetectionNs <= 0 {
		a.opt.DetectionNs = DefaultDetectionNs
	}
	if a.opt.RestorationNs <= 0 {
		a.opt.RestorationNs = DefaultRestorationNs
	}
	a.bound = ReactionBoundNs(a.bps) + ceilDiv(pfcWireBits*1e9, a.bps) + max(0, opt.RTTNs)
	a.hosts = opt.Hosts
	for i, h := range a.hosts {
		for _, ip := range h.IPs {
			if _, ok := a.hostOf[ip]; !ok {
				a.hostOf[ip] = i
			}
		}
	}
	if t != nil {
		a.flows = make([]flowSeen, 2*len(t.Conns))
	}
	if opt.Fabric != nil {
		a.fab = newFabric(opt.Fabric, opt.FabricHosts, opt.DeadlockNs)
	}
	return a
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func (a *Analyzer) note(t int64) {
	if !a.started {
		a.first, a.started = t, true
	}
	a.last = max(a.last, t)
}

func (a *Analyzer) portPrio(port uint16, prio int) *portPrio {
	k := uint32(port)<<3 | uint32(prio)
	if x := a.pp[k]; x != nil {
		return x
	}
	x := &portPrio{port: port, prio: prio, host: -1}
	x.rx.epIdx, x.tx.epIdx = -1, -1
	for i, h := range a.hosts {
		if h.Port == port {
			x.host = i
			break
		}
	}
	a.pp[k] = x
	a.order = append(a.order, x)
	return x
}

func (a *Analyzer) hostName(x *portPrio) string {
	if x.host < 0 {
		return ""
	}
	return a.hosts[x.host].Name
}

// unwrap extends a 48-bit timestamp to the int64 nearest ref.
func unwrap(raw uint64, ref int64) int64 {
	const span = int64(roce.MirrorTimeMask) + 1
	t := ref - ref%span + int64(raw)
	switch {
	case t-ref > span/2:
		t -= span
	case ref-t > span/2:
		t += span
	}
	return t
}

// MAC feeds a wrapped mirror copy (trace.IsMACMirror) with its trace
// index.
func (a *Analyzer) MAC(frame []byte, index int) {
	if roce.ParseMACMirror(frame, &a.mm) != nil {
		return
	}
	a.frames++
	now := unwrap(a.mm.TimestampNs, a.last)
	if !a.started {
		now = int64(a.mm.TimestampNs)
	}
	a.note(now)
	f := &a.mf
	if err := roce.ParseMACControl(a.mm.Frame, f); err != nil {
		if len(a.bad) < MaxViolations {
			a.bad = append(a.bad, Malformed{Index: index, Detail: fmt.Sprintf("port %d: %v", a.mm.Port, err)})
		}
		return
	}
	inj := a.mm.Event == roce.EventPause
	for p := range roce.PFCPriorities {
		var q uint16
		pause := f.Opcode == roce.MACControlPause
		switch {
		case pause:
			q = f.PauseTime
		case f.Enabled(p):
			q = f.Time[p]
		default:
			continue
		}
		x := a.portPrio(a.mm.Port, p)
		d := &x.rx
		dir := DirReceived
		if a.mm.Sent {
			d, dir = &x.tx, DirSent
			if a.fab != nil {
				a.fabricFrame(a.mm.Port, p, now)
			}
		}
		a.frame(x, d, dir, now, index, q, pause, inj)
	}
}

// frame applies one pause frame of quanta q to direction d.
func (a *Analyzer) frame(x *portPrio, d *dirState, dir string, now int64, index int, q uint16, pause, inj bool) {
	if pause {
		d.st.PauseFrames++
	} else {
		d.st.Frames++
		d.st.Quanta += uint64(q)
		if q == 0 {
			d.st.XON++
		} else {
			d.st.XOFF++
		}
	}
	if inj {
		d.st.Injected++
	}
	if dir == DirReceived && d.storming && now-d.lastNs >= a.opt.RestorationNs {
		a.restore(x, d, d.lastNs+a.opt.RestorationNs)
	}
	d.lastNs = now
	a.settle(x, d, dir, now)
	until := now + int64(roce.QuantaToDuration(q, a.bps))
	if !d.on {
		if q == 0 {
			return
		}
		a.open(x, d, dir, now, index, inj)
	}
	d.frames++
	if q != 0 {
		d.xoff++
	}
	if d.ep != nil {
		d.ep.lastPauseNs, d.ep.lastPauseQuanta = now, q
	}
	if q == 0 {
		a.close(x, d, dir, now, EndXON)
		return
	}
	d.until = until
	if len(d.covers) == maxCovers {
		d.covers = d.covers[:copy(d.covers, d.covers[1:])]
	}
	d.covers = append(d.covers, cover{at: now, end: until, index: index})
}

// settle closes d's episode if its pause expired by now, and detects a
// storm on a received episode still running past the detection time.
func (a *Analyzer) settle(x *portPrio, d *dirState, dir string, now int64) {
	if !d.on {
		return
	}
	if d.until <= now {
		a.close(x, d, dir, d.until, EndExpiry)
		return
	}
	if dir == DirReceived && !d.storming && now > d.start+a.opt.DetectionNs {
		a.storm(x, d)
	}
}

func (a *Analyzer) open(x *portPrio, d *dirState, dir string, now int64, index int, inj bool) {
	d.on, d.start = true, now
	d.frames, d.xoff = 0, 0
	d.curStart, d.curIndex, d.curInj = now, index, inj
	d.st.Episodes++
	if d.await != nil && dir == DirSent {
		d.await = nil
	}
	d.ep, d.epIdx = nil, -1
	if len(a.eps) >= MaxEpisodes {
		a.dropped++
		return
	}
	a.eps = append(a.eps, &Episode{ID: len(a.eps), Port: x.port, Host: a.hostName(x), Priority: x.prio, Direction: dir,
		StartNs: now, StartIndex: index, Injected: inj})
	d.epIdx = len(a.eps) - 1
	d.episodes = append(d.episodes, d.epIdx)
	d.ep = a.eps[d.epIdx]
	if dir == DirSent && a.fab != nil {
		d.ep.fc = a.fabricCause(x, now)
	}
	if dir == DirSent && x.host >= 0 && a.table != nil {
		// Flows of the host active just before the pause: candidates for
		// a stall.
		for fi, f := range a.flows {
			if !f.ok || int(f.prio) != x.prio || f.t < now-FlowActiveNs || f.t > now {
				continue
			}
			c := a.table.Conns[fi/2]
			src := c.Requester.IP
			if fi%2 == 1 {
				src = c.Responder.IP
			}
			if h, ok := a.hostOf[src]; !ok || h != x.host {
				continue
			}
			t := f.t
			d.ep.Flows = append(d.ep.Flows, Flow{Conn: c.ID, Direction: flowDir(fi), LastBeforeNs: &t, idx: fi / 2, depth: f.depth})
		}
	}
}

func flowDir(fi int) string {
	if fi%2 == 0 {
		return model.ToResponder.String()
	}
	return model.ToRequester.String()
}

func (a *Analyzer) close(x *portPrio, d *dirState, dir string, end int64, how string) {
	d.on = false
	d.covers = d.covers[:0]
	dur := end - d.start
	d.st.PausedUnclippedNs += dur
	d.lastClose = end
	if dir == DirReceived && !d.storming && dur > a.opt.DetectionNs {
		a.storm(x, d)
	}
	if dur > a.opt.DetectionNs {
		d.st.Storms++
	}
	if e := d.ep; e != nil {
		e.EndNs, e.DurationNs, e.End = end, dur, how
		e.Frames, e.XOFF = d.frames, d.xoff
		e.Storm = dur > a.opt.DetectionNs
		if dir == DirSent {
			d.await = e
		}
	}
	d.ep = nil
}

// storm records the switch watchdog's firing on a received episode.
func (a *Analyzer) storm(x *portPrio, d *dirState) {
	d.storming = true
	d.stormEp = d.epIdx
	at := d.start + a.opt.DetectionNs
	a.wd = append(a.wd, Watchdog{Kind: WatchdogSwitchStorm, Port: x.port, Host: a.hostName(x), Priority: x.prio, AtNs: at, Episode: d.epIdx,
		Detail: fmt.Sprintf("paused without interruption since %s for the detection time %s: the switch turns lossless mode off",
			model.FormatMicros(d.start), model.FormatMicros(a.opt.DetectionNs))})
}

func (a *Analyzer) restore(x *portPrio, d *dirState, at int64) {
	d.storming = false
	a.wd = append(a.wd, Watchdog{Kind: WatchdogSwitchRestore, Port: x.port, Host: a.hostName(x), Priority: x.prio, AtNs: at, Episode: d.stormEp,
		Detail: fmt.Sprintf("no pause since %s for the restoration time %s: lossless mode back on",
			model.FormatMicros(at-a.opt.RestorationNs), model.FormatMicros(a.opt.RestorationNs))})
}

// Observe feeds one RoCE packet with its frame (for the DSCP) and its
// length on the wire.
func (a *Analyzer) Observe(p *model.Pkt, frame []byte, origLen int) {
	a.ObservePriority(p, a.priority(frame), origLen)
}

// Priority is the priority Observe reads from frame (its DSCP, mapped
// by Options.DSCPToPriority). It reads no state Observe changes: frames
// can be read on other goroutines than the one calling Observe.
func (a *Analyzer) Priority(frame []byte) int { return a.priority(frame) }

// ObservePriority is Observe of a frame of priority prio (Priority).
func (a *Analyzer) ObservePriority(p *model.Pkt, prio, origLen int) {
	atSrc, atDst := true, true
	if a.fab != nil {
		// Every switch copies the packet: the one-switch analysis reads
		// a host's packets at its own switch.
		sw := int(p.Switch)
		a.fabricObserve(p, sw, prio)
		atSrc, atDst = a.atHostSwitch(p.SrcIP.Addr(), sw), a.atHostSwitch(p.DstIP.Addr(), sw)
	}
	if atSrc && p.Conn >= 0 && p.Dir != model.DirNone && !p.Late() && !p.Copy() {
		fi := 2 * p.Conn
		if p.Dir == model.ToRequester {
			fi++
		}
		if fi < len(a.flows) {
			a.flows[fi] = flowSeen{t: p.TimeNs, depth: p.QDepth, prio: int8(prio), ok: true}
		}
	}
	a.note(p.TimeNs)
	if a.frames == 0 {
		return
	}
	if p.Late() || p.Copy() {
		return
	}
	if h, ok := a.hostOf[p.SrcIP.Addr()]; ok && atSrc {
		if x := a.pp[uint32(a.hosts[h].Port)<<3|uint32(prio)]; x != nil {
			a.fromHost(x, p, origLen)
		}
	}
	if h, ok := a.hostOf[p.DstIP.Addr()]; ok && atDst {
		if x := a.pp[uint32(a.hosts[h].Port)<<3|uint32(prio)]; x != nil {
			x.bytesTo += int64(origLen)
			a.settle(x, &x.rx, DirReceived, p.TimeNs)
			if e := x.rx.ep; e != nil {
				e.bytesToHost += int64(origLen)
				if p.Conn >= 0 && p.Conn < len(a.table.Conns) {
					addDuring(&e.Flows, p, a.table.Conns[p.Conn].ID)
				}
			}
		}
	}
}

func addDuring(fs *[]Flow, p *model.Pkt, id int) {
	dir := p.Dir.String()
	for i := range *fs {
		if f := &(*fs)[i]; f.idx == p.Conn && f.Direction == dir {
			f.During++
			return
		}
	}
	*fs = append(*fs, Flow{Conn: id, Direction: dir, During: 1, idx: p.Conn})
}

// fromHost handles a packet the host on x's port sent with x's priority.
func (a *Analyzer) fromHost(x *portPrio, p *model.Pkt, origLen int) {
	d := &x.tx
	a.settle(x, d, DirSent, p.TimeNs)
	if d.st.Episodes > 0 {
		x.checked++
	}
	if w := d.await; w != nil && p.Conn >= 0 {
		dir := p.Dir.String()
		for i := range w.Flows {
			if f := &w.Flows[i]; f.idx == p.Conn && f.Direction == dir && f.FirstAfterNs == nil {
				t := p.TimeNs
				f.FirstAfterNs = &t
			}
		}
	}
	if !d.on {
		return
	}
	// The reaction is measured from the oldest pause still in force: in a
	// refreshed episode a host that applied one refresh late may send
	// once the previous one ran out, which is lateness, not a frame sent
	// long after the episode's first pause (netns under load).
	k := 0
	for k < len(d.covers) && d.covers[k].end < p.TimeNs {
		k++
	}
	if k > 0 {
		d.covers = d.covers[:copy(d.covers, d.covers[k:])]
	}
	from, fromIndex := d.start, d.curIndex
	if len(d.covers) > 0 {
		from, fromIndex = d.covers[0].at, d.covers[0].index
	}
	after := p.TimeNs - from
	if e := d.ep; e != nil {
		e.reaction, e.lastIdx, e.hasReaction = after, p.Index, true
		if p.Conn >= 0 {
			dir := p.Dir.String()
			for i := range e.Flows {
				if f := &e.Flows[i]; f.idx == p.Conn && f.Direction == dir {
					f.During++
				}
			}
		}
	}
	if !d.hasMax || d.maxReaction < after {
		d.maxReaction, d.hasMax = after, true
	}
	bound := a.bound + ceilDiv(int64(origLen+4+20)*8*1e9, a.bps)
	// The frame's true reaction is at most after + W (the pause left at
	// most W before its stamp, the frame arrived at or before its own) and
	// at least after − U (the frame arrived at most U before its stamp).
	margin := after - bound
	if margin+a.sentU <= 0 {
		return
	}
	v := model.Fail
	if margin <= a.opt.UncertaintyNs+a.opt.LatenessNs { // a late host only ever stops later
		v = model.Inconclusive
	}
	if v == model.Fail {
		d.st.Violations++
		if d.ep != nil {
			d.ep.Violations++
		}
		a.nfail++
	} else {
		a.ninc++
	}
	if len(a.viol) < MaxViolations {
		a.viol = append(a.viol, Violation{Port: x.port, Host: a.hostName(x), Priority: x.prio, Episode: d.epIdx, PauseIndex: fromIndex,
			PauseNs: from, Index: p.Index, TimeNs: p.TimeNs, Conn: p.Conn, AfterNs: after, BoundNs: bound, Verdict: v})
	}
}

// priority returns the priority of a RoCE frame from its DSCP.
func (a *Analyzer) priority(b []byte) int { return a.PriorityOfTOS(roce.FrameTOS(b)) }

// PriorityOfTOS is Priority of a frame whose IP TOS byte (roce.FrameTOS)
// is tos.
func (a *Analyzer) PriorityOfTOS(tos uint8) int {
	dscp := tos >> 2
	if m := a.opt.DSCPToPriority; m != nil {
		return int(m[dscp] & 7)
	}
	return int(dscp >> 3)
}

// Finish returns the result; the zero Result when the trace had no
// wrapped MAC Control copies.
func (a *Analyzer) Finish() Result {
	if a.frames == 0 {
		if a.fab != nil {
			return Result{Deadlock: a.deadlock()}
		}
		return Result{}
	}
	end := a.last
	span := end - a.first
	r := Result{LinkGbps: float64(a.bps) / 1e9, ReactionBoundNs: a.bound, UncertaintyNs: a.opt.UncertaintyNs, SentUncertaintyNs: a.sentU, LatenessNs: a.opt.LatenessNs, SpanNs: span,
		Frames: a.frames, Malformed: a.bad, Violations: a.viol, Ports: []PortStats{}}
	sort.Slice(a.order, func(i, j int) bool {
		if a.order[i].port != a.order[j].port {
			return a.order[i].port < a.order[j].port
		}
		return a.order[i].prio < a.order[j].prio
	})
	for _, x := range a.order {
		for _, dd := range []struct {
			d   *dirState
			dir string
		}{{&x.rx, DirReceived}, {&x.tx, DirSent}} {
			d := dd.d
			a.settle(x, d, dd.dir, end)
			if d.on {
				a.close(x, d, dd.dir, d.until, EndTraceEnd)
			}
			if dd.dir == DirReceived && d.storming && d.lastNs+a.opt.RestorationNs <= end {
				a.restore(x, d, d.lastNs+a.opt.RestorationNs)
			}
			for _, i := range d.episodes {
				e := a.eps[i]
				d.st.PausedNs += min(e.EndNs, end) - e.StartNs
			}
			d.st.PausedNs += a.unkeptPaused(d)
			if span > 0 {
				d.st.PauseRatio = float64(d.st.PausedNs) / float64(span)
			}
		}
		if x.tx.hasMax {
			x.tx.st.MaxReactionNs = &x.tx.maxReaction
		}
		ps := PortStats{Port: x.port, Host: a.hostName(x), Priority: x.prio, Received: x.rx.st, Sent: x.tx.st}
		if x.host >= 0 {
			ps.IPs = a.hosts[x.host].IPs
		}
		a.classify(x, &ps, &r)
		for _, w := range []struct {
			s   *DirStats
			who string
		}{{&ps.Received, "received from"}, {&ps.Sent, "sent to"}} {
			if w.s.PauseRatio > RatioWarning {
				msg := fmt.Sprintf("port %d%s priority %d: pause duration ratio of the pauses %s the host %.3f%% > 0.1%%",
					x.port, paren(ps.Host), x.prio, w.who, 100*w.s.PauseRatio)
				ps.Warnings = append(ps.Warnings, msg)
				r.Warnings = append(r.Warnings, msg)
			}
		}
		r.Ports = append(r.Ports, ps)
	}
	if a.fab == nil {
		r.Causality = a.causality()
	}
	r.Episodes = make([]Episode, len(a.eps))
	for i, e := range a.eps {
		if e.hasReaction {
			e.ReactionNs, e.LastFrameIndex = &e.reaction, &e.lastIdx
		}
		r.Episodes[i] = *e
	}
	r.EpisodesDropped = a.dropped
	if r.Violations == nil {
		r.Violations = []Violation{}
	}
	sort.SliceStable(a.wd, func(i, j int) bool { return a.wd[i].AtNs < a.wd[j].AtNs })
	r.Watchdogs = a.wd
	if a.fab != nil {
		a.fabricFinish(&r)
	}
	fails, inc := a.nfail, a.ninc
	paused, unchecked := a.unchecked()
	switch {
	case len(a.bad) > 0 || fails > 0:
		r.Verdict = model.Fail
		var why []string
		if fails > 0 {
			why = append(why, fmt.Sprintf("%d frames sent while paused beyond the reaction bound", fails))
		}
		if len(a.bad) > 0 {
			why = append(why, fmt.Sprintf("%d malformed PFC copies", len(a.bad)))
		}
		r.Reason = join(why)
	case inc > 0:
		r.Verdict = model.Inconclusive
		r.Reason = fmt.Sprintf("%d frames after the reaction bound within the timestamp uncertainty", inc)
		if a.opt.LatenessNs > 0 {
			r.Reason += fmt.Sprintf(" and the hosts' pause lateness (%s)", model.FormatMicros(a.opt.LatenessNs))
		}
	case len(unchecked) > 0 && len(unchecked) == paused:
		r.Verdict = model.Skip
		r.Reason = "nothing to check: " + join(unchecked)
	default:
		r.Verdict = model.Pass
		if len(a.hosts) == 0 {
			r.Reason = "no switch_ports in the metadata: reaction times not measured"
		} else if len(unchecked) > 0 {
			r.Reason = "not checked: " + join(unchecked)
		}
	}
	return r
}

// unchecked returns how many (port, priority) the switch paused a known
// host on, and a sentence for each of them whose host sent no RoCE frame
// of that priority once paused: the reaction check had nothing to look
// at there (a flow on another priority, or none left).
func (a *Analyzer) unchecked() (paused int, out []string) {
	for _, x := range a.order {
		if x.tx.st.Episodes == 0 || x.host < 0 {
			continue
		}
		paused++
		if x.checked > 0 {
			continue
		}
		var prios [roce.PFCPriorities]bool
		for fi, f := range a.flows {
			c := a.table.Conns[fi/2]
			src := c.Requester.IP
			if fi%2 == 1 {
				src = c.Responder.IP
			}
			if h, ok := a.hostOf[src]; ok && h == x.host && f.ok {
				prios[f.prio&7] = true
			}
		}
		var used []string
		for p, ok := range prios {
			if ok {
				used = append(used, fmt.Sprint(p))
			}
		}
		its := "it sent no RoCE frame"
		if len(used) > 0 {
			its = "its RoCE frames were on priority " + strings.Join(used, ", ")
		}
		out = append(out, fmt.Sprintf("the switch paused port %d%s on priority %d, but no RoCE frame of priority %d came from it once paused (%s; see traffic.dscp-list)",
			x.port, paren(a.hostName(x)), x.prio, x.prio, its))
	}
	return paused, out
}

// unkeptPaused is the paused time of episodes beyond MaxEpisodes.
func (a *Analyzer) unkeptPaused(d *dirState) int64 {
	kept := int64(0)
	for _, i := range d.episodes {
		kept += a.eps[i].DurationNs
	}
	return max(0, d.st.PausedUnclippedNs-kept)
}

// classify labels the received episodes of x and derives the NIC
// watchdog firings and the slow-receiver summary.
func (a *Analyzer) classify(x *portPrio, ps *PortStats, r *Result) {
	eps := x.rx.episodes
	var sr SlowReceiver
	var srBytes int64
	for k, i := range eps {
		e := a.eps[i]
		switch {
		case e.Storm:
			e.Kind = KindStorm
		case e.End == EndXON:
			e.Kind = KindSlowReceiver
		case e.End == EndExpiry:
			e.Kind = KindExpired
		default:
			e.Kind = KindOpen
		}
		if e.Kind == KindSlowReceiver {
			sr.Episodes++
			sr.PausedNs += e.DurationNs
			srBytes += e.bytesToHost
		}
		if k == len(eps)-1 && e.End == EndExpiry && e.XOFF >= 2 && a.dropped == 0 {
			a.wd = append(a.wd, Watchdog{Kind: WatchdogNIC, Port: x.port, Host: a.hostName(x), Priority: x.prio, AtNs: e.lastPauseNs, Episode: e.ID,
				Detail: fmt.Sprintf("the host paused from %s to its last pause at %s (%s), then stopped for good without XON: its storm watchdog (inferred)",
					model.FormatMicros(e.StartNs), model.FormatMicros(e.lastPauseNs), model.FormatMicros(e.lastPauseNs-e.StartNs))})
		}
	}
	ps.Received.SlowReceiver = sr.Episodes
	if sr.Episodes > 0 {
		sr.Port, sr.Host, sr.Priority = x.port, a.hostName(x), x.prio
		if x.host >= 0 && sr.PausedNs > 0 {
			g := float64(srBytes*8) / float64(sr.PausedNs)
			sr.RxGbps = &g
		}
		r.SlowReceivers = append(r.SlowReceivers, sr)
	}
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
