package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// incastLossy is issue #30's incast on the lossy priority 0 (flows without
// dscp-list) into a cx6 with PFC configured: r's receive buffer overflows
// and discards frames the switch forwarded.
const incastLossy = `name: incast-lossy
seed: 1
hosts:
  h1: {nic: {personality: cx6, ip-list: [10.0.0.1/24], pfc: {priorities: [3]}}}
  h2: {nic: {personality: cx6, ip-list: [10.0.0.2/24], pfc: {priorities: [3]}}}
  r:  {nic: {personality: cx6, ip-list: [10.0.0.3/24], pfc: {priorities: [3]}}}
flows:
  - {name: a, from: h1, to: r, rdma-verb: write, num-qps: 1, message-size: 1048576, num-msgs-per-qp: 4, mtu: 1024}
  - {name: b, from: h2, to: r, rdma-verb: write, num-qps: 1, message-size: 1048576, num-msgs-per-qp: 4, mtu: 1024}
`

// TestIncastLossyDiscards: the run is valid, the checks that depend on
// what r's NIC received are inconclusive with the discards as the reason
// (before: gbn failed with 12 violations, counters with 3 mismatches),
// and no check fails.
func TestIncastLossyDiscards(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "incast-lossy.yaml")
	if err := os.WriteFile(file, []byte(incastLossy), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := invokeExit(0, "run", "-q", "-o", tmp, file)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "incast-lossy", "0")
	if want := "incast-lossy repeat 0: valid, all checks pass (inconclusive: counters, gbn, retransmission, timeout) → " + dir + "\n"; r.stdout != want {
		t.Fatalf("stdout = %q, want %q", r.stdout, want)
	}
	rep := readReport(t, dir)
	c := rep.Analysis.Checks
	var discards int64 = -1
	for _, k := range c.Counters.Checked {
		if k.NIC == "r" && k.Counter == "rx_discards_phy" {
			discards = k.Value
		}
	}
	if discards != 5309 {
		t.Fatalf("r's rx_discards_phy = %d, want 5309", discards)
	}
	const why = "r's NIC discarded 5309 frames in its receive buffer (rx_discards_phy) that the trace shows delivered: what it received is unknown (connections 0, 1)"
	for _, x := range []struct{ name, verdict, reason, want, wantReason string }{
		{"gbn", string(c.GBN.Verdict), c.GBN.Reason, "inconclusive", why},
		{"retransmission", string(c.Retransmission.Verdict), c.Retransmission.Reason, "inconclusive", why},
		{"timeout", string(c.Timeout.Verdict), c.Timeout.Reason, "inconclusive", why},
		{"counters", string(c.Counters.Verdict), c.Counters.Reason, "inconclusive", why + "; 3 counters disagree with the trace"},
		{"cnp", string(c.CNP.Verdict), c.CNP.Reason, "pass", ""},
	} {
		if x.verdict != x.want || x.reason != x.wantReason {
			t.Errorf("%s = %s %q, want %s %q", x.name, x.verdict, x.reason, x.want, x.wantReason)
		}
	}
	if n := len(c.GBN.Violations); n != 12 {
		t.Errorf("gbn violations = %d, want 12 (kept, judged inconclusive)", n)
	}
}
