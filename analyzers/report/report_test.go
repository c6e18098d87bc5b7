package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/cnp"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/timeout"
)

func TestSeriesDecimation(t *testing.T) {
	s := series{pts: make([]Pt, 0, 8), stride: 1}
	for i := range 1000 {
		s.add(Pt{T: int64(i)})
	}
	if len(s.pts) > 8 || s.n != 1000 {
		t.Fatalf("len %d n %d, want ≤ 8 points of 1000", len(s.pts), s.n)
	}
	for i := 1; i < len(s.pts); i++ {
		if d := s.pts[i].T - s.pts[i-1].T; d != int64(s.stride) {
			t.Errorf("points %d..%d are %d apart, want the stride %d", i-1, i, d, s.stride)
		}
	}
	if got := testing.AllocsPerRun(100, func() { s.add(Pt{}) }); got != 0 {
		t.Errorf("add allocates %v times", got)
	}
}

func sample() *Report {
	g := int64(1100)
	r := &Report{Valid: true, Integrity: Integrity{Verdict: model.Pass},
		Connections: []model.Connection{{ID: 0, Verb: model.VerbWrite}},
		Plots:       &Plots{Seqs: []ConnSeries{{Conn: 0}}}}
	for k := range NumClasses {
		r.Plots.Seqs[0].Classes[k] = []Pt{{T: int64(k * 100), PSN: int32(k)}, {T: int64(k*100 + 50), PSN: int32(k + 1)}}
		r.Plots.Seqs[0].Seen[k] = 2
	}
	for _, c := range AllChecks {
		r.Checks.Skip(c, NotSelected)
	}
	r.Checks.Retransmission = retransmission.Result{Verdict: model.Pass, Losses: []retransmission.Loss{
		{Kind: retransmission.KindFast, NACKGenerationNs: &g, NACKReactionNs: &g, RetransmissionNs: &g}}}
	r.Checks.Timeout = timeout.Result{Verdict: model.Fail, TransportTimeoutNs: 1000, LowerNs: 1000, UpperNs: 4000,
		Timeouts: []timeout.Timeout{{IntervalsNs: []int64{500, 8000}, Retries: 2, OutOfBound: true}}}
	return r
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	if err := WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	b, err := os.ReadFile(filepath.Join(dir, FileJSON))
	if err != nil || json.Unmarshal(b, &back) != nil {
		t.Fatalf("report.json: %v", err)
	}
	for _, k := range []string{"valid", "integrity", "connections", "checks"} {
		if _, ok := back[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	checks := back["checks"].(map[string]any)
	for _, c := range AllChecks {
		if v := checks[c].(map[string]any)["verdict"]; v == nil {
			t.Errorf("checks.%s has no verdict", c)
		}
	}
	txt, _ := os.ReadFile(filepath.Join(dir, FileText))
	if !strings.Contains(string(txt), "result: FAIL") {
		t.Errorf("report.txt:\n%s", txt)
	}
	page, _ := os.ReadFile(filepath.Join(dir, FileHTML))
	s := string(page)
	if n := strings.Count(s, "<svg"); n != 3 {
		t.Errorf("report.html has %d plots, want 3 (sequence, losses, timeouts)", n)
	}
	if strings.Contains(s, "<script") || strings.Contains(s, "<?xml") || strings.Contains(s, `src="`) {
		t.Error("report.html is not self-contained inline HTML")
	}
}

// TestInconclusive: an inconclusive check does not fail the run; the text
// and the page say INCONCLUSIVE, with the check and its reason.
func TestInconclusive(t *testing.T) {
	r := sample()
	r.Params.TimestampUncertaintyNs = 12_000
	reason := "1 of 1 timeout episodes within the timestamp uncertainty (±12 µs) of the bound: conn 0 rel 0: interval 995 ns vs lower 1,000 ns"
	r.Checks.Timeout = timeout.Result{Verdict: model.Inconclusive, Reason: reason, TransportTimeoutNs: 1000, LowerNs: 1000, UpperNs: 4000,
		TimestampUncertaintyNs: 12_000, Timeouts: []timeout.Timeout{{IntervalsNs: []int64{995}, Retries: 1, Inconclusive: true, InconclusiveIntervals: []int{0}}}}
	if !r.Passed() || r.Result() != ResultInconclusive || !slices.Equal(r.Inconclusive(), []string{CheckTimeout}) {
		t.Errorf("Passed() = %v, Result() = %s, Inconclusive() = %v; want true, INCONCLUSIVE, [timeout]", r.Passed(), r.Result(), r.Inconclusive())
	}
	if v := r.Checks.Verdicts()[CheckTimeout]; v != model.Inconclusive {
		t.Errorf("Verdicts()[timeout] = %s", v)
	}
	txt := Text(r)
	for _, want := range []string{"  timeout         inconclusive  1 timeout episodes (" + reason + ")\n",
		"timeouts (T_tr 1µs, timestamp uncertainty ±12 µs):\n", "995ns INCONCLUSIVE\n",
		"result: INCONCLUSIVE (valid, no check failed; within the timestamp uncertainty: timeout)\n"} {
		if !strings.Contains(txt, want) {
			t.Errorf("Text lacks %q:\n%s", want, txt)
		}
	}
	h, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<span class="inconclusive">INCONCLUSIVE</span>`, `<td class="inconclusive">inconclusive</td>`, "(±12 µs): timeout."} {
		if !strings.Contains(string(h), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	r.Checks.CNP = cnp.Result{Verdict: model.Inconclusive, Reason: "possibly per-port", Observed: 2, ConsistentScopes: []string{},
		PossibleScopes: []string{"per-port"}, TimestampUncertaintyNs: 12_000}
	if txt := Text(r); !strings.Contains(txt, "  cnp             inconclusive  2 CNPs; consistent scopes: none; possibly: per-port (possibly per-port)\n") ||
		!strings.Contains(txt, "within the timestamp uncertainty: timeout, cnp)\n") {
		t.Errorf("Text:\n%s", txt)
	}
	if h, _ := HTML(r); !strings.Contains(string(h), "none; possibly consistent (within the timestamp uncertainty, ±12 µs): per-port </p>") {
		t.Errorf("HTML lacks the possible CNP scopes")
	}
	r.Checks.Counters.Verdict = model.Fail
	if r.Passed() || r.Result() != ResultFail {
		t.Errorf("with a failed check: Passed() = %v, Result() = %s", r.Passed(), r.Result())
	}
	r = sample()
	r.Checks.Timeout.Verdict = model.Pass
	if r.Result() != ResultPass || !strings.HasSuffix(Text(r), "result: PASS\n") {
		t.Errorf("Result() = %s, text %q", r.Result(), Text(r))
	}
}
