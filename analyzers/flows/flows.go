package flows

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/roce"
)

// Defaults and bounds of Options.
const (
	// DefaultMaxBins is the default number of time bins (Options.MaxBins).
	DefaultMaxBins = 256
	// MaxBins bounds Options.MaxBins: the report holds flows × bins rates.
	MaxBins = 4096
	// DefaultMinBinNs is the narrowest bin (Options.MinBinNs): 1 µs.
	DefaultMinBinNs = 1000
	// DefaultTolerance is the convergence band ±X (Options.Tolerance):
	// ±20% of a flow's mean rate.
	DefaultTolerance = 0.2
	// MinConvergedBins is the fewest convergence steps a converged window
	// holds: a suffix shorter than this is no evidence of a steady state.
	MinConvergedBins = 4
	// ConvergenceSteps is the most steps the common window of a group is
	// cut into for the convergence test (see the package doc).
	ConvergenceSteps = 32
	// DefaultCongestedBytes is the depth from which an egress queue
	// counts as congested (Options.CongestedBytes): more than one 9216-byte
	// jumbo frame waiting, i.e. the port received faster than it sent.
	DefaultCongestedBytes = 9216
	// MaxVictims bounds the victims listed (Result.VictimsDropped counts
	// the rest).
	MaxVictims = 1000
	// depthCodes is the number of depth histogram buckets: the 11-bit
	// depth code of the mirror format (roce.DepthCode).
	depthCodes = int(roce.MaxDepthCode) + 1
)

// Options configure an Analyzer. The zero value is usable.
type Options struct {
	// Hosts name the hosts and their switch ports by address (the pfc
	// analyzer's, from Meta.SwitchPorts and the hosts' addresses).
	// Default nil: an address no host owns is a host named by the address,
	// on port 0.
	Hosts []pfc.Host
	// MaxBins is the number of time bins, at most MaxBins. Default (0)
	// DefaultMaxBins.
	MaxBins int
	// MinBinNs is the width of a bin before the trace outgrows MaxBins of
	// them (see the package doc). Default (0) DefaultMinBinNs.
	MinBinNs int64
	// Tolerance is the convergence band ±X, a fraction of a flow's mean
	// rate. Default (0) DefaultTolerance.
	Tolerance float64
	// CongestedBytes is the egress queue depth from which a port counts as
	// congested. Default (0) DefaultCongestedBytes.
	CongestedBytes int64
}

// Inputs are what Finish needs besides the packets.
type Inputs struct {
	// PFC is the pfc analyzer's result: its sent episodes and causality
	// chains give the victims. Nil: no victims.
	PFC *pfc.Result
	// NICs are the hosts' NIC counters (addresses resolved): a sender's
	// rp_cnp_handled is its rate cuts. Nil: unknown.
	NICs []model.NIC
}

// flowState is one flow as the packets flow.
type flowState struct {
	name        string
	ids         []int // connection IDs
	verb        model.Verb
	sender      int // host index
	receiver    int
	bytes, pkts int64
	first, last int64
	seen        bool
	cnps        int
	bins        []int64 // goodput bytes per bin
}

// portState is the egress queue toward one host.
type portState struct {
	samples, nonzero int64
	max              int64
	hist             []int64 // per depth code
	bins             []int64 // max depth per bin, -1: no sample
}

// host is a traffic host: pfc.Host, or an address no host owns.
type host struct {
	name string
	port uint16
	ips  []netip.Addr
}

// Analyzer measures the flows of one trace as its packets flow. Observe
// does not allocate.
type Analyzer struct {
	opt    Options
	table  *model.Table
	hosts  []host
	hostOf map[netip.Addr]int
	flows  []flowState
	flowOf []int      // per table connection: its flow, -1 none
	expect []roce.PSN // per table connection: the data receiver's next PSN
	ports  []portState

	w       int64 // bin width
	n       int   // bins
	hi      int   // highest bin used
	t0      int64
	started bool
	lastNs  int64
	// binIdx is the bin of the times t0+[binLo, binHi) (empty: none),
	// the last packet's: the next one is most often in it too, and
	// finding it takes no division.
	binIdx       int
	binLo, binHi int64
	// dst caches, by connection and direction (2*conn + dir-1), the
	// host of the last destination address (hostOf) of that flow of
	// packets: one address almost always, read without hashing it.
	dst model.HostCache
}

// New returns an Analyzer for the connections of t. It measures nothing
// (Finish returns the zero Result) when no connection names its flow
// (model.Connection.Flow: a two-host test, or inferred connections).
func New(t *model.Table, opt Options) *Analyzer {
	if opt.MaxBins <= 0 {
		opt.MaxBins = DefaultMaxBins
	}
	opt.MaxBins = min(max(opt.MaxBins, 2), MaxBins)
	if opt.MinBinNs <= 0 {
		opt.MinBinNs = DefaultMinBinNs
	}
	if opt.Tolerance <= 0 {
		opt.Tolerance = DefaultTolerance
	}
	if opt.CongestedBytes <= 0 {
		opt.CongestedBytes = DefaultCongestedBytes
	}
	a := &Analyzer{opt: opt, table: t, hostOf: map[netip.Addr]int{}, w: opt.MinBinNs, n: opt.MaxBins}
	for _, h := range opt.Hosts {
		a.hosts = append(a.hosts, host{name: h.Name, port: h.Port, ips: h.IPs})
		for _, ip := range h.IPs {
			if _, ok := a.hostOf[ip]; !ok {
				a.hostOf[ip] = len(a.hosts) - 1
			}
		}
	}
	named := false
	for _, c := range t.Conns {
		named = named || c.Flow != ""
	}
	if !named {
		return a
	}
	index := map[string]int{}
	a.flowOf = make([]int, len(t.Conns))
	a.expect = make([]roce.PSN, len(t.Conns))
	for i, c := range t.Conns {
		a.flowOf[i] = -1
		a.expect[i] = c.IPSN
		if c.Flow == "" {
			continue
		}
		f, ok := index[c.Flow]
		if !ok {
			f = len(a.flows)
			index[c.Flow] = f
			src, dst := c.Requester.IP, c.Responder.IP
			if c.Verb == model.VerbRead {
				src, dst = dst, src
			}
			a.flows = append(a.flows, flowState{name: c.Flow, verb: c.Verb, sender: a.host(src), receiver: a.host(dst),
				bins: make([]int64, a.n)})
		}
		a.flowOf[i] = f
		a.flows[f].ids = append(a.flows[f].ids, c.ID)
		a.host(c.Requester.IP)
		a.host(c.Responder.IP)
	}
	a.ports = make([]portState, len(a.hosts))
	a.dst = model.NewHostCache(a.hostOf, len(t.Conns))
	for i := range a.ports {
		p := &a.ports[i]
		p.hist = make([]int64, depthCodes)
		p.bins = make([]int64, a.n)
		for j := range p.bins {
			p.bins[j] = -1
		}
	}
	return a
}

// host returns the index of the host owning ip, adding one named by the
// address if none does.
func (a *Analyzer) host(ip netip.Addr) int {
	if h, ok := a.hostOf[ip]; ok {
		return h
	}
	a.hosts = append(a.hosts, host{name: ip.String(), ips: []netip.Addr{ip}})
	a.hostOf[ip] = len(a.hosts) - 1
	return len(a.hosts) - 1
}

// Enabled reports whether the trace's connections name their flows.
func (a *Analyzer) Enabled() bool { return len(a.flows) > 0 }

// bin returns the bin of time t, widening the bins as needed.
func (a *Analyzer) bin(t int64) int {
	if !a.started {
		a.t0, a.started = t, true
	}
	d := max(t-a.t0, 0)
	if d >= a.binLo && d < a.binHi {
		return a.binIdx
	}
	for d/a.w >= int64(a.n) {
		a.double()
	}
	i := int(d / a.w)
	a.hi = max(a.hi, i)
	a.binIdx, a.binLo, a.binHi = i, int64(i)*a.w, int64(i)*a.w+a.w
	return i
}

// double halves the number of bins in use by merging neighbours: sums
// for the goodput, maxima for the depth.
func (a *Analyzer) double() {
	for f := range a.flows {
		b := a.flows[f].bins
		for i := 0; i < len(b)/2; i++ {
			b[i] = b[2*i] + b[2*i+1]
		}
		clear(b[len(b)/2:])
	}
	for p := range a.ports {
		b := a.ports[p].bins
		for i := 0; i < len(b)/2; i++ {
			b[i] = max(b[2*i], b[2*i+1])
		}
		for i := len(b) / 2; i < len(b); i++ {
			b[i] = -1
		}
	}
	a.w *= 2
	a.hi /= 2
	a.binLo, a.binHi = 0, 0 // the bins moved
}

// Observe feeds one packet. It is inlined: without flows (a two-host
// test) it does nothing.
func (a *Analyzer) Observe(p *model.Pkt) {
	if len(a.flows) > 0 {
		a.observe(p)
	}
}

func (a *Analyzer) observe(p *model.Pkt) {
	b := a.bin(p.TimeNs)
	a.lastNs = max(a.lastNs, p.TimeNs)
	if p.Delivered {
		if h, ok := a.dst.Dst(p); ok {
			q := &a.ports[h]
			q.samples++
			if p.QDepth > 0 {
				q.nonzero++
			}
			q.max = max(q.max, p.QDepth)
			q.hist[depthCode(p.QDepth)]++
			q.bins[b] = max(q.bins[b], p.QDepth)
		}
	}
	if p.Conn < 0 || p.Conn >= len(a.flowOf) || a.flowOf[p.Conn] < 0 {
		return
	}
	f := &a.flows[a.flowOf[p.Conn]]
	switch {
	case p.Kind == model.KindCNP:
		f.cnps++
	case !p.Delivered || p.Copy() || p.PSN != a.expect[p.Conn]:
		// Lost, an extra copy, or not the receiver's next PSN: out of
		// order after a loss (Go-back-N discards it) or a duplicate.
	case p.Kind == model.KindData && p.Dir == model.ToResponder, p.Kind == model.KindReadResp && p.Dir == model.ToRequester:
		a.expect[p.Conn] = p.PSN.Next()
		n := int64(p.PayloadLen)
		f.bytes += n
		f.pkts++
		f.bins[b] += n
		if !f.seen {
			f.first, f.seen = p.TimeNs, true
		}
		f.last = max(f.last, p.TimeNs)
	}
}

// depthCode is the histogram bucket of a depth in bytes: its mirror
// format code (roce.EncodeDepth).
func depthCode(d int64) int { return int(roce.EncodeDepth(d)) }

// codeBytes is the least depth of bucket c.
func codeBytes(c int) int64 { return roce.DepthCode(c).Bytes() }

// Finish returns the result.
func (a *Analyzer) Finish(in Inputs) Result {
	if len(a.flows) == 0 {
		return Result{}
	}
	r := Result{BinNs: a.w, StartNs: a.t0, Tolerance: a.opt.Tolerance, CongestedBytes: a.opt.CongestedBytes, Flows: []Flow{}, Ports: []Port{}}
	nb := 0
	if a.started {
		nb = a.hi + 1
	}
	r.Bins = nb
	for i := range a.flows {
		f := &a.flows[i]
		out := Flow{Name: f.name, Conns: f.ids, From: a.hosts[f.sender].name, To: a.hosts[f.receiver].name,
			Bytes: f.bytes, Packets: f.pkts, CNPs: f.cnps, RateGbps: make([]float64, nb)}
		if f.seen {
			out.FirstNs, out.LastNs = f.first, f.last
			if d := f.last - f.first; d > 0 {
				out.GoodputGbps = float64(f.bytes*8) / float64(d)
			}
		}
		for j := range nb {
			out.RateGbps[j] = a.gbps(f.bins[j])
		}
		r.Flows = append(r.Flows, out)
	}
	a.rateCuts(in.NICs, &r)
	bottleneck := -1
	for h := range a.ports {
		q := &a.ports[h]
		if q.samples == 0 {
			continue
		}
		p := Port{Host: a.hosts[h].name, Port: a.hosts[h].port, Samples: q.samples, MaxDepth: q.max, P99Depth: a.p99(q), DepthBytes: make([]int64, nb)}
		for j := range nb {
			p.DepthBytes[j] = max(q.bins[j], 0)
		}
		if q.nonzero > 0 {
			r.DepthRecorded = true
		}
		if bottleneck < 0 || q.max > a.ports[bottleneck].max {
			bottleneck = h
		}
		r.Ports = append(r.Ports, p)
	}
	if bottleneck >= 0 && r.DepthRecorded {
		r.Bottleneck = a.hosts[bottleneck].name
	}
	a.groups(&r)
	if in.PFC != nil {
		a.victims(in.PFC, &r)
	}
	a.verdict(&r)
	return r
}

// gbps is the rate of b bytes in one bin.
func (a *Analyzer) gbps(b int64) float64 { return float64(b*8) / float64(a.w) }

// p99 is the 99th percentile of q's depth samples: the least depth of the
// bucket holding the sample of rank ⌈0.99 n⌉.
func (a *Analyzer) p99(q *portState) int64 {
	rank := (99*q.samples + 99) / 100
	var n int64
	for c, k := range q.hist {
		if n += k; n >= rank {
			return codeBytes(c)
		}
	}
	return q.max
}

// rateCuts sets each flow's sender rate cuts from the NIC counters.
func (a *Analyzer) rateCuts(nics []model.NIC, r *Result) {
	per := map[int][]string{}
	for _, f := range a.flows {
		per[f.sender] = append(per[f.sender], f.name)
	}
	found := false
	for i := range a.flows {
		f := &a.flows[i]
		for k := range nics {
			n := &nics[k]
			owns := false
			for _, ip := range a.hosts[f.sender].ips {
				owns = owns || n.Owns(ip)
			}
			if !owns {
				continue
			}
			for _, c := range []string{"rp_cnp_handled", "cnpHandled"} {
				if v, ok := n.Delta(c); ok {
					r.Flows[i].SenderRateCuts = &v
					found = true
					break
				}
			}
			break
		}
	}
	if !found {
		r.Notes = append(r.Notes, "rate cuts unknown: no sender NIC reports rp_cnp_handled in the run's counters")
		return
	}
	var shared []string
	for h, names := range per {
		if len(names) > 1 {
			shared = append(shared, fmt.Sprintf("%s (%s)", a.hosts[h].name, strings.Join(names, ", ")))
		}
	}
	sort.Strings(shared)
	if len(shared) > 0 {
		r.Notes = append(r.Notes, "sender_rate_cuts is the sender NIC's rp_cnp_handled, counted per host, not per flow: shared by "+strings.Join(shared, "; "))
	}
}

// groups measures convergence and fairness among the flows of each
// receiver with two or more flows.
func (a *Analyzer) groups(r *Result) {
	byRecv := map[int][]int{}
	var order []int
	for i, f := range a.flows {
		if _, ok := byRecv[f.receiver]; !ok {
			order = append(order, f.receiver)
		}
		byRecv[f.receiver] = append(byRecv[f.receiver], i)
	}
	for _, h := range order {
		fs := byRecv[h]
		if len(fs) < 2 {
			continue
		}
		g := Group{To: a.hosts[h].name, Port: a.hosts[h].port}
		for _, i := range fs {
			g.Flows = append(g.Flows, a.flows[i].name)
		}
		if q := &a.ports[h]; q.samples > 0 {
			g.MaxDepth, g.P99Depth = q.max, a.p99(q)
		}
		a.converge(fs, &g)
		r.Groups = append(r.Groups, g)
	}
}

// converge finds the convergence bin of the flows fs and their Jain index
// (see the package doc).
func (a *Analyzer) converge(fs []int, g *Group) {
	lo, hi := 0, math.MaxInt
	var lastStart int64
	for _, i := range fs {
		f := &a.flows[i]
		if !f.seen {
			g.Note = "flow " + f.name + " delivered no data"
			return
		}
		lo = max(lo, a.binOf(f.first)+1)
		hi = min(hi, a.binOf(f.last)-1)
		lastStart = max(lastStart, f.first)
	}
	g.WindowStartNs, g.WindowEndNs = a.t0+int64(lo)*a.w, a.t0+int64(hi+1)*a.w
	if hi-lo+1 < MinConvergedBins {
		g.Note = fmt.Sprintf("the flows sent together for %d full bins of %s, fewer than %d: not compared", max(hi-lo+1, 0),
			model.FormatMicros(a.w), MinConvergedBins)
		g.WindowStartNs, g.WindowEndNs = 0, 0
		return
	}
	// Convergence steps: runs of m bins from lo, m the least power of two
	// leaving at most ConvergenceSteps of them (a remainder at the end is
	// left out), so that a step holds enough packets of each flow.
	m := 1
	for (hi-lo+1)/m > ConvergenceSteps {
		m *= 2
	}
	steps := (hi - lo + 1) / m
	hi = lo + steps*m - 1
	g.StepNs = int64(m) * a.w
	step := func(f *flowState, k int) int64 { // bytes of flow f in step k
		var b int64
		for _, v := range f.bins[lo+k*m : lo+(k+1)*m] {
			b += v
		}
		return b
	}
	// Suffix sums, minima and maxima per flow, from the last step down.
	n := len(fs)
	sum, mn, mx := make([]int64, n), make([]int64, n), make([]int64, n)
	for j := range n {
		mn[j], mx[j] = math.MaxInt64, math.MinInt64
	}
	x := a.opt.Tolerance
	conv := -1
	for k := steps - 1; k >= 0; k-- {
		ok := true
		for j, i := range fs {
			v := step(&a.flows[i], k)
			sum[j] += v
			mn[j], mx[j] = min(mn[j], v), max(mx[j], v)
			mean := float64(sum[j]) / float64(steps-k)
			if mean <= 0 || float64(mx[j]) > (1+x)*mean || float64(mn[j]) < (1-x)*mean {
				ok = false
			}
		}
		if ok && steps-k >= MinConvergedBins {
			conv = k
		}
	}
	from := lo
	if conv >= 0 {
		g.Converged = true
		from = lo + conv*m
		at := a.t0 + int64(from)*a.w
		ns := max(at-lastStart, 0)
		g.ConvergedAtNs, g.ConvergeNs = &at, &ns
	} else {
		g.Note = fmt.Sprintf("not converged: no suffix of the common window in which every flow's rate stays within ±%g%% of its mean; fairness over the whole window", 100*x)
	}
	g.WindowEndNs = a.t0 + int64(hi+1)*a.w
	rates := make([]float64, n)
	for j, i := range fs {
		var s int64
		for k := from; k <= hi; k++ {
			s += a.flows[i].bins[k]
		}
		rates[j] = float64(s*8) / float64(int64(hi-from+1)*a.w)
	}
	g.MeanGbps = rates
	g.Jain = Jain(rates)
}

// binOf is the bin of t without widening (t within the trace).
func (a *Analyzer) binOf(t int64) int { return int(max(t-a.t0, 0) / a.w) }

// Jain returns Jain's fairness index (Σx)² / (n Σx²) of xs (Jain, Chiu
// and Hawe 1984, eq. 1): 1 when all are equal, 1/n when one has all. 0
// for no values or all zero.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

// maxDepth is the greatest depth of port h's samples in the bins of
// [from, to].
func (a *Analyzer) maxDepth(h int, from, to int64) int64 {
	q := &a.ports[h]
	d := int64(-1)
	for k := a.binOf(from); k <= min(a.binOf(to), a.hi); k++ {
		d = max(d, q.bins[k])
	}
	return d
}

// victims finds the flows stalled by pauses another flow's congestion
// caused (see the package doc).
func (a *Analyzer) victims(pf *pfc.Result, r *Result) {
	if !r.DepthRecorded || !a.started {
		if pf.Verdict != "" {
			r.Notes = append(r.Notes, "victims not looked for: the trace carries no queue depth")
		}
		return
	}
	conn := map[int]int{} // connection ID → flow
	for i, f := range a.flows {
		for _, id := range f.ids {
			conn[id] = i
		}
	}
	byPort := map[uint16]int{}
	for i, h := range a.hosts {
		if h.port != 0 {
			byPort[h.port] = i
		}
	}
	origin := map[int]pfc.Origin{}
	for _, c := range pf.Causality {
		origin[c.Episode] = c.Origin
	}
	type key struct {
		flow, cong int
		port       uint16
		prio       int
	}
	found := map[key]int{} // → index in r.Victims
	for _, e := range pf.Episodes {
		if e.Direction != pfc.DirSent || e.Injected {
			continue
		}
		h, ok := byPort[e.Port]
		if !ok {
			continue
		}
		// The congested port: of the ports the paused host sends to (its
		// ingress buffer holds packets queued there), the deepest during
		// the episode.
		cong, cd := -1, int64(-1)
		for _, f := range a.flows {
			if f.sender != h {
				continue
			}
			if d := a.maxDepth(f.receiver, e.StartNs, e.EndNs); d > cd {
				cong, cd = f.receiver, d
			}
		}
		if cong < 0 || cd < a.opt.CongestedBytes {
			continue
		}
		for _, ef := range e.Flows {
			fi, ok := conn[ef.Conn]
			if !ok {
				continue
			}
			f := &a.flows[fi]
			dataDir := model.ToResponder.String()
			if f.verb == model.VerbRead {
				dataDir = model.ToRequester.String()
			}
			if f.sender != h || ef.Direction != dataDir || f.receiver == cong {
				continue
			}
			dd := max(a.maxDepth(f.receiver, e.StartNs, e.EndNs), 0)
			if dd >= a.opt.CongestedBytes {
				continue
			}
			k := key{fi, cong, e.Port, e.Priority}
			if vi, ok := found[k]; ok {
				v := &r.Victims[vi]
				v.Episodes++
				v.PausedNs += e.DurationNs
				v.DestMaxDepth = max(v.DestMaxDepth, dd)
				v.CongestedMaxDepth = max(v.CongestedMaxDepth, cd)
				v.CongestingFlows = union(v.CongestingFlows, a.congesting(cong, e.StartNs, e.EndNs))
				continue
			}
			if len(r.Victims) == MaxVictims {
				r.VictimsDropped++
				continue
			}
			v := Victim{Flow: f.name, Host: a.hosts[h].name, Port: e.Port, Priority: e.Priority, Episode: e.ID, Episodes: 1,
				StartNs: e.StartNs, PausedNs: e.DurationNs, Dest: a.hosts[f.receiver].name, DestMaxDepth: dd,
				Congested: a.hosts[cong].name, CongestedPort: a.hosts[cong].port, CongestedMaxDepth: cd,
				CongestingFlows: a.congesting(cong, e.StartNs, e.EndNs)}
			if o, ok := origin[e.ID]; ok {
				v.Origin = o.Kind + ": " + o.Detail
			}
			found[k] = len(r.Victims)
			r.Victims = append(r.Victims, v)
			r.Flows[fi].Victim = true
		}
	}
}

// congesting names the flows to port h with data in the bins of [from, to].
func (a *Analyzer) congesting(h int, from, to int64) []string {
	var out []string
	for _, f := range a.flows {
		if f.receiver != h {
			continue
		}
		for k := a.binOf(from); k <= min(a.binOf(to), a.hi); k++ {
			if f.bins[k] > 0 {
				out = append(out, f.name)
				break
			}
		}
	}
	return out
}

func union(a, b []string) []string {
	for _, s := range b {
		in := false
		for _, x := range a {
			in = in || x == s
		}
		if !in {
			a = append(a, s)
		}
	}
	return a
}

// verdict sets r's verdict (see the package doc).
func (a *Analyzer) verdict(r *Result) {
	var stalled []string
	for _, f := range r.Flows {
		if f.Bytes == 0 {
			stalled = append(stalled, f.Name)
		}
	}
	switch {
	case len(stalled) > 0:
		r.Verdict = model.Fail
		r.Reason = fmt.Sprintf("no progress: %s delivered no new data", strings.Join(stalled, ", "))
	case len(r.Flows) < 2:
		r.Verdict = model.Skip
		r.Reason = "one flow (" + r.Flows[0].Name + "): no flows to compare"
	case !a.started || a.lastNs == a.t0:
		r.Verdict = model.Skip
		r.Reason = "no timing: the trace's packets span no time"
	default:
		r.Verdict = model.Pass
		r.Reason = fmt.Sprintf("all %d flows made progress", len(r.Flows))
	}
}
