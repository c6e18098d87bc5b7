package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/config"
)

// Issue #38, point 11: the disk estimate counts what events add. A
// duplicate with copies: 60 on every packet of a QP mirrors 61 copies of
// each; the estimate of the trace must be at least its size on sim, and at
// most estimateFactor times it (acknowledgements are counted at their
// most). Before, the estimate ignored the copies: 2.6 MB for an 18 MB
// trace. Deterministic: sizes, not times.
func TestEstimateCountsDuplicates(t *testing.T) {
	const estimateFactor = 3
	const test = `name: dup60
seed: 1
keep-dumper-files: false
requester:
  nic: {personality: cx5, ip-list: [10.0.0.1/24]}
  roce-parameters: {dcqcn-rp-enable: false, min-time-between-cnps: 0}
responder:
  nic: {personality: cx5, ip-list: [10.0.0.2/24]}
dumpers:
  - {name: dumper-0, weight: 1}
traffic:
  num-qps: 2
  rdma-verb: write
  num-msgs-per-qp: 4
  mtu: 1024
  message-size: 262144
  data-pkt-events:
    - {qpn: 0, psn: all, iter: 1, type: duplicate, copies: 60}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "dup60.yaml")
	if err := os.WriteFile(file, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	tt, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	est := tt.Estimate().DiskBytes // the trace alone: keep-dumper-files is false
	out := filepath.Join(dir, "out")
	// Exit 0 or 1: the size of the trace is what counts here, not the checks.
	if r, err := invoke("run", "-q", "-retries", "0", "-o", out, file); err != nil || r.code > 1 {
		t.Fatalf("lumina run: %v, exit %d\n%s", err, r.code, r.stderr)
	}
	st, err := os.Stat(filepath.Join(out, "dup60", "0", "trace.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimate %d, trace %d", est, st.Size())
	if got := st.Size(); est < got || est > estimateFactor*got {
		t.Errorf("Estimate().DiskBytes = %d, want within [%d, %d] (trace.pcap %d bytes, factor %d)", est, got, estimateFactor*got, got, estimateFactor)
	}
}
