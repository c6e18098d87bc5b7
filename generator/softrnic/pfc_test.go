package softrnic

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// wireRec is a frame seen starting on a PFC rig's link.
type wireRec struct {
	T    int64
	Dir  sim.Direction
	Len  int
	PFC  bool
	Mac  roce.MACControlFrame // PFC frames (Frame cleared)
	Prio int                  // RoCE frames: priority from the DSCP map
	Op   roce.Opcode
	PSN  roce.PSN
}

// pfcRig is NIC a (requester) on one end of a link; on the other end either
// NIC b (responder) or a bare endpoint the test sends PFC frames from.
type pfcRig struct {
	t      *testing.T
	loop   *sim.EventLoop
	a, b   *NIC
	ea, eb *sim.Endpoint
	link   sim.LinkConfig
	wire   []wireRec
	cfg    PFCConfig
}

func testPFCConfig(pageSize int) PFCConfig {
	c := PFCConfig{Priorities: 1 << 3, PageSize: pageSize}
	c.DSCPToPriority[26] = 3
	c.DSCPToPriority[48] = 3 // CNPs
	return c
}

func newPFCRig(t *testing.T, pers Personality, delay time.Duration, withB bool, cfgA, cfgB *PFCConfig) *pfcRig {
	t.Helper()
	r := &pfcRig{t: t, loop: sim.NewEventLoop(), cfg: testPFCConfig(0)}
	net := sim.NewNetwork(r.loop)
	r.link = sim.LinkConfig{BandwidthBps: int64(pers.LineRateGbps * 1e9), Delay: delay, Hook: r.hook}
	r.ea, r.eb = net.NewLink(r.link)
	var err error
	r.a, err = New(r.loop, r.ea, Config{Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")},
		Personality: pers, Seed: 1, PFC: cfgA})
	if err != nil {
		t.Fatal(err)
	}
	if withB {
		r.b, err = New(r.loop, r.eb, Config{Name: "rsp", MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")},
			Personality: pers, Seed: 2, PFC: cfgB})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		r.eb.SetReceiver(func([]byte) {})
	}
	return r
}

func (r *pfcRig) hook(dir sim.Direction, frame []byte) sim.Verdict {
	w := wireRec{T: r.loop.Now(), Dir: dir, Len: len(frame)}
	var m roce.MACControlFrame
	if roce.ParseMACControl(frame, &m) == nil {
		w.PFC, w.Mac = true, m
		w.Mac.Frame, w.Mac.PDU = nil, nil
	} else {
		var p roce.Packet
		if err := (&roce.Parser{}).Parse(frame, 0, &p); err != nil {
			r.t.Fatalf("unknown frame on the link: %v", err)
		}
		w.Prio, w.Op, w.PSN = r.cfg.prio(p.TOS), p.Opcode, p.BTH.PSN()
	}
	r.wire = append(r.wire, w)
	return sim.Pass
}

func (c PFCConfig) prio(tos uint8) int { return int(c.DSCPToPriority[tos>>2] & 7) }

// arrival returns when a frame of n bytes that started at t reaches the
// other end.
func (r *pfcRig) arrival(t int64, n int) int64 {
	return t + int64(sim.SerializationDelay(r.link, n)) + int64(r.link.Delay)
}

// qp creates a connected QP on a towards b's first QP (or a made-up peer)
// with DSCP dscp.
func (r *pfcRig) qp(dscp uint8, peer *QP) *QP {
	q := r.a.CreateQP()
	attr := ConnectAttr{RemoteQPN: 0x100, RemotePSN: 0, RemoteIP: netip.MustParseAddr("10.0.0.2"), RemoteMAC: [6]byte{2, 0, 0, 0, 0, 2},
		TrafficClass: new(uint8(dscp << 2))}
	if peer != nil {
		attr.RemoteQPN, attr.RemotePSN = peer.QPN(), peer.PSN()
		if err := peer.Connect(ConnectAttr{RemoteQPN: q.QPN(), RemotePSN: q.PSN(), RemoteIP: r.a.IPs()[0], RemoteMAC: r.a.MAC(),
			TrafficClass: new(uint8(dscp << 2))}); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := q.Connect(attr); err != nil {
		r.t.Fatal(err)
	}
	return q
}

// sendPFC makes the bare far end send a PFC frame for priority 3 at t.
func (r *pfcRig) sendPFC(t int64, quanta uint16) {
	r.loop.AfterFunc(time.Duration(t-r.loop.Now()), func() {
		var q [8]uint16
		q[3] = quanta
		r.eb.Send(roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 0x99}, 1<<3, q))
	})
}

// starts returns the start times of RoCE frames of prio sent by a.
func (r *pfcRig) starts(prio int) []int64 {
	var out []int64
	for _, w := range r.wire {
		if w.Dir == sim.AtoB && !w.PFC && w.Prio == prio {
			out = append(out, w.T)
		}
	}
	return out
}

// mustPers loads a personality without QP start jitter: the PFC tests
// time pauses against traffic that starts when posted.
func mustPers(t *testing.T, name string) Personality {
	t.Helper()
	p, err := LoadPersonality(name)
	if err != nil {
		t.Fatal(err)
	}
	p.QPStartJitter = 0
	return p
}

func write(t *testing.T, q *QP, mr *MR, size int, remote uint64, rkey uint32) {
	t.Helper()
	if err := q.PostSend(SendWR{Op: WRWrite, Local: mr, Length: size, RemoteAddr: remote, RKey: rkey}); err != nil {
		t.Fatal(err)
	}
}

// TestPauseReactionBound: every personality reacts within the 802.3 bound
// for its line rate.
func TestPauseReactionBound(t *testing.T) {
	if b, _ := PauseReactionBound(100); b != 2017*time.Nanosecond {
		t.Errorf("PauseReactionBound(100) = %v, want 2.017µs (394 quanta)", b)
	}
	if b, _ := PauseReactionBound(40); b != 1510*time.Nanosecond {
		t.Errorf("PauseReactionBound(40) = %v, want 1.51µs (118 quanta)", b)
	}
	for _, name := range Personalities() {
		p := mustPers(t, name)
		b, ok := PauseReactionBound(p.LineRateGbps)
		if !ok {
			t.Errorf("%s: no 802.3 bound for %v Gb/s", name, p.LineRateGbps)
			continue
		}
		if d := time.Duration(p.PauseReactionDelay); d > b {
			t.Errorf("%s: pause-reaction-delay = %v, want <= %v (802.3 at %v Gb/s)", name, d, b, p.LineRateGbps)
		}
	}
}

// TestPauseHonoured: an XOFF for priority 3 with 100 quanta arriving at t
// stops priority-3 frames from starting in [t+delay, t+delay+512 ns)
// exactly; an XON resumes at arrival+delay exactly.
func TestPauseHonoured(t *testing.T) {
	for _, name := range Personalities() {
		t.Run(name, func(t *testing.T) {
			pers := mustPers(t, name)
			cfg := testPFCConfig(0)
			r := newPFCRig(t, pers, 500*time.Nanosecond, false, &cfg, nil)
			q := r.qp(26, nil)
			mr := r.a.RegMR(make([]byte, 1<<20))
			write(t, q, mr, 1<<20, 0x1000, 0x10)
			const xoffAt, xoffAt2, xonAt = 10_000, 30_000, 40_000
			r.sendPFC(xoffAt, 100)
			r.sendPFC(xoffAt2, 0xFFFF)
			r.sendPFC(xonAt, 0)
			r.loop.RunUntil(60_000)
			d := int64(pers.PauseReactionDelay)
			q100 := int64(roce.QuantaToDuration(100, r.link.BandwidthBps))
			from := r.arrival(xoffAt, roce.MACControlMinLen) + d
			from2 := r.arrival(xoffAt2, roce.MACControlMinLen) + d
			resume := r.arrival(xonAt, roce.MACControlMinLen) + d
			st := r.starts(3)
			check := func(lo, hi int64) {
				t.Helper()
				var last, next int64 = -1, -1
				for _, s := range st {
					if s < lo {
						last = s
					} else if next < 0 {
						next = s
					}
				}
				if next != hi {
					t.Errorf("pause [%d, %d): first start at or after %d = %d, want %d", lo, hi, lo, next, hi)
				}
				if last < lo-200 {
					t.Errorf("pause [%d, %d): last start before it = %d, want back-to-back traffic", lo, hi, last)
				}
			}
			check(from, from+q100)
			check(from2, resume)
			if got := r.a.Counters().PFC.RxPause[3]; got != 3 {
				t.Errorf("rx_prio3_pause = %d, want 3", got)
			}
			wantUs := uint64((q100 + resume - from2) / 1000)
			if got := r.a.Counters().PFC.RxPauseDuration[3]; got != wantUs && got != wantUs+1 {
				t.Errorf("rx_prio3_pause_duration = %d, want %d µs", got, wantUs)
			}
			if got := r.a.Counters().PFC.RxPauseTransition[3]; got != 2 {
				t.Errorf("rx_prio3_pause_transition = %d, want 2", got)
			}
		})
	}
}

// TestPauseOtherPriorities: while priority 3 is paused, priority 0 keeps
// the wire busy back to back; priority 3 resumes after the XON.
func TestPauseOtherPriorities(t *testing.T) {
	pers := mustPers(t, "cx5")
	cfg := testPFCConfig(0)
	r := newPFCRig(t, pers, 500*time.Nanosecond, false, &cfg, nil)
	q3, q0 := r.qp(26, nil), r.qp(0, nil)
	mr := r.a.RegMR(make([]byte, 1<<20))
	write(t, q3, mr, 1<<20, 0x1000, 0x10)
	write(t, q0, mr, 1<<20, 0x1000, 0x10)
	r.sendPFC(10_000, 0xFFFF)
	r.sendPFC(40_000, 0)
	r.loop.RunUntil(60_000)
	d := int64(pers.PauseReactionDelay)
	from, to := r.arrival(10_000, 60)+d, r.arrival(40_000, 60)+d
	var prev int64 = -1
	for _, w := range r.wire {
		if w.Dir != sim.AtoB || w.PFC || w.T < from || w.T >= to {
			continue
		}
		if w.Prio == 3 {
			t.Fatalf("priority-3 frame started at %d, inside the pause [%d, %d)", w.T, from, to)
		}
		if prev >= 0 && w.T-prev > 100 {
			t.Errorf("priority-0 gap %d ns at %d: want back to back", w.T-prev, w.T)
		}
		prev = w.T
	}
	if prev < to-100 {
		t.Errorf("priority 0 stopped at %d during the pause", prev)
	}
	var resumed int64 = -1
	for _, s := range r.starts(3) {
		if s >= to {
			resumed = s
			break
		}
	}
	if resumed < to || resumed > to+100 {
		t.Errorf("priority 3 resumed at %d, want within one frame of %d", resumed, to)
	}
}

// slowReceiver writes size bytes from a to b (both cx5 with PFC on
// priority 3, pages of pageSize) and returns the rig.
func slowReceiver(t *testing.T, pers Personality, size, pageSize int, delay time.Duration) *pfcRig {
	t.Helper()
	cfg := testPFCConfig(pageSize)
	r := newPFCRig(t, pers, delay, true, &cfg, &cfg)
	peer := r.b.CreateQP()
	q := r.qp(26, peer)
	src, dst := r.a.RegMR(make([]byte, size)), r.b.RegMR(make([]byte, size))
	var comps []Completion
	r.a.SetCompletionHandler(func(c Completion) { comps = append(comps, c) })
	write(t, q, src, size, dst.Addr, dst.RKey)
	r.loop.RunUntil(int64(time.Second))
	if len(comps) != 1 || comps[0].Status != StatusSuccess {
		t.Fatalf("completions %+v", comps)
	}
	return r
}

func pfcFrames(log []PFCLogEntry, ev PFCEvent) (xoff, xon int) {
	for _, e := range log {
		if e.Event != ev {
			continue
		}
		if e.Quanta[3] != 0 {
			xoff++
		} else {
			xon++
		}
	}
	return
}

// TestSlowReceiverMTT: Guo et al., SIGCOMM 2016, §4.4 (slow receiver). A 16 MB WRITE into 16 MB of
// registered memory backed by 4 KB pages misses the 2K-entry MTT cache on
// every page: the receive pipeline falls below line rate and the NIC sends
// XOFF/XON; with 2 MiB pages it does not pause. No frame is lost.
func TestSlowReceiverMTT(t *testing.T) {
	pers := mustPers(t, "cx5")
	const size = 16 << 20
	small := slowReceiver(t, pers, size, 4096, 100*time.Nanosecond)
	xoff, xon := pfcFrames(small.b.PFCLog(), PFCSent)
	if xoff == 0 || xon == 0 {
		t.Errorf("4 KB pages: %d XOFF, %d XON sent, want some", xoff, xon)
	}
	t.Logf("4 KB pages: %d XOFF, %d XON; first %v", xoff, xon, small.b.PFCLog()[0])
	for _, n := range []*NIC{small.a, small.b} {
		if c := n.Counters().PFC; c.RxDiscardsPhy != 0 {
			t.Errorf("%s: rx_discards_phy = %d, want 0 (lossless)", n.Name(), c.RxDiscardsPhy)
		}
	}
	checkCountersAgainstLog(t, small)
	huge := slowReceiver(t, pers, size, 2<<20, 100*time.Nanosecond)
	if log := huge.b.PFCLog(); len(log) != 0 {
		t.Errorf("2 MiB pages: PFC log %v, want empty", log)
	}
}

// TestSlowReceiverWorkingSet: the MTT cache covers 8 MB of 4 KB pages. A
// second pass over 4 MB hits; a second pass over 16 MB misses again and
// pauses again.
func TestSlowReceiverWorkingSet(t *testing.T) {
	pers := mustPers(t, "cx5")
	for _, tc := range []struct {
		size       int
		wantPauses bool
	}{{4 << 20, false}, {16 << 20, true}} {
		cfg := testPFCConfig(4096)
		r := newPFCRig(t, pers, 100*time.Nanosecond, true, &cfg, &cfg)
		peer := r.b.CreateQP()
		q := r.qp(26, peer)
		src, dst := r.a.RegMR(make([]byte, tc.size)), r.b.RegMR(make([]byte, tc.size))
		var second int64
		r.a.SetCompletionHandler(func(c Completion) {
			if c.WRID == 1 {
				second = r.loop.Now()
				if err := q.PostSend(SendWR{ID: 2, Op: WRWrite, Local: src, Length: tc.size, RemoteAddr: dst.Addr, RKey: dst.RKey}); err != nil {
					t.Fatal(err)
				}
			}
		})
		if err := q.PostSend(SendWR{ID: 1, Op: WRWrite, Local: src, Length: tc.size, RemoteAddr: dst.Addr, RKey: dst.RKey}); err != nil {
			t.Fatal(err)
		}
		r.loop.RunUntil(int64(time.Second))
		n := 0
		for _, e := range r.b.PFCLog() {
			if e.Event == PFCSent && e.TimeNs > second {
				n++
			}
		}
		if (n > 0) != tc.wantPauses {
			t.Errorf("%d MB, second pass: %d PFC frames sent, want pauses %v", tc.size>>20, n, tc.wantPauses)
		}
	}
}

// TestSlowReceiverFirstXOFF: a small deterministic case checked against an
// obvious reference queue: spec personality with a 2K-entry MTT (1 µs per
// miss) and a 16 KB XOFF threshold, 4 KB pages; the first XOFF leaves the
// NIC when the frame that brings the buffer to 16 KB arrives.
func TestSlowReceiverFirstXOFF(t *testing.T) {
	pers := mustPers(t, "spec")
	pers.MTTCacheEntries, pers.MTTMissPenalty = 2048, Duration(time.Microsecond)
	pers.RxBufferBytes, pers.RxXoffBytes, pers.RxXonBytes = 65536, 16384, 8192
	r := slowReceiver(t, pers, 256<<10, 4096, 100*time.Nanosecond)
	// Reference: FIFO queue, service (len+20)·0.08 ns rounded, plus 1 µs on
	// the first packet of each 4 KB page (1 KB MTU: every 4th packet).
	var first int64 = -1
	var done []int64 // completion time of each data frame
	var sizes []int
	var free int64
	pkt := 0
	for _, w := range r.wire {
		if w.Dir != sim.AtoB || w.PFC {
			continue
		}
		a := r.arrival(w.T, w.Len)
		// Occupancy on arrival: frames not yet completed, plus this one.
		occ := w.Len
		for i, d := range done {
			if d > a {
				occ += sizes[i]
			}
		}
		if first < 0 && occ >= 16384 {
			first = a
		}
		cost := int64(float64(w.Len+20)*8/100 + 0.5)
		if pkt%4 == 0 {
			cost += 1000
		}
		pkt++
		free = max(free, a) + cost
		done, sizes = append(done, free), append(sizes, w.Len)
		if first >= 0 {
			break
		}
	}
	var got int64 = -1
	for _, w := range r.wire {
		if w.Dir == sim.BtoA && w.PFC {
			got = w.T
			break
		}
	}
	if got != first || first < 0 {
		t.Errorf("first XOFF at %d ns, reference %d ns", got, first)
	}
	const want = 1860 // measured; equal to the reference above
	if got != want {
		t.Errorf("first XOFF at %d ns, want %d", got, want)
	}
}

// checkCountersAgainstLog: per-priority frame counters equal the log and
// the frames on the wire.
func checkCountersAgainstLog(t *testing.T, r *pfcRig) {
	t.Helper()
	for _, n := range []*NIC{r.a, r.b} {
		var sent, recv uint64
		for _, e := range n.PFCLog() {
			switch {
			case e.Event == PFCSent && e.Enable&(1<<3) != 0:
				sent++
			case e.Event == PFCReceived && e.Enable&(1<<3) != 0:
				recv++
			}
		}
		c := n.Counters()
		m := c.Map()
		if m["tx_prio3_pause"] != sent || m["rx_prio3_pause"] != recv {
			t.Errorf("%s: tx_prio3_pause %d rx_prio3_pause %d, log %d sent %d received", n.Name(), m["tx_prio3_pause"], m["rx_prio3_pause"], sent, recv)
		}
		dir := sim.AtoB
		if n == r.b {
			dir = sim.BtoA
		}
		wire := uint64(0)
		for _, w := range r.wire {
			if w.PFC && w.Dir == dir {
				wire++
			}
		}
		if wire != sent {
			t.Errorf("%s: %d PFC frames on the wire, %d in the log", n.Name(), wire, sent)
		}
	}
	if a, b := r.a.Counters().PFC.RxPause[3], r.b.Counters().PFC.TxPause[3]; a != b {
		t.Errorf("requester rx_prio3_pause %d != responder tx_prio3_pause %d", a, b)
	}
}

// TestStormWatchdog: rx-stall at 100 µs until the end. The responder's
// buffer fills and it pauses the requester continuously (XOFF refreshed
// every 167.77 µs) until the watchdog finds the pipeline stopped for
// 100 ms: then it never sends PFC again, even when its pipeline stalls
// again later, and frames to its full buffer are dropped.
func TestStormWatchdog(t *testing.T) {
	pers := mustPers(t, "cx5")
	cfg := testPFCConfig(2 << 20)
	r := newPFCRig(t, pers, 100*time.Nanosecond, true, &cfg, &cfg)
	peer := r.b.CreateQP()
	q := r.qp(26, peer)
	const size = 8 << 20
	src, dst := r.a.RegMR(make([]byte, size)), r.b.RegMR(make([]byte, size))
	write(t, q, src, size, dst.Addr, dst.RKey)
	const stall = 100 * time.Microsecond
	r.b.StallRx(stall, 150*time.Millisecond)
	r.b.StallRx(300*time.Millisecond, 0)
	r.loop.RunUntil(int64(600 * time.Millisecond))
	log := r.b.PFCLog()
	var fired, warned int64 = -1, -1
	var xoffs []int64
	for _, e := range log {
		switch e.Event {
		case PFCStormError:
			if fired >= 0 {
				t.Errorf("watchdog fired twice (%d, %d)", fired, e.TimeNs)
			}
			fired = e.TimeNs
		case PFCStormWarning:
			warned = e.TimeNs
		case PFCSent:
			if fired >= 0 {
				t.Errorf("PFC frame sent at %d after the watchdog fired at %d", e.TimeNs, fired)
			}
			if e.Quanta[3] == 0 {
				t.Errorf("XON sent at %d during the storm", e.TimeNs)
			}
			xoffs = append(xoffs, e.TimeNs)
		}
	}
	refresh := int64(roce.QuantaToDuration(0xFFFF, 100e9) / 2)
	wd := int64(stall + 100*time.Millisecond)
	if fired < wd-2000 || fired >= wd+refresh {
		t.Errorf("watchdog fired at %d ns, want within one refresh (%d ns) of %d", fired, refresh, wd)
	}
	if lo := int64(stall + 85*time.Millisecond); warned < lo-2000 || warned >= lo+refresh {
		t.Errorf("storm warning at %d ns, want within one refresh of %d", warned, lo)
	}
	for i := 1; i < len(xoffs); i++ {
		if d := xoffs[i] - xoffs[i-1]; d != refresh {
			t.Fatalf("XOFF %d at %d: interval %d, want %d", i, xoffs[i], d, refresh)
		}
	}
	t.Logf("first XOFF %d ns, %d XOFFs, warning %d ns, watchdog %d ns", xoffs[0], len(xoffs), warned, fired)
	c := r.b.Counters().PFC
	if c.StormErrorEvents != 1 || c.StormWarningEvents != 1 || c.RxDiscardsPhy == 0 {
		t.Errorf("responder storm counters %+v, want 1 error, 1 warning, discards", c)
	}
	// The requester was paused from the first XOFF (plus its reaction
	// delay) to the last one's expiry.
	first := r.arrival(xoffs[0], 60)
	last := r.arrival(xoffs[len(xoffs)-1], 60) + int64(roce.QuantaToDuration(0xFFFF, 100e9))
	if got, want := r.a.Counters().PFC.RxPauseDuration[3], uint64((last-first)/1000); got != want {
		t.Errorf("requester rx_prio3_pause_duration = %d µs, want %d", got, want)
	}
	if got, want := r.b.Counters().PFC.TxPauseDuration[3], uint64((last-first)/1000); got != want {
		t.Errorf("responder tx_prio3_pause_duration = %d µs, want %d", got, want)
	}
	checkCountersAgainstLog(t, r)
}

// TestPFCCountersOnlyWhenConfigured: the counter map is unchanged without
// PFC, and has the per-priority counters of the lossless priorities only.
func TestPFCCountersOnlyWhenConfigured(t *testing.T) {
	pers := mustPers(t, "cx5")
	off := newPFCRig(t, pers, 0, false, nil, nil)
	for k := range off.a.Counters().Map() {
		if k == "rx_discards_phy" || k == "tx_pause_storm_error_events" || k == "rx_prio3_pause" {
			t.Errorf("counter %s without PFC", k)
		}
	}
	cfg := testPFCConfig(0)
	on := newPFCRig(t, pers, 0, false, &cfg, nil)
	m := on.a.Counters().Map()
	for _, k := range []string{"rx_prio3_pause", "rx_prio3_pause_duration", "rx_prio3_pause_transition", "tx_prio3_pause",
		"tx_prio3_pause_duration", "tx_pause_storm_warning_events", "tx_pause_storm_error_events", "rx_discards_phy"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no counter %s with PFC on priority 3", k)
		}
	}
	if _, ok := m["rx_prio0_pause"]; ok {
		t.Error("rx_prio0_pause exported for a lossy priority")
	}
}

// TestStallRxWithoutPFC: without PFC a stalled NIC drops what it receives.
func TestStallRxWithoutPFC(t *testing.T) {
	p := newPair(t, pairOpts{pers: "cx5"})
	p.rsp.StallRx(10*time.Microsecond, 0)
	p.rq.PostSend(SendWR{Op: WRWrite, Local: p.reqMR, Length: 1 << 20, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
	p.run(time.Millisecond)
	if got := p.rsp.Counters().RxDiscards; got == 0 {
		t.Error("rx_discards = 0, want the frames received during the stall")
	}
	if p.rsp.PFCLog() != nil {
		t.Error("PFCLog without PFC is not nil")
	}
}

// TestMTTCacheLRU checks the cache against a slow obvious LRU.
func TestMTTCacheLRU(t *testing.T) {
	c := newMTTCache(4)
	var ref []uint64
	seq := []uint64{1, 2, 3, 4, 1, 5, 2, 6, 1, 1, 7, 3, 4, 5, 6, 7, 8, 1}
	for i, pg := range seq {
		hit := false
		for j, x := range ref {
			if x == pg {
				hit = true
				ref = append(ref[:j], ref[j+1:]...)
				break
			}
		}
		ref = append([]uint64{pg}, ref...)
		if len(ref) > 4 {
			ref = ref[:4]
		}
		if got := c.touch(pg); got != hit {
			t.Errorf("access %d (page %d): hit = %v, want %v", i, pg, got, hit)
		}
	}
}

// latePort is a link endpoint that is a sim.TimedPort and hands PFC frames
// to its receiver late ns after they arrived, with their true arrival time:
// a software NIC on a real clock whose loop ran behind.
type latePort struct {
	*sim.Endpoint
	loop sim.Loop
	late time.Duration
}

func (p *latePort) SetTimedReceiver(fn func(frame []byte, rxNs int64)) {
	p.Endpoint.SetReceiver(func(frame []byte) {
		rx := p.loop.Now()
		if len(frame) < 14 || frame[12] != 0x88 || frame[13] != 0x08 {
			fn(frame, rx)
			return
		}
		c := append([]byte(nil), frame...)
		p.loop.AfterFunc(p.late, func() { fn(c, rx) })
	})
}

// TestPauseHandledLate: a pause the NIC handles after its reaction delay
// has passed applies at once, from its arrival + the reaction delay (not
// from when it was handled), and PFCApplyLateness says by how much it was
// late. Frames may start between the due time and the handling: that is
// the lateness the pfc analyzer allows for.
func TestPauseHandledLate(t *testing.T) {
	pers := mustPers(t, "cx5")
	const late = 3 * time.Microsecond
	d := int64(pers.PauseReactionDelay)
	if d >= int64(late) {
		t.Fatalf("cx5 reaction delay %d ns: the test needs it below %v", d, late)
	}
	cfg := testPFCConfig(0)
	r := &pfcRig{t: t, loop: sim.NewEventLoop(), cfg: testPFCConfig(0)}
	r.link = sim.LinkConfig{BandwidthBps: int64(pers.LineRateGbps * 1e9), Delay: 500 * time.Nanosecond, Hook: r.hook}
	r.ea, r.eb = sim.NewNetwork(r.loop).NewLink(r.link)
	var err error
	r.a, err = New(r.loop, &latePort{Endpoint: r.ea, loop: r.loop, late: late}, Config{Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 1},
		IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}, Personality: pers, Seed: 1, PFC: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	r.eb.SetReceiver(func([]byte) {})
	if got := r.a.PFCApplyLateness(); got != 0 {
		t.Fatalf("PFCApplyLateness before any pause = %v, want 0", got)
	}
	q := r.qp(26, nil)
	mr := r.a.RegMR(make([]byte, 1<<20))
	write(t, q, mr, 1<<20, 0x1000, 0x10)
	const xoffAt, quanta = 10_000, 2000
	r.sendPFC(xoffAt, quanta)
	r.loop.RunUntil(60_000)
	arrive := r.arrival(xoffAt, roce.MACControlMinLen)
	due, handled := arrive+d, arrive+int64(late)
	end := due + int64(roce.QuantaToDuration(quanta, r.link.BandwidthBps))
	if got, want := r.a.PFCApplyLateness(), time.Duration(handled-due); got != want {
		t.Errorf("PFCApplyLateness = %v, want %v (handled at %d, due at %d)", got, want, handled, due)
	}
	var inLate, next int64 = 0, -1
	for _, s := range r.starts(3) {
		switch {
		case s >= due && s < handled:
			inLate++
		case s >= handled && next < 0:
			next = s
		}
	}
	if inLate == 0 {
		t.Errorf("no frame started between the pause's due time %d and its handling %d: the rig did not make it late", due, handled)
	}
	if next != end {
		t.Errorf("first start after the late pause was handled = %d, want %d (arrival + delay + %d quanta)", next, end, quanta)
	}
	if log := r.a.PFCLog(); len(log) == 0 || log[0].Event != PFCReceived || log[0].TimeNs != arrive {
		t.Errorf("PFC log %v: want the pause received at its arrival %d first", log, arrive)
	}
}
