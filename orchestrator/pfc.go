package orchestrator

import (
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
	for _, h := range t.Hosts {
		if h.NIC.PFC != nil {
			return true
		}
	}
	if r.fabric != nil {
		for _, w := range r.fabric.watchdogs {
			if w != nil {
				return true
			}
		}
	}
	return t.Switch.PFCWatchdog != nil || len(t.PFCEvents) > 0
}

// queuesOn reports whether the software switch runs its egress queue
// model (injector.PFCConfig) without PFC: for ECN by queue depth
// (switch.ecn: the control plane's Egress.ecn_red entries mark by the
// model's depth), and with more than two hosts, whose traffic shares the
// switch's egress queues (lossy priorities tail-drop at
// injector.LossyQueueBytes).
func (r *Run) queuesOn() bool {
	return r.Test.Switch.ECN != nil || len(r.Test.Hosts) > 2 || r.fabric != nil
}

// nicPFC is host i's software-RNIC PFC configuration (nil: off).
func (r *Run) nicPFC(i int) *softrnic.PFCConfig {
	n := r.Test.Hosts[i].NIC
	if n.PFC == nil {
		return nil
	}
	return &softrnic.PFCConfig{Priorities: n.PFC.PrioritiesMask(), DSCPToPriority: n.DSCPToPriority(), PageSize: n.PFC.PageSize}
}

// switchPFC is the software switch's PFC configuration, which is also its
// egress queue model (nil: off, unless queuesOn): the union of the hosts'
// lossless priorities (none: queues without PFC), the first host's DSCP
// map (the requester's), each port paced at its link's speed (the hosts'
// line rates, the dumpers' 400 Gb/s links), the test's watchdog.
func (r *Run) switchPFC(pl *placement) *injector.PFCConfig {
	if !r.pfcOn() && !r.queuesOn() {
		return nil
	}
	t := r.Test
	c := &injector.PFCConfig{DSCPToPriority: t.Hosts[0].NIC.DSCPToPriority(), PortBps: map[uint32]int64{}}
	for i, h := range t.Hosts {
		if p := h.NIC.PFC; p != nil {
			c.Lossless |= p.PrioritiesMask()
		}
		c.PortBps[pl.hostPorts[i]] = int64(r.Personality[h.Name].LineRateGbps * 1e9)
	}
	for _, p := range pl.dumperPorts {
		c.PortBps[p] = 400e9
	}
	if fb := r.fabric; fb != nil {
		// A switch-to-switch link's two ports run at its speed.
		for _, l := range fb.links {
			for _, p := range l.ports {
				c.PortBps[p] = l.bps(r.lineGbps())
			}
		}
	}
	for port, bps := range c.PortBps {
		if bps <= 0 {
			delete(c.PortBps, port)
		}
	}
	if pl.realTime {
		c.HeadroomBytes = realTimeHeadroomBytes // see realTimeHeadroomBytes
	}
	if fb := r.fabric; fb != nil {
		// Each logical switch's watchdog on its own ports (nil: none).
		c.WatchdogPorts = map[uint32]*injector.PFCWatchdog{}
		for _, h := range fb.hosts {
			c.WatchdogPorts[h.port] = fb.watchdogs[h.sw]
		}
		for _, l := range fb.links {
			for end, p := range l.ports {
				c.WatchdogPorts[p] = fb.watchdogs[l.sw[end]]
			}
		}
		return c
	}
	c.Watchdog = injectorWatchdog(t.Switch.PFCWatchdog)
	return c
}

// injectorWatchdog is a switch's pfc-watchdog as the software switch
// takes it (nil: none).
func injectorWatchdog(w *config.PFCWatchdog) *injector.PFCWatchdog {
	if w == nil {
		return nil
	}
	return &injector.PFCWatchdog{Detection: time.Duration(w.DetectionMs) * time.Millisecond,
		Restoration: time.Duration(w.RestorationMs) * time.Millisecond}
}

// hostPortOf is the switch port of the host named as in pfc-events (the
// parser checked the name).
func (r *Run) hostPortOf(name string) uint32 {
	return r.HostPorts[max(r.Test.HostIndex(name), 0)]
}

// pauseAt returns the pause injections of the test's pfc-events that start
// at start-us (times from the call: the intake, as traffic starts).
func (r *Run) pauseAt() []*luminav1.PauseInjection {
	var out []*luminav1.PauseInjection
	for _, ev := range r.Test.PFCEvents {
		if ev.Type != config.PFCPause || ev.Start != nil {
			continue
		}
		out = append(out, agent.PauseInjectionToProto(r.pauseInjection(ev)))
	}
	return out
}

func (r *Run) pauseInjection(ev config.PFCEvent) injector.PauseInjection {
	return injector.PauseInjection{Port: r.hostPortOf(ev.To), Priority: ev.Priority, Quanta: uint16(ev.Quanta),
		Start: time.Duration(ev.StartUs) * time.Microsecond, Duration: time.Duration(ev.DurationUs) * time.Microsecond,
		Interval: time.Duration(ev.IntervalUs) * time.Microsecond}
}

// pauseOnPacket returns the pause injections that start when the switch
// sees a data packet (pfc-events with start: a QP of its flow), resolved
// against the installed plan: the packet's ingress port, destination QP
// and absolute PSN as the event table keys it.
func (r *Run) pauseOnPacket(p *controlplane.Plan) ([]*luminav1.PauseInjection, error) {
	var out []*luminav1.PauseInjection
	for _, ev := range r.Test.PFCEvents {
		if ev.Type != config.PFCPause || ev.Start == nil {
			continue
		}
		f := r.Test.FlowIndex(ev.Start.Flow)
		if f < 0 || ev.Start.QPN < 0 || ev.Start.QPN >= r.Test.Flows[f].NumQPs {
			return nil, fmt.Errorf("pfc-events: start flow %q qpn %d: no such connection", ev.Start.Flow, ev.Start.QPN)
		}
		q := r.Test.QPOffset(f) + ev.Start.QPN
		if q >= len(p.Conns) || p.Conns[q].Responses {
			return nil, fmt.Errorf("pfc-events: start qpn %d: no such connection", ev.Start.QPN)
		}
		ppm := r.Test.Flows[f].PacketsPerMessage()
		ce := p.Conns[q]
		in := r.pauseInjection(ev)
		in.Trigger = &injector.PauseTrigger{Port: ce.Port, DestQP: ce.DestQP,
			PSN: uint32(ce.IPSN.Add(ev.Start.Msg*ppm + ev.Start.PSN)), Iter: uint16(ev.Start.Iter)}
		out = append(out, agent.PauseInjectionToProto(in))
	}
	return out, nil
}

// stalls returns the rx-stall events of the host named host.
func (r *Run) stalls(host string) []*luminav1.RxStall {
	var out []*luminav1.RxStall
	for _, ev := range r.Test.PFCEvents {
		if ev.Type == config.PFCRxStall && ev.Host == host {
			out = append(out, &luminav1.RxStall{StartNs: int64(ev.StartUs) * 1000, DurationNs: int64(ev.DurationUs) * 1000})
		}
	}
	return out
}
