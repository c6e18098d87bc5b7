package analyzers

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/netlumina/lumina/analyzers/events"
	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/rnr"
)

// runRecord is the part of a lumina run's report.json that holds the
// run's own verdicts: analysis.checks (every check, since
// lumina.report/v1 put them in one place), else, from older runs, the
// checks map, switch_state, generator and events.
type runRecord struct {
	Valid       bool                `json:"valid"`
	Error       string              `json:"error"`
	Checks      map[string]oldCheck `json:"checks"`
	SwitchState *report.SwitchState `json:"switch_state"`
	Generator   *struct {
		GoodputGbps float64  `json:"goodput_gbps"`
		DurationNs  int64    `json:"duration_ns"`
		Bytes       int64    `json:"bytes"`
		Errors      []string `json:"errors"`
		Verified    bool     `json:"responder_verified"`
		Stopped     string   `json:"stopped"`
	} `json:"generator"`
	Events []struct {
		QP        int    `json:"qp"`
		Msg       int    `json:"msg"`
		PSN       int    `json:"psn"`
		AbsPSN    uint32 `json:"abs_psn"`
		Iter      int    `json:"iter"`
		Type      string `json:"type"`
		Direction string `json:"direction"`
		Applied   bool   `json:"applied"`
	} `json:"events"`
	Analysis *struct {
		Checks struct {
			SwitchState   *report.SwitchState   `json:"switch_state"`
			EventsApplied *report.EventsApplied `json:"events_applied"`
			Generator     *report.Generator     `json:"generator"`
		} `json:"checks"`
	} `json:"analysis"`
}

type oldCheck struct {
	Verdict model.Verdict `json:"verdict"`
	Detail  string        `json:"detail"`
}

// ApplyRunRecord adds to r, the analysis of run directory dir's trace,
// the verdicts only the run could give, from its record (report.json):
// switch_state, events_applied and generator (a trace alone cannot show
// what the switch's tables and counters held, which events were
// installed, or whether the responder's memory held the data). A failed
// switch_state makes r invalid, as it made the run; a check the record
// lacks (the run did not evaluate it) is skip, saying so. r.Inputs says
// which verdicts came from the record, and when the run's integrity
// verdict differs from the one r computed from the trace.
func ApplyRunRecord(r *report.Report, dir string) error {
	path := filepath.Join(dir, "report.json")
	b, err := model.ReadRecordFile(path) // without its per-message lists
	if err != nil {
		return err
	}
	var rec runRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var a struct {
		SwitchState   *report.SwitchState
		EventsApplied *report.EventsApplied
		Generator     *report.Generator
	}
	if rec.Analysis != nil {
		c := rec.Analysis.Checks
		a.SwitchState, a.EventsApplied, a.Generator = c.SwitchState, c.EventsApplied, c.Generator
	}
	if a.SwitchState == nil {
		a.SwitchState = rec.oldSwitchState()
	}
	if a.EventsApplied == nil {
		a.EventsApplied = rec.oldEventsApplied()
	}
	if a.Generator == nil {
		a.Generator = rec.oldGenerator()
	}
	var got, lacks []string
	notRecorded := func(name string) string {
		lacks = append(lacks, name)
		why := "not in the run's record " + path
		if !rec.Valid {
			why += ": the run was invalid and did not evaluate it"
		}
		return why
	}
	c := &r.Checks
	if c.SwitchState = a.SwitchState; c.SwitchState == nil {
		c.SwitchState = &report.SwitchState{Verdict: model.Skip, Reason: notRecorded(report.CheckSwitchState)}
	} else {
		got = append(got, report.CheckSwitchState)
	}
	if c.EventsApplied = a.EventsApplied; c.EventsApplied == nil {
		c.EventsApplied = &report.EventsApplied{Verdict: model.Skip, Reason: notRecorded(report.CheckEventsApplied)}
	} else {
		got = append(got, report.CheckEventsApplied)
	}
	if c.Generator = a.Generator; c.Generator == nil {
		c.Generator = &report.Generator{Verdict: model.Skip, Reason: notRecorded(report.CheckGenerator)}
	} else {
		got = append(got, report.CheckGenerator)
	}
	if len(got) > 0 {
		r.Inputs = append(r.Inputs, "run record "+path+": "+strings.Join(got, ", ")+" as the run recorded them (a trace alone cannot give them)")
	}
	if len(lacks) > 0 {
		r.Inputs = append(r.Inputs, "run record "+path+" lacks "+strings.Join(lacks, ", ")+": not reproduced")
	}
	if c, ok := rec.Checks[report.CheckIntegrity]; ok && c.Verdict != "" && c.Verdict != r.IntegrityVerdict().Verdict {
		r.Inputs = append(r.Inputs, fmt.Sprintf("the run recorded integrity %s (%s); this analysis of its trace gives %s",
			c.Verdict, c.Detail, r.IntegrityVerdict().Verdict))
	}
	if rec.Error != "" {
		r.Inputs = append(r.Inputs, "the run did not complete: "+rec.Error)
		r.Valid = false
	}
	if c.SwitchState.Verdict.Failed() && r.Valid {
		r.Valid = false
		for _, n := range report.AllChecks {
			c.Skip(n, "the run is invalid: the switch did not do only what the test asked (switch_state)")
		}
		c.Events, r.PFC, r.Flows, c.RNR = events.Result{}, pfc.Result{}, flows.Result{}, rnr.Result{} // as the run: no analyzer ran
	}
	return nil
}

// oldSwitchState reads switch_state from a report.json written before
// analysis.checks held it.
func (rec *runRecord) oldSwitchState() *report.SwitchState {
	ss := rec.SwitchState
	if ss == nil {
		if c, ok := rec.Checks[report.CheckSwitchState]; ok {
			ss = &report.SwitchState{Verdict: c.Verdict}
		} else {
			return nil
		}
	}
	if c, ok := rec.Checks[report.CheckSwitchState]; ok && ss.Reason == "" {
		ss.Reason = c.Detail
	}
	return ss
}

// oldEventsApplied reads events_applied from a report.json written before
// analysis.checks held it: its verdict from checks, its numbers from
// events.
func (rec *runRecord) oldEventsApplied() *report.EventsApplied {
	c, ok := rec.Checks[report.CheckEventsApplied]
	if !ok {
		return nil
	}
	ea := &report.EventsApplied{Verdict: c.Verdict, Reason: c.Detail, Total: len(rec.Events)}
	for _, e := range rec.Events {
		if e.Applied {
			ea.Applied++
			continue
		}
		d := ""
		if e.Direction != "" {
			d = " " + e.Direction
		}
		if len(ea.Missing) < 20 {
			ea.Missing = append(ea.Missing, fmt.Sprintf("qp %d msg %d psn %d (abs %#x) iter %d %s%s", e.QP, e.Msg, e.PSN, e.AbsPSN, e.Iter, e.Type, d))
		}
	}
	return ea
}

// oldGenerator reads generator from a report.json written before
// analysis.checks held it: its verdict from checks, its numbers from
// generator.
func (rec *runRecord) oldGenerator() *report.Generator {
	c, ok := rec.Checks[report.CheckGenerator]
	if !ok {
		return nil
	}
	g := &report.Generator{Verdict: c.Verdict, Reason: c.Detail}
	if x := rec.Generator; x != nil {
		g.GoodputGbps, g.DurationNs, g.Bytes, g.Errors, g.Verified, g.Stopped = x.GoodputGbps, x.DurationNs, x.Bytes, x.Errors, x.Verified, x.Stopped
	}
	return g
}
