package cnp

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestSkipIdentical checks that the packets Observe skips change nothing:
// the analyzer that sees every packet in full (observe) gives the same
// result on random packets, with and without egress queues.
func TestSkipIdentical(t *testing.T) {
	for seed := range uint64(100) {
		conns := tracetest.Conns(3, 0xFFFFF0, model.VerbWrite)
		tab := model.NewTable(conns)
		pkts := tracetest.RandomPkts(rand.New(rand.NewPCG(seed, 4)), conns, 2000, seed%2 == 0)
		opt := Options{Known: true, MinTimeBetweenCNPsNs: 4000, NAKTriggers: seed%3 == 0, EgressQueues: seed%4 == 0, LinkBps: 100e9}
		skip, full := New(tab, opt), New(tab, opt)
		for i := range pkts {
			skip.Observe(&pkts[i])
			full.observe(&pkts[i])
		}
		if a, b := skip.Finish(), full.Finish(); !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: results differ:\nObserve %+v\nobserve %+v", seed, a, b)
		}
	}
}
