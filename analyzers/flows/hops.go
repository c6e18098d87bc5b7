package flows

// Per-hop latency in a fabric of switches.
//
// Every logical switch mirrors every packet it receives, stamped at its
// ingress (one clock for all the logical switches of one software switch
// or Tofino). The copies of one connection's packets in one direction at
// two consecutive switches of its route are the same packets in the same
// order: each port and priority is a FIFO, and one connection's packets
// share a priority and a path (routes are per host pair). So they match
// 1:1 in order, and the stamp difference is the time from entering the
// first switch to entering the next: queueing and serialization at the
// first switch's egress plus the link. A copy tagged drop never left its
// switch: it has no counterpart at the next one. CNPs are left out: they
// travel on their own priority (another queue), so they may pass the
// connection's other packets.

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// HopLatency is the latency of one hop of a flow in one direction: from
// entering switch From to entering switch To, over the flow's copies at
// both (every connection of the flow). Median and P99 are nearest-rank
// percentiles of the samples (the smallest latency with at least half,
// 99 % of the samples at or below it): exact up to HopExactNs, above it
// rounded down to 7 significant bits (less than 1/128 below the true
// value). Min and max are exact.
type HopLatency struct {
	Flow      string `json:"flow"`
	Direction string `json:"direction"` // to-responder or to-requester
	From      string `json:"from"`
	To        string `json:"to"`
	Samples   int64  `json:"samples"`
	MinNs     int64  `json:"min_ns"`
	MedianNs  int64  `json:"median_ns"`
	P99Ns     int64  `json:"p99_ns"`
	MaxNs     int64  `json:"max_ns"`
}

// HopStop is where the copies of a connection stopped matching between
// two switches: a copy at To whose PSN or opcode is not that of the next
// copy at From (or with no copy at From before it), or copies at From
// that never reached To. Either means a packet lost between the two
// switches (a buffer drop, which the switch's copy does not show) or one
// that took another path; the connection's hops are not matched further.
type HopStop struct {
	Conn      int    `json:"conn"`
	Flow      string `json:"flow,omitempty"`
	Direction string `json:"direction"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Index is the trace index of the copy at To that did not match; -1
	// for copies at From left unmatched at the end of the trace.
	Index  int    `json:"index"`
	Detail string `json:"detail"`
}

// HopExactNs is the greatest latency the percentiles keep exactly.
const HopExactNs = 1<<13 - 1

// MaxHopPending bounds the copies of one connection, direction and hop
// awaiting their counterpart at the next switch: beyond it the connection
// stops matching (copies that never arrive, e.g. routes that are not the
// packets'), so memory stays bounded.
const MaxHopPending = 1 << 16

// hopBucket maps a latency to its histogram bucket: itself up to
// HopExactNs, else its exponent and top 7 bits.
func hopBucket(v int64) uint32 {
	if v < 0 {
		v = 0
	}
	if v <= HopExactNs {
		return uint32(v)
	}
	e := bits.Len64(uint64(v)) - 1 // >= 13
	m := uint64(v) >> (e - 7) & 0x7F
	return HopExactNs + 1 + uint32(e-13)<<7 | uint32(m)
}

// hopLower is the least latency of bucket b.
func hopLower(b uint32) int64 {
	if b <= HopExactNs {
		return int64(b)
	}
	b -= HopExactNs + 1
	e := int(b>>7) + 13
	return int64(1<<e | uint64(b&0x7F)<<(e-7))
}

// hopSeries is the samples of one (flow, direction, hop).
type hopSeries struct {
	key      hopKey
	n        int64
	min, max int64
	hist     map[uint32]int64
}

type hopKey struct {
	flow     string
	dir      model.Dir
	from, to uint8
}

// pendingCopy is a copy at a hop's first switch awaiting its counterpart.
type pendingCopy struct {
	ts  int64
	psn roce.PSN
	op  roce.Opcode
}

// hopPath is one connection's route in one direction and its copies in
// flight on each hop.
type hopPath struct {
	route   []uint8
	pos     [roce.MaxSwitches]int8 // switch id → index in route, -1
	fifo    [][]pendingCopy        // per hop k: copies at route[k] not yet at route[k+1]
	head    []int
	series  []*hopSeries
	stopped bool
}

// HopTracker matches the copies of each connection at consecutive switches
// of its routes (SetRoute) and gathers the per-hop latencies. Its memory
// is the copies in flight between two switches, not the trace.
type HopTracker struct {
	names  []string
	conns  map[int]*[3]*hopPath // by connection, by model.Dir
	flows  map[int]string
	series map[hopKey]*hopSeries
	order  []*hopSeries
	stops  []HopStop
	lossy  map[int]int // connection → index in stops of its first stop
}

// NewHopTracker returns a tracker for the switches named names (by id).
func NewHopTracker(names []string) *HopTracker {
	return &HopTracker{names: names, conns: map[int]*[3]*hopPath{}, flows: map[int]string{}, series: map[hopKey]*hopSeries{}, lossy: map[int]int{}}
}

func (h *HopTracker) name(sw uint8) string {
	if int(sw) < len(h.names) && h.names[sw] != "" {
		return h.names[sw]
	}
	return fmt.Sprintf("switch %d", sw)
}

// SetRoute sets the switches (ids, in order) that connection conn's packets
// of direction dir cross; conn belongs to flow. A route of fewer than two
// switches has no hop.
func (h *HopTracker) SetRoute(conn int, flow string, dir model.Dir, route []uint8) {
	if dir != model.ToResponder && dir != model.ToRequester || len(route) < 2 {
		return
	}
	p := &hopPath{route: route, fifo: make([][]pendingCopy, len(route)-1), head: make([]int, len(route)-1)}
	for i := range p.pos {
		p.pos[i] = -1
	}
	for k, sw := range route {
		p.pos[sw%roce.MaxSwitches] = int8(k)
	}
	for k := range len(route) - 1 {
		key := hopKey{flow, dir, route[k], route[k+1]}
		s := h.series[key]
		if s == nil {
			s = &hopSeries{key: key, hist: map[uint32]int64{}}
			h.series[key] = s
			h.order = append(h.order, s)
		}
		p.series = append(p.series, s)
	}
	paths := h.conns[conn]
	if paths == nil {
		paths = &[3]*hopPath{}
		h.conns[conn] = paths
	}
	paths[dir] = p
	h.flows[conn] = flow
}

// Observe takes the next copy of the merged trace (any switch).
func (h *HopTracker) Observe(p *model.Pkt) {
	if p.Conn < 0 || (p.Dir != model.ToResponder && p.Dir != model.ToRequester) || p.Kind == model.KindCNP {
		return
	}
	paths := h.conns[p.Conn]
	if paths == nil || paths[p.Dir] == nil {
		return
	}
	r := paths[p.Dir]
	if r.stopped {
		return
	}
	k := int(r.pos[p.Switch%roce.MaxSwitches])
	if k < 0 {
		return
	}
	if k > 0 {
		q := r.fifo[k-1]
		hd := r.head[k-1]
		if hd == len(q) {
			h.stop(p.Conn, p.Dir, r, k-1, p.Index, fmt.Sprintf("PSN %d (%s) at %s has no copy at %s before it", p.PSN, p.Op, h.name(r.route[k]), h.name(r.route[k-1])))
			return
		}
		c := q[hd]
		if c.psn != p.PSN || c.op != p.Op {
			h.stop(p.Conn, p.Dir, r, k-1, p.Index, fmt.Sprintf("PSN %d (%s) at %s, want PSN %d (%s), the next copy at %s",
				p.PSN, p.Op, h.name(r.route[k]), c.psn, c.op, h.name(r.route[k-1])))
			return
		}
		r.head[k-1]++
		if r.head[k-1] == len(q) {
			r.fifo[k-1], r.head[k-1] = q[:0], 0
		} else if r.head[k-1] > 1024 && r.head[k-1] > len(q)/2 {
			n := copy(q, q[r.head[k-1]:])
			r.fifo[k-1], r.head[k-1] = q[:n], 0
		}
		r.series[k-1].add(p.TimeNs - c.ts)
	}
	if k < len(r.route)-1 && p.Event != roce.EventDrop {
		if len(r.fifo[k])-r.head[k] >= MaxHopPending {
			h.stop(p.Conn, p.Dir, r, k, p.Index, fmt.Sprintf("over %d copies at %s with none at %s", MaxHopPending, h.name(r.route[k]), h.name(r.route[k+1])))
			return
		}
		r.fifo[k] = append(r.fifo[k], pendingCopy{ts: p.TimeNs, psn: p.PSN, op: p.Op})
	}
}

func (h *HopTracker) stop(conn int, dir model.Dir, r *hopPath, hop, index int, detail string) {
	r.stopped = true
	r.fifo = nil
	if _, ok := h.lossy[conn]; !ok {
		h.lossy[conn] = len(h.stops)
	}
	h.stops = append(h.stops, HopStop{Conn: conn, Flow: h.flows[conn], Direction: dir.String(), From: h.name(r.route[hop]),
		To: h.name(r.route[hop+1]), Index: index, Detail: detail})
}

func (s *hopSeries) add(v int64) {
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.hist[hopBucket(v)]++
}

// quantile is the nearest-rank q-quantile (the bucket's least latency).
func (s *hopSeries) quantile(q float64) int64 {
	keys := make([]uint32, 0, len(s.hist))
	for b := range s.hist {
		keys = append(keys, b)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	rank := int64(q*float64(s.n) + 0.999999999)
	rank = max(1, min(rank, s.n))
	var c int64
	for _, b := range keys {
		c += s.hist[b]
		if c >= rank {
			return max(hopLower(b), s.min)
		}
	}
	return s.max
}

// Finish reports each hop's latencies (in the order the routes were set:
// connection order, to-responder first, hop order; hops without samples
// are left out) and where connections stopped matching, copies left
// unmatched at the end included.
func (h *HopTracker) Finish() ([]HopLatency, []HopStop) {
	conns := make([]int, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	sort.Ints(conns)
	for _, c := range conns {
		for _, dir := range []model.Dir{model.ToResponder, model.ToRequester} {
			r := h.conns[c][dir]
			if r == nil || r.stopped {
				continue
			}
			for k := range r.fifo {
				if n := len(r.fifo[k]) - r.head[k]; n > 0 {
					c0 := r.fifo[k][r.head[k]]
					what := fmt.Sprintf("%d copies", n)
					if n == 1 {
						what = "1 copy"
					}
					h.stop(c, dir, r, k, -1, fmt.Sprintf("%s at %s never reached %s, from PSN %d (%s)", what, h.name(r.route[k]), h.name(r.route[k+1]), c0.psn, c0.op))
					break
				}
			}
		}
	}
	var out []HopLatency
	for _, s := range h.order {
		if s.n == 0 {
			continue
		}
		out = append(out, HopLatency{Flow: s.key.flow, Direction: s.key.dir.String(), From: h.name(s.key.from), To: h.name(s.key.to),
			Samples: s.n, MinNs: s.min, MedianNs: s.quantile(0.5), P99Ns: s.quantile(0.99), MaxNs: s.max})
	}
	return out, h.stops
}

// Lost returns the first place where connection conn's copies stopped
// matching (Finish must have been called): a packet lost between two
// switches.
func (h *HopTracker) Lost(conn int) (HopStop, bool) {
	i, ok := h.lossy[conn]
	if !ok {
		return HopStop{}, false
	}
	return h.stops[i], true
}
