package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
)

// lengthTest is a test of 1 QP writing 10 messages of 10 packets (100 data
// packets, one acknowledgement per message: 110 mirror copies, 55 per
// dumper) with extra YAML.
func lengthTest(t *testing.T, extra string) *config.Test {
	t.Helper()
	tc, err := config.Parse("length.yaml", []byte("name: length\n"+extra+
		"traffic: {num-qps: 1, num-msgs-per-qp: 10, message-size: 10240, mtu: 1024}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// Issue #23, point 4: keep-dumper-files: false removes the dumpers' files
// after a valid merge; the trace stays.
func TestKeepDumperFilesFalse(t *testing.T) {
	out := t.TempDir()
	res := RunTest(context.Background(), lengthTest(t, "keep-dumper-files: false\n"), Options{OutDir: out})
	if res.Err != nil || len(res.Repeats) != 1 || !res.Repeats[0].Report.Valid {
		t.Fatalf("run: %v %+v", res.Err, res.Repeats)
	}
	dir := res.Repeats[0].Dir
	if ents, err := os.ReadDir(filepath.Join(dir, "dumpers")); err != nil || len(ents) != 0 {
		t.Errorf("dumpers/ holds %d files (%v), want none", len(ents), err)
	}
	if !res.Repeats[0].Report.DumperFilesRemoved || res.Repeats[0].Report.Packets != 110 {
		t.Errorf("report: removed %v, %d packets; want true, 110", res.Repeats[0].Report.DumperFilesRemoved, res.Repeats[0].Report.Packets)
	}
	if st, err := os.Stat(filepath.Join(dir, "trace.pcap")); err != nil || st.Size() == 0 {
		t.Errorf("trace.pcap: %v", err)
	}
	// The default keeps them.
	res = RunTest(context.Background(), lengthTest(t, ""), Options{OutDir: t.TempDir()})
	if ents, _ := os.ReadDir(filepath.Join(res.Repeats[0].Dir, "dumpers")); len(ents) != 2 || res.Repeats[0].Report.DumperFilesRemoved {
		t.Errorf("default: dumpers/ holds %d files, want 2", len(ents))
	}
}

// Issue #23, point 2: a dumper that reaches its num-pkts makes the run
// invalid with the cause named, and the run is not retried (it would
// overflow again). Validation lets it through: 50 data packets per dumper
// fit in 52; the acknowledgements do not.
func TestDumperFullNotRetried(t *testing.T) {
	tc := lengthTest(t, "dumpers:\n  - {num-pkts: 52}\n  - {num-pkts: 52}\n")
	var progress strings.Builder
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Progress: &progress})
	if len(res.Repeats) != 1 {
		t.Fatalf("run: %v %+v", res.Err, res.Repeats)
	}
	r := res.Repeats[0]
	if r.Report.Valid || r.Attempts != 1 {
		t.Errorf("valid %v after %d attempts, want invalid after 1", r.Report.Valid, r.Attempts)
	}
	want := "count: trace has 104 packets, switch mirrored 110; dumper-0 dropped 3 packets (a worker wrote its num-pkts (Capacity) and dropped the rest: raise num-pkts or remove it, and the disk is the limit)"
	if r.Report.Integrity.Reason != want {
		t.Errorf("integrity reason\n%s\nwant\n%s", r.Report.Integrity.Reason, want)
	}
	if !strings.Contains(progress.String(), "invalid run not retried: dumper dumper-0 reached its num-pkts, and would again") {
		t.Errorf("progress does not say why the run was not retried:\n%s", progress.String())
	}
}
