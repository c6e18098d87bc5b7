package counters

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestSkipIdentical checks that the packets Observe skips change nothing:
// the tally that sees every packet in full (observe) counts the same.
func TestSkipIdentical(t *testing.T) {
	for seed := range uint64(50) {
		conns := tracetest.Conns(3, 0xFFFFF0, model.VerbWrite)
		pkts := tracetest.RandomPkts(rand.New(rand.NewPCG(seed, 5)), conns, 2000, false)
		skip, full := NewTally(), NewTally()
		for i := range pkts {
			skip.Observe(&pkts[i])
			full.observe(&pkts[i])
		}
		if !reflect.DeepEqual(skip, full) {
			t.Fatalf("seed %d: tallies differ", seed)
		}
	}
}
