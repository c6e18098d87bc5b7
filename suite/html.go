package suite

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
)

// displayScale picks the unit quantities of u are plotted in.
func displayScale(u Unit, vals ...[]float64) (float64, string) {
	if u != UnitNs {
		return 1, string(u)
	}
	m := 0.0
	for _, v := range vals {
		for _, x := range v {
			m = max(m, math.Abs(x))
		}
	}
	switch {
	case m >= 1e9:
		return 1e9, "s"
	case m >= 1e6:
		return 1e6, "ms"
	case m >= 1e3:
		return 1e3, "µs"
	}
	return 1, "ns"
}

// plotData is one quantity's plot: BASE's and NEW's values in the
// display unit.
type plotData struct {
	ID   string    `json:"id"`
	Name string    `json:"name"`
	Unit string    `json:"unit"`
	Base []float64 `json:"base"`
	New  []float64 `json:"new"`
}

func newPlotData(id, name string, u Unit, base, new []float64) plotData {
	scale, unit := displayScale(u, base, new)
	scaled := func(v []float64) []float64 {
		out := make([]float64, 0, len(v))
		for _, x := range v {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				out = append(out, x/scale)
			}
		}
		return out
	}
	return plotData{ID: id, Name: name, Unit: unit, Base: scaled(base), New: scaled(new)}
}

type htmlQuantity struct {
	QuantityDiff
	Summary string
	// PlotID is the id of the plot's element; "" when neither side has
	// values.
	PlotID string
	Base   string
	New    string
	Doc    string
}

type htmlTest struct {
	*TestDiff
	Title      string
	BaseNICStr string
	NewNICStr  string
	Quantities []htmlQuantity
	Scopes     string
}

type htmlPage struct {
	D       *Diff
	Method  string
	Verdict string
	Totals  string
	Tests   []htmlTest
	// Plots is the plots' data (JSON list of plotData); UPlotJS,
	// UPlotCSS and PageJS the embedded scripts and style.
	Plots    template.JS
	UPlotJS  template.JS
	UPlotCSS template.CSS
	PageJS   template.JS
}

//go:embed diff.js
var diffJS string

// HTML returns a self-contained page (inline CSS and scripts, no external
// resources): the findings, then per test the checks, the CNP scopes, a
// table of the quantities and a BASE-vs-NEW plot of each, drawn by the
// embedded uPlot (the one report.html embeds): every value as a dot with
// the median and quartiles, and both empirical CDFs, so that tiny and
// constant samples read as well as large ones.
func (d *Diff) HTML() ([]byte, error) {
	pg := htmlPage{D: d, Method: d.Options.methodStr(), Verdict: "no regression", Totals: d.totals()}
	ujs, ucss := report.UPlot()
	pg.UPlotJS, pg.UPlotCSS, pg.PageJS = template.JS(ujs), template.CSS(ucss), template.JS(diffJS)
	plots := []plotData{}
	if d.Regressed() {
		pg.Verdict = "REGRESSION"
	}
	for _, t := range d.Tests {
		ht := htmlTest{TestDiff: t, Title: t.Name, BaseNICStr: nicStr(t.BaseNIC), NewNICStr: nicStr(t.NewNIC)}
		if t.NewName != "" {
			ht.Title += " → " + t.NewName
		}
		if t.BaseScopes != nil || t.NewScopes != nil {
			ht.Scopes = scopesStr(t.BaseScopes) + " → " + scopesStr(t.NewScopes)
		}
		for _, q := range t.Quantities {
			hq := htmlQuantity{QuantityDiff: q, Base: "-", New: "-"}
			if spec, ok := Spec(q.Name); ok {
				hq.Doc = spec.Doc
			}
			if q.BaseN > 0 {
				hq.Base = FormatValue(q.BaseMedian, q.Unit)
			}
			if q.NewN > 0 {
				hq.New = FormatValue(q.NewMedian, q.Unit)
			}
			if q.BaseN > 0 && q.NewN > 0 {
				hq.Summary = q.Summary(d.Options)
			}
			var bv, nv []float64
			if t.base != nil && t.base.Quantities[q.Name] != nil {
				bv = t.base.Quantities[q.Name].Values
			}
			if t.new != nil && t.new.Quantities[q.Name] != nil {
				nv = t.new.Quantities[q.Name].Values
			}
			if len(bv)+len(nv) > 0 {
				hq.PlotID = fmt.Sprintf("plot-%d", len(plots))
				plots = append(plots, newPlotData(hq.PlotID, q.Name, q.Unit, bv, nv))
			}
			ht.Quantities = append(ht.Quantities, hq)
		}
		pg.Tests = append(pg.Tests, ht)
	}
	j, err := json.Marshal(plots)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	pg.Plots = template.JS(j) // JSON: <, > and & are escaped by encoding/json
	var b bytes.Buffer
	if err := htmlTmpl.Execute(&b, pg); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	return b.Bytes(), nil
}

var htmlTmpl = template.Must(template.New("diff").Funcs(template.FuncMap{
	"upper":  func(c Class) string { return strings.ToUpper(string(c)) },
	"counts": countsStr,
	"verdict": func(c *CheckSummary) model.Verdict {
		if c == nil {
			return model.Skip
		}
		return c.Verdict()
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>lumina diff</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:90%}
th{background:#f0f0f0}.regression{background:#fdd}.improvement{background:#dfd}.change{background:#ffd}
.small,.underpowered,.unchanged{color:#666}code{background:#f4f4f4}
h2{border-bottom:2px solid #ccc;margin-top:2em}.verdict{font-size:120%;font-weight:bold}
.qplot{display:flex;flex-wrap:wrap;gap:0 1em;margin:.8em 0 1.2em}.qplot h4{width:100%;margin:.2em 0}
.qplot .u-legend table,.qplot .u-legend td,.qplot .u-legend th{border:0}
</style>
<style>{{.UPlotCSS}}</style></head><body>
<h1>lumina diff</h1>
<p>BASE <code>{{.D.Base}}</code> → NEW <code>{{.D.New}}</code></p>
<p>Method: {{.Method}}</p>
<p class="verdict {{if .D.Regressed}}regression{{end}}">{{.Verdict}}: {{.Totals}}</p>
{{if .D.Findings}}<h2>Findings</h2>
<table><tr><th>class</th><th>test</th><th>kind</th><th>subject</th><th>BASE</th><th>NEW</th><th>detail</th></tr>
{{range .D.Findings}}<tr class="{{.Class}}"><td>{{upper .Class}}</td><td>{{.Test}}</td><td>{{.Kind}}</td><td>{{.Subject}}</td><td>{{.Base}}</td><td>{{.New}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{end}}
{{range .Tests}}<h2>test {{.Title}}</h2>
<p>valid repeats: BASE {{or .BaseValid "absent"}}, NEW {{or .NewValid "absent"}}. NIC: BASE {{.BaseNICStr}} → NEW {{.NewNICStr}}.{{if .Scopes}} Consistent CNP pacing scopes: {{.Scopes}}.{{end}}</p>
{{if .Checks}}<table><tr><th>check</th><th>BASE</th><th>NEW</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td>{{verdict .Base}} ({{counts .Base}})</td><td>{{verdict .New}} ({{counts .New}})</td></tr>
{{end}}</table>{{end}}
{{if .Quantities}}<table><tr><th>quantity</th><th>n</th><th>median BASE</th><th>median NEW</th><th>test</th><th>status</th></tr>
{{range .Quantities}}<tr class="{{.Status}}"><td title="{{.Doc}}">{{.Name}}</td><td>{{.BaseN}}/{{.NewN}}</td><td>{{.Base}}</td><td>{{.New}}</td><td>{{.Summary}}</td><td>{{.Status}}</td></tr>
{{end}}</table>
{{range .Quantities}}{{if .PlotID}}<div class="qplot" id="{{.PlotID}}"></div>{{end}}{{end}}{{end}}
{{end}}<script type="application/json" id="diff-data">{{.Plots}}</script>
<script>{{.UPlotJS}}</script>
<script>{{.PageJS}}</script>
</body></html>
`))
