package softrnic

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// compact renders the frame log: data PSNs as numbers ("4x" when dropped),
// READ requests "Q4", READ responses "r4", ACKs "A9", NAKs "N4", RNR NAKs
// "R4", CNPs "C". PSNs are relative to the requester's IPSN.
func (p *pair) compact() string {
	var parts []string
	for _, f := range p.frames {
		s := strconv.Itoa(int(f.PSN))
		switch {
		case f.Op == roce.CNP:
			s = "C"
		case f.Op == roce.RCAcknowledge && f.Syn.IsACK():
			s = "A" + s
		case f.Op == roce.RCAcknowledge && f.Syn.IsNAK():
			s = "N" + s
		case f.Op == roce.RCAcknowledge && f.Syn.IsRNR():
			s = "R" + s
		case f.Op.IsReadRequest():
			s = "Q" + s
		case f.Op.IsReadResponse():
			s = "r" + s
		}
		if f.Dropped {
			s += "x"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// dropAt drops the data/request frame with relative PSN psn in the given
// transmission rounds (1 = first transmission).
func dropAt(psn roce.PSN, rounds ...int) func(frameRec) bool {
	return func(f frameRec) bool {
		if f.Op.IsAck() || f.Op.IsCNP() || f.PSN != psn {
			return false
		}
		for _, r := range rounds {
			if f.Round == r {
				return true
			}
		}
		return false
	}
}

// dropResponse drops READ response psn in the given rounds.
func dropResponse(psn roce.PSN, rounds ...int) func(frameRec) bool {
	d := dropAt(psn, rounds...)
	return func(f frameRec) bool { return f.Op.IsReadResponse() && d(f) }
}

func TestLossRecovery(t *testing.T) {
	fast := ConnectAttr{Timeout: new(uint8(8)), MinRNRTimer: new(uint8(1))} // T_tr = 1.048576 ms, RNR 10 µs
	tests := []struct {
		name     string
		op       WROpcode
		size     int
		attr     ConnectAttr
		drop     func(frameRec) bool
		noRecv   bool
		want     string
		status   Status
		counters map[string]uint64 // requester counters (prefix "rsp." for the responder)
	}{
		{
			name: "write drop middle: one NAK, go back to it", op: WRWrite, size: 10240, attr: fast,
			drop:     dropAt(4, 1),
			want:     "0 1 2 3 4x 5 6 7 8 9 N4 4 5 6 7 8 9 A9",
			counters: map[string]uint64{"packet_seq_err": 1, "rsp.out_of_sequence": 1, "local_ack_timeout_err": 0},
		},
		{
			name: "write drop first", op: WRWrite, size: 4096, attr: fast,
			drop: dropAt(0, 1),
			want: "0x 1 2 3 N0 0 1 2 3 A3",
		},
		{
			name: "write drop tail: timeout", op: WRWrite, size: 4096, attr: fast,
			drop: dropAt(3, 1),
			// spec: every duplicate is acknowledged again (IBA C9-105).
			want:     "0 1 2 3x 0 1 2 3 A2 A2 A2 A3",
			counters: map[string]uint64{"local_ack_timeout_err": 1, "packet_seq_err": 0, "rsp.duplicate_request": 3},
		},
		{
			name: "write drop retransmission: the second loss needs the timer", op: WRWrite, size: 6144, attr: fast,
			drop:     dropAt(2, 1, 2),
			want:     "0 1 2x 3 4 5 N2 2x 3 4 5 2 3 4 5 A5",
			counters: map[string]uint64{"packet_seq_err": 1, "local_ack_timeout_err": 1, "rsp.out_of_sequence": 1},
		},
		{
			// The re-ACK of duplicate 0 is progress: the retry count starts
			// again, and RETRY_EXC_ERR follows retry_cnt retries of PSN 1 alone.
			name: "write tail dropped forever: RETRY_EXC_ERR after retry_cnt retries without progress", op: WRWrite, size: 2048,
			attr:     ConnectAttr{Timeout: new(uint8(8)), RetryCnt: new(uint8(3))},
			drop:     dropAt(1, 1, 2, 3, 4, 5, 6, 7, 8),
			want:     "0 1x 0 1x A0 1x 1x 1x",
			status:   StatusRetryExcErr,
			counters: map[string]uint64{"local_ack_timeout_err": 4, "req_transport_retries_exceeded": 1},
		},
		{
			name: "lost ACK: timeout resends, responder re-ACKs duplicates", op: WRWrite, size: 2048, attr: fast,
			drop: func(f frameRec) bool { return f.Op == roce.RCAcknowledge && f.Round == 1 },
			want: "0 1 A1x 0 1 A1 A1",
		},
		{
			name: "lost NAK: recovery by timeout", op: WRWrite, size: 4096, attr: fast,
			drop: func(f frameRec) bool {
				return f.Round == 1 && (f.PSN == 1 && !f.Op.IsAck() || f.Op == roce.RCAcknowledge && f.Syn.IsNAK())
			},
			want: "0 1x 2 3 N1x 0 1 2 3 A0 A3",
		},
		{
			name: "send drop middle", op: WRSend, size: 3072, attr: fast,
			drop: dropAt(1, 1),
			want: "0 1x 2 N1 1 2 A2",
		},
		{
			name: "read drop response: implied NAK, re-issued request", op: WRRead, size: 5120, attr: fast,
			drop:     dropResponse(2, 1),
			want:     "Q0 r0 r1 r2x r3 r4 Q2 r2 r3 r4",
			counters: map[string]uint64{"implied_nak_seq_err": 1, "rsp.duplicate_request": 1, "local_ack_timeout_err": 0},
		},
		{
			name: "read drop last response: timeout", op: WRRead, size: 3072, attr: fast,
			drop:     dropResponse(2, 1),
			want:     "Q0 r0 r1 r2x Q2 r2",
			counters: map[string]uint64{"local_ack_timeout_err": 1, "implied_nak_seq_err": 0, "rsp.duplicate_request": 1},
		},
		{
			name: "read request dropped: timeout", op: WRRead, size: 2048, attr: fast,
			drop: func(f frameRec) bool { return f.Op.IsReadRequest() && f.Round == 1 },
			want: "Q0x Q0 r0 r1",
		},
		{
			name: "send without receive buffer: RNR NAK, then RNR_RETRY_EXC_ERR", op: WRSend, size: 100,
			attr:     ConnectAttr{Timeout: new(uint8(8)), RNRRetry: new(uint8(2)), MinRNRTimer: new(uint8(1))},
			noRecv:   true,
			want:     "0 R0 0 R0 0 R0",
			status:   StatusRNRRetryExcErr,
			counters: map[string]uint64{"rnr_nak_retry_err": 2, "req_rnr_retries_exceeded": 1, "rsp.out_of_buffer": 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, pairOpts{attr: tt.attr})
			p.drop = tt.drop
			if (tt.op == WRSend || tt.op == WRSendImm) && !tt.noRecv {
				if err := p.rs.PostRecv(RecvWR{ID: 9, MR: p.rspMR, Length: tt.size}); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.rq.PostSend(SendWR{ID: 1, Op: tt.op, Local: p.reqMR, Length: tt.size, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
				t.Fatal(err)
			}
			p.run(10 * time.Second)
			if got := p.compact(); got != tt.want {
				t.Errorf("frames:\n got %s\nwant %s", got, tt.want)
			}
			var st *Completion
			for i := range p.comps {
				if p.comps[i].QPN == p.rq.QPN() {
					st = &p.comps[i]
				}
			}
			if st == nil || st.Status != tt.status {
				t.Errorf("requester completion = %+v, want status %v", st, tt.status)
			}
			if tt.status == StatusSuccess && !bytesEqualFor(tt.op, p, tt.size) {
				t.Error("data differs after recovery")
			}
			rc, sc := p.req.Counters().Map(), p.rsp.Counters().Map()
			for k, want := range tt.counters {
				got := rc[k]
				if name, ok := strings.CutPrefix(k, "rsp."); ok {
					got = sc[name]
				}
				if got != want {
					t.Errorf("counter %s = %d, want %d", k, got, want)
				}
			}
		})
	}
}

func bytesEqualFor(op WROpcode, p *pair, n int) bool {
	src, dst := p.reqMR.Buf[:n], p.rspMR.Buf[:n]
	if op == WRRead {
		src, dst = dst, src
	}
	return string(src) == string(dst)
}

// TestTimeoutExact checks that a dropped tail packet is retransmitted after
// exactly T_tr = 4.096 µs × 2^timeout on the virtual clock (spec), and that
// every further timeout waits the same.
func TestTimeoutExact(t *testing.T) {
	for _, timeout := range []uint8{1, 10, 14} {
		p := newPair(t, pairOpts{attr: ConnectAttr{Timeout: new(uint8(timeout)), RetryCnt: new(uint8(3))}})
		p.drop = dropAt(0, 1, 2, 3)
		fill(p.reqMR.Buf[:64], 3)
		p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 64, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
		p.run(100 * time.Second)
		var ts []int64
		for _, f := range p.frames {
			if f.Dir == sim.AtoB {
				ts = append(ts, f.T)
			}
		}
		want := int64(roce.TransportTimeout(timeout))
		if len(ts) != 4 {
			t.Fatalf("timeout %d: %d transmissions (%s), want 4", timeout, len(ts), p.compact())
		}
		for i := 1; i < len(ts); i++ {
			if d := ts[i] - ts[i-1]; d != want {
				t.Errorf("timeout %d: interval %d = %d ns, want %d", timeout, i, d, want)
			}
		}
		if p.compact() != "0x 0x 0x 0 A0" || p.comps[len(p.comps)-1].Status != StatusSuccess {
			t.Errorf("timeout %d: frames %s, completions %+v", timeout, p.compact(), p.comps)
		}
	}
}

func TestRemoteAccessError(t *testing.T) {
	p := newPair(t, pairOpts{})
	p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 2048, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey + 7})
	p.rq.PostSend(SendWR{ID: 2, Op: WRWrite, Local: p.reqMR, Length: 16, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
	p.run(time.Second)
	if got := p.compact(); !strings.HasPrefix(got, "0 ") || !strings.Contains(got, "N0") {
		t.Errorf("frames %s, want a NAK for PSN 0", got)
	}
	var st []Status
	for _, c := range p.comps {
		if c.QPN == p.rq.QPN() {
			st = append(st, c.Status)
		}
	}
	if len(st) != 2 || st[0] != StatusRemAccessErr || st[1] != StatusWRFlushErr || p.rq.State() != QPError {
		t.Errorf("requester completions %v, state %v; want [REM_ACCESS_ERR WR_FLUSH_ERR], ERROR", st, p.rq.State())
	}
}

func TestCorruptedPacketIsDroppedSilently(t *testing.T) {
	p := newPair(t, pairOpts{attr: ConnectAttr{Timeout: new(uint8(8))}})
	p.mutate = func(f frameRec, frame []byte) {
		if f.Dir == sim.AtoB && f.PSN == 1 && f.Round == 1 {
			frame[14+4] ^= 0xFF // IP identification: covered by the ICRC
			frame[14+10], frame[14+11] = 0, 0
			c := roce.IPv4Checksum(frame[14:34])
			frame[14+10], frame[14+11] = byte(c>>8), byte(c)
		}
	}
	p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 3072, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
	p.run(time.Second)
	if got, want := p.compact(), "0 1 2 N1 1 2 A2"; got != want {
		t.Errorf("frames %s, want %s", got, want)
	}
	if got := p.rsp.Counters().RxICRCEncapsulated; got != 1 {
		t.Errorf("rx_icrc_encapsulated = %d, want 1", got)
	}
}

// The cx personalities acknowledge a duplicate SEND/WRITE again only when
// it has AckReq set (ack-every-duplicate false); spec acknowledges every
// duplicate. A lost ACK makes the requester resend both packets; only the
// second carries AckReq.
func TestAckEveryDuplicate(t *testing.T) {
	for _, tc := range []struct{ pers, want string }{
		{"spec", "0 1 A1x 0 1 A1 A1"},
		{"cx5", "0 1 A1x 0 1 A1"},
	} {
		t.Run(tc.pers, func(t *testing.T) {
			p := newPair(t, pairOpts{pers: tc.pers, attr: ConnectAttr{Timeout: new(uint8(8))}})
			p.drop = func(f frameRec) bool { return f.Op == roce.RCAcknowledge && f.Round == 1 }
			if err := p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 2048, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
				t.Fatal(err)
			}
			p.run(10 * time.Second)
			if got := p.compact(); got != tc.want {
				t.Errorf("frames:\n got %s\nwant %s", got, tc.want)
			}
			if got := p.rsp.Counters().Map()["duplicate_request"]; got != 2 {
				t.Errorf("duplicate_request = %d, want 2", got)
			}
		})
	}
}

// A NAK for a later PSN that reaches the requester while its go-back is
// already resending that PSN (the responder's second NAK of a reordered
// packet, on a real-time testbed) starts no second go-back: it is counted
// in packet_seq_err and the round under way repairs it.
func TestNAKDuringGoBackRound(t *testing.T) {
	p := newPair(t, pairOpts{attr: ConnectAttr{Timeout: new(uint8(8))}})
	injected := false
	p.drop = func(f frameRec) bool {
		if f.Dir == sim.AtoB && !f.Op.IsAck() && f.PSN == 3 && f.Round == 2 && !injected {
			injected = true
			p.loop.AfterFunc(0, func() {
				spec := roce.FrameSpec{Opcode: roce.RCAcknowledge, DestQP: p.rq.QPN(), PSN: p.rq.PSN().Add(5),
					SrcIP: netip.MustParseAddr("10.0.0.2"), DstIP: netip.MustParseAddr("10.0.0.1"),
					AETH: roce.AETHFields{Syndrome: roce.NAKSyndrome(roce.NAKPSNSequenceError)}}
				b, err := spec.Append(nil)
				if err != nil {
					t.Fatal(err)
				}
				var pk roce.Packet
				if err := (&roce.Parser{}).Parse(b, 0, &pk); err != nil {
					t.Fatal(err)
				}
				p.rq.requesterReceive(&pk)
			})
		}
		return f.Dir == sim.AtoB && !f.Op.IsAck() && f.PSN == 3 && f.Round == 1
	}
	if err := p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 10240, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
		t.Fatal(err)
	}
	p.run(10 * time.Second)
	if got, want := p.compact(), "0 1 2 3x 4 5 6 7 8 9 N3 3 4 5 6 7 8 9 A9"; got != want {
		t.Errorf("frames:\n got %s\nwant %s", got, want)
	}
	if got := p.req.Counters().Map()["packet_seq_err"]; got != 2 {
		t.Errorf("packet_seq_err = %d, want 2 (both NAKs)", got)
	}
}
