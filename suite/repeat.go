package suite

import (
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/orchestrator"
)

// Repeat is what one repeat contributes to a suite summary, in a form that
// can be stored (the results store keeps it as a row of its runs table)
// and summarized again by TestOf with the same result as summarizing the
// report.json files.
type Repeat struct {
	Test    string
	File    string
	Testbed string
	Seed    uint64
	Repeat  int
	// Dir is the repeat's directory, relative to the suite.
	Dir   string
	Valid bool
	// NIC is each traffic host's identity by role (zero identities left
	// out).
	NIC map[string]Identity
	// Checks is every check's verdict, of an invalid repeat too.
	Checks map[string]model.Verdict
	// The rest is only set for a valid repeat.
	//
	// Violations is the "side/rule" of each Go-back-N violation, in
	// report order; CountersOK and CountersMismatch the "nic/counter" of
	// each counter relation that agreed with the trace or not.
	Violations       []string
	CountersOK       []string
	CountersMismatch []string
	// CNPDecided: the cnp check ran and was not inconclusive; CNPScopes
	// are then the pacing scopes consistent with the trace.
	CNPDecided bool
	CNPScopes  []string
	// Quantities are this repeat's values of each quantity (Quantities),
	// in measurement order; quantities without a value are absent.
	Quantities map[string][]float64
}

// RepeatOf is what the report r, read from the directory dir (relative to
// the suite), contributes to its test's summary.
func RepeatOf(r *orchestrator.Report, dir string) Repeat {
	rp := Repeat{Test: r.Test, File: r.File, Testbed: r.Testbed, Seed: r.Seed, Repeat: r.Repeat, Dir: dir, Valid: r.Valid,
		NIC: map[string]Identity{}, Checks: map[string]model.Verdict{}, Quantities: map[string][]float64{}}
	for _, role := range r.NICHosts() {
		id := Identity{Personality: r.Personality[role]}
		if v, ok := r.NICVersions[role]; ok {
			id.Driver, id.DriverVersion, id.Firmware = v.Driver, v.DriverVersion, v.Firmware
		}
		if id != (Identity{}) {
			rp.NIC[role] = id
		}
	}
	for name, c := range r.Checks {
		rp.Checks[name] = c.Verdict
	}
	if !r.Valid {
		return rp
	}
	extract(r, rp.Quantities)
	a := r.Analysis
	if a == nil {
		return rp
	}
	for _, v := range a.Checks.GBN.Violations {
		rp.Violations = append(rp.Violations, v.Side+"/"+v.Rule)
	}
	for _, c := range a.Checks.Counters.Checked {
		if c.OK {
			rp.CountersOK = append(rp.CountersOK, c.NIC+"/"+c.Counter)
		} else {
			rp.CountersMismatch = append(rp.CountersMismatch, c.NIC+"/"+c.Counter)
		}
	}
	if v := a.Checks.CNP.Verdict; v != model.Skip && v != model.Inconclusive { // inconclusive: missing data
		rp.CNPDecided = true
		rp.CNPScopes = slices.Clone(a.Checks.CNP.ConsistentScopes)
	}
	return rp
}

// TestOf summarizes one test's repeats (in repeat order), as Read does
// from their report.json files.
func TestOf(reps []Repeat) *Test {
	first := reps[0]
	t := &Test{Name: first.Test, File: first.File, Testbed: first.Testbed, Seed: first.Seed, NIC: map[string]Identity{},
		Runs: []Run{}, Checks: map[string]*CheckSummary{}, Violations: map[string]*Count{}, Counters: map[string]*CounterSummary{},
		Quantities: map[string]*Dist{}}
	if t.Name == "" {
		t.Name = filepath.Dir(first.Dir)
	}
	vals := map[string][]float64{}
	var scopes []string
	cnpRan := false
	ids := map[string][]Identity{}
	for _, r := range reps {
		t.Repeats++
		run := Run{Repeat: r.Repeat, Dir: r.Dir, Valid: r.Valid}
		for _, role := range slices.Sorted(maps.Keys(r.NIC)) {
			if id := r.NIC[role]; !slices.Contains(ids[role], id) {
				ids[role] = append(ids[role], id)
			}
		}
		for name, v := range r.Checks {
			if !r.Valid && name != areport.CheckIntegrity {
				continue
			}
			cs := t.Checks[name]
			if cs == nil {
				cs = &CheckSummary{}
				t.Checks[name] = cs
			}
			switch v {
			case model.Pass:
				cs.Pass++
			case model.Fail:
				cs.Fail++
				run.Failed = append(run.Failed, name)
			case model.Inconclusive:
				cs.Inconclusive++
				run.Inconclusive = append(run.Inconclusive, name)
			default:
				cs.Skip++
			}
		}
		sort.Strings(run.Failed)
		sort.Strings(run.Inconclusive)
		t.Runs = append(t.Runs, run)
		if !r.Valid {
			continue
		}
		t.Valid++
		for _, q := range Quantities {
			vals[q.Name] = append(vals[q.Name], r.Quantities[q.Name]...)
		}
		seen := map[string]bool{}
		for _, k := range r.Violations {
			c := t.Violations[k]
			if c == nil {
				c = &Count{}
				t.Violations[k] = c
			}
			c.Total++
			if !seen[k] {
				seen[k] = true
				c.Repeats++
			}
		}
		counter := func(k string) *CounterSummary {
			cs := t.Counters[k]
			if cs == nil {
				cs = &CounterSummary{}
				t.Counters[k] = cs
			}
			return cs
		}
		for _, k := range r.CountersOK {
			counter(k).OK++
		}
		for _, k := range r.CountersMismatch {
			counter(k).Mismatch++
		}
		if r.CNPDecided {
			if !cnpRan {
				scopes, cnpRan = slices.Clone(r.CNPScopes), true
			} else {
				scopes = slices.DeleteFunc(scopes, func(s string) bool { return !slices.Contains(r.CNPScopes, s) })
			}
		}
	}
	for role, list := range ids {
		id := list[0]
		for _, o := range list[1:] {
			id.Personality = joinDistinct(id.Personality, o.Personality)
			id.Driver = joinDistinct(id.Driver, o.Driver)
			id.DriverVersion = joinDistinct(id.DriverVersion, o.DriverVersion)
			id.Firmware = joinDistinct(id.Firmware, o.Firmware)
		}
		t.NIC[role] = id
	}
	if cnpRan {
		t.CNPScopes = orderScopes(scopes)
	}
	for _, q := range Quantities {
		if v := vals[q.Name]; len(v) > 0 {
			t.Quantities[q.Name] = newDist(q.Unit, v)
		}
	}
	return t
}
