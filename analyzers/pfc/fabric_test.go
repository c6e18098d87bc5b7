package pfc

import (
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// fabScen feeds a crafted trace of a fabric to an Analyzer: switches
// joined by links (the l-th has ports 200+2l and 201+2l), hosts on switch
// ports, flows (connection i named by the flow) on explicit paths,
// priority 3.
type fabScen struct {
	t     *testing.T
	f     *model.Fabric
	hosts []Host
	conns []model.Connection
	links map[[2]string][2]uint16 // (a, b) → (a's port, b's port)
	a     *Analyzer
	tab   *model.Table
	idx   int
	seq   [roce.MaxSwitches]uint64
	sw    map[string]int
	evs   []fabEv
	paths [][]string // per connection
}

type fabEv struct {
	ts int64
	fn func()
}

func newFabScen(t *testing.T, switches []string, links [][2]string) *fabScen {
	s := &fabScen{t: t, f: &model.Fabric{Switches: switches}, links: map[[2]string][2]uint16{}, sw: map[string]int{}}
	for i, n := range switches {
		s.sw[n] = i
	}
	for l, k := range links {
		pa, pb := uint16(200+2*l), uint16(201+2*l)
		s.links[[2]string{k[0], k[1]}] = [2]uint16{pa, pb}
		s.links[[2]string{k[1], k[0]}] = [2]uint16{pb, pa}
		s.f.Ports = append(s.f.Ports, model.FabricPort{Port: uint32(pa), Switch: k[0], PeerSwitch: k[1], PeerPort: uint32(pb)},
			model.FabricPort{Port: uint32(pb), Switch: k[1], PeerSwitch: k[0], PeerPort: uint32(pa)})
	}
	return s
}

// host cables host name to switch sw's port.
func (s *fabScen) host(name, sw string, port uint16) {
	ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(len(s.hosts) + 1)})
	s.hosts = append(s.hosts, Host{Name: name, Port: port, IPs: []netip.Addr{ip}})
	s.f.Ports = append(s.f.Ports, model.FabricPort{Port: uint32(port), Switch: sw, Host: name})
}

func (s *fabScen) hostOf(name string) Host {
	for _, h := range s.hosts {
		if h.Name == name {
			return h
		}
	}
	s.t.Fatalf("no host %s", name)
	return Host{}
}

// flow adds connection len(conns), named name, from → to over the
// switches path (both ways).
func (s *fabScen) flow(name, from, to string, path ...string) {
	hf, ht := s.hostOf(from), s.hostOf(to)
	id := len(s.conns)
	s.conns = append(s.conns, model.Connection{ID: id, Flow: name, Verb: model.VerbWrite,
		Requester: model.Endpoint{IP: hf.IPs[0], QPN: uint32(0x100 + id)}, Responder: model.Endpoint{IP: ht.IPs[0], QPN: uint32(0x200 + id)}})
	hops := func(a, b Host, path []string) []model.Hop {
		var out []model.Hop
		for i, sw := range path {
			in, outp := a.Port, b.Port
			if i > 0 {
				in = s.links[[2]string{sw, path[i-1]}][0]
			}
			if i < len(path)-1 {
				outp = s.links[[2]string{sw, path[i+1]}][0]
			}
			out = append(out, model.Hop{Switch: sw, In: uint32(in), Out: uint32(outp)})
		}
		return out
	}
	s.paths = append(s.paths, path)
	rev := make([]string, len(path))
	for i, p := range path {
		rev[len(path)-1-i] = p
	}
	s.f.Routes = append(s.f.Routes, model.Route{From: from, To: to, Hops: hops(hf, ht, path)}, model.Route{From: to, To: from, Hops: hops(ht, hf, rev)})
}

// start builds the Analyzer.
func (s *fabScen) start(opt Options) {
	s.tab = model.NewTable(s.conns)
	opt.Hosts, opt.Fabric, opt.FabricHosts = s.hosts, s.f, s.hosts
	s.a = New(s.tab, opt)
}

// pause feeds a PFC copy of switch sw for priority 3 with quanta q on port
// (sent: the switch sent it).
func (s *fabScen) pause(ts int64, sw string, sent bool, port uint16, q uint16) {
	s.evs = append(s.evs, fabEv{ts, func() { s.pauseNow(ts, sw, sent, port, q) }})
}

func (s *fabScen) pauseNow(ts int64, sw string, sent bool, port uint16, q uint16) {
	id := s.sw[sw]
	s.seq[id]++
	f := roce.BuildPFC(nil, [6]byte{2}, 1<<3, [8]uint16{3: q})
	s.a.MAC(roce.AppendMACMirror(nil, roce.MirrorMeta{TimestampNs: uint64(ts), Seq: s.seq[id], Switch: uint8(id)}, sent, port, f), s.idx)
	s.idx++
}

// link feeds the pause switch sw sends on port at ts and its copy at the
// other end 500 ns later (a switch-to-switch link), or only the sent
// copy (a host port).
func (s *fabScen) link(ts int64, sw string, port uint16, q uint16) {
	s.pause(ts, sw, true, port, q)
	for _, p := range s.f.Ports {
		if uint16(p.Port) == port && p.PeerSwitch != "" {
			s.pause(ts+500, p.PeerSwitch, false, uint16(p.PeerPort), q)
		}
	}
}

// hold refreshes the pause of sw on port every 200 µs from `from` while
// before `until` (the last refresh's quanta run out 335.5 µs later at 100
// Gb/s).
func (s *fabScen) hold(sw string, port uint16, from, until int64) {
	for t := from; t < until; t += 200000 {
		s.link(t, sw, port, 0xFFFF)
	}
}

// run feeds the scheduled copies in time order (stable).
func (s *fabScen) run() Result {
	sort.SliceStable(s.evs, func(i, j int) bool { return s.evs[i].ts < s.evs[j].ts })
	for _, e := range s.evs {
		e.fn()
	}
	s.evs = nil
	return s.a.Finish()
}

// data feeds a RoCE copy of connection conn's data at switch sw with the
// queue depth depth.
func (s *fabScen) data(ts int64, sw string, conn int, depth int64) {
	s.evs = append(s.evs, fabEv{ts, func() { s.dataNow(ts, sw, conn, depth) }})
}

func (s *fabScen) dataNow(ts int64, sw string, conn int, depth int64) {
	id := s.sw[sw]
	s.seq[id]++
	frame := make([]byte, 100)
	frame[12], frame[13], frame[14], frame[15] = 0x08, 0x00, 0x45, 24<<2
	c := s.tab.Conns[conn]
	p := model.Pkt{Index: s.idx, TimeNs: ts, Conn: conn, Dir: model.ToResponder, Kind: model.KindData,
		SrcIP: model.IPFrom(c.Requester.IP), DstIP: model.IPFrom(c.Responder.IP), Delivered: true, QDepth: depth, Switch: uint8(id)}
	s.a.Observe(&p, frame, len(frame))
	s.idx++
}

// send feeds connection conn's data packet at every switch of its path,
// 1 µs apart from ts; depth is the queue depth it joins at its last
// switch.
func (s *fabScen) send(ts int64, conn int, depth int64) {
	p := s.paths[conn]
	for i, sw := range p {
		d := int64(0)
		if i == len(p)-1 {
			d = depth
		}
		s.data(ts+int64(i)*1000, sw, conn, d)
	}
}

// hawkeye is Hawkeye's Fig. 1 on a line s1–s2–s3–s4: F2 from h1 (s1) to r
// (s4), bursts A1, A2 from a1, a2 (s4) to r congest s4's port toward r;
// F1 from h2 (s2) to h5 (s3) shares s2's egress toward s3 with F2. s4
// pauses s3, s3 pauses s2, s2 pauses s1, s1 pauses h1.
func hawkeye(t *testing.T) *fabScen { return hawkeyeRoot(t, false) }

// hawkeyeRoot is hawkeye; slow: r pauses s4 from 9 to 28 µs (a slow
// receiver), so the root is r, not congestion.
func hawkeyeRoot(t *testing.T, slow bool) *fabScen {
	s := newFabScen(t, []string{"s1", "s2", "s3", "s4"}, [][2]string{{"s1", "s2"}, {"s2", "s3"}, {"s3", "s4"}})
	s.host("h1", "s1", 1)
	s.host("h2", "s2", 2)
	s.host("h5", "s3", 32)
	s.host("r", "s4", 33)
	s.host("a1", "s4", 34)
	s.host("a2", "s4", 35)
	s.flow("F2", "h1", "r", "s1", "s2", "s3", "s4")
	s.flow("F1", "h2", "h5", "s2", "s3")
	s.flow("A1", "a1", "r", "s4")
	s.flow("A2", "a2", "r", "s4")
	s.start(Options{})
	for k := range 5 {
		t0 := int64(1000 + 1000*k)
		s.send(t0, 0, 150000)
		s.send(t0+100, 1, 0)
		s.send(t0+200, 2, 180000)
		s.send(t0+300, 3, 170000)
	}
	if slow {
		s.pause(9000, "s4", false, 33, 0xFFFF) // r → s4
		s.pause(28000, "s4", false, 33, 0)
	}
	s.link(10000, "s4", 205, 0xFFFF) // s4 → s3
	s.link(12000, "s3", 203, 0xFFFF) // s3 → s2
	s.link(14000, "s2", 201, 0xFFFF) // s2 → s1
	s.link(16000, "s1", 1, 0xFFFF)   // s1 → h1
	s.data(16500, "s1", 0, 0)        // in flight: within the reaction bound
	s.link(30000, "s4", 205, 0)
	s.link(32000, "s3", 203, 0)
	s.link(34000, "s2", 201, 0)
	s.link(36000, "s1", 1, 0)
	s.send(40000, 2, 0)
	return s
}

func TestFabricHawkeye(t *testing.T) {
	s := hawkeye(t)
	r := s.run()
	if r.Fabric == nil {
		t.Fatalf("Fabric = nil, want the fabric analysis")
	}
	if len(r.Causality) != 0 {
		t.Errorf("Causality = %+v, want none (the fabric chains replace it)", r.Causality)
	}
	if len(r.Fabric.Chains) != 1 {
		t.Fatalf("chains = %+v, want one", r.Fabric.Chains)
	}
	c := r.Fabric.Chains[0]
	want := "s1 paused h1 (port 1) at 16 µs ← s1 port 200 paused by s2 at 14.5 µs ← s2 port 202 paused by s3 at 12.5 µs" +
		" ← s3 port 204 paused by s4 at 10.5 µs ← congestion at s4 port 33 (qdepth 180 KB, flows F2, A1, A2)"
	if c.Text != want {
		t.Errorf("chain = %q,\nwant %q", c.Text, want)
	}
	if p := "s1 paused h1 (port 1) ← s1 port 200 paused by s2 ← s2 port 202 paused by s3 ← s3 port 204 paused by s4 ← congestion at s4 port 33"; c.Path != p {
		t.Errorf("path = %q,\nwant %q", c.Path, p)
	}
	if c.Root.Kind != RootCongestion || c.Root.Switch != "s4" || c.Root.Port != 33 || c.Root.Host != "r" || c.Root.QDepthBytes != 180000 {
		t.Errorf("root = %+v, want congestion at s4 port 33 (r), 180000 bytes", c.Root)
	}
	wantV := []StalledFlow{{Flow: "F1", Conn: 1, Direction: "to-responder", Switch: "s2", Egress: 202, Hops: 2}}
	if !reflect.DeepEqual(c.Victims, wantV) {
		t.Errorf("victims = %+v, want %+v", c.Victims, wantV)
	}
	var stalled []string
	for _, f := range c.Stalled {
		stalled = append(stalled, fmt.Sprintf("%s@%s:%d/%d", f.Flow, f.Switch, f.Egress, f.Hops))
	}
	if got, want := strings.Join(stalled, " "), "F2@s4:33/0 F1@s2:202/2 A1@s4:33/0 A2@s4:33/0"; got != want {
		t.Errorf("stalled = %s, want %s", got, want)
	}
	if len(r.Fabric.Storms) != 0 {
		t.Errorf("storms = %+v, want none", r.Fabric.Storms)
	}
	if r.Deadlock == nil || r.Deadlock.Verdict != model.Skip || r.Deadlock.Reason != "the test sets no deadlock-ms" {
		t.Errorf("deadlock = %+v, want skip: the test sets no deadlock-ms", r.Deadlock)
	}
	if r.Verdict != model.Pass {
		t.Errorf("verdict = %v %q, want pass", r.Verdict, r.Reason)
	}
}

// clos is RDMA at scale's Fig. 5 on 2 ToRs, 2 leaves, 1 spine: the NIC of
// st (tor1 port 1) stalls and pauses tor1 from 10 µs to 5 ms; h2 (tor1),
// h3 and h4 (tor2) send to st, h3 over leaf1, h4 over leaf2, the spine
// and leaf1. The pause spreads back along their paths. watchdog: every
// pause it caused stops at 1 ms (tor1's watchdog fired at 1.01 ms, the
// detection time after the stall began).
func clos(t *testing.T, watchdog bool, log []model.WatchdogEvent) Result {
	s := newFabScen(t, []string{"tor1", "tor2", "leaf1", "leaf2", "spine"},
		[][2]string{{"tor1", "leaf1"}, {"tor1", "leaf2"}, {"tor2", "leaf1"}, {"tor2", "leaf2"}, {"leaf1", "spine"}, {"leaf2", "spine"}})
	s.host("st", "tor1", 1)
	s.host("h2", "tor1", 2)
	s.host("h3", "tor2", 32)
	s.host("h4", "tor2", 33)
	s.flow("H2", "h2", "st", "tor1")
	s.flow("H3", "h3", "st", "tor2", "leaf1", "tor1")
	s.flow("H4", "h4", "st", "tor2", "leaf2", "spine", "leaf1", "tor1")
	s.start(Options{DetectionNs: 1000000, SwitchWatchdog: log})
	for k := range 3 {
		for c := range 3 {
			s.send(int64(1000+1000*k+100*c), c, 0)
		}
	}
	end := int64(5000000)
	for ts := int64(10000); ts < end; ts += 200000 { // st → tor1
		s.pause(ts, "tor1", false, 1, 0xFFFF)
	}
	spread := end
	if watchdog {
		spread = 1000000
	}
	s.hold("tor1", 2, 5000, spread)     // h2: congestion first, then the stall sustains it
	s.hold("tor1", 200, 20000, spread)  // → leaf1
	s.hold("leaf1", 205, 30000, spread) // → tor2
	s.hold("leaf1", 208, 30000, spread) // → spine
	s.hold("tor2", 32, 40000, spread)
	s.hold("spine", 211, 40000, spread) // → leaf2
	s.hold("leaf2", 207, 50000, spread) // → tor2
	s.hold("tor2", 33, 60000, spread)
	return s.run()
}

func TestFabricClosStorm(t *testing.T) {
	for _, tc := range []struct {
		name     string
		watchdog bool
		log      []model.WatchdogEvent
		stopped  string
	}{
		{"no watchdog", false, nil, "not stopped: still spreading at the end of the trace (4860 µs)"},
		{"tor1 watchdog", true, nil, "stopped at tor1: watchdog fired on port 1 at 1010 µs (inferred: paused for the detection time; the pauses it caused ended by 1195.54 µs, the root paused until 5145.54 µs)"},
		{"tor1 watchdog logged", true, []model.WatchdogEvent{{AtNs: 900000, Port: 2, Priority: 3, Kind: "storm"}, {AtNs: 1005000, Port: 1, Priority: 3, Kind: "storm"}},
			"stopped at tor1: watchdog fired on port 1 at 1005 µs (the switch's watchdog log; the pauses it caused ended by 1195.54 µs, the root paused until 5145.54 µs)"},
		{"log without a firing on the root port", true, []model.WatchdogEvent{{AtNs: 1005000, Port: 1, Priority: 3, Kind: "restore"}},
			"not stopped by a watchdog: the pauses it caused ended at 1195.54 µs, the root paused until 5145.54 µs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clos(t, tc.watchdog, tc.log)
			if r.Fabric == nil || len(r.Fabric.Storms) != 1 {
				for _, c := range r.Fabric.Chains {
					t.Log(c.Text)
				}
				t.Fatalf("%d storms, want one (chains above)", len(r.Fabric.Storms))
			}
			st := r.Fabric.Storms[0]
			if st.Root.Kind != RootStalledNIC || st.Root.Host != "st" || st.Root.Switch != "tor1" || st.Root.Port != 1 {
				t.Errorf("root = %+v, want the stalled NIC st on tor1 port 1", st.Root)
			}
			var got []string
			for _, x := range st.Reached {
				got = append(got, fmt.Sprintf("%s:%d(%s)@%d/%d", x.Switch, x.Port, x.Paused, x.FirstNs/1000, x.Hops))
			}
			want := "tor1:2(h2)@5/0 tor1:200(leaf1:201)@20/0 leaf1:205(tor2:204)@30/1 leaf1:208(spine:209)@30/1 " +
				"tor2:32(h3)@40/2 spine:211(leaf2:210)@40/2 leaf2:207(tor2:206)@50/3 tor2:33(h4)@60/4"
			if g := strings.Join(got, " "); g != want {
				t.Errorf("reached = %s,\nwant %s", g, want)
			}
			if st.Hops != 4 || strings.Join(st.Switches, ",") != "leaf1,leaf2,spine,tor1,tor2" || strings.Join(st.Hosts, ",") != "h2,h3,h4" {
				t.Errorf("hops %d, switches %v, hosts %v; want 4, every switch, h2 h3 h4", st.Hops, st.Switches, st.Hosts)
			}
			if st.Stopped != tc.stopped {
				t.Errorf("stopped = %q, want %q", st.Stopped, tc.stopped)
			}
			if len(r.Fabric.Chains) != 3 {
				t.Fatalf("chains = %d, want 3", len(r.Fabric.Chains))
			}
			wantC := "tor2 paused h4 (port 33) at 60 µs ← tor2 port 206 paused by leaf2 at 50.5 µs ← leaf2 port 210 paused by spine at 40.5 µs" +
				" ← spine port 209 paused by leaf1 at 30.5 µs ← leaf1 port 201 paused by tor1 at 20.5 µs ← tor1 port 1 paused by st at 10 µs ← stalled NIC st"
			if c := r.Fabric.Chains[2].Text; c != wantC {
				t.Errorf("chain of h4 = %q,\nwant %q", c, wantC)
			}
		})
	}
}

// ring is a cyclic buffer dependency on the ring s1–s2–s3–s4–s1: each
// host sends two hops clockwise, so each switch's ingress from its
// counter-clockwise neighbour waits on its clockwise egress. s2's egress
// toward s3 congests first (10 µs); the pauses close the cycle by 16 µs
// and are refreshed until 10 ms. cycle false: s3 stops pausing s2 at
// 1 ms (the cycle is broken). traceEnd ends the trace (every pause stops
// then).
func ring(t *testing.T, deadlockNs int64, cycle bool, traceEnd int64) Result {
	s := newFabScen(t, []string{"s1", "s2", "s3", "s4"}, [][2]string{{"s1", "s2"}, {"s2", "s3"}, {"s3", "s4"}, {"s4", "s1"}})
	s.host("h1", "s1", 1)
	s.host("h2", "s2", 2)
	s.host("h3", "s3", 32)
	s.host("h4", "s4", 33)
	s.flow("A", "h1", "h3", "s1", "s2", "s3")
	s.flow("B", "h2", "h4", "s2", "s3", "s4")
	s.flow("C", "h3", "h1", "s3", "s4", "s1")
	s.flow("D", "h4", "h2", "s4", "s1", "s2")
	s.start(Options{DeadlockNs: deadlockNs, DetectionNs: 100 * 1000000})
	for k := range 3 {
		for c := range 4 {
			s.send(int64(1000+1000*k+100*c), c, 0)
		}
	}
	s3 := traceEnd
	if !cycle {
		s3 = 1000000
	}
	s.hold("s2", 201, 10000, traceEnd) // → s1: egress 202 congested
	s.hold("s1", 207, 12000, traceEnd) // → s4: egress 200 paused by s2
	s.hold("s4", 205, 14000, traceEnd) // → s3: egress 206 paused by s1
	s.hold("s3", 203, 16000, s3)       // → s2: egress 204 paused by s4
	return s.run()
}

func TestFabricDeadlock(t *testing.T) {
	const ms = 1000000
	for _, tc := range []struct {
		name     string
		deadline int64
		cycle    bool
		end      int64
		verdict  model.Verdict
		reason   string
		cyc      string
	}{
		{"cycle", 5 * ms, true, 10 * ms, model.Fail,
			"s2:201 → s3:203 → s4:205 → s1:207 → s2 kept pausing each other through 5.3 µs .. 5005.3 µs (frames in the window: s2:201 25, s3:203 25, s4:205 25, s1:207 25)",
			"s2:201/25 s3:203/25 s4:205/25 s1:207/25"},
		{"no cycle", 5 * ms, false, 10 * ms, model.Pass, "no cycle of switch ports pausing each other through 5.3 µs .. 5005.3 µs", ""},
		{"trace ends early", 5 * ms, true, 3 * ms, model.Inconclusive,
			"the trace ends at 2816.5 µs, before the window 5.3 µs .. 5005.3 µs closes, with s2:201 → s3:203 → s4:205 → s1:207 → s2 still pausing each other",
			"s2:201/15 s3:203/15 s4:205/15 s1:207/15"},
		{"no deadlock-ms", 0, true, 10 * ms, model.Skip, "the test sets no deadlock-ms", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ring(t, tc.deadline, tc.cycle, tc.end)
			d := r.Deadlock
			if d == nil {
				t.Fatal("Deadlock = nil, want the check")
			}
			var cyc []string
			for _, p := range d.Cycle {
				cyc = append(cyc, fmt.Sprintf("%s:%d/%d", p.Switch, p.Port, p.Frames))
			}
			if d.Verdict != tc.verdict || d.Reason != tc.reason || strings.Join(cyc, " ") != tc.cyc {
				t.Errorf("deadlock = %v %q %v,\nwant %v %q %v", d.Verdict, d.Reason, cyc, tc.verdict, tc.reason, tc.cyc)
			}
		})
	}
}

// TestFabricSlowReceiver: the chain of Hawkeye's line ends at a host that
// paused its switch and drained (XON): a slow receiver.
func TestFabricSlowReceiver(t *testing.T) {
	r := hawkeyeRoot(t, true).run()
	if len(r.Fabric.Chains) != 1 {
		t.Fatalf("chains = %+v, want one", r.Fabric.Chains)
	}
	c := r.Fabric.Chains[0]
	want := "s1 paused h1 (port 1) at 16 µs ← s1 port 200 paused by s2 at 14.5 µs ← s2 port 202 paused by s3 at 12.5 µs" +
		" ← s3 port 204 paused by s4 at 10.5 µs ← s4 port 33 paused by r at 9 µs ← slow receiver r"
	if c.Text != want {
		t.Errorf("chain = %q,\nwant %q", c.Text, want)
	}
	wantRoot := FabricRoot{Kind: RootSlowReceiver, Switch: "s4", Port: 33, Host: "r", Priority: 3, Episode: 0, Flows: []string{"F2", "A1", "A2"},
		Detail: "r paused after data arrived, for 19 µs (from 9 µs, ended by xon) (from the pause pattern)"}
	if !reflect.DeepEqual(c.Root, wantRoot) {
		t.Errorf("root = %+v,\nwant %+v", c.Root, wantRoot)
	}
	wantV := []StalledFlow{{Flow: "F1", Conn: 1, Direction: "to-responder", Switch: "s2", Egress: 202, Hops: 2}}
	if !reflect.DeepEqual(c.Victims, wantV) {
		t.Errorf("victims = %+v, want %+v", c.Victims, wantV)
	}
}
