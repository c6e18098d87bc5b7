package report

import (
	"fmt"
	"strings"

	"github.com/netlumina/lumina/analyzers/pfc"
)

// deadlockSummary is the deadlock check's one-line summary.
func deadlockSummary(d *pfc.Deadlock) string {
	if d.WindowEndNs == 0 {
		return ""
	}
	s := fmt.Sprintf("window %s .. %s", dur(d.WindowStartNs), dur(d.WindowEndNs))
	if len(d.Cycle) > 0 {
		s += fmt.Sprintf(", a cycle of %d ports", len(d.Cycle))
	}
	return s
}

// textFabric writes the fabric section of a run with several switches:
// the causality chains with their stalled flows and victims, the storms
// and how far they spread, and the deadlock verdict.
func textFabric(w func(string, ...any), pf *pfc.Result) {
	f := pf.Fabric
	if f != nil {
		w("fabric (%d switches: %s):\n", len(f.Switches), strings.Join(f.Switches, ", "))
		capped(w, len(f.Chains), "  ... %d more chains\n", func(i int) {
			c := f.Chains[i]
			w("  chain: %s\n", c.Text)
			w("    root: %s: %s\n", c.Root.Kind, c.Root.Detail)
			var st []string
			for _, s := range c.Stalled {
				st = append(st, fmt.Sprintf("%s (%s port %d, %d hops)", s.Flow, s.Switch, s.Egress, s.Hops))
			}
			if len(st) > 0 {
				w("    stalled: %s\n", strings.Join(st, ", "))
			}
			for _, v := range c.Victims {
				w("    victim: %s, %d hops from the root (waited at %s port %d; never crosses %s port %d)\n",
					v.Flow, v.Hops, v.Switch, v.Egress, c.Root.Switch, c.Root.Port)
			}
		})
		for _, s := range f.Storms {
			who := s.Root.Host
			if who == "" {
				who = fmt.Sprintf("%s port %d", s.Root.Switch, s.Root.Port)
			}
			w("  storm: %s %s from %s for %s: spread %d hops, %d ports, switches %s",
				s.Root.Kind, who, dur(s.StartNs), dur(s.DurationNs), s.Hops, len(s.Reached), strings.Join(s.Switches, ", "))
			if len(s.Hosts) > 0 {
				w(", hosts paused %s", strings.Join(s.Hosts, ", "))
			}
			w("\n")
			for _, r := range s.Reached {
				w("    %s port %d (%s) paused from %s, %d hops\n", r.Switch, r.Port, r.Paused, dur(r.FirstNs), r.Hops)
			}
			w("    %s\n", s.Stopped)
		}
	}
	if d := pf.Deadlock; d != nil {
		w("deadlock: %s: %s\n", d.Verdict, d.Reason)
	}
}
