package tests

import (
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
)

// TestNetnsTimeoutsNeverJitter runs issue #26's test 20 times on the netns
// testbed (two timeouts per run whose intervals sit at the IB lower bound
// T_tr) with both CPUs kept busy by this process, and requires that no
// timeout check fails: switch timestamps come from the kernel's receive
// time, the RNIC's timer counts from when the kernel took the frame, a
// margin within the measured timestamp uncertainty is inconclusive, and
// so is an interval above the upper bound by no more than the RNIC's
// measured timer lateness (a starved host fires timers late).
func TestNetnsTimeoutsNeverJitter(t *testing.T) {
	testutil.RequireNetns(t)
	var stop atomic.Bool
	defer stop.Store(true)
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	out := t.TempDir()
	r := lumina(t, "run", "-q", "-o", out, "--testbed", "netns", "testdata/jitter.yaml")
	stop.Store(true)
	if r.code != 0 {
		t.Errorf("lumina run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var lates, clamps, timers []int64
	pass, inconclusive := 0, 0
	for rep := range 20 {
		dir := filepath.Join(out, "jitter", strconv.Itoa(rep))
		rp := readReport(t, dir)
		c := rp.Checks["timeout"]
		switch {
		case !rp.Valid:
			t.Errorf("repeat %d invalid: %s", rep, rp.Error)
		case c.Verdict == "pass":
			pass++
		case c.Verdict == "inconclusive":
			inconclusive++
			t.Logf("repeat %d: timeout inconclusive: %s", rep, c.Detail)
		default:
			t.Errorf("repeat %d: timeout %s: %s", rep, c.Verdict, c.Detail)
		}
		// The planned drops make at least one timeout episode; a loaded
		// machine may add others (a late ACK), which are checked the same.
		if a := rp.Analysis; a != nil && len(a.Checks.Timeout.Timeouts) == 0 {
			t.Errorf("repeat %d: no timeout episode, want the planned one", rep)
		}
		if tm := rp.Timing; tm == nil || tm.Frames == 0 || tm.UncertaintyNs != tm.ClampMaxNs || tm.NICTimerLateNs <= 0 {
			t.Errorf("repeat %d: timing %+v, want the switch's measurements, uncertainty = clamp and the RNIC's timer lateness", rep, tm)
		} else {
			lates, clamps, timers = append(lates, tm.LateP99Ns), append(clamps, tm.ClampMaxNs), append(timers, tm.NICTimerLateNs)
		}
	}
	t.Logf("20 netns runs under load: timeout pass %d, inconclusive %d; switch pipeline late p99 per run %v ns; uncertainty per run %v ns; RNIC timers late (max) per run %v ns",
		pass, inconclusive, lates, clamps, timers)
}
