package collie

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Symptoms the monitor reports.
const (
	SymptomPause         = "pause"
	SymptomLowThroughput = "low_throughput"
)

// Sample is one reading of the performance counters of the monitored host
// (host B: it receives uni traffic and runs loopback traffic).
type Sample struct {
	TxGbps             float64 `json:"tx_gbps"`
	RxGbps             float64 `json:"rx_gbps"`
	TxMpps             float64 `json:"tx_mpps"`
	RxMpps             float64 `json:"rx_mpps"`
	PauseDurationRatio float64 `json:"pause_duration_ratio"`
}

// Metrics is what an engine reports for one experiment: the averaged
// performance counters, diagnostic counters by name, optionally the
// individual samples (the monitor then checks stability and averages them),
// and optionally engine-specific symptoms (the lumina engine's failed
// checks).
type Metrics struct {
	Sample
	Diag     map[string]float64 `json:"diag,omitempty"`
	Samples  []Sample           `json:"samples,omitempty"`
	Symptoms []string           `json:"symptoms,omitempty"`
}

// Engine runs one experiment. Run must not keep w. Implementations document
// whether they are safe for concurrent use; the searcher calls Run from one
// goroutine.
type Engine interface {
	Run(ctx context.Context, id int, w Workload) (*Metrics, error)
}

// ErrEngine reports a failed experiment (a crashed or misbehaving engine).
var ErrEngine = errors.New("collie: experiment failed")

// Monitor decides whether metrics are anomalous (§5.2). The zero value
// checks pause only.
type Monitor struct {
	// LineGbps and LineMpps are the NIC's bit and packet rate bounds per
	// direction. Zero disables the throughput check.
	LineGbps, LineMpps float64
	// PauseThreshold is the pause duration ratio above which a workload is
	// anomalous. Default 0.001 (0.1%).
	PauseThreshold float64
	// Tolerance is how far below both bounds throughput may fall. Default
	// 0.2 (20%).
	Tolerance float64
	// StableCV is the largest coefficient of variation of the samples'
	// throughput that counts as stable. Default 0.1.
	StableCV float64
}

// Verdict is the monitor's reading of one experiment.
type Verdict struct {
	Symptoms []string `json:"symptoms,omitempty"`
	// Stable is false when the samples never settled.
	Stable bool `json:"stable"`
	// ThroughputRatio is, over the directions the workload loads on the
	// monitored host, the smallest max(gbps/LineGbps, mpps/LineMpps); 1
	// when the throughput check is off.
	ThroughputRatio float64 `json:"throughput_ratio"`
}

// Anomalous reports whether any symptom was seen.
func (v Verdict) Anomalous() bool { return len(v.Symptoms) > 0 }

// loadedDirections returns whether the workload sends data into (rx) and
// out of (tx) host B. Loopback traffic loads rx only: its tx side never
// reaches the wire, so the wire bounds do not apply to it.
func loadedDirections(w Workload) (rx, tx bool) {
	for _, t := range w.Traffics {
		switch t.Direction {
		case Bi:
			rx, tx = true, true
		case Loopback:
			rx = true // loopback data never leaves on the wire
		default:
			if t.Opcode == "READ" {
				tx = true // READ data flows from the responder, host B
			} else {
				rx = true
			}
		}
	}
	return
}

// settle averages the samples after the first stable window and reports
// stability: leading samples are dropped (warm-up) while the rest varies by
// more than StableCV.
func (m Monitor) settle(met *Metrics) (Sample, bool) {
	cv := m.StableCV
	if cv == 0 {
		cv = 0.1
	}
	s := met.Samples
	if len(s) < 2 {
		return met.Sample, true
	}
	for start := 0; start+2 <= len(s); start++ {
		win := s[start:]
		var sum, sq float64
		for _, x := range win {
			v := x.TxGbps + x.RxGbps
			sum += v
			sq += v * v
		}
		n := float64(len(win))
		mean := sum / n
		sd := math.Sqrt(math.Max(0, sq/n-mean*mean))
		if mean == 0 || sd/mean <= cv {
			return mean4(win), true
		}
	}
	return mean4(s), false
}

func mean4(s []Sample) Sample {
	var out Sample
	for _, x := range s {
		out.TxGbps += x.TxGbps
		out.RxGbps += x.RxGbps
		out.TxMpps += x.TxMpps
		out.RxMpps += x.RxMpps
		out.PauseDurationRatio += x.PauseDurationRatio
	}
	n := float64(len(s))
	out.TxGbps /= n
	out.RxGbps /= n
	out.TxMpps /= n
	out.RxMpps /= n
	out.PauseDurationRatio /= n
	return out
}

// Check reads one experiment's metrics. When samples are present, met's
// averaged counters are replaced by the stable average.
func (m Monitor) Check(w Workload, met *Metrics) Verdict {
	avg, stable := m.settle(met)
	met.Sample = avg
	v := Verdict{Stable: stable, ThroughputRatio: 1}
	th := m.PauseThreshold
	if th == 0 {
		th = 0.001
	}
	if met.PauseDurationRatio > th {
		v.Symptoms = append(v.Symptoms, SymptomPause)
	}
	if m.LineGbps > 0 || m.LineMpps > 0 {
		tol := m.Tolerance
		if tol == 0 {
			tol = 0.2
		}
		ratio := func(gbps, mpps float64) float64 {
			r := 0.0
			if m.LineGbps > 0 {
				r = gbps / m.LineGbps
			}
			if m.LineMpps > 0 {
				r = math.Max(r, mpps/m.LineMpps)
			}
			return r
		}
		rx, tx := loadedDirections(w)
		if rx {
			v.ThroughputRatio = math.Min(v.ThroughputRatio, ratio(met.RxGbps, met.RxMpps))
		}
		if tx {
			v.ThroughputRatio = math.Min(v.ThroughputRatio, ratio(met.TxGbps, met.TxMpps))
		}
		if v.ThroughputRatio < 1-tol {
			v.Symptoms = append(v.Symptoms, SymptomLowThroughput)
		}
	}
	for _, s := range met.Symptoms {
		if !contains(v.Symptoms, s) {
			v.Symptoms = append(v.Symptoms, s)
		}
	}
	return v
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// CounterKind says which way the search drives a counter.
type CounterKind int

const (
	// Performance counters are minimised: ΔE = (B−A)/A.
	Performance CounterKind = iota + 1
	// Diagnostic counters are maximised: ΔE = (A−B)/B.
	Diagnostic
)

func (k CounterKind) String() string {
	switch k {
	case Performance:
		return "performance"
	case Diagnostic:
		return "diagnostic"
	}
	return fmt.Sprintf("CounterKind(%d)", int(k))
}

// Energy returns ΔE for a counter moving from a (current point) to b
// (candidate): (b−a)/a for performance counters, (a−b)/b for diagnostic
// counters. Negative is better. A zero denominator gives ±Inf (or 0 when
// nothing changed).
func Energy(k CounterKind, a, b float64) float64 {
	if a == b {
		return 0
	}
	num, den := b-a, a
	if k == Diagnostic {
		num, den = a-b, b
	}
	if den == 0 {
		return math.Copysign(math.Inf(1), num)
	}
	return num / math.Abs(den)
}

// Counter is one search target.
type Counter struct {
	Name string
	Kind CounterKind
}

// The monitor's own metrics as search counters.
const (
	CounterThroughputRatio = "throughput_ratio"     // performance counter, minimised
	CounterPauseRatio      = "pause_duration_ratio" // maximised
)

// counterValues lists the search targets of one experiment: the performance
// counter "throughput_ratio" (needs the line rates) and every diagnostic
// counter, pause_duration_ratio included.
func counterValues(met *Metrics, v Verdict, lineSet bool) map[Counter]float64 {
	out := map[Counter]float64{}
	if lineSet {
		out[Counter{CounterThroughputRatio, Performance}] = v.ThroughputRatio
	}
	out[Counter{CounterPauseRatio, Diagnostic}] = met.PauseDurationRatio
	for k, x := range met.Diag {
		out[Counter{k, Diagnostic}] = x
	}
	return out
}

// RankCounters orders counters by their dispersion std/mean over the given
// readings, largest first (§7.2). Counters with zero mean or no dispersion
// are left out; ties break by name.
func RankCounters(readings []map[Counter]float64) []Counter {
	sums := map[Counter][]float64{}
	for _, r := range readings {
		for c, v := range r {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				sums[c] = append(sums[c], v)
			}
		}
	}
	type ranked struct {
		c Counter
		d float64
	}
	var rs []ranked
	for c, v := range sums {
		var sum, sq float64
		for _, x := range v {
			sum += x
		}
		mean := sum / float64(len(v))
		for _, x := range v {
			sq += (x - mean) * (x - mean)
		}
		sd := math.Sqrt(sq / float64(len(v)))
		if mean <= 0 || sd == 0 {
			continue
		}
		rs = append(rs, ranked{c, sd / mean})
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].d != rs[j].d {
			return rs[i].d > rs[j].d
		}
		return rs[i].c.Name < rs[j].c.Name
	})
	out := make([]Counter, len(rs))
	for i, r := range rs {
		out[i] = r.c
	}
	return out
}
