package suite

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
)

// Exact Mann-Whitney distributions are enumerated (by dynamic programming
// over the rank sums) up to these sizes; beyond them the normal
// approximation with tie and continuity corrections is used.
const (
	exactMaxNoTies = 60 // n1+n2 without ties (distribution cached per (n1, n2))
	exactMaxTies   = 20 // n1+n2 with ties (depends on the tie pattern: not cached)
)

// MWResult is the outcome of a two-sided Mann-Whitney U test of x against
// y.
type MWResult struct {
	// U is the statistic of the first sample: the number of pairs (x_i, y_j)
	// with x_i > y_j, ties counting one half.
	U float64 `json:"u"`
	// P is the two-sided p-value.
	P float64 `json:"p"`
	// MinP is the smallest p-value these sample sizes (and ties) can give:
	// when it exceeds the significance level the test cannot reject,
	// whatever the data.
	MinP float64 `json:"min_p"`
	// Exact is true when P comes from the exact permutation distribution,
	// false for the normal approximation.
	Exact bool `json:"exact"`
}

// MannWhitney runs the two-sided Mann-Whitney U (Wilcoxon rank-sum) test:
// exact for small samples (with ties: exact conditional on the tie
// pattern), otherwise the normal approximation with tie correction and a
// continuity correction. Empty samples give P = MinP = 1. NaNs must not be
// passed.
func MannWhitney(x, y []float64) MWResult {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return MWResult{P: 1, MinP: 1}
	}
	n := n1 + n2
	type obs struct {
		v  float64
		in bool // from x
	}
	all := make([]obs, 0, n)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Doubled midranks keep everything in integers: a tie group occupying
	// ranks a..b (1-based) gets a+b each.
	ranks2 := make([]int, n)
	var s2 int // doubled rank sum of x
	var tieTerm float64
	ties := false
	for i := 0; i < n; {
		j := i
		for j+1 < n && all[j+1].v == all[i].v {
			j++
		}
		r := (i + 1) + (j + 1)
		for k := i; k <= j; k++ {
			ranks2[k] = r
			if all[k].in {
				s2 += r
			}
		}
		if t := float64(j - i + 1); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j + 1
	}
	u := float64(s2)/2 - float64(n1*(n1+1))/2
	res := MWResult{U: u}
	if (!ties && n <= exactMaxNoTies) || (ties && n <= exactMaxTies) {
		var d *rankSumDist
		if ties {
			d = newRankSumDist(ranks2, n1)
		} else {
			d = cachedDist(n1, n2)
		}
		res.P, res.MinP, res.Exact = d.pValue(s2), d.minP(), true
		return res
	}
	mu := float64(n1) * float64(n2) / 2
	nf := float64(n)
	sigma2 := float64(n1) * float64(n2) / 12 * ((nf + 1) - tieTerm/(nf*(nf-1)))
	if sigma2 <= 0 {
		return MWResult{U: u, P: 1, MinP: 1}
	}
	sigma := math.Sqrt(sigma2)
	z := max(0, math.Abs(u-mu)-0.5) / sigma
	res.P = math.Erfc(z / math.Sqrt2)
	res.MinP = math.Erfc(max(0, mu-0.5) / sigma / math.Sqrt2)
	return res
}

// rankSumDist is the permutation distribution of the doubled rank sum of
// a sample of size k drawn from the doubled ranks of all observations.
type rankSumDist struct {
	count []float64 // count[s] arrangements with doubled rank sum s
	total float64
	mean2 int // 2 × E[doubled rank sum], to stay in integers
}

func newRankSumDist(ranks2 []int, k int) *rankSumDist {
	maxS := 0
	sorted := slices.Clone(ranks2)
	slices.Sort(sorted)
	for _, r := range sorted[len(sorted)-k:] {
		maxS += r
	}
	// ways[j][s]: subsets of size j of the ranks seen so far with sum s.
	ways := make([][]float64, k+1)
	for j := range ways {
		ways[j] = make([]float64, maxS+1)
	}
	ways[0][0] = 1
	for i, r := range ranks2 {
		for j := min(i+1, k); j >= 1; j-- {
			prev, cur := ways[j-1], ways[j]
			for s := maxS; s >= r; s-- {
				if prev[s-r] != 0 {
					cur[s] += prev[s-r]
				}
			}
		}
	}
	// The doubled ranks sum to N(N+1) whatever the ties, so E[S] = k(N+1).
	d := &rankSumDist{count: ways[k], mean2: 2 * k * (len(ranks2) + 1)}
	for _, c := range d.count {
		d.total += c
	}
	return d
}

// pValue is P(|S − E| ≥ |s − E|).
func (d *rankSumDist) pValue(s int) float64 { return d.tail(abs(2*s - d.mean2)) }

// tail is P(|2S − 2E| ≥ dev).
func (d *rankSumDist) tail(dev int) float64 {
	var tail float64
	for v, c := range d.count {
		if c != 0 && abs(2*v-d.mean2) >= dev {
			tail += c
		}
	}
	return min(1, tail/d.total)
}

func (d *rankSumDist) minP() float64 {
	maxDev := 0
	for v, c := range d.count {
		if c != 0 {
			maxDev = max(maxDev, abs(2*v-d.mean2))
		}
	}
	return d.tail(maxDev)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

var distCache sync.Map // [2]int{n1, n2} → *rankSumDist

func cachedDist(n1, n2 int) *rankSumDist {
	key := [2]int{n1, n2}
	if d, ok := distCache.Load(key); ok {
		return d.(*rankSumDist)
	}
	r := make([]int, n1+n2)
	for i := range r {
		r[i] = 2 * (i + 1)
	}
	d := newRankSumDist(r, n1)
	distCache.Store(key, d)
	return d
}

// BootstrapResult is a percentile bootstrap of median(y) − median(x).
type BootstrapResult struct {
	// Lo and Hi bound the (1 − alpha) percentile confidence interval.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// P is the bootstrap two-sided p-value 2·min(P*(d ≤ 0), P*(d ≥ 0)),
	// capped at 1: below alpha iff the interval excludes 0 (up to the
	// resampling granularity).
	P float64 `json:"p"`
}

// BootstrapMedianDiff resamples x and y (with replacement, b times, from
// rng) and returns the percentile confidence interval of median(y) −
// median(x) at level 1 − alpha. Empty samples give a zero interval and
// P = 1.
func BootstrapMedianDiff(x, y []float64, b int, alpha float64, rng *rand.Rand) BootstrapResult {
	if len(x) == 0 || len(y) == 0 || b <= 0 {
		return BootstrapResult{P: 1}
	}
	bx, by := make([]float64, len(x)), make([]float64, len(y))
	diffs := make([]float64, b)
	le, ge := 0, 0
	for i := range diffs {
		for j := range bx {
			bx[j] = x[rng.IntN(len(x))]
		}
		for j := range by {
			by[j] = y[rng.IntN(len(y))]
		}
		d := medianInPlace(by) - medianInPlace(bx)
		diffs[i] = d
		if d <= 0 {
			le++
		}
		if d >= 0 {
			ge++
		}
	}
	slices.Sort(diffs)
	lo := int(math.Floor(alpha / 2 * float64(b)))
	hi := int(math.Ceil((1-alpha/2)*float64(b))) - 1
	lo, hi = min(max(lo, 0), b-1), min(max(hi, 0), b-1)
	return BootstrapResult{Lo: diffs[lo], Hi: diffs[hi], P: min(1, 2*float64(min(le, ge))/float64(b))}
}

// Holm adjusts p-values for multiple comparisons (Holm–Bonferroni): the
// family-wise error rate of rejecting every adjusted p below alpha is at
// most alpha. The result is in the order of p.
func Holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	out := make([]float64, m)
	run := 0.0
	for rank, i := range idx {
		run = max(run, min(1, float64(m-rank)*p[i]))
		out[i] = run
	}
	return out
}

// Median returns the median of v (the mean of the two middle values for
// an even length), NaN for an empty slice. v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return medianInPlace(slices.Clone(v))
}

// medianInPlace reorders v.
func medianInPlace(v []float64) float64 {
	n := len(v)
	k := n / 2
	hi := selectK(v, k)
	if n%2 == 1 {
		return hi
	}
	lo := v[0] // after selectK, v[:k] holds the k smallest
	for _, x := range v[1:k] {
		lo = max(lo, x)
	}
	return (lo + hi) / 2
}

// selectK partially sorts v so that v[k] is the k-th smallest (0-based),
// v[:k] ≤ v[k] ≤ v[k+1:], and returns v[k].
func selectK(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		// Median-of-three pivot, Hoare-style three-way partition.
		mid := lo + (hi-lo)/2
		a, b, c := v[lo], v[mid], v[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case v[i] < pivot:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case v[i] > pivot:
				v[i], v[gt] = v[gt], v[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return v[k]
		}
	}
	return v[k]
}

// quantile is the linear-interpolation quantile (type 7) of sorted s.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	h := q * float64(len(s)-1)
	i := int(math.Floor(h))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}
