package agent

import (
	"context"
	"testing"
	"time"
)

// TestRealLoopSlowdown: the real Env's loop runs as many times slower as
// asked, and Await's limit is on that loop's clock: 2 ms at 20× slower
// lasts at least 40 ms of wall time.
func TestRealLoopSlowdown(t *testing.T) {
	loop, _, release := Real{}.Loop(20)
	defer release()
	if s := loop.(interface{ Slowdown() int64 }).Slowdown(); s != 20 {
		t.Fatalf("Slowdown = %d, want 20", s)
	}
	start := time.Now()
	why := Real{}.Await(context.Background(), loop, make(chan struct{}), 2*time.Millisecond)
	if el := time.Since(start); el < 40*time.Millisecond || why == "" {
		t.Errorf("Await(2 ms) on a 20× slower loop returned %q after %v, want a timeout after ≥ 40 ms", why, el)
	}
}

// TestRealTrafficStartDelay: on a real clock a flow starts on the loop
// no sooner than its delay, and a flow whose request ends before its
// delay has passed never starts.
func TestRealTrafficStartDelay(t *testing.T) {
	loop, _, release := Real{}.Loop(1)
	defer release()
	const delay = 30 * time.Millisecond
	done := make(chan struct{})
	var startedAt int64
	t0 := loop.Now()
	why := Real{}.Traffic(context.Background(), loop, Flow{Delay: delay, Limit: time.Minute, Done: done,
		Start: func() { startedAt = loop.Now(); close(done) }})
	if why != "" || startedAt-t0 < int64(delay) {
		t.Errorf("Traffic = %q, started %v after the call; want \"\" and at least %v", why, time.Duration(startedAt-t0), delay)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	started := make(chan struct{}, 1)
	why = Real{}.Traffic(ctx, loop, Flow{Delay: delay, Limit: time.Minute, Done: make(chan struct{}),
		Start: func() { started <- struct{}{} }})
	if want := "interrupted: context canceled"; why != want {
		t.Errorf("Traffic with an ended context = %q, want %q", why, want)
	}
	time.Sleep(2 * delay)
	select {
	case <-started:
		t.Error("a flow whose request had ended started after its delay")
	default:
	}
}

type fakeLateness []time.Duration

func (f *fakeLateness) TakeTimerLateness() time.Duration {
	v := (*f)[0]
	*f = (*f)[1:]
	return v
}

// TestLatenessSpansFlows: two flows in traffic at once on one agent's
// loop each report the largest timer lateness of their common span; the
// second's start does not discard what the first has seen.
func TestLatenessSpansFlows(t *testing.T) {
	a := &Agent{}
	// Takes: A's start (discarded), A's end (4 ms), B's end (1 ms), C's start (discarded), C's end (2 ms).
	l := &fakeLateness{9 * time.Millisecond, 4 * time.Millisecond, time.Millisecond, 7 * time.Millisecond, 2 * time.Millisecond}
	a.lateStart(l) // A
	a.lateStart(l) // B, while A runs: no take
	if got := a.lateEnd(l); got != 4*time.Millisecond {
		t.Errorf("A's lateness = %v, want 4ms", got)
	}
	if got := a.lateEnd(l); got != 4*time.Millisecond {
		t.Errorf("B's lateness = %v, want 4ms (the span it shared with A)", got)
	}
	a.lateStart(l) // C alone: discards 7 ms
	if got := a.lateEnd(l); got != 2*time.Millisecond {
		t.Errorf("C's lateness = %v, want 2ms", got)
	}
}
