package tests

import (
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/internal/testutil"
)

// TestNetnsTopology runs the many-host examples on netns (docs/topology.md):
// each host a lumina agent in a namespace of its own. Each run is valid and
// no check fails (runRealTime; pfc and cnp may be inconclusive within the
// real-time testbed's timestamp uncertainty), every flow delivered every
// byte it was asked for, and the flows check passed. Which pauses or marks
// happen depends on the machine's timing, so they are not asserted here
// (TestIncastPFC, TestIncastECN and TestVictimFlow assert them on sim).
func TestNetnsTopology(t *testing.T) {
	testutil.RequireNetns(t)
	if testing.Short() {
		t.Skip("-short: the incast examples take about a minute of wall time at their netns-slowdown")
	}
	for _, name := range []string{"pairs", "bidirectional", "incast-pfc", "victim-flow", "incast-ecn"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "examples", name+".yaml")
			tc, err := config.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			_, dir := runRealTime(t, t.TempDir(), name, "--testbed", "netns", file)
			rep := readReport(t, dir)
			if rep.Generator == nil || len(rep.Generator.Flows) != len(tc.Flows) {
				t.Fatalf("report.json: generator %+v, want a result for each of %d flows", rep.Generator, len(tc.Flows))
			}
			for i, f := range rep.Generator.Flows {
				fl := tc.Flows[i]
				want := int64(fl.NumQPs) * int64(fl.NumMsgsPerQP) * int64(fl.MessageSize)
				if f.Name != fl.Name || f.Bytes != want || f.Stopped != "" {
					t.Errorf("generator.flows[%d] = %s, %d bytes, stopped %q; want %s, %d bytes, completed", i, f.Name, f.Bytes, f.Stopped, fl.Name, want)
				}
			}
			if got := rep.Checks["flows"].Verdict; got != model.Pass {
				t.Errorf("checks.flows = %q (%s), want pass", got, rep.Checks["flows"].Detail)
			}
		})
	}
}
