package orchestrator

import (
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/nic"
)

// TestHTMLRunVerdict: report.html's heading is the run's verdict, a run
// check (events_applied) failing included, and the page names the test,
// seed, repeat and NICs.
func TestHTMLRunVerdict(t *testing.T) {
	r := &Report{Test: "t1", Seed: 7, Repeat: 2, Valid: true,
		Personality: map[Side]string{Requester: "cx5", Responder: "cx6"},
		NICVersions: map[Side]nic.Versions{Requester: {Driver: "mlx5_core", Firmware: "16.35.2000"}},
		Checks: map[string]CheckEntry{
			"integrity":      {Verdict: model.Pass},
			"events_applied": {Verdict: model.Fail, Detail: "1 of 2 events applied"},
			"gbn":            {Verdict: model.Pass},
		}}
	page, err := areport.HTMLRun(&areport.Report{Valid: true}, r.htmlRun())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<h1>t1 repeat 2: <span class="fail">FAIL</span></h1>`, "Failed: events_applied",
		"seed 7", "requester: cx5, driver mlx5_core, firmware 16.35.2000", "responder: cx6, software RNIC (no firmware)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	r.Checks["events_applied"] = CheckEntry{Verdict: model.Pass}
	if got := r.htmlRun().Result; got != areport.ResultPass {
		t.Errorf("htmlRun().Result = %s, want PASS", got)
	}
	r.Checks["timeout"] = CheckEntry{Verdict: model.Inconclusive}
	if got := r.htmlRun().Result; got != areport.ResultInconclusive {
		t.Errorf("htmlRun().Result = %s, want INCONCLUSIVE", got)
	}
}
