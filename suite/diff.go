package suite

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
)

// DiffSchema names the JSON form of a Diff. Fields are only ever added.
const DiffSchema = "lumina.diff/v1"

// Method is the two-sample test applied to each quantity.
type Method string

// Methods.
const (
	// MethodMannWhitney is the two-sided Mann-Whitney U test (exact for small
	// samples, normal approximation with tie correction otherwise).
	MethodMannWhitney Method = "mannwhitney"
	// MethodBootstrap is the percentile bootstrap of the median difference: the
	// shift is significant when the (1 − alpha) interval excludes 0.
	MethodBootstrap Method = "bootstrap"
)

// Options configure Compare. The zero value is usable: every field
// documents its default.
type Options struct {
	// Alpha is the significance level of each quantity's test. Default 0.05.
	Alpha float64 `json:"alpha"`
	// Method is the test. Default MethodMannWhitney.
	Method Method `json:"method"`
	// Holm applies the Holm–Bonferroni correction across the compared
	// quantities of one test, bounding that test's family-wise false
	// positive rate by Alpha. Default false: each quantity is tested
	// separately at Alpha.
	Holm bool `json:"holm"`
	// MinRelShift is the smallest relative median shift, |Δmedian| /
	// |BASE median|, worth flagging. Default 0.10; negative: no minimum.
	MinRelShift float64 `json:"min_rel_shift"`
	// MinAbsNs, MinAbsGbps and MinAbsCount are the smallest absolute median
	// shifts worth flagging for quantities in ns, Gb/s and counts.
	// Defaults 1000 (1 µs), 0.1 and 1; negative: no minimum.
	MinAbsNs    float64 `json:"min_abs_ns"`
	MinAbsGbps  float64 `json:"min_abs_gbps"`
	MinAbsCount float64 `json:"min_abs_count"`
	// Resamples is the number of bootstrap resamples (the confidence
	// interval is always computed; with Method Bootstrap it also decides).
	// Default 2000.
	Resamples int `json:"resamples"`
	// Seed seeds the bootstrap; each (test, quantity) gets its own stream
	// derived from it, so results do not depend on what else is compared.
	// Default 0 (a seed like any other).
	Seed uint64 `json:"seed"`
}

func (o Options) resolved() Options {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = 0.05
	}
	if o.Method == "" {
		o.Method = MethodMannWhitney
	}
	def := func(v *float64, d float64) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	def(&o.MinRelShift, 0.10)
	def(&o.MinAbsNs, 1000)
	def(&o.MinAbsGbps, 0.1)
	def(&o.MinAbsCount, 1)
	if o.Resamples <= 0 {
		o.Resamples = 2000
	}
	return o
}

func (o Options) minAbs(u Unit) float64 {
	switch u {
	case UnitNs:
		return o.MinAbsNs
	case UnitGbps:
		return o.MinAbsGbps
	}
	return o.MinAbsCount
}

// Class is what a finding means for the NIC under test.
type Class string

// Classes. Only regressions make `lumina diff` exit 1 (by default).
const (
	Regression  Class = "regression"
	Improvement Class = "improvement"
	Change      Class = "change"
)

// Kind is what a finding is about.
type Kind string

// Kinds.
const (
	KindVerdict   Kind = "verdict"   // a check's verdict changed
	KindViolation Kind = "violation" // a Go-back-N violation (de)appeared
	KindQuantity  Kind = "quantity"  // a measured quantity shifted, appeared or disappeared
	KindCNPScope  Kind = "cnp-scope" // the consistent CNP pacing scopes changed
	KindCounter   Kind = "counter"   // a counter relation broke or was repaired
	KindTest      Kind = "test"      // a test is missing on one side, or has no valid repeat
)

// Finding is one difference between BASE and NEW.
type Finding struct {
	Test    string `json:"test"`
	Kind    Kind   `json:"kind"`
	Class   Class  `json:"class"`
	Subject string `json:"subject"`
	Base    string `json:"base"`
	New     string `json:"new"`
	Detail  string `json:"detail,omitempty"`
}

// Quantity statuses.
const (
	StatusRegression   = "regression"
	StatusImprovement  = "improvement"
	StatusChange       = "change"
	StatusUnchanged    = "unchanged"    // not significant
	StatusSmall        = "small"        // significant, below the minimum effect
	StatusUnderpowered = "underpowered" // a large shift, but too few samples to ever be significant
	StatusAppeared     = "appeared"
	StatusDisappeared  = "disappeared"
)

// QuantityDiff is the comparison of one quantity of one test.
type QuantityDiff struct {
	Name       string  `json:"name"`
	Unit       Unit    `json:"unit"`
	BaseN      int     `json:"base_n"`
	NewN       int     `json:"new_n"`
	BaseMedian float64 `json:"base_median"`
	NewMedian  float64 `json:"new_median"`
	// Shift is NewMedian − BaseMedian; RelShift is Shift / |BaseMedian|,
	// null when BaseMedian is 0.
	Shift    float64  `json:"shift"`
	RelShift *float64 `json:"rel_shift"`
	// CILo and CIHi bound the bootstrap (1 − alpha) confidence interval of
	// the median shift.
	CILo float64 `json:"ci_lo"`
	CIHi float64 `json:"ci_hi"`
	// P is the method's two-sided p-value, PAdj the Holm-adjusted one
	// (equal to P without Holm). MinP is the smallest p-value the sample
	// sizes allow (Mann-Whitney).
	P     float64 `json:"p"`
	PAdj  float64 `json:"p_adj"`
	MinP  float64 `json:"min_p"`
	Exact bool    `json:"exact"`
	// Significant: PAdj < alpha. Large: the shift meets both minimum
	// effect sizes.
	Significant bool   `json:"significant"`
	Large       bool   `json:"large"`
	Status      string `json:"status"`
}

// CheckDiff is one check's verdicts on both sides.
type CheckDiff struct {
	Name string        `json:"name"`
	Base *CheckSummary `json:"base"`
	New  *CheckSummary `json:"new"`
}

// TestDiff compares one test.
type TestDiff struct {
	Name string `json:"name"`
	// NewName is NEW's test name when it differs (two single tests
	// compared).
	NewName    string              `json:"new_name,omitempty"`
	BaseNIC    map[string]Identity `json:"base_nic,omitempty"`
	NewNIC     map[string]Identity `json:"new_nic,omitempty"`
	BaseValid  string              `json:"base_valid"` // "valid/repeats", "" when absent
	NewValid   string              `json:"new_valid"`
	Checks     []CheckDiff         `json:"checks"`
	Quantities []QuantityDiff      `json:"quantities"`
	BaseScopes []string            `json:"base_cnp_scopes"`
	NewScopes  []string            `json:"new_cnp_scopes"`
	Findings   []Finding           `json:"findings"`

	base, new *Test
}

// Diff is the comparison of a BASE suite with a NEW one.
type Diff struct {
	Schema       string      `json:"schema"`
	Base         string      `json:"base"`
	New          string      `json:"new"`
	Options      Options     `json:"options"`
	Tests        []*TestDiff `json:"tests"`
	Findings     []Finding   `json:"findings"`
	Regressions  int         `json:"regressions"`
	Improvements int         `json:"improvements"`
	Changes      int         `json:"changes"`
}

// Regressed reports whether any finding is a regression.
func (d *Diff) Regressed() bool { return d.Regressions > 0 }

// MarshalIndent returns the diff as indented JSON with a final newline.
func (d *Diff) MarshalIndent() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Compare compares two suites test by test (by name; two suites of one
// test each are compared even if the names differ).
func Compare(base, new *Suite, o Options) *Diff {
	o = o.resolved()
	d := &Diff{Schema: DiffSchema, Base: base.Dir, New: new.Dir, Options: o, Tests: []*TestDiff{}, Findings: []Finding{}}
	type pair struct{ b, n *Test }
	var pairs []pair
	if len(base.Tests) == 1 && len(new.Tests) == 1 {
		pairs = append(pairs, pair{base.Tests[0], new.Tests[0]})
	} else {
		byName := map[string]*pair{}
		var names []string
		for _, t := range base.Tests {
			byName[t.Name] = &pair{b: t}
			names = append(names, t.Name)
		}
		for _, t := range new.Tests {
			if p := byName[t.Name]; p != nil {
				p.n = t
				continue
			}
			byName[t.Name] = &pair{n: t}
			names = append(names, t.Name)
		}
		sort.Strings(names)
		for _, n := range names {
			pairs = append(pairs, *byName[n])
		}
	}
	for _, p := range pairs {
		td := compareTest(p.b, p.n, o)
		d.Tests = append(d.Tests, td)
		d.Findings = append(d.Findings, td.Findings...)
	}
	for _, f := range d.Findings {
		switch f.Class {
		case Regression:
			d.Regressions++
		case Improvement:
			d.Improvements++
		default:
			d.Changes++
		}
	}
	return d
}

func validStr(t *Test) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", t.Valid, t.Repeats)
}

func compareTest(b, n *Test, o Options) *TestDiff {
	td := &TestDiff{base: b, new: n, Checks: []CheckDiff{}, Quantities: []QuantityDiff{}, Findings: []Finding{},
		BaseValid: validStr(b), NewValid: validStr(n)}
	switch {
	case b == nil:
		td.Name = n.Name
		td.NewNIC = n.NIC
		td.add(KindTest, Change, "test", "absent", validStr(n)+" valid repeats", "only in NEW: nothing to compare")
		return td
	case n == nil:
		td.Name = b.Name
		td.BaseNIC = b.NIC
		td.add(KindTest, Change, "test", validStr(b)+" valid repeats", "absent", "only in BASE: nothing to compare")
		return td
	}
	td.Name, td.BaseNIC, td.NewNIC = b.Name, b.NIC, n.NIC
	if n.Name != b.Name {
		td.NewName = n.Name
	}
	td.BaseScopes, td.NewScopes = b.CNPScopes, n.CNPScopes
	td.compareChecks(b, n)
	if b.Valid == 0 || n.Valid == 0 {
		side := "NEW"
		if b.Valid == 0 {
			side = "BASE"
		}
		td.add(KindTest, Change, "valid repeats", validStr(b), validStr(n), "no valid repeat in "+side+": behaviour not compared")
		return td
	}
	td.compareViolations(b, n)
	td.compareCounters(b, n)
	if b.CNPScopes != nil && n.CNPScopes != nil && !slices.Equal(b.CNPScopes, n.CNPScopes) {
		td.add(KindCNPScope, Change, "cnp pacing scope", scopesStr(b.CNPScopes), scopesStr(n.CNPScopes),
			"the pacing domains consistent with the observed CNPs changed")
	}
	td.compareQuantities(b, n, o)
	return td
}

func scopesStr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (td *TestDiff) add(k Kind, c Class, subject, base, new, detail string) {
	td.Findings = append(td.Findings, Finding{Test: td.Name, Kind: k, Class: c, Subject: subject, Base: base, New: new, Detail: detail})
}

var severity = map[model.Verdict]int{model.Pass: 0, Mixed: 1, model.Fail: 2}

func (td *TestDiff) compareChecks(b, n *Test) {
	var names []string
	for k := range b.Checks {
		names = append(names, k)
	}
	for k := range n.Checks {
		if _, ok := b.Checks[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		bc, nc := b.Checks[name], n.Checks[name]
		td.Checks = append(td.Checks, CheckDiff{Name: name, Base: bc, New: nc})
		bv, nv := model.Skip, model.Skip
		if bc != nil {
			bv = bc.Verdict()
		}
		if nc != nil {
			nv = nc.Verdict()
		}
		if bv == nv || (name != areport.CheckIntegrity && (b.Valid == 0 || n.Valid == 0)) {
			continue // only valid repeats run the other checks
		}
		bs := fmt.Sprintf("%s (%s)", bv, countsStr(bc))
		ns := fmt.Sprintf("%s (%s)", nv, countsStr(nc))
		missing := func(v model.Verdict) bool { return v == model.Skip || v == model.Inconclusive }
		switch {
		case name == areport.CheckIntegrity:
			td.add(KindVerdict, Change, name, bs, ns, "trace integrity is the testbed's, not the NIC's: invalid repeats are not compared")
		case missing(bv) && missing(nv):
			continue // no data on either side: nothing to compare
		case bv == model.Inconclusive && nv != model.Pass:
			td.add(KindVerdict, Regression, name, bs, ns, "the check now decides and fails (BASE was inconclusive: missing data)")
		case bv == model.Inconclusive || nv == model.Inconclusive:
			td.add(KindVerdict, Change, name, bs, ns, "inconclusive (within the timestamp uncertainty) is missing data: not compared")
		case bv == model.Skip && nv != model.Pass:
			td.add(KindVerdict, Regression, name, bs, ns, "the check now runs and fails")
		case bv == model.Skip || nv == model.Skip:
			td.add(KindVerdict, Change, name, bs, ns, "")
		case severity[nv] > severity[bv]:
			td.add(KindVerdict, Regression, name, bs, ns, "")
		default:
			td.add(KindVerdict, Improvement, name, bs, ns, "")
		}
	}
}

func countsStr(c *CheckSummary) string {
	if c == nil {
		return "not run"
	}
	var p []string
	for _, x := range []struct {
		n int
		s string
	}{{c.Pass, "pass"}, {c.Fail, "fail"}, {c.Inconclusive, "inconclusive"}, {c.Skip, "skip"}} {
		if x.n > 0 {
			p = append(p, fmt.Sprintf("%d %s", x.n, x.s))
		}
	}
	if len(p) == 0 {
		return "none"
	}
	return strings.Join(p, ", ")
}

func (td *TestDiff) compareViolations(b, n *Test) {
	ran := func(t *Test) bool { c := t.Checks["gbn"]; return c != nil && c.Pass+c.Fail > 0 }
	if !ran(b) || !ran(n) {
		return
	}
	keys := map[string]bool{}
	for k := range b.Violations {
		keys[k] = true
	}
	for k := range n.Violations {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		bc, nc := b.Violations[k], n.Violations[k]
		bs, ns := violStr(bc, b.Valid), violStr(nc, n.Valid)
		switch {
		case (bc == nil || bc.Total == 0) && nc != nil && nc.Total > 0:
			td.add(KindViolation, Regression, k, bs, ns, "Go-back-N violation appeared")
		case bc != nil && bc.Total > 0 && (nc == nil || nc.Total == 0):
			td.add(KindViolation, Improvement, k, bs, ns, "Go-back-N violation disappeared")
		}
	}
}

func violStr(c *Count, valid int) string {
	if c == nil || c.Total == 0 {
		return "none"
	}
	return fmt.Sprintf("%d in %d of %d repeats", c.Total, c.Repeats, valid)
}

func (td *TestDiff) compareCounters(b, n *Test) {
	keys := map[string]bool{}
	for k := range b.Counters {
		keys[k] = true
	}
	for k := range n.Counters {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		bc, nc := b.Counters[k], n.Counters[k]
		if bc == nil || nc == nil {
			continue // compared on one side only
		}
		bs := fmt.Sprintf("agrees in %d of %d repeats", bc.OK, bc.OK+bc.Mismatch)
		ns := fmt.Sprintf("agrees in %d of %d repeats", nc.OK, nc.OK+nc.Mismatch)
		switch {
		case bc.Mismatch == 0 && nc.Mismatch > 0:
			td.add(KindCounter, Regression, k, bs, ns, "the counter no longer agrees with the trace")
		case bc.Mismatch > 0 && nc.Mismatch == 0:
			td.add(KindCounter, Improvement, k, bs, ns, "the counter now agrees with the trace")
		}
	}
}

func (td *TestDiff) compareQuantities(b, n *Test, o Options) {
	var tested []int // indices into td.Quantities with a p-value
	for _, q := range Quantities {
		if !q.Compare {
			continue
		}
		bd, nd := b.Quantities[q.Name], n.Quantities[q.Name]
		if bd == nil && nd == nil {
			continue
		}
		qd := QuantityDiff{Name: q.Name, Unit: q.Unit, P: 1, PAdj: 1, MinP: 1}
		if bd != nil {
			qd.BaseN, qd.BaseMedian = bd.N, bd.Median
		}
		if nd != nil {
			qd.NewN, qd.NewMedian = nd.N, nd.Median
		}
		if bd == nil || nd == nil {
			qd.Status = StatusAppeared
			if nd == nil {
				qd.Status = StatusDisappeared
			}
			td.Quantities = append(td.Quantities, qd)
			continue
		}
		qd.Shift = nd.Median - bd.Median
		if bd.Median != 0 {
			r := qd.Shift / math.Abs(bd.Median)
			qd.RelShift = &r
		}
		rng := rand.New(rand.NewPCG(o.Seed, streamOf(td.Name, q.Name)))
		bs := BootstrapMedianDiff(bd.Values, nd.Values, o.Resamples, o.Alpha, rng)
		qd.CILo, qd.CIHi = bs.Lo, bs.Hi
		switch o.Method {
		case MethodBootstrap:
			qd.P, qd.MinP = bs.P, 0
			if min(bd.N, nd.N) < minBootstrapN {
				qd.MinP = 1
			}
		default:
			mw := MannWhitney(bd.Values, nd.Values)
			qd.P, qd.MinP, qd.Exact = mw.P, mw.MinP, mw.Exact
		}
		qd.PAdj = qd.P
		qd.Large = math.Abs(qd.Shift) >= o.minAbs(q.Unit) && qd.Shift != 0 &&
			(qd.RelShift == nil || math.Abs(*qd.RelShift) >= o.MinRelShift)
		td.Quantities = append(td.Quantities, qd)
		tested = append(tested, len(td.Quantities)-1)
	}
	if o.Holm && len(tested) > 1 {
		ps := make([]float64, len(tested))
		for i, k := range tested {
			ps[i] = td.Quantities[k].P
		}
		for i, p := range Holm(ps) {
			td.Quantities[tested[i]].PAdj = p
		}
	}
	for i := range td.Quantities {
		qd := &td.Quantities[i]
		spec, _ := Spec(qd.Name)
		if qd.Status == StatusAppeared || qd.Status == StatusDisappeared {
			c := Change
			if spec.AppearRegresses {
				c = Regression
				if qd.Status == StatusDisappeared {
					c = Improvement
				}
			}
			bs, ns := "none", "none"
			if qd.BaseN > 0 {
				bs = fmt.Sprintf("median %s (n=%d)", FormatValue(qd.BaseMedian, qd.Unit), qd.BaseN)
			}
			if qd.NewN > 0 {
				ns = fmt.Sprintf("median %s (n=%d)", FormatValue(qd.NewMedian, qd.Unit), qd.NewN)
			}
			td.add(KindQuantity, c, qd.Name, bs, ns, qd.Status)
			continue
		}
		qd.Significant = qd.PAdj < o.Alpha
		switch {
		case qd.Significant && qd.Large:
			c := Change
			switch {
			case spec.Better == LowerIsBetter && qd.Shift > 0, spec.Better == HigherIsBetter && qd.Shift < 0:
				c = Regression
			case spec.Better != Neutral:
				c = Improvement
			}
			qd.Status = string(c)
			td.add(KindQuantity, c, qd.Name, fmt.Sprintf("median %s (n=%d)", FormatValue(qd.BaseMedian, qd.Unit), qd.BaseN),
				fmt.Sprintf("median %s (n=%d)", FormatValue(qd.NewMedian, qd.Unit), qd.NewN), qd.Summary(o))
		case qd.Significant:
			qd.Status = StatusSmall
		case qd.Large && qd.MinP >= o.Alpha:
			qd.Status = StatusUnderpowered
		default:
			qd.Status = StatusUnchanged
		}
	}
}

// minBootstrapN is the smallest sample the bootstrap method decides on.
const minBootstrapN = 5

// streamOf derives a bootstrap stream from the test and quantity names.
func streamOf(test, quantity string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(test))
	h.Write([]byte{0})
	h.Write([]byte(quantity))
	return h.Sum64()
}

// Summary is "shift +172.3 µs (+4212%), 95% CI [+170.1 µs, +174.9 µs], p = 1.2e-30".
func (qd *QuantityDiff) Summary(o Options) string {
	o = o.resolved()
	rel := ""
	if qd.RelShift != nil {
		rel = fmt.Sprintf(" (%+.1f%%)", *qd.RelShift*100)
	}
	p := fmt.Sprintf("p = %s", formatP(qd.P))
	if qd.PAdj != qd.P {
		p += fmt.Sprintf(", Holm-adjusted %s", formatP(qd.PAdj))
	}
	return fmt.Sprintf("shift %s%s, %g%% CI [%s, %s], %s", FormatShift(qd.Shift, qd.Unit), rel, 100*(1-o.Alpha),
		FormatShift(qd.CILo, qd.Unit), FormatShift(qd.CIHi, qd.Unit), p)
}

func formatP(p float64) string {
	if p < 1e-4 {
		return fmt.Sprintf("%.1e", p)
	}
	return fmt.Sprintf("%.4f", p)
}

// FormatValue renders v in unit u: durations with an SI prefix and four
// significant digits ("4.092 µs"), goodput in Gb/s, counts as numbers.
func FormatValue(v float64, u Unit) string {
	switch u {
	case UnitNs:
		a := math.Abs(v)
		switch {
		case a >= 1e9:
			return fmt.Sprintf("%.4g s", v/1e9)
		case a >= 1e6:
			return fmt.Sprintf("%.4g ms", v/1e6)
		case a >= 1e3:
			return fmt.Sprintf("%.4g µs", v/1e3)
		}
		return fmt.Sprintf("%.4g ns", v)
	case UnitGbps:
		return fmt.Sprintf("%.4g Gb/s", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// FormatShift is FormatValue with an explicit sign.
func FormatShift(v float64, u Unit) string {
	if v >= 0 {
		return "+" + FormatValue(v, u)
	}
	return FormatValue(v, u)
}
