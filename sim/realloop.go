package sim

import (
	"bytes"
	"container/heap"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RealLoop runs callbacks on one goroutine, in the order they were posted,
// and tells wall-clock time: Now is the time since NewRealLoop, read from
// the monotonic clock. Components written against Loop run unchanged on a
// RealLoop and need no locks, because their callbacks never overlap.
//
// Create one with NewRealLoop, call Start, and Close when done. Work posted
// before Start waits for it.
//
// # Concurrency
//
// All methods are safe to call from any goroutine. mu guards the queue and
// the lifecycle flags. Callbacks must not block: while one runs, nothing
// else on the loop (timers included) can.
//
// A callback that panics crashes the program, as on any goroutine.
//
// # Slowdown
//
// A loop made by NewRealLoopSlow(k) runs its clock k times slower than the
// wall clock: Now advances one ns per k ns of wall time and a timer of d
// fires after k·d of wall time. Software components on it (the RNIC, the
// switch) then model a link k times faster than the frames really move, so
// a 100 Gb/s model stays within what veth and AF_PACKET carry, and any
// wall-clock lateness (scheduling, the kernel) shrinks k-fold on the
// loop's clock. Every loop of one testbed must use the same k.
type RealLoop struct {
	start time.Time
	slow  int64         // wall ns per loop ns, ≥ 1
	done  chan struct{} // closed when the loop goroutine exits (or by Close if never started)

	closedFlag atomic.Bool   // mirrors closed, read without mu between callbacks
	loopGID    atomic.Uint64 // goroutine ID of the loop goroutine

	mu      sync.Mutex
	cond    sync.Cond // signalled when q grows or closed is set; L is &mu
	q       []func()
	spare   []func()
	started bool
	closed  bool

	// Pending timers, earliest deadline first (ties: the order AfterFunc
	// was called), and the one waker that fires for the earliest. Timers
	// post their callbacks in deadline order: two AfterFuncs 1 µs apart
	// run in that order, which separate time.Timers do not promise.
	timers   timerHeap
	timerSeq uint64
	wake     waker
	wakeAt   int64              // deadline wake is set for; 0: none
	mkWaker  func(func()) waker // newWaker; benchmarks compare others

	// lateMax is the largest delay, in ns, between a timer's deadline and
	// its callback starting (TakeTimerLateness).
	lateMax atomic.Int64
}

var _ Loop = (*RealLoop)(nil)

// NewRealLoop returns a RealLoop whose epoch is now. It does not start the
// loop goroutine; call Start.
func NewRealLoop() *RealLoop { return NewRealLoopSlow(1) }

// NewRealLoopSlow returns a RealLoop whose clock runs k times slower than
// the wall clock (k < 1 counts as 1), see Slowdown.
func NewRealLoopSlow(k int64) *RealLoop {
	l := &RealLoop{start: time.Now(), slow: max(k, 1), done: make(chan struct{})}
	l.cond.L = &l.mu
	return l
}

// Slowdown returns k: how many ns of wall time make one ns of the loop's
// clock (1: real time).
func (l *RealLoop) Slowdown() int64 { return l.slow }

// Start starts the loop goroutine. Calling it again, or after Close, does
// nothing.
func (l *RealLoop) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.closed {
		return
	}
	l.started = true
	go l.run()
}

// Close stops the loop and drops work that has not started. Posts, timers
// and AfterFuncs after Close do nothing. Called from any goroutine other
// than the loop's, Close returns once the loop goroutine has exited, so no
// callback is running or will run. Called from a callback, it returns at
// once and the loop exits when that callback returns. Close is idempotent.
func (l *RealLoop) Close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.closedFlag.Store(true)
		clear(l.q)
		l.q = nil
		clear(l.timers)
		l.timers = nil
		if l.wake != nil {
			l.wake.Stop()
		}
		if !l.started {
			close(l.done)
		}
		l.cond.Broadcast()
	}
	started := l.started
	l.mu.Unlock()
	if started && curGoroutineID() != l.loopGID.Load() {
		<-l.done
	}
}

// Done returns a channel that is closed when the loop has stopped for good:
// its goroutine exited after Close, or Close was called before Start.
func (l *RealLoop) Done() <-chan struct{} { return l.done }

// Now returns the wall-clock time since NewRealLoop in nanoseconds,
// divided by the slowdown.
func (l *RealLoop) Now() int64 { return int64(time.Since(l.start)) / l.slow }

// Post queues f to run on the loop after the work already queued. After
// Close it does nothing. It panics if f is nil.
func (l *RealLoop) Post(f func()) {
	if f == nil {
		panic("sim: Post with nil func")
	}
	l.mu.Lock()
	if !l.closed {
		l.q = append(l.q, f)
		if len(l.q) == 1 {
			l.cond.Signal()
		}
	}
	l.mu.Unlock()
}

// AfterFunc runs f on the loop after d of the loop's clock (d × the
// slowdown of wall-clock time); a d <= 0 posts
// f immediately. Timers post their callbacks in the order of their
// deadlines (ties: in the order AfterFunc was called), however close the
// deadlines are. Stopping the Timer after it fired but before f ran still
// prevents f from running, and Stop then returns true.
func (l *RealLoop) AfterFunc(d time.Duration, f func()) Timer {
	if f == nil {
		panic("sim: AfterFunc with nil func")
	}
	rt := &realTimer{l: l, f: f, index: -1}
	if l.closedFlag.Load() {
		rt.state.Store(timerStopped)
		return rt
	}
	if d <= 0 {
		l.Post(rt.run)
		return rt
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		rt.state.Store(timerStopped)
		return rt
	}
	rt.deadline = l.Now() + int64(d)
	rt.seq = l.timerSeq
	l.timerSeq++
	heap.Push(&l.timers, rt)
	l.armLocked()
	return rt
}

// armLocked sets the wake-up timer for the earliest pending deadline.
func (l *RealLoop) armLocked() {
	if len(l.timers) == 0 {
		return
	}
	next := l.timers[0].deadline
	if l.wakeAt != 0 && l.wakeAt <= next {
		return
	}
	l.wakeAt = next
	d := time.Duration((next - l.Now()) * l.slow)
	if l.wake == nil {
		if l.mkWaker == nil {
			l.mkWaker = newWaker
		}
		l.wake = l.mkWaker(l.fire)
	}
	l.wake.Reset(d)
}

// fire posts the callbacks of every timer that is due, in deadline order,
// and re-arms for the next one.
func (l *RealLoop) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakeAt = 0
	if l.closed {
		return
	}
	now := l.Now()
	posted := false
	for len(l.timers) > 0 && l.timers[0].deadline <= now {
		rt := heap.Pop(&l.timers).(*realTimer)
		l.q = append(l.q, rt.run)
		posted = true
	}
	if posted {
		l.cond.Signal()
	}
	l.armLocked()
}

// timerHeap orders pending timers by deadline, then by seq.
type timerHeap []*realTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	rt := x.(*realTimer)
	rt.index = len(*h)
	*h = append(*h, rt)
}
func (h *timerHeap) Pop() any {
	old := *h
	rt := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	rt.index = -1
	return rt
}

func (l *RealLoop) run() {
	defer close(l.done)
	l.loopGID.Store(curGoroutineID())
	for {
		l.mu.Lock()
		for len(l.q) == 0 && !l.closed {
			l.cond.Wait()
		}
		if l.closed {
			l.mu.Unlock()
			return
		}
		batch := l.q
		l.q, l.spare = l.spare[:0], nil
		l.mu.Unlock()

		for i, f := range batch {
			if l.closedFlag.Load() {
				break
			}
			batch[i] = nil
			f()
		}
		clear(batch)

		l.mu.Lock()
		if l.spare == nil && !l.closed {
			l.spare = batch[:0]
		}
		l.mu.Unlock()
	}
}

// Timer states of realTimer.
const (
	timerPending int32 = iota
	timerFired
	timerStopped
)

// realTimer is RealLoop's Timer. state moves once, from timerPending to
// timerFired (on the loop, just before f runs) or to timerStopped (in Stop);
// whichever compare-and-swap wins decides.
type realTimer struct {
	l     *RealLoop
	f     func()
	state atomic.Int32
	// In the loop's timer heap (under l.mu): deadline (loop ns), the
	// order of creation, the heap position (-1: not in the heap).
	deadline int64
	seq      uint64
	index    int
}

var _ Timer = (*realTimer)(nil)

func (rt *realTimer) run() {
	if rt.state.CompareAndSwap(timerPending, timerFired) {
		if rt.deadline > 0 {
			l := rt.l
			late := l.Now() - rt.deadline
			for old := l.lateMax.Load(); late > old && !l.lateMax.CompareAndSwap(old, late); old = l.lateMax.Load() {
			}
		}
		rt.f()
	}
}

// TakeTimerLateness returns the largest delay, on the loop's clock, between
// a timer's deadline and its callback starting since the last call (or since NewRealLoop),
// and starts over. The loop posts a due timer at once, so the delay is
// how late the Go runtime woke it and how long the loop was busy before:
// on a loaded machine, tens of milliseconds. A component that times
// itself with the loop (the software RNIC's retransmission timer) is late
// by as much; the analyzers allow for it (model.Params.TimerLatenessNs).
func (l *RealLoop) TakeTimerLateness() time.Duration {
	return time.Duration(l.lateMax.Swap(0))
}

// Stop prevents f from running if it has not started.
func (rt *realTimer) Stop() bool {
	if !rt.state.CompareAndSwap(timerPending, timerStopped) {
		return false
	}
	l := rt.l
	l.mu.Lock()
	if rt.index >= 0 && rt.index < len(l.timers) && l.timers[rt.index] == rt {
		heap.Remove(&l.timers, rt.index)
	}
	l.mu.Unlock()
	return true
}

// curGoroutineID returns the ID of the calling goroutine, parsed from the
// first line of its stack trace ("goroutine 123 [running]:"). It is slow
// (about a microsecond) and used only by Close, to tell whether it runs on
// the loop goroutine and so must not wait for it.
func curGoroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// waker calls its function once after the duration of its last Reset.
type waker interface {
	// Reset replaces any pending wake with one after d (d <= 0: at once).
	Reset(d time.Duration)
	// Stop cancels the pending wake for good.
	Stop()
}

// timerWaker is a waker on a runtime timer. When the process is idle the Go
// runtime sleeps in its network poller with millisecond resolution, so a
// wake due in less than a millisecond comes about a millisecond late; on
// Linux the RealLoop uses a timerfd instead (waker_linux.go).
type timerWaker struct {
	fire func()
	t    *time.Timer
}

func (w *timerWaker) Reset(d time.Duration) {
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
		return
	}
	w.t.Reset(d)
}

func (w *timerWaker) Stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// WallTime returns how long d on a loop slowdown times slower than the wall
// clock takes on the wall clock (NewRealLoopSlow), saturating at about
// 146 years instead of overflowing.
func WallTime(d time.Duration, slowdown int64) time.Duration {
	const most = time.Duration(1 << 62)
	if slowdown <= 1 {
		return d
	}
	if d > most/time.Duration(slowdown) {
		return most
	}
	return d * time.Duration(slowdown)
}
