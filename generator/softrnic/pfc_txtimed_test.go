package softrnic

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/sim"
)

// txLatePort is a link endpoint that is a sim.TxTimedPort whose k-th
// timed frame leaves lags[k] after the NIC started it: a software NIC on a
// real clock whose write ran behind (the kernel's transmit timestamp tells
// the departure). Other frames go through Send.
type txLatePort struct {
	*sim.Endpoint
	loop  sim.Loop
	lags  []time.Duration
	timed int
}

func (p *txLatePort) SendTimed(frame []byte) (int64, bool) {
	lag := p.lags[min(p.timed, len(p.lags)-1)]
	p.timed++
	p.Endpoint.Send(frame)
	return p.loop.Now() + int64(lag), true
}

// TestPFCSentAtDeparture: on a port that knows its frames' departures, the
// NIC's PFC log and tx pause duration count a pause from when its frame
// left, as the switch stamps it: an XOFF that left 5 µs late and an XON
// on time kept the peer paused 45 µs, not the 50 µs between their starts
// on the NIC's clock. On a port without transmit timestamps (every sim link)
// both count from the start on the NIC's clock.
func TestPFCSentAtDeparture(t *testing.T) {
	pers := mustPers(t, "cx5")
	const lag = 5_000
	const xoffAt, xonAt = 10_000, 60_000
	for _, timed := range []bool{false, true} {
		loop := sim.NewEventLoop()
		ea, eb := sim.NewNetwork(loop).NewLink(sim.LinkConfig{BandwidthBps: int64(pers.LineRateGbps * 1e9), Delay: 500 * time.Nanosecond})
		eb.SetReceiver(func([]byte) {})
		var port sim.Port = ea
		tp := &txLatePort{Endpoint: ea, loop: loop, lags: []time.Duration{lag, 0}}
		if timed {
			port = tp
		}
		cfg := testPFCConfig(0)
		n, err := New(loop, port, Config{Name: "rsp", MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")},
			Personality: pers, Seed: 2, PFC: &cfg})
		if err != nil {
			t.Fatal(err)
		}
		loop.AfterFunc(xoffAt, func() { n.pfcSendPause(0xffff) })
		loop.AfterFunc(xonAt, func() { n.pfcSendPause(0) })
		loop.RunUntil(100_000)
		var sent []int64
		for _, e := range n.PFCLog() {
			if e.Event == PFCSent {
				sent = append(sent, e.TimeNs)
			}
		}
		var shift int64
		if timed {
			shift = lag
			if tp.timed != 2 {
				t.Errorf("timed: %d frames sent with SendTimed, want the 2 PFC frames", tp.timed)
			}
		}
		if len(sent) != 2 || sent[0] != xoffAt+shift || sent[1] != xonAt {
			t.Errorf("timed %v: PFC frames logged sent at %v, want [%d %d]", timed, sent, xoffAt+shift, xonAt)
		}
		c := n.Counters().PFC
		if got, want := c.TxPauseDuration[3], uint64((xonAt-xoffAt-shift)/1000); got != want || c.TxPause[3] != 2 {
			t.Errorf("timed %v: tx_prio3_pause %d, duration %d µs, want 2, %d µs", timed, c.TxPause[3], got, want)
		}
	}
}
