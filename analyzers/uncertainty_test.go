package analyzers_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/timeout"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// TestSimTimestampUncertainty runs the spec personality's tail drop (7
// timeouts of exactly T_tr, then give-up) on sim, whose timestamps are
// exact (U = 0):
//   - the timeout bound is exact: against a bound whose lower end is 1 µs
//     above the measured intervals they fail, against one at them they
//     pass — no uncertainty is assumed;
//   - analyzed with U = 2 µs the intervals (1 µs above the analyzers'
//     lower bound T_tr − 1 µs) are within U of it: the check is
//     inconclusive, the run valid and passing, and report.txt says so.
func TestSimTimestampUncertainty(t *testing.T) {
	tb := newTestbed(t, bedOpts{pers: "spec"})
	p := tb.connect(model.VerbWrite, "", softrnic.ConnectAttr{Timeout: new(uint8(14)), RetryCnt: new(uint8(7))}, 1024)
	tb.inject = func(f frameInfo) roce.Event {
		if f.Dir == sim.AtoB && f.Rel == 0 {
			return roce.EventDrop
		}
		return roce.EventNone
	}
	p.post(t, 0, softrnic.WRWrite, 1024)
	tb.loop.RunUntil(int64(time.Hour))

	params := model.Params{Timeout: ptr(uint8(14)), RetryCnt: ptr(7)}
	r := tb.analyze(params)
	to := r.Checks.Timeout
	if r.Params.TimestampUncertaintyNs != 0 || to.TimestampUncertaintyNs != 0 || to.Verdict != model.Pass || len(to.Timeouts) != 1 {
		t.Fatalf("sim, U = 0: timeout %v (%s), U %d, episodes %+v\n%s", to.Verdict, to.Reason, to.TimestampUncertaintyNs, to.Timeouts, reportText(r))
	}
	iv := to.Timeouts[0].IntervalsNs
	lo, hi := iv[0], iv[0]
	for _, v := range iv {
		lo, hi = min(lo, v), max(hi, v)
	}
	t.Logf("spec intervals %v, analyzers' bound [%d, %d]", iv, to.LowerNs, to.UpperNs)
	table := model.NewTable(r.Connections)
	short := timeout.Check(&r.Checks.Retransmission, table, timeout.Options{TransportTimeoutNs: hi + 1000, RetryCnt: 7})
	if short.Verdict != model.Fail || len(short.Timeouts[0].OutOfBoundIntervals) != len(iv) || short.Timeouts[0].Inconclusive {
		t.Errorf("intervals %v 1 µs short of the lower bound %d: verdict %v, out of bound %v, inconclusive %v; want fail, all, none",
			iv, short.LowerNs, short.Verdict, short.Timeouts[0].OutOfBoundIntervals, short.Timeouts[0].InconclusiveIntervals)
	}
	at := timeout.Check(&r.Checks.Retransmission, table, timeout.Options{TransportTimeoutNs: lo, RetryCnt: 7})
	if at.Verdict != model.Pass {
		t.Errorf("intervals %v against the lower bound %d: verdict %v (%s), want pass", iv, at.LowerNs, at.Verdict, at.Reason)
	}

	params.TimestampUncertaintyNs = 2000
	r = tb.analyze(params)
	to = r.Checks.Timeout
	txt := reportText(r)
	if to.Verdict != model.Inconclusive || to.TimestampUncertaintyNs != 2000 || len(to.Timeouts[0].InconclusiveIntervals) != len(iv) {
		t.Errorf("U = 2 µs: timeout %v (%s), inconclusive intervals %v; want inconclusive, all %d\n%s",
			to.Verdict, to.Reason, to.Timeouts[0].InconclusiveIntervals, len(iv), txt)
	}
	if !strings.HasPrefix(to.Reason, "1 of 1 timeout episodes within the timestamp uncertainty (±2 µs) of the bound: conn 0 rel 0: interval 1 ") {
		t.Errorf("reason %q", to.Reason)
	}
	if !r.Valid || !r.Passed() || r.Result() != report.ResultInconclusive ||
		!strings.HasSuffix(txt, "result: INCONCLUSIVE (valid, no check failed; inconclusive: timeout)\n") {
		t.Errorf("U = 2 µs: valid %v, passed %v, result %s\n%s", r.Valid, r.Passed(), r.Result(), txt)
	}
}

// TestRunInputsUncertainty: a run directory's report.json (the analysis of
// `lumina run`) and meta.json give the timestamp uncertainty, --meta
// overrides them.
func TestRunInputsUncertainty(t *testing.T) {
	pcap, err := os.ReadFile(filepath.Join("..", "examples", "traces", "write-drop.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files map[string]string
		meta  string
		want  int64
	}{
		{"none", map[string]string{"report.json": `{"schema": "lumina.report/v1", "valid": true}`}, "", 0},
		{"run report.json", map[string]string{"report.json": `{"schema": "lumina.report/v1", "analysis": {"params": {"timestamp_uncertainty_ns": 800}}}`}, "", 800},
		{"meta.json", map[string]string{"meta.json": `{"timestamp_uncertainty_ns": 1200}`, "report.json": `{}`}, "", 1200},
		{"--meta overrides", map[string]string{"meta.json": `{"timestamp_uncertainty_ns": 1200}`}, `{"params": {"timestamp_uncertainty_ns": 50}}`, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"trace.pcap": string(pcap)}
			maps.Copy(files, tt.files)
			for n, b := range files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			metaPath := ""
			if tt.meta != "" {
				metaPath = filepath.Join(t.TempDir(), "m.json")
				if err := os.WriteFile(metaPath, []byte(tt.meta), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, meta, err := analyzers.RunInputs(dir, metaPath)
			if err != nil {
				t.Fatal(err)
			}
			if meta.TimestampUncertaintyNs != tt.want {
				t.Errorf("RunInputs: TimestampUncertaintyNs = %d, want %d", meta.TimestampUncertaintyNs, tt.want)
			}
		})
	}
}
