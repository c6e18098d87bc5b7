package timeout

import (
	"fmt"
	"reflect"
	"strings"
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
		// episodes: "rel/outcome" of each; a restart episode names the
		// PSN re-issued and is recovered when the re-issue was answered.
		episodes string
	}{
		{"fig2-middle-odp", tracetest.ODPLocal, true, model.Pass, [][]int{{0}}, [][]int64{{522_000}}, "0/recovered"},
		{"fig2-middle-odp-cut", "Q0:1 @5000 r0 @522000 Q0:1", true, model.Pass, [][]int{{0}}, [][]int64{{522_000}}, "0/unresolved"},
		{"fig2-middle-pinned", tracetest.ODPLocal, false, model.Fail, [][]int{nil}, [][]int64{{522_000}}, "1/unresolved"},
		{"fig2-left", tracetest.ODPRemote, true, model.Pass, nil, nil, ""},
		{"fig6-left", tracetest.ODPTwoReads, true, model.Pass, [][]int{nil}, [][]int64{{499_923_000}}, "1/recovered"},
		{"fig6-middle", tracetest.ODPTwoReadsLocal, true, model.Pass, [][]int{{0}}, [][]int64{{522_000, 500_000_000}}, "0/recovered"},
		{"fig11", tracetest.ODPThreeReads, true, model.Pass, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, model.VerbRead, tc.script, Options{TransportTimeoutNs: ttr, RequesterODP: func(model.Conn) bool { return tc.odp }})
			var restarts [][]int
			var intervals [][]int64
			var episodes []string
			for _, to := range res.Timeouts {
				restarts, intervals = append(restarts, to.RestartIntervals), append(intervals, to.IntervalsNs)
				episodes = append(episodes, fmt.Sprintf("%d/%s", to.RelPSN, to.Outcome))
			}
			if got := strings.Join(episodes, " "); got != tc.episodes {
				t.Errorf("episodes %q, want %q", got, tc.episodes)
			}
			if res.Verdict != tc.verdict || !reflect.DeepEqual(restarts, tc.restarts) || !reflect.DeepEqual(intervals, tc.intervals) {
				t.Errorf("verdict %s (%s), restarts %v, intervals %v; want %s, %v, %v", res.Verdict, res.Reason, restarts, intervals,
					tc.verdict, tc.restarts, tc.intervals)
			}
		})
	}
}
