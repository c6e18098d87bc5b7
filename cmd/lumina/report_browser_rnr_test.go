package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestReportBrowserRNR: the page of Fig. 6 left (Fukuoka et al., Analyzing
// Performance Pitfalls of On-Demand Paging of InfiniBand; testdata/
// odp-two-reads.pcap: an RNR wait, then the 2nd READ's silent timeout)
// shows every packet's decode line as lumina decode prints it (the RNR
// NAK's with its timer), and its rnr script marks the wait and the
// silent timeout on the graph, with a legend entry each.
func TestReportBrowserRNR(t *testing.T) {
	chromium := requireChromium(t)
	page := filepath.Join(t.TempDir(), "odp.html")
	checkReport(t, chromium, filepath.Join("testdata", "odp-two-reads.pcap"), page, 0)
	b := openPage(t, chromium, page, 60*time.Second)
	// The rnr script attaches once the page is ready (it polls every 20 ms).
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool]("!!(window.lumina.graphs[0] && window.lumina.graphs[0].rnr)",
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the rnr marks: %v (errors: %v)", err, b.errors())
	}
	got := evalJS[[]any](t, b, `(() => { const g = window.lumina.graphs[0]; g.u.redraw(false);
		return [g.rnr.marks.length, g.rnr.drawn, Array.from(g.legend.querySelectorAll("span.rnr")).map((s) => s.textContent).join("; ")]; })()`)
	want := []any{float64(2), float64(2), "RNR wait (1); silent timeout (stall) (1)"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("rnr marks, drawn, legend = %v, want %v", got, want)
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
