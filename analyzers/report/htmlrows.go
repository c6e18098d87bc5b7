package report

import (
	"fmt"
	"github.com/netlumina/lumina/roce"
	"slices"
	"strings"

	"github.com/netlumina/lumina/analyzers/events"
	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/model"
)

// RunCheck is one check of a run as report.json lists it (checks): the
// run's own (integrity, switch_state, events_applied, generator) and the
// analyzers'.
type RunCheck struct {
	Name    string
	Verdict model.Verdict
	Detail  string
}

// RunTiming is how far a run's switch timestamps and software clocks may
// be off (report.json's timing, docs/run.md). Zero values are "exact" or
// "not measured".
type RunTiming struct {
	UncertaintyNs int64
	// Frames, LateP50Ns, LateP99Ns, LateMaxNs: how late the software
	// switch's pipeline ran after the frames' arrival; ClampMaxNs the
	// largest amount a timestamp was raised to keep them in order.
	Frames                          uint64
	LateP50Ns, LateP99Ns, LateMaxNs int64
	ClampMaxNs                      int64
	// SentUncertaintyNs is how late the stamp of a PFC frame the switch
	// sent may be (model.Params.SentUncertaintyNs).
	SentUncertaintyNs int64
	// NICTimerLateNs, NICPauseLateNs and NICRxLateNs are how late the
	// software RNICs ran their timers, applied received pauses and handled
	// received frames.
	NICTimerLateNs, NICPauseLateNs, NICRxLateNs int64
	// Slowdown is how many times slower than the wall clock the software
	// RNICs and switch ran (netns-slowdown; 0 or 1: real time).
	Slowdown int64
}

// RunEvent is one configured (expanded) event of a run and whether the
// trace shows it applied (report.json's events).
type RunEvent struct {
	QP, Msg, PSN, RelPSN int
	AbsPSN               uint32
	Iter                 int
	Type, Direction      string
	// Params describes the event's parameters ("delay 100 µs", "2
	// overtakers"); "" when it has none.
	Params  string
	Applied bool
	// TimeNs is the switch timestamp of the affected packet (0: none).
	TimeNs uint64
}

// checkRow is one row of the page's Checks table: a check's verdict, a
// summary of what it counted, and the reason for its verdict.
type checkRow struct {
	Name    string
	Verdict model.Verdict
	Summary string
	Reason  string
}

// runCheckOrder is the order of a run's own checks in the table, before
// the analyzers' (others follow in name order).
var runCheckOrder = []string{CheckIntegrity, CheckSwitchState, CheckEventsApplied, CheckGenerator}

// checkRows returns every check of the page: the integrity check, the
// run's own checks (run may be nil) and every analyzer's check, with a
// reason for each failure.
func checkRows(r *Report, run *RunInfo) []checkRow {
	c := &r.Checks
	rows := []checkRow{}
	if iv := r.IntegrityVerdict(); iv.Verdict != "" {
		rows = append(rows, checkRow{Name: CheckIntegrity, Verdict: iv.Verdict, Reason: iv.Reason})
	}
	// The run's own checks the analysis carries (a run's, or lumina
	// analyze's from the run's record).
	if st := c.SwitchState; st != nil {
		rows = append(rows, checkRow{Name: CheckSwitchState, Verdict: st.Verdict, Reason: st.Reason})
	}
	if ea := c.EventsApplied; ea != nil {
		rows = append(rows, checkRow{Name: CheckEventsApplied, Verdict: ea.Verdict,
			Summary: fmt.Sprintf("%d of %d events applied", ea.Applied, ea.Total), Reason: ea.Reason})
	}
	if g := c.Generator; g != nil {
		rows = append(rows, checkRow{Name: CheckGenerator, Verdict: g.Verdict,
			Summary: fmt.Sprintf("%.4g Gb/s goodput, %d bytes", g.GoodputGbps, g.Bytes), Reason: g.Reason})
	}
	kinds := map[string]int{}
	for _, l := range c.Retransmission.Losses {
		kinds[l.Kind]++
	}
	cnp := fmt.Sprintf("%d CNPs; consistent scopes: %s", c.CNP.Observed, orNone(c.CNP.ConsistentScopes))
	if len(c.CNP.PossibleScopes) > 0 {
		cnp += "; possibly: " + strings.Join(c.CNP.PossibleScopes, ", ")
	}
	ana := []checkRow{
		{CheckGBN, c.GBN.Verdict, plural(len(c.GBN.Violations)+c.GBN.Dropped, "violation", "violations"), gbnReason(&c.GBN)},
		{CheckRetransmission, c.Retransmission.Verdict, fmt.Sprintf("%s (%d fast, %d timeout, %d rnr, %d not retransmitted)",
			plural(len(c.Retransmission.Losses), "loss", "losses"), kinds["fast"], kinds["timeout"], kinds["rnr"], kinds["none"]), c.Retransmission.Reason},
		{CheckTimeout, c.Timeout.Verdict, plural(len(c.Timeout.Timeouts), "timeout episode", "timeout episodes"), c.Timeout.Reason},
		{CheckCNP, c.CNP.Verdict, cnp, c.CNP.Reason},
		{CheckCounters, c.Counters.Verdict, fmt.Sprintf("%d counters checked, %d mismatches", len(c.Counters.Checked), len(c.Counters.Mismatches)),
			c.Counters.Reason},
	}
	if c.Events.Verdict != "" {
		n := map[roce.Event]int{}
		for _, e := range c.Events.Events {
			n[e.Type]++
		}
		ana = append(ana, checkRow{CheckEvents, c.Events.Verdict, fmt.Sprintf("%s (%d delay, %d reorder, %d duplicate)",
			plural(len(c.Events.Events), "event", "events"), n[roce.EventDelay], n[roce.EventReorder], n[roce.EventDuplicate]), c.Events.Reason})
	}
	if pf := &r.PFC; pf.Verdict != "" {
		storms := 0
		for _, e := range pf.Episodes {
			if e.Storm {
				storms++
			}
		}
		ana = append(ana, checkRow{CheckPFC, pf.Verdict, fmt.Sprintf("%s, %s (%s), %s, %s",
			plural(pf.Frames, "PFC frame", "PFC frames"), plural(len(pf.Episodes)+pf.EpisodesDropped, "episode", "episodes"),
			plural(storms, "storm", "storms"), plural(len(pf.Violations), "violation", "violations"), plural(len(pf.Watchdogs), "watchdog firing", "watchdog firings")), pf.Reason})
	}
	if d := r.PFC.Deadlock; d != nil {
		ana = append(ana, checkRow{CheckDeadlock, d.Verdict, deadlockSummary(d), d.Reason})
	}
	if fl := &r.Flows; fl.Verdict != "" {
		ana = append(ana, checkRow{CheckFlows, fl.Verdict, flowsSummary(fl), fl.Reason})
	}
	if c.RNR.Verdict != "" {
		ana = append(ana, checkRow{CheckRNR, c.RNR.Verdict, RNRSummary(&c.RNR), c.RNR.Reason})
	}
	for i := range ana {
		if ana[i].Reason == NotSelected {
			ana[i].Summary = ""
		}
	}
	if run != nil {
		have := map[string]bool{}
		for _, a := range append(rows, ana...) {
			have[a.Name] = true
		}
		var own []checkRow
		for _, rc := range run.Checks {
			if have[rc.Name] {
				continue
			}
			row := checkRow{Name: rc.Name, Verdict: rc.Verdict, Reason: rc.Detail}
			if g := run.Generator; rc.Name == CheckGenerator && g != nil {
				row.Summary = fmt.Sprintf("%.4g Gb/s goodput, %d bytes", g.GoodputGbps, g.Bytes)
			}
			own = append(own, row)
		}
		rank := func(n string) int {
			if i := slices.Index(runCheckOrder, n); i >= 0 {
				return i
			}
			return len(runCheckOrder)
		}
		slices.SortStableFunc(own, func(a, b checkRow) int {
			if d := rank(a.Name) - rank(b.Name); d != 0 {
				return d
			}
			return strings.Compare(a.Name, b.Name)
		})
		rows = append(rows, own...)
	}
	return append(rows, ana...)
}

// gbnReason is the gbn check's reason: its own, or for a failure without
// one, the violations by rule and the first of them.
func gbnReason(g *gbn.Result) string {
	if g.Reason != "" || g.Verdict != model.Fail {
		return g.Reason
	}
	n := len(g.Violations) + g.Dropped
	if len(g.Violations) == 0 {
		return plural(n, "violation", "violations") + " (none listed)"
	}
	count := map[string]int{}
	var rules []string
	for _, v := range g.Violations {
		if count[v.Rule] == 0 {
			rules = append(rules, v.Rule)
		}
		count[v.Rule]++
	}
	parts := make([]string, len(rules))
	for i, rule := range rules {
		parts[i] = fmt.Sprintf("%s %d", rule, count[rule])
	}
	v := g.Violations[0]
	s := plural(n, "violation", "violations") + " (" + strings.Join(parts, ", ")
	if g.Dropped > 0 {
		s += fmt.Sprintf(", %d more not listed", g.Dropped)
	}
	return s + fmt.Sprintf("); first: conn %d %s %s at PSN %d (PSN − IPSN %d, frame %d): %s", v.Conn, v.Side, v.Rule, v.PSN, v.RelPSN, v.Index, v.Detail)
}

// timingLine says how far the timestamps and software clocks of the run
// (or, without run timing, the analysis's parameters) may be off, and
// what that does to the verdicts.
func timingLine(r *Report, run *RunInfo) string {
	p := &r.Params
	var t RunTiming
	measured := run != nil && run.Timing != nil
	if measured {
		t = *run.Timing
	} else {
		t = RunTiming{UncertaintyNs: p.TimestampUncertaintyNs, NICTimerLateNs: p.TimerLatenessNs, NICPauseLateNs: p.PauseLatenessNs}
		if p.SentUncertaintyNs != nil {
			t.SentUncertaintyNs = *p.SentUncertaintyNs
		}
	}
	var parts []string
	if t.UncertaintyNs == 0 {
		s := "timestamps exact (uncertainty 0 ns"
		if run != nil && run.Testbed != "" {
			s += ", testbed " + run.Testbed
		}
		parts = append(parts, s+")")
	} else {
		parts = append(parts, fmt.Sprintf("timestamp uncertainty ±%s: a measurement within it of a bound is inconclusive", model.FormatMicros(t.UncertaintyNs)))
	}
	if t.Frames > 0 {
		parts = append(parts, fmt.Sprintf("the switch pipeline ran %s / %s / %s (p50 / p99 / max) after arrival over %d frames",
			model.FormatMicros(t.LateP50Ns), model.FormatMicros(t.LateP99Ns), model.FormatMicros(t.LateMaxNs), t.Frames))
	}
	if t.ClampMaxNs > 0 {
		parts = append(parts, fmt.Sprintf("timestamps raised by up to %s to keep them in order", model.FormatMicros(t.ClampMaxNs)))
	}
	if t.SentUncertaintyNs > 0 {
		parts = append(parts, fmt.Sprintf("PFC frames the switch sent stamped up to %s after departure", model.FormatMicros(t.SentUncertaintyNs)))
	}
	if t.NICTimerLateNs > 0 {
		parts = append(parts, fmt.Sprintf("requester RNIC timers up to %s late (allowed above the timeout bound)", model.FormatMicros(t.NICTimerLateNs)))
	}
	if t.NICPauseLateNs > 0 {
		parts = append(parts, fmt.Sprintf("RNICs applied PFC pauses up to %s late (allowed above the reaction bound)", model.FormatMicros(t.NICPauseLateNs)))
	}
	if t.NICRxLateNs > 0 {
		parts = append(parts, fmt.Sprintf("RNICs handled frames up to %s after their arrival (with the switch pipeline's, allowed around the CNP pacing interval)",
			model.FormatMicros(t.NICRxLateNs)))
	}
	if t.Slowdown > 1 {
		parts = append(parts, fmt.Sprintf("the software RNICs and switch ran %d× slower than the wall clock (netns-slowdown): times are on their clock", t.Slowdown))
	}
	src := "from the metadata"
	if measured {
		src = "measured by the run"
	}
	return "Timing (" + src + "): " + strings.Join(parts, "; ") + "."
}

// eventRow is one row of the page's events table (an events.Entry).
type eventRow struct {
	E                          events.Entry
	Measured, Configured, Time string
}

func eventRows(r *Report) []eventRow {
	out := make([]eventRow, 0, len(r.Checks.Events.Events))
	for _, e := range r.Checks.Events.Events {
		row := eventRow{E: e, Time: dur(e.TimeNs - r.Trace.FirstNs)}
		var m, c []string
		if e.HoldNs != nil {
			m = append(m, "hold "+dur(*e.HoldNs))
		}
		if e.Depth != nil {
			m = append(m, fmt.Sprintf("depth %d", *e.Depth))
		}
		if e.Copies != nil {
			m = append(m, fmt.Sprintf("%d copies", *e.Copies))
		}
		if e.DelayNs != nil {
			c = append(c, "delay "+dur(*e.DelayNs))
		}
		if e.Overtakers != nil {
			c = append(c, fmt.Sprintf("%d overtakers", *e.Overtakers))
		}
		if e.MaxHoldNs != nil {
			c = append(c, "max hold "+dur(*e.MaxHoldNs))
		}
		if e.ConfiguredCopies != nil {
			c = append(c, fmt.Sprintf("%d copies", *e.ConfiguredCopies))
		}
		row.Measured, row.Configured = strings.Join(m, ", "), strings.Join(c, ", ")
		if row.Measured == "" {
			row.Measured = "-"
		}
		if row.Configured == "" {
			row.Configured = "-"
		}
		out = append(out, row)
	}
	return out
}

// plural is "1 one" or "n many".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
