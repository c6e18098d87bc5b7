package rnr

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
)

// TestSkipIdentical checks that the packets Observe skips change nothing:
// the analyzer that sees every packet in full (observe) gives the same
// result, on random packets of every verb marked by the retransmission
// tracker as in the pass.
func TestSkipIdentical(t *testing.T) {
	for seed := range uint64(100) {
		for _, verb := range []model.Verb{model.VerbWrite, model.VerbRead} {
			conns := tracetest.Conns(3, 0xFFFFF0, verb)
			tab := model.NewTable(conns)
			pkts := tracetest.RandomPkts(rand.New(rand.NewPCG(seed, 3)), conns, 2000, seed%2 == 0)
			tr := retransmission.New(tab, retransmission.Options{})
			opt := Options{RNRRetry: int(seed % 8), ODP: seed%3 == 0}
			skip, full := New(tab, opt), New(tab, opt)
			for i := range pkts {
				tr.Observe(&pkts[i])
				skip.Observe(&pkts[i])
				full.observe(&pkts[i])
			}
			res := tr.Finish()
			if a, b := skip.Finish(Inputs{Retrans: &res}), full.Finish(Inputs{Retrans: &res}); !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d %s: results differ:\nObserve %+v\nobserve %+v", seed, verb, a, b)
			}
		}
	}
}
