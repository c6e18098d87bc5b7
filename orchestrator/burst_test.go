package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
)

// burstTest holds every packet of one 32 MiB message (8192 packets of
// 4096 bytes) until the first hold's 50 ms pass: its release lets all the
// others go at once, a burst of 8192 mirror copies on the switch→dumper
// link, above its 16 MiB queue when the copies are whole frames.
func burstTest(t *testing.T, dumper string) *config.Test {
	t.Helper()
	tc, err := config.Parse("burst.yaml", []byte("name: burst\nseed: 1\n"+
		"requester: {nic: {personality: cx5, ip-list: [10.0.0.1/24]}}\n"+
		"responder: {nic: {personality: cx5, ip-list: [10.0.0.2/24]}}\n"+
		"dumpers:\n  - "+dumper+"\n"+
		"traffic:\n  num-qps: 1\n  rdma-verb: write\n  num-msgs-per-qp: 1\n  mtu: 4096\n  message-size: 33554432\n"+
		"  data-pkt-events:\n    - {qpn: 0, psn: all, type: reorder, overtakers: 1, max-hold-us: 50000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// Issue #38, point 10: the clone session cuts copies to the dumper's
// snap-len (128), so the burst fits the switch→dumper link and the run is
// valid (before: "gap: seq 4039..8192 missing", the copies dropped
// silently, and the run retried twice).
func TestBurstOfCopiesFitsDumperLink(t *testing.T) {
	res := RunTest(context.Background(), burstTest(t, "{name: dumper-0}"), Options{OutDir: t.TempDir()})
	if res.Err != nil || len(res.Repeats) != 1 {
		t.Fatalf("run: %v %+v", res.Err, res.Repeats)
	}
	r := res.Repeats[0]
	if !r.Report.Valid || r.Attempts != 1 {
		t.Errorf("valid %v after %d attempts (integrity: %s), want valid after 1", r.Report.Valid, r.Attempts, r.Report.Integrity.Reason)
	}
	if d := r.Run.Dumpers[0]; d.KernelDropped != 0 || d.Captured != uint64(r.Report.Packets) {
		t.Errorf("dumper: kernel_dropped %d, captured %d of %d", d.KernelDropped, d.Captured, r.Report.Packets)
	}
}

// Issue #38, point 10: copies too long to be cut enough (snap-len 9216)
// overflow the switch→dumper link; the dumper counts them as its
// kernel_dropped, the integrity reason names them and, the sim being
// deterministic, the run is not retried (before: kernel_dropped 0, a bare
// gap, three attempts).
func TestDumperLinkDropsNamedNotRetried(t *testing.T) {
	var progress strings.Builder
	res := RunTest(context.Background(), burstTest(t, "{name: dumper-0, snap-len: 9216}"), Options{OutDir: t.TempDir(), Progress: &progress})
	if len(res.Repeats) != 1 {
		t.Fatalf("run: %v %+v", res.Err, res.Repeats)
	}
	r := res.Repeats[0]
	if r.Report.Valid || r.Attempts != 1 {
		t.Errorf("valid %v after %d attempts, want invalid after 1", r.Report.Valid, r.Attempts)
	}
	want := "gap: seq 4039..8192 missing (4154 packets) (between dumper-0 #4037 and dumper-0 #4038); dumper-0 dropped 4154 packets " +
		"(the switch→dumper link dropped them: a burst of copies overflowed its queue; lower snap-len (the clone session cuts copies to it) or add dumpers)"
	if r.Report.Integrity.Reason != want {
		t.Errorf("integrity reason\n%s\nwant\n%s", r.Report.Integrity.Reason, want)
	}
	if d := r.Run.Dumpers[0]; d.KernelDropped != 4154 {
		t.Errorf("dumper kernel_dropped %d, want 4154", d.KernelDropped)
	}
	if !strings.Contains(progress.String(), "invalid run not retried: the sim testbed is deterministic, and the same seed would fail again") {
		t.Errorf("progress does not say why the run was not retried:\n%s", progress.String())
	}
}
