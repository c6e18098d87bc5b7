package orchestrator

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	"github.com/netlumina/lumina/roce"
)

// tofino is a remote run's BfRt connection to the switch (docs/tofino.md
// §8): the NIC-facing ports' PFC enable, the pauses' packet-generator
// plan, and the ports' PFC counters at the start, which the counters read
// after traffic are taken from.
type tofino struct {
	conn  *grpc.ClientConn
	c     *bfrt.Client
	plan  *bfrt.PausePlan
	ports []uint32
	base  map[uint32]bfrt.PortPFC
}

// bfrtClientID is lumina's BfRt client id (bf_switchd's own tools and
// bfrt_python use 0).
const bfrtClientID = 1

// tofinoSetupTimeout bounds the BfRt set-up before the intake: the dial,
// subscribe and bind, the BfRt info, the PFC writes, the counter baseline
// and the packet generator's set-up writes.
const tofinoSetupTimeout = 30 * time.Second

// tofinoEnableTimeout bounds the apps' enables at the intake.
const tofinoEnableTimeout = 10 * time.Second

// tofinoSetup, a phase before the intake on a Tofino (pl.bfrt), connects
// to the switch's BfRt server, turns PFC on for the hosts' priorities on
// their ports, reads the ports' PFC counters (the baseline the counters
// check takes its counts from), and writes the packet generator's plan
// for the test's pauses (start-us; config refuses the others on remote)
// up to the apps' enables: the pktgen ports, the templates, the apps
// disabled (docs/tofino.md §8). Nothing of it waits for the intake, so
// none of its round trips lands between the intake and the pauses.
func (d *driver) tofinoSetup(ctx context.Context) error {
	run, pl := d.run, d.pl
	if pl.injector != nil || pl.bfrt == "" {
		return nil
	}
	d.progress("tofino: BfRt: bind, PFC enable, counters, packet generator set-up")
	conn, err := grpc.NewClient(pl.bfrt, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("bfrt %s: %w", pl.bfrt, err)
	}
	tf := &tofino{conn: conn, base: map[uint32]bfrt.PortPFC{}}
	d.tofino = tf
	cctx, cancel := context.WithTimeout(ctx, tofinoSetupTimeout)
	defer cancel()
	if tf.c, err = bfrt.Connect(cctx, conn, 0, bfrtClientID, pl.bfrtProgram); err != nil {
		return fmt.Errorf("bfrt %s: %w", pl.bfrt, err)
	}
	var setup []bfrt.Write
	for i, h := range run.Test.Hosts {
		port := pl.hostPorts[i]
		tf.ports = append(tf.ports, port)
		if h.NIC.PFC != nil {
			setup = append(setup, bfrt.PFCEnable(port, h.NIC.PFC.PrioritiesMask()))
		}
	}
	if err := tf.c.Apply(cctx, setup); err != nil {
		return err
	}
	for _, port := range tf.ports {
		if tf.base[port], err = tf.c.ReadPortPFC(cctx, port); err != nil {
			return err
		}
	}
	var pauses []bfrt.Pause
	for _, ev := range run.Test.PFCEvents {
		if ev.Type != config.PFCPause {
			continue
		}
		if ev.Start != nil {
			return fmt.Errorf("pfc-events: %s", config.RemoteStartPause)
		}
		in := run.pauseInjection(ev)
		pauses = append(pauses, bfrt.Pause{Port: in.Port, Switch: run.switchOfPort(in.Port), Priority: in.Priority, Quanta: in.Quanta,
			Start: in.Start, Duration: in.Duration, Interval: in.Interval})
	}
	if len(pauses) == 0 {
		return nil
	}
	plan, err := bfrt.PlanPausesOn(pl.tofinoChip, pl.pktgenPort, pauses)
	if err != nil {
		return err
	}
	tf.plan = plan
	return tf.c.Apply(cctx, plan.Setup)
}

// tofinoPauses, at the intake, enables the apps tofinoSetup wrote: every
// app of a pipe in one WriteRequest (bfrt.Client.WriteBatch), so their
// timers start together, one request and no other round trip after the
// intake.
func (d *driver) tofinoPauses(ctx context.Context) error {
	tf := d.tofino
	if tf == nil || tf.c == nil {
		return fmt.Errorf("bfrt %s: not set up before the intake", d.pl.bfrt)
	}
	if tf.plan == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, tofinoEnableTimeout)
	defer cancel()
	return tf.c.WriteBatch(cctx, tf.plan.Enable)
}

// switchOfPort is the logical switch of a host's port (0 without a
// fabric): the mirror sequence the pause's copies take.
func (r *Run) switchOfPort(port uint32) uint8 {
	if fb := r.fabric; fb != nil {
		for _, h := range fb.hosts {
			if h.port == port {
				return uint8(h.sw)
			}
		}
	}
	return 0
}

// readTofinoPFC reads the hosts' ports' per-priority PFC frame counts
// ($PORT_STAT) since tofinoSetup into the switch's PFC counters.
func (d *driver) readTofinoPFC(ctx context.Context) error {
	tf := d.tofino
	st := &agent.SwitchPFCStatus{Counters: map[uint32][roce.PFCPriorities]injector.PFCCounters{}}
	for _, port := range tf.ports {
		now, err := tf.c.ReadPortPFC(ctx, port)
		if err != nil {
			return err
		}
		var cs [roce.PFCPriorities]injector.PFCCounters
		b := tf.base[port]
		for p := range cs {
			cs[p].TxPause, cs[p].RxPause = now.Tx[p]-b.Tx[p], now.Rx[p]-b.Rx[p]
		}
		st.Counters[port] = cs
	}
	d.run.SwitchPFC = st
	return nil
}

// close disables the pauses' apps (a one-shot app stays enabled after it
// fired) and closes the connection.
func (tf *tofino) close() {
	if tf.c != nil {
		if tf.plan != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			tf.c.DisableApps(ctx, tf.plan)
			cancel()
		}
		tf.c.Close()
	}
	tf.conn.Close()
}
