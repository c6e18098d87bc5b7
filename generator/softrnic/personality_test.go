package softrnic

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// nakLatencies runs one WRITE of n packets with relative PSN drop lost once
// and returns the NACK generation latency (NAK departure − arrival of the
// out-of-order packet) and reaction latency (retransmission departure −
// NAK arrival), measured on the link like a switch would.
func nakLatencies(t *testing.T, pers string, n int, drop roce.PSN) (gen, react time.Duration) {
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
	return time.Duration(nak.T - p.arrival(*oos)), time.Duration(retx.T - p.arrival(*nak))
}

func TestPersonalityNakLatencies(t *testing.T) {
	for _, name := range Personalities() {
		pers, _ := LoadPersonality(name)
		t.Run(name, func(t *testing.T) {
			// Drop the 17th packet of a 20 KB message (Fig. 8/9, 20 KB): the
			// NAK comes back after the sender finished, so nothing else
			// delays the retransmission.
			gen, react := nakLatencies(t, name, 20, 16)
			if gen != time.Duration(pers.NakGenDelay) {
				t.Errorf("NACK generation = %v, want %v", gen, time.Duration(pers.NakGenDelay))
			}
			lo, hi := time.Duration(pers.NakReactionDelay), time.Duration(pers.NakReactionDelay+pers.NakReactionJitter)
			if react < lo || react > hi || pers.NakReactionJitter == 0 && react != lo {
				t.Errorf("NACK reaction = %v, want in [%v, %v]", react, lo, hi)
			}
			// Drop the 19th of 20: the out-of-order packet is the last one.
			gen, _ = nakLatencies(t, name, 20, 18)
			want := time.Duration(pers.NakGenDelay)
			if pers.NakGenDelayLastPacket > 0 {
				want = time.Duration(pers.NakGenDelayLastPacket)
			}
			if gen != want {
				t.Errorf("NACK generation, last packet out of order = %v, want %v", gen, want)
			}
		})
	}
}

// TestPipelineDelaysReaction reproduces Fig. 9(b): on CX5/CX6 a NAK for an
// early packet of a 100 KB message waits behind the committed pipeline
// (≈6 µs); for a late packet the pipeline is empty (3 µs).
func TestPipelineDelaysReaction(t *testing.T) {
	for _, name := range []string{"cx5", "cx6"} {
		_, early := nakLatencies(t, name, 100, 4)
		_, late := nakLatencies(t, name, 100, 90)
		if early < 5500*time.Nanosecond || early > 6500*time.Nanosecond {
			t.Errorf("%s: reaction for drop #5 of 100 KB = %v, want ≈6µs", name, early)
		}
		if late != 3*time.Microsecond {
			t.Errorf("%s: reaction for drop #91 of 100 KB = %v, want 3µs", name, late)
		}
	}
}

// tailTimeouts drops the tail packet of message msgIdx (of msgIdx+1
// one-packet messages, earlier ones delivered) forever and returns the
// intervals between its transmissions and the final status.
func tailTimeouts(t *testing.T, pers string, adaptive bool, msgIdx int) ([]time.Duration, Status) {
	t.Helper()
	p := newPair(t, pairOpts{pers: pers, reqCfg: Config{AdaptiveRetrans: adaptive},
		attr: ConnectAttr{Timeout: 14, TimeoutSet: true, RetryCnt: 7, RetryCntSet: true}})
	p.drop = func(f frameRec) bool { return f.Dir == sim.AtoB && int(f.PSN) == msgIdx }
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
			iv, st := tailTimeouts(t, name, false, 0)
			if st != StatusRetryExcErr || len(iv) != 7 {
				t.Fatalf("%d retries then %v, want 7 then RETRY_EXC_ERR", len(iv), st)
			}
			for i, d := range iv {
				f := pers.TimeoutNextFactor
				if i == 0 {
					f = pers.TimeoutFirstFactor
				}
				if want := time.Duration(float64(T) * f); d != want {
					t.Errorf("timeout %d = %v, want %v", i+1, d, want)
				}
			}
		})
		if len(pers.Adaptive) == 0 {
			continue
		}
		t.Run(name+"/adaptive", func(t *testing.T) {
			// Table 2: maximum retries of messages 1..5.
			for msg := range 5 {
				st := pers.Adaptive[min(msg, len(pers.Adaptive)-1)]
				iv, status := tailTimeouts(t, name, true, msg)
				if status != StatusRetryExcErr || len(iv) != st.MaxRetries {
					t.Errorf("message %d: %d retries then %v, want %d then RETRY_EXC_ERR", msg+1, len(iv), status, st.MaxRetries)
					continue
				}
				for i, d := range iv {
					if want := time.Duration(st.Intervals[min(i, len(st.Intervals)-1)]); d != want {
						t.Errorf("message %d timeout %d = %v, want %v", msg+1, i+1, d, want)
					}
				}
			}
		})
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
	_ = fmt.Sprint
	return cnps
}
