package config

import "testing"

// TestEstimateFabric: every switch on a flow's route mirrors its packets,
// so a fabric's estimate counts each flow's packets once per switch of its
// route, and its PFC frames once per port that may pause (sent and
// received copies) plus the deadlock window's refreshes.
func TestEstimateFabric(t *testing.T) {
	tc, err := Load("../examples/fabric/pfc-deadlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want, hopsTotal int64
	for _, fl := range tc.Flows {
		hops := int64(len(tc.Route(tc.HostIndex(fl.From), tc.HostIndex(fl.To))))
		hopsTotal += hops
		want += fl.Traffic.estimate().Packets * hops
	}
	if hopsTotal != 3*int64(len(tc.Flows)) {
		t.Fatalf("deadlock example: %d switches over %d flows, want 3 per flow", hopsTotal, len(tc.Flows))
	}
	e := tc.Estimate()
	if e.Packets != want {
		t.Errorf("Estimate().Packets = %d, want %d (each flow's packets × the switches on its route)", e.Packets, want)
	}
	ports := int64(len(tc.Topology().Ports))
	if wantPFC := 2 * ports * (int64(tc.DeadlockMs)*1000/fastestRefreshUs + 1); e.PFCFrames != wantPFC {
		t.Errorf("Estimate().PFCFrames = %d, want %d (deadlock-ms %d over %d ports)", e.PFCFrames, wantPFC, tc.DeadlockMs, ports)
	}
}
