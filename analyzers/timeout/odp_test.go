package timeout

import (
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestODP: timeout 16 (T_tr 268.4 ms). A READ the requester re-issued
// when its page fault resolved (Fukuoka et al., Analyzing Performance
// Pitfalls of On-Demand Paging of InfiniBand, Fig. 2 middle: 522 µs after
// the dropped response) is, on an ODP run, a restart, not a timeout out
// of bound; without ODP it stays out of bound. An RNR wait is no timeout
// at all, and the 2nd READ's silent timeout of Fig. 6 is within the bound
// (the rnr check reports it).
func TestODP(t *testing.T) {
	const ttr = 268_435_456
	for _, tc := range []struct {
		name, script string
		odp          bool
		verdict      model.Verdict
		restarts     [][]int
		intervals    [][]int64
	}{
		{"fig2-middle-odp", tracetest.ODPLocal, true, model.Pass, [][]int{{0}}, [][]int64{{522_000}}},
		{"fig2-middle-pinned", tracetest.ODPLocal, false, model.Fail, [][]int{nil}, [][]int64{{522_000}}},
		{"fig2-left", tracetest.ODPRemote, true, model.Pass, nil, nil},
		{"fig6-left", tracetest.ODPTwoReads, true, model.Pass, [][]int{nil}, [][]int64{{499_923_000}}},
		{"fig6-middle", tracetest.ODPTwoReadsLocal, true, model.Pass, [][]int{{0}}, [][]int64{{522_000, 500_000_000}}},
		{"fig11", tracetest.ODPThreeReads, true, model.Pass, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, model.VerbRead, tc.script, Options{TransportTimeoutNs: ttr, ODP: tc.odp})
			var restarts [][]int
			var intervals [][]int64
			for _, to := range res.Timeouts {
				restarts, intervals = append(restarts, to.RestartIntervals), append(intervals, to.IntervalsNs)
			}
			if res.Verdict != tc.verdict || !reflect.DeepEqual(restarts, tc.restarts) || !reflect.DeepEqual(intervals, tc.intervals) {
				t.Errorf("verdict %s (%s), restarts %v, intervals %v; want %s, %v, %v", res.Verdict, res.Reason, restarts, intervals,
					tc.verdict, tc.restarts, tc.intervals)
			}
		})
	}
}
