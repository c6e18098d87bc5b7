package report

import (
	"maps"
	"slices"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
)

// Outcomes names the selectable checks always and the others only when
// they ran, with their verdict and reason: what a run's report.json copies
// into its checks.
func TestOutcomes(t *testing.T) {
	var r Report
	for _, c := range AllChecks {
		r.Checks.Skip(c, "why")
	}
	r.Checks.GBN.Verdict, r.Checks.GBN.Reason = model.Fail, "2 violations"
	got := r.Outcomes()
	if want := slices.Sorted(slices.Values(AllChecks)); !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
		t.Fatalf("Outcomes names %v, want %v", slices.Sorted(maps.Keys(got)), want)
	}
	if got[CheckGBN] != (Outcome{model.Fail, "2 violations"}) || got[CheckCNP] != (Outcome{model.Skip, "why"}) {
		t.Errorf("Outcomes = %+v", got)
	}
	r.PFC.Verdict, r.PFC.Reason = model.Inconclusive, "within uncertainty"
	r.Checks.RNR.Verdict = model.Pass
	got = r.Outcomes()
	if got[CheckPFC] != (Outcome{model.Inconclusive, "within uncertainty"}) || got[CheckRNR] != (Outcome{Verdict: model.Pass}) || len(got) != len(AllChecks)+2 {
		t.Errorf("with pfc and rnr: Outcomes = %+v", got)
	}
	for name, v := range r.Checks.Verdicts() {
		if got[name].Verdict != v {
			t.Errorf("Verdicts[%s] = %s, Outcomes %s", name, v, got[name].Verdict)
		}
	}
}
