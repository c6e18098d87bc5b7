package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// requireChromium returns the path of a headless-capable Chromium, or
// skips (fails with LUMINA_REQUIRE_ALL=1).
func requireChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return testutil.RequireTool(t, "chromium", "chromium")
}

// browser is a headless Chromium tab with a report page open.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	errs []string // console errors and uncaught exceptions; guarded by mu
}

// errors returns the console errors and uncaught exceptions so far.
func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errs)
}

// openPage opens the page at path in a new headless Chromium, waits for
// its script to be ready, and returns the tab; the browser is closed when
// the test ends.
func openPage(t testing.TB, chromium, path string, timeout time.Duration) *browser {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{}
	bctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + exceptionText(ev.ExceptionDetails)
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
				return
			}
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			msg = "console: " + strings.Join(args, " ")
		default:
			return
		}
		b.mu.Lock()
		b.errs = append(b.errs, msg)
		b.mu.Unlock()
	}))
	ctx, cancelTimeout := context.WithTimeout(bctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()   // closes the tab and the browser
		cancelAlloc() // waits for chromium to exit and removes its profile
	})
	b.ctx = ctx
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs)); err != nil {
		t.Fatalf("opening %s in chromium: %v (errors: %v)", path, err, b.errors())
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!(window.lumina && (window.lumina.ready || window.lumina.error !== undefined))",
		chromedp.WithPollingTimeout(timeout))); err != nil {
		t.Fatalf("waiting for %s in chromium: %v (errors: %v)", path, err, b.errors())
	}
	jsErr := evalJS[string](t, b, "window.lumina.error || ''")
	if jsErr != "" {
		t.Fatalf("%s: the page's script failed: %s", path, jsErr)
	}
	return b
}

// evalJS evaluates js in b's page and returns its value.
func evalJS[T any](t testing.TB, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %.80q: %v", js, err)
	}
	return v
}

// decodeLines returns lumina decode's text line of every frame of the
// trace, by index, as `lumina decode TRACE` prints them.
func decodeLines(t testing.TB, path string) []string {
	t.Helper()
	code, stdout, stderr := runCLI("decode", path)
	if code != 0 {
		t.Fatalf("lumina decode %s: exit %d: %s", path, code, stderr)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// connPackets counts, independently of the analyzers, the RoCE frames of
// each connection of the report (by addresses and destination QP), by
// connection ID.
func connPackets(t testing.TB, path string, conns []reportConn) map[int]int {
	t.Helper()
	parser := roce.Parser{MirrorPort: roce.DefaultMirrorPort}
	var pk roce.Packet
	n := map[int]int{}
	err := trace.ReadFile(path, func(tp trace.Packet) error {
		if tp.IsMACMirror() || parser.Parse(tp.Data, tp.OrigLen, &pk) != nil {
			return nil
		}
		qp := pk.BTH.DestQP()
		for _, c := range conns {
			if pk.SrcIP == c.Requester.IP && pk.DstIP == c.Responder.IP && qp == c.Responder.QPN ||
				pk.SrcIP == c.Responder.IP && pk.DstIP == c.Requester.IP && qp == c.Requester.QPN {
				n[c.ID]++
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type reportEndpoint struct {
	IP  netip.Addr `json:"ip"`
	QPN uint32     `json:"qpn"`
}

type reportConn struct {
	ID        int            `json:"id"`
	Requester reportEndpoint `json:"requester"`
	Responder reportEndpoint `json:"responder"`
}

// graphInfo is what the page says about graph k.
type graphInfo struct {
	ID      int       `json:"id"`
	N       int       `json:"n"`
	Drawn   int       `json:"drawn"`
	Sampled bool      `json:"sampled"`
	InView  int       `json:"inView"`
	Idx     []int     `json:"idx"`
	T       []float64 `json:"t"`
	Rel     []int     `json:"rel"`
}

// checkReport opens the page of trace (made by lumina analyze --html) and
// checks it: no console errors; the first 16 connections' graphs are made
// at once, the others when asked for; every connection's graph holds and,
// at full zoom, draws one point per packet of the connection; the page's
// decode line of every packet (up to maxLines per graph; all when 0) is
// lumina decode's; hovering packets shows their decode line. It returns
// the page's load time.
func checkReport(t *testing.T, chromium, tracePath, page string, maxLines int) time.Duration {
	t.Helper()
	code, stdout, stderr := runCLI("analyze", "--format", "json", "--html", page, tracePath)
	if code != 0 && code != 1 {
		t.Fatalf("lumina analyze --html: exit %d: %s", code, stderr)
	}
	var rep struct {
		Connections []reportConn `json:"connections"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("lumina analyze --format json: %v", err)
	}
	want := connPackets(t, tracePath, rep.Connections)
	lines := decodeLines(t, tracePath)

	b := openPage(t, chromium, page, 90*time.Second)
	loadMs := evalJS[float64](t, b, "window.lumina.loadMs")
	if n := evalJS[int](t, b, "window.lumina.graphs.length"); n != min(len(want), 16) {
		t.Errorf("%s: %d graphs when the page opens, want %d (the first 16 of %d connections with packets)", page, n, min(len(want), 16), len(want))
	}
	showAll(t, b)
	graphs := evalJS[[]graphInfo](t, b, `window.lumina.graphs.map(g => ({id: g.c.id, n: g.c.n, drawn: g.drawn, sampled: g.sampled, inView: g.inView,
		idx: Array.from(g.c.idx), t: Array.from(g.c.t), rel: Array.from(g.c.rel)}))`)
	if len(graphs) != len(want) {
		t.Errorf("%s: %d graphs, want one per connection with packets: %v", page, len(graphs), want)
	}
	for k, g := range graphs {
		if g.N != want[g.ID] {
			t.Errorf("graph %d (connection %d) holds %d packets, the trace has %d", k, g.ID, g.N, want[g.ID])
		}
		if g.InView != g.N || g.Drawn != g.N && !g.Sampled {
			t.Errorf("graph %d at full zoom: %d packets in view, %d drawn (sampled %v); want all %d", k, g.InView, g.Drawn, g.Sampled, g.N)
		}
		n := g.N
		if maxLines > 0 {
			n = min(n, maxLines)
		}
		got := evalJS[[]string](t, b, fmt.Sprintf("Array.from({length: %d}, (_, i) => window.lumina.line(%d, i))", n, k))
		bad := 0
		for i, line := range got {
			if w := lines[g.Idx[i]]; line != w {
				if bad++; bad <= 3 {
					t.Errorf("graph %d packet %d (frame %d):\npage:   %s\ndecode: %s", k, i, g.Idx[i], line, w)
				}
			}
		}
		if bad > 3 {
			t.Errorf("graph %d: %d of %d lines differ from lumina decode", k, bad, len(got))
		}
		// Hover a few packets, each alone in a zoomed window.
		for _, i := range hoverPicks(g) {
			pos := evalJS[struct {
				X float64 `json:"x"`
				Y float64 `json:"y"`
			}](t, b, fmt.Sprintf("(g => { g.box.scrollIntoView({block: 'center'}); g.zoom(%v - 20, %v + 20); return g.pos(%d); })(window.lumina.graphs[%d])",
				g.T[i], g.T[i], i, k))
			// uPlot commits the new scales after the task: ask again.
			pos = evalJS[struct {
				X float64 `json:"x"`
				Y float64 `json:"y"`
			}](t, b, fmt.Sprintf("window.lumina.graphs[%d].pos(%d)", k, i))
			if err := chromedp.Do(b.ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos.X, pos.Y)); err != nil {
				t.Fatal(err)
			}
			tip := evalJS[struct {
				Hover int    `json:"hover"`
				Line  string `json:"line"`
				Meta  string `json:"meta"`
			}](t, b, fmt.Sprintf(`(g => ({hover: g.hover, line: (g.tip.querySelector(".line") || {}).textContent || "",
				meta: (g.tip.querySelector(".meta") || {}).textContent || ""}))(window.lumina.graphs[%d])`, k))
			if tip.Hover != i || tip.Line != lines[g.Idx[i]] {
				t.Errorf("graph %d: hovering packet %d (frame %d) shows packet %d, line\n%s\nwant\n%s", k, i, g.Idx[i], tip.Hover, tip.Line, lines[g.Idx[i]])
			}
			// The mirror metadata, spelled out: "[mirror seq=S ts=T" in
			// the line is "mirror seq S, switch timestamp T ns".
			var seq, ts uint64
			if _, err := fmt.Sscanf(lines[g.Idx[i]][strings.Index(lines[g.Idx[i]], "[mirror")+1:], "mirror seq=%d ts=%d", &seq, &ts); err == nil {
				if want := fmt.Sprintf("mirror seq %d, switch timestamp %d ns, frame %d", seq, ts, g.Idx[i]); tip.Meta != want {
					t.Errorf("graph %d packet %d: tooltip says %q, want %q", k, i, tip.Meta, want)
				}
			}
		}
		evalJS[int](t, b, fmt.Sprintf("window.lumina.graphs[%d].zoom(-Infinity, Infinity), 0", k))
	}
	if len(b.errors()) > 0 {
		t.Errorf("%s: console errors: %s", page, strings.Join(b.errors(), "\n"))
	}
	return time.Duration(loadMs * float64(time.Millisecond))
}

// showAll has the page make the graphs of every connection beyond the
// first 16 (its "Show all" button) and waits for them.
func showAll(t testing.TB, b *browser) {
	t.Helper()
	evalJS[int](t, b, "window.lumina.shownAll = false, window.lumina.showAll().then(() => window.lumina.shownAll = true), 0")
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool]("window.lumina.shownAll === true", chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("waiting for the other connections' graphs: %v (errors: %v)", err, b.errors())
	}
}

// hoverPicks chooses up to 4 packets of g that no other packet shares a
// position with (first, last, and two in between).
func hoverPicks(g graphInfo) []int {
	var out []int
	for _, i := range []int{0, g.N / 3, 2 * g.N / 3, g.N - 1} {
		if i < 0 || i >= g.N || len(out) > 0 && out[len(out)-1] == i {
			continue
		}
		alone := true
		for j := max(0, i-50); j < min(g.N, i+50); j++ {
			if j != i && g.T[j] > g.T[i]-25 && g.T[j] < g.T[i]+25 && g.Rel[j] == g.Rel[i] {
				alone = false
			}
		}
		if alone {
			out = append(out, i)
		}
	}
	return out
}

// TestReportBrowser opens report pages in headless Chromium: the traces of
// analyzers/report/testdata (every packet kind, with and without mirror
// metadata) and sim runs of examples/quickstart.yaml and (unless -short)
// examples/fast-retransmission-100k.yaml, whose page load time it logs.
func TestReportBrowser(t *testing.T) {
	chromium := requireChromium(t)
	dir := t.TempDir()
	for _, name := range []string{"kinds-mirror", "kinds-foreign"} {
		t.Run(name, func(t *testing.T) {
			checkReport(t, chromium, filepath.Join("..", "..", "analyzers", "report", "testdata", name+".pcap"), filepath.Join(dir, name+".html"), 0)
		})
	}
	t.Run("epoch", func(t *testing.T) {
		path := filepath.Join(dir, "epoch.pcap")
		writeSynth(t, path, 3000)
		checkReport(t, chromium, path, filepath.Join(dir, "epoch.html"), 0)
	})
	t.Run("quickstart", func(t *testing.T) {
		run := simRun(t, dir, "quickstart")
		d := checkReport(t, chromium, filepath.Join(run, "trace.pcap"), filepath.Join(dir, "quickstart.html"), 0)
		t.Logf("quickstart: page ready %v after navigation", d)
		// lumina run's own report.html is the same page with the run's header.
		b := openPage(t, chromium, filepath.Join(run, "report.html"), 60*time.Second)
		h1 := evalJS[string](t, b, "document.querySelector('h1').textContent + ' ' + window.lumina.graphs.length")
		if !strings.HasPrefix(h1, "quickstart repeat 0: PASS ") || strings.HasSuffix(h1, " 0") {
			t.Errorf("run report.html: heading and graphs %q", h1)
		}
		if len(b.errors()) > 0 {
			t.Errorf("run report.html: console errors: %v", b.errors())
		}
	})

	// Held packets: each packet's line shows the hold its copy carries,
	// as lumina decode prints it.
	t.Run("reorder-cx5", func(t *testing.T) {
		run := simRun(t, dir, "reorder-cx5")
		checkReport(t, chromium, filepath.Join(run, "trace.pcap"), filepath.Join(dir, "reorder-cx5.html"), 0)
	})

	// 20 connections: 16 graphs at once, 4 on demand (through the page's
	// select and "Show" button for one of them).
	t.Run("20-connections", func(t *testing.T) {
		src, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		yml := strings.Replace(strings.Replace(string(src), "name: quickstart", "name: conns20", 1), "num-connections: 2", "num-connections: 20", 1)
		path := filepath.Join(dir, "conns20.yaml")
		if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, stdout, stderr := runCLI("run", "-q", "--testbed", "sim", "-o", dir, path); code != 0 {
			t.Fatalf("lumina run conns20: exit %d\n%s%s", code, stdout, stderr)
		}
		run := filepath.Join(dir, "conns20", "0")
		b := openPage(t, chromium, filepath.Join(run, "report.html"), 60*time.Second)
		got := evalJS[[]int](t, b, `(() => {
			const sel = document.querySelector(".more select");
			sel.value = sel.options[2].value;
			document.querySelector(".more button").click();
			return window.lumina.graphs.map(g => g.c.id);
		})()`)
		if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
			t.Errorf("graphs when the page opens: connections %v, want 0..15", got)
		}
		if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool]("window.lumina.graphs.length === 17", chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("the picked connection's graph: %v (errors: %v)", err, b.errors())
		}
		if got := evalJS[[]any](t, b, `[window.lumina.graphs[16].c.id, document.querySelectorAll(".more option").length,
			document.querySelector(".more span").textContent]`); fmt.Sprint(got) != "[18 3 3 more connections: ]" {
			t.Errorf("after showing the third of the others: %v, want [18 3 3 more connections: ] (graph of connection 18, 3 left to pick)", got)
		}
		checkReport(t, chromium, filepath.Join(run, "trace.pcap"), filepath.Join(dir, "conns20.html"), 0)
	})

	t.Run("fast-retransmission-100k", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: a 3 s sim run")
		}
		run := simRun(t, dir, "fast-retransmission-100k")
		d := checkReport(t, chromium, filepath.Join(run, "trace.pcap"), filepath.Join(dir, "fr100k.html"), 0)
		page := filepath.Join(run, "report.html")
		b := openPage(t, chromium, page, 60*time.Second)
		n := evalJS[[]int](t, b, "window.lumina.graphs.map(g => g.drawn)")
		st, _ := os.Stat(page)
		t.Logf("fast-retransmission-100k: report.html %d bytes, ready %v after navigation (analyze --html page: %v), points drawn %v",
			st.Size(), time.Duration(evalJS[float64](t, b, "window.lumina.loadMs")*float64(time.Millisecond)), d, n)
	})
}

// simRun runs examples/NAME.yaml on the sim testbed into dir and returns
// its run directory.
func simRun(t testing.TB, dir, name string) string {
	t.Helper()
	if code, stdout, stderr := runCLI("run", "-q", "--testbed", "sim", "-o", dir, filepath.Join("..", "..", "examples", name+".yaml")); code != 0 {
		t.Fatalf("lumina run %s: exit %d\n%s%s", name, code, stdout, stderr)
	}
	return filepath.Join(dir, name, "0")
}

// BenchmarkReportLoad measures how long the report page of
// examples/fast-retransmission-100k.yaml takes to be ready in headless
// Chromium (ms/load: from navigation to the graphs drawn, by the page's
// clock).
func BenchmarkReportLoad(b *testing.B) {
	chromium := requireChromium(b)
	page := filepath.Join(simRun(b, b.TempDir(), "fast-retransmission-100k"), "report.html")
	var total float64
	for b.Loop() {
		br := openPage(b, chromium, page, 60*time.Second)
		total += evalJS[float64](b, br, "window.lumina.loadMs")
	}
	b.ReportMetric(total/float64(b.N), "ms/load")
}

func exceptionText(d *runtime.ExceptionDetails) string {
	s := d.Text
	if d.Exception != nil {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (line %d)", s, d.LineNumber)
}

// TestReportBrowserMillion checks that a page of one connection with a
// million packets opens and stays responsive: the load time, a zoom to the
// whole trace (points drawn once per pixel) and into 1,000 packets (every
// packet) are logged. It takes a minute; run it with LUMINA_REPORT_1M=1.
func TestReportBrowserMillion(t *testing.T) {
	if os.Getenv("LUMINA_REPORT_1M") != "1" {
		t.Skip("set LUMINA_REPORT_1M=1 to open a page of a million packets")
	}
	chromium := requireChromium(t)
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "million.pcap")
	writeSynth(t, tracePath, 1_000_000)
	page := filepath.Join(dir, "million.html")
	start := time.Now()
	if code, _, stderr := runCLI("analyze", "--html", page, tracePath); code != 0 && code != 1 {
		t.Fatalf("lumina analyze: exit %d: %s", code, stderr)
	}
	st, _ := os.Stat(page)
	t.Logf("analyze --html: %v, page %d bytes", time.Since(start), st.Size())
	b := openPage(t, chromium, page, 120*time.Second)
	type stats struct {
		N      int     `json:"n"`
		Drawn  int     `json:"drawn"`
		InView int     `json:"inView"`
		Ms     float64 `json:"ms"`
	}
	js := func(zoom string) stats {
		return evalJS[stats](t, b, `(g => { const t0 = performance.now(); `+zoom+`;
			return {n: g.c.n, drawn: g.drawn, inView: g.inView, ms: performance.now() - t0}; })(window.lumina.graphs[0])`)
	}
	t.Logf("ready %.0f ms after navigation; %s", evalJS[float64](t, b, "window.lumina.loadMs"),
		evalJS[string](t, b, "JSON.stringify(window.lumina.timing)"))
	full := js("g.zoom(-Infinity, Infinity)")
	t.Logf("whole trace: %d packets, %d in view, %d drawn, %.0f ms", full.N, full.InView, full.Drawn, full.Ms)
	in := js("g.zoom(g.c.t[500000], g.c.t[501000])")
	t.Logf("zoomed in: %d in view, %d drawn, %.0f ms", in.InView, in.Drawn, in.Ms)
	if full.N < 1_000_000 || in.Drawn != in.InView {
		t.Errorf("graph: %+v, zoomed in %+v; want every packet held, and drawn when zoomed in", full, in)
	}
	// Every 997th packet's line against lumina decode's (in process).
	idx := evalJS[[]int](t, b, "Array.from(window.lumina.graphs[0].c.idx)")
	got := evalJS[[]string](t, b, "Array.from({length: Math.ceil(window.lumina.graphs[0].c.n / 997)}, (_, k) => window.lumina.line(0, k * 997))")
	want := map[int]string{}
	for k := range got {
		want[idx[k*997]] = ""
	}
	decodeFrames(t, tracePath, want)
	for k, line := range got {
		if w := want[idx[k*997]]; line != w {
			t.Errorf("packet %d (frame %d):\npage:   %s\ndecode: %s", k*997, idx[k*997], line, w)
			break
		}
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// writeSynth writes a mirror trace of one WRITE connection: n data
// packets, an ACK every 16 and every 5000th packet dropped. Capture times
// are epoch nanoseconds, the switch's 48-bit timestamps their low bits: the
// two clocks are 1.7e18 ns apart, beyond float64's exact integers.
func writeSynth(t testing.TB, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := trace.NewPcapWriter(bw, 96, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	req, rsp := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	data := roce.FrameSpec{SrcIP: req, DstIP: rsp, DestQP: 0x22, UDPSrc: 0xC000, Opcode: roce.RCWriteMiddle, Payload: make([]byte, 1024)}
	ack := roce.FrameSpec{SrcIP: rsp, DstIP: req, DestQP: 0x11, UDPSrc: 0xC001, Opcode: roce.RCAcknowledge}
	var seq uint64
	tns := int64(1_700_000_000_000_000_000)
	put := func(fs roce.FrameSpec, ev roce.Event) {
		b, err := fs.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		seq++
		tns += 100
		if !roce.ApplyMirror(b, roce.MirrorMeta{Seq: seq, TimestampNs: uint64(tns) & roce.MirrorTimeMask, Event: ev}, roce.DefaultMirrorPort, 0x1234) ||
			!roce.RestoreMirror(b, roce.DefaultMirrorPort) {
			t.Fatal("mirror codec failed")
		}
		if err := w.WritePacket(tns, b, len(b)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		data.PSN = roce.PSN(i).Add(0)
		ev := roce.EventNone
		if i%5000 == 4999 {
			ev = roce.EventDrop
		}
		put(data, ev)
		if i%16 == 15 {
			ack.PSN = data.PSN
			ack.AETH = roce.AETHFields{Syndrome: roce.ACKSyndrome(roce.CreditCountInvalid), MSN: uint32(i / 16)}
			put(ack, roce.EventNone)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestDiffBrowser opens lumina diff's page in headless Chromium: no
// console errors, two plots (values, CDFs) per quantity, and every value
// of both sides within the axes (a constant sample too).
func TestDiffBrowser(t *testing.T) {
	chromium := requireChromium(t)
	tmp := t.TempDir()
	diffSetup(t, tmp)
	page := filepath.Join(tmp, "diff.html")
	if code, _, stderr := runCLI("diff", "--html", page, filepath.Join(tmp, "base"), filepath.Join(tmp, "new")); code != 1 {
		t.Fatalf("lumina diff --html: exit %d: %s", code, stderr)
	}
	b := openPage(t, chromium, page, 60*time.Second)
	type plot struct {
		ID      string `json:"id"`
		Charts  int    `json:"charts"`
		Outside int    `json:"outside"`
		Values  int    `json:"values"`
	}
	plots := evalJS[[]plot](t, b, `window.lumina.plots.map(p => ({id: p.id,
		charts: document.getElementById(p.id).querySelectorAll(".uplot").length,
		outside: [p.dots, p.cdf].reduce((n, u) => n + [...p.base, ...p.new].filter(v => v < u.scales.x.min || v > u.scales.x.max).length, 0),
		values: p.base.length + p.new.length}))`)
	quantities := evalJS[int](t, b, `document.querySelectorAll(".qplot").length`)
	if len(plots) != quantities || quantities < 6 {
		t.Errorf("%d plots drawn of %d quantities, want all (>= 6)", len(plots), quantities)
	}
	for _, p := range plots {
		if p.Charts != 2 || p.Outside != 0 || p.Values == 0 {
			t.Errorf("plot %s: %d charts, %d of %d values outside the axes; want 2 charts, none outside", p.ID, p.Charts, p.Outside, p.Values)
		}
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// decodeFrames fills want[i] with lumina decode's text line of frame i, for
// the frames want lists.
func decodeFrames(t testing.TB, path string, want map[int]string) {
	t.Helper()
	d := decoder{mirrorMode: "auto", parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort, VerifyICRC: true}}
	err := trace.ReadFile(path, func(p trace.Packet) error {
		d.frame(p)
		if _, ok := want[p.Index]; ok {
			want[p.Index] = strings.TrimSuffix(string(d.buf), "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
