package collie

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// appendixTrigger is a concrete trigger of Appendix A, on the space's level
// grid (480 QPs → 512, 80 → 64, 24 × 1024 MRs → 32768, 12 KB MRs → 64 KiB, as the 64 KB messages need).
type appendixTrigger struct {
	id, nic string
	w       Workload
}

func trig(dir, mem, qp, op string, qps, mrs, mrSize, mtu, depth, batch, sge int64, sizes ...int64) Traffic {
	return Traffic{Direction: dir, Memory: mem, NumMRs: mrs, MRSize: mrSize, QPType: qp, Opcode: op, NumQPs: qps,
		MTU: mtu, WQDepth: depth, WQEBatch: batch, SGEPerWQE: sge, MessageSizes: sizes}
}

func one(t Traffic) Workload { return Workload{Traffics: []Traffic{t}} }

func appendixTriggers() []appendixTrigger {
	const L, K, M = "dram-local", 1024, 1 << 20
	return []appendixTrigger{
		{"1", "cx6-200g", one(trig(Uni, L, "UD", "SEND", 1, 1, 64*K, 2048, 256, 64, 1, 2048))},
		{"2", "cx6-200g", one(trig(Uni, L, "UD", "SEND", 16, 1, 64*K, 1024, 1024, 4, 1, 1024))},
		{"3", "cx6-200g", one(trig(Uni, L, "RC", "READ", 8, 1, 4*M, 1024, 128, 1, 1, 4*M))},
		{"4", "cx6-200g", one(trig(Bi, L, "RC", "READ", 64, 1, 64*K, 4096, 128, 128, 4, 128))},
		{"5", "cx6-200g", one(trig(Uni, L, "RC", "SEND", 1, 1, 64*K, 1024, 1024, 64, 2, 2048))},
		{"6", "cx6-200g", one(trig(Uni, L, "RC", "SEND", 32, 1, 64*K, 1024, 1024, 8, 2, 1024))},
		{"7", "cx6-200g", one(trig(Uni, L, "RC", "WRITE", 32, 32768, 64*K, 1024, 128, 1, 1, 512))},
		{"8", "cx6-200g", one(trig(Uni, L, "RC", "WRITE", 512, 1, 64*K, 1024, 16, 1, 1, 512))},
		{"9", "cx6-200g", one(trig(Bi, L, "RC", "WRITE", 8, 1, 4*M, 4096, 128, 8, 3, 128, 64*K, 1024))},
		{"10", "cx6-200g", one(trig(Bi, L, "RC", "WRITE", 512, 1, 64*K, 1024, 128, 64, 1, 64*K, 128, 128, 128))},
		{"11", "cx6-200g", one(trig(Bi, "dram-remote", "RC", "WRITE", 1, 32, 4*M, 4096, 128, 16, 1, 256*K))},
		{"12", "cx6-200g", one(trig(Bi, "gpu", "RC", "WRITE", 8, 1, 4*M, 4096, 128, 8, 3, 128, 64*K, 1024))},
		{"13", "cx6-200g", Workload{Traffics: []Traffic{trig(Loopback, L, "RC", "WRITE", 8, 32, 4*M, 4096, 128, 16, 1, 256*K),
			trig(Uni, L, "RC", "WRITE", 8, 32, 4*M, 4096, 128, 16, 1, 256*K)}}},
		{"14", "p2100-100g", one(trig(Bi, L, "RC", "WRITE", 1024, 64, 256*K, 4096, 128, 1, 4, 64*K))},
		{"15", "p2100-100g", one(trig(Uni, L, "UD", "SEND", 32, 1, 4*K, 2048, 64, 1, 1, 256, 1024, 64, 1024))},
		{"16", "p2100-100g", one(trig(Uni, L, "RC", "READ", 512, 1, 256*K, 1024, 128, 8, 1, 64*K))},
		{"17", "p2100-100g", one(trig(Uni, L, "RC", "SEND", 64, 1, M, 1024, 128, 1, 1, 1024))},
		{"18", "p2100-100g", one(trig(Bi, L, "RC", "WRITE", 16, 1, 64*K, 1024, 64, 16, 1, 64*K))},
	}
}

// TestAppendixTriggersAnomalous checks every concrete trigger of Appendix
// A: it is a valid point, it shows its planted anomaly's symptom, and the
// planted anomaly is active there (its conditions hold and its root-cause
// counter reaches its load).
func TestAppendixTriggersAnomalous(t *testing.T) {
	pl, err := LoadPlanted(filepath.Join("..", "examples", "collie", "table2-planted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]*Model{}
	for _, name := range []string{"cx6-200g", "p2100-100g"} {
		p, _, err := LoadProfile(filepath.Join("..", "examples", "collie", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		models[name] = NewModel(*p, pl, 1)
	}
	sp := DefaultSpace()
	for _, tc := range appendixTriggers() {
		t.Run("#"+tc.id, func(t *testing.T) {
			if err := sp.Validate(tc.w); err != nil {
				t.Fatal(err)
			}
			m := models[tc.nic]
			mon := Monitor{LineGbps: m.Profile.LineGbps, LineMpps: m.Profile.LineMpps}
			var want *Planted
			for i := range m.Planted {
				if m.Planted[i].ID == tc.id {
					want = &m.Planted[i]
				}
			}
			base := m.physical(tc.w).Diag
			t.Logf("#%s %s = %.1f (load %.1f); counters %v", tc.id, want.Counter, base[want.Counter], want.Load, base)
			if !slices.Contains(m.PlantedHits(tc.w), tc.id) {
				t.Errorf("#%s not active at its trigger %s (region match %v)", tc.id, tc.w.Key(), want.Region().Match(tc.w))
			}
			met, _ := m.Run(context.Background(), 1, tc.w)
			if v := mon.Check(tc.w, met); !slices.Contains(v.Symptoms, want.Symptom) {
				t.Errorf("#%s: symptoms %v, want %s", tc.id, v.Symptoms, want.Symptom)
			}
		})
	}
}
