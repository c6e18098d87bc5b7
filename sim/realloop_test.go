package sim

import (
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newStartedRealLoop(t *testing.T) *RealLoop {
	t.Helper()
	l := NewRealLoop()
	l.Start()
	t.Cleanup(l.Close)
	return l
}

// TestRealLoopSerialized posts and schedules from many goroutines; the
// callbacks mutate unguarded state, so -race fails if two ever overlap.
func TestRealLoopSerialized(t *testing.T) {
	l := newStartedRealLoop(t)
	const goroutines, each = 8, 500
	count := 0 // touched only on the loop
	var wg sync.WaitGroup
	wg.Add(goroutines * each * 2)
	for range goroutines {
		go func() {
			for i := range each {
				l.Post(func() { count++; wg.Done() })
				l.AfterFunc(time.Duration(i%3)*time.Microsecond, func() { count++; wg.Done() })
			}
		}()
	}
	wg.Wait()
	got := make(chan int)
	l.Post(func() { got <- count })
	if g, want := <-got, goroutines*each*2; g != want {
		t.Errorf("count = %d, want %d", g, want)
	}
}

func TestRealLoopPostFIFO(t *testing.T) {
	l := NewRealLoop() // posted before Start: waits for it
	var got []int
	done := make(chan struct{})
	for i := range 100 {
		l.Post(func() { got = append(got, i) })
	}
	l.AfterFunc(0, func() { close(done) }) // d <= 0: after already-queued work
	l.Start()
	defer l.Close()
	<-done
	for i, v := range got {
		if v != i {
			t.Fatalf("got[%d] = %d, want %d", i, v, i)
		}
	}
	if len(got) != 100 {
		t.Errorf("len(got) = %d, want 100", len(got))
	}
}

func TestRealLoopAfterFuncTiming(t *testing.T) {
	l := newStartedRealLoop(t)
	const d = 20 * time.Millisecond
	fired := make(chan int64, 1)
	start := l.Now()
	l.AfterFunc(d, func() { fired <- l.Now() })
	select {
	case at := <-fired:
		// Loose bounds: never early, and not absurdly late on a loaded machine.
		if el := time.Duration(at - start); el < d || el > d+2*time.Second {
			t.Errorf("AfterFunc(%v) fired after %v, want in [%v, %v]", d, el, d, d+2*time.Second)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc did not fire")
	}
}

// TestRealLoopStopQueued stops timers whose callbacks are (or may be)
// already queued behind a blocked callback: they must not run.
func TestRealLoopStopQueued(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			l := newStartedRealLoop(t)
			block, blocked := make(chan struct{}), make(chan struct{})
			l.Post(func() { close(blocked); <-block })
			<-blocked
			var ran atomic.Bool
			tm := l.AfterFunc(d, func() { ran.Store(true) })
			time.Sleep(10 * time.Millisecond) // let the time.Timer fire and queue the call
			if got := tm.Stop(); !got {
				t.Errorf("Stop() of queued timer = %v, want true", got)
			}
			close(block)
			flushRealLoop(t, l)
			if ran.Load() {
				t.Error("stopped timer's callback ran")
			}
			if got := tm.Stop(); got {
				t.Errorf("second Stop() = %v, want false", got)
			}
		})
	}
}

func TestRealLoopStopAfterFire(t *testing.T) {
	l := newStartedRealLoop(t)
	fired := make(chan struct{})
	tm := l.AfterFunc(time.Microsecond, func() { close(fired) })
	<-fired
	if got := tm.Stop(); got {
		t.Errorf("Stop() after firing = %v, want false", got)
	}
}

// flushRealLoop waits until everything queued on l before the call has run.
func flushRealLoop(t *testing.T, l *RealLoop) {
	t.Helper()
	done := make(chan struct{})
	l.Post(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("loop did not drain")
	}
}

func TestRealLoopClose(t *testing.T) {
	t.Run("drops pending work", func(t *testing.T) {
		l := NewRealLoop()
		l.Start()
		var ran atomic.Int32
		block, blocked := make(chan struct{}), make(chan struct{})
		l.Post(func() { close(blocked); <-block })
		<-blocked
		for range 10 {
			l.Post(func() { ran.Add(1) })
		}
		closed := make(chan struct{})
		go func() { l.Close(); close(closed) }()
		// Unblock only once Close has marked the loop closed (it then waits
		// for the blocked callback), so the queued callbacks must be dropped.
		for deadline := time.Now().Add(5 * time.Second); !l.closedFlag.Load(); {
			if time.Now().After(deadline) {
				t.Fatal("Close did not mark the loop closed")
			}
			time.Sleep(time.Millisecond)
		}
		close(block)
		<-closed
		l.Post(func() { ran.Add(1) })                       // no-op
		l.AfterFunc(0, func() { ran.Add(1) })               // no-op
		tm := l.AfterFunc(time.Hour, func() { ran.Add(1) }) // no-op
		if tm.Stop() {
			t.Error("Stop() of a timer made after Close = true, want false")
		}
		if got := ran.Load(); got != 0 {
			t.Errorf("%d callbacks ran after Close, want 0", got)
		}
		select {
		case <-l.Done():
		default:
			t.Error("Done() not closed after Close returned")
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		l := NewRealLoop()
		l.Start()
		l.Close()
		l.Close()
		l.Start() // after Close: nothing
		l.Close()
	})
	t.Run("before Start", func(t *testing.T) {
		l := NewRealLoop()
		l.Close()
		l.Start()
		<-l.Done()
	})
	t.Run("from a callback", func(t *testing.T) {
		l := NewRealLoop()
		l.Start()
		var after atomic.Bool
		l.Post(func() { l.Close(); after.Store(true) })
		l.Post(func() { t.Error("callback after Close ran") })
		select {
		case <-l.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("loop did not exit after Close from a callback")
		}
		if !after.Load() {
			t.Error("Close from a callback did not return")
		}
		l.Close()
	})
}

func TestRealLoopNowMonotonic(t *testing.T) {
	l := NewRealLoop()
	prev := l.Now()
	for range 1000 {
		now := l.Now()
		if now < prev {
			t.Fatalf("Now() went backwards: %d after %d", now, prev)
		}
		prev = now
	}
}

// Timers run in deadline order even when their deadlines are microseconds
// apart and they were created in the opposite order (separate time.Timers
// firing in their own goroutines do not promise that). The expected order
// is computed from the deadlines the timers got, so machine load cannot
// change it.
func TestRealLoopTimersInDeadlineOrder(t *testing.T) {
	l := NewRealLoop()
	l.Start()
	defer l.Close()
	const n = 300
	var got []int
	deadline := make([]int64, n)
	done := make(chan struct{})
	l.Post(func() {
		for i := range n {
			tm := l.AfterFunc(time.Duration(2000+(n-i))*time.Microsecond, func() {
				got = append(got, i)
				if len(got) == n {
					close(done)
				}
			})
			deadline[i] = tm.(*realTimer).deadline
		}
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("timers did not all run")
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	sort.SliceStable(want, func(a, b int) bool { return deadline[want[a]] < deadline[want[b]] })
	if !slices.Equal(got, want) {
		t.Fatalf("timers ran in order %v...\nwant %v...", got[:20], want[:20])
	}
	if deadline[0] <= deadline[n-1] {
		t.Logf("creation took longer than the deadlines' spacing: the test checks ties only")
	}
}

// TestRealLoopTimerLateness: a timer due while the loop is busy runs late,
// and TakeTimerLateness reports at least that delay, once.
func TestRealLoopTimerLateness(t *testing.T) {
	l := NewRealLoop()
	l.Start()
	defer l.Close()
	done := make(chan struct{})
	l.AfterFunc(time.Millisecond, func() { close(done) })
	l.Post(func() { time.Sleep(30 * time.Millisecond) }) // busy past the deadline
	<-done
	if got := l.TakeTimerLateness(); got < 29*time.Millisecond {
		t.Errorf("TakeTimerLateness = %v, want at least 29ms (the loop was busy 30 ms past a 1 ms timer)", got)
	}
	if got := l.TakeTimerLateness(); got != 0 {
		t.Errorf("second TakeTimerLateness = %v, want 0 (no timer since)", got)
	}
}

// TestRealLoopSlow: a loop k times slower than the wall clock fires a timer
// of d after at least k·d of wall time, reads at most wall/k on its clock,
// and converts AF_PACKET arrival delays the same way.
func TestRealLoopSlow(t *testing.T) {
	const k = 50
	l := NewRealLoopSlow(k)
	l.Start()
	t.Cleanup(l.Close)
	if l.Slowdown() != k || NewRealLoop().Slowdown() != 1 || NewRealLoopSlow(0).Slowdown() != 1 {
		t.Fatalf("Slowdown = %d, %d, %d; want %d, 1, 1", l.Slowdown(), NewRealLoop().Slowdown(), NewRealLoopSlow(0).Slowdown(), k)
	}
	const d = 400 * time.Microsecond // loop time: 20 ms of wall time
	fired := make(chan int64, 1)
	wall := time.Now()
	start := l.Now()
	l.AfterFunc(d, func() { fired <- l.Now() })
	select {
	case at := <-fired:
		el := time.Since(wall)
		if el < k*d {
			t.Errorf("AfterFunc(%v) on a %d× slower loop fired after %v of wall time, want ≥ %v", d, k, el, k*d)
		}
		if got := time.Duration(at - start); got < d || got > el/k+time.Microsecond {
			t.Errorf("loop time elapsed = %v, want in [%v, wall/%d = %v]", got, d, k, el/k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc did not fire")
	}
}

// TestWaker: the Linux RealLoop wakes through a timerfd; a waker fires once
// per Reset, a Reset replaces the pending wake, and nothing fires after
// Stop (a Reset after Stop is ignored).
func TestWaker(t *testing.T) {
	fired := make(chan struct{}, 4)
	w := newWaker(func() { fired <- struct{}{} })
	if _, rt := w.(*timerWaker); rt && runtime.GOOS == "linux" {
		t.Fatalf("newWaker = %T, want the timerfd waker on Linux", w)
	}
	w.Reset(time.Hour)
	w.Reset(time.Millisecond) // replaces the hour
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after Reset(1ms)")
	}
	w.Reset(50 * time.Millisecond)
	w.Stop()
	w.Reset(time.Millisecond)
	w.Stop()
	select {
	case <-fired:
		t.Error("a wake after Stop")
	case <-time.After(200 * time.Millisecond):
	}
}

// BenchmarkRealLoopTimerChain measures a chain of 88 µs AfterFuncs (a 1 KiB
// frame's time at 100 Gb/s, 1000× slower) on the RealLoop's waker and on a
// runtime timer, the reference, in the same run: wall time per step and
// the ratio to the 88 µs asked (runtime timer: about 1.1 ms per step, 12×,
// on an idle 2-core machine; timerfd: about 120 µs, 1.4×).
func BenchmarkRealLoopTimerChain(b *testing.B) {
	const d = 88 * time.Microsecond
	for _, c := range []struct {
		name string
		mk   func(func()) waker
	}{{"loop-waker", newWaker}, {"runtime-timer", func(f func()) waker { return &timerWaker{fire: f} }}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			l := NewRealLoop()
			l.mkWaker = c.mk
			l.Start()
			defer l.Close()
			done := make(chan struct{})
			i := 0
			var tick func()
			tick = func() {
				if i++; i > b.N {
					close(done)
					return
				}
				l.AfterFunc(d, tick)
			}
			b.ResetTimer()
			start := time.Now()
			l.Post(tick)
			<-done
			b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(d), "x-asked")
		})
	}
}

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
