package retransmission

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestODPGoBacks: the go-backs of the READ sequences of Fukuoka et al.,
// Analyzing Performance Pitfalls of On-Demand Paging of InfiniBand (Figs.
// 2, 6, 11): a re-issue after an RNR NAK is an rnr go-back, one after a
// sequence error NAK a fast one (not implied: the NAK is in the trace),
// the requests a go-back re-sends after the first are that go-back, and
// nothing is a loss (no packet of the trace was lost).
func TestODPGoBacks(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []string // "kind rel idle implied"
		stats        ConnStats
		minTimeout   int64
	}{
		{"fig2-left", tracetest.ODPRemote, []string{"rnr 0 4565000 false"}, ConnStats{RNR: 1}, 0},
		{"fig2-middle", tracetest.ODPLocal, []string{"timeout 0 522000 false"}, ConnStats{Timeouts: 1, Spurious: 1}, 0},
		{"fig6-left", tracetest.ODPTwoReads, []string{"rnr 0 4565000 false", "timeout 1 499923000 false"}, ConnStats{RNR: 1, Timeouts: 1, Spurious: 1}, 0},
		{"fig11", tracetest.ODPThreeReads, []string{"rnr 0 4565000 false", "fast 1 10000 false"}, ConnStats{RNR: 1, Fast: 1, Spurious: 1}, 0},
		// The response to the go-back's first request overtakes its second
		// (7 µs later): still one go-back when the timeout is known (a
		// timer cannot expire that soon); with it unknown, the second is a
		// go-back of its own, as before any response came.
		{"fig11-overtaken", tracetest.ODPThreeReadsOvertaken, []string{"rnr 0 4565000 false", "fast 1 10000 false"},
			ConnStats{RNR: 1, Fast: 1, Spurious: 1}, 67_000_000},
		{"fig11-overtaken-timeout-unknown", tracetest.ODPThreeReadsOvertaken,
			[]string{"rnr 0 4565000 false", "fast 1 10000 false", "timeout 2 7000 false"}, ConnStats{RNR: 1, Fast: 1, Timeouts: 1, Spurious: 2}, 0},
		// The next request re-sent after its predecessor's response and
		// later than a timer can expire is a timeout go-back of its own.
		{"next-after-timer", "Q0:1 Q1:1 N0 Q0:1 r0 @70000000 Q1:1 r1", []string{"fast 0 200 false", "timeout 1 70000000 false"},
			ConnStats{Fast: 1, Timeouts: 1, Spurious: 2}, 67_000_000},
		// An RNR NAK for the next request's PSN came after the go-back
		// began: the next request answers it, a go-back of its own.
		{"rnr-for-next", "Q0:1 Q1:1 R0:14 @1000000 Q0:1 r0 R1:14 @1000000 Q1:1 r1", []string{"rnr 0 1000100 false", "rnr 1 1000100 false"},
			ConnStats{RNR: 2}, 67_000_000},
		{"rnr-for-next-timeout-unknown", "Q0:1 Q1:1 R0:14 @1000000 Q0:1 r0 R1:14 @1000000 Q1:1 r1", []string{"rnr 0 1000100 false", "rnr 1 1000100 false"},
			ConnStats{RNR: 2}, 0},
		{"implied", "Q0:2 r0x r1 Q0:2 r0 r1", []string{"fast 0 300 true"}, ConnStats{Implied: 1, Losses: 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns := tracetest.Conns(1, 0, model.VerbRead)
			tab, pkts := tracetest.Script(t, conns, tc.script)
			tr := New(tab, Options{MinTimeoutNs: tc.minTimeout})
			for i := range pkts {
				tr.Observe(&pkts[i])
			}
			res := tr.Finish()
			var got []string
			for _, g := range res.GoBacks {
				got = append(got, fmt.Sprintf("%s %d %d %v", g.Kind, g.PSN.Sub(0), g.IdleNs, g.Implied))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("go-backs = %q, want %q", got, tc.want)
			}
			st := res.Conns[0]
			st.Epochs = 0
			tc.stats.Conn = 0
			if st != tc.stats {
				t.Errorf("stats = %+v, want %+v", st, tc.stats)
			}
			if res.Verdict != model.Pass {
				t.Errorf("verdict %s (%s), want pass", res.Verdict, res.Reason)
			}
		})
	}
}

// TestRNRInARowWrite: each of RNR NAKs in a row for one WRITE PSN starts
// its own rnr go-back.
func TestRNRInARowWrite(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbWrite)
	tab, pkts := tracetest.Script(t, conns, "0 R0:14 @1300000 0 R0:14 @1300000 0 A0")
	tr := New(tab, Options{})
	for i := range pkts {
		tr.Observe(&pkts[i])
	}
	res := tr.Finish()
	if st := res.Conns[0]; st.RNR != 2 || st.Timeouts != 0 {
		t.Errorf("stats = %+v, want 2 rnr go-backs, no timeout", st)
	}
}
