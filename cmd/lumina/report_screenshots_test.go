package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color/palette"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestReportScreenshots runs every example of examples/ on the sim testbed,
// opens each report.html in headless Chromium (no console errors, every
// graph drawn) and, with LUMINA_SCREENSHOTS=DIR, writes DIR/NAME.png: the
// page's header and first graph; plus hover.png (a tooltip and a loss's
// breakdown, quickstart) and diff.png (lumina diff of two quickstart
// runs). docs/report/ holds the screenshots:
//
//	LUMINA_SCREENSHOTS=$PWD/docs/report go test ./cmd/lumina -run TestReportScreenshots
//
// Without LUMINA_SCREENSHOTS it is skipped unless LUMINA_REPORT_EXAMPLES=1.
func TestReportScreenshots(t *testing.T) {
	out := os.Getenv("LUMINA_SCREENSHOTS")
	if out == "" && os.Getenv("LUMINA_REPORT_EXAMPLES") != "1" {
		t.Skip("set LUMINA_SCREENSHOTS=DIR to write screenshots, or LUMINA_REPORT_EXAMPLES=1 to open every example's page")
	}
	chromium := requireChromium(t)
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	dir := t.TempDir()
	code, stdout, stderr := runCLI(append([]string{"run", "-q", "--testbed", "sim", "-o", dir}, examples...)...)
	t.Logf("lumina run: exit %d\n%s%s", code, stdout, stderr)
	for _, ex := range examples {
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		t.Run(name, func(t *testing.T) {
			pg := filepath.Join(dir, name, "0", "report.html")
			st, err := os.Stat(pg)
			if err != nil {
				t.Skipf("no report: %v", err)
			}
			b := openPage(t, chromium, pg, 60*time.Second)
			graphs := evalJS[[]int](t, b, "window.lumina.graphs.map(g => g.drawn)")
			t.Logf("report.html %d bytes, ready %.0f ms, points drawn per graph %v", st.Size(), evalJS[float64](t, b, "window.lumina.loadMs"), graphs)
			if errs := b.errors(); len(errs) > 0 {
				t.Errorf("console errors: %v", errs)
			}
			if out != "" {
				screenshot(t, b, filepath.Join(out, name+".png"), "(document.querySelector('.graph') || document.querySelector('h1')).getBoundingClientRect().bottom")
			}
			if name == "quickstart" && out != "" {
				// A tooltip and a loss's breakdown: hover and click a drop.
				pos := evalJS[struct {
					X float64 `json:"x"`
					Y float64 `json:"y"`
				}](t, b, `(() => { const g = window.lumina.graphs.find(g => g.c.counts[2] > 0); const c = g.c;
					let i = 0; while (c.cls[i] !== 2) i++; g.box.scrollIntoView(); g.zoom(c.t[i] - 40000, c.t[i] + 60000);
					window.scrollTo(0, g.box.offsetTop); g.hoverIdx = i; return {x: 0, y: 0}; })()`)
				pos = evalJS[struct {
					X float64 `json:"x"`
					Y float64 `json:"y"`
				}](t, b, `(g => g.pos(g.hoverIdx))(window.lumina.graphs.find(g => g.hoverIdx !== undefined))`)
				if err := chromedp.Do(b.ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos.X, pos.Y),
					chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, pos.X, pos.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
					chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, pos.X, pos.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
					chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos.X, pos.Y)); err != nil {
					t.Fatal(err)
				}
				if l := evalJS[string](t, b, "window.lumina.lastLoss ? window.lumina.lastLoss.event : ''"); l == "" {
					t.Errorf("clicking a drop shows no loss breakdown")
				}
				screenshot(t, b, filepath.Join(out, "hover.png"), "(g => g.box.getBoundingClientRect().bottom)(window.lumina.graphs.find(g => g.hoverIdx !== undefined))")
			}
		})
	}
	if out != "" {
		t.Run("diff", func(t *testing.T) {
			nd := t.TempDir()
			if code, _, stderr := runCLI("run", "-q", "--testbed", "sim", "--seed", "7", "-o", nd, filepath.Join("..", "..", "examples", "quickstart.yaml")); code != 0 {
				t.Skipf("second quickstart run: exit %d: %s", code, stderr)
			}
			pg := filepath.Join(nd, "diff.html")
			runCLI("diff", "--html", pg, filepath.Join(dir, "quickstart"), filepath.Join(nd, "quickstart"))
			b := openPage(t, chromium, pg, 60*time.Second)
			if errs := b.errors(); len(errs) > 0 {
				t.Errorf("console errors: %v", errs)
			}
			screenshot(t, b, filepath.Join(out, "diff.png"), "document.querySelectorAll('.qplot')[1].getBoundingClientRect().bottom")
		})
	}
}

// screenshot writes the page from its top (document coordinates: the
// view's scroll is added) down to the bottom given by js (viewport
// coordinates) as a 256-colour PNG.
func screenshot(t *testing.T, b *browser, path, js string) {
	t.Helper()
	clip := evalJS[struct {
		Y float64 `json:"y"`
		W float64 `json:"w"`
		H float64 `json:"h"`
	}](t, b, fmt.Sprintf("({y: 0, w: document.documentElement.clientWidth, h: %s + window.scrollY + 12})", js))
	data, err := chromedp.Run(b.ctx, chromedp.Action[[]byte](func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		yes := true
		r, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng,
			CaptureBeyondViewport: &yes, Clip: &page.Viewport{X: 0, Y: clip.Y, Width: clip.W, Height: clip.H, Scale: 1}})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pal := image.NewPaletted(img.Bounds(), palette.Plan9)
	draw.Draw(pal, img.Bounds(), img, image.Point{}, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, pal); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", path, buf.Len())
}
