package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/cnp"
	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/timeout"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/orchestrator"
)

// writeFakeSuite writes dir/<test>/<repeat>/report.json for a test
// "fast" whose NACK reaction is reaction ns (+ a per-repeat, per-loss
// spread), and a test "cnp" whose consistent CNP scope is scope.
func writeFakeSuite(t *testing.T, dir, personality string, reaction int64, scope string) {
	t.Helper()
	for rep := range 4 {
		for _, test := range []string{"fast", "cnp"} {
			r := &orchestrator.Report{Schema: orchestrator.ReportSchema, Test: test, Repeat: rep, Seed: 1, Testbed: "sim", Valid: true,
				Personality: map[orchestrator.Side]string{orchestrator.Requester: personality, orchestrator.Responder: personality},
				Checks:      map[string]orchestrator.CheckEntry{"integrity": {Verdict: "pass"}, "retransmission": {Verdict: "pass"}},
				Generator:   &orchestrator.GeneratorReport{GoodputGbps: 20, QPs: []generator.QPResult{{MCTNs: []int64{10000, 10010}}}}}
			a := &areport.Report{Valid: true}
			a.Checks.CNP = cnp.Result{Verdict: model.Skip}
			if test == "fast" {
				for i := range 10 {
					g, re := int64(1100), reaction+int64(rep*7+i*13)
					x := g + re + 500
					a.Checks.Retransmission.Losses = append(a.Checks.Retransmission.Losses,
						retransmission.Loss{Kind: retransmission.KindFast, NACKGenerationNs: &g, NACKReactionNs: &re, RetransmissionNs: &x})
				}
			} else {
				a.Checks.CNP = cnp.Result{Verdict: model.Pass, Observed: 2, ConsistentScopes: []string{scope}}
			}
			r.Analysis = a
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			d := filepath.Join(dir, test, fmt.Sprint(rep))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, d, "report.json", b)
		}
	}
}

// writeTimeoutSuite writes dir/timeout/<repeat>/report.json: 4 valid
// repeats whose timeout check has the given verdicts (cycled) over one
// timeout of 67.1 ms.
func writeTimeoutSuite(t *testing.T, dir string, verdicts ...model.Verdict) {
	t.Helper()
	for rep := range 4 {
		v := verdicts[rep%len(verdicts)]
		r := &orchestrator.Report{Schema: orchestrator.ReportSchema, Test: "timeout", Repeat: rep, Seed: 1, Testbed: "netns", Valid: true,
			Personality: map[orchestrator.Side]string{orchestrator.Requester: "cx5", orchestrator.Responder: "cx5"},
			Checks:      map[string]orchestrator.CheckEntry{"integrity": {Verdict: model.Pass}, "timeout": {Verdict: v}}}
		a := &areport.Report{Valid: true}
		a.Checks.CNP = cnp.Result{Verdict: model.Skip}
		a.Checks.Timeout = timeout.Result{Verdict: v, TimestampUncertaintyNs: 12_000,
			Timeouts: []timeout.Timeout{{IntervalsNs: []int64{67_101_000 + int64(rep)*10}, Retries: 1}}}
		r.Analysis = a
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, "timeout", fmt.Sprint(rep))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, d, "report.json", b)
	}
}

// inconclusiveSetup: BASE passes the timeout check; NEW is inconclusive
// in every repeat (within the timestamp uncertainty), in "some" in two.
func inconclusiveSetup(t *testing.T, tmp string) {
	writeTimeoutSuite(t, filepath.Join(tmp, "base"), model.Pass)
	writeTimeoutSuite(t, filepath.Join(tmp, "new"), model.Inconclusive)
	writeTimeoutSuite(t, filepath.Join(tmp, "some"), model.Pass, model.Inconclusive)
}

func diffSetup(t *testing.T, tmp string) {
	writeFakeSuite(t, filepath.Join(tmp, "base"), "cx5", 3000, "per-dest-ip")
	writeFakeSuite(t, filepath.Join(tmp, "new"), "cx4", 170000, "per-dest-ip")
	writeFakeSuite(t, filepath.Join(tmp, "cx6"), "cx6", 3000, "per-port")
	writeFakeSuite(t, filepath.Join(tmp, "same"), "cx5", 3001, "per-dest-ip")
}

func TestDiffGolden(t *testing.T) {
	cases := []cliCase{
		{name: "diff-regression", args: []string{"diff", "$TMP/base", "$TMP/new"}, setup: diffSetup},
		{name: "diff-json", args: []string{"diff", "--format", "json", "$TMP/base", "$TMP/new"}, setup: diffSetup},
		{name: "diff-same", args: []string{"diff", "$TMP/base", "$TMP/same"}, setup: diffSetup},
		{name: "diff-scope", args: []string{"diff", "$TMP/base", "$TMP/cx6"}, setup: diffSetup},
		{name: "diff-fail-on-change", args: []string{"diff", "--fail-on", "change", "$TMP/base/cnp", "$TMP/cx6/cnp"}, setup: diffSetup},
		{name: "diff-bootstrap-holm", args: []string{"diff", "--method", "bootstrap", "--holm", "--min-shift", "0", "$TMP/base/fast", "$TMP/same/fast"}, setup: diffSetup},
		// Inconclusive is missing data: a change at most, never a regression.
		{name: "diff-inconclusive", args: []string{"diff", "$TMP/base", "$TMP/new"}, setup: inconclusiveSetup},
		{name: "diff-inconclusive-some", args: []string{"diff", "$TMP/base", "$TMP/some"}, setup: inconclusiveSetup},
		{name: "diff-one-arg", args: []string{"diff", "$TMP/base"}},
		{name: "diff-bad-format", args: []string{"diff", "--format", "xml", "a", "b"}},
		{name: "diff-bad-alpha", args: []string{"diff", "--alpha", "1.5", "a", "b"}},
		{name: "diff-missing", args: []string{"diff", "$TMP/nope", "$TMP/nope2"}},
		{name: "diff-empty", args: []string{"diff", "$TMP", "$TMP"}},
	}
	runGolden(t, cases)
}

// TestDiffHTML: the page is self-contained and has a plot per quantity.
func TestDiffHTML(t *testing.T) {
	tmp := t.TempDir()
	diffSetup(t, tmp)
	page := filepath.Join(tmp, "diff.html")
	code, stdout, stderr := runCLI("diff", "--html", page, filepath.Join(tmp, "base"), filepath.Join(tmp, "new"))
	if code != 1 || !strings.Contains(stdout, "REGRESSION") {
		t.Fatalf("lumina diff --html = exit %d, stdout %q, stderr %q; want exit 1 and a regression", code, stdout, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	for _, bad := range []string{"<link", `src="`, `href="`, "@import"} {
		if strings.Contains(h, bad) {
			t.Errorf("diff.html contains %q: not self-contained", bad)
		}
	}
	// One plot per quantity, drawn by the embedded uPlot (TestDiffBrowser
	// opens the page).
	if n := strings.Count(h, `<div class="qplot" id="plot-`); n < 6 || !strings.Contains(h, `<script type="application/json" id="diff-data">[{"id":"plot-0"`) {
		t.Errorf("diff.html has %d plots, want one per quantity (>= 6) with their data", n)
	}
	code, stdout, _ = runCLI("diff", "--format", "html", filepath.Join(tmp, "base"), filepath.Join(tmp, "same"))
	if code != 0 || !strings.HasPrefix(stdout, "<!DOCTYPE html>") {
		t.Errorf("lumina diff --format html = exit %d, %.40q", code, stdout)
	}
}
