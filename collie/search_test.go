package collie

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func plantedModel(t testing.TB) (*Model, Monitor) {
	t.Helper()
	p, _, err := LoadProfile(filepath.Join("..", "examples", "collie", "cx6-200g.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := LoadPlanted(filepath.Join("..", "examples", "collie", "table2-planted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return NewModel(*p, pl, 7), Monitor{LineGbps: p.LineGbps, LineMpps: p.LineMpps}
}

func TestSearchResumesExactly(t *testing.T) {
	m, mon := plantedModel(t)
	for _, algo := range []string{AlgoSA, AlgoSANoMFS, AlgoRandom} {
		t.Run(algo, func(t *testing.T) {
			dir := t.TempDir()
			opts := func(sub string) Options {
				return Options{Engine: m, Monitor: mon, Algo: algo, Budget: 300, Seed: 11,
					LogPath: filepath.Join(dir, sub, "experiments.jsonl"), AnomaliesPath: filepath.Join(dir, sub, "anomalies.json")}
			}
			full, err := Search(context.Background(), opts("full"))
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Anomalies) == 0 {
				t.Fatal("no anomalies; the test needs some")
			}
			if algo == AlgoSA && !slices.ContainsFunc(full.Anomalies, func(a Anomaly) bool { return a.ProbeOf != "" }) {
				t.Fatal("no anomaly revealed by an MFS probe; the test needs one")
			}
			want, _ := os.ReadFile(filepath.Join(dir, "full", "experiments.jsonl"))
			// A search killed after 137 experiments, mid-way through writing
			// the next line.
			lines := bytes.SplitAfter(want, []byte("\n"))
			cut := append(bytes.Join(lines[:137], nil), lines[137][:20]...)
			os.MkdirAll(filepath.Join(dir, "cut"), 0o755)
			os.WriteFile(filepath.Join(dir, "cut", "experiments.jsonl"), cut, 0o644)
			res, err := Search(context.Background(), opts("cut"))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "cut", "experiments.jsonl"))
			if !bytes.Equal(got, want) {
				t.Errorf("resumed log differs from the uninterrupted one (%d vs %d bytes)", len(got), len(want))
			}
			if res.Replayed != 137 {
				t.Errorf("Replayed = %d, want 137", res.Replayed)
			}
			a1, _ := os.ReadFile(filepath.Join(dir, "full", "anomalies.json"))
			a2, _ := os.ReadFile(filepath.Join(dir, "cut", "anomalies.json"))
			if !bytes.Equal(a1, a2) {
				t.Errorf("resumed anomalies.json differs")
			}
		})
	}
}

func TestSearchLogMismatch(t *testing.T) {
	m, mon := plantedModel(t)
	log := filepath.Join(t.TempDir(), "experiments.jsonl")
	if _, err := Search(context.Background(), Options{Engine: m, Monitor: mon, Budget: 20, Seed: 1, LogPath: log}); err != nil {
		t.Fatal(err)
	}
	_, err := Search(context.Background(), Options{Engine: m, Monitor: mon, Budget: 30, Seed: 2, LogPath: log})
	if !errors.Is(err, ErrLog) {
		t.Errorf("Search(other seed, same log) = %v, want ErrLog", err)
	}
}

func TestSearchSkipsKnownMFS(t *testing.T) {
	m, mon := plantedModel(t)
	var recs []Record
	res, err := Search(context.Background(), Options{Engine: m, Monitor: mon, Budget: 500, Seed: 3,
		OnExperiment: func(r Record) { recs = append(recs, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Anomalies) < 3 {
		t.Fatalf("%d anomalies; the test needs several", len(res.Anomalies))
	}
	for _, a := range res.Anomalies {
		if a.Method != "mfs" {
			continue
		}
		if !a.MFS.Match(a.Example) {
			t.Errorf("anomaly %s: its example is outside its MFS %v", a.ID, a.MFS)
		}
		// The MFS is in force once its probes are done.
		active := a.FoundAtExperiment + a.Probes
		for _, r := range recs {
			if r.ID > active && r.Phase != "probe" && a.MFS.Match(r.Workload) {
				t.Errorf("experiment %d (%s) is inside the MFS of %s, known since %d", r.ID, r.Phase, a.ID, active)
			}
		}
	}
	if res.Skipped == 0 {
		t.Errorf("Skipped = 0, want candidates skipped for matching an MFS")
	}
}

func TestSearchTargets(t *testing.T) {
	tr, pause := Counter{"throughput_ratio", Performance}, Counter{"pause_duration_ratio", Diagnostic}
	a, b := Counter{"rx_wqe_cache_miss", Diagnostic}, Counter{"qpc_cache_miss", Diagnostic}
	for _, tc := range []struct {
		in, want []Counter
	}{
		{[]Counter{pause, a, tr, b}, []Counter{a, b}},
		{[]Counter{tr, pause}, []Counter{tr, pause}},
		{nil, nil},
	} {
		if got := searchTargets(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("searchTargets(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// twoSymptoms is an engine with two anomalies at ≥ 4096 QPs: pause at
// wq_depth ≥ 1024, low throughput below.
type twoSymptoms struct{}

func (twoSymptoms) Run(_ context.Context, _ int, w Workload) (*Metrics, error) {
	t := w.Traffics[0]
	m := &Metrics{Diag: map[string]float64{"depth": float64(t.WQDepth), "qps": float64(t.NumQPs)}}
	switch {
	case t.NumQPs < 4096:
	case t.WQDepth >= 1024:
		m.PauseDurationRatio = 0.05
	default:
		m.Symptoms = []string{SymptomLowThroughput}
	}
	return m, nil
}

// TestSearchProbeWitness: an MFS probe that shows another symptom is an
// anomaly the search measured; it is reported with its own MFS (ProbeOf
// names the anomaly whose probe revealed it), not dropped.
func TestSearchProbeWitness(t *testing.T) {
	sp, err := ParseSpace([]byte("max_traffics: 1\ndirections: [uni]\nmemory: [dram-local]\nqp_types: [RC]\nopcodes: [WRITE]\n" +
		"num_qps: {min: 1, max: 8192}\nnum_mrs: {min: 1, max: 1}\nwqe_batch: {min: 1, max: 1}\nsge_per_wqe: {min: 1, max: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	res, err := Search(context.Background(), Options{Space: sp, Engine: twoSymptoms{}, Budget: 200, Seed: 1,
		OnExperiment: func(r Record) { phases = append(phases, r.Phase) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Anomalies) != 2 {
		t.Fatalf("%d anomalies, want 2: %+v", len(res.Anomalies), res.Anomalies)
	}
	first, second := res.Anomalies[0], res.Anomalies[1]
	if second.ProbeOf != first.ID || first.ProbeOf != "" {
		t.Errorf("ProbeOf = %q, %q, want \"\", %q", first.ProbeOf, second.ProbeOf, first.ID)
	}
	if phases[second.FoundAtExperiment] != "probe" || second.FoundAtExperiment <= first.FoundAtExperiment {
		t.Errorf("second anomaly found at experiment %d (%s), want a probe after %d",
			second.FoundAtExperiment, phases[second.FoundAtExperiment], first.FoundAtExperiment)
	}
	want := map[string]string{SymptomPause: "num_qps ≥ 4096, wq_depth ≥ 1024", SymptomLowThroughput: "num_qps ≥ 4096, wq_depth ≤ 512"}
	for _, a := range res.Anomalies {
		if got := a.MFS.String(); got != want[a.Symptom] || !a.Validated {
			t.Errorf("%s (%s): MFS %s, validated %v; want %s", a.ID, a.Symptom, got, a.Validated, want[a.Symptom])
		}
	}
	if first.Symptom == second.Symptom {
		t.Errorf("both anomalies are %s", first.Symptom)
	}
}
