package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// runReport is the part of a run's report.json TestReportBrowserRun
// checks the page against.
type runReport struct {
	Checks map[string]struct {
		Verdict string `json:"verdict"`
	} `json:"checks"`
	Events   []struct{} `json:"events"`
	Analysis struct {
		Checks struct {
			Events struct {
				Events []struct {
					Type    string `json:"type"`
					PSN     uint32 `json:"psn"`
					Verdict string `json:"verdict"`
				} `json:"events"`
			} `json:"events"`
			PFC struct {
				Watchdogs []struct {
					Kind string `json:"kind"`
					AtNs int64  `json:"at_ns"`
				} `json:"watchdogs"`
			} `json:"pfc"`
		} `json:"checks"`
	} `json:"analysis"`
}

func readRunReport(t *testing.T, run string) runReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r runReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return r
}

// openRunPage opens run's report.html and checks what every run page
// has: the loading indicator hidden once the graphs are drawn, a Checks
// row for every check of report.json with its verdict, the timing line.
func openRunPage(t *testing.T, chromium, run string) (*browser, runReport) {
	t.Helper()
	rep := readRunReport(t, run)
	b := openPage(t, chromium, filepath.Join(run, "report.html"), 60*time.Second)
	if st := evalJS[string](t, b, `(e => e ? (e.hidden ? "hidden" : "shown") + " " + getComputedStyle(e).display : "absent")(document.getElementById("loading"))`); st != "hidden none" {
		t.Errorf("loading indicator after the graphs are drawn: %s, want hidden none", st)
	}
	rows := evalJS[[][]string](t, b, `[...[...document.querySelectorAll("h2")].find(h => h.textContent === "Checks").nextElementSibling.rows].slice(1).map(tr => [...tr.cells].map(c => c.textContent))`)
	var got, want []string
	for _, r := range rows {
		got = append(got, r[0]+" "+r[1])
	}
	for n, c := range rep.Checks {
		want = append(want, n+" "+c.Verdict)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Checks table = %q, want every check of report.json: %q", got, want)
	}
	if tl := evalJS[string](t, b, `(document.getElementById("timing") || {}).textContent || ""`); tl != "Timing (measured by the run): timestamps exact (uncertainty 0 ns, testbed sim)." {
		t.Errorf("timing line = %q", tl)
	}
	if g := evalJS[string](t, b, `(document.getElementById("goodput") || {}).textContent || ""`); !strings.HasPrefix(g, "Traffic: ") || !strings.Contains(g, " Gb/s goodput, ") {
		t.Errorf("goodput line = %q", g)
	}
	return b, rep
}

// TestReportBrowserRun opens the report.html of sim runs of
// examples/pfc-storm.yaml, examples/delay-timeout.yaml and
// examples/fabric/pfc-deadlock-fixed.yaml: every check in the Checks
// table, the loading indicator hidden once drawn, the pfc analyzer's
// watchdog firings drawn on the graph (and their tooltip), the events
// tables, the fabric's per-hop latency table (report.json's flows.hops).
func TestReportBrowserRun(t *testing.T) {
	chromium := requireChromium(t)
	dir := t.TempDir()
	t.Run("pfc-storm", func(t *testing.T) {
		run := simRun(t, dir, "pfc-storm")
		b, rep := openRunPage(t, chromium, run)
		wds := rep.Analysis.Checks.PFC.Watchdogs
		if len(wds) != 3 {
			t.Fatalf("pfc-storm: %d watchdog firings in report.json, want 3 (switch storm, NIC, switch restore; docs/pfc.md)", len(wds))
		}
		t0, err := strconv.ParseInt(evalJS[string](t, b, "window.lumina.data.t0"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, w := range wds {
			want = append(want, fmt.Sprintf("%s %d", w.Kind, w.AtNs-t0))
		}
		if got := evalJS[[]string](t, b, `window.lumina.data.watchdogs.map(w => w.kind + " " + w.t)`); !slices.Equal(got, want) {
			t.Errorf("watchdogs in the graph data = %q, want %q", got, want)
		}
		if got := evalJS[[]int](t, b, "window.lumina.graphs.map(g => g.marks)"); !slices.Equal(got, []int{3}) {
			t.Errorf("watchdog markers drawn per graph = %v, want [3]", got)
		}
		if got := evalJS[[]string](t, b, `[...document.querySelectorAll(".legend .wd")].map(s => s.textContent)`); !slices.Equal(got,
			[]string{"PFC watchdog: switch storm (1)", "PFC watchdog: NIC watchdog (1)", "PFC watchdog: switch restore (1)"}) {
			t.Errorf("watchdog legend = %q", got)
		}
		// Hover the restore's marker (no packet near it: the link is idle
		// then): the tooltip names it.
		pos := evalJS[struct {
			X float64 `json:"x"`
			Y float64 `json:"y"`
		}](t, b, `(g => { g.box.scrollIntoView({block: "center"}); const r = g.u.over.getBoundingClientRect();
			const w = window.lumina.data.watchdogs[2]; return {x: r.left + g.u.valToPos(w.t, "x"), y: r.top + r.height / 2}; })(window.lumina.graphs[0])`)
		if err := chromedp.Do(b.ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos.X, pos.Y)); err != nil {
			t.Fatal(err)
		}
		if tip := evalJS[string](t, b, `(t => t.hidden ? "" : t.querySelector("b").textContent)(window.lumina.graphs[0].tip)`); !strings.HasPrefix(tip,
			"PFC watchdog: switch restore at ") || !strings.HasSuffix(tip, ", port 2 (responder), priority 3") {
			t.Errorf("tooltip over the restore's marker = %q", tip)
		}
		if errs := b.errors(); len(errs) > 0 {
			t.Errorf("console errors: %v", errs)
		}
	})
	t.Run("delay-timeout", func(t *testing.T) {
		run := simRun(t, dir, "delay-timeout")
		b, rep := openRunPage(t, chromium, run)
		evs := rep.Analysis.Checks.Events.Events
		var want []string
		for _, e := range evs {
			want = append(want, fmt.Sprintf("%s %d %s", e.Type, e.PSN, e.Verdict))
		}
		if len(want) == 0 {
			t.Fatal("delay-timeout: no events in report.json's analysis")
		}
		got := evalJS[[]string](t, b, `[...document.querySelectorAll("#events tr")].slice(1).map(tr => tr.cells[0].textContent + " " + tr.cells[3].textContent + " " + tr.cells[11].textContent)`)
		if !slices.Equal(got, want) {
			t.Errorf("events table = %q, want %q", got, want)
		}
		applied := evalJS[[]string](t, b, `[...document.querySelectorAll("#configured-events tr")].slice(1).map(tr => tr.cells[9].textContent)`)
		if len(applied) != len(rep.Events) || slices.Contains(applied, "no") {
			t.Errorf("configured events applied = %q, want yes for each of the %d events", applied, len(rep.Events))
		}
		if errs := b.errors(); len(errs) > 0 {
			t.Errorf("console errors: %v", errs)
		}
	})
	t.Run("fabric", func(t *testing.T) {
		test := filepath.Join("..", "..", "examples", "fabric", "pfc-deadlock-fixed.yaml")
		if code, stdout, stderr := runCLI("run", "-q", "--testbed", "sim", "-o", filepath.Join(dir, "fabric"), test); code != 0 {
			t.Fatalf("lumina run %s: exit %d\n%s%s", test, code, stdout, stderr)
		}
		run := filepath.Join(dir, "fabric", "pfc-deadlock-fixed", "0")
		b, _ := openRunPage(t, chromium, run)
		raw, err := os.ReadFile(filepath.Join(run, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Analysis struct {
				Flows struct {
					Hops []struct {
						Flow      string `json:"flow"`
						Direction string `json:"direction"`
						From      string `json:"from"`
						To        string `json:"to"`
						Samples   int64  `json:"samples"`
					} `json:"hops"`
				} `json:"flows"`
			} `json:"analysis"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, h := range rep.Analysis.Flows.Hops {
			want = append(want, fmt.Sprintf("%s %s %s → %s %d", h.Flow, h.Direction, h.From, h.To, h.Samples))
		}
		if len(want) == 0 {
			t.Fatal("pfc-deadlock-fixed: no hops in report.json's flows")
		}
		got := evalJS[[]string](t, b, `[...document.querySelectorAll("#hops tr")].slice(1).filter(tr => tr.offsetHeight > 0).map(tr => [0, 1, 2, 3].map(i => tr.cells[i].textContent).join(" "))`)
		if !slices.Equal(got, want) {
			t.Errorf("rendered hops table = %q, want %q", got, want)
		}
		if errs := b.errors(); len(errs) > 0 {
			t.Errorf("console errors: %v", errs)
		}
	})
}
