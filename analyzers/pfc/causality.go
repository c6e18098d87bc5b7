package pfc

import (
	"fmt"
	"sort"

	"github.com/netlumina/lumina/analyzers/model"
)

// causality builds the chain of every episode the switch sent (up to
// MaxCauses).
func (a *Analyzer) causality() []Cause {
	var out []Cause
	for _, e := range a.eps {
		if e.Direction != DirSent {
			continue
		}
		if len(out) == MaxCauses {
			break
		}
		out = append(out, a.chain(e))
	}
	return out
}

func (a *Analyzer) where(port uint16, host string) string {
	if host == "" {
		return fmt.Sprintf("port %d", port)
	}
	return fmt.Sprintf("port %d (%s)", port, host)
}

// chain follows a sent episode back to its origin: the switch paused the
// host on port a because its ingress buffer (a, p) crossed XOFF, because
// the egress toward port b was paused by pauses received from b's host
// (the received episode covering the start, with the most traffic from a's
// host to b's), which paused because... until a host paused without being
// paused itself.
func (a *Analyzer) chain(s *Episode) Cause {
	c := Cause{Episode: s.ID}
	seen := map[int]bool{}
	for {
		seen[s.ID] = true
		hop := Hop{Episode: s.ID, Direction: DirSent, Port: s.Port, Host: s.Host, Priority: s.Priority, StartNs: s.StartNs, EndNs: s.EndNs, Flows: s.Flows}
		if s.Injected {
			hop.Why = fmt.Sprintf("the test injected a pause to %s, priority %d", a.where(s.Port, s.Host), s.Priority)
			c.Chain = append(c.Chain, hop)
			c.Origin = Origin{Kind: OriginInjected, Port: s.Port, Host: s.Host, Priority: s.Priority, Episode: s.ID,
				Detail: "pause injected by the test (pfc-events)"}
			return c
		}
		hop.Why = fmt.Sprintf("the switch paused %s: ingress buffer (port %d, priority %d) above XOFF", a.where(s.Port, s.Host), s.Port, s.Priority)
		c.Chain = append(c.Chain, hop)
		r := a.findReceived(s)
		if r == nil {
			c.Origin = Origin{Kind: OriginCongestion, Port: s.Port, Host: s.Host, Priority: s.Priority, Episode: s.ID,
				Detail: "no pause received on another port at the time: egress contention in the switch"}
			if port, host, ok := a.egress(s); ok {
				c.Origin.EgressPort, c.Origin.EgressHost = &port, host
				c.Origin.Detail += fmt.Sprintf(" (the queue toward %s held %s's packets)", a.where(port, host), a.where(s.Port, s.Host))
			}
			return c
		}
		c.Chain = append(c.Chain, Hop{Episode: r.ID, Direction: DirReceived, Port: r.Port, Host: r.Host, Priority: r.Priority,
			StartNs: r.StartNs, EndNs: r.EndNs, Flows: r.Flows,
			Why: fmt.Sprintf("egress toward %s, priority %d, paused by the pauses received from it", a.where(r.Port, r.Host), r.Priority)})
		s2 := a.findEpisode(DirSent, r.Port, r.Priority, r.StartNs, -1)
		if s2 == nil {
			c.Origin = Origin{Kind: r.Kind, Port: r.Port, Host: r.Host, Priority: r.Priority, Episode: r.ID,
				Detail: fmt.Sprintf("%s paused without being paused (%s, %s, ended by %s)", a.where(r.Port, r.Host), r.Kind,
					model.FormatMicros(r.DurationNs), r.End)}
			return c
		}
		if seen[s2.ID] {
			c.Origin = Origin{Kind: OriginCycle, Port: r.Port, Host: r.Host, Priority: r.Priority, Episode: s2.ID,
				Detail: "the chain returns to an episode already in it: a cyclic buffer dependency (deadlock)"}
			return c
		}
		s = s2
	}
}

// findEpisode returns the episode of direction dir on (port, prio)
// covering t, nil if none; exclude skips a port (-1: none).
func (a *Analyzer) findEpisode(dir string, port uint16, prio int, t int64, exclude int) *Episode {
	x := a.pp[uint32(port)<<3|uint32(prio)]
	if x == nil || int(port) == exclude {
		return nil
	}
	d := &x.rx
	if dir == DirSent {
		d = &x.tx
	}
	eps := d.episodes
	k := sort.Search(len(eps), func(i int) bool { return a.eps[eps[i]].StartNs > t }) - 1
	if k < 0 {
		return nil
	}
	if e := a.eps[eps[k]]; e.EndNs >= t {
		return e
	}
	return nil
}

// findReceived returns the received episode on another port, same
// priority, covering s's start, with the most packets from s's host
// (at least one).
func (a *Analyzer) findReceived(s *Episode) *Episode {
	var best *Episode
	bestScore := -1
	for _, x := range a.order {
		if x.prio != s.Priority || x.port == s.Port {
			continue
		}
		r := a.findEpisode(DirReceived, x.port, x.prio, s.StartNs, int(s.Port))
		if r == nil {
			continue
		}
		score := 0
		for _, f := range r.Flows {
			if a.flowFrom(f, s.Port) {
				score += f.During
			}
		}
		if score == 0 {
			// s's host sent nothing to that host during its pause: its
			// pause did not fill s's ingress buffer (another host's, on a
			// switch with many).
			continue
		}
		if score > bestScore || score == bestScore && r.StartNs < best.StartNs {
			best, bestScore = r, score
		}
	}
	return best
}

// flowFrom reports whether flow f is sent by the host on port.
func (a *Analyzer) flowFrom(f Flow, port uint16) bool {
	if a.table == nil || f.idx < 0 || f.idx >= len(a.table.Conns) {
		return false
	}
	c := a.table.Conns[f.idx]
	src := c.Requester.IP
	if f.Direction == model.ToRequester.String() {
		src = c.Responder.IP
	}
	h, ok := a.hostOf[src]
	return ok && a.hosts[h].Port == port
}

// egress returns the port (and host) of the egress queue the packets of
// sent episode s's host waited in: of its flows' destinations, the one
// whose queue its last packet before s found deepest; without depths,
// the one its flows sent most packets to during s (each flow counting
// one more); ties go to the lower port.
func (a *Analyzer) egress(s *Episode) (uint16, string, bool) {
	if a.table == nil {
		return 0, "", false
	}
	type weight struct{ depth, n int64 }
	w := map[int]*weight{} // host → weight
	for _, f := range s.Flows {
		if f.idx < 0 || f.idx >= len(a.table.Conns) {
			continue
		}
		c := a.table.Conns[f.idx]
		dst := c.Responder.IP
		if f.Direction == model.ToRequester.String() {
			dst = c.Requester.IP
		}
		h, ok := a.hostOf[dst]
		if !ok {
			continue
		}
		if w[h] == nil {
			w[h] = &weight{}
		}
		w[h].depth = max(w[h].depth, f.depth)
		w[h].n += int64(f.During) + 1
	}
	best := -1
	for h, x := range w {
		if best < 0 {
			best = h
			continue
		}
		b := w[best]
		if x.depth > b.depth || x.depth == b.depth && (x.n > b.n || x.n == b.n && a.hosts[h].Port < a.hosts[best].Port) {
			best = h
		}
	}
	if best < 0 {
		return 0, "", false
	}
	return a.hosts[best].Port, a.hosts[best].Name, true
}
