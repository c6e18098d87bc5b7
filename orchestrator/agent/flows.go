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
// A run has Expect(n) flows, numbered 0..n-1; after it ends the next run
// may begin.
type SimFlows struct {
	loop *sim.EventLoop
	exec generator.Exec // serializes with every other use of the loop

	mu      sync.Mutex
	n       int           // flows in the run
	state   []flowState   // per flow
	turn    int           // the flow whose set-up may run: the ones before have set up
	changed chan struct{} // closed and replaced when turn or state changes
	ran     chan struct{} // closed when the run's clock has stopped
	started bool
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
	s := &SimFlows{loop: loop, exec: exec}
	s.reset(1)
	return s
}

func (s *SimFlows) reset(n int) {
	s.n, s.state, s.turn, s.started = n, make([]flowState, n), 0, false
	s.changed, s.ran = make(chan struct{}), make(chan struct{})
}

// Expect says how many flows the next run has (at least 1). Call it before
// the run's first SetUp.
func (s *SimFlows) Expect(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset(max(n, 1))
}

// notifyLocked wakes the waiters of SetUp and Traffic.
func (s *SimFlows) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// advanceLocked moves the set-up turn past the flows that have set up or
// were abandoned, and starts the run when every flow has.
func (s *SimFlows) advanceLocked() {
	for s.turn < s.n && (s.state[s.turn].f != nil || s.state[s.turn].abandoned) {
		s.turn++
	}
	s.notifyLocked()
	if s.turn == s.n && !s.started {
		s.started = true
		go s.drive(s.ran)
	}
}

// SetUp implements Env.SetUp: it waits for flow index's turn.
func (s *SimFlows) SetUp(ctx context.Context, index int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index < 0 || index >= s.n {
		return fmt.Errorf("flow %d of a run of %d flows", index, s.n)
	}
	if s.state[index].seen || s.started {
		return fmt.Errorf("flow %d is already running", index)
	}
	s.state[index].seen = true
	for s.turn != index {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			if s.turn != index {
				s.state[index].abandoned = true
				s.advanceLocked()
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
	if index < 0 || index >= s.n || s.state[index].f != nil || s.started {
		return
	}
	s.state[index].abandoned = true
	s.advanceLocked()
}

// Traffic implements Env.Traffic on the virtual clock (see SimFlows).
func (s *SimFlows) Traffic(ctx context.Context, f Flow) string {
	s.mu.Lock()
	i := f.Index
	if i < 0 || i >= s.n || !s.state[i].seen || s.state[i].f != nil || s.state[i].abandoned || s.started {
		s.mu.Unlock()
		return fmt.Sprintf("flow %d: traffic without its set-up", i)
	}
	s.state[i].f, s.state[i].ctx = &f, ctx
	s.advanceLocked()
	ran := s.ran
	// Until the run starts, a flow whose context ends leaves it; once it
	// has started, the driver watches the contexts.
	for !s.started {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			if !s.started {
				s.state[i].f, s.state[i].abandoned = nil, true
				s.advanceLocked()
				s.mu.Unlock()
				return "interrupted: " + ctx.Err().Error()
			}
		}
	}
	st := &s.state[i]
	s.mu.Unlock()
	<-ran
	select {
	case <-f.Done:
		if !st.checked || st.inTime {
			return ""
		}
	default:
	}
	if err := ctx.Err(); err != nil && !st.checked {
		return "interrupted: " + err.Error()
	}
	return fmt.Sprintf("traffic did not complete within %v of virtual time", f.Limit)
}

// drive starts the run's flows in flow order and runs the clock until
// nothing is left to do or the last flow's limit has passed, noting at
// each flow's deadline whether it was done; then it closes ran and makes
// the sequencer ready for the next run.
func (s *SimFlows) drive(ran chan struct{}) {
	s.mu.Lock()
	var flows []*flowState
	for i := range s.state {
		if s.state[i].f != nil {
			flows = append(flows, &s.state[i])
		}
	}
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
	close(ran)
	s.reset(s.n)
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
