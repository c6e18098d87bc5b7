package controlplane_test

import (
	"context"
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
	"github.com/netlumina/lumina/sim"
)

// stateRig is the software switch's P4Runtime server on loopback with
// lumina connected as primary and a plan installed.
func stateRig(t *testing.T) (addr string, cp *controlplane.Switch, plan *controlplane.Plan) {
	t.Helper()
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(injector.New(sim.NewEventLoop(), injector.Config{}), 0).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cp, err = controlplane.Dial(ctx, ln.Addr().String(), controlplane.DialOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	if err := cp.SetPipeline(ctx, nil, 1); err != nil {
		t.Fatal(err)
	}
	in := controlplane.Intent{Events: []config.ExpandedEvent{
		{QP: 0, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: config.EventDrop},
		{QP: 0, Msg: 0, PSN: 2, RelPSN: 2, Iter: 1, Type: config.EventECN},
	}}
	plan, err = controlplane.Translate(in, conn(generator.VerbWrite, 0x111, 100, 0x222, 200), controlplane.Ports{
		Requester: controlplane.Host{Port: 1, MAC: reqMAC, IPs: []netip.Addr{reqIP}},
		Responder: controlplane.Host{Port: 2, MAC: rspMAC, IPs: []netip.Addr{rspIP}},
		Dumpers:   []controlplane.Dumper{{Name: "d", Port: 10, MAC: [6]byte{2, 0, 0, 0, 1, 0}, Weight: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Install(ctx, plan); err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), cp, plan
}

// TestCheckInstalled: the event and connection tables read back equal
// the plan after Install; an entry someone else added, one removed and
// one whose action changed are each reported.
func TestCheckInstalled(t *testing.T) {
	_, cp, plan := stateRig(t)
	ctx := context.Background()
	d, err := cp.CheckInstalled(ctx, plan)
	if err != nil || len(d) != 0 {
		t.Fatalf("CheckInstalled after Install = %q, %v; want no differences", d, err)
	}
	c := cp.Client()
	exact := func(v ...byte) client.MatchInterface { return &client.ExactMatch{Value: v} }
	extra := c.NewTableEntry("Ingress.event_table", map[string]client.MatchInterface{
		"ig_intr_md.ingress_port": exact(0, 1), "hdr.bth.dest_qp": exact(0, 2, 0x22), "hdr.bth.psn": exact(0, 0, 103), "meta.iter": exact(0, 1)},
		c.NewTableActionDirect("Ingress.drop_event", nil), nil)
	if err := c.InsertTableEntry(ctx, extra); err != nil {
		t.Fatal(err)
	}
	changed := c.NewTableEntry("Ingress.event_table", map[string]client.MatchInterface{
		"ig_intr_md.ingress_port": exact(0, 1), "hdr.bth.dest_qp": exact(0, 2, 0x22), "hdr.bth.psn": exact(0, 0, 102), "meta.iter": exact(0, 1)},
		c.NewTableActionDirect("Ingress.drop_event", nil), nil)
	if err := c.ModifyTableEntry(ctx, changed); err != nil {
		t.Fatal(err)
	}
	gone := c.NewTableEntry("Ingress.conn_lookup", map[string]client.MatchInterface{
		"ig_intr_md.ingress_port": exact(0, 1), "hdr.bth.dest_qp": exact(0, 2, 0x22)}, nil, nil)
	if err := c.DeleteTableEntry(ctx, gone); err != nil {
		t.Fatal(err)
	}
	d, err = cp.CheckInstalled(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Ingress.conn_lookup: planned entry missing: ig_intr_md.ingress_port=1 hdr.bth.dest_qp=0x222 → Ingress.set_conn(0, 0, 0)",
		"Ingress.event_table: entry not in the plan: ig_intr_md.ingress_port=1 hdr.bth.dest_qp=0x222 hdr.bth.psn=0x67 meta.iter=1 → Ingress.drop_event()",
		"Ingress.event_table: ig_intr_md.ingress_port=1 hdr.bth.dest_qp=0x222 hdr.bth.psn=0x66 meta.iter=1 → Ingress.drop_event(), the plan has Ingress.mark_ecn()",
	}
	if strings.Join(d, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
}

// TestLostPrimary: a controller with a higher election ID takes over;
// the Switch records that it lost primary, with both election IDs, even
// after it is primary again. SyncArbitration makes it visible at once:
// no waiting on the stream's reader, however loaded the machine.
func TestLostPrimary(t *testing.T) {
	addr, cp, _ := stateRig(t)
	if l := cp.LostPrimary(); len(l) != 0 {
		t.Fatalf("LostPrimary before any other controller = %q", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	other, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 50})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := cp.SyncArbitration(ctx); err != nil {
		t.Fatal(err)
	}
	l := cp.LostPrimary()
	if len(l) != 1 || !strings.Contains(l[0], "election ID 50, ours 1") {
		t.Errorf("LostPrimary = %q, want one loss naming election IDs 50 and 1", l)
	}
	if l := other.LostPrimary(); len(l) != 0 {
		t.Errorf("the other controller closed itself, LostPrimary = %q", l)
	}
}
