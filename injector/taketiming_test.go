package injector

import (
	"testing"
	"time"

	"github.com/netlumina/lumina/sim"
)

// TestTakeTiming: TakeTiming returns what Timing does and starts afresh,
// so a long-running switch reports each run's timing alone.
func TestTakeTiming(t *testing.T) {
	sw := New(sim.NewEventLoop(), Config{})
	sw.mu.Lock()
	sw.timing.record(1000, 1500, 1200) // 500 ns late, stamp raised by 200 ns
	sw.timing.sentMax = 70
	sw.mu.Unlock()
	want := Timing{Frames: 1, LateP50: 500, LateP99: 500, LateMax: 500, ClampMax: 200, SentMax: 70}
	if got := sw.Timing(); got != want {
		t.Fatalf("Timing = %+v, want %+v", got, want)
	}
	if got := sw.TakeTiming(); got != want {
		t.Errorf("TakeTiming = %+v, want %+v", got, want)
	}
	if got := sw.TakeTiming(); got != (Timing{}) {
		t.Errorf("TakeTiming after TakeTiming = %+v, want zero", got)
	}
	sw.mu.Lock()
	sw.timing.record(0, 3000, 0)
	sw.mu.Unlock()
	if got := sw.Timing(); got.Frames != 1 || got.LateMax != 3*time.Microsecond || got.ClampMax != 0 {
		t.Errorf("Timing of the next run = %+v, want 1 frame 3 µs late, no clamp", got)
	}
}
