package flows

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/roce"
)

// The hosts of the tests: name, last address byte, switch port.
var testHosts = []pfc.Host{
	{Name: "h1", Port: 1, IPs: []netip.Addr{ip(1)}},
	{Name: "h2", Port: 2, IPs: []netip.Addr{ip(2)}},
	{Name: "h3", Port: 3, IPs: []netip.Addr{ip(3)}},
	{Name: "h4", Port: 4, IPs: []netip.Addr{ip(4)}},
	{Name: "r", Port: 9, IPs: []netip.Addr{ip(9)}},
}

func ip(b byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, b}) }

// flowSpec is a flow of a test: name, sender and receiver address bytes,
// connections.
type flowSpec struct {
	name     string
	from, to byte
	qps      int
}

// conns numbers the connections of flows globally in flow order.
func conns(fs ...flowSpec) []model.Connection {
	var out []model.Connection
	for _, f := range fs {
		for range f.qps {
			id := len(out)
			out = append(out, model.Connection{ID: id, Verb: model.VerbWrite, Flow: f.name,
				Requester: model.Endpoint{IP: ip(f.from), QPN: uint32(0x100 + id)},
				Responder: model.Endpoint{IP: ip(f.to), QPN: uint32(0x200 + id)}})
		}
	}
	return out
}

// scen feeds packets to an Analyzer.
type scen struct {
	t    *model.Table
	a    *Analyzer
	idx  int
	next map[int]roce.PSN // per connection: the next PSN data sends
}

func newScen(opt Options, fs ...flowSpec) *scen {
	t := model.NewTable(conns(fs...))
	if opt.Hosts == nil {
		opt.Hosts = testHosts
	}
	return &scen{t: t, a: New(t, opt), next: map[int]roce.PSN{}}
}

// data feeds a delivered WRITE packet of connection c at t with n bytes of
// payload and the connection's next PSN that joined a queue of depth
// bytes.
func (s *scen) data(t int64, c, n int, depth int64) { s.pkt(t, c, n, depth, func(*model.Pkt) {}) }

func (s *scen) pkt(t int64, c, n int, depth int64, mod func(*model.Pkt)) {
	conn := s.t.Conns[c]
	p := model.Pkt{Index: s.idx, TimeNs: t, Conn: c, Dir: model.ToResponder, Kind: model.KindData, Delivered: true, PSN: s.next[c],
		PayloadLen: n, SrcIP: model.IPFrom(conn.Requester.IP), DstIP: model.IPFrom(conn.Responder.IP), DestQP: conn.Responder.QPN, NPkts: 1, QDepth: depth}
	s.next[c] = s.next[c].Next()
	mod(&p)
	s.idx++
	s.a.Observe(&p)
}

func (s *scen) cnp(t int64, c int) {
	conn := s.t.Conns[c]
	p := model.Pkt{Index: s.idx, TimeNs: t, Conn: c, Dir: model.ToRequester, Kind: model.KindCNP, Delivered: true,
		SrcIP: model.IPFrom(conn.Responder.IP), DstIP: model.IPFrom(conn.Requester.IP), DestQP: conn.Requester.QPN, NPkts: 1}
	s.idx++
	s.a.Observe(&p)
}

func flowByName(t *testing.T, r *Result, name string) Flow {
	t.Helper()
	for _, f := range r.Flows {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no flow %q in %+v", name, r.Flows)
	return Flow{}
}

func TestBytes(t *testing.T) {
	s := newScen(Options{}, flowSpec{"a", 1, 9, 2}, flowSpec{"b", 2, 9, 1})
	psn := func(v roce.PSN) func(*model.Pkt) { return func(p *model.Pkt) { p.PSN = v } }
	s.data(1000, 0, 1024, 0)                                                               // 0/0
	s.pkt(1050, 0, 1024, 0, func(p *model.Pkt) { p.Delivered = false })                    // 0/1 dropped
	s.data(1080, 0, 1024, 0)                                                               // 0/2 out of order: discarded
	s.data(1100, 1, 1024, 0)                                                               // 1/0
	s.data(1200, 2, 512, 0)                                                                // 2/0
	s.pkt(1300, 0, 1024, 0, func(p *model.Pkt) { p.PSN, p.Retx = 1, true })                // 0/1 retransmitted: accepted
	s.pkt(1350, 0, 1024, 0, func(p *model.Pkt) { p.PSN, p.Retx = 2, true })                // 0/2 again: accepted
	s.pkt(1400, 1, 1024, 0, psn(0))                                                        // 1/0 again: a duplicate
	s.pkt(1500, 2, 512, 0, func(p *model.Pkt) { p.PSN, p.Event = 0, roce.EventDuplicate }) // an extra copy
	s.pkt(1600, 0, 0, 0, func(p *model.Pkt) { p.Kind, p.Dir = model.KindAck, model.ToRequester })
	s.pkt(2000, 1, 100, 0, psn(1)) // 1/1
	s.cnp(2100, 0)
	s.cnp(2200, 1)
	s.cnp(2300, 2)
	r := s.a.Finish(Inputs{})
	for _, tc := range []struct {
		name        string
		bytes, pkts int64
		first, last int64
		cnps        int
		conns       []int
		from, to    string
	}{
		{"a", 4*1024 + 100, 5, 1000, 2000, 2, []int{0, 1}, "h1", "r"},
		{"b", 512, 1, 1200, 1200, 1, []int{2}, "h2", "r"},
	} {
		f := flowByName(t, &r, tc.name)
		if f.Bytes != tc.bytes || f.Packets != tc.pkts || f.FirstNs != tc.first || f.LastNs != tc.last || f.CNPs != tc.cnps ||
			!reflect.DeepEqual(f.Conns, tc.conns) || f.From != tc.from || f.To != tc.to {
			t.Errorf("flow %s = %+v, want bytes %d packets %d first %d last %d cnps %d conns %v %s→%s", tc.name, f,
				tc.bytes, tc.pkts, tc.first, tc.last, tc.cnps, tc.conns, tc.from, tc.to)
		}
	}
	if g := flowByName(t, &r, "a").GoodputGbps; g != float64((4*1024+100)*8)/1000 {
		t.Errorf("goodput of a = %v, want %v", g, float64((4*1024+100)*8)/1000)
	}
	if r.Verdict != model.Pass {
		t.Errorf("verdict = %s (%s), want pass", r.Verdict, r.Reason)
	}
}

// TestBins checks that bins double and merge when the trace outgrows
// them.
func TestBins(t *testing.T) {
	s := newScen(Options{MaxBins: 4, MinBinNs: 1000}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
	s.data(0, 0, 100, 10)
	s.data(1500, 0, 200, 20)
	s.data(2500, 1, 300, 300)
	s.data(3500, 0, 400, 40) // bins 0..3 of 1 µs
	s.data(5000, 0, 500, 50) // → 2 µs: [0,2) [2,4) [4,6)
	s.data(9000, 1, 600, 5)  // → 4 µs: [0,4) [4,8) [8,12)
	r := s.a.Finish(Inputs{})
	if r.BinNs != 4000 || r.Bins != 3 {
		t.Fatalf("bins = %d of %d ns, want 3 of 4000", r.Bins, r.BinNs)
	}
	for _, tc := range []struct {
		name string
		want []float64
	}{
		{"a", []float64{float64(700*8) / 4000, float64(500*8) / 4000, 0}},
		{"b", []float64{float64(300*8) / 4000, 0, float64(600*8) / 4000}},
	} {
		if got := flowByName(t, &r, tc.name).RateGbps; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("rates of %s = %v, want %v", tc.name, got, tc.want)
		}
	}
	if len(r.Ports) != 1 || !reflect.DeepEqual(r.Ports[0].DepthBytes, []int64{300, 50, 5}) || r.Ports[0].MaxDepth != 300 {
		t.Errorf("ports = %+v, want r with depths [300 50 5], max 300", r.Ports)
	}
}

// steady feeds flow connection c bytes per 1 µs bin, in 1000-byte packets
// at offset off within each bin, for bins [from, to).
func (s *scen) steady(c int, from, to int, perBin []int, off int64) {
	for k := from; k < to; k++ {
		n := perBin[0]
		if len(perBin) > 1 {
			n = perBin[k-from]
		}
		for j := range n / 1000 {
			s.data(int64(k)*1000+off+int64(j)*10, c, 1000, 0)
		}
	}
}

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1}, 0.8}, // (4²)/(2·(9+1))
		{[]float64{5, 5, 5, 5}, 1},
		{[]float64{8, 0, 0, 0}, 0.25},
		{nil, 0},
	} {
		if got := Jain(tc.xs); got != tc.want {
			t.Errorf("Jain(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// TestFairness: two flows at 3:1 from their start: converged at once,
// Jain 0.8.
func TestFairness(t *testing.T) {
	s := newScen(Options{MinBinNs: 1000, MaxBins: 64}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
	for k := range 20 {
		for j := range 3 {
			s.data(int64(k*1000+j*100), 0, 1000, 2000)
		}
		s.data(int64(k*1000+500), 1, 1000, 2000)
	}
	r := s.a.Finish(Inputs{})
	if len(r.Groups) != 1 {
		t.Fatalf("groups = %+v, want one", r.Groups)
	}
	g := r.Groups[0]
	if g.To != "r" || g.Port != 9 || !reflect.DeepEqual(g.Flows, []string{"a", "b"}) {
		t.Errorf("group = %s port %d %v, want r port 9 [a b]", g.To, g.Port, g.Flows)
	}
	if g.Jain != 0.8 || !reflect.DeepEqual(g.MeanGbps, []float64{24, 8}) {
		t.Errorf("Jain = %v over %v, want 0.8 over [24 8]", g.Jain, g.MeanGbps)
	}
	// Window: bins 1..18 (the first and last bins are partial); steady
	// from bin 1; b started at 500 ns.
	if !g.Converged || *g.ConvergedAtNs != 1000 || *g.ConvergeNs != 500 || g.WindowStartNs != 1000 || g.WindowEndNs != 19000 {
		t.Errorf("convergence = %v at %v after %v, window %d..%d, want true at 1000 after 500, window 1000..19000",
			g.Converged, g.ConvergedAtNs, g.ConvergeNs, g.WindowStartNs, g.WindowEndNs)
	}
	if r.Bottleneck != "r" || g.MaxDepth != 2000 || g.P99Depth != 2000 {
		t.Errorf("bottleneck %q depth max %d p99 %d, want r 2000 2000", r.Bottleneck, g.MaxDepth, g.P99Depth)
	}
}

// TestConvergence: a alone at 4 KB/µs, b joins in bin 10; 3:1 for ten
// bins, then 2:2 until both stop in bin 40: converged at bin 20, 9.9 µs
// after b's first packet.
func TestConvergence(t *testing.T) {
	s := newScen(Options{MinBinNs: 1000, MaxBins: 64}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
	s.steady(0, 0, 10, []int{4000}, 0)
	s.steady(0, 10, 20, []int{3000}, 0)
	s.steady(1, 10, 20, []int{1000}, 100)
	s.steady(0, 20, 41, []int{2000}, 0)
	s.steady(1, 20, 41, []int{2000}, 100)
	r := s.a.Finish(Inputs{})
	g := r.Groups[0]
	if !g.Converged || *g.ConvergedAtNs != 20000 || *g.ConvergeNs != 9900 {
		t.Fatalf("convergence = %v at %v after %v (%s), want at 20000 after 9900", g.Converged, g.ConvergedAtNs, g.ConvergeNs, g.Note)
	}
	if g.Jain != 1 || !reflect.DeepEqual(g.MeanGbps, []float64{16, 16}) {
		t.Errorf("Jain = %v over %v, want 1 over [16 16]", g.Jain, g.MeanGbps)
	}
	if g.WindowStartNs != 11000 || g.WindowEndNs != 40000 {
		t.Errorf("window = %d..%d, want 11000..40000", g.WindowStartNs, g.WindowEndNs)
	}
}

// TestNotConverged: rates alternating 1:3 and 3:1 every bin never stay
// within ±20%: fairness over the whole window.
func TestNotConverged(t *testing.T) {
	s := newScen(Options{MinBinNs: 1000, MaxBins: 64}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
	var x, y []int
	for k := range 20 {
		x = append(x, []int{1000, 3000}[k%2])
		y = append(y, []int{3000, 1000}[k%2])
	}
	s.steady(0, 0, 20, x, 0)
	s.steady(1, 0, 20, y, 500)
	r := s.a.Finish(Inputs{})
	g := r.Groups[0]
	if g.Converged || g.ConvergeNs != nil || g.Note == "" {
		t.Fatalf("converged = %v %v note %q, want not converged with a note", g.Converged, g.ConvergeNs, g.Note)
	}
	// Bins 1..18: nine of each rate for each flow.
	if g.Jain != 1 || !reflect.DeepEqual(g.MeanGbps, []float64{16, 16}) {
		t.Errorf("Jain = %v over %v, want 1 over [16 16]", g.Jain, g.MeanGbps)
	}
}

func TestDepthPercentile(t *testing.T) {
	s := newScen(Options{}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 4, 1})
	for i := range 100 {
		s.data(int64(i*10), 0, 100, int64(i*100))
	}
	s.data(5, 1, 100, 100)
	r := s.a.Finish(Inputs{})
	var rp, h4 Port
	for _, p := range r.Ports {
		switch p.Host {
		case "r":
			rp = p
		case "h4":
			h4 = p
		}
	}
	// Rank 99 of 100 is 9800 B: code e=2 m=153, 153<<6 = 9792.
	if rp.Samples != 100 || rp.MaxDepth != 9900 || rp.P99Depth != 9792 || rp.Port != 9 {
		t.Errorf("r = %+v, want 100 samples, max 9900, p99 9792, port 9", rp)
	}
	if h4.Samples != 1 || h4.MaxDepth != 100 || h4.P99Depth != 100 {
		t.Errorf("h4 = %+v, want 1 sample, max and p99 100", h4)
	}
	if r.Bottleneck != "r" || !r.DepthRecorded {
		t.Errorf("bottleneck = %q recorded %v, want r true", r.Bottleneck, r.DepthRecorded)
	}
}

func TestDepthCode(t *testing.T) {
	for _, tc := range []struct {
		d    int64
		code int
		min  int64
	}{{0, 0, 0}, {255, 255, 255}, {256, 1<<8 | 32, 256}, {9800, 2<<8 | 153, 9792}, {255 << 21, 7<<8 | 255, 255 << 21}, {1 << 40, 7<<8 | 255, 255 << 21}} {
		if c := depthCode(tc.d); c != tc.code || codeBytes(c) != tc.min {
			t.Errorf("depthCode(%d) = %#x (%d B), want %#x (%d B)", tc.d, c, codeBytes(c), tc.code, tc.min)
		}
	}
}

// victimScen is Hawkeye Fig. 1 on one switch: h1, h2 and h3 send to r
// (flows a, b, c) and fill its queue; h1's flow v to h4 is the victim of
// the pauses the switch sends h1.
func victimScen(t *testing.T, destDepth int64) (*scen, pfc.Result) {
	t.Helper()
	s := newScen(Options{MinBinNs: 1000, MaxBins: 64}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1}, flowSpec{"c", 3, 9, 1}, flowSpec{"v", 1, 4, 1})
	for k := range 40 {
		base := int64(k * 1000)
		s.data(base, 0, 1000, 40000)
		s.data(base+100, 1, 1000, 40000)
		s.data(base+200, 2, 1000, 40000)
		s.data(base+300, 3, 1000, destDepth)
	}
	pf := pfc.Result{Verdict: model.Pass,
		Episodes: []pfc.Episode{
			{ID: 0, Port: 1, Host: "h1", Priority: 3, Direction: pfc.DirSent, StartNs: 10000, EndNs: 12000, DurationNs: 2000,
				Flows: []pfc.Flow{{Conn: 0, Direction: "to-responder"}, {Conn: 3, Direction: "to-responder"}}},
			{ID: 1, Port: 2, Host: "h2", Priority: 3, Direction: pfc.DirSent, StartNs: 10000, EndNs: 12000, DurationNs: 2000,
				Flows: []pfc.Flow{{Conn: 1, Direction: "to-responder"}}},
			{ID: 2, Port: 9, Host: "r", Priority: 3, Direction: pfc.DirReceived, StartNs: 9000, EndNs: 13000, DurationNs: 4000},
			{ID: 3, Port: 1, Host: "h1", Priority: 3, Direction: pfc.DirSent, StartNs: 20000, EndNs: 21000, DurationNs: 1000,
				Flows: []pfc.Flow{{Conn: 3, Direction: "to-responder"}}},
			{ID: 4, Port: 1, Host: "h1", Priority: 3, Direction: pfc.DirSent, StartNs: 30000, EndNs: 31000, DurationNs: 1000, Injected: true,
				Flows: []pfc.Flow{{Conn: 3, Direction: "to-responder"}}},
		},
		Causality: []pfc.Cause{{Episode: 0, Origin: pfc.Origin{Kind: "slow-receiver", Detail: "port 9 (r) paused without being paused"}}},
	}
	return s, pf
}

func TestVictim(t *testing.T) {
	s, pf := victimScen(t, 500)
	r := s.a.Finish(Inputs{PFC: &pf})
	want := []Victim{{Flow: "v", Host: "h1", Port: 1, Priority: 3, Episode: 0, Episodes: 2, StartNs: 10000, PausedNs: 3000,
		Dest: "h4", DestMaxDepth: 500, Congested: "r", CongestedPort: 9, CongestedMaxDepth: 40000,
		CongestingFlows: []string{"a", "b", "c"}, Origin: "slow-receiver: port 9 (r) paused without being paused"}}
	if !reflect.DeepEqual(r.Victims, want) {
		t.Errorf("victims = %+v,\nwant %+v", r.Victims, want)
	}
	for _, f := range r.Flows {
		if f.Victim != (f.Name == "v") {
			t.Errorf("flow %s victim = %v", f.Name, f.Victim)
		}
	}
	if r.Bottleneck != "r" {
		t.Errorf("bottleneck = %q, want r", r.Bottleneck)
	}
}

// TestNoVictim: the paused host's other flow goes to a congested port
// too: it is not a victim.
func TestNoVictim(t *testing.T) {
	s, pf := victimScen(t, DefaultCongestedBytes)
	if r := s.a.Finish(Inputs{PFC: &pf}); len(r.Victims) != 0 {
		t.Errorf("victims = %+v, want none", r.Victims)
	}
	s, pf = victimScen(t, 500)
	s.a.opt.CongestedBytes = 40001 // nothing counts as congested
	if r := s.a.Finish(Inputs{PFC: &pf}); len(r.Victims) != 0 {
		t.Errorf("victims with nothing congested = %+v, want none", r.Victims)
	}
}

func TestVerdict(t *testing.T) {
	t.Run("one flow", func(t *testing.T) {
		s := newScen(Options{}, flowSpec{"a", 1, 9, 2})
		s.data(0, 0, 100, 0)
		s.data(100, 1, 100, 0)
		r := s.a.Finish(Inputs{})
		if r.Verdict != model.Skip || r.Reason != "one flow (a): no flows to compare" {
			t.Errorf("verdict = %s %q, want skip \"one flow (a): no flows to compare\"", r.Verdict, r.Reason)
		}
	})
	t.Run("no progress", func(t *testing.T) {
		s := newScen(Options{}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1}, flowSpec{"c", 3, 9, 1})
		s.data(0, 0, 100, 0)
		s.pkt(100, 1, 100, 0, func(p *model.Pkt) { p.Delivered = false })
		r := s.a.Finish(Inputs{})
		if r.Verdict != model.Fail || r.Reason != "no progress: b, c delivered no new data" {
			t.Errorf("verdict = %s %q, want fail \"no progress: b, c delivered no new data\"", r.Verdict, r.Reason)
		}
	})
	t.Run("no timing", func(t *testing.T) {
		s := newScen(Options{}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
		s.data(7, 0, 100, 0)
		s.data(7, 1, 100, 0)
		r := s.a.Finish(Inputs{})
		if r.Verdict != model.Skip || r.Reason != "no timing: the trace's packets span no time" {
			t.Errorf("verdict = %s %q, want skip (no timing)", r.Verdict, r.Reason)
		}
	})
	t.Run("no flow names", func(t *testing.T) {
		cs := conns(flowSpec{"", 1, 9, 1})
		a := New(model.NewTable(cs), Options{})
		p := model.Pkt{Conn: 0, Kind: model.KindData, Dir: model.ToResponder, Delivered: true, PayloadLen: 9}
		a.Observe(&p)
		if a.Enabled() {
			t.Error("Enabled() = true without flow names")
		}
		if r := a.Finish(Inputs{}); !reflect.DeepEqual(r, Result{}) {
			t.Errorf("Finish() = %+v, want the zero Result", r)
		}
	})
}

func TestRateCuts(t *testing.T) {
	s := newScen(Options{}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 1, 4, 1}, flowSpec{"c", 2, 9, 1})
	s.data(0, 0, 100, 0)
	s.data(10, 1, 100, 0)
	s.data(20, 2, 100, 0)
	nics := []model.NIC{
		{Name: "h1", IPs: []netip.Addr{ip(1)}, Before: model.Counters{"rp_cnp_handled": 3}, After: model.Counters{"rp_cnp_handled": 10}},
		{Name: "h2", IPs: []netip.Addr{ip(2)}, After: model.Counters{"cnpHandled": 4}},
	}
	r := s.a.Finish(Inputs{NICs: nics})
	for name, want := range map[string]int64{"a": 7, "b": 7, "c": 4} {
		if got := flowByName(t, &r, name).SenderRateCuts; got == nil || *got != want {
			t.Errorf("rate cuts of %s = %v, want %d", name, got, want)
		}
	}
	wantNote := "sender_rate_cuts is the sender NIC's rp_cnp_handled, counted per host, not per flow: shared by h1 (a, b)"
	if !reflect.DeepEqual(r.Notes, []string{wantNote}) {
		t.Errorf("notes = %q, want [%q]", r.Notes, wantNote)
	}
	r = s.a.Finish(Inputs{})
	if flowByName(t, &r, "a").SenderRateCuts != nil || len(r.Notes) != 1 || r.Notes[0] != "rate cuts unknown: no sender NIC reports rp_cnp_handled in the run's counters" {
		t.Errorf("without counters: notes %q", r.Notes)
	}
}

// TestHostsByAddress: without Options.Hosts the hosts are named by
// address.
func TestHostsByAddress(t *testing.T) {
	s := newScen(Options{Hosts: []pfc.Host{}}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
	s.data(0, 0, 100, 0)
	s.data(10, 1, 100, 0)
	r := s.a.Finish(Inputs{})
	if f := flowByName(t, &r, "b"); f.From != "10.0.0.2" || f.To != "10.0.0.9" {
		t.Errorf("b: %s → %s, want 10.0.0.2 → 10.0.0.9", f.From, f.To)
	}
}

func TestObserveAllocs(t *testing.T) {
	s := newScen(Options{MaxBins: 8, MinBinNs: 100}, flowSpec{"a", 1, 9, 2}, flowSpec{"b", 2, 9, 1})
	c := s.t.Conns[1]
	p := model.Pkt{Conn: 1, Dir: model.ToResponder, Kind: model.KindData, Delivered: true, PayloadLen: 1024,
		SrcIP: model.IPFrom(c.Requester.IP), DstIP: model.IPFrom(c.Responder.IP), QDepth: 12345}
	now := int64(0)
	n := testing.AllocsPerRun(1000, func() {
		now += 977 // the bins double along the way
		p.TimeNs = now
		s.a.Observe(&p)
		p.PSN = p.PSN.Next()
	})
	if n != 0 {
		t.Errorf("Observe allocates %v times per packet, want 0", n)
	}
	if r := s.a.Finish(Inputs{}); flowByName(t, &r, "a").Packets != 1001 {
		t.Errorf("packets of a = %d, want 1001", flowByName(t, &r, "a").Packets)
	}
}

// TestConvergenceSteps: rates alternating 1:3 and 3:1 every bin over 128
// full bins are steady in steps of 4 bins (at most 32 steps): converged
// at once.
func TestConvergenceSteps(t *testing.T) {
	s := newScen(Options{MinBinNs: 1000, MaxBins: 256}, flowSpec{"a", 1, 9, 1}, flowSpec{"b", 2, 9, 1})
	var x, y []int
	for k := range 130 {
		x = append(x, []int{1000, 3000}[k%2])
		y = append(y, []int{3000, 1000}[k%2])
	}
	s.steady(0, 0, 130, x, 0)
	s.steady(1, 0, 130, y, 500)
	r := s.a.Finish(Inputs{})
	g := r.Groups[0]
	if !g.Converged || g.StepNs != 4000 || *g.ConvergedAtNs != 1000 || *g.ConvergeNs != 500 || g.WindowEndNs != 129000 {
		t.Fatalf("convergence = %v in steps of %d at %v after %v, window end %d (%s); want true in steps of 4000 at 1000 after 500, end 129000",
			g.Converged, g.StepNs, g.ConvergedAtNs, g.ConvergeNs, g.WindowEndNs, g.Note)
	}
	if g.Jain != 1 || !reflect.DeepEqual(g.MeanGbps, []float64{16, 16}) {
		t.Errorf("Jain = %v over %v, want 1 over [16 16]", g.Jain, g.MeanGbps)
	}
}

// TestVictimDeeperElsewhere: a deeper queue the paused host does not feed
// (x: h2 → h3) is not the cause of its pause; r, which it feeds, is.
func TestVictimDeeperElsewhere(t *testing.T) {
	s := newScen(Options{MinBinNs: 1000, MaxBins: 64}, flowSpec{"a", 1, 9, 1}, flowSpec{"v", 1, 4, 1}, flowSpec{"x", 2, 3, 1})
	for k := range 20 {
		base := int64(k * 1000)
		s.data(base, 0, 1000, 40000)
		s.data(base+100, 1, 1000, 500)
		s.data(base+200, 2, 1000, 90000)
	}
	pf := pfc.Result{Verdict: model.Pass, Episodes: []pfc.Episode{{ID: 0, Port: 1, Host: "h1", Priority: 3, Direction: pfc.DirSent,
		StartNs: 5000, EndNs: 7000, DurationNs: 2000, Flows: []pfc.Flow{{Conn: 0, Direction: "to-responder"}, {Conn: 1, Direction: "to-responder"}}}}}
	r := s.a.Finish(Inputs{PFC: &pf})
	if len(r.Victims) != 1 || r.Victims[0].Flow != "v" || r.Victims[0].Congested != "r" || !reflect.DeepEqual(r.Victims[0].CongestingFlows, []string{"a"}) {
		t.Errorf("victims = %+v, want v, congested r by a", r.Victims)
	}
	if r.Bottleneck != "h3" {
		t.Errorf("bottleneck = %q, want h3 (the deepest queue)", r.Bottleneck)
	}
}
