package cnp

import (
	"math/rand/v2"
	"net/netip"
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

// refDepart is depart as it was before its caches: a map of every egress
// port, the host looked up and both times divided for every packet.
type refDepart struct {
	a    *Analyzer
	busy map[egressKey]int64
}

func (r *refDepart) depart(p *model.Pkt) int64 {
	a := r.a
	k, bps := egressKey{host: -1, ip: p.DstIP.Addr()}, a.opt.LinkBps
	if h, ok := a.hostIdx[p.DstIP.Addr()]; ok {
		k = egressKey{host: h}
		if b := a.opt.Hosts[h].LinkBps; b > 0 {
			bps = b
		}
	}
	wait := int64(0)
	if b, ok := r.busy[k]; ok && b > p.TimeNs {
		wait = b - p.TimeNs
	}
	if lo := bitsNs(p.QDepth, bps, false); wait < lo {
		wait = lo
	}
	end := p.TimeNs + wait + bitsNs(int64(p.FrameLen), bps, true)
	r.busy[k] = end
	return end
}

// TestDepartIdentical checks depart's caches (hosts by connection, busy
// by host, the last serialization time) against the plain replay, on
// random packets to hosts with their own link rate, the default rate and
// no host at all, of varying depths and frame lengths.
func TestDepartIdentical(t *testing.T) {
	conns := tracetest.Conns(4, 0xFFFFF0, model.VerbWrite)
	tab := model.NewTable(conns)
	hosts := []Host{{Name: "r", IPs: []netip.Addr{conns[0].Responder.IP}, LinkBps: 25e9},
		{Name: "q1", IPs: []netip.Addr{conns[1].Requester.IP}}, {Name: "q2", IPs: []netip.Addr{conns[2].Requester.IP}, LinkBps: 40e9}}
	for seed := range uint64(50) {
		a := New(tab, Options{EgressQueues: true, LinkBps: 100e9, Hosts: hosts})
		ref := refDepart{a: New(tab, Options{EgressQueues: true, LinkBps: 100e9, Hosts: hosts}), busy: map[egressKey]int64{}}
		r := rand.New(rand.NewPCG(seed, 7))
		for i, p := range tracetest.RandomPkts(r, conns, 3000, seed%2 == 0) {
			if r.IntN(3) == 0 {
				p.QDepth = r.Int64N(200000)
			}
			if r.IntN(10) == 0 {
				p.FrameLen = 64 + r.IntN(4000)
			}
			if r.IntN(50) == 0 {
				p.DstIP = model.IPFrom(netip.AddrFrom4([4]byte{10, 9, 9, byte(r.IntN(3))}))
			}
			if got, want := a.depart(&p), ref.depart(&p); got != want {
				t.Fatalf("seed %d packet %d (%+v): departs at %d, want %d", seed, i, p, got, want)
			}
		}
	}
}

// TestScopesIdentical checks the pacing domains each connection side
// caches: an analyzer whose caches are emptied before every packet gives
// the same result on random packets (ECN marks, NAK triggers, addresses
// changing now and then), with hosts and egress queues or without.
func TestScopesIdentical(t *testing.T) {
	conns := tracetest.Conns(4, 0xFFFFF0, model.VerbWrite)
	tab := model.NewTable(conns)
	hosts := []Host{{Name: "r", IPs: []netip.Addr{conns[0].Responder.IP}, LinkBps: 25e9, Known: true, MinTimeBetweenCNPsNs: 2000, NAKTriggers: true},
		{Name: "q1", IPs: []netip.Addr{conns[1].Requester.IP}, Known: true, MinTimeBetweenCNPsNs: 6000}}
	for seed := range uint64(60) {
		opt := Options{Known: true, MinTimeBetweenCNPsNs: 4000, NAKTriggers: seed%2 == 0, UncertaintyNs: int64(seed % 3 * 500), LinkBps: 100e9}
		if seed%3 == 0 {
			opt.Hosts, opt.EgressQueues = hosts, seed%2 == 1
		}
		cached, bare := New(tab, opt), New(tab, opt)
		r := rand.New(rand.NewPCG(seed, 8))
		for _, p := range tracetest.RandomPkts(r, conns, 3000, false) {
			if r.IntN(4) == 0 && p.Delivered && p.Kind != model.KindCNP {
				p.CE = true
			}
			if r.IntN(40) == 0 {
				p.SrcIP = model.IPFrom(netip.AddrFrom4([4]byte{10, 9, 9, byte(r.IntN(3))}))
			}
			cached.Observe(&p)
			clear(bare.scopes)
			bare.Observe(&p)
		}
		a, b := cached.Finish(), bare.Finish()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: results differ:\ncached %+v\nbare %+v", seed, a, b)
		}
		if len(a.Conns) == 0 || a.Conns[0].ECNTriggers == 0 {
			t.Fatalf("seed %d: no ECN triggers: %+v", seed, a)
		}
	}
}
