package trace_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/netlumina/lumina/trace"
)

// Issue #38, point 13: a cancelled context stops a merge of 100,000
// packets within MergeCheckEvery packets of the cancellation (counted, not
// timed), with the context's error; a context cancelled before the merge
// emits nothing.
func TestMergeCancel(t *testing.T) {
	const n = 100_000
	seqs := run(trace.SeqSpace40, 1, n)
	files := filesOf(t, seqs[:n/2], seqs[n/2:])
	for _, cancelAt := range []int{0, 1, 5000, 77777} {
		t.Run(fmt.Sprint(cancelAt), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if cancelAt == 0 {
				cancel()
			}
			emitted := 0
			stats, err := trace.MergeOptions{Context: ctx}.Merge(func(int, trace.Packet) error {
				emitted++
				if emitted == cancelAt {
					cancel()
				}
				return nil
			}, sources(t, files)...)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Merge after cancel at %d: error %v, want context.Canceled", cancelAt, err)
			}
			if emitted != stats.Packets || emitted < cancelAt || emitted > cancelAt+trace.MergeCheckEvery {
				t.Errorf("Merge cancelled at packet %d emitted %d (stats %d), want %d..%d", cancelAt, emitted, stats.Packets, cancelAt, cancelAt+trace.MergeCheckEvery)
			}
		})
	}
	// Without cancellation, every packet.
	stats, err := trace.MergeOptions{Context: context.Background()}.Merge(func(int, trace.Packet) error { return nil }, sources(t, files)...)
	if err != nil || stats.Packets != n {
		t.Errorf("Merge = %d packets, %v, want %d, nil", stats.Packets, err, n)
	}
}
