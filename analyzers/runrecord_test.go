package analyzers_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
)

// TestApplyRunRecord: the run's own verdicts come from its report.json,
// in today's form (analysis.checks) and in the form of runs recorded
// before (the checks map, switch_state, generator, events); a check the
// record lacks is skip saying so; a failed switch_state makes the report
// invalid with the analyzers' checks skipped, as the run was.
func TestApplyRunRecord(t *testing.T) {
	const oldEvents = `"events": [{"qp": 0, "msg": 0, "psn": 1, "abs_psn": 4738522, "iter": 2, "type": "ecn", "applied": false},
		{"qp": 0, "msg": 1, "psn": 1, "abs_psn": 4738526, "iter": 1, "type": "drop", "applied": true}]`
	tests := []struct {
		name, record string
		// want is each run check's "verdict reason"; valid the report's
		// validity after.
		want    map[string]string
		missing []string
		valid   bool
		result  string
	}{
		{"old record", `{"valid": true, "checks": {"events_applied": {"verdict": "fail", "detail": "1 of 2 events applied"},
			"generator": {"verdict": "pass"}, "switch_state": {"verdict": "pass"}},
			"switch_state": {"verdict": "pass", "unexpected_copies": 0},
			"generator": {"goodput_gbps": 4.5, "bytes": 8192, "duration_ns": 13434, "responder_verified": true}, ` + oldEvents + `}`,
			map[string]string{"switch_state": "pass ", "events_applied": "fail 1 of 2 events applied", "generator": "pass "},
			[]string{"qp 0 msg 0 psn 1 (abs 0x484dda) iter 2 ecn"}, true, "result: FAIL (events_applied)"},
		{"record in analysis.checks", `{"valid": true, "checks": {"events_applied": {"verdict": "pass"}},
			"analysis": {"checks": {"events_applied": {"verdict": "fail", "reason": "0 of 1 events applied", "applied": 0, "total": 1,
				"missing": ["qp 0 msg 0 psn 3 (abs 0x3) iter 1 drop"]},
			"generator": {"verdict": "fail", "reason": "stopped", "stopped": "stopped"},
			"switch_state": {"verdict": "pass", "unexpected_copies": 0}}}}`,
			map[string]string{"switch_state": "pass ", "events_applied": "fail 0 of 1 events applied", "generator": "fail stopped"},
			[]string{"qp 0 msg 0 psn 3 (abs 0x3) iter 1 drop"}, true, "result: FAIL (events_applied, generator)"},
		{"invalid run", `{"valid": false, "checks": {"integrity": {"verdict": "fail", "detail": "seq: gap"}, "switch_state": {"verdict": "fail", "detail": "lost primary"}},
			"switch_state": {"verdict": "fail", "reasons": ["lost primary"], "unexpected_copies": 0}}`,
			map[string]string{"switch_state": "fail lost primary",
				"events_applied": "skip not in the run's record $DIR/report.json: the run was invalid and did not evaluate it",
				"generator":      "skip not in the run's record $DIR/report.json: the run was invalid and did not evaluate it"},
			nil, false, "result: INVALID (switch_state)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(tt.record), 0o644); err != nil {
				t.Fatal(err)
			}
			r := &report.Report{Valid: true, Integrity: report.Integrity{Verdict: model.Pass}}
			for _, c := range report.AllChecks {
				r.Checks.Skip(c, report.NotSelected)
			}
			r.Checks.GBN.Verdict = model.Pass
			if err := analyzers.ApplyRunRecord(r, dir); err != nil {
				t.Fatal(err)
			}
			c := r.Checks
			got := map[string]string{"switch_state": string(c.SwitchState.Verdict) + " " + c.SwitchState.Reason,
				"events_applied": string(c.EventsApplied.Verdict) + " " + c.EventsApplied.Reason,
				"generator":      string(c.Generator.Verdict) + " " + c.Generator.Reason}
			for k, v := range tt.want {
				if v = strings.ReplaceAll(v, "$DIR", dir); got[k] != v {
					t.Errorf("ApplyRunRecord: %s = %q, want %q", k, got[k], v)
				}
			}
			if !slices.Equal(c.EventsApplied.Missing, tt.missing) {
				t.Errorf("events_applied.missing = %q, want %q", c.EventsApplied.Missing, tt.missing)
			}
			if note := "the run recorded integrity fail (seq: gap); this analysis of its trace gives pass"; slices.Contains(r.Inputs, note) != !tt.valid {
				t.Errorf("Inputs = %q, want the integrity note %v", r.Inputs, !tt.valid)
			}
			if r.Valid != tt.valid {
				t.Errorf("Valid = %v, want %v", r.Valid, tt.valid)
			}
			if !tt.valid && c.GBN.Verdict != model.Skip {
				t.Errorf("gbn = %s on an invalid run, want skip", c.GBN.Verdict)
			}
			if txt := report.Text(r); !strings.HasSuffix(txt, "\n"+tt.result+"\n") {
				t.Errorf("Text ends %q, want %q", txt[strings.LastIndex(strings.TrimSuffix(txt, "\n"), "\n")+1:], tt.result)
			}
		})
	}
}

// TestApplyRunRecordMemory: the bytes allocated to apply a run's record
// do not grow with the number of messages its generator.qps lists (issue
// #36, item 3): 100,000 messages cost less than 64 KiB more than 1,000,
// where reading the record whole costs more than the file (1.6 MB).
func TestApplyRunRecordMemory(t *testing.T) {
	alloc := func(msgs int) uint64 {
		dir := t.TempDir()
		var b strings.Builder
		b.WriteString(`{"valid": true, "analysis": {"checks": {"generator": {"verdict": "pass"}}}, "generator": {"goodput_gbps": 4.5, "qps": [`)
		for q := range 8 {
			if q > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"qp": 1, "message_completion_ns": [`)
			for i := range msgs / 8 {
				if i > 0 {
					b.WriteString(",\n          ")
				}
				b.WriteString(strconv.Itoa(1_000_000 + i*8_193))
			}
			b.WriteString(`]}`)
		}
		b.WriteString(`]}}`)
		if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		best := ^uint64(0)
		for range 3 {
			r := &report.Report{Valid: true, Integrity: report.Integrity{Verdict: model.Pass}}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if err := analyzers.ApplyRunRecord(r, dir); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if r.Checks.Generator == nil || r.Checks.Generator.Verdict != model.Pass {
				t.Fatalf("generator %+v, want pass", r.Checks.Generator)
			}
			best = min(best, after.TotalAlloc-before.TotalAlloc)
		}
		return best
	}
	small, large := alloc(1_000), alloc(100_000)
	t.Logf("allocated %d B at 1,000 messages, %d B at 100,000", small, large)
	if large > small+64<<10 {
		t.Errorf("applying a record of 100,000 messages allocated %d B, 1,000 %d B: grows with the messages", large, small)
	}
}
