package suite

import (
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/orchestrator"
)

// Unit is the unit of a quantity; the absolute effect-size floors are per
// unit.
type Unit string

// Units.
const (
	UnitNs    Unit = "ns"
	UnitGbps  Unit = "Gb/s"
	UnitCount Unit = "count"
)

// Better says which direction of a shift is an improvement.
type Better int

// Directions. Neutral quantities only ever report a change.
const (
	Neutral Better = iota
	LowerIsBetter
	HigherIsBetter
)

// QuantitySpec describes one measured quantity of a suite summary.
type QuantitySpec struct {
	Name string
	Unit Unit
	// Better is the direction of an improvement.
	Better Better
	// PerRepeat: one value per repeat (otherwise one per event: a loss, a
	// timeout interval, a message).
	PerRepeat bool
	// Compare: lumina diff tests the quantity; otherwise it is only
	// summarized.
	Compare bool
	// AppearRegresses: the quantity appearing in NEW (absent from BASE) is a
	// regression, and its disappearance an improvement; otherwise both are
	// changes.
	AppearRegresses bool
	Doc             string
}

// Quantities lists every quantity a suite summary holds, in report order.
var Quantities = []QuantitySpec{
	{Name: "nack_generation_ns", Unit: UnitNs, Better: LowerIsBetter, Compare: true,
		Doc: "per fast-retransmitted loss: NAK (or READ re-issue) − next delivered packet"},
	{Name: "nack_reaction_ns", Unit: UnitNs, Better: LowerIsBetter, Compare: true,
		Doc: "per fast-retransmitted loss: retransmission − NAK"},
	{Name: "retransmission_ns", Unit: UnitNs, Better: LowerIsBetter, Compare: true,
		Doc: "per loss, any kind: retransmission − loss"},
	{Name: "timeout_interval_ns", Unit: UnitNs, Better: Neutral, Compare: true, AppearRegresses: true,
		Doc: "every interval of every timeout episode"},
	{Name: "timeout_retries", Unit: UnitCount, Better: Neutral, Compare: true, AppearRegresses: true,
		Doc: "per timeout episode: timeouts before progress"},
	{Name: "cnps_observed", Unit: UnitCount, Better: Neutral, PerRepeat: true, Compare: true,
		Doc: "per repeat: CNPs in the trace (when the cnp check ran)"},
	{Name: "cnps_expected_per_qp", Unit: UnitCount, PerRepeat: true, Doc: "per repeat: CNPs expected under per-QP pacing"},
	{Name: "cnps_expected_per_port", Unit: UnitCount, PerRepeat: true, Doc: "per repeat: CNPs expected under per-port pacing"},
	{Name: "cnps_expected_per_dest_ip", Unit: UnitCount, PerRepeat: true, Doc: "per repeat: CNPs expected under per-destination-IP pacing"},
	{Name: "cnps_expected_per_ip_pair", Unit: UnitCount, PerRepeat: true, Doc: "per repeat: CNPs expected under per-IP-pair pacing"},
	{Name: "message_completion_ns", Unit: UnitNs, Better: LowerIsBetter, Compare: true,
		Doc: "per message of every QP: completion time reported by the generator"},
	{Name: "goodput_gbps", Unit: UnitGbps, Better: HigherIsBetter, PerRepeat: true, Compare: true,
		Doc: "per repeat: the generator's goodput"},
}

// Spec returns the spec of the named quantity.
func Spec(name string) (QuantitySpec, bool) {
	for _, q := range Quantities {
		if q.Name == name {
			return q, true
		}
	}
	return QuantitySpec{}, false
}

// extract appends one valid repeat's measurements to vals.
func extract(r *orchestrator.Report, vals map[string][]float64) {
	add := func(name string, v float64) { vals[name] = append(vals[name], v) }
	if g := r.Generator; g != nil {
		add("goodput_gbps", g.GoodputGbps)
		for _, qp := range g.QPs {
			for _, m := range qp.MCTNs {
				add("message_completion_ns", float64(m))
			}
		}
	}
	a := r.Analysis
	if a == nil {
		return
	}
	for _, l := range a.Checks.Retransmission.Losses {
		if l.Kind == retransmission.KindFast {
			if l.NACKGenerationNs != nil {
				add("nack_generation_ns", float64(*l.NACKGenerationNs))
			}
			if l.NACKReactionNs != nil {
				add("nack_reaction_ns", float64(*l.NACKReactionNs))
			}
		}
		if l.RetransmissionNs != nil {
			add("retransmission_ns", float64(*l.RetransmissionNs))
		}
	}
	for _, t := range a.Checks.Timeout.Timeouts {
		for _, iv := range t.IntervalsNs {
			add("timeout_interval_ns", float64(iv))
		}
		add("timeout_retries", float64(t.Retries))
	}
	if c := &a.Checks.CNP; c.Verdict != model.Skip {
		add("cnps_observed", float64(c.Observed))
		add("cnps_expected_per_qp", float64(c.Expected.PerQP))
		add("cnps_expected_per_port", float64(c.Expected.PerPort))
		add("cnps_expected_per_dest_ip", float64(c.Expected.PerDestIP))
		add("cnps_expected_per_ip_pair", float64(c.Expected.PerIPPair))
	}
}

// Measure returns one valid repeat's quantities, by QuantitySpec name:
// what Summarize adds to its test's distributions (lumina run --format
// json prints them per repeat). Quantities not measured are absent.
func Measure(r *orchestrator.Report) map[string]*Dist {
	vals := map[string][]float64{}
	extract(r, vals)
	out := make(map[string]*Dist, len(vals))
	for _, q := range Quantities {
		if v := vals[q.Name]; len(v) > 0 {
			out[q.Name] = newDist(q.Unit, v)
		}
	}
	return out
}
