package collie

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// algoFreeMFS is a diagnostic variant of the benchmark: SA with MFS whose
// probes are not charged to the budget (the budget counts search points
// only). It separates the cost of the MFS probes from the guidance of the
// annealing.
const algoFreeMFS = "sa-freemfs"

// plantedResult is one search of the planted benchmark.
type plantedResult struct {
	// found: per planted anomaly, the search experiment (probes not
	// counted) at which an anomalous search point first fell where it is
	// active; distinct: the same for points where it is the only active
	// planted anomaly (a point in two overlapping regions shows one
	// symptom and does not tell them apart).
	found, distinct map[string]int
	natural, total  int
	// covered: per planted anomaly, the share of its active region (a
	// random sample) inside the MFS the search reported within its
	// budget; nil for algorithms without MFS.
	covered map[string]float64
}

// plantedRun runs one search on the model with the Table-2 planted profile.
func plantedRun(tb testing.TB, profile, algo string, seed uint64, budget int) plantedResult {
	tb.Helper()
	p, _, err := LoadProfile(filepath.Join("..", "examples", "collie", profile+".yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	pl, err := LoadPlanted(filepath.Join("..", "examples", "collie", "table2-planted.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	// The planted anomalies are the known anomaly set: the datapath is
	// otherwise ideal (the counters are still the modelled loads).
	p.IdealDatapath = true
	m := NewModel(*p, pl, seed)
	out := plantedResult{found: map[string]int{}, distinct: map[string]int{}, total: len(m.Planted)}
	searchBudget, probes := budget, 0
	withMFS := algo == AlgoSA || algo == algoFreeMFS
	if algo == algoFreeMFS {
		algo, budget = AlgoSA, 5*budget
	}
	revealed := map[string]bool{}
	// at: the search experiment (probes not counted) of every experiment.
	at := map[int]int{}
	hit := func(w Workload, n int) {
		hits := m.PlantedHits(w)
		if len(hits) == 0 {
			out.natural++
		}
		for _, h := range hits {
			if f, ok := out.found[h]; !ok || n < f {
				out.found[h] = n
			}
			if f, ok := out.distinct[h]; len(hits) == 1 && (!ok || n < f) {
				out.distinct[h] = n
			}
		}
	}
	res, err := Search(context.Background(), Options{
		Engine: m, Algo: algo, Budget: budget, Seed: seed,
		Monitor: Monitor{LineGbps: p.LineGbps, LineMpps: p.LineMpps},
		OnExperiment: func(r Record) {
			at[r.ID] = r.ID - probes
			if r.Phase == "probe" {
				probes++
				return
			}
			if r.ID-probes >= searchBudget || r.Verdict == nil || !r.Verdict.Anomalous() {
				return
			}
			if r.Anomaly != "" {
				revealed[r.Anomaly] = true
			}
			hit(r.Workload, r.ID-probes)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	// An anomaly revealed by an anomalous MFS probe (outside the MFS being
	// built) is found at that probe.
	for _, a := range res.Anomalies {
		if n := at[a.FoundAtExperiment]; a.ProbeOf != "" && n < searchBudget {
			revealed[a.ID] = true
			hit(a.Example, n)
		}
	}
	if withMFS {
		var set []MFS
		for _, a := range res.Anomalies {
			if revealed[a.ID] && a.MFS != nil {
				set = append(set, a.MFS)
			}
		}
		out.covered = map[string]float64{}
		for id, ws := range activeSamples(tb, profile, m) {
			n := 0
			for _, w := range ws {
				if MatchAny(set, w) {
					n++
				}
			}
			out.covered[id] = float64(n) / float64(len(ws))
		}
	}
	return out
}

var activeSampleCache = map[string]map[string][]Workload{}

// activeSamples returns, per planted anomaly of the profile, up to 300
// random points of the default space where it is active (300 000 draws).
func activeSamples(tb testing.TB, profile string, m *Model) map[string][]Workload {
	tb.Helper()
	if s, ok := activeSampleCache[profile]; ok {
		return s
	}
	s := map[string][]Workload{}
	sp := DefaultSpace()
	r := rand.New(rand.NewPCG(5, 6))
	for range 300000 {
		w := sp.Random(r)
		for _, h := range m.PlantedHits(w) {
			if len(s[h]) < 300 {
				s[h] = append(s[h], w)
			}
		}
	}
	for _, x := range m.Planted {
		if len(s[x.ID]) == 0 {
			tb.Fatalf("%s #%s: no active point in 300 000 draws", profile, x.ID)
		}
	}
	activeSampleCache[profile] = s
	return s
}

// BenchmarkPlanted compares random, SA without MFS and SA with MFS on the
// model with the paper's Table-2 anomalies planted (10 seeds each, a fixed
// experiment budget, MFS probes included; sa-freemfs does not charge the
// probes, see algoFreeMFS). Run with
//
//	go test ./collie -run '^$' -bench Planted -benchtime 1x
//
// COLLIE_BENCH_BUDGET overrides the budget of 1000 experiments.
func BenchmarkPlanted(b *testing.B) {
	b.ReportAllocs()
	budget := 1000
	if v, err := strconv.Atoi(os.Getenv("COLLIE_BENCH_BUDGET")); err == nil && v > 0 {
		budget = v
	}
	for _, profile := range []string{"cx6-200g", "p2100-100g"} {
		for _, algo := range []string{AlgoRandom, AlgoSANoMFS, AlgoSA, algoFreeMFS} {
			b.Run(profile+"/"+algo, func(b *testing.B) {
				for range b.N {
					var sum, dist, all, nat int
					var firsts []int
					var per []string
					perID, distID, covID := map[string]int{}, map[string]int{}, map[string]float64{}
					var cov float64
					for seed := uint64(1); seed <= 10; seed++ {
						r := plantedRun(b, profile, algo, seed, budget)
						sum += len(r.found)
						dist += len(r.distinct)
						all += r.total
						nat += r.natural
						for id, at := range r.found {
							firsts = append(firsts, at)
							perID[id]++
						}
						for id := range r.distinct {
							distID[id]++
						}
						for id, c := range r.covered {
							covID[id] += c / 10
							cov += c
						}
						per = append(per, fmt.Sprint(len(r.found)))
					}
					sort.Ints(firsts)
					med := 0
					if len(firsts) > 0 {
						med = firsts[len(firsts)/2]
					}
					b.ReportMetric(100*float64(sum)/float64(all), "%found")
					b.ReportMetric(100*float64(dist)/float64(all), "%distinct")
					b.Logf("%s %s: seeds finding each planted anomaly: %s", profile, algo, byID(perID, "%d"))
					b.Logf("%s %s: seeds finding each alone (no other planted anomaly active at the point): %s", profile, algo, byID(distID, "%d"))
					b.Logf("%s %s: found %d/%d planted (%.0f%%), alone %d/%d (%.0f%%) over 10 seeds [%s], median first-hit search experiment %d, natural anomalous points %d",
						profile, algo, sum, all, 100*float64(sum)/float64(all), dist, all, 100*float64(dist)/float64(all),
						strings.Join(per, " "), med, nat)
					if len(covID) > 0 {
						b.ReportMetric(100*cov/float64(all), "%covered")
						for id := range covID {
							covID[id] *= 100
						}
						b.Logf("%s %s: mean %% of each planted region inside the reported MFS: %s (all: %.0f%%)", profile, algo, byID(covID, "%.0f"), 100*cov/float64(all))
					}
				}
			})
		}
	}
}

// byID formats per-anomaly values in the planted anomalies' numeric order.
func byID[V int | float64](m map[string]V, format string) string {
	ids := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	var out []string
	for _, id := range ids {
		out = append(out, "#"+id+":"+fmt.Sprintf(format, m[id]))
	}
	return strings.Join(out, " ")
}

// TestPlantedRandomHitProbability estimates, per planted anomaly, the
// probability that one uniformly random point of the default space is
// inside it (active: conditions and load). Run with -v to see the table;
// COLLIE_MC_DRAWS sets the number of draws (default 20000).
func TestPlantedRandomHitProbability(t *testing.T) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("COLLIE_MC_DRAWS")); err == nil && v > 0 {
		n = v
	}
	pl, err := LoadPlanted(filepath.Join("..", "examples", "collie", "table2-planted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sp := DefaultSpace()
	for _, profile := range []string{"cx6-200g", "p2100-100g"} {
		p, _, err := LoadProfile(filepath.Join("..", "examples", "collie", profile+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		m := NewModel(*p, pl, 1)
		r := rand.New(rand.NewPCG(1, 2))
		active, region := map[string]int{}, map[string]int{}
		for range n {
			w := sp.Random(r)
			for _, id := range m.PlantedHits(w) {
				active[id]++
			}
			for i := range m.Planted {
				if m.Planted[i].Region().Match(w) {
					region[m.Planted[i].ID]++
				}
			}
		}
		for _, x := range m.Planted {
			pa := float64(active[x.ID]) / float64(n)
			t.Logf("%s #%s: P(random point active) = %.3f%% (conditions alone %.3f%%)", profile, x.ID, 100*pa, 100*float64(region[x.ID])/float64(n))
			// Table 2's simplest anomalies (two or three conditions) are
			// broad; none covers a fifth of the space.
			if pa > 0.2 {
				t.Errorf("%s #%s covers %.1f%% of the space", profile, x.ID, 100*pa)
			}
		}
	}
}

// BenchmarkCounterLandscape measures the premise of counter-guided search
// (§7.2, Fig. 6: anomalies sit where diagnostic counters are extreme) on
// the model: per counter, the share of the top 1% of 100 000 random
// one-traffic points (by that counter) that are inside an active planted
// anomaly whose root cause is that counter, and inside any planted
// anomaly. A low share means the counter's extremes lie outside the
// anomalies of its subsystem and annealing on it climbs away from them.
//
//	go test ./collie -run '^$' -bench CounterLandscape -benchtime 1x -v
func BenchmarkCounterLandscape(b *testing.B) {
	b.ReportAllocs()
	m, _ := plantedModel(b)
	m.Profile.IdealDatapath = true // as BenchmarkPlanted
	for range b.N {
		type point struct {
			v        float64
			own, any bool
		}
		byCounter := map[string][]point{}
		sp := DefaultSpace()
		r := rand.New(rand.NewPCG(1, 2))
		for len(byCounter[DiagCounters[0]]) < 100000 {
			w := sp.Random(r)
			if len(w.Traffics) != 1 {
				continue
			}
			d := m.physical(w).Diag
			root := map[string]bool{}
			hits := m.PlantedHits(w)
			for _, id := range hits {
				for _, x := range m.Planted {
					if x.ID == id {
						root[x.Counter] = true
					}
				}
			}
			for _, c := range DiagCounters {
				byCounter[c] = append(byCounter[c], point{d[c], root[c], len(hits) > 0})
			}
		}
		for _, c := range DiagCounters {
			x := byCounter[c]
			sort.Slice(x, func(i, j int) bool { return x[i].v > x[j].v })
			top, own, any := len(x)/100, 0, 0
			for _, q := range x[:top] {
				if q.own {
					own++
				}
				if q.any {
					any++
				}
			}
			b.ReportMetric(100*float64(own)/float64(top), "%top1-own/"+c)
			b.Logf("%-24s max %6.1f, top-1%% from %6.1f: %3.0f%% of the top 1%% in an anomaly of this subsystem, %3.0f%% in any",
				c, x[0].v, x[top].v, 100*float64(own)/float64(top), 100*float64(any)/float64(top))
		}
	}
}
