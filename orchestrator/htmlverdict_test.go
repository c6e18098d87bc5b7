package orchestrator

import (
	"github.com/netlumina/lumina/roce"
	"reflect"
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
		Personality: map[string]string{"requester": "cx5", "responder": "cx6"},
		NICVersions: map[string]nic.Versions{"requester": {Driver: "mlx5_core", Firmware: "16.35.2000"}},
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

// TestHTMLRunDetails: report.html gets every check of the run (its own
// with their details), the goodput, the measured timing and the
// configured events with whether each was applied.
func TestHTMLRunDetails(t *testing.T) {
	r := &Report{Test: "t1", Testbed: "netns", Valid: true,
		Checks: map[string]CheckEntry{
			"integrity":      {Verdict: model.Pass},
			"switch_state":   {Verdict: model.Pass},
			"events_applied": {Verdict: model.Fail, Detail: "1 of 2 events applied"},
			"generator":      {Verdict: model.Pass},
			"gbn":            {Verdict: model.Pass},
		},
		Generator: &GeneratorReport{GoodputGbps: 2.5, Bytes: 8192, DurationNs: 26_214, Verified: true},
		Timing:    &TimingReport{UncertaintyNs: 1_500_000, Frames: 40, LateP50Ns: 1, LateP99Ns: 2, LateMaxNs: 3, Slowdown: 4},
		Events: []EventReport{{QP: 0, Msg: 1, PSN: 2, RelPSN: 6, AbsPSN: 100, Iter: 1, Type: roce.EventDelay, DelayNs: 20_000, Applied: true, TimeNs: 5_000},
			{QP: 1, Type: roce.EventReorder, Overtakers: 2, MaxHoldNs: 1_000_000}, {QP: 1, Type: roce.EventDuplicate, Direction: "response", Copies: 3}}}
	info := r.htmlRun()
	wantChecks := []areport.RunCheck{{Name: "events_applied", Verdict: model.Fail, Detail: "1 of 2 events applied"}, {Name: "gbn", Verdict: model.Pass, Detail: ""},
		{Name: "generator", Verdict: model.Pass, Detail: ""}, {Name: "integrity", Verdict: model.Pass, Detail: ""}, {Name: "switch_state", Verdict: model.Pass, Detail: ""}}
	if !reflect.DeepEqual(info.Checks, wantChecks) {
		t.Errorf("htmlRun().Checks = %+v, want %+v", info.Checks, wantChecks)
	}
	if want := (areport.Generator{GoodputGbps: 2.5, Bytes: 8192, DurationNs: 26_214, Verified: true}); info.Generator == nil || !reflect.DeepEqual(*info.Generator, want) {
		t.Errorf("htmlRun().Generator = %+v, want %+v", info.Generator, want)
	}
	if want := (areport.RunTiming{UncertaintyNs: 1_500_000, Frames: 40, LateP50Ns: 1, LateP99Ns: 2, LateMaxNs: 3, Slowdown: 4}); info.Timing == nil || *info.Timing != want {
		t.Errorf("htmlRun().Timing = %+v, want %+v", info.Timing, want)
	}
	wantEvents := []areport.RunEvent{{QP: 0, Msg: 1, PSN: 2, RelPSN: 6, AbsPSN: 100, Iter: 1, Type: "delay", Params: "delay 20µs", Applied: true, TimeNs: 5_000},
		{QP: 1, Type: "reorder", Params: "2 overtakers, max hold 1ms"}, {QP: 1, Type: "duplicate", Direction: "response", Params: "3 copies"}}
	if !reflect.DeepEqual(info.Events, wantEvents) {
		t.Errorf("htmlRun().Events = %+v, want %+v", info.Events, wantEvents)
	}
	if info.Testbed != "netns" {
		t.Errorf("htmlRun().Testbed = %q, want netns", info.Testbed)
	}
	page, err := areport.HTMLRun(&areport.Report{Valid: true}, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>events_applied</td><td class=\"fail\">fail</td><td></td><td>1 of 2 events applied</td>",
		"<td>switch_state</td><td class=\"pass\">pass</td>", "Traffic: 2.5 Gb/s goodput", "timestamp uncertainty ±1500 µs",
		"ran 4× slower than the wall clock"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
