package report

import (
	"fmt"
	"html/template"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/netlumina/lumina/analyzers/flows"
)

// maxFlowSeries bounds the flows drawn in the rate plot (the JSON report
// has them all).
const maxFlowSeries = 32

// flowsSummary is the flows check's one-line summary.
func flowsSummary(f *flows.Result) string {
	s := plural(len(f.Flows), "flow", "flows")
	for _, g := range f.Groups {
		s += fmt.Sprintf("; to %s Jain %.3f", g.To, g.Jain)
	}
	if n := len(f.Victims); n > 0 {
		s += "; " + plural(n, "victim", "victims")
	}
	return s
}

// textFlows writes the flows section: per flow rate, fairness and
// convergence per bottleneck, queue depth per port, victims.
func textFlows(w func(string, ...any), f *flows.Result) {
	w("flows (%d bins of %s):\n", f.Bins, dur(f.BinNs))
	capped(w, len(f.Flows), "  ... %d more flows\n", func(i int) {
		x := f.Flows[i]
		w("  flow %s %s -> %s: %d bytes in %d packets, %.3f Gb/s over %s, %d CNPs", x.Name, x.From, x.To, x.Bytes, x.Packets,
			x.GoodputGbps, dur(x.LastNs-x.FirstNs), x.CNPs)
		if x.SenderRateCuts != nil {
			w(", sender rate cuts %d", *x.SenderRateCuts)
		}
		if x.Victim {
			w(", VICTIM")
		}
		w("\n")
	})
	for _, g := range f.Groups {
		w("  bottleneck %s: flows %s; ", hostOnPort(g.To, g.Port), strings.Join(g.Flows, ", "))
		switch {
		case g.Converged:
			w("converged %s after the last flow started (steps of %s); Jain %.4f over", dur(*g.ConvergeNs), dur(g.StepNs), g.Jain)
		case len(g.MeanGbps) > 0:
			w("not converged; Jain %.4f over", g.Jain)
		default:
			w("not compared")
		}
		for _, r := range g.MeanGbps {
			w(" %.3f", r)
		}
		if len(g.MeanGbps) > 0 {
			w(" Gb/s")
		}
		w("; queue max %d B, p99 %d B", g.MaxDepth, g.P99Depth)
		if g.Note != "" {
			w(" (%s)", g.Note)
		}
		w("\n")
	}
	if !f.DepthRecorded {
		w("  queue depth: every copy carried 0 (an empty queue all along, or a switch without a queue model: two hosts without PFC or ECN)\n")
	} else {
		capped(w, len(f.Ports), "  ... %d more ports\n", func(i int) {
			p := f.Ports[i]
			mark := ""
			if p.Host == f.Bottleneck {
				mark = " (bottleneck)"
			}
			w("  queue to %s%s: max %d B, p99 %d B over %d packets\n", hostOnPort(p.Host, p.Port), mark, p.MaxDepth, p.P99Depth, p.Samples)
		})
	}
	capped(w, len(f.Victims), "  ... %d more victims\n", func(i int) {
		v := f.Victims[i]
		w("  victim %s: %s paused on port %d prio %d (%s from episode %d, %s) while its queue to %s stayed at most %d B; congested: %s, %d B, by %s",
			v.Flow, v.Host, v.Port, v.Priority, plural(v.Episodes, "episode", "episodes"), v.Episode, dur(v.PausedNs), v.Dest, v.DestMaxDepth,
			hostOnPort(v.Congested, v.CongestedPort), v.CongestedMaxDepth, strings.Join(v.CongestingFlows, ", "))
		if v.Origin != "" {
			w("; origin %s", v.Origin)
		}
		w("\n")
	})
	capped(w, len(f.Hops), "  ... %d more hops\n", func(i int) {
		h := f.Hops[i]
		w("  hop %s %s %s -> %s: %d samples, min %d ns, median %d ns, p99 %d ns, max %d ns\n", h.Flow, h.Direction, h.From, h.To,
			h.Samples, h.MinNs, h.MedianNs, h.P99Ns, h.MaxNs)
	})
	capped(w, len(f.HopStops), "  ... %d more hop stops\n", func(i int) {
		s := f.HopStops[i]
		w("  hop stop: connection %d %s %s -> %s: %s\n", s.Conn, s.Direction, s.From, s.To, s.Detail)
	})
	for _, n := range f.Notes {
		w("  note: %s\n", n)
	}
}

// flowsPlots draws the per-flow rates and the queue depth of each port
// with a recorded depth over time.
func flowsPlots(f *flows.Result) (rates, depth template.HTML, err error) {
	if f.Verdict == "" || f.Bins == 0 {
		return "", "", nil
	}
	x := func(k int) float64 { return float64(int64(k)*f.BinNs) / 1e3 }
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Goodput per flow (bins of %s)", dur(f.BinNs))
	p.X.Label.Text = "time since the first RoCE packet (µs)"
	p.Y.Label.Text = "Gb/s"
	p.Legend.Top = true
	for i, fl := range f.Flows {
		if i == maxFlowSeries {
			break
		}
		xy := make(plotter.XYs, len(fl.RateGbps))
		for k, v := range fl.RateGbps {
			xy[k] = plotter.XY{X: x(k), Y: v}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return "", "", err
		}
		l.Color = plotColor(i)
		p.Add(l)
		p.Legend.Add(fl.Name, l)
	}
	if rates, err = svgOf(p); err != nil || !f.DepthRecorded {
		return rates, "", err
	}
	q := plot.New()
	q.Title.Text = "Egress queue depth per port (greatest per bin)"
	q.X.Label.Text = p.X.Label.Text
	q.Y.Label.Text = "KiB"
	q.Legend.Top = true
	for i, pt := range f.Ports {
		if i == maxFlowSeries {
			break
		}
		if pt.MaxDepth == 0 {
			continue
		}
		xy := make(plotter.XYs, len(pt.DepthBytes))
		for k, v := range pt.DepthBytes {
			xy[k] = plotter.XY{X: x(k), Y: float64(v) / 1024}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return "", "", err
		}
		l.Color = plotColor(i)
		q.Add(l)
		name := pt.Host
		if name == f.Bottleneck {
			name += " (bottleneck)"
		}
		q.Legend.Add(name, l)
	}
	depth, err = svgOf(q)
	return rates, depth, err
}

// hostOnPort names a host and its switch port, if known (not 0).
func hostOnPort(host string, port uint16) string {
	if port == 0 {
		return host
	}
	return fmt.Sprintf("%s (port %d)", host, port)
}
