package gbn

import (
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestODPSequences: the READ sequences of Fukuoka et al., Analyzing
// Performance Pitfalls of On-Demand Paging of InfiniBand (Figs. 2, 6, 11)
// break no Go-back-N rule: a READ re-issued after an RNR NAK goes back to
// the NAK'd PSN (the requester discarded the response that came during the
// wait); the requests a go-back re-sends after the first are that go-back;
// on an ODP run a READ re-issued for a response the requester's page fault
// dropped is that restart. Without ODP that last re-issue still breaks
// nak-wrong-psn, as before.
func TestODPSequences(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		odp          bool
		want         []string
		completed    bool
		// dups: the requests the responder executed again
		// (duplicate_request): on an ODP run not those it had dropped
		// silently, nor those it NAK'd (Figs. 6, 11: only the 1st READ's
		// retry).
		dups int
	}{
		{"fig2-left", tracetest.ODPRemote, false, nil, true, 1},
		{"fig2-middle-odp", tracetest.ODPLocal, true, nil, true, 1},
		{"fig2-middle-pinned", tracetest.ODPLocal, false, []string{"requester nak-wrong-psn 0"}, true, 1},
		{"fig6-left", tracetest.ODPTwoReads, true, nil, true, 1},
		{"fig6-left-pinned", tracetest.ODPTwoReads, false, nil, true, 2},
		{"fig6-middle", tracetest.ODPTwoReadsLocal, true, nil, true, 1},
		{"fig11", tracetest.ODPThreeReads, true, nil, true, 1},
		// An RNR NAK for the next request's PSN after the go-back began:
		// its re-issue answers it (and is no part of the go-back).
		{"rnr-for-next", "Q0:1 Q1:1 R0:14 @1000000 Q0:1 r0 R1:14 @1000000 Q1:1 r1", false, nil, true, 2},
		// Both READs left before the RNR NAK and the responder answered
		// both after its fault (seen on netns under load): the go-back
		// re-sends both, and the replay answers from the first.
		{"two-in-flight-odp", "Q0:1 Q1:1 R0:14 r0 r1 @4000000 Q0:1 Q1:1 r0 r1", true, nil, true, 2},
		{"two-in-flight-pinned", "Q0:1 Q1:1 R0:14 r0 r1 @4000000 Q0:1 Q1:1 r0 r1", false, nil, true, 2},
		// A re-issue from the wrong PSN after an RNR NAK is still one.
		{"rnr-wrong-psn", "Q0:1 Q1:1 R1:14 r0 @2000000 Q0:1 r0 Q1:1 r1", false, []string{"requester nak-wrong-psn 0"}, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res := run(t, model.VerbRead, 0, 1, tc.script, Options{ODP: tc.odp, RequesterODP: func(model.Conn) bool { return tc.odp }})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("violations = %q, want %q", got, tc.want)
			}
			if res.Conns[0].Completed != tc.completed || res.Conns[0].Duplicates != tc.dups {
				t.Errorf("completed = %v, duplicates %d; want %v, %d", res.Conns[0].Completed, res.Conns[0].Duplicates, tc.completed, tc.dups)
			}
		})
	}
}

// TestRNRInARow: RNR NAKs in a row for one WRITE PSN, each retried, break
// no rule; the responder did not execute the NAK'd PSN and what followed
// it (it discarded them), so the retries are no duplicates.
func TestRNRInARow(t *testing.T) {
	got, res := run(t, model.VerbWrite, 0, 1, "0 1 R0:14 @1300000 0 1 R0:14 @1300000 0 1 A1", Options{})
	if got != nil || !res.Conns[0].Completed || res.Conns[0].Duplicates != 0 {
		t.Errorf("violations = %q, completed %v, duplicates %d; want none, completed, 0", got, res.Conns[0].Completed, res.Conns[0].Duplicates)
	}
}
