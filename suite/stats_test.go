package suite

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteMW is the exact two-sided Mann-Whitney p-value by enumerating every
// split of the pooled sample: the slow obvious reference.
func bruteMW(x, y []float64) float64 {
	all := append(slices.Clone(x), y...)
	n, k := len(all), len(x)
	// midranks
	rank := make([]float64, n)
	for i, v := range all {
		less, eq := 0, 0
		for _, w := range all {
			if w < v {
				less++
			} else if w == v {
				eq++
			}
		}
		rank[i] = float64(less) + float64(eq+1)/2
	}
	obs := 0.0
	for i := range k {
		obs += rank[i]
	}
	mean := float64(k) * float64(n+1) / 2
	dev := math.Abs(obs - mean)
	var hits, total float64
	var rec func(i, chosen int, sum float64)
	rec = func(i, chosen int, sum float64) {
		if chosen == k {
			total++
			if math.Abs(sum-mean) >= dev-1e-9 {
				hits++
			}
			return
		}
		if n-i < k-chosen {
			return
		}
		rec(i+1, chosen+1, sum+rank[i])
		rec(i+1, chosen, sum)
	}
	rec(0, 0, 0)
	return hits / total
}

func TestMannWhitneyExact(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
	}{
		{"separated", []float64{1, 2, 3}, []float64{4, 5, 6}},
		{"interleaved", []float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}},
		{"identical", []float64{2, 2, 2}, []float64{2, 2, 2, 2}},
		{"ties across", []float64{1, 2, 2, 3, 5}, []float64{2, 3, 3, 4, 6, 7}},
		{"constant vs constant", []float64{4092, 4092, 4092, 4092, 4092}, []float64{4093, 4093, 4093, 4093, 4093}},
		{"unequal sizes", []float64{0.5, 1.5, 9}, []float64{2, 3, 4, 5, 6, 7, 8, 10}},
		{"one each", []float64{1}, []float64{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MannWhitney(tc.x, tc.y)
			want := bruteMW(tc.x, tc.y)
			if !got.Exact || math.Abs(got.P-want) > 1e-12 {
				t.Errorf("MannWhitney(%v, %v).P = %v (exact %v), want %v", tc.x, tc.y, got.P, got.Exact, want)
			}
			if got.MinP > got.P+1e-12 {
				t.Errorf("MannWhitney(%v, %v): MinP %v > P %v", tc.x, tc.y, got.MinP, got.P)
			}
		})
	}
	// MinP of 5 vs 5 untied samples is 2/C(10,5).
	if got, want := MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}).MinP, 2.0/252; math.Abs(got-want) > 1e-12 {
		t.Errorf("MannWhitney(5 vs 5).MinP = %v, want %v", got, want)
	}
	if got := MannWhitney(nil, []float64{1}); got.P != 1 {
		t.Errorf("MannWhitney(nil, [1]).P = %v, want 1", got.P)
	}
}

// TestMannWhitneyApprox checks the normal approximation against the exact
// distribution just above the exact range's sizes.
func TestMannWhitneyApprox(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		x, y := make([]float64, 30), make([]float64, 30)
		for i := range x {
			x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()+0.5
		}
		exact := MannWhitney(x, y) // n = 60: exact, no ties
		big := MannWhitney(append(x, 1000), append(y, 1001))
		if !exact.Exact || big.Exact {
			t.Fatalf("trial %d: exact %v / %v, want true / false", trial, exact.Exact, big.Exact)
		}
		// The same data without the outliers, approximated: within 0.01.
		mu, sigma := 450.0, math.Sqrt(30*30*61/12.0)
		z := max(0, math.Abs(exact.U-mu)-0.5) / sigma
		if approx := math.Erfc(z / math.Sqrt2); math.Abs(approx-exact.P) > 0.01 {
			t.Errorf("trial %d: normal approximation %v, exact %v", trial, approx, exact.P)
		}
	}
}

// binomialLimit is alpha·n plus three binomial standard deviations.
func binomialLimit(alpha float64, n int) int {
	return int(alpha*float64(n) + 3*math.Sqrt(float64(n)*alpha*(1-alpha)))
}

type sampler func(r *rand.Rand) float64

var (
	normal   sampler = func(r *rand.Rand) float64 { return r.NormFloat64() }
	expo     sampler = func(r *rand.Rand) float64 { return r.ExpFloat64() }
	discrete sampler = func(r *rand.Rand) float64 { return float64(r.IntN(5)) } // heavy ties
	// cx4-like: 150–200 µs uniform NACK reaction plus a constant.
	reaction sampler = func(r *rand.Rand) float64 { return 1270 + 150e3 + r.Float64()*50e3 }
)

func sample(r *rand.Rand, s sampler, n int, shift float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = s(r) + shift
	}
	return v
}

// TestFalsePositiveRate: 1000 pairs of samples from one distribution; the
// test must reject at most alpha of them (plus binomial slack).
func TestFalsePositiveRate(t *testing.T) {
	t.Parallel()
	const trials, alpha = 1000, 0.05
	limit := binomialLimit(alpha, trials)
	tests := []struct {
		name   string
		s      sampler
		n1, n2 int
		method Method
	}{
		{"normal 10/10 exact", normal, 10, 10, MethodMannWhitney},
		{"normal 25/25 exact", normal, 25, 25, MethodMannWhitney},
		{"exponential 40/120 approx", expo, 40, 120, MethodMannWhitney},
		{"discrete ties 8/9 exact", discrete, 8, 9, MethodMannWhitney},
		{"discrete ties 60/60 approx", discrete, 60, 60, MethodMannWhitney},
		{"cx4 reaction 80/80", reaction, 80, 80, MethodMannWhitney},
		{"normal 30/30 bootstrap", normal, 30, 30, MethodBootstrap},
		{"discrete ties 30/30 bootstrap", discrete, 30, 30, MethodBootstrap},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			rejected := 0
			for range trials {
				x, y := sample(rng, tc.s, tc.n1, 0), sample(rng, tc.s, tc.n2, 0)
				var p float64
				if tc.method == MethodBootstrap {
					p = BootstrapMedianDiff(x, y, 200, alpha, rng).P
				} else {
					p = MannWhitney(x, y).P
				}
				if p < alpha {
					rejected++
				}
			}
			t.Logf("%s: %d of %d rejected at alpha %g (limit %d)", tc.name, rejected, trials, alpha, limit)
			if rejected > limit {
				t.Errorf("%s: %d false positives in %d trials, want <= %d", tc.name, rejected, trials, limit)
			}
		})
	}
}

// TestPower: real shifts are detected.
func TestPower(t *testing.T) {
	t.Parallel()
	const trials, alpha = 1000, 0.05
	tests := []struct {
		name      string
		s         sampler
		n         int
		shift     float64
		method    Method
		wantPower float64
	}{
		{"normal 1σ n=30", normal, 30, 1, MethodMannWhitney, 0.9},
		{"normal 0.5σ n=100", normal, 100, 0.5, MethodMannWhitney, 0.9},
		{"exponential +1 n=30", expo, 30, 1, MethodMannWhitney, 0.9},
		{"normal 1σ n=30 bootstrap", normal, 30, 1, MethodBootstrap, 0.8},
		{"cx4 reaction +20 µs n=20", reaction, 20, 20e3, MethodMannWhitney, 0.9},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 43))
			hit := 0
			for range trials {
				x, y := sample(rng, tc.s, tc.n, 0), sample(rng, tc.s, tc.n, tc.shift)
				var p float64
				if tc.method == MethodBootstrap {
					p = BootstrapMedianDiff(x, y, 200, alpha, rng).P
				} else {
					p = MannWhitney(x, y).P
				}
				if p < alpha {
					hit++
				}
			}
			power := float64(hit) / trials
			t.Logf("%s: power %.3f", tc.name, power)
			if power < tc.wantPower {
				t.Errorf("%s: power %.3f, want >= %.2f", tc.name, power, tc.wantPower)
			}
		})
	}
}

// synthSuite is a suite of one valid test whose quantities hold the given
// values (one repeat's worth of checks).
func synthSuite(vals map[string][]float64) *Suite {
	t := &Test{Name: "t", Repeats: 1, Valid: 1, NIC: map[string]Identity{}, Checks: map[string]*CheckSummary{},
		Violations: map[string]*Count{}, Counters: map[string]*CounterSummary{}, Quantities: map[string]*Dist{}}
	for name, v := range vals {
		spec, _ := Spec(name)
		t.Quantities[name] = newDist(spec.Unit, v)
	}
	return &Suite{Schema: Schema, Tests: []*Test{t}}
}

// TestCompareFalsePositives runs the whole decision (Compare, no minimum
// effect) on same-distribution suites: at most alpha of the trials may
// flag the quantity; with Holm, at most alpha of the trials may flag any
// of five quantities.
func TestCompareFalsePositives(t *testing.T) {
	t.Parallel()
	const trials, alpha = 1000, 0.05
	limit := binomialLimit(alpha, trials)
	names := []string{"nack_generation_ns", "nack_reaction_ns", "retransmission_ns", "message_completion_ns", "timeout_interval_ns"}
	for _, tc := range []struct {
		name  string
		qs    int
		holm  bool
		limit int
	}{
		{"one quantity", 1, false, limit},
		{"five quantities, Holm", 5, true, limit},
		// Without Holm the family-wise rate is about 1 − 0.95^5 ≈ 23%.
		{"five quantities, separately", 5, false, binomialLimit(1-math.Pow(1-alpha, 5), trials)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.qs)))
			o := Options{Alpha: alpha, Holm: tc.holm, MinRelShift: -1, MinAbsNs: -1, MinAbsGbps: -1, MinAbsCount: -1, Resamples: 50}
			flagged := 0
			for range trials {
				bv, nv := map[string][]float64{}, map[string][]float64{}
				for _, q := range names[:tc.qs] {
					bv[q], nv[q] = sample(rng, expo, 25, 0), sample(rng, expo, 25, 0)
				}
				if d := Compare(synthSuite(bv), synthSuite(nv), o); len(d.Findings) > 0 {
					flagged++
				}
			}
			t.Logf("%s: %d of %d trials flagged (limit %d)", tc.name, flagged, trials, tc.limit)
			if flagged > tc.limit {
				t.Errorf("%s: %d of %d trials flagged, want <= %d", tc.name, flagged, trials, tc.limit)
			}
		})
	}
}

func TestHolm(t *testing.T) {
	tests := []struct{ p, want []float64 }{
		{[]float64{0.01, 0.04, 0.03}, []float64{0.03, 0.06, 0.06}},
		{[]float64{0.5}, []float64{0.5}},
		{[]float64{0.001, 0.9, 0.02, 0.04}, []float64{0.004, 0.9, 0.06, 0.08}},
		{nil, []float64{}},
	}
	for _, tc := range tests {
		got := Holm(tc.p)
		if len(got) != len(tc.want) {
			t.Fatalf("Holm(%v) = %v, want %v", tc.p, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("Holm(%v) = %v, want %v", tc.p, got, tc.want)
				break
			}
		}
	}
}

func TestMedianSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 60; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.IntN(10)) // ties
		}
		s := slices.Clone(v)
		slices.Sort(s)
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := Median(v); got != want {
			t.Errorf("Median(%v) = %v, want %v", v, got, want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

func TestBootstrapMedianDiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	x, y := sample(rng, normal, 50, 0), sample(rng, normal, 50, 3)
	b := BootstrapMedianDiff(x, y, 2000, 0.05, rand.New(rand.NewPCG(1, 1)))
	if !(b.Lo > 2 && b.Hi < 4 && b.Lo < b.Hi && b.P < 0.001) {
		t.Errorf("BootstrapMedianDiff(N(0,1), N(3,1)) = %+v, want an interval around 3 and p < 0.001", b)
	}
	again := BootstrapMedianDiff(x, y, 2000, 0.05, rand.New(rand.NewPCG(1, 1)))
	if again != b {
		t.Errorf("BootstrapMedianDiff is not deterministic per seed: %+v then %+v", b, again)
	}
	c := BootstrapMedianDiff([]float64{5, 5, 5}, []float64{5, 5}, 100, 0.05, rng)
	if c.Lo != 0 || c.Hi != 0 || c.P != 1 {
		t.Errorf("BootstrapMedianDiff(constant, same constant) = %+v, want [0, 0] and p 1", c)
	}
}
