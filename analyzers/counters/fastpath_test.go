package counters

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestSkipIdentical checks that the packets Observe skips and the last
// address it caches change nothing: the tally that sees every packet in
// full (observe), its cache emptied before each, counts the same.
func TestSkipIdentical(t *testing.T) {
	for seed := range uint64(50) {
		conns := tracetest.Conns(3, 0xFFFFF0, model.VerbWrite)
		r := rand.New(rand.NewPCG(seed, 5))
		pkts := tracetest.RandomPkts(r, conns, 2000, false)
		for i := range pkts {
			pkts[i].CE = pkts[i].CE || r.IntN(5) == 0 && pkts[i].Delivered
		}
		skip, full := NewTally(), NewTally()
		for i := range pkts {
			skip.Observe(&pkts[i])
			full.last = nil
			full.observe(&pkts[i])
		}
		if !reflect.DeepEqual(skip.ips, full.ips) {
			t.Fatalf("seed %d: tallies differ", seed)
		}
	}
}
