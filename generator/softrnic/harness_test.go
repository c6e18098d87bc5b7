package softrnic

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// pair is two NICs on one sim link, a requester QP and a responder QP
// connected to each other, and a log of every frame on the link.
type pair struct {
	t        testing.TB
	loop     *sim.EventLoop
	net      *sim.Network
	req, rsp *NIC
	rq, rs   *QP
	comps    []Completion
	frames   []frameRec
	// drop decides, for a frame about to be transmitted, whether the link
	// loses it. The round counts transmissions of the same (dir, opcode, PSN).
	drop func(f frameRec) bool
	// mutate, if set, may change a frame in flight (after drop decided).
	mutate func(f frameRec, frame []byte)
	seen   map[string]int
	reqMR  *MR
	rspMR  *MR
	link   sim.LinkConfig
	// tapEndpoint is the requester's end of the link, for Network.Tap.
	tapEndpoint *sim.Endpoint
}

// arrival returns when frame f reaches the other end of the link.
func (p *pair) arrival(f frameRec) int64 {
	return f.T + int64(sim.SerializationDelay(p.link, f.Len)) + int64(p.link.Delay)
}

type frameRec struct {
	T       int64
	Dir     sim.Direction // AtoB: requester → responder
	Op      roce.Opcode
	PSN     roce.PSN // relative to the requester's IPSN
	Syn     roce.Syndrome
	Round   int // 1 for the first transmission of (dir, op class, PSN)
	Len     int
	Dropped bool
}

func (f frameRec) String() string {
	s := fmt.Sprintf("%s %v %d", map[sim.Direction]string{sim.AtoB: ">", sim.BtoA: "<"}[f.Dir], f.Op, f.PSN)
	if f.Op.HasAETH() && f.Op == roce.RCAcknowledge {
		s += " " + f.Syn.String()
	}
	if f.Dropped {
		s += " DROP"
	}
	return s
}

type pairOpts struct {
	pers      string
	persVal   *Personality // instead of pers
	reqCfg    Config
	rspCfg    Config
	attr      ConnectAttr
	bufSize   int
	bandwidth int64
	delay     time.Duration
	noHook    bool // no frame log (benchmarks)
}

func newPair(t testing.TB, o pairOpts) *pair {
	t.Helper()
	p := &pair{t: t, loop: sim.NewEventLoop(), seen: map[string]int{}}
	p.net = sim.NewNetwork(p.loop)
	if o.pers == "" {
		o.pers = "spec"
	}
	pers, err := LoadPersonality(o.pers)
	if err != nil {
		t.Fatal(err)
	}
	if o.persVal != nil {
		pers = *o.persVal
	}
	bw := o.bandwidth
	if bw == 0 {
		bw = int64(pers.LineRateGbps * 1e9)
	}
	delay := o.delay
	if delay == 0 {
		delay = 500 * time.Nanosecond
	}
	p.link = sim.LinkConfig{Name: "wire", BandwidthBps: bw, Delay: delay, Hook: p.hook}
	if o.noHook {
		p.link.Hook = nil
	}
	a, b := p.net.NewLink(p.link)
	p.tapEndpoint = a
	rc, sc := o.reqCfg, o.rspCfg
	rc.Name, rc.MAC, rc.IPs, rc.Personality, rc.Seed = "req", [6]byte{2, 0, 0, 0, 0, 1}, []netip.Addr{netip.MustParseAddr("10.0.0.1")}, pers, 1
	sc.Name, sc.MAC, sc.IPs, sc.Personality, sc.Seed = "rsp", [6]byte{2, 0, 0, 0, 0, 2}, []netip.Addr{netip.MustParseAddr("10.0.0.2")}, pers, 2
	if p.req, err = New(p.loop, a, rc); err != nil {
		t.Fatal(err)
	}
	if p.rsp, err = New(p.loop, b, sc); err != nil {
		t.Fatal(err)
	}
	p.req.SetCompletionHandler(func(c Completion) { p.comps = append(p.comps, c) })
	p.rsp.SetCompletionHandler(func(c Completion) { p.comps = append(p.comps, c) })
	p.rq, p.rs = p.req.CreateQP(), p.rsp.CreateQP()
	ra, sa := o.attr, o.attr
	ra.RemoteQPN, ra.RemotePSN, ra.RemoteIP, ra.RemoteMAC = p.rs.QPN(), p.rs.PSN(), p.rsp.IPs()[0], p.rsp.MAC()
	sa.RemoteQPN, sa.RemotePSN, sa.RemoteIP, sa.RemoteMAC = p.rq.QPN(), p.rq.PSN(), p.req.IPs()[0], p.req.MAC()
	if err := p.rq.Connect(ra); err != nil {
		t.Fatal(err)
	}
	if err := p.rs.Connect(sa); err != nil {
		t.Fatal(err)
	}
	size := o.bufSize
	if size == 0 {
		size = 1 << 20
	}
	p.reqMR, p.rspMR = p.req.RegMR(make([]byte, size)), p.rsp.RegMR(make([]byte, size))
	return p
}

func (p *pair) hook(dir sim.Direction, frame []byte) sim.Verdict {
	var pk roce.Packet
	if err := (&roce.Parser{}).Parse(frame, 0, &pk); err != nil {
		p.t.Fatalf("non-RoCE frame on the link: %v", err)
	}
	f := frameRec{T: p.loop.Now(), Dir: dir, Op: pk.Opcode, Len: len(frame), PSN: roce.PSN(pk.BTH.PSN().Sub(p.rq.PSN())) & roce.PSNMask}
	if pk.AETH != nil {
		f.Syn = pk.AETH.Syndrome()
	}
	key := fmt.Sprintf("%v/%v/%d", dir, pk.Opcode.IsAck() || pk.Opcode.IsCNP(), f.PSN)
	p.seen[key]++
	f.Round = p.seen[key]
	if p.drop != nil && p.drop(f) {
		f.Dropped = true
	}
	p.frames = append(p.frames, f)
	if p.mutate != nil && !f.Dropped {
		p.mutate(f, frame)
	}
	if f.Dropped {
		return sim.Drop
	}
	return sim.Pass
}

// run runs the loop until nothing is left or the virtual deadline passes.
func (p *pair) run(limit time.Duration) {
	p.loop.RunUntil(int64(limit))
}
