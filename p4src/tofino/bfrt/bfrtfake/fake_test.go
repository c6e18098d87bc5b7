package bfrtfake_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	"github.com/netlumina/lumina/p4src/tofino/bfrt/bfrtfake"
	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

const hostPort = 144 // pipe 1 on Tofino 1

var switchMAC = [6]byte{2, 0, 0, 0, 0, 0xee}

type sent struct {
	at int64
	b  []byte
}

type port struct {
	loop *sim.EventLoop
	sent []sent
}

func (p *port) Send(f []byte)            { p.sent = append(p.sent, sent{p.loop.Now(), append([]byte(nil), f...)}) }
func (p *port) SetReceiver(func([]byte)) {}
func (p *port) Name() string             { return "host" }

func newSwitch(t *testing.T) (*sim.EventLoop, *injector.Switch, *port) {
	loop := sim.NewEventLoop()
	sw := injector.New(loop, injector.Config{Seed: 1, PFC: &injector.PFCConfig{Lossless: 1 << 3, MAC: switchMAC}})
	p := &port{loop: loop}
	if err := sw.AddPort(hostPort, p); err != nil {
		t.Fatal(err)
	}
	return loop, sw, p
}

// TestFakeDrivesSoftwareSwitch: the pause of examples/pause-reaction.yaml
// (priority 3, 65535 quanta, from 20 µs for 200 µs every 20 µs), written
// as the packet generator's plan to the fake BfRt server, which hands the
// enabled app to the software switch, makes the switch send the same
// frames at the same times as the software switch's own pause injection
// (SchedulePauses, the sim testbed's path); $PORT_STAT then reads the
// switch's TxPause count.
func TestFakeDrivesSoftwareSwitch(t *testing.T) {
	for _, chip := range []bfrt.Chip{bfrt.Tofino1, bfrt.Tofino2} {
		t.Run(fmt.Sprintf("tofino%d", chip), func(t *testing.T) { fakeDrivesSoftwareSwitch(t, chip) })
	}
}

func fakeDrivesSoftwareSwitch(t *testing.T, chip bfrt.Chip) {
	ev := injector.PauseInjection{Port: hostPort, Priority: 3, Quanta: 65535, Start: 20 * time.Microsecond,
		Duration: 200 * time.Microsecond, Interval: 20 * time.Microsecond}

	// Reference: the software switch's own injection.
	loopA, swA, pA := newSwitch(t)
	loopA.RunUntil(50_000)
	if err := swA.SchedulePauses(ev); err != nil {
		t.Fatal(err)
	}
	loopA.RunUntil(10_000_000)

	// Through BfRt: the plan's writes to the fake, whose apps drive the
	// switch.
	loopB, swB, pB := newSwitch(t)
	loopB.RunUntil(50_000)
	srv := &bfrtfake.Server{Chip: chip,
		OnPause: func(app bfrtfake.PauseApp) error {
			port, prio, quanta, start, dur, iv, err := app.Injection()
			if err != nil {
				return err
			}
			return swB.SchedulePauses(injector.PauseInjection{Port: port, Priority: prio, Quanta: quanta, Start: start, Duration: dur, Interval: iv})
		},
		Counters: func(p uint32) (c bfrt.PortPFC) {
			for prio, pc := range swB.PFCCounters()[p] {
				c.Tx[prio], c.Rx[prio] = pc.TxPause, pc.RxPause
			}
			return c
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, done, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	plan, err := bfrt.PlanPauses(chip, []bfrt.Pause{{Port: ev.Port, Priority: ev.Priority, Quanta: ev.Quanta,
		Start: ev.Start, Duration: ev.Duration, Interval: ev.Interval, SrcMAC: switchMAC}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, plan.Setup, plan.Enable); err != nil {
		t.Fatal(err)
	}
	loopB.RunUntil(10_000_000)

	if len(pA.sent) != 10 || len(pB.sent) != len(pA.sent) {
		t.Fatalf("frames: %d through BfRt, %d by the software switch, want 10", len(pB.sent), len(pA.sent))
	}
	var tmpl [roce.PFCPriorities]uint16
	tmpl[3] = 65535
	want := roce.BuildPFC(nil, switchMAC, 1<<3, tmpl)
	for i := range pA.sent {
		a, b := pA.sent[i], pB.sent[i]
		if a.at != b.at || a.at != int64(50_000+20_000+i*20_000) || !bytes.Equal(a.b, b.b) || !bytes.Equal(b.b, want) {
			t.Errorf("frame %d: through BfRt at %d % x; software switch at %d % x", i, b.at, b.b, a.at, a.b)
		}
	}
	pc, err := c.ReadPortPFC(ctx, hostPort)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Tx[3] != 10 || pc.Tx[0] != 0 {
		t.Errorf("$PORT_STAT tx %v, want 10 on priority 3", pc.Tx)
	}
	// A one-shot app stays enabled after it fired: disabling is the clean-up.
	if err := c.DisableApps(ctx, plan); err != nil {
		t.Error(err)
	}
}

// TestFakeRefusesWrongOrder: an app enabled before its pipe's pktgen port
// is refused, naming the table, the app and the port.
func TestFakeRefusesWrongOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &bfrtfake.Server{Chip: bfrt.Tofino1}
	c, done, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	plan, err := bfrt.PlanPauses(bfrt.Tofino1, []bfrt.Pause{{Port: hostPort, Priority: 3, Quanta: 1}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Apply(ctx, plan.Setup[1:], plan.Enable) // without the port_cfg write
	if err == nil || !strings.Contains(err.Error(), "tf1.pktgen.app_cfg app 0 of pipe 1 enabled before pktgen on port 196") {
		t.Errorf("enable before the port: %v", err)
	}
}

// TestFakeRefusedWriteKeepsNothing: a refused write leaves the entry as it
// was. A pkt_buffer entry of size 62 given 10 bytes is refused and not
// stored, so an app then enabled on offset 0 is refused for want of a
// template (it used to slice past the stored 10 bytes and panic the
// server); an app write refused for one bad field stores none of the
// others.
func TestFakeRefusedWriteKeepsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &bfrtfake.Server{Chip: bfrt.Tofino1}
	c, done, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	defer done()
	pipe := uint32(0)
	if err := c.Write(ctx, pb.Update_MODIFY, bfrt.Entry{Table: "pktgen.port_cfg", Keys: []bfrt.KV{{Name: "dev_port", Val: uint64(68)}},
		Data: []bfrt.KV{{Name: "pktgen_enable", Val: true}}}); err != nil {
		t.Fatal(err)
	}
	err = c.Write(ctx, pb.Update_MODIFY, bfrt.Entry{Table: "pktgen.pkt_buffer", Pipe: &pipe,
		Keys: []bfrt.KV{{Name: "pkt_buffer_offset", Val: uint64(0)}, {Name: "pkt_buffer_size", Val: uint64(62)}}, Data: []bfrt.KV{{Name: "buffer", Val: make([]byte, 10)}}})
	if err == nil || !strings.Contains(err.Error(), "offset 0 size 62 with 10 bytes") {
		t.Fatalf("short buffer: %v", err)
	}
	if es, err := c.Read(ctx, bfrt.Entry{Table: "pktgen.pkt_buffer", Pipe: &pipe}, 10); err != nil || len(es) != 0 {
		t.Fatalf("buffer entries after the refused write: %v %v, want none", es, err)
	}
	// One request of two updates, the second refused (offset 8 is not
	// 16-byte aligned): the first, valid on its own, is not stored either.
	buf := func(off uint64) bfrt.Write {
		return bfrt.Write{Type: pb.Update_MODIFY, Entry: bfrt.Entry{Table: "pktgen.pkt_buffer", Pipe: &pipe,
			Keys: []bfrt.KV{{Name: "pkt_buffer_offset", Val: off}, {Name: "pkt_buffer_size", Val: uint64(62)}}, Data: []bfrt.KV{{Name: "buffer", Val: make([]byte, 62)}}}}
	}
	if err := c.WriteBatch(ctx, []bfrt.Write{buf(0), buf(8)}); err == nil || !strings.Contains(err.Error(), "offset 8 size 62") {
		t.Fatalf("batch with a misaligned buffer: %v", err)
	}
	if es, err := c.Read(ctx, bfrt.Entry{Table: "pktgen.pkt_buffer", Pipe: &pipe}, 10); err != nil || len(es) != 0 {
		t.Fatalf("buffer entries after the refused batch: %v %v, want none", es, err)
	}
	app := func(enable bool, extra ...bfrt.KV) error {
		return c.Write(ctx, pb.Update_MODIFY, bfrt.Entry{Table: "pktgen.app_cfg", Pipe: &pipe, Keys: []bfrt.KV{{Name: "app_id", Val: uint64(0)}},
			Action: "trigger_timer_one_shot", Data: append([]bfrt.KV{{Name: "timer_nanosec", Val: uint64(1000)}, {Name: "pkt_len", Val: uint64(62)},
				{Name: "pkt_buffer_offset", Val: uint64(0)}, {Name: "pipe_local_source_port", Val: uint64(68)}, {Name: "batch_count_cfg", Val: uint64(0)}, {Name: "packets_per_batch_cfg", Val: uint64(0)},
				{Name: "ibg", Val: uint64(1000)}, {Name: "ipg", Val: uint64(0)}, {Name: "app_enable", Val: enable}}, extra...)})
	}
	if err := app(true); err == nil || !strings.Contains(err.Error(), "no template at offset 0 (62 bytes) in pipe 0's buffer") {
		t.Fatalf("app on the refused buffer: %v", err)
	}
	// The refused enable stored nothing either: the app reads back empty.
	if es, err := c.Read(ctx, bfrt.Entry{Table: "pktgen.app_cfg", Pipe: &pipe, Keys: []bfrt.KV{{Name: "app_id", Val: uint64(0)}}}, 10); err != nil || len(es) != 0 {
		t.Fatalf("app entries after the refused enable: %+v %v, want none", es, err)
	}
}
