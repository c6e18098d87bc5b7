package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// ReportSchema names the report.json format. Fields are only ever added.
const ReportSchema = "lumina.report/v1"

// Report is report.json: what a network engineer needs to know about one
// repeat. See docs/run.md for the schema.
type Report struct {
	Schema      string            `json:"schema"`
	Test        string            `json:"test"`
	File        string            `json:"file,omitempty"`
	Repeat      int               `json:"repeat"`
	Seed        uint64            `json:"seed"`
	Testbed     string            `json:"testbed"`
	Personality map[string]string `json:"personality,omitempty"`
	// NICVersions is each traffic host's NIC identity: driver and firmware
	// on real hosts, the personality for the software RNIC.
	NICVersions map[string]json.RawMessage `json:"nic_versions,omitempty"`
	// Valid is true when the trace passed the integrity check; otherwise no
	// analyzer ran and Checks only holds integrity.
	Valid       bool                  `json:"valid"`
	Error       string                `json:"error,omitempty"`
	Integrity   IntegrityReport       `json:"integrity"`
	Connections []ConnectionReport    `json:"connections"`
	Events      []EventReport         `json:"events"`
	Checks      map[string]CheckEntry `json:"checks"`
	Generator   *GeneratorReport      `json:"generator,omitempty"`
	TracePath   string                `json:"trace,omitempty"`
	Packets     int                   `json:"packets"`
	WallNs      int64                 `json:"wall_ns"`
	// Analysis is the analyzers' full report (schema in docs/analyze.md):
	// Go-back-N violations, per-loss latencies, timeouts, CNP scopes,
	// counter cross-checks. Its verdicts are also in Checks.
	Analysis *areport.Report `json:"analysis,omitempty"`
}

// runAnalyzers analyzes the run directory dir (trace, config.yaml,
// report.json, counters.json), adds the checks' verdicts and writes
// report.html.
func (r *Report) runAnalyzers(ctx context.Context, dir string) error {
	tracePath, meta, err := analyzers.RunInputs(dir, "")
	if err != nil {
		return err
	}
	a, err := analyzers.AnalyzeFile(ctx, tracePath, meta, analyzers.Options{})
	if err != nil {
		return err
	}
	a.Trace.Path = filepath.Base(a.Trace.Path)
	r.Analysis = a
	c := &a.Checks
	for name, e := range map[string]CheckEntry{
		"gbn":            {string(c.GBN.Verdict), c.GBN.Reason},
		"retransmission": {string(c.Retransmission.Verdict), c.Retransmission.Reason},
		"timeout":        {string(c.Timeout.Verdict), c.Timeout.Reason},
		"cnp":            {string(c.CNP.Verdict), c.CNP.Reason},
		"counters":       {string(c.Counters.Verdict), c.Counters.Reason},
	} {
		r.Checks[name] = e
	}
	html, err := areport.HTML(a)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, areport.FileHTML), html, 0o644)
}

// IntegrityReport is the integrity verdict.
type IntegrityReport struct {
	Verdict string   `json:"verdict"` // pass | fail | skip
	Reason  string   `json:"reason,omitempty"`
	Checks  []string `json:"checks,omitempty"` // "name: status" per condition
}

// ConnectionReport is one QP connection.
type ConnectionReport struct {
	ID        int          `json:"id"`
	Verb      string       `json:"verb"`
	Requester EndpointInfo `json:"requester"`
	Responder EndpointInfo `json:"responder"`
}

// EndpointInfo is one side of a connection.
type EndpointInfo struct {
	IP   string `json:"ip"`
	QPN  uint32 `json:"qpn"`
	IPSN uint32 `json:"ipsn"`
}

// EventReport is one configured (expanded) event and whether the trace
// shows it applied.
type EventReport struct {
	QP      int    `json:"qp"`
	Msg     int    `json:"msg"`
	PSN     int    `json:"psn"`     // within the message
	RelPSN  int    `json:"rel_psn"` // within the QP
	AbsPSN  uint32 `json:"abs_psn"`
	DestQP  uint32 `json:"dest_qp"`
	Iter    int    `json:"iter"`
	Type    string `json:"type"`
	Applied bool   `json:"applied"`
	TimeNs  uint64 `json:"time_ns,omitempty"` // switch timestamp of the affected packet
}

// CheckEntry is one check's verdict.
type CheckEntry struct {
	Verdict string `json:"verdict"` // pass | fail | skip
	Detail  string `json:"detail,omitempty"`
}

// GeneratorReport summarizes the traffic generator's results.
type GeneratorReport struct {
	GoodputGbps float64              `json:"goodput_gbps"`
	DurationNs  int64                `json:"duration_ns"`
	Bytes       int64                `json:"bytes"`
	Errors      []string             `json:"errors,omitempty"`
	QPs         []generator.QPResult `json:"qps"`
	Verified    bool                 `json:"responder_verified"`
	Stopped     string               `json:"stopped,omitempty"`
}

func newReport(t *config.Test, rep int, col *collected) *Report {
	r := &Report{Schema: ReportSchema, Test: t.Name, File: t.File, Repeat: rep, Seed: t.Seed, Testbed: t.Testbed.String(),
		Checks: map[string]CheckEntry{}, Integrity: IntegrityReport{Verdict: "skip"}, Connections: []ConnectionReport{}, Events: []EventReport{}}
	if col == nil {
		return r
	}
	r.Personality = col.Personas
	r.NICVersions = col.Versions
	for _, c := range col.Conns {
		r.Connections = append(r.Connections, ConnectionReport{ID: c.Index, Verb: string(c.Verb),
			Requester: EndpointInfo{c.Requester.IP, c.Requester.QPN, c.Requester.IPSN},
			Responder: EndpointInfo{c.Responder.IP, c.Responder.QPN, c.Responder.IPSN}})
	}
	if g := col.Generator; g != nil {
		r.Generator = &GeneratorReport{GoodputGbps: g.GoodputGbps, DurationNs: g.DurationNs, Bytes: g.Bytes, Errors: g.Errors, QPs: g.QPs,
			Stopped: col.Stopped}
		if g.Responder != nil {
			r.Generator.Verified = g.Responder.Verified
		}
	}
	if col.Plan != nil {
		for _, e := range col.Plan.Events {
			r.Events = append(r.Events, EventReport{QP: e.QP, Msg: e.Msg, PSN: e.RelPSN, RelPSN: e.RelPSN, AbsPSN: uint32(e.PSN),
				DestQP: e.DestQP, Iter: int(e.Iter), Type: e.Type.String()})
		}
		ppm := t.Traffic.PacketsPerMessage()
		for i := range r.Events {
			r.Events[i].PSN = r.Events[i].RelPSN - r.Events[i].Msg*ppm
		}
	}
	return r
}

// analyze merges the dumps, checks integrity, and if the trace is complete
// evaluates the checks.
func (r *Report) analyze(t *config.Test, col *collected, tracePath string) {
	// One pass over the dumper files writes the trace, checks it and finds
	// the packets the events hit.
	v, err := mergeAndCheck(col, tracePath, 0, r.applyObserver())
	if err != nil {
		r.Valid, r.Error = false, "merging or checking the trace: "+err.Error()
		r.Integrity = IntegrityReport{Verdict: "fail", Reason: err.Error()}
		r.Checks["integrity"] = CheckEntry{Verdict: "fail", Detail: err.Error()}
		return
	}
	r.TracePath = t.AggregatePcapFilename
	r.Packets = v.Stats.Packets
	r.Integrity = IntegrityReport{Verdict: "pass", Reason: v.Reason}
	for _, c := range v.Checks {
		r.Integrity.Checks = append(r.Integrity.Checks, c.Name+": "+c.Status.String())
	}
	if !v.Pass {
		r.Integrity.Verdict = "fail"
	}
	r.Valid = v.Pass
	r.Checks["integrity"] = CheckEntry{Verdict: r.Integrity.Verdict, Detail: v.Reason}
	if !r.Valid {
		return // an invalid trace is not analyzed
	}
	missing := 0
	for _, e := range r.Events {
		if !e.Applied {
			missing++
		}
	}
	ce := CheckEntry{Verdict: "pass", Detail: fmt.Sprintf("%d of %d events applied", len(r.Events)-missing, len(r.Events))}
	if missing > 0 {
		ce.Verdict = "fail"
	}
	r.Checks["events_applied"] = ce
	gen := CheckEntry{Verdict: "pass"}
	switch g := r.Generator; {
	case g == nil:
		gen = CheckEntry{Verdict: "fail", Detail: "no generator results"}
	case g.Stopped != "":
		gen = CheckEntry{Verdict: "fail", Detail: g.Stopped}
	case len(g.Errors) > 0:
		gen = CheckEntry{Verdict: "fail", Detail: strings.Join(g.Errors, "; ")}
	case !g.Verified:
		gen = CheckEntry{Verdict: "fail", Detail: "the responder's memory does not hold the data sent"}
	}
	r.Checks["generator"] = gen
}

// applyObserver returns a function that, fed the merged trace in order,
// finds the mirror copies carrying each event's type for its (destination
// QPN, PSN): the k-th such copy is the event with the k-th smallest ITER.
func (r *Report) applyObserver() func(trace.Packet) {
	type key struct {
		qpn, psn uint32
		ev       roce.Event
	}
	want := map[key][]int{} // → indices into r.Events, by ITER
	for i, e := range r.Events {
		k := key{e.DestQP, e.AbsPSN, eventOf(e.Type)}
		want[k] = append(want[k], i)
	}
	for _, idx := range want {
		sort.Slice(idx, func(a, b int) bool { return r.Events[idx[a]].Iter < r.Events[idx[b]].Iter })
	}
	var p roce.Packet
	pr := roce.Parser{}
	return func(tp trace.Packet) {
		if pr.Parse(tp.Data, tp.OrigLen, &p) != nil {
			return
		}
		m := p.Mirror()
		if m.Event == roce.EventNone {
			return
		}
		k := key{p.BTH.DestQP(), uint32(p.BTH.PSN()), m.Event}
		if idx := want[k]; len(idx) > 0 {
			r.Events[idx[0]].Applied, r.Events[idx[0]].TimeNs = true, m.TimestampNs
			want[k] = idx[1:]
		}
	}
}

func eventOf(s string) roce.Event {
	switch s {
	case "drop":
		return roce.EventDrop
	case "ecn":
		return roce.EventECN
	case "corrupt":
		return roce.EventCorrupt
	}
	return roce.EventNone
}

// Passed reports whether every check passed (skips do not fail).
func (r *Report) Passed() bool {
	for _, c := range r.Checks {
		if c.Verdict == "fail" {
			return false
		}
	}
	return true
}

// Text is report.txt: a short human summary.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lumina run: %s repeat %d (testbed %s, seed %d)\n", r.Test, r.Repeat, r.Testbed, r.Seed)
	if len(r.Personality) > 0 {
		fmt.Fprintf(&b, "personality: requester %s, responder %s\n", r.Personality["requester"], r.Personality["responder"])
	}
	valid := "VALID"
	if !r.Valid {
		valid = "INVALID"
	}
	fmt.Fprintf(&b, "trace: %s, %d packets, integrity %s", valid, r.Packets, r.Integrity.Verdict)
	if r.Integrity.Reason != "" {
		fmt.Fprintf(&b, " (%s)", r.Integrity.Reason)
	}
	b.WriteString("\n")
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", r.Error)
	}
	if g := r.Generator; g != nil {
		fmt.Fprintf(&b, "generator: %.3f Gb/s goodput, %d bytes in %.3f ms, responder memory verified: %v\n",
			g.GoodputGbps, g.Bytes, float64(g.DurationNs)/1e6, g.Verified)
	}
	applied := 0
	for _, e := range r.Events {
		if e.Applied {
			applied++
		}
	}
	fmt.Fprintf(&b, "events: %d of %d applied\n", applied, len(r.Events))
	names := make([]string, 0, len(r.Checks))
	for n := range r.Checks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := r.Checks[n]
		fmt.Fprintf(&b, "check %-16s %s", n, c.Verdict)
		if c.Detail != "" {
			fmt.Fprintf(&b, "  %s", c.Detail)
		}
		b.WriteString("\n")
	}
	return b.String()
}
