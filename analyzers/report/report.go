package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/netlumina/lumina/analyzers/cnp"
	"github.com/netlumina/lumina/analyzers/counters"
	"github.com/netlumina/lumina/analyzers/events"
	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/rnr"
	"github.com/netlumina/lumina/analyzers/timeout"
	"github.com/netlumina/lumina/internal/safefile"
)

// Check names, in report order.
const (
	CheckGBN            = "gbn"
	CheckRetransmission = "retransmission"
	CheckTimeout        = "timeout"
	CheckCNP            = "cnp"
	CheckCounters       = "counters"
	// CheckEvents names the events section (not in AllChecks: it is not
	// selectable).
	CheckEvents = "events"
	// CheckPFC names the pfc section (not selectable either).
	CheckPFC = "pfc"
	// CheckDeadlock names the pfc analysis's deadlock check of a run with
	// several switches (pfc.Result.Deadlock; not selectable, absent with
	// one switch).
	CheckDeadlock = "deadlock"
	// CheckFlows names the flows analysis's check (not selectable):
	// every flow made progress (package flows).
	CheckFlows = "flows"
	// CheckRNR names the rnr check (package rnr): RNR waits, RNR
	// retries, stalls. Not in AllChecks, so that the reports of runs
	// without an RNR NAK or ODP stay as they were, but selectable by name
	// (see analyzers.Options.Checks).
	CheckRNR = "rnr"
)

// NotSelected is the reason of a check that was not selected.
const NotSelected = "not selected"

// AllChecks lists every check.
var AllChecks = []string{CheckGBN, CheckRetransmission, CheckTimeout, CheckCNP, CheckCounters}

// Report is the outcome of an analysis. It marshals to the documented
// JSON schema; Plots is not part of it. A lumina run's report.json
// (orchestrator.Report) holds one as its analysis, beside what only the
// run knows.
type Report struct {
	// Valid: the integrity check passed or was skipped (a foreign capture);
	// the checks ran.
	Valid       bool               `json:"valid"`
	Trace       TraceInfo          `json:"trace"`
	Integrity   Integrity          `json:"integrity,omitzero"`
	Params      model.Params       `json:"params"`
	Connections []model.Connection `json:"connections"`
	// Inputs names where the metadata came from and what was not used
	// (lumina analyze of a run directory or of a trace in one), e.g.
	// "run record RUN/report.json: switch_state, events_applied,
	// generator".
	Inputs []string `json:"inputs,omitempty"`
	Checks Checks   `json:"checks"`
	// Flows is the flows analysis (package flows): per flow goodput,
	// queue depth, fairness, victims. Absent unless the connections name
	// their flows (the hosts form). Its verdict is also checks.flows; a
	// fail (a flow made no progress) fails the run.
	Flows flows.Result `json:"flows,omitzero"`
	// PFC is the pfc analyzer's section (package pfc): absent when the
	// trace has no wrapped PFC/PAUSE copies. A fail (reaction violations,
	// malformed copies) fails the run, an inconclusive makes it
	// INCONCLUSIVE. In JSON it is checks.pfc, with every other check
	// (MarshalJSON; reports written before have it as "pfc").
	PFC pfc.Result `json:"-"`

	Plots *Plots `json:"-"`
}

// TraceInfo describes the analyzed trace.
type TraceInfo struct {
	Path        string `json:"path,omitempty"`
	Packets     int    `json:"packets"`
	RoCEPackets int    `json:"roce_packets"`
	// Unattributed counts RoCE packets of no connection.
	Unattributed int   `json:"unattributed,omitempty"`
	Mirrored     bool  `json:"mirrored"`
	FirstNs      int64 `json:"first_ns"`
	LastNs       int64 `json:"last_ns"`
}

// Integrity is the integrity check's verdict. Verdict skip means the trace
// carries no mirror metadata (a foreign capture).
type Integrity struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason"`
}

// Checks holds each check's result. A check that was not selected, or did
// not run because the integrity check failed, has verdict skip. In JSON,
// "checks" also holds pfc (Report.PFC).
type Checks struct {
	// Integrity is the integrity verdict (Report.Integrity; in a lumina
	// run's report.json the run's one verdict, which its analysis does
	// not repeat at the top level). Nil in reports written before.
	Integrity *Integrity `json:"integrity,omitempty"`
	// The run's own checks (see CheckSwitchState): nil for a bare trace,
	// or when the run's record lacks them. A fail fails the report; a
	// failed SwitchState also makes it invalid.
	SwitchState    *SwitchState          `json:"switch_state,omitempty"`
	EventsApplied  *EventsApplied        `json:"events_applied,omitempty"`
	Generator      *Generator            `json:"generator,omitempty"`
	GBN            gbn.Result            `json:"gbn"`
	Retransmission retransmission.Result `json:"retransmission"`
	Timeout        timeout.Result        `json:"timeout"`
	CNP            cnp.Result            `json:"cnp"`
	Counters       counters.Result       `json:"counters"`
	// Events reports the packets the switch delayed, reordered or
	// duplicated (package events); absent when the trace has none. It is
	// not a selectable check; a fail fails the run, an inconclusive makes
	// it INCONCLUSIVE.
	Events events.Result `json:"events,omitzero"`
	// RNR is the rnr check (package rnr): absent unless the trace has an
	// RNR NAK or the run used ODP memory (model.Params.ODP). A fail fails
	// the run, an inconclusive makes it INCONCLUSIVE.
	RNR rnr.Result `json:"rnr,omitzero"`
}

// Outcome is one check's verdict and the reason for it.
type Outcome struct {
	Verdict model.Verdict
	Reason  string
}

// selectable returns the outcome of each selectable check (AllChecks).
func (c *Checks) selectable() map[string]Outcome {
	return map[string]Outcome{
		CheckGBN:            {c.GBN.Verdict, c.GBN.Reason},
		CheckRetransmission: {c.Retransmission.Verdict, c.Retransmission.Reason},
		CheckTimeout:        {c.Timeout.Verdict, c.Timeout.Reason},
		CheckCNP:            {c.CNP.Verdict, c.CNP.Reason},
		CheckCounters:       {c.Counters.Verdict, c.Counters.Reason},
	}
}

// Verdicts returns each selectable check's verdict by name.
func (c *Checks) Verdicts() map[string]model.Verdict {
	m := map[string]model.Verdict{}
	for name, o := range c.selectable() {
		m[name] = o.Verdict
	}
	return m
}

// Outcomes returns the outcome of every analyzer check of r by name: the
// selectable ones (AllChecks) always; events, pfc, deadlock, flows and rnr
// when they ran (the trace held delayed, reordered or duplicated packets;
// PFC frames; a fabric; flow names; an RNR NAK or ODP). The run's own
// checks (CheckIntegrity …) are not in it.
func (r *Report) Outcomes() map[string]Outcome {
	m := r.Checks.selectable()
	c := &r.Checks
	if c.Events.Verdict != "" {
		m[CheckEvents] = Outcome{c.Events.Verdict, c.Events.Reason}
	}
	if r.PFC.Verdict != "" {
		m[CheckPFC] = Outcome{r.PFC.Verdict, r.PFC.Reason}
	}
	if d := r.PFC.Deadlock; d != nil {
		m[CheckDeadlock] = Outcome{d.Verdict, d.Reason}
	}
	if r.Flows.Verdict != "" {
		m[CheckFlows] = Outcome{r.Flows.Verdict, r.Flows.Reason}
	}
	if c.RNR.Verdict != "" {
		m[CheckRNR] = Outcome{c.RNR.Verdict, c.RNR.Reason}
	}
	return m
}

// Skip sets check name's verdict to skip with reason, clearing its
// results.
func (c *Checks) Skip(name, reason string) {
	switch name {
	case CheckGBN:
		c.GBN = gbn.Result{Verdict: model.Skip, Reason: reason, Violations: []gbn.Violation{}}
	case CheckRetransmission:
		c.Retransmission = retransmission.Result{Verdict: model.Skip, Reason: reason, Losses: []retransmission.Loss{}}
	case CheckTimeout:
		c.Timeout = timeout.Result{Verdict: model.Skip, Reason: reason, Timeouts: []timeout.Timeout{}}
	case CheckCNP:
		c.CNP = cnp.Result{Verdict: model.Skip, Reason: reason, ConsistentScopes: []string{}}
	case CheckCounters:
		c.Counters = counters.Result{Verdict: model.Skip, Reason: reason, Mismatches: []counters.Mismatch{}}
	case CheckRNR:
		c.RNR = rnr.Result{Verdict: model.Skip, Reason: reason, Waits: []rnr.Wait{}, Stalls: []rnr.Stall{}}
	}
}

// Passed reports whether the run is valid and no check failed (skipped
// and inconclusive checks do not fail a run).
func (r *Report) Passed() bool {
	if !r.Valid {
		return false
	}
	return len(r.Failed()) == 0
}

// Inconclusive returns the checks whose verdict is inconclusive (their
// margin was within the timestamp uncertainty), in report order. A valid
// run with inconclusive checks and no failed one passes; Result says
// INCONCLUSIVE.
func (r *Report) Inconclusive() []string {
	var out []string
	v := r.Checks.Verdicts()
	for _, c := range AllChecks {
		if v[c] == model.Inconclusive {
			out = append(out, c)
		}
	}
	if r.Checks.Events.Verdict == model.Inconclusive {
		out = append(out, CheckEvents)
	}
	if r.Checks.RNR.Verdict == model.Inconclusive {
		out = append(out, CheckRNR)
	}
	if r.PFC.Verdict == model.Inconclusive {
		out = append(out, CheckPFC)
	}
	if d := r.PFC.Deadlock; d != nil && d.Verdict == model.Inconclusive {
		out = append(out, CheckDeadlock)
	}
	return out
}

// Results of a report.
const (
	ResultPass         = "PASS"
	ResultFail         = "FAIL"
	ResultInconclusive = "INCONCLUSIVE"
)

// Result is the report's one-word outcome: FAIL when it did not pass,
// INCONCLUSIVE when it passed with inconclusive checks, else PASS.
func (r *Report) Result() string {
	switch {
	case !r.Passed():
		return ResultFail
	case len(r.Inconclusive()) > 0:
		return ResultInconclusive
	}
	return ResultPass
}

// MarshalIndent returns the report as indented JSON with a final newline.
func (r *Report) MarshalIndent() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Files written by WriteFiles.
const (
	FileJSON = "report.json"
	FileText = "report.txt"
	FileHTML = "report.html"
)

// WriteFiles writes report.json, report.txt and report.html into dir,
// creating it if needed.
func WriteFiles(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j, err := r.MarshalIndent()
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var errs []error
	if err := safefile.WriteFile(filepath.Join(dir, FileJSON), j, 0o644); err != nil {
		errs = append(errs, err)
	}
	if err := safefile.WriteFile(filepath.Join(dir, FileText), []byte(Text(r)), 0o644); err != nil {
		errs = append(errs, err)
	}
	h, err := HTML(r)
	if err != nil {
		errs = append(errs, err)
	} else if err := safefile.WriteFile(filepath.Join(dir, FileHTML), h, 0o644); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
