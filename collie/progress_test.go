package collie

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSlowExperimentProgress: each experiment over a second gets a
// progress line with the time the rest of the budget would take.
func TestSlowExperimentProgress(t *testing.T) {
	m, mon := plantedModel(t)
	var clock time.Time
	now := func() time.Time { clock = clock.Add(1500 * time.Millisecond); return clock } // 1.5 s per experiment
	var b strings.Builder
	if _, err := Search(context.Background(), Options{Engine: m, Monitor: mon, Algo: AlgoRandom, Budget: 5, Seed: 1, Progress: &b, Now: now}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"collie: experiment 1/5 took 1.5s; about 6s left\n",
		"collie: experiment 5/5 took 1.5s; about 0s left\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, b.String())
		}
	}
}
