package analyzers_test

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
	"github.com/netlumina/lumina/trace"
)

// testbed is two software RNICs on one sim link whose hook plays Lumina's
// switch: it decides an event for each data frame (the injector), writes
// the ingress mirror copy (sequence number, switch timestamp, event) to a
// pcap as a dumper would after restoring it, and then drops, ECN-marks or
// corrupts the frame. The switch "ingress" is the start of transmission on
// the link, so a packet reaches the other NIC half an RTT (serialization +
// propagation) after its timestamp.
type testbed struct {
	t        testing.TB
	loop     *sim.EventLoop
	net      *sim.Network
	link     sim.LinkConfig
	req, rsp *softrnic.NIC
	pers     softrnic.Personality
	pcap     bytes.Buffer
	w        *trace.PcapWriter
	seq      uint64
	scratch  []byte
	rounds   map[roundKey]int
	count    map[uint32]int
	// inject returns the event for a data frame.
	inject func(f frameInfo) roce.Event
	conns  []model.Connection
	ipsn   map[uint32]roce.PSN // by responder QPN (requests) and requester QPN (responses)
	comps  []softrnic.Completion
	onComp func(softrnic.Completion)
}

type roundKey struct {
	qpn uint32
	psn roce.PSN
}

// frameInfo describes a data frame to the injector.
type frameInfo struct {
	Dir    sim.Direction // AtoB: requester → responder
	Op     roce.Opcode
	QPN    uint32 // destination QPN
	Rel    int    // PSN relative to the connection's requester IPSN
	Round  int    // 1 for the first transmission of this PSN
	N      int    // data frames to this QPN so far, this one included
	Conn   int
	Packet int
}

type bedOpts struct {
	pers   string
	reqIPs []string
	reqCfg softrnic.Config
	rspCfg softrnic.Config
	delay  time.Duration
}

func newTestbed(t testing.TB, o bedOpts) *testbed {
	t.Helper()
	pers, err := softrnic.LoadPersonality(o.pers)
	if err != nil {
		t.Fatal(err)
	}
	tb := &testbed{t: t, loop: sim.NewEventLoop(), pers: pers, rounds: map[roundKey]int{}, count: map[uint32]int{},
		ipsn: map[uint32]roce.PSN{}, scratch: make([]byte, 0, 9216)}
	tb.net = sim.NewNetwork(tb.loop)
	if o.delay == 0 {
		o.delay = 500 * time.Nanosecond
	}
	tb.link = sim.LinkConfig{Name: "wire", BandwidthBps: int64(pers.LineRateGbps * 1e9), Delay: o.delay, Hook: tb.hook}
	a, b := tb.net.NewLink(tb.link)
	if tb.w, err = trace.NewPcapWriter(&tb.pcap, 128, trace.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	if len(o.reqIPs) == 0 {
		o.reqIPs = []string{"10.0.0.11"}
	}
	rc, sc := o.reqCfg, o.rspCfg
	for _, s := range o.reqIPs {
		rc.IPs = append(rc.IPs, netip.MustParseAddr(s))
	}
	rc.Name, rc.MAC, rc.Personality, rc.Seed = "requester", [6]byte{2, 0, 0, 0, 0, 1}, pers, 1
	sc.Name, sc.MAC, sc.IPs, sc.Personality, sc.Seed = "responder", [6]byte{2, 0, 0, 0, 0, 2}, []netip.Addr{netip.MustParseAddr("10.0.0.1")}, pers, 2
	// The hook timestamps each frame as it starts on the wire, at its
	// sender's end: there is no switch between a NIC and the link here, so
	// the NICs get ports without the link model (noPath) and do not
	// subtract a switch path (softrnic calibrate.go). The analyzers then
	// see each personality delay plus half an RTT, as these tests expect.
	if tb.req, err = softrnic.New(tb.loop, noPath{a}, rc); err != nil {
		t.Fatal(err)
	}
	if tb.rsp, err = softrnic.New(tb.loop, noPath{b}, sc); err != nil {
		t.Fatal(err)
	}
	h := func(c softrnic.Completion) {
		tb.comps = append(tb.comps, c)
		if tb.onComp != nil {
			tb.onComp(c)
		}
	}
	tb.req.SetCompletionHandler(h)
	tb.rsp.SetCompletionHandler(h)
	return tb
}

// noPath hides a link endpoint's sim.PathModel from the NIC.
type noPath struct{ sim.Port }

// halfRTT is what separates a switch timestamp from the NIC's view: the
// serialization of a full data frame plus the propagation delay.
func (tb *testbed) halfRTT() time.Duration {
	return sim.SerializationDelay(tb.link, 1100) + tb.link.Delay
}

type qpPair struct {
	rq, rs       *softrnic.QP
	reqMR, rspMR *softrnic.MR
	conn         int
}

// connect creates a requester QP on tb.req (from localIP) and a responder
// QP on tb.rsp, connects them and records the connection.
func (tb *testbed) connect(verb model.Verb, localIP string, attr softrnic.ConnectAttr, size int) *qpPair {
	tb.t.Helper()
	rq, rs := tb.req.CreateQP(), tb.rsp.CreateQP()
	lip := tb.req.IPs()[0]
	if localIP != "" {
		lip = netip.MustParseAddr(localIP)
	}
	ra, sa := attr, attr
	ra.RemoteQPN, ra.RemotePSN, ra.RemoteIP, ra.RemoteMAC, ra.LocalIP = rs.QPN(), rs.PSN(), tb.rsp.IPs()[0], tb.rsp.MAC(), lip
	sa.RemoteQPN, sa.RemotePSN, sa.RemoteIP, sa.RemoteMAC = rq.QPN(), rq.PSN(), lip, tb.req.MAC()
	if err := rq.Connect(ra); err != nil {
		tb.t.Fatal(err)
	}
	if err := rs.Connect(sa); err != nil {
		tb.t.Fatal(err)
	}
	p := &qpPair{rq: rq, rs: rs, reqMR: tb.req.RegMR(make([]byte, size)), rspMR: tb.rsp.RegMR(make([]byte, size)), conn: len(tb.conns)}
	tb.conns = append(tb.conns, model.Connection{ID: p.conn, Verb: verb,
		Requester: model.Endpoint{IP: lip, QPN: rq.QPN(), IPSN: uint32(rq.PSN())},
		Responder: model.Endpoint{IP: tb.rsp.IPs()[0], QPN: rs.QPN(), IPSN: uint32(rs.PSN())}})
	tb.ipsn[rs.QPN()], tb.ipsn[rq.QPN()] = rq.PSN(), rq.PSN()
	return p
}

func (p *qpPair) post(t testing.TB, id uint64, op softrnic.WROpcode, n int) {
	t.Helper()
	if err := p.rq.PostSend(softrnic.SendWR{ID: id, Op: op, Local: p.reqMR, Length: n, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
		t.Fatal(err)
	}
}

func setTOS(frame []byte, ecn byte) {
	ip := frame[14:34]
	ip[1] = ip[1]&^3 | ecn
	ip[10], ip[11] = 0, 0
	c := roce.IPv4Checksum(ip)
	ip[10], ip[11] = byte(c>>8), byte(c)
}

func (tb *testbed) hook(dir sim.Direction, frame []byte) sim.Verdict {
	var pk roce.Packet
	if err := (&roce.Parser{}).Parse(frame, 0, &pk); err != nil {
		tb.t.Errorf("non-RoCE frame on the link: %v", err)
		return sim.Pass
	}
	ev := roce.EventNone
	if pk.Opcode.IsData() && tb.inject != nil {
		q := pk.BTH.DestQP()
		k := roundKey{q, pk.BTH.PSN()}
		tb.rounds[k]++
		tb.count[q]++
		conn := -1
		for i, c := range tb.conns {
			if c.Responder.QPN == q || c.Requester.QPN == q {
				conn = i
			}
		}
		ev = tb.inject(frameInfo{Dir: dir, Op: pk.Opcode, QPN: q, Rel: pk.BTH.PSN().Sub(tb.ipsn[q]), Round: tb.rounds[k], N: tb.count[q], Conn: conn})
	}
	now := tb.loop.Now()
	tb.seq++
	cp := append(tb.scratch[:0], frame...)
	if !roce.ApplyMirror(cp, roce.MirrorMeta{Seq: tb.seq, TimestampNs: uint64(now), Event: ev}, roce.DefaultMirrorPort, uint16(0x1000+tb.seq)) ||
		!roce.RestoreMirror(cp, roce.DefaultMirrorPort) {
		tb.t.Fatal("mirror codec failed")
	}
	if ev == roce.EventECN {
		setTOS(cp, 3)
	}
	if err := tb.w.WritePacket(now, cp, len(cp)); err != nil {
		tb.t.Fatal(err)
	}
	switch ev {
	case roce.EventDrop:
		return sim.Drop
	case roce.EventECN:
		setTOS(frame, 3)
	case roce.EventCorrupt:
		frame[14+4] ^= 0xFF // IP identification: covered by the ICRC
		setTOS(frame, frame[15]&3)
	}
	return sim.Pass
}

// meta returns the run metadata: connections, parameters, NIC counters.
func (tb *testbed) meta(p model.Params) model.Meta {
	nic := func(n *softrnic.NIC) model.NIC {
		return model.NIC{Name: n.Name(), IPs: n.IPs(), Before: model.Counters{}, After: model.Counters(n.Counters().Map())}
	}
	p.MTU = 1024
	return model.Meta{Connections: tb.conns, Params: p, NICs: []model.NIC{nic(tb.req), nic(tb.rsp)}}
}

// analyze runs the analyzers on the captured trace.
func (tb *testbed) analyze(p model.Params) *analyzers.Report {
	tb.t.Helper()
	r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("sim", tb.pcap.Bytes()), tb.meta(p), analyzers.Options{})
	if err != nil {
		tb.t.Fatal(err)
	}
	if r.Integrity.Verdict != model.Pass || !r.Trace.Mirrored {
		tb.t.Fatalf("integrity %v (%s), mirrored %v", r.Integrity.Verdict, r.Integrity.Reason, r.Trace.Mirrored)
	}
	return r
}

func ptr[T any](v T) *T { return &v }
