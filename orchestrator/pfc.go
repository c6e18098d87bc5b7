package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/orchestrator/agent"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// pfcOn reports whether the test uses PFC: a host NIC with pfc, a switch
// watchdog or pfc-events.
func (r *Run) pfcOn() bool {
	t := r.Test
	return t.Requester.NIC.PFC != nil || t.Responder.NIC.PFC != nil || t.Switch.PFCWatchdog != nil || len(t.Traffic.PFCEvents) > 0
}

// queuesOn reports whether the software switch runs its egress queue
// model (injector.PFCConfig) without PFC: for ECN by queue depth
// (switch.ecn), and with more than two hosts, whose traffic shares the
// switch's egress queues (lossy priorities tail-drop at
// injector.LossyQueueBytes).
func (r *Run) queuesOn() bool {
	return r.Test.Switch.ECN != nil || len(r.Test.Hosts) > 2
}

// switchECN is the software switch's ECN marking by queue depth (nil: off),
// from switch.ecn (thresholds in KiB).
func (r *Run) switchECN() *injector.ECNConfig {
	e := r.Test.Switch.ECN
	if e == nil {
		return nil
	}
	c := &injector.ECNConfig{KminBytes: int64(e.KminKB) << 10, KmaxBytes: int64(e.KmaxKB) << 10, Pmax: e.Pmax}
	for _, p := range e.Priorities {
		c.Priorities |= 1 << p
	}
	return c
}

// nicPFC is a host's software-RNIC PFC configuration (nil: off).
func (r *Run) nicPFC(s Side) *softrnic.PFCConfig {
	n := r.host(s).NIC
	if n.PFC == nil {
		return nil
	}
	return &softrnic.PFCConfig{Priorities: n.PFC.PrioritiesMask(), DSCPToPriority: n.DSCPToPriority(), PageSize: n.PFC.PageSize}
}

// switchPFC is the software switch's PFC configuration, which is also its
// egress queue model (nil: off, unless queuesOn): the union of the hosts'
// lossless priorities (none: queues without PFC), the requester's DSCP
// map, each port paced at its link's speed (the hosts' line rates, the
// dumpers' 400 Gb/s links), the test's watchdog.
func (r *Run) switchPFC(pl *placement) *injector.PFCConfig {
	if !r.pfcOn() && !r.queuesOn() {
		return nil
	}
	t := r.Test
	c := &injector.PFCConfig{DSCPToPriority: t.Requester.NIC.DSCPToPriority(), PortBps: map[uint32]int64{}}
	for _, s := range sides {
		if p := r.host(s).NIC.PFC; p != nil {
			c.Lossless |= p.PrioritiesMask()
		}
	}
	c.PortBps[pl.reqPort] = int64(r.Personality[Requester].LineRateGbps * 1e9)
	c.PortBps[pl.rspPort] = int64(r.Personality[Responder].LineRateGbps * 1e9)
	for _, p := range pl.dumperPorts {
		c.PortBps[p] = 400e9
	}
	for port, bps := range c.PortBps {
		if bps <= 0 {
			delete(c.PortBps, port)
		}
	}
	if pl.realTime {
		c.HeadroomBytes = realTimeHeadroomBytes // see realTimeHeadroomBytes
	}
	if w := t.Switch.PFCWatchdog; w != nil {
		c.Watchdog = &injector.PFCWatchdog{Detection: time.Duration(w.DetectionMs) * time.Millisecond,
			Restoration: time.Duration(w.RestorationMs) * time.Millisecond}
	}
	return c
}

// sidePort is the switch port of a host named as in pfc-events.
func sidePort(pl *placement, name string) uint32 {
	if name == string(Responder) {
		return pl.rspPort
	}
	return pl.reqPort
}

// pauseAt returns the pause injections of the test's pfc-events that start
// at start-us (times from the call: the intake, as traffic starts).
func (r *Run) pauseAt(pl *placement) []*luminav1.PauseInjection {
	var out []*luminav1.PauseInjection
	for _, ev := range r.Test.Traffic.PFCEvents {
		if ev.Type != config.PFCPause || ev.Start != nil {
			continue
		}
		out = append(out, agent.PauseInjectionToProto(pauseInjection(pl, ev)))
	}
	return out
}

func pauseInjection(pl *placement, ev config.PFCEvent) injector.PauseInjection {
	return injector.PauseInjection{Port: sidePort(pl, ev.To), Priority: ev.Priority, Quanta: uint16(ev.Quanta),
		Start: time.Duration(ev.StartUs) * time.Microsecond, Duration: time.Duration(ev.DurationUs) * time.Microsecond,
		Interval: time.Duration(ev.IntervalUs) * time.Microsecond}
}

// pauseOnPacket returns the pause injections that start when the switch
// sees a data packet (pfc-events with start), resolved against the
// installed plan: the packet's ingress port, destination QP and absolute
// PSN as the event table keys it.
func (r *Run) pauseOnPacket(pl *placement, p *controlplane.Plan) ([]*luminav1.PauseInjection, error) {
	var out []*luminav1.PauseInjection
	ppm := r.Test.Traffic.PacketsPerMessage()
	for _, ev := range r.Test.Traffic.PFCEvents {
		if ev.Type != config.PFCPause || ev.Start == nil {
			continue
		}
		if ev.Start.QPN >= len(p.Conns) || p.Conns[ev.Start.QPN].Responses {
			return nil, fmt.Errorf("pfc-events: start qpn %d: no such connection", ev.Start.QPN)
		}
		ce := p.Conns[ev.Start.QPN]
		in := pauseInjection(pl, ev)
		in.Trigger = &injector.PauseTrigger{Port: ce.Port, DestQP: ce.DestQP,
			PSN: uint32(ce.IPSN.Add(ev.Start.Msg*ppm + ev.Start.PSN)), Iter: uint16(ev.Start.Iter)}
		out = append(out, agent.PauseInjectionToProto(in))
	}
	return out, nil
}

// stalls returns the rx-stall events of host s.
func (r *Run) stalls(s Side) []*luminav1.RxStall {
	var out []*luminav1.RxStall
	for _, ev := range r.Test.Traffic.PFCEvents {
		if ev.Type == config.PFCRxStall && ev.Host == string(s) {
			out = append(out, &luminav1.RxStall{StartNs: int64(ev.StartUs) * 1000, DurationNs: int64(ev.DurationUs) * 1000})
		}
	}
	return out
}

// startPFCEvents schedules the NIC stalls just before the requester
// starts: their times count from here (on sim the virtual clock does not
// move before traffic; on netns the requester's set-up, a few ms, comes
// first). Pauses are scheduled at the intake, when the plan is in place
// and traffic starts (the switch mirrors nothing before).
func (r *Run) startPFCEvents(ctx context.Context, pl *placement) error {
	for _, s := range sides {
		st := r.stalls(s)
		if len(st) == 0 {
			continue
		}
		conn := pl.requester
		if s == Responder {
			conn = pl.responder
		}
		if _, err := luminav1.NewGeneratorClient(conn).StallRx(ctx, &luminav1.StallRxRequest{Stalls: st}); err != nil {
			return fmt.Errorf("%s: rx-stall: %w", s, err)
		}
	}
	return nil
}

// readSwitchPFC fetches the software switch's PFC counters and log.
func (r *Run) readSwitchPFC(ctx context.Context, pl *placement) error {
	if pl.injector == nil || !r.pfcOn() && !r.queuesOn() {
		return nil
	}
	m, err := luminav1.NewInjectorClient(pl.injector).PFC(ctx, &luminav1.InjectorPFCRequest{})
	if err != nil {
		return fmt.Errorf("injector PFC: %w", err)
	}
	st, err := agent.InjectorPFCFromProto(m)
	if err != nil {
		return fmt.Errorf("injector PFC: %w", err)
	}
	r.SwitchPFC = st
	return nil
}
