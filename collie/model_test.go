package collie

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestModelPlanted(t *testing.T) {
	m, mon := plantedModel(t)
	// Anomaly #1's concrete trigger (Appendix A).
	a1 := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 65536, QPType: "UD", Opcode: "SEND",
		NumQPs: 1, MTU: 2048, WQDepth: 256, WQEBatch: 64, SGEPerWQE: 1, MessageSizes: []int64{2048}}
	healthy := a1.clone()
	healthy.QPType, healthy.WQEBatch = "RC", 1
	for _, tc := range []struct {
		name string
		t    Traffic
		want []string
		hits []string
	}{
		{"anomaly-1", a1, []string{SymptomPause}, []string{"1"}},
		{"healthy", healthy, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Traffics: []Traffic{tc.t}}
			met, err := m.Run(context.Background(), 1, w)
			if err != nil {
				t.Fatal(err)
			}
			if got := mon.Check(w, met).Symptoms; !slices.Equal(got, tc.want) {
				t.Errorf("Check = %v, want %v (metrics %+v)", got, tc.want, met.Sample)
			}
			if got := m.PlantedHits(w); !slices.Equal(got, tc.hits) {
				t.Errorf("PlantedHits = %v, want %v", got, tc.hits)
			}
		})
	}
}

func TestModelDeterministicAndMostlyHealthy(t *testing.T) {
	p, _, err := LoadProfile("../examples/collie/cx6-200g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(*p, nil, 1)
	mon := Monitor{LineGbps: p.LineGbps, LineMpps: p.LineMpps}
	sp := DefaultSpace()
	r := rand.New(rand.NewPCG(1, 1))
	bad := 0
	for i := range 2000 {
		w := sp.Random(r)
		a, _ := m.Run(context.Background(), i, w)
		b, _ := m.Run(context.Background(), i, w)
		if a.Sample != b.Sample {
			t.Fatalf("Run is not deterministic for %s", w.Key())
		}
		if mon.Check(w, a).Anomalous() {
			bad++
		}
	}
	// The modelled bottlenecks (cache thrashing, PCIe sharing) make some
	// random workloads anomalous, but not most.
	if bad > 2000/10 {
		t.Errorf("%d of 2000 random workloads anomalous without planted anomalies, want ≤ 10%%", bad)
	}
}

func TestCheckSpace(t *testing.T) {
	app, err := LoadSpace("../examples/collie/app-rpc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	as := []Anomaly{
		{ID: "ud", Symptom: SymptomPause, MFS: MFS{{"qp_type": Values("UD")}}},
		{ID: "bi-mix", Symptom: SymptomPause, MFS: MFS{{"direction": Values(Bi), "sge_per_wqe": Range(3, 1<<62),
			"msg_size_min": Range(-1<<62, 1024), "msg_size_max": Range(65536, 1<<62)}}},
		{ID: "loop", Symptom: SymptomPause, MFS: MFS{{"direction": Values(Loopback)}, {"direction": Values(Uni)}}},
		{ID: "batch", Symptom: SymptomPause, MFS: MFS{{"wqe_batch": Range(128, 1<<62)}}},
		{ID: "none", Symptom: SymptomPause},
	}
	got := CheckSpace(app, as)
	want := map[string]bool{"ud": false, "bi-mix": true, "loop": false, "batch": false, "none": false}
	for _, r := range got {
		if r.Intersects != want[r.Anomaly] {
			t.Errorf("%s: Intersects = %v (%s), want %v", r.Anomaly, r.Intersects, r.Reason, want[r.Anomaly])
		}
		if r.Intersects {
			if r.Witness == nil || !r.MFS.Match(*r.Witness) || app.Validate(*r.Witness) != nil {
				t.Errorf("%s: bad witness %v", r.Anomaly, r.Witness)
			}
			if len(r.Break) == 0 {
				t.Errorf("%s: no conditions to break", r.Anomaly)
			}
		}
	}
}

func TestIdealDatapath(t *testing.T) {
	m, mon := plantedModel(t)
	ideal := *m
	ideal.Profile.IdealDatapath = true
	// Doorbell-limited: 64-byte WRITEs posted one WQE per doorbell reach
	// 120/2 = 60 M messages/s, far below the 200 Gbps wire. Not planted.
	small := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 65536, QPType: "RC", Opcode: "WRITE",
		NumQPs: 4, MTU: 4096, WQDepth: 64, WQEBatch: 1, SGEPerWQE: 1, MessageSizes: []int64{64}}
	// Anomaly #1's concrete trigger (Appendix A), planted.
	a1 := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 65536, QPType: "UD", Opcode: "SEND",
		NumQPs: 1, MTU: 2048, WQDepth: 256, WQEBatch: 64, SGEPerWQE: 1, MessageSizes: []int64{2048}}
	// Receive-WQE-miss-limited drain: 256-byte UD SENDs over 8192 deep
	// QPs fill the RX buffer of the modelled NIC. Not planted (#1 needs a
	// batch of 64, #2 at most 8).
	rxLimited := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 65536, QPType: "UD", Opcode: "SEND",
		NumQPs: 8192, MTU: 4096, WQDepth: 8192, WQEBatch: 32, SGEPerWQE: 2, MessageSizes: []int64{256}}
	for _, tc := range []struct {
		name        string
		t           Traffic
		real, ideal []string
		// RX buffer occupancy (%) on the modelled and the ideal datapath:
		// a drain that keeps up with the sender sits at the PFC threshold
		// (70%), a slower one fills the buffer.
		bufReal, bufIdeal float64
	}{
		{"doorbell-limited", small, []string{SymptomLowThroughput}, nil, 70, 70},
		{"planted-1", a1, []string{SymptomPause}, []string{SymptomPause}, 70, 70},
		{"rx-wqe-limited", rxLimited, []string{SymptomPause, SymptomLowThroughput}, nil, 100, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Traffics: []Traffic{tc.t}}
			a, b := m.Evaluate(w), ideal.Evaluate(w)
			if got := mon.Check(w, a).Symptoms; !slices.Equal(got, tc.real) {
				t.Errorf("modelled datapath: symptoms %v, want %v (%+v)", got, tc.real, a)
			}
			if got := mon.Check(w, b).Symptoms; !slices.Equal(got, tc.ideal) {
				t.Errorf("ideal datapath: symptoms %v, want %v (%+v)", got, tc.ideal, b)
			}
			if a.Diag[DiagRxBuffer] != tc.bufReal || b.Diag[DiagRxBuffer] != tc.bufIdeal {
				t.Errorf("rx_buffer_occupancy %v modelled, %v ideal; want %v, %v", a.Diag[DiagRxBuffer], b.Diag[DiagRxBuffer], tc.bufReal, tc.bufIdeal)
			}
			for _, c := range DiagCounters {
				if c != DiagRxBuffer && a.Diag[c] != b.Diag[c] {
					t.Errorf("counter %s: %v on the modelled datapath, %v on the ideal one; want equal", c, a.Diag[c], b.Diag[c])
				}
			}
		})
	}
	// The ideal datapath meets the line bound: a uni 64 KiB WRITE stream
	// carries 200 Gbps on the wire.
	big := small.clone()
	big.MessageSizes, big.MRSize = []int64{65536}, 65536
	w := Workload{Traffics: []Traffic{big}}
	if got := ideal.Evaluate(w).RxGbps; got < 199.9 || got > 200.1 {
		t.Errorf("ideal RxGbps = %v, want 200", got)
	}
	// No random workload is anomalous on the ideal datapath without planted
	// anomalies.
	bare := *m
	bare.Planted = nil
	bare.Profile.IdealDatapath = true
	sp := DefaultSpace()
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		w := sp.Random(r)
		if v := mon.Check(w, bare.Evaluate(w)); v.Anomalous() {
			t.Fatalf("ideal datapath, nothing planted: %s shows %v", w.Key(), v.Symptoms)
		}
	}
}

func TestCompactQPC(t *testing.T) {
	p := Profile{Name: "x"}
	w := Workload{Traffics: []Traffic{{Direction: Bi, Memory: "dram-local", NumMRs: 1, MRSize: 65536, QPType: "RC", Opcode: "WRITE",
		NumQPs: 1024, MTU: 4096, WQDepth: 64, WQEBatch: 64, SGEPerWQE: 16, MessageSizes: []int64{65536}}}}
	large := NewModel(p, nil, 1).counters(w)[DiagQPCMiss]
	p.CompactQPC = true
	compact := NewModel(p, nil, 1).counters(w)[DiagQPCMiss]
	// Batched 64 KiB WRITEs miss little in the first term; the large
	// bidirectional contexts (MTU 4096, 16 SGEs, 2048 QPs on B) dominate:
	// 100·(4096/4096)·sat(16/4)·sat(2048/2560) = 100·0.8·0.444 = 35.6.
	if d := large - compact; d < 35.5 || d > 35.6 {
		t.Errorf("qpc_cache_miss %.2f with growing contexts, %.2f compact: difference %.2f, want 35.56", large, compact, d)
	}
}
