package agent

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/sim"
)

// Flow is one flow's traffic as Run hands it to its Env (Env.Traffic),
// once the flow's requester is connected and ready to start.
type Flow struct {
	// Index is the flow's index in the run (RunRequest.flow).
	Index int
	// Delay is the flow's start delay on the loop's clock after the run's
	// traffic starts (RunRequest.start_delay_ns).
	Delay time.Duration
	// Limit bounds the flow's traffic on the loop's clock, counted from
	// its start.
	Limit time.Duration
	// Start posts the flow's first work requests. The Env calls it once,
	// on the loop (generator.Requester.StartOnLoop).
	Start func()
	// Done is closed when the flow's requester is done.
	Done <-chan struct{}
}

// runStep bounds one slice of a virtual clock's run between checks of the
// callers' contexts.
const runStep = int64(100 * time.Millisecond)

// SimFlows sequences the flows of a run on one virtual clock shared by
// every agent (the sim testbed), so that the trace is the same for the
// same seed whatever order the Run calls and their goroutines come in:
//
//   - Set-up: flows set up one at a time in flow order (SetUp waits for
//     the flows before it to call Traffic or Abandon), so every RNIC
//     creates its QPs, and draws their QPNs and PSNs, in flow order.
//   - Start: the clock stands still until every flow of the run has called
//     Traffic or Abandon; then the flows start in flow order at the same
//     instant, each after its Delay, and one goroutine drives the clock
//     until nothing is left to do or every flow's limit has passed.
//   - End: every Traffic call returns when the clock stops, so each
//     flow's results (read afterwards) are those of the same instant.
//
// A flow's set-up spans its handshake and its report to the intake: the
// intake must answer flow i without waiting for a later flow's report
// (that flow sets up only after flow i), and what it does meanwhile, such
// as arming pauses, happens in flow order too.
//
// A run has Expect(n) flows, numbered 0..n-1; after it ends the next run
// may begin. A flow that never comes holds the others until their
// contexts end: the caller cancels them when one Run fails.
type SimFlows struct {
	loop *sim.EventLoop
	exec generator.Exec // serializes with every other use of the loop

	mu      sync.Mutex
	linger  time.Duration // how long the clock runs on after the last flow ended
	run     *simRun       // the current run
	changed chan struct{} // closed and replaced when a run's turn or state changes
}

// simRun is one run of flows of a SimFlows.
type simRun struct {
	n       int           // flows in the run
	state   []flowState   // per flow
	turn    int           // the flow whose set-up may run: the ones before have set up
	started bool          // every flow is ready or abandoned: the clock runs
	ran     chan struct{} // closed when the run's clock has stopped
}

type flowState struct {
	seen      bool // SetUp was called
	abandoned bool
	f         *Flow
	ctx       context.Context
	end       int64 // the flow's deadline on the clock
	checked   bool  // the clock reached end
	inTime    bool  // Done was closed when the clock reached end
}

// NewSimFlows returns the flow sequencer of a virtual clock whose every
// use goes through exec (which runs a function holding the clock's lock).
// A run has one flow until Expect says otherwise.
func NewSimFlows(loop *sim.EventLoop, exec generator.Exec) *SimFlows {
	s := &SimFlows{loop: loop, exec: exec, changed: make(chan struct{})}
	s.run = newSimRun(1)
	return s
}

func newSimRun(n int) *simRun {
	return &simRun{n: n, state: make([]flowState, n), ran: make(chan struct{})}
}

// Expect says how many flows the next run has (at least 1). Call it before
// the run's first SetUp.
func (s *SimFlows) Expect(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = newSimRun(max(n, 1))
}

// Linger makes the clock of the next runs go on for d after the last
// flow's requester is done (or its limit passed), whatever is pending:
// the switches keep running, their PFC refreshes and watchdogs firing,
// for a test's deadlock window (deadlock-ms). 0 (the default): the clock
// stops when nothing is left to do or every flow's limit has passed, as
// it always did.
func (s *SimFlows) Linger(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.linger = max(d, 0)
}

// notifyLocked wakes the waiters of SetUp and Traffic.
func (s *SimFlows) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// advanceLocked moves run's set-up turn past the flows that have set up
// or were abandoned, and starts the run when every flow has.
func (s *SimFlows) advanceLocked(run *simRun) {
	for run.turn < run.n && (run.state[run.turn].f != nil || run.state[run.turn].abandoned) {
		run.turn++
	}
	s.notifyLocked()
	if run.turn == run.n && !run.started {
		run.started = true
		go s.drive(run)
	}
}

// SetUp implements Env.SetUp: it waits for flow index's turn.
func (s *SimFlows) SetUp(ctx context.Context, index int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.run
	if index < 0 || index >= run.n {
		return fmt.Errorf("flow %d of a run of %d flows", index, run.n)
	}
	if run.state[index].seen || run.started {
		return fmt.Errorf("flow %d is already running", index)
	}
	run.state[index].seen = true
	if err := s.waitLocked(ctx, func() bool { return run.turn == index }); err != nil {
		run.state[index].abandoned = true
		s.advanceLocked(run)
		return err
	}
	return nil
}

// waitLocked waits, with s.mu held (and released while it waits), until
// ready() or ctx ends; it returns ctx's error if ready() is still false
// then.
func (s *SimFlows) waitLocked(ctx context.Context, ready func() bool) error {
	for !ready() {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			if !ready() {
				return ctx.Err()
			}
		}
	}
	return nil
}

// Abandon implements Env.Abandon.
func (s *SimFlows) Abandon(index int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.run
	if index < 0 || index >= run.n || !run.state[index].seen || run.state[index].f != nil || run.started {
		return
	}
	run.state[index].abandoned = true
	s.advanceLocked(run)
}

// Traffic implements Env.Traffic on the virtual clock (see SimFlows).
func (s *SimFlows) Traffic(ctx context.Context, f Flow) string {
	s.mu.Lock()
	run, i := s.run, f.Index
	if i < 0 || i >= run.n || !run.state[i].seen || run.state[i].f != nil || run.state[i].abandoned || run.started {
		s.mu.Unlock()
		return fmt.Sprintf("flow %d: traffic without its set-up", i)
	}
	st := &run.state[i]
	st.f, st.ctx = &f, ctx
	s.advanceLocked(run)
	// Until the run starts, a flow whose context ends leaves it; once it
	// has started, the driver watches the contexts.
	if err := s.waitLocked(ctx, func() bool { return run.started }); err != nil {
		st.f, st.abandoned = nil, true
		s.advanceLocked(run)
		s.mu.Unlock()
		return "interrupted: " + err.Error()
	}
	s.mu.Unlock()
	<-run.ran
	select {
	case <-f.Done:
		if !st.checked || st.inTime {
			return ""
		}
	default:
	}
	if !st.checked { // the clock stopped before the flow's deadline
		if err := ctx.Err(); err != nil {
			return "interrupted: " + err.Error()
		}
		return "interrupted: another flow's request ended"
	}
	return fmt.Sprintf("traffic did not complete within %v of virtual time", f.Limit)
}

// drive starts run's flows in flow order and runs the clock until nothing
// is left to do or the last flow's limit has passed, noting at each
// flow's deadline whether it was done; then it closes run.ran and makes
// the sequencer ready for the next run of as many flows.
func (s *SimFlows) drive(run *simRun) {
	s.mu.Lock()
	var flows []*flowState
	for i := range run.state {
		if run.state[i].f != nil {
			flows = append(flows, &run.state[i])
		}
	}
	linger := s.linger
	s.mu.Unlock()
	l := s.loop
	s.exec(func() {
		t0 := l.Now()
		for _, st := range flows { // flow order
			st.end = addSat(t0, max(int64(st.f.Delay), 0), max(int64(st.f.Limit), 0))
			if st.f.Delay <= 0 {
				st.f.Start()
			} else {
				l.AfterFunc(st.f.Delay, st.f.Start)
			}
		}
		byEnd := slices.Clone(flows)
		slices.SortStableFunc(byEnd, func(a, b *flowState) int { return cmp.Compare(a.end, b.end) })
		if linger > 0 {
			if !runDone(l, byEnd, flows) {
				return
			}
			// The window counts from the instant the last flow ended.
			for end := addSat(l.Now(), int64(linger), 0); l.Now() < end; {
				if interrupted(flows) {
					return
				}
				l.RunUntil(min(l.Now()+runStep, end))
			}
			return
		}
		for _, st := range byEnd {
			for l.Pending() > 0 && l.Now() < st.end {
				if interrupted(flows) {
					return
				}
				l.RunUntil(min(l.Now()+runStep, st.end))
			}
			st.checked = true
			select {
			case <-st.f.Done:
				st.inTime = true
			default:
			}
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	close(run.ran)
	if s.run == run {
		s.run = newSimRun(run.n)
	}
}

// runDone runs the clock event by event until every flow has ended: its
// requester is done (checked at the event that made it so) or its limit
// has passed. byEnd are the flows by deadline. It notes each flow's
// verdict as drive does and returns false if a flow's context ended
// first.
func runDone(l *sim.EventLoop, byEnd, flows []*flowState) bool {
	isDone := func(st *flowState) bool {
		select {
		case <-st.f.Done:
			return true
		default:
			return false
		}
	}
	next := 0 // flows before it (in byEnd) have ended
	for n := 0; ; n++ {
		for next < len(byEnd) {
			st := byEnd[next]
			if done := isDone(st); done || l.Now() >= st.end {
				st.checked, st.inTime = true, done
				next++
				continue
			}
			break
		}
		if next == len(byEnd) {
			return true
		}
		if n%4096 == 0 && interrupted(flows) {
			return false
		}
		if !l.StepUntil(byEnd[next].end) {
			// Nothing due before its deadline: the clock jumps there.
			l.RunUntil(byEnd[next].end)
		}
	}
}

// interrupted reports whether the context of any of flows has ended.
func interrupted(flows []*flowState) bool {
	for _, st := range flows {
		if st.ctx.Err() != nil {
			return true
		}
	}
	return false
}

// addSat returns t + a + b (a, b ≥ 0), saturating at the largest int64.
func addSat(t, a, b int64) int64 {
	if a > math.MaxInt64-t {
		return math.MaxInt64
	}
	t += a
	if b > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + b
}
