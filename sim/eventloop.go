package sim

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// EventLoop is a discrete-event scheduler on a virtual clock. Callbacks run
// one at a time, on the goroutine that calls Run, RunUntil, RunFor or Step,
// in order of (due time, scheduling order): two events due at the same
// virtual time run in the order they were scheduled. Virtual time jumps to
// the next event's due time; it never goes backwards and never depends on
// the wall clock, so a run that starts from the same state and schedules
// the same work is repeated exactly.
//
// The zero EventLoop is not usable; create one with NewEventLoop. Its epoch
// (Now() == 0) is the moment it is created.
//
// # Concurrency
//
// Post, AfterFunc, Now, Pending, Stop and Timer.Stop are safe to call from
// any goroutine, including while Run is running on another one: mu guards
// the event queue. Callbacks still run only on the goroutine driving the
// loop, never concurrently with each other. Only one goroutine may drive
// the loop at a time. A Post from another goroutine is stamped with the
// virtual time at the moment it takes the lock; virtual time does not wait
// for other goroutines, so if the queue empties first, Run returns and the
// posted callback waits for the next Run.
//
// # Allocation
//
// Post and the package's own links reuse event structs from a free list and
// do not allocate. AfterFunc returns its event as the Timer, so that event
// cannot be reused; events are carved from slabs of 64, which makes
// AfterFunc cost one allocation per 64 calls. A closure that captures
// variables is the caller's allocation.
type EventLoop struct {
	now      atomic.Int64 // written by the driving goroutine with mu held
	stopping atomic.Bool  // set by Stop, cleared when Run/RunUntil start

	mu   sync.Mutex // guards everything below
	h    []*event   // binary min-heap on (when, seq)
	seq  uint64     // scheduling counter, breaks ties between equal times
	free []*event   // reusable events (never handed out as Timers)
	slab []event    // fresh events, allocated slabSize at a time
}

var _ Loop = (*EventLoop)(nil)

// slabSize is how many events EventLoop allocates at once.
const slabSize = 64

// event is one scheduled callback. An event handed out by AfterFunc is also
// its Timer and is never reused; others go back to the free list.
type event struct {
	when   int64
	seq    uint64
	f      func()
	loop   *EventLoop
	index  int  // position in loop.h, -1 when not scheduled
	pooled bool // return to loop.free after it runs
}

var _ Timer = (*event)(nil)

// NewEventLoop returns an EventLoop whose clock reads 0 and whose queue is
// empty.
func NewEventLoop() *EventLoop {
	return &EventLoop{}
}

// Now returns the virtual time in nanoseconds since the loop's epoch.
func (l *EventLoop) Now() int64 { return l.now.Load() }

// AfterFunc schedules f to run at Now()+d (Now() when d <= 0, after events
// already due then). It panics if f is nil.
func (l *EventLoop) AfterFunc(d time.Duration, f func()) Timer {
	if f == nil {
		panic("sim: AfterFunc with nil func")
	}
	l.mu.Lock()
	e := l.newEventLocked()
	l.scheduleLocked(e, l.dueLocked(d), f)
	l.mu.Unlock()
	return e
}

// Post schedules f to run at the current virtual time, after events already
// due then. It is safe to call from any goroutine and does not allocate
// (beyond f itself). It panics if f is nil.
func (l *EventLoop) Post(f func()) {
	if f == nil {
		panic("sim: Post with nil func")
	}
	l.mu.Lock()
	l.scheduleLocked(l.pooledEventLocked(), l.now.Load(), f)
	l.mu.Unlock()
}

// at schedules f at absolute virtual time when (clamped to Now) with a
// pooled event and no Timer. It is the allocation-free path the links use.
func (l *EventLoop) at(when int64, f func()) {
	l.mu.Lock()
	l.scheduleLocked(l.pooledEventLocked(), max(when, l.now.Load()), f)
	l.mu.Unlock()
}

// dueLocked converts a delay to an absolute time, saturating on overflow.
func (l *EventLoop) dueLocked(d time.Duration) int64 {
	now := l.now.Load()
	if d <= 0 {
		return now
	}
	if int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// Pending returns the number of scheduled events that have not run and
// were not stopped.
func (l *EventLoop) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.h)
}

// Stop makes the Run, RunUntil or RunFor in progress return after the
// callback that is running now (or before the next one, if called from
// another goroutine). It has no effect on a later Run: each Run, RunUntil
// and RunFor clears the request when it starts.
func (l *EventLoop) Stop() { l.stopping.Store(true) }

// Run runs events until none are left or Stop is called.
func (l *EventLoop) Run() {
	l.stopping.Store(false)
	for !l.stopping.Load() && l.step(math.MaxInt64) {
	}
}

// RunUntil runs every event due at or before t (including those scheduled
// meanwhile), then advances the clock to t. If t is before Now, no event
// runs and the clock does not move. If Stop is called, RunUntil returns
// after the current callback and the clock stays at that event's time.
func (l *EventLoop) RunUntil(t int64) {
	l.stopping.Store(false)
	for {
		if l.stopping.Load() {
			return
		}
		if !l.step(t) {
			break
		}
	}
	l.mu.Lock()
	if t > l.now.Load() {
		l.now.Store(t)
	}
	l.mu.Unlock()
}

// RunFor is RunUntil(Now() + d).
func (l *EventLoop) RunFor(d time.Duration) {
	l.mu.Lock()
	t := l.dueLocked(d)
	l.mu.Unlock()
	l.RunUntil(t)
}

// Step runs the next event, advancing the clock to its time, and reports
// whether there was one.
func (l *EventLoop) Step() bool { return l.step(math.MaxInt64) }

// StepUntil runs the next event if it is due at or before t, advancing
// the clock to its time, and reports whether there was one. The clock
// does not move otherwise.
func (l *EventLoop) StepUntil(t int64) bool { return l.step(t) }

// step runs the earliest event if it is due at or before limit.
func (l *EventLoop) step(limit int64) bool {
	l.mu.Lock()
	if len(l.h) == 0 || l.h[0].when > limit {
		l.mu.Unlock()
		return false
	}
	e := l.popLocked()
	if e.when > l.now.Load() {
		l.now.Store(e.when)
	}
	f := e.f
	e.f = nil
	if e.pooled {
		l.free = append(l.free, e)
	}
	l.mu.Unlock()
	f()
	return true
}

// Stop cancels the event if it has not run yet.
func (e *event) Stop() bool {
	l := e.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.index < 0 {
		return false
	}
	l.removeLocked(e.index)
	e.f = nil
	return true
}

func (l *EventLoop) newEventLocked() *event {
	if len(l.slab) == 0 {
		l.slab = make([]event, slabSize)
	}
	e := &l.slab[0]
	l.slab = l.slab[1:]
	e.loop = l
	e.index = -1
	return e
}

func (l *EventLoop) pooledEventLocked() *event {
	if n := len(l.free); n > 0 {
		e := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		return e
	}
	e := l.newEventLocked()
	e.pooled = true
	return e
}

func (l *EventLoop) scheduleLocked(e *event, when int64, f func()) {
	e.when = when
	e.seq = l.seq
	l.seq++
	e.f = f
	e.index = len(l.h)
	l.h = append(l.h, e)
	l.upLocked(e.index)
}

// Heap operations. The heap is hand-written rather than container/heap to
// avoid boxing events in interfaces on every push and pop.

func (l *EventLoop) less(i, j int) bool {
	a, b := l.h[i], l.h[j]
	if a.when != b.when {
		return a.when < b.when
	}
	return a.seq < b.seq
}

func (l *EventLoop) swap(i, j int) {
	l.h[i], l.h[j] = l.h[j], l.h[i]
	l.h[i].index = i
	l.h[j].index = j
}

func (l *EventLoop) upLocked(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !l.less(i, p) {
			return
		}
		l.swap(i, p)
		i = p
	}
}

func (l *EventLoop) downLocked(i int) bool {
	start := i
	n := len(l.h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && l.less(r, c) {
			c = r
		}
		if !l.less(c, i) {
			break
		}
		l.swap(i, c)
		i = c
	}
	return i > start
}

func (l *EventLoop) popLocked() *event {
	return l.removeLocked(0)
}

func (l *EventLoop) removeLocked(i int) *event {
	n := len(l.h) - 1
	e := l.h[i]
	if i != n {
		l.swap(i, n)
	}
	l.h[n] = nil
	l.h = l.h[:n]
	if i != n {
		if !l.downLocked(i) {
			l.upLocked(i)
		}
	}
	e.index = -1
	return e
}
