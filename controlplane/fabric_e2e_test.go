package controlplane_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// TestFabricEndToEnd: a plan for three logical switches in a line
// (requester and dumper on switch 0, responder on switch 2, links
// 200–201 and 202–203 as sim links between ports of the one software
// switch) installed over P4Runtime: the connection is observed at the
// spine (switch 1), where its drop event applies; each switch mirrors each
// packet with its own sequence; ReadCounters reports each switch's last
// sequence; CheckInstalled reads the fabric's tables back equal to the
// plan and reports a route changed behind its back; Cleanup removes them.
func TestFabricEndToEnd(t *testing.T) {
	loop := sim.NewEventLoop()
	n := sim.NewNetwork(loop)
	sw := injector.New(loop, injector.Config{Seed: 1})
	var atRsp, dump [][]byte
	hostLink := func(port uint32, recv func([]byte)) *sim.Endpoint {
		host, swp := n.NewLink(sim.LinkConfig{})
		host.SetReceiver(func(f []byte) { recv(append([]byte(nil), f...)) })
		if err := sw.AddPort(port, swp); err != nil {
			t.Fatal(err)
		}
		return host
	}
	req := hostLink(1, func([]byte) {})
	hostLink(2, func(f []byte) { atRsp = append(atRsp, f) })
	hostLink(10, func(f []byte) { dump = append(dump, f) })
	for l := range 2 {
		a, b := n.NewLink(sim.LinkConfig{})
		if err := sw.AddPort(uint32(200+2*l), a); err != nil {
			t.Fatal(err)
		}
		if err := sw.AddPort(uint32(201+2*l), b); err != nil {
			t.Fatal(err)
		}
	}
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(sw, 0).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cp, err := controlplane.Dial(ctx, ln.Addr().String(), controlplane.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	if err := cp.SetPipeline(ctx, nil, 1); err != nil {
		t.Fatal(err)
	}
	fabric := &controlplane.Fabric{
		PortSwitch: map[uint32]uint8{1: 0, 10: 0, 200: 0, 201: 1, 202: 1, 203: 2, 2: 2},
		Routes: []controlplane.Route{
			{From: 0, To: 1, Hops: []controlplane.Hop{{Switch: 0, In: 1, Out: 200}, {Switch: 1, In: 201, Out: 202}, {Switch: 2, In: 203, Out: 2}}},
			{From: 1, To: 0, Hops: []controlplane.Hop{{Switch: 2, In: 2, Out: 203}, {Switch: 1, In: 202, Out: 201}, {Switch: 0, In: 200, Out: 1}}},
		},
		Observed: map[string]uint8{"f": 1},
	}
	conns := conn(generator.VerbWrite, 0x111, 100, 0x222, 200)
	conns[0].Flow = "f"
	plan, err := controlplane.Translate(controlplane.Intent{Events: []config.ExpandedEvent{{QP: 0, RelPSN: 1, Iter: 1, Type: config.EventDrop}}},
		conns, controlplane.Ports{
			Hosts: []controlplane.Host{{Name: "requester", Port: 1, MAC: reqMAC, IPs: []netip.Addr{reqIP}},
				{Name: "responder", Port: 2, MAC: rspMAC, IPs: []netip.Addr{rspIP}}},
			Dumpers: []controlplane.Dumper{{Name: "d", Port: 10, MAC: [6]byte{2, 0, 0, 0, 1, 0}, Weight: 1}},
			Fabric:  fabric,
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Install(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if d, err := cp.CheckInstalled(ctx, plan); err != nil || len(d) != 0 {
		t.Fatalf("CheckInstalled after Install = %q, %v; want no differences", d, err)
	}
	for i := range 3 {
		spec := writePkt(roce.PSN(100+i), roce.RCWriteOnly)
		b, err := spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Send(b)
		loop.Run()
	}
	if got := psnsOf(atRsp); got != "100 102" {
		t.Errorf("responder got PSNs %s, want 100 102 (101 dropped at the spine)", got)
	}
	var copies []string
	for _, f := range dump {
		var p roce.Packet
		if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f, 0, &p); err != nil {
			t.Fatal(err)
		}
		m := p.Mirror()
		copies = append(copies, fmt.Sprintf("s%d#%d:%d:%v", m.Switch, m.Seq, p.BTH.PSN(), m.Event))
	}
	if got, want := strings.Join(copies, " "), "s0#1:100:none s1#1:100:none s2#1:100:none s0#2:101:none s1#2:101:drop s0#3:102:none s1#3:102:none s2#2:102:none"; got != want {
		t.Errorf("copies %s, want %s", got, want)
	}
	c, err := cp.ReadCounters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(c.LastSeq), "[3 3 2]"; got != want {
		t.Errorf("LastSeq = %s, want %s", got, want)
	}
	cl := cp.Client()
	exact := func(v ...byte) client.MatchInterface { return &client.ExactMatch{Value: v} }
	if err := cl.ModifyTableEntry(ctx, cl.NewTableEntry("Ingress.fabric_forward", map[string]client.MatchInterface{
		"meta.switch_id": exact(1), "hdr.ethernet.src_addr": exact(reqMAC[:]...), "hdr.ethernet.dst_addr": exact(rspMAC[:]...)},
		cl.NewTableActionDirect("Ingress.forward", [][]byte{{0, 2}}), nil)); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteTableEntry(ctx, cl.NewTableEntry("Ingress.port_switch", map[string]client.MatchInterface{
		"ig_intr_md.ingress_port": exact(0, 203)}, nil, nil)); err != nil {
		t.Fatal(err)
	}
	d, err := cp.CheckInstalled(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Ingress.port_switch: planned entry missing: ig_intr_md.ingress_port=203 → Ingress.set_switch(2)",
		"Ingress.fabric_forward: meta.switch_id=1 hdr.ethernet.src_addr=02:00:00:00:00:01 hdr.ethernet.dst_addr=02:00:00:00:00:02 → Ingress.forward(2), the plan has Ingress.forward(202)",
	}
	if strings.Join(d, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
	if err := cp.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tb := range []string{"Ingress.port_switch", "Ingress.fabric_forward"} {
		if es, err := cl.ReadTableEntryWildcard(ctx, tb); err != nil || len(es) != 0 {
			t.Errorf("%s after Cleanup: %d entries, %v; want none", tb, len(es), err)
		}
	}
}
