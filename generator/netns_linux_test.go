package generator_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/sim"
)

// realNIC is a software RNIC on an AF_PACKET socket in a namespace, driven
// by its own real-time loop.
type realNIC struct {
	loop *sim.RealLoop
	port *sim.AFPacketPort
	nic  *softrnic.NIC
	exec generator.Exec
}

func startRealNIC(t *testing.T, ns *testutil.Netns, ifname string, cfg softrnic.Config) *realNIC {
	t.Helper()
	r := &realNIC{loop: sim.NewRealLoop()}
	r.loop.Start()
	t.Cleanup(r.loop.Close)
	if err := ns.Do(func() (err error) {
		r.port, err = sim.OpenAFPacket(ifname, r.loop)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.port.Close() })
	r.exec = generator.PostAndWait(r.loop.Post)
	var err error
	r.exec(func() { r.nic, err = softrnic.New(r.loop, r.port, cfg) })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNetnsWrite runs two software RNICs in two network namespaces joined
// by a veth pair, in real time over AF_PACKET, with the control connection
// over TCP between the namespaces.
func TestNetnsWrite(t *testing.T) {
	a := testutil.NewNetns(t, "req")
	b := testutil.NewNetns(t, "rsp")
	testutil.Veth(t, a, "lum-a", "10.99.0.1/24", b, "lum-b", "10.99.0.2/24")
	pers, _ := softrnic.LoadPersonality("spec")
	// The RNICs use their own MACs, so the kernels ignore RoCE frames
	// (PACKET_OTHERHOST) and only the RNICs answer them.
	req := startRealNIC(t, a, "lum-a", softrnic.Config{Name: "req", MAC: [6]byte{2, 0x4c, 0, 0, 0, 1},
		IPs: []netip.Addr{netip.MustParseAddr("10.99.0.1")}, Personality: pers, Seed: 1})
	rsp := startRealNIC(t, b, "lum-b", softrnic.Config{Name: "rsp", MAC: [6]byte{2, 0x4c, 0, 0, 0, 2},
		IPs: []netip.Addr{netip.MustParseAddr("10.99.0.2")}, Personality: pers, Seed: 2})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ln net.Listener
	if err := b.Do(func() (err error) { ln, err = net.Listen("tcp", "10.99.0.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		_, err = generator.Serve(ctx, generator.ResponderConfig{Device: rsp.nic.Device(), Exec: rsp.exec, Verify: true}, c)
		errc <- err
	}()
	var conn net.Conn
	if err := a.Do(func() (err error) { conn, err = net.Dial("tcp", ln.Addr().String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tr := generator.Traffic{Verb: generator.VerbWrite, NumQPs: 2, MsgsPerQP: 32, MsgSize: new(64 << 10), TxDepth: 2,
		Timeout: new(uint8(10))} // T_tr 4.2 ms: AF_PACKET may drop under load; Go-back-N repairs it
	r, err := generator.NewRequester(generator.RequesterConfig{Device: req.nic.Device(), Clock: req.loop, Exec: req.exec, Traffic: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Handshake(ctx, conn); err != nil {
		t.Fatal(err)
	}
	r.Start()
	select {
	case <-r.Done():
	case <-ctx.Done():
		t.Fatal("traffic did not finish within 60 s")
	}
	res, err := r.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("responder: %v", err)
	}
	if len(res.Errors) != 0 || !res.Responder.Verified {
		t.Fatalf("errors %v, responder %+v", res.Errors, res.Responder)
	}
	var c softrnic.Counters
	req.exec(func() { c = req.nic.Counters() })
	t.Logf("netns WRITE %d × %d × %d KB: goodput %.3f Gb/s over %v (timeouts %d, NAK retransmissions %d)",
		tr.NumQPs, tr.MsgsPerQP, (*tr.MsgSize)>>10, res.GoodputGbps, time.Duration(res.DurationNs), c.LocalAckTimeoutErr, c.PacketSeqErr)
}
