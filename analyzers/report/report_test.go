package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
