package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
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
	return stateRigWith(t, controlplane.Intent{Events: []config.ExpandedEvent{
		{QP: 0, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: config.EventDrop},
		{QP: 0, Msg: 0, PSN: 2, RelPSN: 2, Iter: 1, Type: config.EventECN},
	}})
}

// stateRigWith is stateRig with the plan of intent in.
func stateRigWith(t *testing.T, in controlplane.Intent) (addr string, cp *controlplane.Switch, plan *controlplane.Plan) {
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
	plan, err = controlplane.Translate(in, conn(generator.VerbWrite, 0x111, 100, 0x222, 200), controlplane.Ports{
		Hosts: []controlplane.Host{{Name: "requester", Port: 1, MAC: reqMAC, IPs: []netip.Addr{reqIP}},
			{Name: "responder", Port: 2, MAC: rspMAC, IPs: []netip.Addr{rspIP}}},
		Dumpers: []controlplane.Dumper{{Name: "d", Port: 10, MAC: [6]byte{2, 0, 0, 0, 1, 0}, Weight: 1}},
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

// p4Server serves the software switch's P4Runtime on loopback.
func p4Server(t *testing.T) string {
	t.Helper()
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(injector.New(sim.NewEventLoop(), injector.Config{}), 0).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}

// TestDialElectionID (#38.3): Dial becomes primary after a controller
// with a higher election ID left (the device forgets it), picks an ID
// above a live primary's when it chooses the ID itself, and says clearly
// why it cannot be primary with a configured ID that is too low.
func TestDialElectionID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t.Run("after a stray controller left", func(t *testing.T) {
		addr := p4Server(t)
		stray, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 7})
		if err != nil {
			t.Fatal(err)
		}
		stray.Close()
		var cp *controlplane.Switch
		for cp == nil {
			// The stray's stream may not be gone from the server yet, nor
			// the stream of our previous attempt (ID 1 "already used").
			cp, err = controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 1})
			if err != nil && (ctx.Err() != nil || !errors.Is(err, controlplane.ErrNotPrimary) && !strings.Contains(err.Error(), "already used")) {
				t.Fatalf("Dial(election ID 1) after a controller with 7 left: %v", err)
			}
			if err != nil {
				time.Sleep(time.Millisecond)
			}
		}
		defer cp.Close()
		if err := cp.SetPipeline(ctx, nil, 1); err != nil {
			t.Errorf("SetPipeline as primary: %v", err)
		}
	})
	t.Run("above a live primary", func(t *testing.T) {
		addr := p4Server(t)
		other, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 3})
		if !errors.Is(err, controlplane.ErrNotPrimary) || !strings.Contains(err.Error(), "primary with election ID 7, ours is 3 (configured") {
			t.Errorf("Dial(configured election ID 3) with a primary at 7 = %v, want ErrNotPrimary naming 7, 3 and the configured ID", err)
		}
		cp, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{})
		if err != nil {
			t.Fatalf("Dial(election ID unset) with a primary at 7: %v", err)
		}
		defer cp.Close()
		if got := cp.ElectionID(); got != "8" {
			t.Errorf("ElectionID() = %s, want 8 (one above the primary's)", got)
		}
		if err := cp.SetPipeline(ctx, nil, 1); err != nil {
			t.Errorf("SetPipeline as primary: %v", err)
		}
	})
}

// TestCheckInstalledAllTables (#38.2): every table lumina installed is
// compared, not only the event and connection tables: a forwarding entry
// turned into drop_frame, a mirror slot pointed elsewhere, the mirror
// rewrite's default changed and a clone session deleted are each
// reported, naming the table.
func TestCheckInstalledAllTables(t *testing.T) {
	_, cp, plan := stateRig(t)
	ctx := context.Background()
	c := cp.Client()
	exact := func(v ...byte) client.MatchInterface { return &client.ExactMatch{Value: v} }
	f := plan.Forward[0]
	if err := c.ModifyTableEntry(ctx, c.NewTableEntry("Ingress.l2_forward", map[string]client.MatchInterface{"hdr.ethernet.dst_addr": exact(f.MAC[:]...)},
		c.NewTableActionDirect("Ingress.drop_frame", nil), nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.ModifyTableEntry(ctx, c.NewTableEntry("Ingress.mirror_select", map[string]client.MatchInterface{"meta.wrr_slot": exact(0)},
		c.NewTableActionDirect("Ingress.set_mirror", [][]byte{{0, 9}}), nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.ModifyTableEntry(ctx, c.NewTableEntry("Egress.mirror_rewrite", nil,
		c.NewTableActionDirect("Egress.rewrite_mirror", [][]byte{{0x12, 0xb7}}), nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteUpdate(ctx, &p4v1.Update{Type: p4v1.Update_DELETE, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
		PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
			CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: plan.Sessions[0].ID}}}}}}); err != nil {
		t.Fatal(err)
	}
	d, err := cp.CheckInstalled(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("Ingress.l2_forward: hdr.ethernet.dst_addr=%s → Ingress.drop_frame(), the plan has Ingress.forward(%d)", net.HardwareAddr(f.MAC[:]), f.Port),
		"Ingress.mirror_select: meta.wrr_slot=0 → Ingress.set_mirror(9), the plan has Ingress.set_mirror(1)",
		"Egress.mirror_rewrite: default entry → Egress.rewrite_mirror(4791), the plan has Egress.rewrite_mirror(9741)",
		"clone sessions: planned entry missing: session 1 → port 10 instance 1",
	}
	if strings.Join(d, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckInstalledECNRed: a plan with switch.ecn installs its ecn_red
// entries on the software target, which reads them back equal to the
// plan; an entry changed, one deleted and one added are each reported;
// Cleanup removes them all.
func TestCheckInstalledECNRed(t *testing.T) {
	in := controlplane.Intent{ECN: &config.ECN{Priorities: []int{3}, KminKB: 100, KmaxKB: 400, Pmax: 0.2},
		DSCPToPriority: (&config.NIC{}).DSCPToPriority()}
	_, cp, plan := stateRigWith(t, in)
	ctx := context.Background()
	if len(plan.ECNRed) != 8 {
		t.Fatalf("plan.ECNRed = %v, want 8 entries (DSCP 24..31)", plan.ECNRed)
	}
	if d, err := cp.CheckInstalled(ctx, plan); err != nil || len(d) != 0 {
		t.Fatalf("CheckInstalled after Install = %q, %v; want no differences", d, err)
	}
	c := cp.Client()
	red := func(dscp byte, kmin, kmax, mask uint64) *p4v1.TableEntry {
		return c.NewTableEntry("Egress.ecn_red", map[string]client.MatchInterface{"hdr.ipv4.dscp": &client.ExactMatch{Value: []byte{dscp}}},
			c.NewTableActionDirect("Egress.set_red", [][]byte{{byte(kmin >> 16), byte(kmin >> 8), byte(kmin)},
				{byte(kmax >> 16), byte(kmax >> 8), byte(kmax)}, {byte(mask >> 24), byte(mask >> 16), byte(mask >> 8), byte(mask)}}), nil)
	}
	if err := c.ModifyTableEntry(ctx, red(24, 1280, 5120, 0x7fff)); err != nil {
		t.Fatal(err)
	}
	gone := c.NewTableEntry("Egress.ecn_red", map[string]client.MatchInterface{"hdr.ipv4.dscp": &client.ExactMatch{Value: []byte{31}}}, nil, nil)
	if err := c.DeleteTableEntry(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := c.InsertTableEntry(ctx, red(0, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	d, err := cp.CheckInstalled(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Egress.ecn_red: entry not in the plan: hdr.ipv4.dscp=0 → Egress.set_red(1, 2, 3)",
		"Egress.ecn_red: hdr.ipv4.dscp=24 → Egress.set_red(1280, 5120, 32767), the plan has Egress.set_red(1280, 5120, 16383)",
		"Egress.ecn_red: planned entry missing: hdr.ipv4.dscp=31 → Egress.set_red(1280, 5120, 16383)",
	}
	if strings.Join(d, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
	if err := cp.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if es, err := c.ReadTableEntryWildcard(ctx, "Egress.ecn_red"); err != nil || len(es) != 0 {
		t.Errorf("ecn_red after Cleanup: %d entries, %v; want none", len(es), err)
	}
}
