package softrnic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// nakLatencies runs one WRITE of n packets with relative PSN drop lost once
// and returns the NACK generation latency and the reaction latency as a
// switch at the far end of each NIC's link would measure them, which is
// how the paper measured them (calibrate.go): generation from the
// out-of-order packet leaving the requester's side of the link (where a
// switch would have its timestamp and forward it) to the NAK's arrival
// there; reaction from the NAK leaving the responder's side to the
// retransmission's arrival there. A delay shorter than the link path its
// two frames travel reads as that path (floor returns it).
func nakLatencies(t *testing.T, pers string, n int, drop roce.PSN) (gen, react time.Duration, floor func(want Duration) time.Duration) {
	t.Helper()
	p := newPair(t, pairOpts{pers: pers, bufSize: n * 1024})
	p.drop = dropAt(drop, 1)
	p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: n * 1024, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
	p.run(time.Second)
	var oos, nak, retx *frameRec
	for i := range p.frames {
		f := &p.frames[i]
		switch {
		case oos == nil && f.Dir == sim.AtoB && f.PSN == drop+1:
			oos = f
		case nak == nil && f.Op == roce.RCAcknowledge && f.Syn.IsNAK():
			nak = f
		case retx == nil && nak != nil && f.Dir == sim.AtoB && f.PSN == drop:
			retx = f
		}
	}
	if oos == nil || nak == nil || retx == nil || nak.PSN != drop {
		t.Fatalf("%s drop %d: no NAK episode in %s", pers, drop, p.compact())
	}
	path := time.Duration(p.arrival(*oos) - oos.T + p.arrival(*nak) - nak.T)
	return time.Duration(p.arrival(*nak) - oos.T), time.Duration(p.arrival(*retx) - nak.T), func(want Duration) time.Duration { return max(time.Duration(want), path) }
}

func TestPersonalityNakLatencies(t *testing.T) {
	for _, name := range Personalities() {
		pers, _ := LoadPersonality(name)
		t.Run(name, func(t *testing.T) {
			// Drop the 16th packet of a 20 KB message (Fig. 8/9, 20 KB): the
			// NAK comes back after the sender finished, so nothing else
			// delays the retransmission.
			gen, react, floor := nakLatencies(t, name, 20, 15)
			if want := floor(pers.NakGenDelay); gen != want {
				t.Errorf("NACK generation = %v, want %v", gen, want)
			}
			lo, hi := floor(pers.NakReactionDelay), floor(pers.NakReactionDelay)+time.Duration(pers.NakReactionJitter)
			if react < lo || react > hi || pers.NakReactionJitter == 0 && react != lo {
				t.Errorf("NACK reaction = %v, want in [%v, %v]", react, lo, hi)
			}
			// Drop the 17th, 18th, 19th of 20: the out-of-order packet is
			// one of the last three (the last one for the 19th).
			for drop := roce.PSN(16); drop <= 18; drop++ {
				gen, _, floor = nakLatencies(t, name, 20, drop)
				want := floor(pers.NakGenDelay)
				if pers.NakGenDelayLastPacket > 0 && (drop == 18 || 20-int(drop)-1 <= pers.NakGenSlowLastPackets) {
					want = floor(pers.NakGenDelayLastPacket)
				}
				if gen != want {
					t.Errorf("NACK generation, drop #%d of 20 = %v, want %v", drop+1, gen, want)
				}
			}
		})
	}
}

// TestPipelineDelaysReaction reproduces Fig. 9(b): on CX5/CX6 a NAK for an
// early packet of a 100 KB message waits behind the committed pipeline
// (≈6 µs in the paper, more here: the depth is fitted to Fig. 10); for a
// late packet the pipeline is empty (3 µs).
func TestPipelineDelaysReaction(t *testing.T) {
	for _, name := range []string{"cx5", "cx6"} {
		_, early, _ := nakLatencies(t, name, 100, 4)
		_, late, _ := nakLatencies(t, name, 100, 90)
		// The retransmission waits for the committed frames: at most the
		// whole pipeline (70 frames of 1102 bytes + 20 of preamble and gap
		// at 100 Gb/s = 6.2 µs after the 3 µs reaction); Fig. 9(b) reads
		// ≈6 µs.
		full := 3*time.Microsecond + time.Duration(70*(1102+20)*8/100)*time.Nanosecond
		if early < 5500*time.Nanosecond || early > full {
			t.Errorf("%s: reaction for drop #5 of 100 KB = %v, want in [5.5µs, %v]", name, early, full)
		}
		if late != 3*time.Microsecond {
			t.Errorf("%s: reaction for drop #91 of 100 KB = %v, want 3µs", name, late)
		}
	}
}

// tailTimeouts drops the tail packet of message msgIdx (of msgIdx+1
// one-packet messages) forever and returns the intervals between its
// transmissions and the final status. Each earlier message loses its
// packet earlier times (the loss history; Fig. 12 drops 7 times) and then
// gets through. timeout is the QP's timeout exponent.
func tailTimeouts(t *testing.T, pers string, adaptive bool, msgIdx, earlier int, timeout uint8) ([]time.Duration, Status) {
	t.Helper()
	p := newPair(t, pairOpts{pers: pers, reqCfg: Config{AdaptiveRetrans: adaptive},
		attr: ConnectAttr{Timeout: new(uint8(timeout)), RetryCnt: new(uint8(7))}})
	p.drop = func(f frameRec) bool {
		return f.Dir == sim.AtoB && (int(f.PSN) == msgIdx || int(f.PSN) < msgIdx && f.Round <= earlier)
	}
	// tx-depth 1, as in the paper: the next message is posted when the
	// previous one completes.
	post := func(i int) {
		p.rq.PostSend(SendWR{ID: uint64(i), Op: WRWrite, Local: p.reqMR, Length: 1024, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
	}
	p.req.SetCompletionHandler(func(c Completion) {
		p.comps = append(p.comps, c)
		if c.Status == StatusSuccess && int(c.WRID) < msgIdx {
			post(int(c.WRID) + 1)
		}
	})
	post(0)
	p.run(time.Hour)
	var ts []int64
	for _, f := range p.frames {
		if f.Dir == sim.AtoB && int(f.PSN) == msgIdx {
			ts = append(ts, f.T)
		}
	}
	var iv []time.Duration
	for i := 1; i < len(ts); i++ {
		iv = append(iv, time.Duration(ts[i]-ts[i-1]))
	}
	last := p.comps[len(p.comps)-1]
	if int(last.WRID) != msgIdx {
		t.Fatalf("last completion %+v, want WR %d", last, msgIdx)
	}
	return iv, last.Status
}

func TestPersonalityTimeouts(t *testing.T) {
	T := roce.TransportTimeout(14)
	for _, name := range Personalities() {
		pers, _ := LoadPersonality(name)
		t.Run(name+"/non-adaptive", func(t *testing.T) {
			iv, st := tailTimeouts(t, name, false, 0, 0, 14)
			if st != StatusRetryExcErr || len(iv) != 7 {
				t.Fatalf("%d retries then %v, want 7 then RETRY_EXC_ERR", len(iv), st)
			}
			for i, d := range iv {
				lo, hi := pers.TimeoutNextFactor, pers.TimeoutNextFactor
				if i == 0 {
					lo, hi = pers.TimeoutFirstFactor, max(pers.TimeoutFirstFactor, pers.TimeoutFirstFactorMax)
				}
				if d < time.Duration(float64(T)*lo) || d > time.Duration(float64(T)*hi) {
					t.Errorf("timeout %d = %v, want in [%v, %v]", i+1, d, time.Duration(float64(T)*lo), time.Duration(float64(T)*hi))
				}
			}
		})
		if len(pers.Adaptive) == 0 {
			continue
		}
		t.Run(name+"/adaptive", func(t *testing.T) {
			// Table 2: maximum retries of messages 1..5, each earlier
			// message having lost its packet 7 times (Fig. 12).
			for msg := range 5 {
				st := pers.Adaptive[min(msg, len(pers.Adaptive)-1)]
				iv, status := tailTimeouts(t, name, true, msg, 7, 14)
				if status != StatusRetryExcErr || len(iv) != st.MaxRetries {
					t.Errorf("message %d: %d retries then %v, want %d then RETRY_EXC_ERR", msg+1, len(iv), status, st.MaxRetries)
					continue
				}
				for i, d := range iv {
					if want := st.Interval(i, T); d != want {
						t.Errorf("message %d timeout %d = %v, want %v", msg+1, i+1, d, want)
					}
				}
			}
		})
	}
}

// TestAdaptiveHistoryAndExponent: the adaptive stage follows the QP's loss
// history, not the message index (a first loss at message 4 starts at the
// first stage), and the intervals scale with the timeout exponent.
func TestAdaptiveHistoryAndExponent(t *testing.T) {
	pers, _ := LoadPersonality("cx5")
	for _, tc := range []struct {
		msg, earlier int
		timeout      uint8
		stage        int
	}{
		{3, 0, 14, 0}, // no history: the first stage (5.6 ms, 13 retries), not 0.671 s
		{3, 7, 14, 2}, // three earlier episodes: 0.671 s
		{1, 7, 14, 1}, // one earlier episode: 0.267 s
		{0, 0, 10, 0}, // timeout 10: every interval is 1/16 of timeout 14's
		{2, 7, 18, 2}, // timeout 18: 16 times
	} {
		t.Run(fmt.Sprintf("msg%d-earlier%d-timeout%d", tc.msg, tc.earlier, tc.timeout), func(t *testing.T) {
			st := pers.Adaptive[tc.stage]
			iv, status := tailTimeouts(t, "cx5", true, tc.msg, tc.earlier, tc.timeout)
			if status != StatusRetryExcErr || len(iv) != st.MaxRetries {
				t.Fatalf("%d retries then %v, want %d then RETRY_EXC_ERR", len(iv), status, st.MaxRetries)
			}
			T := roce.TransportTimeout(tc.timeout)
			for i, d := range iv {
				if want := st.Interval(i, T); d != want {
					t.Errorf("timeout %d = %v, want %v", i+1, d, want)
				}
			}
			if r := float64(iv[0]) / float64(T); tc.timeout == 14 && tc.stage == 0 && (r < 0.08 || r > 0.09) {
				t.Errorf("first timeout %v = %.3f·T_tr, want 5.6 ms ≈ 0.083·T_tr (Fig. 12(a))", iv[0], r)
			}
		})
	}
}

// TestFirstTimeoutSpread: the first non-adaptive timeout of an episode is
// drawn in [3, 4]·T_tr (0.2–0.27 s at timeout 14, §6.3), the same for the
// same seed and spread across episodes and seeds.
func TestFirstTimeoutSpread(t *testing.T) {
	T := roce.TransportTimeout(14)
	draw := func(seed uint64) []time.Duration {
		var out []time.Duration
		for i := range 20 {
			p := newPair(t, pairOpts{pers: "cx6", attr: ConnectAttr{Timeout: new(uint8(14)), RetryCnt: new(uint8(1))}})
			p.req.trng = rand.New(rand.NewPCG(seed, uint64(i))) // as New does from Config.Seed
			p.drop = func(f frameRec) bool { return f.Dir == sim.AtoB && f.Round == 1 }
			p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 1024, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
			p.run(time.Hour)
			var ts []int64
			for _, f := range p.frames {
				if f.Dir == sim.AtoB && f.PSN == 0 {
					ts = append(ts, f.T)
				}
			}
			if len(ts) != 2 {
				t.Fatalf("%d transmissions, want 2", len(ts))
			}
			out = append(out, time.Duration(ts[1]-ts[0]))
		}
		return out
	}
	a, b, c := draw(1), draw(1), draw(2)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different first timeouts:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 1 and 2 gave the same first timeouts %v", a)
	}
	lo, hi := a[0], a[0]
	for _, d := range append(a, c...) {
		if d < 3*T || d > 4*T {
			t.Errorf("first timeout %v outside [3, 4]·T_tr = [%v, %v]", d, 3*T, 4*T)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < T/2 {
		t.Errorf("first timeouts span [%v, %v], want a spread of at least T_tr/2 over 40 draws", lo, hi)
	}
}

// TestPersonalityCNPScope reproduces §6.4 / Tables 3-4: three requester IPs
// write 1 MB each to one responder, the 50th and 950th packet of each QP is
// CE-marked, min_time_between_cnps = 50 µs, reaction point disabled.
func TestPersonalityCNPScope(t *testing.T) {
	want := map[CNPScope][3]int{CNPPerQP: {2, 2, 2}, CNPPerDestIP: {2, 2, 2}, CNPPerIPPair: {2, 2, 2}, CNPPerPort: {2, 0, 0}}
	for _, name := range Personalities() {
		pers, _ := LoadPersonality(name)
		t.Run(name, func(t *testing.T) {
			got := cnpPerQP(t, pers, 0)
			if got != want[pers.CNPScope] {
				t.Errorf("CNPs per QP = %v, want %v (%v)", got, want[pers.CNPScope], pers.CNPScope)
			}
		})
	}
	for scope, w := range want {
		t.Run("override/"+scope.String(), func(t *testing.T) {
			pers, _ := LoadPersonality("spec")
			if got := cnpPerQP(t, pers, scope); got != w {
				t.Errorf("CNPs per QP = %v, want %v", got, w)
			}
		})
	}
}

func cnpPerQP(t *testing.T, pers Personality, scope CNPScope) [3]int {
	t.Helper()
	loop := sim.NewEventLoop()
	net := sim.NewNetwork(loop)
	var cnps [3]int
	var reqNIC *NIC
	var qps [3]*QP
	data := map[uint32]int{} // packets seen per responder QPN
	var rqpn [3]uint32
	var firstMark [3]int64 // when each QP's first CE mark was sent
	hook := func(dir sim.Direction, frame []byte) sim.Verdict {
		var pk roce.Packet
		if err := (&roce.Parser{}).Parse(frame, 0, &pk); err != nil {
			return sim.Pass
		}
		switch {
		case dir == sim.AtoB && pk.Opcode.IsWrite():
			q := pk.BTH.DestQP()
			data[q]++
			if data[q] == 50 || data[q] == 950 {
				frame[15] |= 3 // CE; the ICRC does not cover ECN
			}
			for i := range rqpn {
				if rqpn[i] == q && data[q] == 50 {
					firstMark[i] = loop.Now()
				}
			}
		case dir == sim.BtoA && pk.Opcode == roce.CNP:
			for i := range qps {
				if qps[i].QPN() == pk.BTH.DestQP() {
					cnps[i]++
				}
			}
		}
		return sim.Pass
	}
	a, b := net.NewLink(sim.LinkConfig{BandwidthBps: int64(pers.LineRateGbps * 1e9), Hook: hook})
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.12"), netip.MustParseAddr("10.0.0.13")}
	reqNIC, err := New(loop, a, Config{Name: "req", IPs: ips, Personality: pers, Seed: 1, DisableRP: true})
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := New(loop, b, Config{Name: "rsp", MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")},
		Personality: pers, Seed: 2, MinTimeBetweenCNPs: 50 * time.Microsecond, CNPScope: scope})
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	for i := range 3 {
		q, r := reqNIC.CreateQP(), rsp.CreateQP()
		qps[i], rqpn[i] = q, r.QPN()
		if err := q.Connect(ConnectAttr{RemoteQPN: r.QPN(), RemotePSN: r.PSN(), RemoteIP: rsp.IPs()[0], RemoteMAC: rsp.MAC(), LocalIP: ips[i]}); err != nil {
			t.Fatal(err)
		}
		if err := r.Connect(ConnectAttr{RemoteQPN: q.QPN(), RemotePSN: q.PSN(), RemoteIP: ips[i], RemoteMAC: reqNIC.MAC()}); err != nil {
			t.Fatal(err)
		}
		src, dst := reqNIC.RegMR(make([]byte, size)), rsp.RegMR(make([]byte, size))
		if err := q.PostSend(SendWR{Op: WRWrite, Local: src, Length: size, RemoteAddr: dst.Addr, RKey: dst.RKey}); err != nil {
			t.Fatal(err)
		}
	}
	loop.RunUntil(int64(time.Second))
	if got := rsp.Counters().NPECNMarkedRoCEPackets; got != 6 {
		t.Errorf("np_ecn_marked_roce_packets = %d, want 6", got)
	}
	total := cnps[0] + cnps[1] + cnps[2]
	if got := rsp.Counters().NPCNPSent; got != uint64(total) {
		t.Errorf("np_cnp_sent = %d, CNPs on the wire %d", got, total)
	}
	if got := reqNIC.Counters().RPCNPIgnored; got != uint64(total) {
		t.Errorf("rp_cnp_ignored = %d, want %d", got, total)
	}
	// Tables 3/4 name the QPs in the order of their first mark (QP1 first;
	// with QPStartJitter they do not start in creation order).
	order := []int{0, 1, 2}
	sort.Slice(order, func(a, b int) bool { return firstMark[order[a]] < firstMark[order[b]] })
	return [3]int{cnps[order[0]], cnps[order[1]], cnps[order[2]]}
}

// TestCheckNICType: e810 has no personality and is refused with
// ErrNoPersonality, unless the user gives a personality file; the paper's
// NICs are accepted.
func TestCheckNICType(t *testing.T) {
	for _, tc := range []struct {
		typ, pers string
		ok        bool
	}{
		{"e810", "spec", false},
		{"E810", "cx5", false},
		{"e810", "my-e810.yaml", true},
		{"e810", "q/e.YML", true},
		{"cx4", "cx4", true},
		{"cx6", "spec", true},
		{"", "spec", true},
	} {
		err := CheckNICType(tc.typ, tc.pers)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrNoPersonality) {
			t.Errorf("CheckNICType(%q, %q) = %v, want ok %v (or ErrNoPersonality)", tc.typ, tc.pers, err, tc.ok)
		}
	}
}
