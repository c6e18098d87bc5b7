package gbn

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestFastPathIdentical checks that the fast paths of Observe for the
// next in-order WRITE/SEND request and READ response give the result the
// general path gives, on random packets of every verb (PSNs wrapping),
// with the fast paths on and off (write and read cleared: only the fast
// paths read them).
func TestFastPathIdentical(t *testing.T) {
	var fast [2]int // packets that could take the WRITE/SEND and the READ fast path
	for seed := range uint64(300) {
		for _, verb := range []model.Verb{model.VerbWrite, model.VerbSend, model.VerbRead} {
			conns := tracetest.Conns(3, 0xFFFFF0-uint32(seed%64), verb)
			tab := model.NewTable(conns)
			pkts := tracetest.RandomPkts(rand.New(rand.NewPCG(seed, 2)), conns, 2000, seed%2 == 0)
			opt := Options{RetryCnt: 3 + int(seed%5), CheckStartPSN: seed%3 > 0, Foreign: seed%5 == 0, ODP: seed%4 == 0, MinTimeoutNs: int64(seed % 3 * 3000)}
			if seed%8 == 0 {
				opt.RequesterODP = func(c model.Conn) bool { return c.ID%2 == 0 }
			}
			on, off := New(tab, opt), New(tab, opt)
			for i := range off.conns {
				off.conns[i].write, off.conns[i].read = false, false
			}
			for i := range pkts {
				a, b := pkts[i], pkts[i]
				if c := a.Conn; c >= 0 && a.Event == 0 && a.Delivered {
					cs := &on.conns[c]
					s, r, psn := &cs.rsnd, &cs.rrecv, a.PSN
					if a.Kind == model.KindReadResp && !cs.fatal && psn == s.sndNxt && psn == s.cur.Next() && !s.pending && psn.LessThan(s.reqNxt) &&
						psn == r.ePSN && !r.rnr && !r.gap && psn.LessThan(r.reqNxt) {
						fast[1]++
					}
					if a.Kind == model.KindData && !cs.fatal && cs.snd.sent && psn == cs.snd.sndNxt && psn == cs.snd.cur.Next() && psn == cs.recv.ePSN && !cs.recv.gap {
						fast[0]++
					}
				}
				on.Observe(&a)
				off.Observe(&b)
			}
			if ra, rb := on.Finish(), off.Finish(); !reflect.DeepEqual(ra, rb) {
				t.Fatalf("seed %d %s: results differ:\nfast %+v\nslow %+v", seed, verb, ra, rb)
			}
		}
	}
	t.Logf("fast-path packets: %d WRITE/SEND, %d READ", fast[0], fast[1])
	if fast[0] < 300000 || fast[1] < 50000 {
		t.Errorf("fast-path packets: %d WRITE/SEND, %d READ: the random packets do not exercise them", fast[0], fast[1])
	}
}
