package injector

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistBuckets(t *testing.T) {
	// Every bucket's range starts right after the previous one's and the
	// buckets of sampled values hold them.
	if histUpper(histBuckets-1) != math.MaxUint64 {
		t.Errorf("histUpper(last) = %d, want MaxUint64", histUpper(histBuckets-1))
	}
	for i := 1; i < histBuckets; i++ {
		lo := histUpper(i-1) + 1
		if histBucket(lo) != i || histBucket(histUpper(i)) != i {
			t.Fatalf("bucket %d = [%d, %d]: histBucket gives %d, %d", i, lo, histUpper(i), histBucket(lo), histBucket(histUpper(i)))
		}
		if w := histUpper(i) - lo; lo >= histSub && w > lo/histSub {
			t.Errorf("bucket %d = [%d, %d] is wider than 1/%d of its values", i, lo, histUpper(i), histSub)
		}
	}
}

// TestHistQuantileReference compares durationHist's percentiles with the
// exact nearest-rank percentiles of the sorted values.
func TestHistQuantileReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	for _, n := range []int{1, 2, 3, 6, 100, 1000, 12345} {
		var h durationHist
		vs := make([]uint64, n)
		for i := range vs {
			switch i % 3 {
			case 0:
				vs[i] = rng.Uint64N(20) // exact buckets
			case 1:
				vs[i] = rng.Uint64N(10_000_000) // up to 10 ms
			default:
				vs[i] = 1 << rng.UintN(63) // bucket edges
			}
			h.add(vs[i])
		}
		slices.Sort(vs)
		for _, p := range []int{0, 1, 50, 90, 99, 100} {
			rank := max(1, (n*p+99)/100)
			exact := vs[rank-1]
			got := h.quantile(p)
			if got < exact || got-exact > exact/histSub || got > vs[n-1] {
				t.Errorf("n=%d: quantile(%d) = %d, want in [%d, %d + 1/%d] and <= max %d", n, p, got, exact, exact, histSub, vs[n-1])
			}
		}
		if h.max != vs[n-1] || h.n != uint64(n) {
			t.Errorf("n=%d: max, n = %d, %d; want %d, %d", n, h.max, h.n, vs[n-1], n)
		}
	}
	var empty durationHist
	if q := empty.quantile(50); q != 0 {
		t.Errorf("empty quantile(50) = %d, want 0", q)
	}
}

func TestAllocsTimingRecord(t *testing.T) {
	var ts timingStats
	got := testing.AllocsPerRun(1000, func() { ts.record(1000, 5000, 2000) })
	if got != 0 {
		t.Errorf("timingStats.record allocs = %v, want 0", got)
	}
}
