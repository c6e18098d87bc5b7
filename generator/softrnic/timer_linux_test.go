package softrnic

import (
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// TestTimerNeverEarlyRealTime runs a requester in real time on an AF_PACKET
// port in a network namespace, with nobody answering and the CPUs busy,
// and checks on the NIC's own clock that no retransmission timer fired
// before its interval had passed since the QP's last transmission.
func TestTimerNeverEarlyRealTime(t *testing.T) {
	testutil.RequireNetns(t)
	ns := testutil.NewNetns(t, "tmr")
	testutil.Veth(t, ns, "r0", "", ns, "r1", "")
	loop := sim.NewRealLoop()
	loop.Start()
	defer loop.Close()
	exec := generator.PostAndWait(loop.Post)
	var port *sim.AFPacketPort
	if err := ns.Do(func() (err error) { port, err = sim.OpenAFPacket("r0", loop); return err }); err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	pers, err := LoadPersonality("spec")
	if err != nil {
		t.Fatal(err)
	}
	// Load both CPUs for the duration, as the netns runs that read short
	// intervals had.
	var stop atomic.Bool
	defer stop.Store(true)
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	const timeout, retries = 9, 4 // T_tr = 2.1 ms
	done := make(chan Completion, 1)
	var nic *NIC
	exec(func() {
		nic, err = New(loop, port, Config{Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")},
			Personality: pers, Seed: 1})
		if err != nil {
			return
		}
		nic.SetCompletionHandler(func(c Completion) { done <- c })
		qp := nic.CreateQP()
		mr := nic.RegMR(make([]byte, 8192))
		err = qp.Connect(ConnectAttr{RemoteQPN: 0x123, RemotePSN: 7, RemoteIP: netip.MustParseAddr("10.0.0.2"),
			RemoteMAC: [6]byte{2, 0, 0, 0, 0, 2}, Timeout: new(uint8(timeout)), RetryCnt: new(uint8(retries))})
		if err == nil {
			err = qp.PostSend(SendWR{ID: 1, Op: WRWrite, Local: mr, Length: 8192, RemoteAddr: 0x1000, RKey: 1})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-done:
		if c.Status != StatusRetryExcErr {
			t.Fatalf("completion %+v, want retry exceeded", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no completion within 10 s")
	}
	var fires []TimerFire
	exec(func() { fires = nic.TimerFires() })
	ttr := int64(roce.TransportTimeout(timeout))
	if len(fires) != retries+1 {
		t.Fatalf("%d timer expiries, want %d: %+v", len(fires), retries+1, fires)
	}
	for i, f := range fires {
		if f.IntervalNs != ttr {
			t.Errorf("expiry %d waited for %d ns, want T_tr %d", i, f.IntervalNs, ttr)
		}
		if late := f.FiredNs - f.LastSendNs - f.IntervalNs; late < 0 {
			t.Errorf("expiry %d fired %d ns early: last send %d, fired %d", i, -late, f.LastSendNs, f.FiredNs)
		} else {
			t.Logf("expiry %d: %d ns after its deadline", i, late)
		}
	}
}
