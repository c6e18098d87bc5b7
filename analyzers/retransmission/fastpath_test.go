package retransmission

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestFastPathIdentical checks that the fast paths for the next in-order
// packet (nextData, nextResponse) give what the general path gives: the
// same Retx marks and the same result, on random packets of every verb
// (PSNs wrapping), with the fast paths on and off (write and read
// cleared: only the fast paths read them).
func TestFastPathIdentical(t *testing.T) {
	fast := 0
	for seed := range uint64(300) {
		for _, verb := range []model.Verb{model.VerbWrite, model.VerbSend, model.VerbRead} {
			conns := tracetest.Conns(3, 0xFFFFF0-uint32(seed%64), verb)
			tab := model.NewTable(conns)
			pkts := tracetest.RandomPkts(rand.New(rand.NewPCG(seed, 1)), conns, 2000, seed%2 == 0)
			opt := Options{RetryCnt: 3 + int(seed%5), RTTNs: int64(seed % 3 * 100), MinTimeoutNs: int64(seed % 3 * 3000)}
			on, off := New(tab, opt), New(tab, opt)
			for i := range off.conns {
				off.conns[i].write, off.conns[i].read = false, false
			}
			for i := range pkts {
				a, b := pkts[i], pkts[i]
				if c := a.Conn; c >= 0 && a.Event == 0 && a.Delivered && on.conns[c].sent && a.PSN == on.conns[c].sndNxt && a.PSN == on.conns[c].ePSN && len(on.conns[c].open) == 0 {
					fast++
				}
				on.Observe(&a)
				off.Observe(&b)
				if a.Retx != b.Retx {
					t.Fatalf("seed %d %s packet %d (%+v): Retx %v with the fast paths, %v without", seed, verb, i, pkts[i], a.Retx, b.Retx)
				}
			}
			if ra, rb := on.Finish(), off.Finish(); !reflect.DeepEqual(ra, rb) {
				t.Fatalf("seed %d %s: results differ:\nfast %+v\nslow %+v", seed, verb, ra, rb)
			}
		}
	}
	if fast < 300000 {
		t.Errorf("only %d packets could take a fast path: the random packets do not exercise it", fast)
	}
}
