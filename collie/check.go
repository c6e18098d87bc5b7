package collie

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// CheckResult tells whether an application's restricted space intersects
// one known anomaly's MFS (the paper's anomaly prevention, §5.2).
type CheckResult struct {
	Anomaly    string `json:"anomaly"`
	Symptom    string `json:"symptom"`
	MFS        MFS    `json:"mfs"`
	Intersects bool   `json:"intersects"`
	// Witness is a workload of the application space inside the MFS.
	Witness *Workload `json:"witness,omitempty"`
	// Break lists the conditions the application can break, one of which
	// suffices, each with the values of its space that avoid it.
	Break []string `json:"break,omitempty"`
	// Reason explains why there is no intersection.
	Reason string `json:"reason,omitempty"`
}

// CheckSpace checks an application space against known anomalies. An
// anomaly without an MFS (an incomplete search) is reported as not checked.
// The search for a witness is seeded and deterministic.
func CheckSpace(app *Space, anomalies []Anomaly) []CheckResult {
	var out []CheckResult
	for _, a := range anomalies {
		r := CheckResult{Anomaly: a.ID, Symptom: a.Symptom, MFS: a.MFS}
		switch {
		case a.MFS == nil:
			r.Reason = "no MFS recorded (incomplete search); not checked"
		case len(a.MFS) > app.MaxTraffics:
			r.Reason = fmt.Sprintf("needs %d traffics; the space has at most %d", len(a.MFS), app.MaxTraffics)
		default:
			r.Intersects, r.Witness, r.Reason = app.witness(a.MFS)
			if r.Intersects {
				r.Break = app.breakers(a.MFS)
			}
		}
		out = append(out, r)
	}
	return out
}

// restrict returns the space narrowed to one MFS entry, or a reason it is
// empty.
func (s *Space) restrict(c Conds) (*Space, string) {
	n := *s
	n.MaxTraffics = 1
	strs := func(name string, v []string) ([]string, string) {
		cond, ok := c[name]
		if !ok {
			return v, ""
		}
		var out []string
		for _, x := range v {
			if cond.HoldsStr(x) {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Sprintf("%s %s excluded: the space allows %s", name, cond, strings.Join(v, ", "))
		}
		return out, ""
	}
	ints := func(name string, r IntRange) (IntRange, string) {
		cond, ok := c[name]
		if !ok {
			return r, ""
		}
		var lv []int64
		for _, x := range r.Levels() {
			if cond.HoldsInt(x) {
				lv = append(lv, x)
			}
		}
		if len(r.Values) == 0 && cond.isRange() {
			lo, hi := r.Min, r.Max
			if cond.Min != nil {
				lo = max(lo, *cond.Min)
			}
			if cond.Max != nil {
				hi = min(hi, *cond.Max)
			}
			if lo <= hi {
				return IntRange{Min: lo, Max: hi}, ""
			}
		} else if len(lv) > 0 {
			return IntRange{Values: lv}, ""
		}
		return r, fmt.Sprintf("%s %s excluded: the space allows %s", name, cond, rangeText(r))
	}
	var why string
	var r string
	if n.Directions, r = strs("direction", s.Directions); r != "" {
		why = r
	}
	if n.Memory, r = strs("memory", s.Memory); r != "" && why == "" {
		why = r
	}
	if n.QPTypes, r = strs("qp_type", s.QPTypes); r != "" && why == "" {
		why = r
	}
	if n.Opcodes, r = strs("opcode", s.Opcodes); r != "" && why == "" {
		why = r
	}
	for _, x := range []struct {
		name string
		r    *IntRange
	}{{"mtu", &n.MTU}, {"num_qps", &n.NumQPs}, {"num_mrs", &n.NumMRs}, {"mr_size", &n.MRSize},
		{"wq_depth", &n.WQDepth}, {"wqe_batch", &n.WQEBatch}, {"sge_per_wqe", &n.SGEPerWQE}} {
		if *x.r, r = ints(x.name, *x.r); r != "" && why == "" {
			why = r
		}
	}
	m := s.MessageSizes
	msg := IntRange{Min: m.Min, Max: m.Max}
	for _, d := range []string{"msg_size_max", "msg_size_min"} {
		if cond, ok := c[d]; ok {
			if cond.Ints != nil || cond.Strs != nil {
				continue // exact values: left to the witness draws
			}
			if (cond.Min != nil && *cond.Min > m.Max) || (cond.Max != nil && *cond.Max < m.Min) {
				if why == "" {
					why = fmt.Sprintf("%s %s excluded: the space allows %s", d, cond, rangeText(msg))
				}
			}
		}
	}
	if cond, ok := c["msg_size_max"]; ok && cond.Max != nil {
		n.MessageSizes.Max = max(m.Min, min(m.Max, *cond.Max))
	}
	if cond, ok := c["msg_size_min"]; ok && cond.Min != nil {
		n.MessageSizes.Min = min(n.MessageSizes.Max, max(m.Min, *cond.Min))
	}
	return &n, why
}

func rangeText(r IntRange) string {
	if len(r.Values) > 0 {
		s := make([]string, len(r.Values))
		for i, v := range r.Values {
			s[i] = fmt.Sprint(v)
		}
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%d..%d", r.Min, r.Max)
}

// witness looks for a workload of s inside m: per entry it draws from the
// space narrowed to the entry's conditions and keeps a draw that is valid in
// s and matches.
func (s *Space) witness(m MFS) (bool, *Workload, string) {
	r := rand.New(rand.NewPCG(1, 2))
	w := Workload{}
	for _, c := range m {
		ns, why := s.restrict(c)
		if why != "" {
			return false, nil, why
		}
		found := false
		for try := 0; try < 2000 && !found; try++ {
			t := ns.randomTraffic(r)
			if s.validateTraffic(&t) == nil && c.MatchTraffic(&t) {
				w.Traffics = append(w.Traffics, t)
				found = true
			}
		}
		if !found {
			return false, nil, "every dimension overlaps, but no workload of the space satisfies all conditions together (constraints)"
		}
	}
	if !m.Match(w) || s.Validate(w) != nil {
		return false, nil, "no valid combined workload found"
	}
	return true, &w, ""
}

// breakers lists, for each condition, how the application can avoid it.
func (s *Space) breakers(m MFS) []string {
	var out []string
	for i, c := range m {
		for _, d := range slices.Sorted(maps.Keys(c)) {
			cond := c[d]
			prefix := d
			if len(m) > 1 {
				prefix = fmt.Sprintf("traffic %d %s", i, d)
			}
			if alt := s.outside(d, cond); alt != "" {
				out = append(out, fmt.Sprintf("%s %s: use %s instead", prefix, cond, alt))
			}
		}
	}
	if len(out) == 0 {
		out = []string{"none: every condition holds throughout this space; the design must change"}
	}
	return out
}

// outside describes the values of dimension d in s that violate cond, or ""
// when there are none.
func (s *Space) outside(d string, cond Cond) string {
	var strs []string
	switch d {
	case "direction":
		strs = s.Directions
	case "memory":
		strs = s.Memory
	case "qp_type":
		strs = s.QPTypes
	case "opcode":
		strs = s.Opcodes
	}
	if strs != nil {
		var alt []string
		for _, v := range strs {
			if !cond.HoldsStr(v) {
				alt = append(alt, v)
			}
		}
		return strings.Join(alt, ", ")
	}
	r := IntRange{}
	switch nd, ok := numDims[d]; {
	case ok:
		r = nd.rng(s)
	case d == "msg_size_max", d == "msg_size_min":
		r = IntRange{Min: s.MessageSizes.Min, Max: s.MessageSizes.Max}
	case d == "msg_count":
		r = IntRange{Min: 1, Max: int64(s.MessageSizes.MaxLen)}
	default:
		return "other values"
	}
	if len(r.Values) > 0 || !cond.isRange() {
		var alt []string
		for _, v := range r.Levels() {
			if !cond.HoldsInt(v) {
				alt = append(alt, fmt.Sprint(v))
			}
		}
		return strings.Join(alt, ", ")
	}
	var parts []string
	if cond.Min != nil && *cond.Min > r.Min {
		parts = append(parts, fmt.Sprintf("%s < %d", d, *cond.Min))
	}
	if cond.Max != nil && *cond.Max < r.Max && *cond.Max < math.MaxInt64 {
		parts = append(parts, fmt.Sprintf("%s > %d", d, *cond.Max))
	}
	return strings.Join(parts, " or ")
}
