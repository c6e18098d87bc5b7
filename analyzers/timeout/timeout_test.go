package timeout

import (
	"fmt"
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
