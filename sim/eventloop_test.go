package sim

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// record returns a func that appends "name@now" to *log when run on l.
func record(l Loop, log *[]string, name string) func() {
	return func() { *log = append(*log, fmt.Sprintf("%s@%d", name, l.Now())) }
}

func TestEventLoopOrder(t *testing.T) {
	type sched struct {
		name string
		d    time.Duration
	}
	tests := []struct {
		name  string
		sched []sched
		want  []string
	}{
		{"sorted by time", []sched{{"c", 30}, {"a", 10}, {"b", 20}}, []string{"a@10", "b@20", "c@30"}},
		{"ties FIFO", []sched{{"x", 5}, {"y", 5}, {"z", 5}, {"w", 1}}, []string{"w@1", "x@5", "y@5", "z@5"}},
		{"zero and negative run now, FIFO", []sched{{"n", -3}, {"z", 0}, {"p", 1}, {"z2", 0}}, []string{"n@0", "z@0", "z2@0", "p@1"}},
		{"large", []sched{{"h", time.Hour}, {"s", time.Second}}, []string{"s@1000000000", "h@3600000000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewEventLoop()
			var log []string
			for _, s := range tt.sched {
				l.AfterFunc(s.d, record(l, &log, s.name))
			}
			if got, want := l.Pending(), len(tt.sched); got != want {
				t.Errorf("Pending() = %d, want %d", got, want)
			}
			l.Run()
			if !slices.Equal(log, tt.want) {
				t.Errorf("run order = %q, want %q", log, tt.want)
			}
			if got := l.Pending(); got != 0 {
				t.Errorf("Pending() after Run = %d, want 0", got)
			}
		})
	}
}

func TestEventLoopScheduleFromCallback(t *testing.T) {
	l := NewEventLoop()
	var log []string
	l.AfterFunc(10, func() {
		record(l, &log, "a")()
		// Due now: runs after b, which was already due at 10.
		l.AfterFunc(0, record(l, &log, "a0"))
		l.Post(record(l, &log, "apost"))
		l.AfterFunc(5, record(l, &log, "a5"))
	})
	l.AfterFunc(10, record(l, &log, "b"))
	l.AfterFunc(15, record(l, &log, "c"))
	l.Run()
	want := []string{"a@10", "b@10", "a0@10", "apost@10", "c@15", "a5@15"}
	if !slices.Equal(log, want) {
		t.Errorf("run order = %q, want %q", log, want)
	}
}

func TestEventLoopTimerStop(t *testing.T) {
	l := NewEventLoop()
	ran := map[string]bool{}
	mark := func(s string) func() { return func() { ran[s] = true } }

	before := l.AfterFunc(10, mark("before"))
	after := l.AfterFunc(5, mark("after"))
	twice := l.AfterFunc(20, mark("twice"))
	l.AfterFunc(7, func() {
		if got := before.Stop(); !got {
			t.Errorf("Stop() before firing = %v, want true", got)
		}
	})
	if got := twice.Stop(); !got {
		t.Errorf("first Stop() = %v, want true", got)
	}
	if got := twice.Stop(); got {
		t.Errorf("second Stop() = %v, want false", got)
	}
	if got, want := l.Pending(), 3; got != want {
		t.Errorf("Pending() = %d, want %d", got, want)
	}
	l.Run()
	if got := after.Stop(); got {
		t.Errorf("Stop() after firing = %v, want false", got)
	}
	if want := map[string]bool{"after": true}; fmt.Sprint(ran) != fmt.Sprint(want) {
		t.Errorf("ran = %v, want %v", ran, want)
	}
	if got, want := l.Now(), int64(7); got != want {
		t.Errorf("Now() = %d, want %d (stopped events do not move the clock)", got, want)
	}
}

func TestEventLoopRunUntil(t *testing.T) {
	l := NewEventLoop()
	var log []string
	for _, d := range []time.Duration{10, 20, 30} {
		l.AfterFunc(d, record(l, &log, fmt.Sprint(int64(d))))
	}
	// An event scheduled during RunUntil that is due before the limit runs.
	l.AfterFunc(12, func() { l.AfterFunc(3, record(l, &log, "late")) })

	steps := []struct {
		until   int64
		wantLog []string
		wantNow int64
	}{
		{20, []string{"10@10", "late@15", "20@20"}, 20},
		{25, nil, 25},
		{5, nil, 25}, // time never goes backwards
		{30, []string{"30@30"}, 30},
		{100, nil, 100},
	}
	for _, s := range steps {
		log = nil
		l.RunUntil(s.until)
		if !slices.Equal(log, s.wantLog) {
			t.Errorf("RunUntil(%d) ran %q, want %q", s.until, log, s.wantLog)
		}
		if got := l.Now(); got != s.wantNow {
			t.Errorf("after RunUntil(%d): Now() = %d, want %d", s.until, got, s.wantNow)
		}
	}

	l.AfterFunc(7, record(l, &log, "x"))
	log = nil
	l.RunFor(6)
	if got, want := l.Now(), int64(106); got != want || len(log) != 0 {
		t.Errorf("RunFor(6): Now() = %d, ran %q; want %d, nothing", got, log, want)
	}
	l.RunFor(1)
	if want := []string{"x@107"}; !slices.Equal(log, want) {
		t.Errorf("RunFor(1) ran %q, want %q", log, want)
	}
}

func TestEventLoopStepAndStop(t *testing.T) {
	l := NewEventLoop()
	n := 0
	for i := 1; i <= 5; i++ {
		l.AfterFunc(time.Duration(i), func() {
			n++
			if n == 2 {
				l.Stop()
			}
		})
	}
	l.Run()
	if n != 2 || l.Now() != 2 || l.Pending() != 3 {
		t.Fatalf("after Stop: ran %d, Now() = %d, Pending() = %d; want 2, 2, 3", n, l.Now(), l.Pending())
	}
	if !l.Step() || n != 3 || l.Now() != 3 {
		t.Fatalf("Step(): ran %d, Now() = %d; want 3, 3", n, l.Now())
	}
	l.Stop() // no Run in progress: no effect on the next one
	l.Run()
	if n != 5 || l.Now() != 5 {
		t.Errorf("second Run: ran %d, Now() = %d; want 5, 5", n, l.Now())
	}
	if l.Step() {
		t.Errorf("Step() on empty loop = true, want false")
	}
}

// TestEventLoopPostFromGoroutines posts from other goroutines while Run is
// running. Callbacks still run one at a time on Run's goroutine: count is
// touched only by callbacks, and -race checks that.
func TestEventLoopPostFromGoroutines(t *testing.T) {
	const posters, each = 8, 200
	l := NewEventLoop()
	count := 0
	var tick func()
	tick = func() {
		if count < posters*each {
			l.AfterFunc(time.Microsecond, tick) // keep Run alive until all posts ran
		}
	}
	l.Post(tick)
	var wg sync.WaitGroup
	for range posters {
		wg.Go(func() {
			for range each {
				l.Post(func() { count++ })
			}
		})
	}
	done := make(chan struct{})
	go func() {
		l.Run()
		close(done)
	}()
	wg.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		l.Stop()
		t.Fatal("Run did not return")
	}
	if count != posters*each {
		t.Errorf("count = %d, want %d", count, posters*each)
	}
}

func TestEventLoopNilFuncPanics(t *testing.T) {
	for name, f := range map[string]func(l *EventLoop){
		"AfterFunc": func(l *EventLoop) { l.AfterFunc(1, nil) },
		"Post":      func(l *EventLoop) { l.Post(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s(nil) did not panic", name)
				}
			}()
			f(NewEventLoop())
		})
	}
}

// TestEventLoopHeapRandom checks the heap against a sorted reference, with
// cancellations, using a fixed seed.
func TestEventLoopHeapRandom(t *testing.T) {
	l := NewEventLoop()
	rng := newTestRand(1)
	type ev struct {
		when int64
		seq  int
	}
	var want, got []ev
	var timers []Timer
	var stopped []bool
	for i := range 2000 {
		when := int64(rng.IntN(300))
		timers = append(timers, l.AfterFunc(time.Duration(when), func() { got = append(got, ev{l.Now(), i}) }))
		stopped = append(stopped, false)
		want = append(want, ev{when, i})
	}
	for range 500 {
		i := rng.IntN(len(timers))
		if s := timers[i].Stop(); s == stopped[i] {
			t.Fatalf("Stop() of timer %d = %v, want %v", i, s, !stopped[i])
		}
		stopped[i] = true
	}
	want = slices.DeleteFunc(want, func(e ev) bool { return stopped[e.seq] })
	slices.SortStableFunc(want, func(a, b ev) int { return int(a.when - b.when) })
	l.Run()
	if !slices.Equal(got, want) {
		t.Errorf("run order differs from sorted reference (got %d events, want %d)", len(got), len(want))
	}
}
