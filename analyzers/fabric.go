package analyzers

// The per-connection checks in a fabric of switches (model.Fabric).
//
// Every switch mirrors every packet, so a packet crossing three switches
// has three copies. The per-connection checks (gbn, retransmission,
// timeout, cnp, events, counters, the flows' goodput, the graphs) read one
// copy of each packet: the one at the flow's observed switch
// (Fabric.Observe: where its events are applied, by default the switch of
// the flow's from-host). Routes are symmetric, so that switch sees both
// directions: every packet the requester sends before the rest of the
// fabric, every response just before the requester gets it, as the switch
// of a one-switch test does. The copies at the other switches feed the
// fabric analyses (pfc, per-hop latency) only.
//
// What the observed switch cannot see: a packet dropped (a drop event, or
// a buffer drop, which shows as copies that stop matching between two
// switches; copies that never reach the next switch, as in a PFC
// deadlock, count too) or CE-marked at another switch. The checks that depend on
// losses (gbn, retransmission, timeout, cnp, counters) or on marks (cnp,
// counters) then say inconclusive, naming the switch and the count,
// instead of a false verdict.

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/roce"
)

// fabricView routes each copy of a fabric's trace to the analyses that
// read it, and counts what the observed switches cannot see.
type fabricView struct {
	names []string
	// obs is each connection's observed switch id.
	obs []uint8
	// pairObs is the observed switch of packets without a connection, by
	// their (unordered) address pair: the first connection's between the
	// two addresses.
	pairObs map[[2]netip.Addr]uint8
	// drops and ce count, per connection and switch, the copies tagged
	// drop and the CE-marked data packets.
	drops, ce [][roce.MaxSwitches]int64
	hops      *flows.HopTracker
	// noRoute is, per connection, whether the run record gives no route
	// for one of its directions (a record that does not name its hosts):
	// what other switches did to its packets is unknown.
	noRoute []bool
}

// newFabricView returns the view of meta.Fabric for the connections of t,
// or nil without a fabric.
func newFabricView(meta model.Meta, t *model.Table) *fabricView {
	f := meta.Fabric
	if f == nil {
		return nil
	}
	id := f.SwitchIDs()
	for n, i := range id {
		if i >= roce.MaxSwitches { // no copy names it
			delete(id, n)
		}
	}
	host := map[netip.Addr]string{}
	for _, h := range meta.Params.Hosts {
		for _, ip := range h.IPs {
			host[ip] = h.Name
		}
	}
	// The hosts cabled to the fabric, as the pfc analysis resolves them:
	// the two-host form has no Params.Hosts, its routes name requester and
	// responder, whose addresses are the connections' sides.
	for _, h := range fabricHosts(meta, t) {
		for _, ip := range h.IPs {
			if _, ok := host[ip]; !ok {
				host[ip] = h.Name
			}
		}
	}
	route := func(from, to netip.Addr) []uint8 {
		a, b := host[from], host[to]
		for _, r := range f.Routes {
			if r.From == a && r.To == b {
				var sw []uint8
				for _, h := range r.Hops {
					s, ok := id[h.Switch]
					if !ok {
						return nil
					}
					sw = append(sw, uint8(s))
				}
				return sw
			}
		}
		return nil
	}
	v := &fabricView{names: f.Switches, pairObs: map[[2]netip.Addr]uint8{}, hops: flows.NewHopTracker(f.Switches),
		drops: make([][roce.MaxSwitches]int64, len(t.Conns)), ce: make([][roce.MaxSwitches]int64, len(t.Conns))}
	for i, c := range t.Conns {
		toRsp, toReq := route(c.Requester.IP, c.Responder.IP), route(c.Responder.IP, c.Requester.IP)
		// The observed switch: the flow's, else the first of its route
		// (the requester's switch), else switch 0.
		oi, ok := id[f.Observe[c.Flow]]
		o := uint8(oi)
		if !ok && len(toRsp) > 0 {
			o = toRsp[0]
		}
		v.obs = append(v.obs, o)
		k := pairKey(c.Requester.IP, c.Responder.IP)
		if _, ok := v.pairObs[k]; !ok {
			v.pairObs[k] = o
		}
		v.noRoute = append(v.noRoute, len(toRsp) == 0 || len(toReq) == 0)
		v.hops.SetRoute(i, c.Flow, model.ToResponder, toRsp)
		v.hops.SetRoute(i, c.Flow, model.ToRequester, toReq)
	}
	return v
}

func pairKey(a, b netip.Addr) [2]netip.Addr {
	if b.Less(a) {
		a, b = b, a
	}
	return [2]netip.Addr{a, b}
}

// copyOf takes every RoCE copy of the trace, in order, and reports
// whether it is the copy the per-connection checks read: one at its
// connection's observed switch (for a packet without a connection, at the
// observed switch of a connection between its two addresses; none if
// there is none).
func (v *fabricView) copyOf(p *model.Pkt) bool {
	v.hops.Observe(p)
	if p.Conn < 0 {
		o, ok := v.pairObs[pairKey(p.SrcIP.Addr(), p.DstIP.Addr())]
		return ok && p.Switch == o
	}
	sw := p.Switch % roce.MaxSwitches
	if p.Event == roce.EventDrop {
		v.drops[p.Conn][sw]++
	}
	if p.CE {
		v.ce[p.Conn][sw]++
	}
	return p.Switch == v.obs[p.Conn]
}

func (v *fabricView) name(sw uint8) string {
	if int(sw) < len(v.names) && v.names[sw] != "" {
		return v.names[sw]
	}
	return fmt.Sprintf("switch %d", sw)
}

// maxFabricReasons bounds the connections an inconclusive reason names.
const maxFabricReasons = 3

// finish adds the per-hop latencies to the flows analysis and makes the
// checks that the observed switches cannot decide inconclusive.
func (v *fabricView) finish(r *report.Report, t *model.Table) {
	hops, stops := v.hops.Finish()
	if r.Flows.Verdict != "" { // the flows analysis ran (the connections name their flows)
		r.Flows.Hops, r.Flows.HopStops = hops, stops
	}
	var lost, marked []string
	for c := range t.Conns {
		label := fmt.Sprintf("connection %d", c)
		if f := t.Conns[c].Flow; f != "" {
			label += " (flow " + f + ")"
		}
		o := v.obs[c]
		var why []string
		for sw := range uint8(roce.MaxSwitches) {
			if n := v.drops[c][sw]; sw != o && n > 0 {
				why = append(why, fmt.Sprintf("%s: %s dropped at %s, which the observed switch %s does not see", label, packets(n), v.name(sw), v.name(o)))
			}
		}
		if s, ok := v.hops.Lost(c); ok {
			what := "a packet lost between them"
			if s.Index < 0 { // at the end of the trace
				what = "packets lost or still queued between them"
			}
			why = append(why, fmt.Sprintf("%s: copies stop matching between %s and %s (%s): %s", label, s.From, s.To, s.Detail, what))
		}
		if v.noRoute[c] {
			why = append(why, fmt.Sprintf("%s: the run record gives no route between %v and %v, so what other switches than %s did to its packets is unknown",
				label, t.Conns[c].Requester.IP, t.Conns[c].Responder.IP, v.name(o)))
		}
		lost = append(lost, why...)
		// Marks only add up along a path: the switch with the most CE
		// copies is the last one that marked.
		best, bestN := o, v.ce[c][o]
		for sw := range uint8(roce.MaxSwitches) {
			if v.ce[c][sw] > bestN {
				best, bestN = sw, v.ce[c][sw]
			}
		}
		if d := bestN - v.ce[c][o]; d > 0 {
			marked = append(marked, fmt.Sprintf("%s: %s CE-marked at %s (%d there, %d at the observed switch %s)",
				label, packets(d), v.name(best), bestN, v.ce[c][o], v.name(o)))
		}
	}
	reason := func(list []string) string {
		if len(list) > maxFabricReasons {
			return strings.Join(list[:maxFabricReasons], "; ") + fmt.Sprintf("; and %d more", len(list)-maxFabricReasons)
		}
		return strings.Join(list, "; ")
	}
	c := &r.Checks
	if len(lost) > 0 {
		why := reason(lost)
		inconclusive(&c.GBN.Verdict, &c.GBN.Reason, why)
		inconclusive(&c.Retransmission.Verdict, &c.Retransmission.Reason, why)
		inconclusive(&c.Timeout.Verdict, &c.Timeout.Reason, why)
		inconclusive(&c.CNP.Verdict, &c.CNP.Reason, why)
		inconclusive(&c.Counters.Verdict, &c.Counters.Reason, why)
	}
	if len(marked) > 0 {
		why := reason(marked)
		inconclusive(&c.CNP.Verdict, &c.CNP.Reason, why)
		inconclusive(&c.Counters.Verdict, &c.Counters.Reason, why)
	}
}

// inconclusive makes a pass or fail verdict inconclusive, the reason
// first (a skip stays a skip: nothing was decided).
func inconclusive(v *model.Verdict, reason *string, why string) {
	if *v != model.Pass && *v != model.Fail && *v != model.Inconclusive {
		return
	}
	old := *reason
	*v = model.Inconclusive
	if old == "" {
		*reason = why
		return
	}
	*reason = why + "; " + old
}

// packets returns "1 packet" or "N packets".
func packets(n int64) string {
	if n == 1 {
		return "1 packet"
	}
	return fmt.Sprintf("%d packets", n)
}
