package controlplane_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

var (
	reqMAC = [6]byte{2, 0, 0, 0, 0, 1}
	rspMAC = [6]byte{2, 0, 0, 0, 0, 2}
	reqIP  = netip.MustParseAddr("10.0.0.1")
	rspIP  = netip.MustParseAddr("10.0.0.2")
)

// rig is the software switch on a sim network, served over real gRPC on
// loopback and programmed by the controlplane package.
type rig struct {
	t       *testing.T
	loop    *sim.EventLoop
	sw      *injector.Switch
	cp      *controlplane.Switch
	req     *sim.Endpoint // the requester's end of its link
	rsp     *sim.Endpoint
	atRsp   [][]byte // frames delivered to the responder
	atReq   [][]byte
	dumps   [][][]byte // per dumper, frames in arrival order
	dumpers []controlplane.Dumper
}

func newRig(t *testing.T, weights ...int) *rig {
	r := &rig{t: t, loop: sim.NewEventLoop()}
	n := sim.NewNetwork(r.loop)
	r.sw = injector.New(r.loop, injector.Config{Seed: 1})
	link := func(port uint32, recv func([]byte)) *sim.Endpoint {
		host, swp := n.NewLink(sim.LinkConfig{})
		host.SetReceiver(func(f []byte) { recv(append([]byte(nil), f...)) })
		if err := r.sw.AddPort(port, swp); err != nil {
			t.Fatal(err)
		}
		return host
	}
	r.req = link(1, func(f []byte) { r.atReq = append(r.atReq, f) })
	r.rsp = link(2, func(f []byte) { r.atRsp = append(r.atRsp, f) })
	r.dumps = make([][][]byte, len(weights))
	for i, w := range weights {
		i := i
		link(uint32(10+i), func(f []byte) { r.dumps[i] = append(r.dumps[i], f) })
		r.dumpers = append(r.dumpers, controlplane.Dumper{Name: "dumper-" + string(rune('0'+i)), Port: uint32(10 + i),
			MAC: [6]byte{2, 0, 0, 0, 1, byte(i)}, Weight: w})
	}
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(r.sw, 0).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.cp, err = controlplane.Dial(ctx, ln.Addr().String(), controlplane.DialOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cp.Close() })
	if err := r.cp.SetPipeline(ctx, nil, 1); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) install(in controlplane.Intent, conns []generator.Connection) *controlplane.Plan {
	r.t.Helper()
	plan, err := controlplane.Translate(in, conns, controlplane.Ports{
		Hosts: []controlplane.Host{{Name: "requester", Port: 1, MAC: reqMAC, IPs: []netip.Addr{reqIP}},
			{Name: "responder", Port: 2, MAC: rspMAC, IPs: []netip.Addr{rspIP}}},
		Dumpers: r.dumpers,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.cp.Install(ctx, plan); err != nil {
		r.t.Fatal(err)
	}
	return plan
}

func conn(verb generator.Verb, reqQPN, reqIPSN, rspQPN, rspIPSN uint32) []generator.Connection {
	return []generator.Connection{{Index: 0, Verb: verb,
		Requester: generator.Endpoint{IP: reqIP, MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: reqQPN, IPSN: reqIPSN},
		Responder: generator.Endpoint{IP: rspIP, MAC: roce.MAC{2, 0, 0, 0, 0, 2}, QPN: rspQPN, IPSN: rspIPSN}}}
}

// send injects a frame at the requester (or responder) and runs the loop.
func (r *rig) send(fromReq bool, spec roce.FrameSpec) {
	b, err := spec.Append(nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if fromReq {
		r.req.Send(b)
	} else {
		r.rsp.Send(b)
	}
	r.loop.Run()
}

func writePkt(psn roce.PSN, op roce.Opcode) roce.FrameSpec {
	f := roce.FrameSpec{SrcMAC: reqMAC, DstMAC: rspMAC, SrcIP: reqIP, DstIP: rspIP, TOS: 2, Opcode: op, DestQP: 0x222, PSN: psn,
		Payload: make([]byte, 256)}
	if op.HasRETH() {
		f.RETH = roce.RETHFields{VA: 0x1000, RKey: 1, Length: 1024}
	}
	return f
}

func TestInjectorEndToEnd(t *testing.T) {
	const ipsn = 1<<24 - 2 // the PSNs wrap inside the first message
	ops := []roce.Opcode{roce.RCWriteFirst, roce.RCWriteMiddle, roce.RCWriteMiddle, roce.RCWriteLast}
	// A go-back-N pattern over two 4-packet messages: msg 0 sent, then
	// retransmitted from rel 1 and again from rel 2; msg 1 sent, then
	// retransmitted from rel 5.
	pattern := []int{0, 1, 2, 3, 1, 2, 3, 2, 3, 4, 5, 6, 7, 5, 6, 7}
	tests := []struct {
		name   string
		scope  config.IterScope
		events []config.ExpandedEvent
		// want[i] is the event the i-th transmission of the pattern gets.
		want []roce.Event
	}{
		{
			name:  "message scope",
			scope: config.IterScopeMessage,
			events: []config.ExpandedEvent{
				{QP: 0, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: config.EventDrop},
				{QP: 0, Msg: 0, PSN: 2, RelPSN: 2, Iter: 2, Type: config.EventECN},
				{QP: 0, Msg: 0, PSN: 2, RelPSN: 2, Iter: 3, Type: config.EventCorrupt},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 5, Iter: 1, Type: config.EventDrop},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 5, Iter: 2, Type: config.EventDrop},
			},
			// msg 1 restarts ITER at 1 in message scope: rel 5 round 1 dropped, round 2 dropped.
			want: []roce.Event{0, 1, 0, 0, 0, 2, 0, 3, 0, 0, 1, 0, 0, 1, 0, 0},
		},
		{
			name:  "connection scope",
			scope: config.IterScopeConnection,
			events: []config.ExpandedEvent{
				{QP: 0, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: config.EventDrop},
				{QP: 0, Msg: 0, PSN: 2, RelPSN: 2, Iter: 2, Type: config.EventECN},
				{QP: 0, Msg: 0, PSN: 2, RelPSN: 2, Iter: 3, Type: config.EventCorrupt},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 5, Iter: 3, Type: config.EventDrop},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 5, Iter: 4, Type: config.EventECN},
			},
			// ITER keeps counting across messages: msg 1 is round 3, its retransmission round 4.
			want: []roce.Event{0, 1, 0, 0, 0, 2, 0, 3, 0, 0, 1, 0, 0, 2, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 1)
			r.install(controlplane.Intent{Events: tt.events, IterScope: tt.scope}, conn(generator.VerbWrite, 0x111, ipsn, 0x222, 0x42))
			ack := roce.FrameSpec{SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, Opcode: roce.RCAcknowledge, DestQP: 0x111,
				PSN: roce.PSN(ipsn).Add(3), AETH: roce.AETHFields{Syndrome: 0x1F, MSN: 1}}
			for i, rel := range pattern {
				r.send(true, writePkt(roce.PSN(ipsn).Add(rel), ops[rel%4]))
				if i == 8 {
					r.send(false, ack) // control packets are mirrored, never targeted
				}
			}
			// Each transmission: delivered unless dropped; mirrored with its event.
			var delivered int
			mirror := r.dumps[0]
			if len(mirror) != len(pattern)+1 {
				t.Fatalf("%d mirror copies, want %d", len(mirror), len(pattern)+1)
			}
			var p roce.Packet
			var lastTS uint64
			for i, f := range mirror {
				(&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f, 0, &p)
				if ts := p.Mirror().TimestampNs; ts < lastTS || ts == 0 {
					t.Errorf("mirror copy %d: timestamp %d after %d", i, ts, lastTS)
				} else {
					lastTS = ts
				}
			}
			mi := 0
			for i, rel := range pattern {
				if i == 9 {
					mi++ // the ACK's copy
				}
				if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort, VerifyICRC: true}).Parse(mirror[mi], 0, &p); err != nil {
					t.Fatal(err)
				}
				m := p.Mirror()
				if m.Seq != uint64(mi+1) || m.Event != tt.want[i] || p.BTH.PSN() != roce.PSN(ipsn).Add(rel) {
					t.Errorf("transmission %d (rel %d): mirror seq %d event %v psn %#x; want seq %d event %v psn %#x",
						i, rel, m.Seq, m.Event, p.BTH.PSN(), mi+1, tt.want[i], roce.PSN(ipsn).Add(rel))
				}
				if (p.ICRC == roce.ICRCOK) != (tt.want[i] != roce.EventCorrupt) {
					t.Errorf("transmission %d: mirror ICRC %v with event %v", i, p.ICRC, tt.want[i])
				}
				if tt.want[i] != roce.EventDrop {
					got := r.atRsp[delivered]
					var q roce.Packet
					(&roce.Parser{VerifyICRC: true}).Parse(got, 0, &q)
					if q.BTH.PSN() != roce.PSN(ipsn).Add(rel) || (q.ECN() == 3) != (tt.want[i] == roce.EventECN) ||
						(q.ICRC == roce.ICRCBad) != (tt.want[i] == roce.EventCorrupt) || roce.IPv4Checksum(got[14:34]) != 0 {
						t.Errorf("transmission %d delivered psn %#x ecn %d icrc %v", i, q.BTH.PSN(), q.ECN(), q.ICRC)
					}
					delivered++
				}
				mi++
			}
			if delivered != len(r.atRsp) || len(r.atReq) != 1 {
				t.Errorf("responder got %d frames (want %d), requester %d (want 1)", len(r.atRsp), delivered, len(r.atReq))
			}
			ctx := context.Background()
			c, err := r.cp.ReadCounters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			drops := 0
			for _, e := range tt.want {
				if e == roce.EventDrop {
					drops++
				}
			}
			if c.RxRoCE[1] != uint64(len(pattern)) || c.RxRoCE[2] != 1 || c.EventDrops[1] != uint64(drops) ||
				c.MirrorTotal != uint64(len(pattern)+1) || c.TxRoCE[2] != uint64(delivered) || c.TxRoCE[1] != 1 {
				t.Errorf("counters %+v; want rx 16/1, drops %d, mirrored 17, tx %d/1", c, drops, delivered)
			}
			if err := r.cp.Cleanup(ctx); err != nil {
				t.Fatal(err)
			}
			if err := r.cp.Cleanup(ctx); err != nil {
				t.Fatalf("second cleanup: %v", err)
			}
		})
	}
}

// TestReadDirection: for READ the data are the responses, from the
// responder's port, addressed to the requester's QPN, in the requester's
// PSN space.
func TestReadDirection(t *testing.T) {
	r := newRig(t, 1)
	r.install(controlplane.Intent{Events: []config.ExpandedEvent{{QP: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: config.EventDrop}}},
		conn(generator.VerbRead, 0x111, 0xFFFFFF, 0x222, 0x500))
	rd := roce.FrameSpec{SrcMAC: reqMAC, DstMAC: rspMAC, SrcIP: reqIP, DstIP: rspIP, Opcode: roce.RCReadRequest, DestQP: 0x222,
		PSN: 0xFFFFFF, RETH: roce.RETHFields{Length: 3072}}
	r.send(true, rd)
	for i, op := range []roce.Opcode{roce.RCReadResponseFirst, roce.RCReadResponseMiddle, roce.RCReadResponseLast} {
		r.send(false, roce.FrameSpec{SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, Opcode: op, DestQP: 0x111,
			PSN: roce.PSN(0xFFFFFF).Add(i), Payload: make([]byte, 1024)})
	}
	if len(r.atRsp) != 1 || len(r.atReq) != 2 {
		t.Fatalf("delivered %d to the responder (want the request), %d to the requester (want 2 of 3 responses)", len(r.atRsp), len(r.atReq))
	}
	var p roce.Packet
	(&roce.Parser{}).Parse(r.atReq[1], 0, &p)
	if p.BTH.PSN() != 1 { // 0xFFFFFF + 2, wrapped
		t.Errorf("second delivered response PSN %#x, want 0x1", p.BTH.PSN())
	}
}

// TestWRR mirrors 600 packets over 3 dumpers weighted 1:2:3: every prefix
// stays within one packet of the ideal share, and each 6-packet round is
// exact.
func TestWRR(t *testing.T) {
	r := newRig(t, 1, 2, 3)
	r.install(controlplane.Intent{}, conn(generator.VerbWrite, 0x111, 0, 0x222, 0))
	got := make([]int, 3)
	counts := func() [3]int { return [3]int{len(r.dumps[0]), len(r.dumps[1]), len(r.dumps[2])} }
	for i := range 600 {
		r.send(true, writePkt(roce.PSN(i), roce.RCWriteOnly))
		c := counts()
		for d, w := range []int{1, 2, 3} {
			ideal := float64((i+1)*w) / 6
			if diff := float64(c[d]) - ideal; diff > 1 || diff < -1 {
				t.Fatalf("after %d packets dumper %d has %d, ideal %.1f", i+1, d, c[d], ideal)
			}
		}
		if (i+1)%6 == 0 && (c[0] != (i+1)/6 || c[1] != 2*(i+1)/6 || c[2] != 3*(i+1)/6) {
			t.Fatalf("after round %d: %v", (i+1)/6, c)
		}
		copy(got, c[:])
	}
	// Sequence numbers across dumpers are 1..600 with no gap.
	seen := make([]bool, 601)
	for _, d := range r.dumps {
		last := uint64(0)
		for _, f := range d {
			var p roce.Packet
			(&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f, 0, &p)
			m := p.Mirror()
			if m.Seq <= last || m.Seq > 600 || seen[m.Seq] {
				t.Fatalf("bad sequence %d after %d", m.Seq, last)
			}
			seen[m.Seq], last = true, m.Seq
		}
	}
}
