package cnp

import (
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// Expected are expected CNP counts under each pacing scope (or, as
// Result.AmbiguousDecisions, other counts per scope).
type Expected struct {
	PerQP     int `json:"per_qp"`
	PerPort   int `json:"per_port"`
	PerDestIP int `json:"per_dest_ip"`
	PerIPPair int `json:"per_ip_pair"`
}

func (e *Expected) get(scope int) int {
	return [...]int{e.PerQP, e.PerPort, e.PerDestIP, e.PerIPPair}[scope]
}

func (e *Expected) add(o Expected) {
	e.PerQP += o.PerQP
	e.PerPort += o.PerPort
	e.PerDestIP += o.PerDestIP
	e.PerIPPair += o.PerIPPair
}

func (e *Expected) inc(scope int) {
	switch scope {
	case 0:
		e.PerQP++
	case 1:
		e.PerPort++
	case 2:
		e.PerDestIP++
	default:
		e.PerIPPair++
	}
}

// ConnCNP are the counts of one connection.
type ConnCNP struct {
	Conn     int      `json:"conn"`
	Observed int      `json:"observed"`
	Expected Expected `json:"expected"`
	// ExpectedMin and ExpectedMax bound the expected counts under the
	// timestamp uncertainty (see Result); nil when it is 0.
	ExpectedMin *Expected `json:"expected_min,omitempty"`
	ExpectedMax *Expected `json:"expected_max,omitempty"`
	ECNTriggers int       `json:"ecn_triggers"`
	NAKTriggers int       `json:"nak_triggers,omitempty"`
}

// Result is the outcome of the check.
type Result struct {
	Verdict  model.Verdict `json:"verdict"`
	Reason   string        `json:"reason,omitempty"`
	Observed int           `json:"observed"`
	// Expected are the counts of the pacers replayed on the switch
	// timestamps as they are.
	Expected Expected `json:"expected"`
	// ConsistentScopes are the scopes surely consistent with the trace:
	// their expected count equals the observed one on every connection,
	// and no pacing decision of theirs was within the timestamp
	// uncertainty of min_time_between_cnps (with uncertainty 0: the scopes
	// whose expected counts equal the observed ones).
	ConsistentScopes []string `json:"consistent_scopes"`
	// PossibleScopes are the scopes possibly, not surely, consistent:
	// every connection's observed count lies within its expected range
	// (ExpectedMin..ExpectedMax and Expected) but some pacing decision was
	// ambiguous. Always empty with uncertainty 0.
	PossibleScopes []string `json:"possible_scopes,omitempty"`
	// TimestampUncertaintyNs is the switch timestamps' uncertainty U and
	// LatenessNs the notification point's lateness L (Options) applied;
	// the replays use their sum W = U + L (0: exact). With W > 0,
	// ExpectedMin are the counts of pacers replayed with min_time + W (a
	// CNP only where one surely follows), ExpectedMax with min_time − W (a
	// CNP wherever one may follow), and AmbiguousDecisions counts, per
	// scope, the decisions of the pacers replayed with min_time whose gap
	// t − last was within W of it (min_time − W < t − last ≤ min_time + W).
	TimestampUncertaintyNs int64     `json:"timestamp_uncertainty_ns,omitempty"`
	LatenessNs             int64     `json:"cnp_lateness_ns,omitempty"`
	ExpectedMin            *Expected `json:"expected_min,omitempty"`
	ExpectedMax            *Expected `json:"expected_max,omitempty"`
	AmbiguousDecisions     *Expected `json:"ambiguous_decisions,omitempty"`
	// MinTimeBetweenCNPsUs is the pacing interval used.
	MinTimeBetweenCNPsUs float64   `json:"min_time_between_cnps_us"`
	NAKTriggersCNP       bool      `json:"nak_triggers_cnp,omitempty"`
	Conns                []ConnCNP `json:"conns,omitempty"`
	// Unattributed counts CNPs addressed to no known connection.
	Unattributed int `json:"unattributed,omitempty"`
	// InexactWaits counts the ECN triggers (Options.EgressQueues) whose
	// wait in the egress queue the FIFO replay put below the minimum their
	// queue depth implies (the port was paused, or frames the trace does
	// not show went ahead): their wait is then the depth's, known only to
	// a depth unit, and a pass becomes inconclusive.
	InexactWaits int `json:"inexact_waits,omitempty"`
}

// Options configure an Analyzer.
type Options struct {
	// MinTimeBetweenCNPsNs is the pacing interval. Known says it was given;
	// otherwise the verdict is skip.
	MinTimeBetweenCNPsNs int64
	Known                bool
	// NAKTriggers makes NAKs CNP triggers. Default false.
	NAKTriggers bool
	// ExpectScope, if set, is the scope that must be consistent.
	ExpectScope string
	// UncertaintyNs is the timestamp uncertainty U
	// (model.Params.TimestampUncertaintyNs): the gap between two trigger
	// stamps is uncertain by ±U. Default 0: exact; negative counts as 0;
	// ignored unless Known.
	UncertaintyNs int64
	// LatenessNs is the notification point's lateness L
	// (model.Params.CNPLatenessNs): how much later than its trigger's
	// arrival at the switch, beyond fixed delays, the NP may have made a
	// pacing decision (a software switch and RNIC on a real clock), so
	// the gap the NP saw between two triggers differs from their stamps'
	// by up to ±L more. Default 0; negative counts as 0; ignored unless
	// Known.
	LatenessNs int64
	// Hosts, in a many-host test, are the notification points' own
	// settings by address (model.Params.Hosts): a connection side whose
	// address a host owns is paced with that host's interval and NAK
	// trigger, its per-port domain is the host (unless the endpoint names
	// its port) and its per-dest-ip domains are the host's own. Default
	// nil: every notification point takes MinTimeBetweenCNPsNs and
	// NAKTriggers, its per-port domain is its address, and a per-dest-ip
	// domain is keyed by the destination alone (the two-host form, where
	// the notification point of a destination is always the other host).
	Hosts []Host
	// EgressQueues says the switch queued forwarded frames at its egress
	// ports (a queue model: PFC or ECN by depth; lumina run records its
	// queue counters as model.Meta.Switch.PFCDrops). A trigger's copy is
	// stamped when it arrived at the switch, but the notification point
	// sees it only after it waited behind the frames ahead of it on the
	// NP's port: with an incast queue of 300 KB at 100 Gb/s that is 24 µs,
	// and it changes from trigger to trigger, so pacing replayed on the
	// stamps disagrees with a correct NP. With EgressQueues each trigger
	// is replayed at its departure: every delivered frame of the trace
	// joins its destination's port, served first come first served at
	// LinkBps (the software switch serves a port's queues in arrival order
	// across priorities), departure = max(stamp, previous departure) +
	// the frame's serialization; a wait shorter than the copy's queue
	// depth (QDepth) takes at LinkBps is raised to it and counted in
	// Result.InexactWaits. Default false: triggers at their stamps (no
	// queue, or a trace without a run).
	EgressQueues bool
	// LinkBps is the egress links' speed in bit/s (model.Params.LinkGbps)
	// where a host's own (Host.LinkBps) is not known. Default 0: 100 Gb/s.
	LinkBps int64
}

// Host is one host's notification point settings (Options.Hosts).
type Host struct {
	Name string
	IPs  []netip.Addr
	// MinTimeBetweenCNPsNs is its pacing interval; Known says it was
	// given (otherwise the verdict is skip).
	MinTimeBetweenCNPsNs int64
	Known                bool
	NAKTriggers          bool
	// LinkBps is the speed of its link to the switch: how fast the
	// switch drains its egress port (EgressQueues). Default 0:
	// Options.LinkBps.
	LinkBps int64
}

// Replays of each pacer: at min_time (nominal), at min_time + U (fewest
// CNPs) and at min_time − U (most CNPs).
const (
	nominal = iota
	fewest
	most
	nReplays
)

// last is the state of one pacing domain in each replay.
type last struct {
	t     [nReplays]int64
	valid [nReplays]bool
	// The interval analysis (see fire): the latest trigger that may have
	// produced a CNP, and the latest that surely did.
	may, sure           int64
	mayValid, sureValid bool
}

type pairKey struct{ np, rp netip.Addr }

// dstKey is a per-dest-ip domain: the notification point's host (-1
// without Options.Hosts) and the CNP's destination.
type dstKey struct {
	np int
	rp netip.Addr
}

// Analyzer counts triggers and CNPs in one pass. Observe does not allocate
// once every pacing domain has been seen.
type Analyzer struct {
	opt   Options
	table *model.Table
	conns []ConnCNP
	port  []string          // per conn: port of [requester, responder]
	u     int64             // W = U + L
	thr   [][nReplays]int64 // per conn side: pacing threshold of each replay
	nak   []bool            // per conn side: its NAKs are triggers
	npOf  []int             // per conn side: its host in Options.Hosts, -1
	known bool              // every notification point's interval is known
	bound [2][]Expected     // per conn: counts of the fewest and most replays
	ivl   [2][]Expected     // per conn: CNPs sure and possible (interval analysis)
	ambig Expected          // per scope: ambiguous nominal decisions

	perQP   []last // conn*2 + side
	perPort map[string]*last
	perDst  map[dstKey]*last
	perPair map[pairKey]*last
	unattr  int

	busy    map[egressKey]int64 // per egress port: the last departure's end (EgressQueues)
	hostIdx map[netip.Addr]int  // Options.Hosts by address (hostOf's answer, once)
	inexact int
	// depart runs on every packet with EgressQueues: busyHost holds busy
	// for the ports of Options.Hosts (egressKey{host: h}, set if busyIn),
	// read without hashing; dst caches, by connection and direction
	// (2*conn + dir-1), the hostIdx answer for the last destination
	// address; ser is the last serialization time computed, of serN
	// bytes at serBps (most frames have one length).
	busyHost            []int64
	busyIn              []bool
	dst                 model.HostCache
	serN, serBps, serNs int64
	serOK               bool
	// scopes caches, by connection side, its last trigger's pacing
	// domains (scopeCache).
	scopes []scopeCache
}

// egressKey is a switch egress port: its host in Options.Hosts, else
// (host -1) the destination address.
type egressKey struct {
	host int
	ip   netip.Addr
}

// New returns an Analyzer for the connections of t.
func New(t *model.Table, opt Options) *Analyzer {
	n := 2 * len(t.Conns)
	a := &Analyzer{opt: opt, table: t, conns: make([]ConnCNP, len(t.Conns)), perQP: make([]last, n),
		port: make([]string, n), thr: make([][nReplays]int64, n), nak: make([]bool, n), npOf: make([]int, n),
		perPort: map[string]*last{}, perDst: map[dstKey]*last{}, perPair: map[pairKey]*last{}, busy: map[egressKey]int64{},
		hostIdx: map[netip.Addr]int{}, busyHost: make([]int64, len(opt.Hosts)), busyIn: make([]bool, len(opt.Hosts)),
		scopes: make([]scopeCache, n)}
	a.dst = model.NewHostCache(a.hostIdx, len(t.Conns))
	for h := range opt.Hosts {
		for _, ip := range opt.Hosts[h].IPs {
			if _, dup := a.hostIdx[ip]; !dup {
				a.hostIdx[ip] = h
			}
		}
	}
	if a.opt.LinkBps <= 0 {
		a.opt.LinkBps = 100e9
	}
	a.known = opt.Known
	for _, h := range opt.Hosts {
		a.known = a.known && h.Known
	}
	if a.known { // without min_time the counts are computed with 0: U means nothing
		a.u = max(opt.UncertaintyNs, 0) + max(opt.LatenessNs, 0)
	}
	thr := func(m int64) [nReplays]int64 { return [nReplays]int64{nominal: m, fewest: m + a.u, most: m - a.u} }
	a.bound = [2][]Expected{make([]Expected, len(t.Conns)), make([]Expected, len(t.Conns))}
	a.ivl = [2][]Expected{make([]Expected, len(t.Conns)), make([]Expected, len(t.Conns))}
	for i, c := range t.Conns {
		a.conns[i].Conn = c.ID
		for s, e := range [2]model.Endpoint{c.Requester, c.Responder} {
			k := 2*i + s
			a.port[k], a.thr[k], a.nak[k], a.npOf[k] = portOf(e), thr(opt.MinTimeBetweenCNPsNs), opt.NAKTriggers, -1
			if h, ok := a.hostIdx[e.IP]; ok {
				hs := &opt.Hosts[h]
				a.thr[k], a.nak[k], a.npOf[k] = thr(hs.MinTimeBetweenCNPsNs), hs.NAKTriggers, h
				if e.Port == "" {
					a.port[k] = hs.Name
				}
			}
		}
	}
	return a
}

func portOf(e model.Endpoint) string {
	if e.Port != "" {
		return e.Port
	}
	return e.IP.String()
}

// Observe feeds one packet. It is inlined: without egress queues to
// replay, only CNPs, ECN-marked packets and NAKs are looked at further.
func (a *Analyzer) Observe(p *model.Pkt) {
	if !a.opt.EgressQueues && !p.CE && p.Kind != model.KindCNP && p.Kind != model.KindNak {
		return
	}
	a.observe(p)
}

func (a *Analyzer) observe(p *model.Pkt) {
	at := p.TimeNs // when the NP sees p if it is an ECN trigger
	if a.opt.EgressQueues && p.Event != roce.EventDrop {
		at = a.depart(p)
	}
	if p.Kind == model.KindCNP {
		if p.Conn < 0 {
			a.unattr++
			return
		}
		a.conns[p.Conn].Observed++
		return
	}
	if p.Conn < 0 {
		return
	}
	var npIP, rpIP model.IP
	var npSide int // 0 requester, 1 responder
	t := at
	switch {
	case p.CE:
		npIP, rpIP = p.DstIP, p.SrcIP
		npSide = 0
		if p.Dir == model.ToResponder {
			npSide = 1
		}
		a.conns[p.Conn].ECNTriggers++
	case p.Kind == model.KindNak && a.nak[2*p.Conn+nakSide(p)]:
		npIP, rpIP = p.SrcIP, p.DstIP
		npSide = nakSide(p)
		a.conns[p.Conn].NAKTriggers++
		t = p.TimeNs // the NP sent it: no egress queue between
	default:
		return
	}
	k := 2*p.Conn + npSide
	th := &a.thr[k]
	a.fire(p.Conn, 0, th, &a.perQP[k], t)
	sc := &a.scopes[k]
	if sc.port == nil || sc.np != npIP || sc.rp != rpIP {
		a.lookupScopes(sc, k, npIP, rpIP)
	}
	a.fire(p.Conn, 1, th, sc.port, t)
	a.fire(p.Conn, 2, th, sc.dst, t)
	a.fire(p.Conn, 3, th, sc.pair, t)
}

// scopeCache is the pacing domains of a connection side's last trigger
// (the port's, the destination's, the pair's), for its addresses np and
// rp. The maps' entries are never replaced: a side's next trigger, of
// the same addresses as a rule, finds them without hashing.
type scopeCache struct {
	port, dst, pair *last
	np, rp          model.IP
}

// lookupScopes fills sc with the pacing domains of side k's trigger from
// npIP to rpIP, adding those not seen yet.
func (a *Analyzer) lookupScopes(sc *scopeCache, k int, np, rp model.IP) {
	npIP, rpIP := np.Addr(), rp.Addr()
	port := a.port[k]
	if sc.port = a.perPort[port]; sc.port == nil {
		sc.port = &last{}
		a.perPort[port] = sc.port
	}
	dk := dstKey{a.npOf[k], rpIP}
	if sc.dst = a.perDst[dk]; sc.dst == nil {
		sc.dst = &last{}
		a.perDst[dk] = sc.dst
	}
	pk := pairKey{npIP, rpIP}
	if sc.pair = a.perPair[pk]; sc.pair == nil {
		sc.pair = &last{}
		a.perPair[pk] = sc.pair
	}
	sc.np, sc.rp = np, rp
}

// depart replays p's egress port (Options.EgressQueues) and returns when
// p has left it, serialized: p waits until the frames ahead of it have
// left, at least the time its queue depth takes at LinkBps.
func (a *Analyzer) depart(p *model.Pkt) int64 {
	bps := a.opt.LinkBps
	h, host := a.dst.Dst(p)
	var b int64
	var set bool
	if host {
		if hb := a.opt.Hosts[h].LinkBps; hb > 0 {
			bps = hb
		}
		b, set = a.busyHost[h], a.busyIn[h]
	} else {
		b, set = a.busy[egressKey{host: -1, ip: p.DstIP.Addr()}]
	}
	wait := int64(0)
	if set && b > p.TimeNs {
		wait = b - p.TimeNs
	}
	if p.QDepth > 0 { // an empty queue takes no time: no division
		if lo := bitsNs(p.QDepth, bps, false); wait < lo {
			wait = lo
			if p.CE {
				a.inexact++
			}
		}
	}
	if n := int64(p.FrameLen); !a.serOK || n != a.serN || bps != a.serBps {
		a.serN, a.serBps, a.serNs, a.serOK = n, bps, bitsNs(n, bps, true), true
	}
	end := p.TimeNs + wait + a.serNs
	if host {
		a.busyHost[h], a.busyIn[h] = end, true
	} else {
		a.busy[egressKey{host: -1, ip: p.DstIP.Addr()}] = end
	}
	return end
}

// bitsNs is the time n bytes take at bps bit/s, rounded up (as the
// software switch's serialization, sim.SerializationDelay) or down.
func bitsNs(n, bps int64, up bool) int64 {
	hi, lo := bits.Mul64(uint64(max(n, 0))*8, 1e9)
	if hi >= uint64(bps) {
		return math.MaxInt64 / 4
	}
	q, r := bits.Div64(hi, lo, uint64(bps))
	if up && r != 0 {
		q++
	}
	return int64(min(q, math.MaxInt64/4))
}

// nakSide is the side (0 requester, 1 responder) that sent NAK p: the
// notification point a NAK trigger belongs to.
func nakSide(p *model.Pkt) int {
	if p.Dir == model.ToResponder {
		return 0
	}
	return 1
}

// fire replays a trigger of connection conn at t in domain l of scope:
// each replay's pacer produces a CNP iff the domain has none yet or
// t − last > its threshold. A nominal decision whose gap is within W of
// min_time is ambiguous.
//
// It also bounds the trigger's own decision, whatever the earlier ones
// were (the interval analysis): the NP's last CNP came from a trigger no
// later than the latest that may have produced one, and no earlier than
// the latest that surely did, and each gap is off by at most ±W. So the
// trigger surely produces a CNP when the domain has no possible CNP yet
// or t − that latest possible one > min_time + W, is surely suppressed
// when t − the latest sure one ≤ min_time − W, and may go either way
// otherwise. With W = 0 this is the nominal replay. Unlike the replays'
// counts, the per-connection counts it gives are sound in a domain
// shared by connections (per-port, per-dest-ip), where the replays can
// give one connection's CNP to another.
func (a *Analyzer) fire(conn, scope int, thr *[nReplays]int64, l *last, t int64) {
	switch {
	case !l.mayValid || t-l.may > thr[fewest]:
		l.may, l.mayValid, l.sure, l.sureValid = t, true, t, true
		a.ivl[0][conn].inc(scope)
		a.ivl[1][conn].inc(scope)
	case l.sureValid && t-l.sure <= thr[most]:
	default:
		l.may = t
		a.ivl[1][conn].inc(scope)
	}
	for r := range nReplays {
		if l.valid[r] {
			g := t - l.t[r]
			if r == nominal && g > thr[most] && g <= thr[fewest] {
				a.ambig.inc(scope) // never with U = 0
			}
			if g <= thr[r] {
				continue
			}
		}
		l.t[r], l.valid[r] = t, true
		switch r {
		case nominal:
			a.conns[conn].Expected.inc(scope)
		case fewest:
			a.bound[0][conn].inc(scope)
		default:
			a.bound[1][conn].inc(scope)
		}
	}
}

// scopeRange is what the replays say about one scope.
type scopeRange struct {
	lo, hi, nominal int // totals over the connections
	sure, possible  bool
}

// Finish returns the result.
func (a *Analyzer) Finish() Result {
	res := Result{Conns: a.conns, Unattributed: a.unattr, ConsistentScopes: []string{}, InexactWaits: a.inexact,
		MinTimeBetweenCNPsUs: float64(a.opt.MinTimeBetweenCNPsNs) / 1000, NAKTriggersCNP: a.opt.NAKTriggers}
	for _, c := range a.conns {
		res.Observed += c.Observed
		res.Expected.add(c.Expected)
	}
	var ranges [4]scopeRange
	for s := range model.Scopes {
		sr := &ranges[s]
		sr.sure, sr.possible = a.ambig.get(s) == 0, true
		for i := range a.conns {
			c := &a.conns[i]
			e, f, m := c.Expected.get(s), a.bound[0][i].get(s), a.bound[1][i].get(s)
			lo, hi := min(e, f, m, a.ivl[0][i].get(s)), max(e, f, m, a.ivl[1][i].get(s))
			sr.lo, sr.hi, sr.nominal = sr.lo+lo, sr.hi+hi, sr.nominal+e
			sr.sure = sr.sure && e == c.Observed
			sr.possible = sr.possible && lo <= c.Observed && c.Observed <= hi
		}
		switch {
		case sr.sure:
			res.ConsistentScopes = append(res.ConsistentScopes, model.Scopes[s])
		case sr.possible: // never with U = 0: no ambiguous decision, lo = hi
			res.PossibleScopes = append(res.PossibleScopes, model.Scopes[s])
		}
	}
	if a.u > 0 {
		res.TimestampUncertaintyNs, res.LatenessNs = max(a.opt.UncertaintyNs, 0), max(a.opt.LatenessNs, 0)
		amb := a.ambig
		res.AmbiguousDecisions = &amb
		var lo, hi Expected
		for i := range a.conns {
			f, m := a.bound[0][i], a.bound[1][i]
			a.conns[i].ExpectedMin, a.conns[i].ExpectedMax = &f, &m
			lo.add(f)
			hi.add(m)
		}
		res.ExpectedMin, res.ExpectedMax = &lo, &hi
	}
	scope := func(name string) int {
		for s, n := range model.Scopes {
			if n == name {
				return s
			}
		}
		return -1
	}
	switch {
	case !a.known:
		res.Verdict = model.Skip
		res.Reason = "min_time_between_cnps unknown (--min-time-between-cnps or metadata): counts computed with 0"
	case a.opt.ExpectScope != "":
		s := scope(a.opt.ExpectScope)
		switch {
		case s >= 0 && ranges[s].sure:
			res.Verdict = model.Pass
		case s >= 0 && ranges[s].possible:
			res.Verdict = model.Inconclusive
			res.Reason = fmt.Sprintf("the expected %s pacing is consistent with the CNPs only within the %s: %s",
				a.opt.ExpectScope, a.window(), a.rangeString(res.Observed, s, ranges[s]))
		default:
			res.Verdict = model.Fail
			res.Reason = fmt.Sprintf("CNPs are not consistent with the expected %s pacing", a.opt.ExpectScope)
		}
	case len(res.ConsistentScopes) > 0:
		res.Verdict = model.Pass
	case len(res.PossibleScopes) > 0:
		res.Verdict = model.Inconclusive
		var ps []string
		for _, name := range res.PossibleScopes {
			s := scope(name)
			ps = append(ps, name+" ("+a.rangeString(res.Observed, s, ranges[s])+")")
		}
		res.Reason = fmt.Sprintf("no pacing scope is consistent beyond the %s; possibly consistent: %s",
			a.window(), strings.Join(ps, "; "))
	default:
		res.Verdict = model.Fail
		res.Reason = "CNPs are consistent with no pacing scope"
	}
	if res.Verdict == model.Pass && a.inexact > 0 {
		res.Verdict = model.Inconclusive
		res.Reason = fmt.Sprintf("%d ECN triggers waited in the egress queue longer than the replay of its frames gives (a pause, or frames the trace lacks): their arrival at the notification point is known only from their queue depth", a.inexact)
	}
	return res
}

// window names W and what it is made of: "timestamp uncertainty (±2 µs)",
// or with a lateness "timing uncertainty (±30 µs: timestamps 2 µs,
// notification point's lateness 28 µs)".
func (a *Analyzer) window() string {
	l := max(a.opt.LatenessNs, 0)
	if l == 0 {
		return "timestamp uncertainty (±" + model.FormatMicros(a.u) + ")"
	}
	return fmt.Sprintf("timing uncertainty (±%s: timestamps %s, notification point's lateness %s)",
		model.FormatMicros(a.u), model.FormatMicros(a.u-l), model.FormatMicros(l))
}

// rangeString gives the numbers of a possibly consistent scope: "observed
// 4, expected 3..5 (4 at the timestamps as they are), 2 pacing decisions
// within ±2 µs of min_time_between_cnps 50 µs".
func (a *Analyzer) rangeString(observed, s int, sr scopeRange) string {
	n := a.ambig.get(s)
	dec := "decisions"
	if n == 1 {
		dec = "decision"
	}
	return fmt.Sprintf("observed %d, expected %d..%d (%d at the timestamps as they are), %d pacing %s within ±%s of min_time_between_cnps %s",
		observed, sr.lo, sr.hi, sr.nominal, n, dec, model.FormatMicros(a.u), model.FormatMicros(a.opt.MinTimeBetweenCNPsNs))
}
