package agent

import (
	"context"
	"testing"
	"time"
)

func TestWallTime(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		k    int64
		want time.Duration
	}{
		{time.Second, 0, time.Second}, {time.Second, 1, time.Second}, {235 * time.Millisecond, 20, 4700 * time.Millisecond},
		{1 << 61, 4, 1 << 62}, {time.Duration(1<<63 - 1), 10000, 1 << 62},
	} {
		if got := WallTime(c.d, c.k); got != c.want {
			t.Errorf("WallTime(%v, %d) = %v, want %v", c.d, c.k, got, c.want)
		}
	}
}

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
