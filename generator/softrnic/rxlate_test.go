package softrnic

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/sim"
)

// allLatePort is a link endpoint that is a sim.TimedPort and hands every
// frame to its receiver late ns after it arrived, with its true arrival
// time: a software NIC on a real clock whose loop ran behind.
type allLatePort struct {
	*sim.Endpoint
	loop sim.Loop
	late time.Duration
}

func (p *allLatePort) SetTimedReceiver(fn func(frame []byte, rxNs int64)) {
	p.Endpoint.SetReceiver(func(frame []byte) {
		rx := p.loop.Now()
		c := append([]byte(nil), frame...)
		p.loop.AfterFunc(p.late, func() { fn(c, rx) })
	})
}

// TestRxLateness: a NIC whose port hands it frames 7 µs after their
// arrival says so (RxLateness, which lumina run adds to the switch's
// pipeline lateness for the cnp check); one that gets them as they
// arrive (a sim link) says 0.
func TestRxLateness(t *testing.T) {
	const late = 7 * time.Microsecond
	pers := mustPers(t, "cx6")
	loop := sim.NewEventLoop()
	ea, eb := sim.NewNetwork(loop).NewLink(sim.LinkConfig{BandwidthBps: 100e9, Delay: 500 * time.Nanosecond})
	req, err := New(loop, ea, Config{Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}, Personality: pers, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := New(loop, &allLatePort{Endpoint: eb, loop: loop, late: late},
		Config{Name: "rsp", MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, Personality: pers, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	rq, rs := req.CreateQP(), rsp.CreateQP()
	if err := rq.Connect(ConnectAttr{RemoteQPN: rs.QPN(), RemotePSN: rs.PSN(), RemoteIP: rsp.IPs()[0], RemoteMAC: rsp.MAC()}); err != nil {
		t.Fatal(err)
	}
	if err := rs.Connect(ConnectAttr{RemoteQPN: rq.QPN(), RemotePSN: rq.PSN(), RemoteIP: req.IPs()[0], RemoteMAC: req.MAC()}); err != nil {
		t.Fatal(err)
	}
	mr, rmr := req.RegMR(make([]byte, 64<<10)), rsp.RegMR(make([]byte, 64<<10))
	if got := rsp.RxLateness(); got != 0 {
		t.Fatalf("RxLateness before any frame = %v, want 0", got)
	}
	if err := rq.PostSend(SendWR{Op: WRWrite, Local: mr, Length: 64 << 10, RemoteAddr: rmr.Addr, RKey: rmr.RKey}); err != nil {
		t.Fatal(err)
	}
	loop.RunUntil(int64(time.Millisecond))
	if got := rsp.RxLateness(); got != late {
		t.Errorf("responder RxLateness = %v, want %v", got, late)
	}
	if got := req.RxLateness(); got != 0 {
		t.Errorf("requester RxLateness = %v, want 0 (frames handled as they arrive)", got)
	}
	if rsp.Counters().RxPackets == 0 {
		t.Error("the responder received nothing")
	}
}
