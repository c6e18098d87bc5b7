package suite

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/cnp"
	"github.com/netlumina/lumina/analyzers/counters"
	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/timeout"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/orchestrator"
)

// fakeRun describes one synthetic repeat.
type fakeRun struct {
	personality string
	invalid     bool
	reaction    []int64 // fast losses' NACK reaction (generation is 1100 ns)
	timeouts    [][]int64
	cnpScopes   []string // nil: cnp check skipped
	cnpObserved int
	violations  []string // gbn rules (receiver side)
	counterBad  bool     // packet_seq_err mismatches
	goodput     float64
	mct         []int64
	failCheck   string
	versions    bool
	verdicts    map[string]model.Verdict // more check verdicts (cnp: also the analysis')
}

func i64(v int64) *int64 { return &v }

func (f fakeRun) report(test string, rep int) any {
	r := &orchestrator.Report{Schema: orchestrator.ReportSchema, Test: test, File: test + ".yaml", Repeat: rep, Seed: 3, Testbed: "sim",
		Personality: map[orchestrator.Side]string{orchestrator.Requester: f.personality, orchestrator.Responder: f.personality}, Valid: !f.invalid,
		Checks: map[string]orchestrator.CheckEntry{"integrity": {Verdict: "pass"}}}
	if f.invalid {
		r.Checks["integrity"] = orchestrator.CheckEntry{Verdict: "fail", Detail: "dumper dropped packets"}
	} else {
		r.Checks["gbn"] = orchestrator.CheckEntry{Verdict: "pass"}
		r.Checks["counters"] = orchestrator.CheckEntry{Verdict: "pass"}
		if f.failCheck != "" {
			r.Checks[f.failCheck] = orchestrator.CheckEntry{Verdict: "fail", Detail: "synthetic"}
		}
		a := &areport.Report{Valid: true}
		c := &a.Checks
		c.Retransmission.Losses = []retransmission.Loss{}
		for _, v := range f.reaction {
			c.Retransmission.Losses = append(c.Retransmission.Losses, retransmission.Loss{Kind: retransmission.KindFast,
				NACKGenerationNs: i64(1100), NACKReactionNs: i64(v), RetransmissionNs: i64(v + 2000)})
		}
		for _, iv := range f.timeouts {
			c.Timeout.Timeouts = append(c.Timeout.Timeouts, timeout.Timeout{IntervalsNs: iv, Retries: len(iv)})
		}
		c.CNP = cnp.Result{Verdict: model.Skip}
		if f.cnpScopes != nil {
			c.CNP = cnp.Result{Verdict: model.Pass, Observed: f.cnpObserved, ConsistentScopes: f.cnpScopes}
		}
		for _, v := range f.violations {
			c.GBN.Violations = append(c.GBN.Violations, gbn.Violation{Side: "receiver", Rule: v})
		}
		c.Counters.Checked = []counters.Checked{{NIC: "requester", Counter: "packet_seq_err", OK: !f.counterBad}}
		for name, v := range f.verdicts {
			r.Checks[name] = orchestrator.CheckEntry{Verdict: v}
			if name == "cnp" {
				c.CNP.Verdict = v
			}
		}
		r.Analysis = a
		r.Generator = &orchestrator.GeneratorReport{GoodputGbps: f.goodput, QPs: []generator.QPResult{{MCTNs: f.mct}}}
	}
	if !f.versions {
		return r
	}
	return struct {
		*orchestrator.Report
		Versions map[string]map[string]string `json:"nic_versions"`
	}{r, map[string]map[string]string{"requester": {"driver": "mlx5_core", "driver_version": "5.8-1", "firmware": "16.35.2000"}}}
}

// writeRuns writes OUT/<test>/<repeat>/report.json.
func writeRuns(t *testing.T, out string, tests map[string][]fakeRun) {
	t.Helper()
	for name, runs := range tests {
		for i, f := range runs {
			dir := filepath.Join(out, name, strconvI(i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(f.report(name, i))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func strconvI(i int) string { return string(rune('0' + i)) }

func TestSummarize(t *testing.T) {
	out := t.TempDir()
	writeRuns(t, out, map[string][]fakeRun{
		"fast": {
			{personality: "cx5", reaction: []int64{3000, 3100}, goodput: 10, mct: []int64{100, 200}, cnpScopes: []string{"per-ip-pair", "per-qp"}, versions: true},
			{personality: "cx5", reaction: []int64{3200}, goodput: 12, mct: []int64{300}, cnpScopes: []string{"per-qp"}, violations: []string{"missing-nak", "missing-nak"}, failCheck: "gbn"},
			{personality: "cx5", invalid: true},
		},
		"to": {{personality: "cx4", timeouts: [][]int64{{10, 20}, {30}}, goodput: 1, mct: []int64{5}}},
	})
	// Kept older results and stray files are not repeats.
	for _, p := range []string{"fast/0.replaced-20250101T000000.000/report.json", ".run-0-123/report.json", "fast/7/notes.txt"} {
		os.MkdirAll(filepath.Join(out, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(out, p), []byte("{garbage"), 0o644)
	}
	s, err := Summarize(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tests) != 2 || s.Tests[0].Name != "fast" || s.Tests[1].Name != "to" {
		t.Fatalf("Summarize tests = %+v, want fast and to", s.Tests)
	}
	f := s.Tests[0]
	checks := []struct {
		what      string
		got, want any
	}{
		{"repeats", f.Repeats, 3},
		{"valid", f.Valid, 2},
		{"requester", f.NIC["requester"], Identity{Personality: "cx5", Driver: "mlx5_core", DriverVersion: "5.8-1", Firmware: "16.35.2000"}},
		{"responder", f.NIC["responder"], Identity{Personality: "cx5"}},
		{"integrity", *f.Checks["integrity"], CheckSummary{Pass: 2, Fail: 1}},
		{"gbn", *f.Checks["gbn"], CheckSummary{Pass: 1, Fail: 1}},
		{"gbn verdict", f.Checks["gbn"].Verdict(), "mixed"},
		{"violations", *f.Violations["receiver/missing-nak"], Count{Total: 2, Repeats: 1}},
		{"counters", *f.Counters["requester/packet_seq_err"], CounterSummary{OK: 2}},
		{"scopes", f.CNPScopes, []string{"per-qp"}},
		{"reaction values", f.Quantities["nack_reaction_ns"].Values, []float64{3000, 3100, 3200}},
		{"reaction median", f.Quantities["nack_reaction_ns"].Median, 3100.0},
		{"goodput", f.Quantities["goodput_gbps"].Values, []float64{10, 12}},
		{"mct p25", f.Quantities["message_completion_ns"].P25, 150.0},
		{"cnps", f.Quantities["cnps_observed"].N, 2},
		{"runs", f.Runs[1], Run{Repeat: 1, Dir: "fast/1", Valid: true, Failed: []string{"gbn"}}},
		{"run 2 failed", f.Runs[2].Failed, []string{"integrity"}},
		{"timeout intervals", s.Tests[1].Quantities["timeout_interval_ns"].Values, []float64{10, 20, 30}},
		{"timeout retries", s.Tests[1].Quantities["timeout_retries"].Values, []float64{2, 1}},
		{"no cnp", s.Tests[1].CNPScopes, []string(nil)},
	}
	for _, c := range checks {
		gb, _ := json.Marshal(c.got)
		wb, _ := json.Marshal(c.want)
		if string(gb) != string(wb) {
			t.Errorf("Summarize: %s = %s, want %s", c.what, gb, wb)
		}
	}
	// suite.json was written, and reads back the same; no temporary file
	// is left behind.
	back, err := Load(filepath.Join(out, FileName))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Errorf("Load(suite.json) differs from Summarize's result:\n%s\n%s", a, b)
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".suite-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestLoad(t *testing.T) {
	out := t.TempDir()
	writeRuns(t, out, map[string][]fakeRun{
		"a": {{personality: "cx5", goodput: 1}, {personality: "cx5", goodput: 2}},
		"b": {{personality: "cx5", goodput: 3}},
	})
	onlyJSON := t.TempDir()
	if _, err := Summarize(out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(out, FileName))
	os.WriteFile(filepath.Join(onlyJSON, FileName), data, 0o644)
	badSchema := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(badSchema, []byte(`{"schema":"lumina.suite/v0","tests":[]}`), 0o644)
	tests := []struct {
		name  string
		path  string
		tests []string
		reps  []int
		err   error
	}{
		{"results dir", out, []string{"a", "b"}, []int{2, 1}, nil},
		{"suite.json", filepath.Join(out, FileName), []string{"a", "b"}, []int{2, 1}, nil},
		{"dir with only suite.json", onlyJSON, []string{"a", "b"}, []int{2, 1}, nil},
		{"test dir", filepath.Join(out, "a"), []string{"a"}, []int{2}, nil},
		{"repeat dir", filepath.Join(out, "a", "1"), []string{"a"}, []int{1}, nil},
		{"empty dir", t.TempDir(), nil, nil, ErrNoRuns},
		{"bad schema", badSchema, nil, nil, ErrSchema},
		{"missing", filepath.Join(out, "nope"), nil, nil, os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(tc.path)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Errorf("Load(%s) error = %v, want %v", tc.path, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(%s) = %v", tc.path, err)
			}
			var names []string
			var reps []int
			for _, x := range s.Tests {
				names = append(names, x.Name)
				reps = append(reps, x.Repeats)
			}
			if !slices.Equal(names, tc.tests) || !slices.Equal(reps, tc.reps) {
				t.Errorf("Load(%s) tests = %v %v, want %v %v", tc.path, names, reps, tc.tests, tc.reps)
			}
		})
	}
}

func TestSummarizeRuns(t *testing.T) {
	out := t.TempDir()
	writeRuns(t, out, map[string][]fakeRun{"a": {{personality: "cx5"}}})
	var progress, stderr strings.Builder
	SummarizeRuns(out, nil, &progress, &stderr)
	if _, err := os.Stat(filepath.Join(out, FileName)); err != nil || stderr.Len() != 0 || !strings.Contains(progress.String(), FileName) {
		t.Errorf("SummarizeRuns: %v, stderr %q, progress %q", err, stderr.String(), progress.String())
	}
	stderr.Reset()
	SummarizeRuns(t.TempDir(), nil, nil, &stderr)
	if !strings.HasPrefix(stderr.String(), "lumina: suite summary: suite: no runs found") {
		t.Errorf("SummarizeRuns(empty dir) stderr = %q, want the error", stderr.String())
	}
}

// TestCompare covers every kind of finding on synthetic suites.
func TestCompare(t *testing.T) {
	fast := func(p string, reaction int64) fakeRun {
		rs := make([]int64, 20)
		for i := range rs {
			rs[i] = reaction + int64(i*10)
		}
		return fakeRun{personality: p, reaction: rs, goodput: 10, mct: []int64{1e6, 1e6 + 10}, cnpScopes: []string{"per-dest-ip"}, cnpObserved: 6}
	}
	base := []fakeRun{fast("cx5", 3000), fast("cx5", 3000), fast("cx5", 3000), fast("cx5", 3000)}
	mod := func(f func(*fakeRun)) []fakeRun {
		out := slices.Clone(base)
		for i := range out {
			out[i].personality = "new"
			f(&out[i])
		}
		return out
	}
	tests := []struct {
		name string
		new  []fakeRun
		want []string
		o    Options
	}{
		{"same", mod(func(*fakeRun) {}), nil, Options{}},
		{"reaction regression", mod(func(f *fakeRun) { *f = fast("new", 150e3) }),
			[]string{"regression quantity nack_reaction_ns", "regression quantity retransmission_ns"}, Options{}},
		{"reaction improvement", mod(func(f *fakeRun) { *f = fast("new", 1000) }),
			[]string{"improvement quantity nack_reaction_ns", "improvement quantity retransmission_ns"}, Options{}},
		{"below the relative minimum", mod(func(f *fakeRun) { *f = fast("new", 3200) }), nil, Options{}},
		{"without minimums", mod(func(f *fakeRun) { *f = fast("new", 3200) }),
			[]string{"regression quantity nack_reaction_ns", "regression quantity retransmission_ns"},
			Options{MinRelShift: -1, MinAbsNs: -1}},
		{"check fails", mod(func(f *fakeRun) { f.failCheck = "gbn" }), []string{"regression verdict gbn"}, Options{}},
		{"check flaky", func() []fakeRun { // pass → mixed
			out := mod(func(*fakeRun) {})
			out[1].failCheck = "counters"
			return out
		}(), []string{"regression verdict counters"}, Options{}},
		{"new check fails", mod(func(f *fakeRun) { f.failCheck = "timeout" }), []string{"regression verdict timeout"}, Options{}},
		{"violation appears", mod(func(f *fakeRun) { f.violations = []string{"duplicate-nak"} }),
			[]string{"regression violation receiver/duplicate-nak"}, Options{}},
		{"counter breaks", mod(func(f *fakeRun) { f.counterBad = true }),
			[]string{"regression counter requester/packet_seq_err"}, Options{}},
		{"scope change", mod(func(f *fakeRun) { f.cnpScopes, f.cnpObserved = []string{"per-port"}, 2 }),
			[]string{"change cnp-scope cnp pacing scope", "change quantity cnps_observed"}, Options{}},
		{"timeouts appear", mod(func(f *fakeRun) { f.timeouts = [][]int64{{5e6, 5e6}} }),
			[]string{"regression quantity timeout_interval_ns", "regression quantity timeout_retries"}, Options{}},
		{"goodput drop", mod(func(f *fakeRun) { f.goodput = 4 }), []string{"regression quantity goodput_gbps"}, Options{}},
		// 4 vs 4 repeats: p = 2/70 alone, × 6 quantities with Holm.
		{"goodput drop, Holm", mod(func(f *fakeRun) { f.goodput = 4 }), nil, Options{Holm: true}},
		{"all invalid", mod(func(f *fakeRun) { *f = fakeRun{personality: "new", invalid: true} }),
			[]string{"change test valid repeats", "change verdict integrity"}, Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bd, nd := t.TempDir(), t.TempDir()
			writeRuns(t, bd, map[string][]fakeRun{"x": base, "only-base": {fast("cx5", 1)}})
			writeRuns(t, nd, map[string][]fakeRun{"x": tc.new, "only-new": {fast("new", 1)}})
			b, err := Load(bd)
			if err != nil {
				t.Fatal(err)
			}
			n, err := Load(nd)
			if err != nil {
				t.Fatal(err)
			}
			d := Compare(b, n, tc.o)
			var got []string
			for _, f := range d.Findings {
				if f.Test == "x" {
					got = append(got, string(f.Class)+" "+string(f.Kind)+" "+f.Subject)
				}
			}
			sort.Strings(got)
			want := slices.Clone(tc.want)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("Compare findings = %q, want %q\n%s", got, want, d.Text())
			}
			// The tests on one side only are reported as changes.
			if len(d.Tests) != 3 || d.Regressed() != slices.ContainsFunc(want, func(s string) bool { return strings.HasPrefix(s, "regression") }) {
				t.Errorf("Compare: %d tests, Regressed() = %v", len(d.Tests), d.Regressed())
			}
		})
	}
}

// TestCompareSingleRuns: two single repeats of differently named tests
// are compared with each other.
func TestCompareSingleRuns(t *testing.T) {
	bd, nd := t.TempDir(), t.TempDir()
	writeRuns(t, bd, map[string][]fakeRun{"cnp-cx5": {{personality: "cx5", cnpScopes: []string{"per-dest-ip"}}}})
	writeRuns(t, nd, map[string][]fakeRun{"cnp-cx6": {{personality: "cx6", cnpScopes: []string{"per-port"}}}})
	b, _ := Load(filepath.Join(bd, "cnp-cx5", "0"))
	n, _ := Load(filepath.Join(nd, "cnp-cx6", "0"))
	d := Compare(b, n, Options{})
	if len(d.Tests) != 1 || d.Tests[0].NewName != "cnp-cx6" || len(d.Findings) != 1 || d.Findings[0].Kind != KindCNPScope {
		t.Errorf("Compare(single runs) = %+v, findings %+v", d.Tests, d.Findings)
	}
	h, err := d.HTML()
	if err != nil || !strings.Contains(string(h), "cnp-cx5 → cnp-cx6") || strings.Contains(string(h), `src="`) || strings.Contains(string(h), `href="`) {
		t.Errorf("HTML() = %d bytes, %v", len(h), err)
	}
}

// TestCompareInconclusive: an inconclusive verdict is missing data, like
// skip: never a regression or an improvement by itself, and an
// inconclusive CNP check does not narrow the consistent scopes.
func TestCompareInconclusive(t *testing.T) {
	run := func(v map[string]model.Verdict) fakeRun {
		return fakeRun{personality: "cx5", reaction: []int64{3000, 3010}, goodput: 10, mct: []int64{1e6},
			cnpScopes: []string{"per-dest-ip"}, cnpObserved: 6, verdicts: v}
	}
	vs := func(kv ...string) map[string]model.Verdict {
		m := map[string]model.Verdict{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = model.Verdict(kv[i+1])
		}
		return m
	}
	four := func(v map[string]model.Verdict) []fakeRun { return []fakeRun{run(v), run(v), run(v), run(v)} }
	pass, inc, fail := vs("timeout", "pass"), vs("timeout", "inconclusive"), vs("timeout", "fail")
	tests := []struct {
		name      string
		base, new []fakeRun
		want      []string
	}{
		{"pass → inconclusive", four(pass), four(inc), []string{"change verdict timeout"}},
		{"inconclusive → pass", four(inc), four(pass), []string{"change verdict timeout"}},
		{"fail → inconclusive", four(fail), four(inc), []string{"change verdict timeout"}},
		{"inconclusive → fail", four(inc), four(fail), []string{"regression verdict timeout"}},
		{"inconclusive → inconclusive", four(inc), four(inc), nil},
		{"not run → inconclusive", four(nil), four(inc), nil},
		{"pass → pass with some inconclusive", four(pass), []fakeRun{run(pass), run(inc), run(pass), run(inc)}, nil},
		{"pass → fail with some inconclusive", four(pass), []fakeRun{run(fail), run(inc), run(inc), run(inc)}, []string{"regression verdict timeout"}},
		{"cnp inconclusive, no consistent scope", four(vs("cnp", "pass")), func() []fakeRun {
			out := four(vs("cnp", "inconclusive"))
			for i := range out {
				out[i].cnpScopes = []string{}
			}
			return out
		}(), []string{"change verdict cnp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bd, nd := t.TempDir(), t.TempDir()
			writeRuns(t, bd, map[string][]fakeRun{"x": tc.base})
			writeRuns(t, nd, map[string][]fakeRun{"x": tc.new})
			b, err := Load(bd)
			if err != nil {
				t.Fatal(err)
			}
			n, err := Load(nd)
			if err != nil {
				t.Fatal(err)
			}
			d := Compare(b, n, Options{})
			var got []string
			for _, f := range d.Findings {
				got = append(got, string(f.Class)+" "+string(f.Kind)+" "+f.Subject)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Compare findings = %q, want %q\n%s", got, tc.want, d.Text())
			}
			if d.Improvements != 0 {
				t.Errorf("Compare: %d improvements, want none\n%s", d.Improvements, d.Text())
			}
		})
	}
}

// TestSummarizeInconclusive: check summaries count inconclusive verdicts
// separately, runs list them, and suite.json has no inconclusive field
// when there are none.
func TestSummarizeInconclusive(t *testing.T) {
	out := t.TempDir()
	base := fakeRun{personality: "cx5", cnpScopes: []string{"per-qp", "per-port"}}
	inc := base
	inc.cnpScopes = []string{}
	inc.verdicts = map[string]model.Verdict{"timeout": model.Inconclusive, "cnp": model.Inconclusive}
	pass := base
	pass.verdicts = map[string]model.Verdict{"timeout": model.Pass, "cnp": model.Pass}
	writeRuns(t, out, map[string][]fakeRun{"t": {pass, inc, pass}, "plain": {base}})
	s, err := Summarize(out)
	if err != nil {
		t.Fatal(err)
	}
	var tt, plain *Test
	for _, x := range s.Tests {
		if x.Name == "t" {
			tt = x
		} else {
			plain = x
		}
	}
	if c := tt.Checks["timeout"]; *c != (CheckSummary{Pass: 2, Inconclusive: 1}) || c.Verdict() != "pass" {
		t.Errorf("timeout summary = %+v (%s), want 2 pass, 1 inconclusive (pass)", *c, c.Verdict())
	}
	if r := tt.Runs[1]; !r.Valid || len(r.Failed) != 0 || !slices.Equal(r.Inconclusive, []string{"cnp", "timeout"}) {
		t.Errorf("run 1 = %+v, want valid, nothing failed, cnp and timeout inconclusive", r)
	}
	if !slices.Equal(tt.CNPScopes, []string{"per-qp", "per-port"}) {
		t.Errorf("CNPScopes = %v: the inconclusive repeat must not narrow them", tt.CNPScopes)
	}
	if v := (&CheckSummary{Inconclusive: 2, Skip: 1}).Verdict(); v != "inconclusive" {
		t.Errorf("Verdict() of only inconclusive and skip = %s", v)
	}
	b, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "inconclusive") {
		t.Errorf("suite.json of a test without inconclusive verdicts mentions them: %s", b)
	}
}
