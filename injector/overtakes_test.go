package injector

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// holdModel is the reorder-hold bookkeeping of one connection as the
// switch drives it: holds added, departures counted, holds removed when
// they leave.
type holdModel interface {
	add(h *held)
	depart() []*held // the holds a departure releases, in order (some may be gone)
	remove(h *held)
}

// countdown is the bookkeeping the switch had before overtakes (issue
// #38, point 10): every departure counts down every waiting hold, and a
// hold that leaves is deleted from the list. It is the slow obvious
// reference overtakes must agree with.
type countdown struct{ hs []*held }

func (c *countdown) add(h *held) { c.hs = append(c.hs, h) }

func (c *countdown) depart() []*held {
	var ready []*held
	for _, h := range c.hs {
		if h.overtakers--; h.overtakers == 0 {
			ready = append(ready, h)
		}
	}
	return ready
}

func (c *countdown) remove(h *held) {
	c.hs = slices.DeleteFunc(c.hs, func(x *held) bool { return x == h })
}

// queue adapts overtakes to holdModel (release does the live count).
type queue struct{ q *overtakes }

func (q queue) add(h *held)     { q.q.add(h) }
func (q queue) depart() []*held { return q.q.depart() }
func (q queue) remove(h *held)  { q.q.live-- }

// holdOp is one step of a connection's life: a hold with overtakers
// (overtakers > 0), a packet passing (pass), or the delay of hold timer
// (an index into the holds so far, modulo their number) passing.
type holdOp struct {
	overtakers int
	pass       bool
	timer      int
}

// replay drives m as Switch.receive, release and overtaken do and returns
// the indices of the holds in the order they left.
func replay(m holdModel, ops []holdOp) []int {
	var hs []*held // arrived is each hold's index
	var order []int
	var release func(h *held)
	depart := func() {
		for _, h := range m.depart() {
			if !h.gone {
				release(h)
			}
		}
	}
	release = func(h *held) {
		if h.gone {
			return
		}
		h.gone = true
		m.remove(h)
		order = append(order, int(h.arrived))
		depart() // the released packet leaves and counts as an overtaker
	}
	for _, op := range ops {
		switch {
		case op.overtakers > 0:
			h := &held{overtakers: op.overtakers, arrived: int64(len(hs))}
			hs = append(hs, h)
			m.add(h)
		case op.pass:
			depart()
		case len(hs) > 0:
			release(hs[op.timer%len(hs)])
		}
	}
	return order
}

// Issue #38, point 10: overtakes releases the same holds in the same
// order as the count-down over every hold (differential test on random
// connections: holds, passing packets and expiring delays interleaved).
func TestOvertakesMatchesCountdown(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 10))
	for i := range 2000 {
		ops := make([]holdOp, 1+rng.IntN(60))
		for j := range ops {
			switch rng.IntN(3) {
			case 0:
				ops[j] = holdOp{overtakers: 1 + rng.IntN(5)}
			case 1:
				ops[j] = holdOp{pass: true}
			default:
				ops[j] = holdOp{timer: rng.IntN(64)}
			}
		}
		want := replay(&countdown{}, ops)
		got := replay(queue{&overtakes{waiting: map[uint64][]*held{}}}, ops)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: ops %+v: released %v, want %v", i, ops, got, want)
		}
	}
}

// burst is the connection of a reorder with `psn: all`: n holds of one
// overtaker each, then the first one's delay passes and each release lets
// the next go.
func burst(n int) []holdOp {
	ops := make([]holdOp, n+1)
	for i := range n {
		ops[i] = holdOp{overtakers: 1}
	}
	ops[n] = holdOp{timer: 0}
	return ops
}

// BenchmarkOvertakesBurst releases a burst of 8192 reorder holds with
// overtakes, and reports the count-down's time for the same burst,
// measured once in the same run, and the ratio (old/new). At 65,536 holds
// (a 256 MiB message with `psn: all`) the count-down took seconds.
func BenchmarkOvertakesBurst(b *testing.B) {
	const n = 8192
	ops := burst(n)
	start := time.Now()
	if got := len(replay(&countdown{}, ops)); got != n {
		b.Fatalf("count-down released %d holds, want %d", got, n)
	}
	old := time.Since(start)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if got := len(replay(queue{&overtakes{waiting: map[uint64][]*held{}}}, ops)); got != n {
			b.Fatalf("overtakes released %d holds, want %d", got, n)
		}
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(old.Nanoseconds()), "countdown-ns")
	b.ReportMetric(float64(old.Nanoseconds())/perOp, "countdown/overtakes")
}
