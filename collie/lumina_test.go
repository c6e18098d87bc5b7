package collie

import (
	"context"
	"testing"
)

const luminaSpace = `
max_traffics: 1
directions: [uni]
memory: [dram-local]
qp_types: [RC]
opcodes: [WRITE]
num_qps: {values: [1]}
num_mrs: {values: [1]}
mr_size: {values: [65536]}
mtu: {values: [1024]}
wq_depth: {values: [1]}
wqe_batch: {values: [1]}
sge_per_wqe: {values: [1]}
message_sizes: {min: 8192, max: 8192, max_len: 1}
events: {slots: 2, messages: 2, psns: [0, 4, 7], iters: [1], types: [drop]}
`

// TestLuminaEngineFindsLargestNACKReaction: on the sim testbed with the cx4
// personality (NACK reaction 150–200 µs, seeded jitter), the search over
// two drop slots (which message, which packet, or none) finds the
// placement with the largest NACK reaction latency within a budget smaller
// than the space. The space is small enough to check against every point.
func TestLuminaEngineFindsLargestNACKReaction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sim testbed")
	}
	sp, err := ParseSpace([]byte(luminaSpace))
	if err != nil {
		t.Fatal(err)
	}
	eng := &LuminaEngine{Space: sp, Personality: "cx4"}
	ctx := context.Background()
	// Every point: each slot is none or (msg, psn).
	var slot []Event
	slot = append(slot, Event{Msg: 0, PSN: -1, Iter: 1, Type: "drop"})
	for m := range 2 {
		for _, p := range []int{0, 4, 7} {
			slot = append(slot, Event{Msg: m, PSN: p, Iter: 1, Type: "drop"})
		}
	}
	base := sp.Random(nil2(1)).Traffics[0]
	var best float64
	var bestAt []Event
	points := 0
	for i, a := range slot {
		for _, b := range slot[i:] { // the slots are symmetric
			tr := base.clone()
			tr.Events = []Event{a, b}
			m, err := eng.Run(ctx, 0, Workload{Traffics: []Traffic{tr}})
			if err != nil {
				t.Fatal(err)
			}
			points++
			if v := m.Diag["nack_reaction_ns_max"]; v > best {
				best, bestAt = v, tr.Events
			}
		}
	}
	t.Logf("exhaustive: %d placements, largest NACK reaction %.0f ns at %+v", points, best, bestAt)
	if best < 150000 || best > 200000 {
		t.Fatalf("largest NACK reaction = %.0f ns, want within cx4's 150–200 µs", best)
	}
	budget := 20
	// Some placements fail lumina checks (anomalies); without MFS their
	// probes do not eat the small budget. The latencies differ by
	// nanoseconds between placements: a low
	// temperature makes the annealing greedy enough to tell them apart.
	res, err := Search(ctx, Options{Space: sp, Engine: eng, Budget: budget, Seed: 1, InitPoints: 5, Algo: AlgoSANoMFS, T0: 1e-4, Tmin: 1e-6, Alpha: 0.5,
		Counters: []string{"nack_reaction_ns_max"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range res.Best {
		if b.Counter == "nack_reaction_ns_max" {
			t.Logf("search: %.0f ns at experiment %d: %+v", b.Value, b.Experiment, b.Workload.Traffics[0].Events)
			if b.Value != best {
				t.Errorf("search best = %.0f ns, want the exhaustive maximum %.0f", b.Value, best)
			}
			return
		}
	}
	t.Errorf("no nack_reaction_ns_max in %+v", res.Best)
}
