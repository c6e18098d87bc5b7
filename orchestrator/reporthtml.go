package orchestrator

import (
	"fmt"
	"maps"
	"slices"
	"time"

	areport "github.com/netlumina/lumina/analyzers/report"
)

// htmlDetails gives report.html what the run knows beyond the analysis:
// every check of report.json, the generator's goodput, the timing and the
// configured events (docs/report.md).
func (r *Report) htmlDetails(info *areport.RunInfo) {
	for _, n := range slices.Sorted(maps.Keys(r.Checks)) {
		c := r.Checks[n]
		info.Checks = append(info.Checks, areport.RunCheck{Name: n, Verdict: c.Verdict, Detail: c.Detail})
	}
	if r.Generator != nil {
		info.Generator = r.generatorNumbers()
	}
	if t := r.Timing; t != nil {
		info.Timing = &areport.RunTiming{UncertaintyNs: t.UncertaintyNs, Frames: t.Frames, LateP50Ns: t.LateP50Ns, LateP99Ns: t.LateP99Ns,
			LateMaxNs: t.LateMaxNs, ClampMaxNs: t.ClampMaxNs, SentUncertaintyNs: t.SentUncertaintyNs, NICTimerLateNs: t.NICTimerLateNs,
			NICPauseLateNs: t.NICPauseLateNs, NICRxLateNs: t.NICRxLateNs, Slowdown: t.Slowdown}
	}
	for _, e := range r.Events {
		info.Events = append(info.Events, areport.RunEvent{QP: e.QP, Msg: e.Msg, PSN: e.PSN, RelPSN: e.RelPSN, AbsPSN: e.AbsPSN, Iter: e.Iter,
			Type: e.Type.String(), Direction: e.Direction, Params: eventParams(e), Applied: e.Applied, TimeNs: e.TimeNs})
	}
}

// eventParams describes an event's parameters, as the test file gives
// them ("" when it has none).
func eventParams(e EventReport) string {
	var s string
	add := func(format string, args ...any) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf(format, args...)
	}
	if e.DelayNs > 0 {
		add("delay %v", time.Duration(e.DelayNs))
	}
	if e.Overtakers > 0 {
		add("%d overtakers", e.Overtakers)
	}
	if e.MaxHoldNs > 0 {
		add("max hold %v", time.Duration(e.MaxHoldNs))
	}
	if e.Copies > 0 {
		add("%d copies", e.Copies)
	}
	return s
}

// generatorNumbers is the generator's outcome (r.Generator, not nil) as
// the generator check and report.html show it, without a verdict.
func (r *Report) generatorNumbers() *areport.Generator {
	g := r.Generator
	return &areport.Generator{GoodputGbps: g.GoodputGbps, Bytes: g.Bytes, DurationNs: g.DurationNs, Verified: g.Verified,
		Errors: g.Errors, Stopped: g.Stopped}
}
