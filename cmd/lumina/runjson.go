package main

import (
	"encoding/json"
	"io"
	"sort"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/suite"
)

// runSchema names the JSON document of `lumina run --format json`
// (docs/run.md). Fields are only ever added.
const runSchema = "lumina.run/v1"

// runSummary is `lumina run --format json`: every test's repeats as the
// status lines give them, with each check's verdict and the key
// quantities. Its schema is documented in docs/run.md.
type runSummary struct {
	Schema string `json:"schema"`
	// OK: every repeat of every test is valid and no check failed (the exit
	// status is 0).
	OK bool `json:"ok"`
	// Interrupted: the run was interrupted (exit 130); the last test's
	// repeats are those that ran.
	Interrupted bool          `json:"interrupted,omitempty"`
	Tests       []testSummary `json:"tests"`
	// Errors: the test files could not be loaded (exit 2) and nothing
	// ran; each error as stderr gives it (FILE:LINE:COL: message).
	Errors []string `json:"errors,omitempty"`
}

// testSummary is one test file's repeats.
type testSummary struct {
	Name string `json:"name"`
	File string `json:"file"`
	OK   bool   `json:"ok"`
	// Error is the test's own error (one that stopped its repeats).
	Error   string          `json:"error,omitempty"`
	Repeats []repeatSummary `json:"repeats"`
}

// repeatSummary is one repeat: its run directory, validity, verdicts and
// quantities.
type repeatSummary struct {
	Repeat int    `json:"repeat"`
	Dir    string `json:"dir"`
	// Attempts counts the runs of this repeat (retries of an invalid one
	// included).
	Attempts int  `json:"attempts"`
	Valid    bool `json:"valid"`
	// Status is the text status line's words after "repeat N: ".
	Status string `json:"status"`
	// Invalid says why an invalid repeat was not analyzed.
	Invalid string `json:"invalid,omitempty"`
	// Failed and Inconclusive name the checks with that verdict, sorted.
	Failed       []string `json:"failed"`
	Inconclusive []string `json:"inconclusive"`
	// Checks is every check's verdict: pass, fail, skip or inconclusive.
	Checks  map[string]model.Verdict `json:"checks"`
	Seed    uint64                   `json:"seed"`
	Testbed string                   `json:"testbed"`
	Packets int                      `json:"packets"`
	// Quantities are the measured quantities of a valid repeat, by name
	// (suite.Quantities: lumina diff compares them).
	Quantities map[string]quantitySummary `json:"quantities"`
}

// quantitySummary is one quantity's values in one repeat.
type quantitySummary struct {
	Unit   suite.Unit `json:"unit"`
	N      int        `json:"n"`
	Min    float64    `json:"min"`
	Median float64    `json:"median"`
	Max    float64    `json:"max"`
	Mean   float64    `json:"mean"`
}

// add appends test res's repeats.
func (s *runSummary) add(res *orchestrator.TestResult) {
	t := testSummary{Name: res.Name, File: res.File, OK: res.OK(), Repeats: []repeatSummary{}}
	if res.Err != nil {
		t.Error = res.Err.Error()
	}
	for i, r := range res.Repeats {
		t.Repeats = append(t.Repeats, summarizeRepeat(i, r))
	}
	s.Tests = append(s.Tests, t)
}

func summarizeRepeat(i int, r orchestrator.RepeatResult) repeatSummary {
	rep, status := repeatOutcome(i, r)
	rs := repeatSummary{Repeat: rep, Status: status, Dir: r.Dir, Attempts: r.Attempts, Failed: []string{}, Inconclusive: []string{},
		Checks: map[string]model.Verdict{}, Quantities: map[string]quantitySummary{}}
	rpt := r.Report
	if rpt == nil {
		rs.Invalid = "no report"
		return rs
	}
	rs.Valid, rs.Seed, rs.Testbed, rs.Packets = rpt.Valid, rpt.Seed, rpt.Testbed, rpt.Packets
	for n, c := range rpt.Checks {
		rs.Checks[n] = c.Verdict
	}
	rs.Failed = append(rs.Failed, rpt.Verdicts(model.Fail)...)
	rs.Inconclusive = append(rs.Inconclusive, rpt.Verdicts(model.Inconclusive)...)
	if !rpt.Valid {
		rs.Invalid = invalidReason(rpt)
		return rs
	}
	vals := suite.Measure(rpt)
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := vals[n]
		rs.Quantities[n] = quantitySummary{Unit: d.Unit, N: d.N, Min: d.Min, Median: d.Median, Max: d.Max, Mean: d.Mean}
	}
	return rs
}

// write prints the summary as indented JSON.
func (s *runSummary) write(w io.Writer) error {
	s.Schema = runSchema
	s.OK = !s.Interrupted && len(s.Tests) > 0 && len(s.Errors) == 0
	if s.Tests == nil {
		s.Tests = []testSummary{}
	}
	for _, t := range s.Tests {
		s.OK = s.OK && t.OK
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
