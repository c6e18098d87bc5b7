package report

import (
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
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
		// One entry per path (chains along the same ports to the same
		// root), with how many chains took it, the first one's times, and
		// every victim of its chains.
		var paths []string
		byPath := map[string][]int{}
		for i, c := range f.Chains {
			if byPath[c.Path] == nil {
				paths = append(paths, c.Path)
			}
			byPath[c.Path] = append(byPath[c.Path], i)
		}
		capped(w, len(paths), "  ... %d more chain paths\n", func(i int) {
			idx := byPath[paths[i]]
			c := f.Chains[idx[0]]
			w("  chain (%s): %s\n", plural(len(idx), "time", "times"), c.Text)
			w("    root: %s: %s\n", c.Root.Kind, c.Root.Detail)
			var st []string
			for _, s := range c.Stalled {
				st = append(st, fmt.Sprintf("%s (%s port %d, %s)", s.Flow, s.Switch, s.Egress, plural(s.Hops, "hop", "hops")))
			}
			if len(st) > 0 {
				w("    stalled: %s\n", strings.Join(st, ", "))
			}
			seen := map[string]bool{}
			for _, k := range idx {
				for _, v := range f.Chains[k].Victims {
					if key := fmt.Sprint(v); !seen[key] {
						seen[key] = true
						w("    victim: %s, %s from the root (waited at %s port %d; never crosses %s port %d)\n",
							v.Flow, plural(v.Hops, "hop", "hops"), v.Switch, v.Egress, c.Root.Switch, c.Root.Port)
					}
				}
			}
		})
		for _, s := range f.Storms {
			who := s.Root.Host
			if who == "" {
				who = fmt.Sprintf("%s port %d", s.Root.Switch, s.Root.Port)
			}
			w("  storm: %s %s from %s for %s: spread %s, %s, switches %s",
				s.Root.Kind, who, dur(s.StartNs), dur(s.DurationNs), plural(s.Hops, "hop", "hops"), plural(len(s.Reached), "port", "ports"), strings.Join(s.Switches, ", "))
			if len(s.Hosts) > 0 {
				w(", hosts paused %s", strings.Join(s.Hosts, ", "))
			}
			w("\n")
			for _, r := range s.Reached {
				w("    %s port %d (%s) paused from %s, %s\n", r.Switch, r.Port, r.Paused, dur(r.FirstNs), plural(r.Hops, "hop", "hops"))
			}
			w("    %s\n", s.Stopped)
		}
	}
	if d := pf.Deadlock; d != nil {
		w("deadlock: %s: %s\n", d.Verdict, d.Reason)
	}
}

// Fabric drawing bounds and geometry (report.html).
const (
	fabricPanels   = 4   // small multiples: the fabric at 4 instants
	fabricMaxHosts = 64  // hosts drawn (beyond: their switch says how many)
	fabricPanelW   = 520 // panel width, px
	fabricRowH     = 90  // vertical distance between switch levels
)

// fabricLink is one cable of the drawing: two switches, or a switch and
// a host; PausedNs is when a pause first crossed it (either way), -1
// never.
type fabricLink struct {
	a, b     string // switch names; b "" for a host link
	host     string
	pausedNs int64
	// congestedNs: from when a chain's root was congestion at one of its
	// ports (the first such chain's last hop), -1 never.
	congestedNs int64
	ports       [2]uint16
}

// fabricSVG draws the fabric as small multiples: the switches (boxes) by
// level (the switches with hosts at the bottom, then by hops from them),
// their hosts (circles) below them, and the links, red once a pause first
// crossed them, at up to fabricPanels instants (quantiles of the links'
// first pauses), one SVG each. Nil without a fabric. Names are escaped;
// no script.
func fabricSVGs(f *pfc.FabricResult) []template.HTML {
	if f == nil || len(f.Switches) == 0 {
		return nil
	}
	level := map[string]int{}
	adj := map[string][]string{}
	hosts := map[string][]string{}
	var links []fabricLink
	nHosts := 0
	first := func(ts ...*int64) int64 {
		out := int64(-1)
		for _, t := range ts {
			if t != nil && (out < 0 || *t < out) {
				out = *t
			}
		}
		return out
	}
	byPort := map[uint16]pfc.FabricPortPause{}
	for _, p := range f.Ports {
		byPort[p.Port] = p
	}
	for _, p := range f.Ports {
		switch {
		case p.Host != "":
			if nHosts < fabricMaxHosts {
				hosts[p.Switch] = append(hosts[p.Switch], p.Host)
				links = append(links, fabricLink{a: p.Switch, host: p.Host, pausedNs: first(p.FirstSentNs, p.FirstReceivedNs),
					congestedNs: -1, ports: [2]uint16{p.Port, p.Port}})
			}
			nHosts++
			level[p.Switch] = 0
		case p.PeerSwitch != "" && p.Port < p.PeerPort:
			q := byPort[p.PeerPort]
			adj[p.Switch] = append(adj[p.Switch], p.PeerSwitch)
			adj[p.PeerSwitch] = append(adj[p.PeerSwitch], p.Switch)
			links = append(links, fabricLink{a: p.Switch, b: p.PeerSwitch, pausedNs: first(p.FirstSentNs, q.FirstSentNs),
				congestedNs: -1, ports: [2]uint16{p.Port, p.PeerPort}})
		}
	}
	for _, c := range f.Chains {
		if c.Root.Kind != pfc.RootCongestion || len(c.Hops) == 0 {
			continue
		}
		at := c.Hops[len(c.Hops)-1].StartNs
		for i := range links {
			if l := &links[i]; (l.ports[0] == c.Root.Port || l.ports[1] == c.Root.Port) && (l.congestedNs < 0 || at < l.congestedNs) {
				l.congestedNs = at
			}
		}
	}
	// Levels: breadth first from the switches with hosts.
	queue := make([]string, 0, len(f.Switches))
	for _, s := range f.Switches {
		if _, ok := level[s]; ok {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range adj[s] {
			if _, ok := level[n]; !ok {
				level[n] = level[s] + 1
				queue = append(queue, n)
			}
		}
	}
	top := 0
	for _, s := range f.Switches {
		if _, ok := level[s]; !ok {
			level[s] = 0
		}
		top = max(top, level[s])
	}
	rows := make([][]string, top+1)
	for _, s := range f.Switches {
		rows[level[s]] = append(rows[level[s]], s)
	}
	type pt struct{ x, y float64 }
	pos := map[string]pt{}
	hpos := map[string]pt{}
	var hostOrder []string
	h := float64((top+1)*fabricRowH + 110)
	for l, row := range rows {
		for i, s := range row {
			x := float64(fabricPanelW) * (float64(i) + 0.5) / float64(len(row))
			pos[s] = pt{x, 60 + float64(top-l)*fabricRowH} // room above for links bowed along a row
			hs := hosts[s]
			for j, n := range hs {
				span := float64(fabricPanelW) / float64(len(row)) * 0.8
				dx := 0.0
				if len(hs) > 1 {
					dx = span * (float64(j)/float64(len(hs)-1) - 0.5)
				}
				hpos[n] = pt{x + dx, pos[s].y + 60}
				hostOrder = append(hostOrder, n)
			}
		}
	}
	// The instants: the first-pause times of the links, at quantiles.
	var times []int64
	for _, l := range links {
		if l.pausedNs >= 0 {
			times = append(times, l.pausedNs)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	var at []int64
	for k := range fabricPanels {
		if len(times) == 0 {
			break
		}
		t := times[max(0, (k+1)*len(times)/fabricPanels-1)]
		if len(at) == 0 || at[len(at)-1] != t {
			at = append(at, t)
		}
	}
	if len(at) == 0 {
		at = []int64{-1}
	}
	var out []template.HTML
	esc := html.EscapeString
	for _, t := range at {
		var b strings.Builder
		fmt.Fprintf(&b, `<svg class="fabric" xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f">`, fabricPanelW, h, fabricPanelW, h)
		n := 0
		for _, l := range links {
			if l.pausedNs >= 0 && l.pausedNs <= t {
				n++
			}
		}
		title := "no pause"
		if t >= 0 {
			title = fmt.Sprintf("at %s: %d of %d links paused", model.FormatMicros(t), n, len(links))
		}
		fmt.Fprintf(&b, `<text x="4" y="14" font-size="12">%s</text>`, esc(title))
		for _, l := range links {
			c, w, dash := "#bbb", 1.5, ""
			switch {
			case l.pausedNs >= 0 && l.pausedNs <= t:
				c, w = "#d22", 3
			case l.congestedNs >= 0 && l.congestedNs <= t:
				c, w, dash = "#e90", 3, ` stroke-dasharray="6 3"`
			}
			p := pos[l.a]
			if l.host != "" {
				q := hpos[l.host]
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s><title>%s</title></line>`,
					p.x, p.y, q.x, q.y, c, w, dash, esc(l.a+" – "+l.host+pausedTitle(l.pausedNs)+congestedTitle(l.congestedNs)))
				continue
			}
			q := pos[l.b]
			// Same level: bow upward so links along a row stay apart.
			mx, my := (p.x+q.x)/2, (p.y+q.y)/2
			if p.y == q.y {
				my -= 18 + 0.12*absf(q.x-p.x)
			}
			fmt.Fprintf(&b, `<path d="M%.1f %.1f Q%.1f %.1f %.1f %.1f" fill="none" stroke="%s" stroke-width="%g"%s><title>%s</title></path>`,
				p.x, p.y, mx, my, q.x, q.y, c, w, dash, esc(l.a+" – "+l.b+pausedTitle(l.pausedNs)+congestedTitle(l.congestedNs)))
		}
		for _, s := range f.Switches {
			p := pos[s]
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="64" height="22" rx="3" fill="#eef" stroke="#335"/><text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`,
				p.x-32, p.y-11, p.x, p.y+4, esc(s))
		}
		for _, n := range hostOrder {
			p := hpos[n]
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="7" fill="#fff" stroke="#335"/><text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`,
				p.x, p.y, p.x, p.y+20, esc(n))
		}
		if nHosts > fabricMaxHosts {
			fmt.Fprintf(&b, `<text x="4" y="%.0f" font-size="11">%d more hosts not drawn</text>`, h-6, nHosts-fabricMaxHosts)
		}
		b.WriteString(`</svg>`)
		out = append(out, template.HTML(b.String())) // built here, every name escaped
	}
	return out
}

func pausedTitle(ns int64) string {
	if ns < 0 {
		return ": never paused"
	}
	return ": first paused at " + model.FormatMicros(ns)
}

func congestedTitle(ns int64) string {
	if ns < 0 {
		return ""
	}
	return "; congested (a chain's root) from " + model.FormatMicros(ns)
}

func absf(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
