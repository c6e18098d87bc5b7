package cnp

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// table4 builds the Lumina §6.4 experiment at small scale: three requesters
// 10.0.0.11-13 write to 10.0.0.1; packets are CE-marked at the times of
// Table 3 (CX6: 9/16/17 µs, then 246/254/259 µs); cnps lists, per
// connection, after which marks a CNP follows.
func table4(cnps [3][2]bool) string {
	marks := []struct {
		conn int
		us   int
	}{{0, 9}, {1, 16}, {2, 17}, {0, 246}, {1, 254}, {2, 259}}
	var b strings.Builder
	prev, n := 0, [3]int{}
	for _, m := range marks {
		fmt.Fprintf(&b, "@%d %d/%de ", (m.us-prev)*1000-100, m.conn, n[m.conn])
		prev = m.us
		if cnps[m.conn][n[m.conn]] {
			fmt.Fprintf(&b, "%d/C ", m.conn)
			prev = m.us
		}
		n[m.conn]++
	}
	return b.String()
}

func analyze(t *testing.T, script string, opt Options) Result {
	t.Helper()
	conns := tracetest.Conns(3, 0, model.VerbWrite)
	tab, pkts := tracetest.Script(t, conns, script)
	a := New(tab, opt)
	for i := range pkts {
		a.Observe(&pkts[i])
	}
	return a.Finish()
}

func TestScopes(t *testing.T) {
	all := [3][2]bool{{true, true}, {true, true}, {true, true}}
	perPort := [3][2]bool{{true, true}}
	opt := Options{MinTimeBetweenCNPsNs: 50_000, Known: true}
	tests := []struct {
		name     string
		script   string
		opt      Options
		observed [3]int
		want     []string
		expected Expected
		verdict  model.Verdict
	}{
		{name: "CX6: per-port", script: table4(perPort), opt: opt, observed: [3]int{2, 0, 0},
			want: []string{"per-port"}, expected: Expected{6, 2, 6, 6}, verdict: model.Pass},
		{name: "CX4/CX5: per-destination IP", script: table4(all), opt: opt, observed: [3]int{2, 2, 2},
			want: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, expected: Expected{6, 2, 6, 6}, verdict: model.Pass},
		{name: "expected scope inconsistent", script: table4(all), opt: Options{MinTimeBetweenCNPsNs: 50_000, Known: true, ExpectScope: "per-port"},
			observed: [3]int{2, 2, 2}, want: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, expected: Expected{6, 2, 6, 6}, verdict: model.Fail},
		{name: "no scope", script: table4([3][2]bool{{true, false}}), opt: opt, observed: [3]int{1, 0, 0},
			want: []string{}, expected: Expected{6, 2, 6, 6}, verdict: model.Fail},
		{name: "pacing within one QP", script: "0e C @10000 1e @50000 2e C", opt: opt, observed: [3]int{2, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{2, 2, 2, 2}, verdict: model.Pass},
		{name: "exactly min_time apart: no CNP (strictly greater)", script: "0e @50000 1e C", opt: opt, observed: [3]int{1, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{1, 1, 1, 1}, verdict: model.Pass},
		{name: "NAK triggers", script: "0 1x 2 N1 C 1 2 A2", opt: Options{Known: true, NAKTriggers: true}, observed: [3]int{1, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{1, 1, 1, 1}, verdict: model.Pass},
		{name: "unknown min_time", script: "0e C", observed: [3]int{1, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{1, 1, 1, 1}, verdict: model.Skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyze(t, tt.script, tt.opt)
			var obs [3]int
			for i, c := range res.Conns {
				obs[i] = c.Observed
			}
			if obs != tt.observed {
				t.Errorf("observed = %v, want %v", obs, tt.observed)
			}
			if !reflect.DeepEqual(res.ConsistentScopes, tt.want) {
				t.Errorf("ConsistentScopes = %v, want %v", res.ConsistentScopes, tt.want)
			}
			if res.Expected != tt.expected {
				t.Errorf("Expected = %+v, want %+v", res.Expected, tt.expected)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("Verdict = %v, want %v (%s)", res.Verdict, tt.verdict, res.Reason)
			}
		})
	}
}
