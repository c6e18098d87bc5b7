package collie

import (
	"math"
	"slices"
	"testing"
)

func TestEnergy(t *testing.T) {
	for _, tc := range []struct {
		k    CounterKind
		a, b float64
		want float64
	}{
		{Performance, 100, 80, -0.2}, // throughput fell: better
		{Performance, 100, 150, 0.5},
		{Diagnostic, 10, 20, -0.5}, // counter rose: better, (A−B)/B
		{Diagnostic, 20, 10, 1},
		{Diagnostic, 5, 5, 0},
		{Diagnostic, 0, 0, 0},
		{Diagnostic, 3, 0, math.Inf(1)},
		{Performance, 0, 2, math.Inf(1)},
	} {
		if got := Energy(tc.k, tc.a, tc.b); math.Abs(got-tc.want) > 1e-12 && got != tc.want {
			t.Errorf("Energy(%v, %v, %v) = %v, want %v", tc.k, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestMonitorCheck(t *testing.T) {
	uni := Workload{Traffics: []Traffic{{Direction: Uni, Opcode: "WRITE"}}}
	read := Workload{Traffics: []Traffic{{Direction: Uni, Opcode: "READ"}}}
	bi := Workload{Traffics: []Traffic{{Direction: Bi, Opcode: "WRITE"}}}
	mon := Monitor{LineGbps: 100, LineMpps: 50}
	for _, tc := range []struct {
		name string
		w    Workload
		m    Metrics
		want []string
	}{
		{"line-rate", uni, Metrics{Sample: Sample{RxGbps: 95}}, nil},
		{"pps-bound", uni, Metrics{Sample: Sample{RxGbps: 20, RxMpps: 45}}, nil},
		{"low", uni, Metrics{Sample: Sample{RxGbps: 70, RxMpps: 10}}, []string{SymptomLowThroughput}},
		{"read-uses-tx", read, Metrics{Sample: Sample{TxGbps: 90, RxGbps: 1}}, nil},
		{"bi-one-side-low", bi, Metrics{Sample: Sample{TxGbps: 90, RxGbps: 50}}, []string{SymptomLowThroughput}},
		{"pause", uni, Metrics{Sample: Sample{RxGbps: 95, PauseDurationRatio: 0.002}}, []string{SymptomPause}},
		{"pause-below-threshold", uni, Metrics{Sample: Sample{RxGbps: 95, PauseDurationRatio: 0.0009}}, nil},
		{"engine-symptom", uni, Metrics{Sample: Sample{RxGbps: 95}, Symptoms: []string{"check:gbn"}}, []string{"check:gbn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			if got := mon.Check(tc.w, &m).Symptoms; !slices.Equal(got, tc.want) {
				t.Errorf("Check = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMonitorStability(t *testing.T) {
	mon := Monitor{LineGbps: 100}
	w := Workload{Traffics: []Traffic{{Direction: Uni, Opcode: "WRITE"}}}
	// A warm-up sample is dropped; the rest is stable and averaged.
	m := Metrics{Samples: []Sample{{RxGbps: 10}, {RxGbps: 90}, {RxGbps: 92}, {RxGbps: 91}}}
	v := mon.Check(w, &m)
	if !v.Stable || m.RxGbps != 91 || v.Anomalous() {
		t.Errorf("Check(warm-up) = %+v, rx %v, want stable, 91, no symptom", v, m.RxGbps)
	}
	m = Metrics{Samples: []Sample{{RxGbps: 10}, {RxGbps: 90}, {RxGbps: 20}, {RxGbps: 80}}}
	if v := mon.Check(w, &m); v.Stable {
		t.Errorf("Check(oscillating).Stable = true, want false")
	}
}

func TestRankCounters(t *testing.T) {
	a, b, c := Counter{"a", Diagnostic}, Counter{"b", Diagnostic}, Counter{"c", Diagnostic}
	readings := []map[Counter]float64{{a: 1, b: 10, c: 0}, {a: 1, b: 30, c: 0}, {a: 3, b: 20, c: 0}}
	got := RankCounters(readings)
	want := []Counter{a, b} // a: std/mean 0.51 > b: 0.41; c has zero mean
	if !slices.Equal(got, want) {
		t.Errorf("RankCounters = %v, want %v", got, want)
	}
}
