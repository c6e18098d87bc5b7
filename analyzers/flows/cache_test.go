package flows

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestCachesIdentical checks that the last bin and the destination hosts
// Observe caches change nothing: an analyzer whose caches are emptied
// before every packet gives the same result, on random packets of flows
// between three hosts (and of an address no host owns), the bins
// widening as the trace grows.
func TestCachesIdentical(t *testing.T) {
	hosts := []tracetest.Host{{Name: "a", IP: netip.MustParseAddr("10.0.0.1")}, {Name: "b", IP: netip.MustParseAddr("10.0.0.2")},
		{Name: "c", IP: netip.MustParseAddr("10.0.0.3")}}
	conns := tracetest.FlowConns(hosts, []tracetest.Flow{{Name: "ab", From: "a", To: "b", QPs: 2}, {Name: "cb", From: "c", To: "b", QPs: 1}})
	conns = append(conns, model.Connection{ID: 3, Verb: model.VerbWrite, Flow: "xb",
		Requester: model.Endpoint{IP: netip.MustParseAddr("10.0.0.9"), QPN: 0x103}, Responder: conns[0].Responder})
	tab := model.NewTable(conns)
	for seed := range uint64(50) {
		pkts := tracetest.RandomPkts(rand.New(rand.NewPCG(seed, 6)), conns, 3000, seed%2 == 0)
		opt := Options{MaxBins: 2 + int(seed%16), MinBinNs: 100 + int64(seed)*37}
		cached, bare := New(tab, opt), New(tab, opt)
		for i := range pkts {
			p := pkts[i]
			p.QDepth = int64(i % 5000)
			if i%97 == 0 {
				p.DstIP = model.IPFrom(netip.MustParseAddr("10.9.9.9"))
			}
			cached.Observe(&p)
			bare.binLo, bare.binHi = 0, 0
			bare.dst = model.NewHostCache(bare.hostOf, len(tab.Conns)) // forgets every answer
			bare.Observe(&p)
		}
		a, b := cached.Finish(Inputs{}), bare.Finish(Inputs{})
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: results differ:\ncached %+v\nbare %+v", seed, a, b)
		}
		if len(a.Flows) != 3 || a.Flows[0].Bytes == 0 || len(a.Ports) == 0 {
			t.Fatalf("seed %d: nothing measured: %+v", seed, a)
		}
	}
}
