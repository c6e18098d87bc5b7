package events

import (
	"fmt"
	"sort"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// Directions of a flow.
const (
	DirData     = "data"
	DirResponse = "response" // the responder's ACK/NAK packets of a WRITE/SEND connection
	DirRequest  = "request"  // the READ requests of a READ connection
)

// Entry is one tagged packet (for duplicate: one original and its copies).
type Entry struct {
	Conn       int        `json:"conn"`
	Direction  string     `json:"direction"`
	Type       roce.Event `json:"type"`
	PSN        uint32     `json:"psn"`
	RelPSN     int        `json:"rel_psn"`
	Occurrence int        `json:"occurrence"`
	// Iter is the configured event's ITER, when one matched.
	Iter   int   `json:"iter,omitempty"`
	Index  int   `json:"index"`
	TimeNs int64 `json:"time_ns"`
	// HoldNs (delay, reorder) is the measured hold: from the packet's
	// own arrival when the copy carries it (ArrivalNs set, HoldUnitNs the
	// resolution), else from its predecessor's departure, PredIndex the
	// predecessor's trace index (-1: none).
	HoldNs     *int64 `json:"hold_ns,omitempty"`
	ArrivalNs  *int64 `json:"arrival_ns,omitempty"`
	HoldUnitNs int64  `json:"hold_unit_ns,omitempty"`
	PredIndex  int    `json:"pred_index"`
	// Depth (reorder) is the number of later-PSN packets of the flow that
	// passed it (with holds: the packets of its flow that left while it
	// was held). DepthAmbiguous more left at the very instant it did,
	// released by the switch with it: each either passed it or left with
	// it, the trace cannot tell.
	Depth          *int `json:"depth,omitempty"`
	DepthAmbiguous int  `json:"depth_ambiguous,omitempty"`
	// Copies (duplicate) is the number of copies observed.
	Copies *int `json:"copies,omitempty"`
	// Configured values, when an event matched.
	DelayNs          *int64 `json:"delay_ns,omitempty"`
	Overtakers       *int   `json:"overtakers,omitempty"`
	MaxHoldNs        *int64 `json:"max_hold_ns,omitempty"`
	ConfiguredCopies *int   `json:"configured_copies,omitempty"`
	// Verdict is pass, fail or inconclusive with Meta.Events, "" without.
	Verdict model.Verdict `json:"verdict,omitempty"`
	Detail  string        `json:"detail,omitempty"`
}

// Result is the events section of the report.
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	Events  []Entry       `json:"events"`
}

// Options configure an Analyzer.
type Options struct {
	// Events are the configured events (Meta.Events). Default nil:
	// measurements only, verdict skip.
	Events []model.Event
	// UncertaintyNs is the timestamp uncertainty U. Default 0.
	UncertaintyNs int64
	// Holds: the trace's held copies carry their hold (Params.MirrorHolds),
	// so no predecessor is looked up and no first-departure table kept.
	// Default false.
	Holds bool
}

const histLen = 64

type seen struct {
	t    int64
	idx  int
	psn  roce.PSN
	copy bool
	// reorder: a packet a reorder event held (released with the packets
	// whose count its overtaker reached, it is none of theirs).
	reorder bool
}

// set records p in s field by field: a seen built first and then copied
// is written to the stack and read back in wider loads, which stalls
// store forwarding (Intel 64 and IA-32 Architectures Optimization
// Reference Manual, "Store Forwarding") on every packet.
func (s *seen) set(p *model.Pkt) {
	s.t, s.idx, s.psn = p.TimeNs, p.Index, p.PSN
	s.copy, s.reorder = p.Event == roce.EventDuplicate, p.Event == roce.EventReorder
}

type flow struct {
	hist [histLen]seen
	n    int
	// deps are the last depLen departures of a flow with a configured
	// reorder event, when the trace carries holds: a reorder's overtakers
	// are the departures since its arrival.
	deps *[depLen]seen
	dup  int // entry of the last duplicate group, -1 none
	// first holds, by PSN modulo firstLen, the first departure of each
	// PSN: the predecessor of a held first transmission however many
	// packets passed it. Only for connections with configured events.
	first *[firstLen]seen
}

// firstLen bounds the PSN distance over which a held packet's predecessor
// and overtakers are found (reorder overtakers are at most 255).
const firstLen = 4096

// depLen bounds the departures counted as a reorder's overtakers: more than
// the 255 a reorder event can ask for.
const depLen = 512

type key struct {
	conn int
	dir  string
	psn  uint32
	typ  roce.Event
}

// Analyzer collects the entries as the packets flow. Observe does not
// allocate except to record an entry.
type Analyzer struct {
	opt     Options
	table   *model.Table
	flows   []flow // 2 per connection: data, response
	entries []Entry
	occ     map[key]int
	// dataDir is, by connection, the direction of its data packets
	// (dataDir of its verb): the flow of a packet without reading the
	// table's connection.
	dataDir []model.Dir
}

// New returns an Analyzer for the connections of t.
func New(t *model.Table, opt Options) *Analyzer {
	a := &Analyzer{opt: opt, table: t, flows: make([]flow, 2*len(t.Conns)), occ: map[key]int{}, dataDir: make([]model.Dir, len(t.Conns))}
	for i := range a.flows {
		a.flows[i].dup = -1
	}
	for i, c := range t.Conns {
		a.dataDir[i] = dataDir(c.Verb)
	}
	for _, e := range opt.Events {
		if e.Conn >= 0 && e.Conn < len(t.Conns) && e.Type.Held() {
			fi := 2 * e.Conn
			if e.Direction != "" && e.Direction != DirData {
				fi++
			}
			for _, f := range []int{fi, 2 * e.Conn} { // a response is measured from its data packet
				if a.flows[f].first == nil && !opt.Holds {
					a.flows[f].first = new([firstLen]seen)
				}
			}
			if e.Type == roce.EventReorder && a.flows[fi].deps == nil {
				a.flows[fi].deps = new([depLen]seen)
			}
		}
	}
	return a
}

func dataDir(v model.Verb) model.Dir {
	if v == model.VerbRead {
		return model.ToRequester
	}
	return model.ToResponder
}

// Observe feeds one packet. Most packets carry no event: they are only
// recorded in their flow's history.
func (a *Analyzer) Observe(p *model.Pkt) {
	if p.Conn < 0 || p.Kind == model.KindCNP || p.Kind == model.KindOther {
		return
	}
	fi := 2 * p.Conn
	if p.Dir != a.dataDir[p.Conn] {
		fi++
	}
	f := &a.flows[fi]
	if p.Event != roce.EventNone {
		a.event(f, fi, p)
	}
	if f.deps != nil {
		f.deps[uint(f.n)%depLen].set(p)
	}
	f.hist[uint(f.n)%histLen].set(p)
	f.n++
	if f.first != nil {
		if slot := &f.first[uint32(p.PSN)%firstLen]; slot.idx == 0 && slot.t == 0 || slot.psn != p.PSN {
			slot.set(p)
		}
	}
}

// event measures a packet of flow fi (f) with a switch event, before it
// is recorded.
func (a *Analyzer) event(f *flow, fi int, p *model.Pkt) {
	c := &a.table.Conns[p.Conn]
	dir := DirData
	if fi&1 == 1 {
		dir = DirResponse
		if c.Verb == model.VerbRead {
			dir = DirRequest
		}
	}
	switch p.Event {
	case roce.EventDelay, roce.EventReorder:
		if p.HoldUnitNs > 0 {
			a.heldOwn(f, *c, dir, p)
			break
		}
		if dir == DirResponse {
			a.heldResponse(&a.flows[2*p.Conn], *c, p)
			break
		}
		a.held(f, *c, dir, p)
	case roce.EventDuplicate:
		if f.n > 0 {
			if prev := f.hist[(f.n-1)%histLen]; prev.psn == p.PSN && f.dup >= 0 && prev.copy {
				*a.entries[f.dup].Copies++
				break
			}
		}
		one := 1
		a.entries = append(a.entries, a.entry(*c, dir, p, -1))
		f.dup = len(a.entries) - 1
		a.entries[f.dup].Copies = &one
	}
}

func (a *Analyzer) entry(c model.Conn, dir string, p *model.Pkt, pred int) Entry {
	k := key{c.ID, dir, uint32(p.PSN), p.Event}
	a.occ[k]++
	return Entry{Conn: c.ID, Direction: dir, Type: p.Event, PSN: uint32(p.PSN),
		RelPSN: p.PSN.Sub(c.IPSN), Occurrence: a.occ[k], Index: p.Index, TimeNs: p.TimeNs, PredIndex: pred}
}

// heldOwn measures a delayed or reordered packet whose mirror copy
// carries its hold: hold_ns is the switch's departure minus its arrival,
// and a reorder's depth counts the packets of its flow that left in
// between (originals, copies and released packets, as the switch counts
// them); a reorder-held packet that left at the same instant is either
// its overtaker or released with it (DepthAmbiguous).
func (a *Analyzer) heldOwn(f *flow, c model.Conn, dir string, p *model.Pkt) {
	e := a.entry(c, dir, p, -1)
	h, at := p.HoldNs, p.ArrivalNs()
	e.HoldNs, e.ArrivalNs, e.HoldUnitNs = &h, &at, p.HoldUnitNs
	if p.Event == roce.EventReorder {
		d := 0
		ring, size := f.hist[:], histLen
		if f.deps != nil {
			ring, size = f.deps[:], depLen
		}
		for i := 1; i <= min(f.n, size); i++ {
			q := ring[(f.n-i)%size]
			if q.t <= at {
				break // stamps never decrease in trace order
			}
			if q.reorder && q.t == p.TimeNs {
				e.DepthAmbiguous++
			} else {
				d++
			}
		}
		e.Depth = &d
	}
	a.entries = append(a.entries, e)
}

// heldResponse measures a delayed or reordered ACK/NAK from the first
// departure of the data packet it answers (same PSN): the hold plus the
// responder's answer time and the path, at least the hold. Its depth
// counts the later ACKs/NAKs before it.
func (a *Analyzer) heldResponse(data *flow, c model.Conn, p *model.Pkt) {
	e := a.entry(c, DirResponse, p, -1)
	if data.first != nil {
		if pr := data.first[uint32(p.PSN)%firstLen]; pr.psn == p.PSN && (pr.t != 0 || pr.idx != 0) && pr.t <= p.TimeNs {
			h := p.TimeNs - pr.t
			e.HoldNs, e.PredIndex = &h, pr.idx
		}
	}
	if p.Event == roce.EventReorder {
		f := &a.flows[2*p.Conn+1]
		d := 0
		for i := 0; i < min(f.n, histLen); i++ {
			if q := f.hist[(f.n-1-i)%histLen]; p.PSN.LessThan(q.psn) && (e.PredIndex < 0 || q.idx > e.PredIndex) {
				d++
			}
		}
		e.Depth = &d
	}
	a.entries = append(a.entries, e)
}

// held measures a delayed or reordered packet. With a first-departure
// table (a configured event on the flow) the predecessor is the first
// departure of PSN−1 and the depth counts the later PSNs whose first
// departure came between it and the held packet: exact for a first
// transmission however long the hold. Without one, the last 64 packets of
// the flow are searched.
func (a *Analyzer) held(f *flow, c model.Conn, dir string, p *model.Pkt) {
	if f.first != nil {
		if pr := f.first[uint32(p.PSN.Add(-1))%firstLen]; pr.psn == p.PSN.Add(-1) && (pr.t != 0 || pr.idx != 0) && pr.t <= p.TimeNs {
			e := a.entry(c, dir, p, pr.idx)
			h := p.TimeNs - pr.t
			e.HoldNs = &h
			if p.Event == roce.EventReorder {
				d := 0
				for j := 1; j < 512; j++ {
					q := f.first[uint32(p.PSN.Add(j))%firstLen]
					if q.psn == p.PSN.Add(j) && (q.t != 0 || q.idx != 0) && q.idx > pr.idx && q.idx < p.Index {
						d++
					}
				}
				e.Depth = &d
			}
			a.entries = append(a.entries, e)
			return
		}
	}
	kept := min(f.n, histLen)
	pred := -1 // position in hist order (0 = oldest kept)
	at := func(i int) seen { return f.hist[(f.n-kept+i)%histLen] }
	for i := kept - 1; i >= 0; i-- {
		if at(i).psn == p.PSN.Add(-1) {
			pred = i
			break
		}
	}
	if pred < 0 && kept > 0 {
		pred = kept - 1
	}
	e := a.entry(c, dir, p, -1)
	if pred >= 0 {
		h := p.TimeNs - at(pred).t
		e.HoldNs, e.PredIndex = &h, at(pred).idx
		if p.Event == roce.EventReorder {
			d := 0
			for i := pred + 1; i < kept; i++ {
				if p.PSN.LessThan(at(i).psn) {
					d++
				}
			}
			e.Depth = &d
		}
	} else if p.Event == roce.EventReorder {
		d := 0
		e.Depth = &d
	}
	a.entries = append(a.entries, e)
}

// Finish matches the entries with the configured events and returns the
// result, or the zero Result when the trace had no tagged packet.
func (a *Analyzer) Finish() Result {
	if len(a.entries) == 0 {
		return Result{}
	}
	res := Result{Events: a.entries}
	if a.opt.Events == nil {
		res.Verdict, res.Reason = model.Skip, "no injected_events in the metadata: measurements only"
		return res
	}
	conf := map[key][]model.Event{}
	for _, e := range a.opt.Events {
		dir := DirData
		if e.Direction != "" {
			dir = e.Direction
		}
		k := key{e.Conn, dir, e.PSN & roce.PSNMask, e.Type}
		conf[k] = append(conf[k], e)
	}
	for k := range conf {
		sort.SliceStable(conf[k], func(i, j int) bool { return conf[k][i].Iter < conf[k][j].Iter })
	}
	u := a.opt.UncertaintyNs
	fails, inconc := 0, 0
	for i := range res.Events {
		e := &res.Events[i]
		cs := conf[key{e.Conn, e.Direction, e.PSN, e.Type}]
		if e.Occurrence > len(cs) {
			e.Verdict, e.Detail = model.Fail, "not configured"
			fails++
			continue
		}
		ce := cs[e.Occurrence-1]
		e.Iter = ce.Iter
		e.Verdict = model.Pass
		switch e.Type {
		case roce.EventDelay:
			d := ce.DelayNs
			e.DelayNs = &d
			e.Verdict, e.Detail = e.bound(d, u, "hold")
		case roce.EventReorder:
			o, mh := ce.Overtakers, ce.MaxHoldNs
			e.Overtakers, e.MaxHoldNs = &o, &mh
			switch depth := *e.Depth; {
			case depth == o, depth < o && o <= depth+e.DepthAmbiguous:
			case depth < o && mh > 0:
				e.Verdict, e.Detail = e.bound(mh, u, "released after fewer overtakers than configured; hold")
				if e.Verdict == model.Fail {
					e.Detail = fmt.Sprintf("depth %d, %d overtakers configured, and %s", depth, o, e.Detail)
				}
			default:
				e.Verdict, e.Detail = model.Fail, fmt.Sprintf("depth %d, %d overtakers configured", depth, o)
			}
		case roce.EventDuplicate:
			n := ce.Copies
			e.ConfiguredCopies = &n
			if *e.Copies != n {
				e.Verdict, e.Detail = model.Fail, fmt.Sprintf("%d copies observed, %d configured", *e.Copies, n)
			}
		}
		switch e.Verdict {
		case model.Fail:
			fails++
		case model.Inconclusive:
			inconc++
		}
	}
	switch {
	case fails > 0:
		res.Verdict, res.Reason = model.Fail, fmt.Sprintf("%d of %d events not as configured", fails, len(res.Events))
	case inconc > 0:
		res.Verdict, res.Reason = model.Inconclusive, fmt.Sprintf("%d of %d events within the timestamp uncertainty", inconc, len(res.Events))
	default:
		res.Verdict = model.Pass
	}
	return res
}

// bound checks the measured hold ≥ want: within the hold field's
// resolution when the copy carried its hold (both ends on the switch's
// clock), else with the timestamp uncertainty u (two packets' stamps).
func (e *Entry) bound(want, u int64, what string) (model.Verdict, string) {
	measured := e.HoldNs
	if measured == nil {
		return model.Fail, "no predecessor in the trace to measure from"
	}
	if e.ArrivalNs != nil {
		if *measured+e.HoldUnitNs > want {
			return model.Pass, ""
		}
		return model.Fail, fmt.Sprintf("%s %d ns is %d ns below %d ns", what, *measured, want-*measured, want)
	}
	switch m := *measured - want; {
	case m >= 0:
		return model.Pass, ""
	case m >= -u:
		return model.Inconclusive, fmt.Sprintf("%s %d ns is %d ns below %d ns, within the timestamp uncertainty %d ns", what, *measured, -m, want, u)
	default:
		return model.Fail, fmt.Sprintf("%s %d ns is %d ns below %d ns", what, *measured, -m, want)
	}
}
