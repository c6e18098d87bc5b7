package report

import (
	"encoding/json"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
)

// Names of the run's own checks: a lumina run evaluates them from what it
// installed and recorded (the switch's tables and counters, the events it
// installed, the generator's results), not from the trace alone. They are
// in Checks when the report is a run's, or the re-analysis of a run
// directory that recorded them (its report.json).
const (
	CheckIntegrity     = "integrity"
	CheckSwitchState   = "switch_state"
	CheckEventsApplied = "events_applied"
	CheckGenerator     = "generator"
	// CheckAnalyzers is not a check: report.json's checks["analyzers"]
	// says (fail, with why) that a valid run's analysis could not run.
	CheckAnalyzers = "analyzers"
)

// CheckOrder lists every check's name in report order: the run's own,
// the selectable analyzers (AllChecks), then events and pfc.
var CheckOrder = []string{CheckIntegrity, CheckSwitchState, CheckEventsApplied, CheckGenerator,
	CheckGBN, CheckRetransmission, CheckTimeout, CheckCNP, CheckCounters, CheckEvents, CheckPFC, CheckDeadlock, CheckFlows, CheckRNR}

// SwitchState is the switch_state check: whether the switch did only what
// the test asked. It fails, and the run is invalid, when a mirror copy
// carries an event the intent did not ask for or an asked event more often
// than asked, when the switch's event_drops counters exceed the drop
// events installed, when the event and connection tables read back after
// traffic differ from the plan, or when lumina lost primary arbitration
// during the run.
type SwitchState struct {
	Verdict model.Verdict `json:"verdict"`
	// Reason is Reasons joined with " | " (empty when it passed).
	Reason  string   `json:"reason,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// UnexpectedEvents are the (destination QPN, PSN, event) keys whose
	// mirror copies outnumber the intent's events (at most 20 listed);
	// UnexpectedCopies counts the copies in excess over all keys.
	UnexpectedEvents []UnexpectedEvent `json:"unexpected_events,omitempty"`
	UnexpectedCopies int               `json:"unexpected_copies"`
	// BufferDropCopies are the copies tagged drop that no drop event
	// asked for and that the switch's buffer drops explain (lossless
	// beyond headroom, lossy tail drop: its lossless_drops and
	// lossy_drops counters are at least as many); they are not unexpected.
	BufferDropCopies int `json:"buffer_drop_copies,omitempty"`
	// TableDiff is how the tables read back differ from the plan (at most
	// 20 listed); LostPrimary every time lumina stopped being primary.
	TableDiff   []string `json:"table_diff,omitempty"`
	LostPrimary []string `json:"lost_primary,omitempty"`
}

// UnexpectedEvent is one (destination QPN, PSN, event) seen on more
// mirror copies than the intent asked for.
type UnexpectedEvent struct {
	DestQP uint32 `json:"dest_qp"`
	PSN    uint32 `json:"psn"`
	Type   string `json:"type"`
	Copies int    `json:"copies"`
	Asked  int    `json:"asked"`
}

// EventsApplied is the events_applied check: the trace holds, for every
// installed event, the mirror copy tagged with it (every copy, for
// duplicate; docs/events.md).
type EventsApplied struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	Applied int           `json:"applied"`
	Total   int           `json:"total"`
	// Missing describes the events not applied (at most 20 listed), e.g.
	// "qp 0 msg 1 psn 2 (abs 0x1234) iter 1 drop".
	Missing []string `json:"missing,omitempty"`
}

// Generator is the generator check: the traffic completed without an
// error or a stop and the responder's memory holds the data sent.
type Generator struct {
	Verdict     model.Verdict `json:"verdict"`
	Reason      string        `json:"reason,omitempty"`
	GoodputGbps float64       `json:"goodput_gbps"`
	Bytes       int64         `json:"bytes"`
	DurationNs  int64         `json:"duration_ns"`
	Verified    bool          `json:"responder_verified"`
	Errors      []string      `json:"errors,omitempty"`
	Stopped     string        `json:"stopped,omitempty"`
}

// Verdict returns check name's verdict ("" when the report does not have
// it: a run check of a bare trace, events or pfc without such packets).
func (r *Report) Verdict(name string) model.Verdict {
	c := &r.Checks
	switch name {
	case CheckIntegrity:
		return r.IntegrityVerdict().Verdict
	case CheckSwitchState:
		if c.SwitchState != nil {
			return c.SwitchState.Verdict
		}
	case CheckEventsApplied:
		if c.EventsApplied != nil {
			return c.EventsApplied.Verdict
		}
	case CheckGenerator:
		if c.Generator != nil {
			return c.Generator.Verdict
		}
	case CheckEvents:
		return c.Events.Verdict
	case CheckRNR:
		return c.RNR.Verdict
	case CheckPFC:
		return r.PFC.Verdict
	case CheckDeadlock:
		if d := r.PFC.Deadlock; d != nil {
			return d.Verdict
		}
	case CheckFlows:
		return r.Flows.Verdict
	default:
		return c.Verdicts()[name]
	}
	return ""
}

// IntegrityVerdict is the integrity verdict: Checks.Integrity, else
// Integrity.
func (r *Report) IntegrityVerdict() Integrity {
	if r.Checks.Integrity != nil {
		return *r.Checks.Integrity
	}
	return r.Integrity
}

// Failed returns the names of the failed checks, in report order.
func (r *Report) Failed() []string {
	var out []string
	for _, n := range CheckOrder {
		if r.Verdict(n).Failed() {
			out = append(out, n)
		}
	}
	return out
}

// checksJSON is Checks as JSON: every check in one object, pfc
// (Report.PFC, which the Go API keeps outside Checks) and then flows's
// verdict (Report.Flows) last.
type checksJSON struct {
	*Checks
	PFC *pfc.Result `json:"pfc,omitempty"`
	// Deadlock is pfc.Result.Deadlock (a run with several switches).
	Deadlock *pfc.Deadlock `json:"deadlock,omitempty"`
	Flows    *flowsCheck   `json:"flows,omitempty"`
}

// flowsCheck is the flows check in checks: the verdict and reason of
// Report.Flows, whose numbers are the report's "flows".
type flowsCheck struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
}

// reportJSON is Report as JSON. Its Checks field shadows the embedded
// report's.
type reportJSON struct {
	*plainReport
	Checks checksJSON `json:"checks"`
}

type plainReport Report

// MarshalJSON writes the report with every check, pfc included, under
// "checks" (schema in docs/analyze.md). A value receiver: a Report and a
// *Report marshal alike.
func (r Report) MarshalJSON() ([]byte, error) {
	c := checksJSON{Checks: &r.Checks}
	if r.PFC.Verdict != "" {
		c.PFC = &r.PFC
	}
	c.Deadlock = r.PFC.Deadlock
	if r.Flows.Verdict != "" {
		c.Flows = &flowsCheck{r.Flows.Verdict, r.Flows.Reason}
	}
	return json.Marshal(reportJSON{plainReport: (*plainReport)(&r), Checks: c})
}

// UnmarshalJSON reads a report, also one written before pfc moved into
// "checks" (its top-level "pfc").
func (r *Report) UnmarshalJSON(b []byte) error {
	var v struct {
		*plainReport
		Checks checksJSON  `json:"checks"`
		OldPFC *pfc.Result `json:"pfc"`
	}
	v.plainReport = (*plainReport)(r)
	v.Checks.Checks = &r.Checks
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch {
	case v.Checks.PFC != nil:
		r.PFC = *v.Checks.PFC
	case v.OldPFC != nil:
		r.PFC = *v.OldPFC
	}
	if v.Checks.Deadlock != nil {
		r.PFC.Deadlock = v.Checks.Deadlock
	}
	return nil
}
