package softrnic

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// The ODP tests replay the ibdump traces of Fukuoka et al., Analyzing
// Performance Pitfalls of On-Demand Paging of InfiniBand, Figs. 2, 6 and
// 11 (min_rnr_timer 14 = 1.28 ms) on the virtual clock, with cx4's ODP
// numbers and its seeded spreads off, so that every timestamp is a
// formula of the personality and the link. The paper's times are the
// client's capture; the sim's are at the sender's end of the one link, so
// a frame from the responder reaches the requester FrameDelay later.

// odpPersonality is cx4 without seeded spreads: QP start, NACK reaction
// and first-timeout factor are exact.
func odpPersonality(t *testing.T) *Personality {
	t.Helper()
	p, err := ParsePersonality("cx4-exact.yaml", []byte("base: cx4\nname: cx4-exact\nqp-start-jitter: 0s\nnak-reaction-jitter: 0s\ntimeout-first-factor-max: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

// odpEv is one frame on the link: when it started transmission, its
// direction ("<" responder to requester, ">" the other way), opcode, PSN
// relative to the requester's IPSN, and AETH syndrome (0 without AETH).
type odpEv struct {
	T   int64
	Dir sim.Direction
	Op  roce.Opcode
	PSN roce.PSN
	Syn roce.Syndrome
}

func (e odpEv) String() string {
	s := fmt.Sprintf("%12d %s %v %d", e.T, map[sim.Direction]string{sim.AtoB: ">", sim.BtoA: "<"}[e.Dir], e.Op, e.PSN)
	if e.Syn != 0 || e.Op == roce.RCAcknowledge {
		s += " " + e.Syn.String()
	}
	return s
}

// odpComp is one completion: WR ID, opcode, status, time.
type odpComp struct {
	ID     uint64
	Op     CompletionOp
	Status Status
	T      int64
}

// odpTimes are the link and NIC times the expected traces are made of.
type odpTimes struct {
	dq, dr, da, dw, ds int64 // FrameDelay of a READ request, a 100-byte READ response, an ACK, a 100-byte WRITE ONLY, SEND ONLY
	gq, gr             int64 // NIC transmit spacing after a READ request, a READ response (40 Gb/s, preamble and IFG)
	nak, wait, dup, pf int64 // RNR NAK at the requester, RNR wait, duplicate READ answer, page fault
	timeout            int64 // first timeout: 3 × T_tr(14)
	nakGen, nakReact   int64 // cx4 NACK generation and reaction (at the far end of the link)
}

const odpSize = 100 // the paper's READ size (Fig. 4)

func newODPTimes(p *pair) odpTimes {
	v4 := netip.MustParseAddr("10.0.0.1")
	l := func(op roce.Opcode, payload int) int {
		f := roce.FrameSpec{SrcIP: v4, DstIP: v4, Opcode: op, Payload: make([]byte, payload)}
		return f.Len()
	}
	fd := func(n int) int64 { return int64(sim.SerializationDelay(p.link, n) + p.link.Delay) }
	gap := func(n int) int64 { return int64(float64(n+20)*8/40 + 0.5) }
	return odpTimes{
		dq: fd(l(roce.RCReadRequest, 0)), dr: fd(l(roce.RCReadResponseOnly, odpSize)), da: fd(l(roce.RCAcknowledge, 0)),
		dw: fd(l(roce.RCWriteOnly, odpSize)), ds: fd(l(roce.RCSendOnly, odpSize)),
		gq: gap(l(roce.RCReadRequest, 0)), gr: gap(l(roce.RCReadResponseOnly, odpSize)),
		nak: 140_000, wait: 3 * 1_280_000, dup: 80_000, pf: 500_000,
		timeout: 3 * int64(roce.TransportTimeout(14)),
		// A READ request is a single-packet message: an out-of-order one
		// gets cx4's slow NACK (nak-generation-delay-last-packet, Lumina
		// Fig. 8(a)); Fukuoka et al.'s ConnectX-4 VPI NAKed 1 µs after it
		// (Fig. 11).
		nakGen: 13_000, nakReact: 150_000,
	}
}

// odpPost posts WR op (ID id, 100 bytes at offset 100·(id−1) on both
// sides) at a virtual time.
type odpPost struct {
	at time.Duration
	op WROpcode
}

func TestODPTraces(t *testing.T) {
	var (
		req  = func(tm int64, psn roce.PSN) odpEv { return odpEv{tm, sim.AtoB, roce.RCReadRequest, psn, 0} }
		resp = func(tm int64, psn roce.PSN) odpEv {
			return odpEv{tm, sim.BtoA, roce.RCReadResponseOnly, psn, roce.ACKSyndrome(roce.CreditCountInvalid)}
		}
		ack = func(tm int64, psn roce.PSN) odpEv {
			return odpEv{tm, sim.BtoA, roce.RCAcknowledge, psn, roce.ACKSyndrome(roce.CreditCountInvalid)}
		}
		rnr = func(tm int64, psn roce.PSN) odpEv {
			return odpEv{tm, sim.BtoA, roce.RCAcknowledge, psn, roce.RNRSyndrome(14)}
		}
		seqNAK = func(tm int64, psn roce.PSN) odpEv {
			return odpEv{tm, sim.BtoA, roce.RCAcknowledge, psn, roce.NAKSyndrome(roce.NAKPSNSequenceError)}
		}
		read = func(id uint64, tm int64) odpComp { return odpComp{id, CompRead, StatusSuccess, tm} }
		odp  = &ODPConfig{}
	)
	odpCounters := func(faults, prefetch uint64) map[string]uint64 {
		return map[string]uint64{"page_faults": faults, "page_faults_handled": faults, "page_invalidations": 0, "page_prefetch": prefetch}
	}
	merge := func(ms ...map[string]uint64) map[string]uint64 {
		out := map[string]uint64{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	odpKeys := []string{"page_faults", "page_faults_handled", "page_invalidations", "page_prefetch"}
	tests := []struct {
		name           string
		reqODP, rspODP *ODPConfig
		notInTest      bool // ODPInTest off (it is on on both NICs otherwise)
		attr           ConnectAttr
		posts          []odpPost
		recv           bool // the responder posts a receive buffer
		drop           func(frameRec) bool
		want           func(k odpTimes) []odpEv
		comps          func(k odpTimes) []odpComp
		req, rsp       map[string]uint64 // counters
		reqAbsent      []string          // counter names the requester's map must not have
		rspAbsent      []string
	}{
		{
			// Fig. 2 left: Req 0, RNR NAK 141 µs, Response 538 µs (dropped),
			// Req 4.565 ms, Response 4.639 ms.
			name: "remote fault, one READ (Fig. 2 left)", rspODP: odp,
			posts: []odpPost{{0, WRRead}},
			want: func(k odpTimes) []odpEv {
				return []odpEv{req(0, 0), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0), req(k.nak+k.wait, 0), resp(k.nak+k.wait+k.dup-k.dr, 0)}
			},
			comps:     func(k odpTimes) []odpComp { return []odpComp{read(1, k.nak+k.wait+k.dup)} },
			req:       map[string]uint64{"rnr_nak_retry_err": 1, "local_ack_timeout_err": 0, "implied_nak_seq_err": 0},
			rsp:       merge(odpCounters(1, 0), map[string]uint64{"duplicate_request": 1, "rx_read_requests": 1, "out_of_buffer": 0}),
			reqAbsent: odpKeys,
		},
		{
			// Fig. 2 middle: Req 0, Response 5 µs (dropped: the requester's
			// buffer faults), Req 527 µs, Response 620 µs.
			name: "local fault, one READ (Fig. 2 middle)", reqODP: odp,
			posts: []odpPost{{0, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.dq + k.dr + k.pf
				return []odpEv{req(0, 0), resp(k.dq, 0), req(back, 0), resp(back+k.dup-k.dr, 0)}
			},
			comps:     func(k odpTimes) []odpComp { return []odpComp{read(1, k.dq+k.dr+k.pf+k.dup)} },
			req:       merge(odpCounters(1, 0), map[string]uint64{"rnr_nak_retry_err": 0, "local_ack_timeout_err": 0, "implied_nak_seq_err": 0}),
			rsp:       map[string]uint64{"duplicate_request": 1},
			rspAbsent: odpKeys,
		},
		{
			// Fig. 2 right: Req 0, RNR NAK 215 µs, Response 533 µs, Req 4.047
			// ms, Response 4.163 ms (dropped: local fault), Req 4.747 ms,
			// Response 4.812 ms.
			name: "remote-local fault, one READ (Fig. 2 right)", reqODP: odp, rspODP: odp,
			posts: []odpPost{{0, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait + k.dup + k.pf
				return []odpEv{req(0, 0), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0), req(k.nak+k.wait, 0), resp(k.nak+k.wait+k.dup-k.dr, 0),
					req(back, 0), resp(back+k.dup-k.dr, 0)}
			},
			comps: func(k odpTimes) []odpComp { return []odpComp{read(1, k.nak+k.wait+2*k.dup+k.pf)} },
			req:   merge(odpCounters(1, 0), map[string]uint64{"rnr_nak_retry_err": 1, "local_ack_timeout_err": 0}),
			rsp:   merge(odpCounters(1, 0), map[string]uint64{"duplicate_request": 2}),
		},
		{
			// Fig. 6 left (interval 3000 µs): the second READ is held during
			// the RNR wait, leaves right behind the retry, arrives while the
			// duplicate is served and is dropped: no response, no NAK; the
			// timeout re-sends it and it is answered at once.
			name: "remote fault, two READs, the second posted during the RNR wait (Fig. 6 left)", rspODP: odp,
			posts: []odpPost{{0, WRRead}, {3000 * time.Microsecond, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait
				to := back + k.dup + k.timeout
				return []odpEv{req(0, 0), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0), req(back, 0), req(back+k.gq, 1), resp(back+k.dup-k.dr, 0),
					req(to, 1), resp(to+k.dq, 1)}
			},
			comps: func(k odpTimes) []odpComp {
				return []odpComp{read(1, k.nak+k.wait+k.dup), read(2, k.nak+k.wait+k.dup+k.timeout+k.dq+k.dr)}
			},
			req: map[string]uint64{"rnr_nak_retry_err": 1, "local_ack_timeout_err": 1, "packet_seq_err": 0},
			rsp: merge(odpCounters(1, 0), map[string]uint64{"duplicate_request": 1, "out_of_sequence": 0, "rx_read_requests": 2}),
		},
		{
			// Fig. 6 middle (interval 500 µs; here 300 µs, inside the fault):
			// the second READ is held until the requester's fault resolves.
			name: "local fault, two READs, the second posted during the fault (Fig. 6 middle)", reqODP: odp,
			posts: []odpPost{{0, WRRead}, {300 * time.Microsecond, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.dq + k.dr + k.pf
				to := back + k.dup + k.timeout
				return []odpEv{req(0, 0), resp(k.dq, 0), req(back, 0), req(back+k.gq, 1), resp(back+k.dup-k.dr, 0),
					req(to, 1), resp(to+k.dq, 1)}
			},
			comps: func(k odpTimes) []odpComp {
				back := k.dq + k.dr + k.pf
				return []odpComp{read(1, back+k.dup), read(2, back+k.dup+k.timeout+k.dq+k.dr)}
			},
			req: merge(odpCounters(1, 0), map[string]uint64{"local_ack_timeout_err": 1, "rnr_nak_retry_err": 0}),
			rsp: map[string]uint64{"duplicate_request": 1},
		},
		{
			// Fig. 11 (interval 3000 µs): the third READ finds the expected
			// PSN still at the second's: a sequence NAK 1 µs later, the
			// requester re-sends the second and third, both answered, no
			// timeout.
			name: "remote fault, three READs: the third meets a sequence NAK (Fig. 11)", rspODP: odp,
			posts: []odpPost{{0, WRRead}, {3000 * time.Microsecond, WRRead}, {6000 * time.Microsecond, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait
				third := int64(6000_000)
				nakAt := third + k.dq + max(0, k.nakGen-k.dq-k.da)
				retry := nakAt + k.da + max(0, k.nakReact-k.da-k.dq)
				r1 := retry + k.dq
				r2 := max(retry+k.gq+k.dq, r1+k.gr)
				return []odpEv{req(0, 0), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0), req(back, 0), req(back+k.gq, 1), resp(back+k.dup-k.dr, 0),
					req(third, 2), seqNAK(nakAt, 1), req(retry, 1), req(retry+k.gq, 2), resp(r1, 1), resp(r2, 2)}
			},
			comps: func(k odpTimes) []odpComp {
				third := int64(6000_000)
				nakAt := third + k.dq + max(0, k.nakGen-k.dq-k.da)
				retry := nakAt + k.da + max(0, k.nakReact-k.da-k.dq)
				r1 := retry + k.dq
				r2 := max(retry+k.gq+k.dq, r1+k.gr)
				return []odpComp{read(1, k.nak+k.wait+k.dup), read(2, r1+k.dr), read(3, r2+k.dr)}
			},
			req: map[string]uint64{"rnr_nak_retry_err": 1, "local_ack_timeout_err": 0, "packet_seq_err": 1},
			rsp: merge(odpCounters(1, 0), map[string]uint64{"duplicate_request": 1, "out_of_sequence": 1}),
		},
		{
			name: "prefetch: nothing faults", reqODP: &ODPConfig{Prefetch: true}, rspODP: &ODPConfig{Prefetch: true},
			posts: []odpPost{{0, WRRead}},
			want:  func(k odpTimes) []odpEv { return []odpEv{req(0, 0), resp(k.dq, 0)} },
			comps: func(k odpTimes) []odpComp { return []odpComp{read(1, k.dq+k.dr)} },
			req:   odpCounters(0, 256), // the 1 MiB MR: 256 pages
			rsp:   merge(odpCounters(0, 256), map[string]uint64{"duplicate_request": 0}),
		},
		{
			// Requests that arrive during the responder's fault are dropped
			// silently; the second READ is then lost in the duplicate's
			// window, as in Fig. 6.
			name: "remote fault, two READs back to back: the second dropped during the fault, then in the duplicate's window", rspODP: odp,
			posts: []odpPost{{0, WRRead}, {0, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait
				to := back + k.dup + k.timeout
				return []odpEv{req(0, 0), req(k.gq, 1), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0), req(back, 0), req(back+k.gq, 1),
					resp(back+k.dup-k.dr, 0), req(to, 1), resp(to+k.dq, 1)}
			},
			comps: func(k odpTimes) []odpComp {
				return []odpComp{read(1, k.nak+k.wait+k.dup), read(2, k.nak+k.wait+k.dup+k.timeout+k.dq+k.dr)}
			},
			req: map[string]uint64{"rnr_nak_retry_err": 1, "local_ack_timeout_err": 1},
			rsp: merge(odpCounters(1, 0), map[string]uint64{"duplicate_request": 1, "out_of_sequence": 0}),
		},
		{
			// Without ODPInTest the duplicate is answered at once and the
			// second READ behind it is served: no timeout.
			name: "as above without ODPInTest: no slow duplicate, no loss", rspODP: odp, notInTest: true,
			posts: []odpPost{{0, WRRead}, {0, WRRead}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait
				r0 := back + k.dq
				return []odpEv{req(0, 0), req(k.gq, 1), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0), req(back, 0), req(back+k.gq, 1),
					resp(r0, 0), resp(max(back+k.gq+k.dq, r0+k.gr), 1)}
			},
			comps: func(k odpTimes) []odpComp {
				back := k.nak + k.wait
				r0 := back + k.dq
				return []odpComp{read(1, r0+k.dr), read(2, max(back+k.gq+k.dq, r0+k.gr)+k.dr)}
			},
			req: map[string]uint64{"rnr_nak_retry_err": 1, "local_ack_timeout_err": 0},
			rsp: merge(odpCounters(1, 0), map[string]uint64{"duplicate_request": 1}),
		},
		{
			// The WRITE is discarded (paper silent: our choice); its retry
			// after the RNR wait finds the pages mapped.
			name: "remote fault, one WRITE", rspODP: odp,
			posts: []odpPost{{0, WRWrite}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait
				return []odpEv{{0, sim.AtoB, roce.RCWriteOnly, 0, 0}, rnr(k.nak-k.da, 0), {back, sim.AtoB, roce.RCWriteOnly, 0, 0}, ack(back+k.dw, 0)}
			},
			comps: func(k odpTimes) []odpComp {
				return []odpComp{{1, CompWrite, StatusSuccess, k.nak + k.wait + k.dw + k.da}}
			},
			req: map[string]uint64{"rnr_nak_retry_err": 1},
			rsp: merge(odpCounters(1, 0), map[string]uint64{"out_of_buffer": 0, "duplicate_request": 0}),
		},
		{
			name: "remote fault, one SEND: the receive WQE is kept for the retry", rspODP: odp, recv: true,
			posts: []odpPost{{0, WRSend}},
			want: func(k odpTimes) []odpEv {
				back := k.nak + k.wait
				return []odpEv{{0, sim.AtoB, roce.RCSendOnly, 0, 0}, rnr(k.nak-k.da, 0), {back, sim.AtoB, roce.RCSendOnly, 0, 0}, ack(back+k.ds, 0)}
			},
			comps: func(k odpTimes) []odpComp {
				back := k.nak + k.wait
				return []odpComp{{100, CompRecv, StatusSuccess, back + k.ds}, {1, CompSend, StatusSuccess, back + k.ds + k.da}}
			},
			req: map[string]uint64{"rnr_nak_retry_err": 1},
			rsp: merge(odpCounters(1, 0), map[string]uint64{"out_of_buffer": 0, "rx_send_requests": 1}),
		},
		{
			// The requester's source faults: the WRITE leaves when it
			// resolves (paper silent: our choice).
			name: "local fault on a WRITE's source: the WRITE waits for it", reqODP: odp,
			posts: []odpPost{{0, WRWrite}},
			want: func(k odpTimes) []odpEv {
				return []odpEv{{k.pf, sim.AtoB, roce.RCWriteOnly, 0, 0}, ack(k.pf+k.dw, 0)}
			},
			comps: func(k odpTimes) []odpComp { return []odpComp{{1, CompWrite, StatusSuccess, k.pf + k.dw + k.da}} },
			req:   odpCounters(1, 0),
		},
		{
			name: "rnr_retry 0: the first RNR NAK fails the READ", rspODP: odp,
			attr:  ConnectAttr{RNRRetry: new(uint8(0))},
			posts: []odpPost{{0, WRRead}},
			want: func(k odpTimes) []odpEv {
				return []odpEv{req(0, 0), rnr(k.nak-k.da, 0), resp(k.dq+k.pf, 0)}
			},
			comps: func(k odpTimes) []odpComp { return []odpComp{{1, CompSend, StatusRNRRetryExcErr, k.nak}} },
			req:   map[string]uint64{"req_rnr_retries_exceeded": 1, "rnr_nak_retry_err": 0},
			rsp:   odpCounters(1, 0),
		},
		{
			// ODPInTest alone (a NIC without ODP in a test that uses it):
			// only the duplicate READ is slower.
			name:  "ODPInTest without ODP: a lost response's duplicate READ is answered after 80 µs",
			drop:  func(f frameRec) bool { return f.Op.IsReadResponse() && f.Round == 1 },
			posts: []odpPost{{0, WRRead}},
			want: func(k odpTimes) []odpEv {
				return []odpEv{req(0, 0), resp(k.dq, 0), req(k.timeout, 0), resp(k.timeout+k.dup-k.dr, 0)}
			},
			comps:     func(k odpTimes) []odpComp { return []odpComp{read(1, k.timeout+k.dup)} },
			req:       map[string]uint64{"local_ack_timeout_err": 1},
			rsp:       map[string]uint64{"duplicate_request": 1},
			reqAbsent: odpKeys, rspAbsent: odpKeys,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			attr := tc.attr
			attr.Timeout, attr.MinRNRTimer = new(uint8(14)), new(uint8(14))
			if attr.RNRRetry == nil {
				attr.RNRRetry = new(uint8(7))
			}
			p := newPair(t, pairOpts{persVal: odpPersonality(t), attr: attr,
				reqCfg: Config{ODP: tc.reqODP, ODPInTest: !tc.notInTest},
				rspCfg: Config{ODP: tc.rspODP, ODPInTest: !tc.notInTest}})
			p.drop = tc.drop
			k := newODPTimes(p)
			for i := range p.rspMR.Buf {
				p.rspMR.Buf[i] = byte(i*7 + 1)
			}
			for i := range p.reqMR.Buf {
				p.reqMR.Buf[i] = byte(i*5 + 3)
			}
			if tc.recv {
				if err := p.rs.PostRecv(RecvWR{ID: 100, MR: p.rspMR, Offset: 4096, Length: odpSize}); err != nil {
					t.Fatal(err)
				}
			}
			for i, po := range tc.posts {
				wr := SendWR{ID: uint64(i + 1), Op: po.op, Local: p.reqMR, Offset: i * odpSize, Length: odpSize,
					RemoteAddr: p.rspMR.Addr + uint64(i*odpSize), RKey: p.rspMR.RKey}
				p.loop.AfterFunc(po.at, func() {
					if err := p.rq.PostSend(wr); err != nil {
						t.Errorf("PostSend(%d) = %v", wr.ID, err)
					}
				})
			}
			p.run(2 * time.Second)

			var got []odpEv
			for _, f := range p.frames {
				got = append(got, odpEv{f.T, f.Dir, f.Op, f.PSN, f.Syn})
			}
			want := tc.want(k)
			if !slices.Equal(got, want) {
				t.Errorf("frames:\n got %s\nwant %s", evLines(got), evLines(want))
			}
			var comps []odpComp
			for _, c := range p.comps {
				comps = append(comps, odpComp{c.WRID, c.Op, c.Status, c.TimeNs})
			}
			if wc := tc.comps(k); !slices.Equal(comps, wc) {
				t.Errorf("completions = %+v, want %+v", comps, wc)
			}
			// The data moved: READ destinations hold the responder's bytes,
			// WRITE and SEND destinations the requester's.
			for i, po := range tc.posts {
				if comps == nil || comps[len(comps)-1].Status != StatusSuccess {
					break
				}
				off := i * odpSize
				switch po.op {
				case WRRead:
					if !slices.Equal(p.reqMR.Buf[off:off+odpSize], p.rspMR.Buf[off:off+odpSize]) {
						t.Errorf("READ %d: destination does not hold the source", i+1)
					}
				case WRWrite:
					if !slices.Equal(p.rspMR.Buf[off:off+odpSize], p.reqMR.Buf[off:off+odpSize]) {
						t.Errorf("WRITE %d: destination does not hold the source", i+1)
					}
				case WRSend:
					if !slices.Equal(p.rspMR.Buf[4096:4096+odpSize], p.reqMR.Buf[off:off+odpSize]) {
						t.Errorf("SEND %d: receive buffer does not hold the source", i+1)
					}
				}
			}
			for _, side := range []struct {
				name   string
				n      *NIC
				want   map[string]uint64
				absent []string
			}{{"requester", p.req, tc.req, tc.reqAbsent}, {"responder", p.rsp, tc.rsp, tc.rspAbsent}} {
				m := side.n.Counters().Map()
				for name, v := range side.want {
					if got, ok := m[name]; !ok || got != v {
						t.Errorf("%s counter %s = %d (present %v), want %d", side.name, name, got, ok, v)
					}
				}
				for _, name := range side.absent {
					if _, ok := m[name]; ok {
						t.Errorf("%s counters have %s, want it absent (no ODP)", side.name, name)
					}
				}
			}
		})
	}
}

func evLines(evs []odpEv) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("\n\t" + e.String())
	}
	return b.String()
}

// The ODP keys decode from a personality file, and travel through Validate.
func TestODPPersonalityKeys(t *testing.T) {
	p, err := ParsePersonality("odp.yaml", []byte("base: cx5\nodp-page-fault: 250us\nodp-rnr-nak-delay: 100us\nodp-dup-read-delay: 50us\nrnr-wait-factor: 2.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := []any{time.Duration(p.ODPPageFault), time.Duration(p.ODPRNRNakDelay), time.Duration(p.ODPDupReadDelay), p.RNRWaitFactor}
	want := []any{250 * time.Microsecond, 100 * time.Microsecond, 50 * time.Microsecond, 2.5}
	if !slices.Equal(got, want) {
		t.Errorf("ParsePersonality(odp.yaml) ODP fields = %v, want %v", got, want)
	}
}

func TestRNRWait(t *testing.T) {
	for _, tc := range []struct {
		factor float64
		code   uint8
		want   time.Duration
	}{
		{0, 14, 1280 * time.Microsecond}, // zero: the encoded time
		{1, 14, 1280 * time.Microsecond},
		{3, 14, 3840 * time.Microsecond}, // cx4: Fig. 2's ≈4.4 ms after the NAK
		{2.5, 1, 25 * time.Microsecond},
		{3, 0, 3 * 655360 * time.Microsecond},
	} {
		t.Run(fmt.Sprintf("%v×%d", tc.factor, tc.code), func(t *testing.T) {
			qp := &QP{nic: &NIC{pers: Personality{RNRWaitFactor: tc.factor}}}
			if got := qp.rnrWait(tc.code); got != tc.want {
				t.Errorf("rnrWait(%d) with factor %v = %v, want %v", tc.code, tc.factor, got, tc.want)
			}
		})
	}
}

// A READ of three 1024-byte response packets: a requester fault drops the
// first response and the two behind it (no implied NAK), and the READ is
// re-sent whole when the fault resolves; a responder fault sends the
// three responses when it resolves (dropped by the waiting requester).
func TestODPMultiPacketREAD(t *testing.T) {
	const size = 3 * 1024
	for _, tc := range []struct {
		name           string
		reqODP, rspODP *ODPConfig
		want           func(k mpTimes) []odpEv
		done           func(k mpTimes) int64
	}{
		{
			name: "local fault", reqODP: &ODPConfig{},
			want: func(k mpTimes) []odpEv {
				back := k.dq + k.df + k.pf
				r := back + k.dup - k.df
				return append(append([]odpEv{k.req(0)}, k.resps(k.dq)...), append([]odpEv{k.req(back)}, k.resps(r)...)...)
			},
			done: func(k mpTimes) int64 { return k.dq + k.df + k.pf + k.dup - k.df + k.gf + k.gm + k.dl },
		},
		{
			name: "remote fault", rspODP: &ODPConfig{},
			want: func(k mpTimes) []odpEv {
				back := k.nak + k.wait
				evs := []odpEv{k.req(0), {k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, roce.RNRSyndrome(14)}}
				evs = append(evs, k.resps(k.dq+k.pf)...)
				return append(append(evs, k.req(back)), k.resps(back+k.dup-k.df)...)
			},
			done: func(k mpTimes) int64 { return k.nak + k.wait + k.dup - k.df + k.gf + k.gm + k.dl },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := ConnectAttr{Timeout: new(uint8(14)), MinRNRTimer: new(uint8(14))}
			p := newPair(t, pairOpts{persVal: odpPersonality(t), attr: attr,
				reqCfg: Config{ODP: tc.reqODP, ODPInTest: true}, rspCfg: Config{ODP: tc.rspODP, ODPInTest: true}})
			k := newMPTimes(p, newODPTimes(p))
			if err := p.rq.PostSend(SendWR{ID: 1, Op: WRRead, Local: p.reqMR, Length: size, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
				t.Fatal(err)
			}
			p.run(time.Second)
			var got []odpEv
			for _, f := range p.frames {
				got = append(got, odpEv{f.T, f.Dir, f.Op, f.PSN, f.Syn})
			}
			if want := tc.want(k); !slices.Equal(got, want) {
				t.Errorf("frames:\n got %s\nwant %s", evLines(got), evLines(want))
			}
			want := []odpComp{{1, CompRead, StatusSuccess, tc.done(k)}}
			var comps []odpComp
			for _, c := range p.comps {
				comps = append(comps, odpComp{c.WRID, c.Op, c.Status, c.TimeNs})
			}
			if !slices.Equal(comps, want) {
				t.Errorf("completions = %+v, want %+v", comps, want)
			}
			if m := p.req.Counters().Map(); m["implied_nak_seq_err"] != 0 || m["local_ack_timeout_err"] != 0 {
				t.Errorf("implied_nak_seq_err, local_ack_timeout_err = %d, %d; want 0, 0", m["implied_nak_seq_err"], m["local_ack_timeout_err"])
			}
		})
	}
}

// mpTimes adds the three 1024-byte READ responses (FIRST, MIDDLE, LAST) to
// odpTimes.
type mpTimes struct {
	odpTimes
	df, dl int64 // FrameDelay of FIRST and LAST
	gf, gm int64 // NIC spacing after FIRST and MIDDLE
	ackSyn roce.Syndrome
}

func newMPTimes(p *pair, k odpTimes) mpTimes {
	v4 := netip.MustParseAddr("10.0.0.1")
	l := func(op roce.Opcode) int {
		f := roce.FrameSpec{SrcIP: v4, DstIP: v4, Opcode: op, Payload: make([]byte, 1024)}
		return f.Len()
	}
	fd := func(n int) int64 { return int64(sim.SerializationDelay(p.link, n) + p.link.Delay) }
	gap := func(n int) int64 { return int64(float64(n+20)*8/40 + 0.5) }
	return mpTimes{odpTimes: k, df: fd(l(roce.RCReadResponseFirst)), dl: fd(l(roce.RCReadResponseLast)),
		gf: gap(l(roce.RCReadResponseFirst)), gm: gap(l(roce.RCReadResponseMiddle)), ackSyn: roce.ACKSyndrome(roce.CreditCountInvalid)}
}

func (k mpTimes) req(tm int64) odpEv { return odpEv{tm, sim.AtoB, roce.RCReadRequest, 0, 0} }

// resps are the three responses, the first leaving at tm.
func (k mpTimes) resps(tm int64) []odpEv {
	return []odpEv{
		{tm, sim.BtoA, roce.RCReadResponseFirst, 0, k.ackSyn},
		{tm + k.gf, sim.BtoA, roce.RCReadResponseMiddle, 1, 0},
		{tm + k.gf + k.gm, sim.BtoA, roce.RCReadResponseLast, 2, k.ackSyn},
	}
}

// With PFC on (its own transmit path), the duplicate READ's window still
// ends when its response has left: a READ posted after it is answered.
func TestODPDupWindowEndsWithPFC(t *testing.T) {
	attr := ConnectAttr{Timeout: new(uint8(14)), MinRNRTimer: new(uint8(14))}
	pfc := &PFCConfig{Priorities: 0x08}
	p := newPair(t, pairOpts{persVal: odpPersonality(t), attr: attr,
		reqCfg: Config{ODPInTest: true, PFC: pfc}, rspCfg: Config{ODP: &ODPConfig{}, ODPInTest: true, PFC: pfc}})
	for i, at := range []time.Duration{0, 3000 * time.Microsecond, 10 * time.Millisecond} {
		wr := SendWR{ID: uint64(i + 1), Op: WRRead, Local: p.reqMR, Offset: i * odpSize, Length: odpSize, RemoteAddr: p.rspMR.Addr + uint64(i*odpSize), RKey: p.rspMR.RKey}
		p.loop.AfterFunc(at, func() {
			if err := p.rq.PostSend(wr); err != nil {
				t.Error(err)
			}
		})
	}
	p.run(time.Second)
	// READ 2 is lost in the window (timeout); READ 3, posted at 10 ms after
	// the window, meets a sequence NAK (the expected PSN is READ 2's) and
	// READs 2 and 3 are re-sent at once: no timeout.
	if got, want := p.compact(), "Q0 R0 r0 Q0 Q1 r0 Q2 N1 Q1 Q2 r1 r2"; got != want {
		t.Errorf("frames = %s, want %s", got, want)
	}
	if len(p.comps) != 3 || p.rs.dupServing != 0 {
		t.Errorf("completions %+v, dupServing %d; want 3 and 0", p.comps, p.rs.dupServing)
	}
}

// An RNR wait shorter than the page fault (min_rnr_timer 1: 3 × 10 µs on
// cx4): each retry that arrives while the fault is pending gets another
// RNR NAK (our choice, odp.go); no transport timeout.
func TestODPShortRNRWait(t *testing.T) {
	rnr1 := roce.RNRSyndrome(1)
	ackSyn := roce.ACKSyndrome(roce.CreditCountInvalid)
	for _, tc := range []struct {
		name  string
		op    WROpcode
		want  func(k odpTimes) []odpEv
		done  func(k odpTimes) int64
		tmout uint64
	}{
		{
			// The retries at r and 2r meet the pending fault: RNR NAKs again.
			// The response of the READ executed when the fault resolved
			// arrives during the third wait and is discarded; the third retry
			// is a duplicate READ (the slow path).
			name: "READ: RNR NAKs until the fault resolves, then the duplicate READ", op: WRRead,
			want: func(k odpTimes) []odpEv {
				r := k.nak + 30_000
				return []odpEv{{0, sim.AtoB, roce.RCReadRequest, 0, 0}, {k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
					{r, sim.AtoB, roce.RCReadRequest, 0, 0}, {r + k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
					{2 * r, sim.AtoB, roce.RCReadRequest, 0, 0}, {2*r + k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
					{k.dq + k.pf, sim.BtoA, roce.RCReadResponseOnly, 0, ackSyn},
					{3 * r, sim.AtoB, roce.RCReadRequest, 0, 0}, {3*r + k.dup - k.dr, sim.BtoA, roce.RCReadResponseOnly, 0, ackSyn}}
			},
			done: func(k odpTimes) int64 { return 3*(k.nak+30_000) + k.dup },
		},
		{
			name: "WRITE: RNR NAKs until the fault resolves, no timeout", op: WRWrite,
			want: func(k odpTimes) []odpEv {
				r := k.nak + 30_000
				return []odpEv{{0, sim.AtoB, roce.RCWriteOnly, 0, 0}, {k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
					{r, sim.AtoB, roce.RCWriteOnly, 0, 0}, {r + k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
					{2 * r, sim.AtoB, roce.RCWriteOnly, 0, 0}, {2*r + k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
					{3 * r, sim.AtoB, roce.RCWriteOnly, 0, 0}, {3*r + k.dw, sim.BtoA, roce.RCAcknowledge, 0, ackSyn}}
			},
			done: func(k odpTimes) int64 { return 3*(k.nak+30_000) + k.dw + k.da },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := ConnectAttr{Timeout: new(uint8(14)), MinRNRTimer: new(uint8(1))}
			p := newPair(t, pairOpts{persVal: odpPersonality(t), attr: attr,
				reqCfg: Config{ODPInTest: true}, rspCfg: Config{ODP: &ODPConfig{}, ODPInTest: true}})
			k := newODPTimes(p)
			if err := p.rq.PostSend(SendWR{ID: 1, Op: tc.op, Local: p.reqMR, Length: odpSize, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
				t.Fatal(err)
			}
			p.run(time.Second)
			var got []odpEv
			for _, f := range p.frames {
				got = append(got, odpEv{f.T, f.Dir, f.Op, f.PSN, f.Syn})
			}
			if want := tc.want(k); !slices.Equal(got, want) {
				t.Errorf("frames:\n got %s\nwant %s", evLines(got), evLines(want))
			}
			if len(p.comps) != 1 || p.comps[0].Status != StatusSuccess || p.comps[0].TimeNs != tc.done(k) {
				t.Errorf("completions = %+v, want one success at %d", p.comps, tc.done(k))
			}
			if got := p.req.Counters().Map()["local_ack_timeout_err"]; got != tc.tmout {
				t.Errorf("local_ack_timeout_err = %d, want %d", got, tc.tmout)
			}
		})
	}
}

// A request re-sent while its fault is pending gets its RNR NAK only if the
// fault is still pending when the NAK would leave: min_rnr_timer 1 (30 µs
// waits on cx4) against a 400 µs fault, the third copy of the READ arrives
// at 340 µs, its NAK would leave at 480 µs, after the fault resolved (400
// µs) and the READ was answered. No NAK then; the requester, no longer
// waiting, completes with that response. (A stale NAK used to go out and
// start an RNR wait for a completed READ.)
func TestODPNoStaleRNRNak(t *testing.T) {
	rnr1 := roce.RNRSyndrome(1)
	ackSyn := roce.ACKSyndrome(roce.CreditCountInvalid)
	attr := ConnectAttr{Timeout: new(uint8(14)), MinRNRTimer: new(uint8(1))}
	p := newPair(t, pairOpts{persVal: odpPersonality(t), attr: attr,
		reqCfg: Config{ODPInTest: true}, rspCfg: Config{ODP: &ODPConfig{PageFault: 400 * time.Microsecond}, ODPInTest: true}})
	k := newODPTimes(p)
	if err := p.rq.PostSend(SendWR{ID: 1, Op: WRRead, Local: p.reqMR, Length: odpSize, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
		t.Fatal(err)
	}
	p.run(time.Second)
	var got []odpEv
	for _, f := range p.frames {
		got = append(got, odpEv{f.T, f.Dir, f.Op, f.PSN, f.Syn})
	}
	r := k.nak + 30_000
	want := []odpEv{{0, sim.AtoB, roce.RCReadRequest, 0, 0}, {k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
		{r, sim.AtoB, roce.RCReadRequest, 0, 0}, {r + k.nak - k.da, sim.BtoA, roce.RCAcknowledge, 0, rnr1},
		{2 * r, sim.AtoB, roce.RCReadRequest, 0, 0}, {k.dq + 400_000, sim.BtoA, roce.RCReadResponseOnly, 0, ackSyn}}
	if !slices.Equal(got, want) {
		t.Errorf("frames:\n got %s\nwant %s", evLines(got), evLines(want))
	}
	if len(p.comps) != 1 || p.comps[0].Status != StatusSuccess || p.comps[0].TimeNs != k.dq+400_000+k.dr {
		t.Errorf("completions = %+v, want one success at %d", p.comps, k.dq+400_000+k.dr)
	}
}

// The transport timer spends no retry while a local page fault holds the
// requests: timeout 1 (T_tr 8 µs, far below cx4's 500 µs fault) on a READ
// whose response faults at the requester. The timer waits for the
// re-sent READ; local_ack_timeout_err counts only what expires after it
// (used to count 7 expirations during the fault and fail the QP with
// RETRY_EXC_ERR without a single retransmission).
func TestODPTimerHeldDuringLocalFault(t *testing.T) {
	attr := ConnectAttr{Timeout: new(uint8(1)), RetryCnt: new(uint8(7))}
	p := newPair(t, pairOpts{persVal: odpPersonality(t), attr: attr,
		reqCfg: Config{ODP: &ODPConfig{}, ODPInTest: true}, rspCfg: Config{ODPInTest: true}})
	if err := p.rq.PostSend(SendWR{ID: 1, Op: WRRead, Local: p.reqMR, Length: odpSize, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
		t.Fatal(err)
	}
	p.run(time.Second)
	if len(p.comps) != 1 || p.comps[0].Status != StatusSuccess {
		t.Fatalf("completions = %+v, want one success", p.comps)
	}
	reqs := 0
	for _, f := range p.frames {
		if f.Op == roce.RCReadRequest {
			reqs++
		}
	}
	// The first request, its re-send when the fault resolves (t ≈ 500 µs),
	// and the timer's re-sends while the duplicate READ is being served
	// (80 µs against timeouts of a few T_tr): every expiration counted
	// re-sent a request.
	if got := p.req.Counters().Map()["local_ack_timeout_err"]; got != uint64(reqs-2) || reqs < 2 {
		t.Errorf("local_ack_timeout_err = %d with %d READ requests sent, want requests − 2", got, reqs)
	}
}
