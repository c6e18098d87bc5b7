package timeout

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
)

func check(t *testing.T, verb model.Verb, script string, opt Options) Result {
	t.Helper()
	conns := tracetest.Conns(1, 100, verb)
	tab, pkts := tracetest.Script(t, conns, script)
	tr := retransmission.New(tab, retransmission.Options{RetryCnt: opt.RetryCnt})
	for i := range pkts {
		tr.Observe(&pkts[i])
	}
	r := tr.Finish()
	return Check(&r, tab, opt)
}

func TestTimeouts(t *testing.T) {
	const ttr = 10_000
	tests := []struct {
		name    string
		verb    model.Verb
		script  string
		opt     Options
		want    string // episodes as "rel intervals retries outcome oob exceeded"
		verdict model.Verdict
	}{
		{name: "within the bound", script: "0x @10000 0x @20000 0x @40000 0 A0", opt: Options{TransportTimeoutNs: ttr},
			want: "[0 [10000 20000 40000] 3 recovered false false]", verdict: model.Pass},
		{name: "below and above the bound", script: "0x @5000 0x @50000 0 A0", opt: Options{TransportTimeoutNs: ttr},
			want: "[0 [5000 50000] 2 recovered true false]", verdict: model.Fail},
		{name: "tolerance", script: "0x @9990 0 A0", opt: Options{TransportTimeoutNs: ttr, ToleranceNs: 10},
			want: "[0 [9990] 1 recovered false false]", verdict: model.Pass},
		{name: "idle time counts from the last progress", script: "0 1 @500 A0 @10000 1 A1", opt: Options{TransportTimeoutNs: ttr},
			want: "[1 [10000] 1 recovered false false]", verdict: model.Pass},
		{name: "more retries than retry_cnt, then gave up", opt: Options{TransportTimeoutNs: ttr, RetryCnt: 3},
			script: "0x @10000 0x @10000 0x @10000 0x @10000 0x", want: "[0 [10000 10000 10000 10000] 4 gave-up false true]", verdict: model.Fail},
		{name: "exactly retry_cnt retries", opt: Options{TransportTimeoutNs: ttr, RetryCnt: 3},
			script: "0x @10000 0x @10000 0x @10000 0x", want: "[0 [10000 10000 10000] 3 gave-up false false]", verdict: model.Pass},
		{name: "unknown timeout", script: "0x @10000 0 A0", want: "[0 [10000] 1 recovered false false]", verdict: model.Skip},
		{name: "no timeouts", script: "0 1x 2 N1 1 2 A2", opt: Options{TransportTimeoutNs: ttr}, want: "", verdict: model.Pass},
		{name: "read re-issue by timeout", verb: model.VerbRead, script: "Q0:2 r0 r1x @20000 Q1:1 r1", opt: Options{TransportTimeoutNs: ttr},
			want: "[1 [20100] 1 recovered false false]", verdict: model.Pass}, // from the last in-order response
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verb := tt.verb
			if verb == "" {
				verb = model.VerbWrite
			}
			res := check(t, verb, tt.script, tt.opt)
			got := ""
			for _, to := range res.Timeouts {
				got += fmt.Sprint([]any{to.RelPSN, to.IntervalsNs, to.Retries, to.Outcome, to.OutOfBound, to.RetryExceeded})
			}
			if got != tt.want {
				t.Errorf("timeouts of %q = %s, want %s", tt.script, got, tt.want)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("Verdict = %v, want %v (%s)", res.Verdict, tt.verdict, res.Reason)
			}
		})
	}
}

// TestExactOnSim: with no timestamp uncertainty (sim) the bound is exact:
// an interval 1 µs short of T_tr (timeout 14: 67,108,864 ns) fails, one
// at T_tr passes.
func TestExactOnSim(t *testing.T) {
	const ttr = 67_108_864
	for _, tt := range []struct {
		interval int64
		verdict  model.Verdict
	}{{ttr - 1000, model.Fail}, {ttr - 1, model.Fail}, {ttr, model.Pass}, {4 * ttr, model.Pass}, {4*ttr + 1, model.Fail}} {
		res := check(t, model.VerbWrite, fmt.Sprintf("0x @%d 0 A0", tt.interval), Options{TransportTimeoutNs: ttr})
		if res.Verdict != tt.verdict {
			t.Errorf("interval %d ns, U = 0: Verdict = %v, want %v (%s)", tt.interval, res.Verdict, tt.verdict, res.Reason)
		}
		if to := res.Timeouts[0]; to.Inconclusive || len(to.InconclusiveIntervals) > 0 || res.TimestampUncertaintyNs != 0 {
			t.Errorf("interval %d ns, U = 0: inconclusive marks %+v", tt.interval, to)
		}
	}
}

// TestUncertainty: with U > 0 an interval is out of bound only beyond
// U outside the bound, and inconclusive within U of it, on either side.
func TestUncertainty(t *testing.T) {
	const ttr, u = 10_000, 500 // bound [10,000, 40,000] ns, ±500 ns
	tests := []struct {
		name         string
		intervals    []int64
		oob, inconcl []int
		verdict      model.Verdict
	}{
		{"lower: beyond U below", []int64{9499}, []int{0}, nil, model.Fail},
		{"lower: exactly U below", []int64{9500}, nil, []int{0}, model.Inconclusive},
		{"lower: just under the bound", []int64{9999}, nil, []int{0}, model.Inconclusive},
		{"lower: just over the bound", []int64{10_000}, nil, []int{0}, model.Inconclusive},
		{"lower: U above", []int64{10_500}, nil, nil, model.Pass},
		{"upper: U below", []int64{39_500}, nil, nil, model.Pass},
		{"upper: just under the bound", []int64{39_501}, nil, []int{0}, model.Inconclusive},
		{"upper: just over the bound", []int64{40_001}, nil, []int{0}, model.Inconclusive},
		{"upper: exactly U above", []int64{40_500}, nil, []int{0}, model.Inconclusive},
		{"upper: beyond U above", []int64{40_501}, []int{0}, nil, model.Fail},
		{"a failing interval beats an inconclusive one", []int64{10_000, 20_000, 50_000}, []int{2}, []int{0}, model.Fail},
		{"several inconclusive", []int64{10_100, 20_000, 40_200}, nil, []int{0, 2}, model.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := "0x"
			for _, v := range tt.intervals {
				script += fmt.Sprintf(" @%d 0x", v)
			}
			script = strings.TrimSuffix(script, "x") + " A0"
			res := check(t, model.VerbWrite, script, Options{TransportTimeoutNs: ttr, UncertaintyNs: u})
			if len(res.Timeouts) != 1 {
				t.Fatalf("timeouts of %q = %+v, want one episode", script, res.Timeouts)
			}
			to := res.Timeouts[0]
			if !reflect.DeepEqual(to.IntervalsNs, tt.intervals) {
				t.Fatalf("intervals of %q = %v, want %v", script, to.IntervalsNs, tt.intervals)
			}
			if !reflect.DeepEqual(to.OutOfBoundIntervals, tt.oob) || to.OutOfBound != (tt.oob != nil) {
				t.Errorf("OutOfBoundIntervals = %v (%v), want %v", to.OutOfBoundIntervals, to.OutOfBound, tt.oob)
			}
			if !reflect.DeepEqual(to.InconclusiveIntervals, tt.inconcl) || to.Inconclusive != (tt.inconcl != nil) {
				t.Errorf("InconclusiveIntervals = %v (%v), want %v", to.InconclusiveIntervals, to.Inconclusive, tt.inconcl)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("Verdict = %v, want %v (%s)", res.Verdict, tt.verdict, res.Reason)
			}
			if res.TimestampUncertaintyNs != u {
				t.Errorf("TimestampUncertaintyNs = %d, want %d", res.TimestampUncertaintyNs, u)
			}
		})
	}
}

// TestInconclusiveReason: the reason names the episodes, the intervals,
// the bound and U.
func TestInconclusiveReason(t *testing.T) {
	const ttr = 67_108_864
	res := check(t, model.VerbWrite, "0x @67101000 0 A0 @1000 1 2x @134217728 2 A2 @1000 3x @100000000 3x @268435000 3 A3",
		Options{TransportTimeoutNs: ttr, UncertaintyNs: 12_000})
	if res.Verdict != model.Inconclusive {
		t.Fatalf("Verdict = %v, want inconclusive (%s)", res.Verdict, res.Reason)
	}
	want := "2 of 3 timeout episodes within the timestamp uncertainty (±12 µs) of the bound: " +
		"conn 0 rel 0: interval 67,101,000 ns vs lower 67,108,864 ns; conn 0 rel 3: interval 2 268,435,000 ns vs upper 268,435,456 ns"
	if res.Reason != want {
		t.Errorf("Reason = %q, want %q", res.Reason, want)
	}
	b, _ := json.Marshal(res.Timeouts[0])
	if !strings.Contains(string(b), `"inconclusive":true,"inconclusive_intervals":[0]`) {
		t.Errorf("JSON of an inconclusive episode = %s", b)
	}
	exact := check(t, model.VerbWrite, "0x @67101000 0 A0", Options{TransportTimeoutNs: ttr})
	b, _ = json.Marshal(exact)
	if strings.Contains(string(b), "inconclusive") || strings.Contains(string(b), "uncertainty") {
		t.Errorf("JSON with U = 0 has uncertainty fields: %s", b)
	}
}

// TestTimerLateness: a software RNIC whose timers ran up to L late (a
// loaded netns host) may exceed the upper bound by U + L and be
// inconclusive, not failed; beyond that it fails, and the lower side is
// unchanged (a late timer never makes an interval shorter).
func TestTimerLateness(t *testing.T) {
	const ttr, u, late = 10_000, 500, 2_000 // bound [10,000, 40,000] ns
	for _, tt := range []struct {
		interval int64
		verdict  model.Verdict
	}{
		{9_499, model.Fail},
		{9_500, model.Inconclusive},
		{40_501, model.Inconclusive},
		{42_500, model.Inconclusive},
		{42_501, model.Fail},
	} {
		res := check(t, model.VerbWrite, fmt.Sprintf("0x @%d 0 A0", tt.interval), Options{TransportTimeoutNs: ttr, UncertaintyNs: u, LatenessNs: late})
		if res.Verdict != tt.verdict || res.TimerLatenessNs != late {
			t.Errorf("interval %d ns, U %d, L %d: Verdict = %v (lateness %d), want %v (%s)", tt.interval, u, late, res.Verdict, res.TimerLatenessNs, tt.verdict, res.Reason)
		}
	}
	res := check(t, model.VerbWrite, "0x @42000 0 A0", Options{TransportTimeoutNs: ttr, UncertaintyNs: u, LatenessNs: late})
	want := "1 of 1 timeout episodes within the timestamp uncertainty (±0.5 µs) of the bound, or above it by at most the RNIC's timer lateness (2 µs): " +
		"conn 0 rel 0: interval 42,000 ns vs upper 40,000 ns"
	if res.Reason != want {
		t.Errorf("Reason = %q\nwant     %q", res.Reason, want)
	}
}
