package report

import (
	"fmt"
	"github.com/netlumina/lumina/roce"
	"html"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/events"
	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
)

var (
	rowRE  = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	cellRE = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]+>`)
)

// tableRows returns the text of each data row's cells of the first table
// of page after the text at (nil when there is none).
func tableRows(t *testing.T, page, at string) [][]string {
	t.Helper()
	i := strings.Index(page, at)
	if i < 0 {
		return nil
	}
	body := page[i+len(at):]
	body = body[:strings.Index(body, "</table>")]
	rows := [][]string{}
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		cells := cellRE.FindAllStringSubmatch(m[1], -1)
		if len(cells) == 0 {
			continue // the header
		}
		var row []string
		for _, c := range cells {
			row = append(row, html.UnescapeString(tagRE.ReplaceAllString(c[1], "")))
		}
		rows = append(rows, row)
	}
	return rows
}

// rowsDiff lists the rows of want and got that differ.
func rowsDiff[T any](want, got []T) string {
	var b strings.Builder
	for i := range max(len(want), len(got)) {
		var w, g any = "(none)", "(none)"
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if !reflect.DeepEqual(w, g) {
			fmt.Fprintf(&b, "row %d = %#v,\n   want %#v\n", i, g, w)
		}
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// failedRun is a report of every kind of check, gbn failing with
// violations and no reason of its own, and the run around it.
func failedRun() (*Report, *RunInfo) {
	r := sample()
	r.Checks.Timeout.Verdict, r.Checks.Timeout.Reason = model.Pass, ""
	r.Checks.GBN = gbn.Result{Verdict: model.Fail, Violations: []gbn.Violation{
		{Conn: 0, Side: gbn.SideRequester, Rule: gbn.RuleStartPSN, PSN: 4738522, RelPSN: 1, Index: 3,
			Detail: "first PSN 4738522, the metadata's IPSN is 4738521"},
		{Conn: 0, Side: gbn.SideRequester, Rule: gbn.RulePSNGap, PSN: 4738524, RelPSN: 3, Index: 5, Detail: "gap"},
		{Conn: 1, Side: gbn.SideRequester, Rule: gbn.RulePSNGap, PSN: 9, RelPSN: 3, Index: 9, Detail: "gap"}}, Dropped: 2}
	r.Checks.Events = events.Result{Verdict: model.Fail, Reason: "1 of 2 events not as configured", Events: []events.Entry{
		{Conn: 0, Direction: events.DirData, Type: roce.EventDelay, PSN: 4738524, RelPSN: 3, Occurrence: 1, Iter: 1, Index: 13,
			TimeNs: 100_009_388, HoldNs: ptr[int64](100_000_088), DelayNs: ptr[int64](100_000_000), Verdict: model.Pass},
		{Conn: 1, Direction: events.DirData, Type: roce.EventReorder, PSN: 7, RelPSN: 2, Occurrence: 1, Iter: 2, Index: 20,
			TimeNs: 10_500, HoldNs: ptr[int64](300), Depth: ptr(1), Overtakers: ptr(2), Verdict: model.Fail,
			Detail: "depth 1, 2 overtakers configured"},
		{Conn: 1, Direction: events.DirResponse, Type: roce.EventDuplicate, PSN: 8, RelPSN: 3, Occurrence: 1, Index: 30,
			TimeNs: 11_000, Copies: ptr(2)}}}
	r.PFC = pfc.Result{Verdict: model.Inconclusive, Reason: "1 frames after the reaction bound within the timestamp uncertainty", Frames: 12,
		Episodes: []pfc.Episode{{ID: 0, Storm: true}}, Watchdogs: []pfc.Watchdog{{Kind: pfc.WatchdogSwitchStorm}}}
	r.Trace.FirstNs = 1_000
	run := &RunInfo{Test: "t", Testbed: "netns", Result: ResultFail, Failed: []string{"events", "events_applied", "gbn"},
		Checks: []RunCheck{{"integrity", model.Pass, ""}, {"gbn", model.Fail, ""}, {"generator", model.Pass, ""},
			{"events_applied", model.Fail, "1 of 2 events applied"}, {"switch_state", model.Pass, ""}, {"events", model.Fail, "1 of 2 events not as configured"}},
		Generator: &Generator{GoodputGbps: 0.110917, Bytes: 4194304, DurationNs: 302_517_385, Verified: true},
		Events: []RunEvent{{QP: 0, Msg: 0, PSN: 3, RelPSN: 3, AbsPSN: 4738524, Iter: 1, Type: "delay", Params: "delay 100ms", Applied: true, TimeNs: 100_009_388},
			{QP: 1, Msg: 1, PSN: 0, RelPSN: 2, AbsPSN: 7, Iter: 2, Type: "reorder", Params: "2 overtakers"}}}
	return r, run
}

// TestHTMLChecks: the Checks table lists every check (the run's own
// too), each once, with its verdict, a summary and a reason; a failing
// gbn's reason comes from its violations.
func TestHTMLChecks(t *testing.T) {
	gbnReason := "5 violations (start-psn 1, psn-gap 2, 2 more not listed); first: conn 0 requester start-psn at PSN 4738522 " +
		"(PSN − IPSN 1, frame 3): first PSN 4738522, the metadata's IPSN is 4738521"
	analysis := [][]string{
		{"integrity", "pass", "", ""},
		{"gbn", "fail", "5 violations", gbnReason},
		{"retransmission", "pass", "1 loss (1 fast, 0 timeout, 0 rnr, 0 not retransmitted)", ""},
		{"timeout", "pass", "1 timeout episode", ""},
		{"cnp", "skip", "", NotSelected},
		{"counters", "skip", "", NotSelected},
		{"events", "fail", "3 events (1 delay, 1 reorder, 1 duplicate)", "1 of 2 events not as configured"},
		{"pfc", "inconclusive", "12 PFC frames, 1 episode (1 storm), 0 violations, 1 watchdog firing",
			"1 frames after the reaction bound within the timestamp uncertainty"},
	}
	for _, tc := range []struct {
		name string
		run  bool
		want [][]string
	}{
		{"analyze", false, analysis},
		{"run", true, slices.Concat(analysis[:1], [][]string{
			{"switch_state", "pass", "", ""},
			{"events_applied", "fail", "", "1 of 2 events applied"},
			{"generator", "pass", "0.1109 Gb/s goodput, 4194304 bytes", ""},
		}, analysis[1:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, run := failedRun()
			if !tc.run {
				run = nil
			}
			page, err := HTMLRun(r, run)
			if err != nil {
				t.Fatal(err)
			}
			if got := tableRows(t, string(page), "<h2>Checks</h2>"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Checks table:\n%s", rowsDiff(tc.want, got))
			}
		})
	}
}

// TestHTMLEvents: the events analyzer's entries are a table (measured
// and configured values, verdict, detail), and a run's configured events
// another, with whether each was applied.
func TestHTMLEvents(t *testing.T) {
	r, run := failedRun()
	page, err := HTMLRun(r, run)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"delay", "0", "data", "4738524", "3", "1", "1", "13", "100.008388ms", "hold 100.000088ms", "delay 100ms", "pass", ""},
		{"reorder", "1", "data", "7", "2", "1", "2", "20", "9.5µs", "hold 300ns, depth 1", "2 overtakers", "fail", "depth 1, 2 overtakers configured"},
		{"duplicate", "1", "response", "8", "3", "1", "-", "30", "10µs", "2 copies", "-", "-", ""},
	}
	if got := tableRows(t, string(page), `<table id="events">`); !reflect.DeepEqual(got, want) {
		t.Errorf("events table:\n%s", rowsDiff(want, got))
	}
	wantConfigured := [][]string{
		{"0", "0", "3", "3", "4738524", "1", "delay", "data", "delay 100ms", "yes", "100.008388ms"},
		{"1", "1", "0", "2", "7", "2", "reorder", "data", "2 overtakers", "no", "-"},
	}
	if got := tableRows(t, string(page), `<table id="configured-events">`); !reflect.DeepEqual(got, wantConfigured) {
		t.Errorf("configured events table:\n%s", rowsDiff(wantConfigured, got))
	}
	r.Checks.Events = events.Result{}
	if page, _ := HTMLRun(r, nil); strings.Contains(string(page), `id="events"`) || strings.Contains(string(page), `id="configured-events"`) {
		t.Error("a page without events has an events table")
	}
}

// TestHTMLTiming: the page's timing line says the run's timestamp
// uncertainty, lateness and slowdown (or the analysis's parameters), and
// a run's page its goodput.
func TestHTMLTiming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params model.Params
		run    *RunInfo
		want   string
	}{
		{"sim", model.Params{}, &RunInfo{Testbed: "sim", Timing: &RunTiming{}},
			"Timing (measured by the run): timestamps exact (uncertainty 0 ns, testbed sim)."},
		{"netns", model.Params{}, &RunInfo{Testbed: "netns", Timing: &RunTiming{UncertaintyNs: 1_500_000, Frames: 4000, LateP50Ns: 20_000,
			LateP99Ns: 900_000, LateMaxNs: 1_500_000, ClampMaxNs: 3_000, SentUncertaintyNs: 40_000, NICTimerLateNs: 2_000_000,
			NICPauseLateNs: 50_000, Slowdown: 4}},
			"Timing (measured by the run): timestamp uncertainty ±1500 µs: a measurement within it of a bound is inconclusive; " +
				"the switch pipeline ran 20 µs / 900 µs / 1500 µs (p50 / p99 / max) after arrival over 4000 frames; " +
				"timestamps raised by up to 3 µs to keep them in order; PFC frames the switch sent stamped up to 40 µs after departure; " +
				"requester RNIC timers up to 2000 µs late (allowed above the timeout bound); " +
				"RNICs applied PFC pauses up to 50 µs late (allowed above the reaction bound); " +
				"the software RNICs and switch ran 4× slower than the wall clock (netns-slowdown): times are on their clock."},
		{"analyze", model.Params{TimestampUncertaintyNs: 12_000, TimerLatenessNs: 7_000, SentUncertaintyNs: ptr[int64](0)}, nil,
			"Timing (from the metadata): timestamp uncertainty ±12 µs: a measurement within it of a bound is inconclusive; " +
				"requester RNIC timers up to 7 µs late (allowed above the timeout bound)."},
		{"analyze-exact", model.Params{}, nil, "Timing (from the metadata): timestamps exact (uncertainty 0 ns)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Params = tc.params
			page, err := HTMLRun(r, tc.run)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`<p id="timing">(.*)</p>`).FindStringSubmatch(string(page))
			if m == nil {
				t.Fatal("report.html has no timing line")
			}
			if got := html.UnescapeString(m[1]); got != tc.want {
				t.Errorf("timing line = %q, want %q", got, tc.want)
			}
		})
	}
	r, run := failedRun()
	page, err := HTMLRun(r, run)
	if err != nil {
		t.Fatal(err)
	}
	if want := `<p id="goodput">Traffic: 0.1109 Gb/s goodput, 4194304 bytes in 302.517 ms; responder memory verified.</p>`; !strings.Contains(string(page), want) {
		t.Errorf("report.html lacks %s", want)
	}
	run.Generator = &Generator{GoodputGbps: 0.5, Bytes: 100, DurationNs: 1e6, Stopped: "limit reached", Errors: []string{"qp 0: retry exceeded"}}
	page, _ = HTMLRun(r, run)
	if want := `<p id="goodput">Traffic: 0.5 Gb/s goodput, 100 bytes in 1.000 ms; responder memory <span class="fail">not verified</span>; ` +
		`<span class="fail">stopped: limit reached</span>; <span class="fail">errors: qp 0: retry exceeded</span>.</p>`; !strings.Contains(string(page), want) {
		t.Errorf("report.html lacks %s", want)
	}
}

// TestHTMLWatchdogs: the pfc analyzer's watchdog firings are in the
// graphs' data, on the graphs' time axis (ns after T0).
func TestHTMLWatchdogs(t *testing.T) {
	r := sample()
	conns := tracetest.Conns(1, 10, model.VerbWrite)
	r.Connections = conns
	r.Plots = plotsOf(t, conns, kindsWrite)
	t0 := r.Plots.T0
	r.PFC = pfc.Result{Verdict: model.Pass, Watchdogs: []pfc.Watchdog{
		{Kind: pfc.WatchdogSwitchStorm, Port: 2, Host: "responder", Priority: 3, AtNs: t0 + 50_110_244, Detail: "storm"},
		{Kind: pfc.WatchdogNIC, Port: 2, Host: "responder", Priority: 3, AtNs: t0 + 100_101_164, Detail: "nic"},
		{Kind: pfc.WatchdogSwitchRestore, Port: 2, Priority: 3, AtNs: t0 + 200_101_164, Detail: "restore"}}}
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []pageWatchdog{{T: 50_110_244, Kind: "switch-storm", Port: 2, Host: "responder", Priority: 3, Detail: "storm"},
		{T: 100_101_164, Kind: "nic", Port: 2, Host: "responder", Priority: 3, Detail: "nic"},
		{T: 200_101_164, Kind: "switch-restore", Port: 2, Priority: 3, Detail: "restore"}}
	if got := pageDataOf(t, string(page)).Watchdogs; !reflect.DeepEqual(got, want) {
		t.Errorf("graph data's watchdogs:\n%s", rowsDiff(want, got))
	}
}

// TestHTMLLoading: a page with graphs shows a loading indicator from the
// start (its script hides it once the graphs are drawn; hidden without
// JavaScript); a page without graphs has none.
func TestHTMLLoading(t *testing.T) {
	r := sample()
	conns := tracetest.Conns(1, 10, model.VerbWrite)
	r.Connections = conns
	r.Plots = plotsOf(t, conns, kindsWrite)
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	want := `<div id="loading" role="status">Loading the graphs (15 packets)…</div>`
	if i, j := strings.Index(s, want), strings.Index(s, `id="lumina-data"`); i < 0 || i > j {
		t.Errorf("report.html lacks %s before the graphs' data", want)
	}
	if !strings.Contains(s, `<noscript><style>#loading{display:none}</style></noscript>`) {
		t.Error("report.html shows the loading indicator without JavaScript")
	}
	r.Plots = nil
	if page, _ := HTML(r); strings.Contains(string(page), `id="loading"`) {
		t.Error("a page without graphs has a loading indicator")
	}
}

func TestCommas(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {5124, "5,124"}, {1062500, "1,062,500"}} {
		t.Run(tc.want, func(t *testing.T) {
			if got := commas(tc.n); got != tc.want {
				t.Errorf("commas(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
