package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/config"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// TestRunTestLeavesInput runs a test with the seed and testbed overridden
// and checks the caller's config is untouched while the run used the
// overrides, and that every seed the run used is recorded.
func TestRunTestLeavesInput(t *testing.T) {
	tc, err := config.Load("../examples/send.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := config.Load("../examples/send.yaml")
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Seed: 77, SeedSet: true, Testbed: "sim"})
	if !res.OK() {
		t.Fatalf("run: %v", res.Err)
	}
	if !reflect.DeepEqual(tc, before) {
		t.Errorf("RunTest modified its input:\n got %+v\nwant %+v", tc, before)
	}
	r := res.Repeats[0]
	if r.Run.Test.Seed != 77 || r.Report.Seed != 77 {
		t.Errorf("run seed %d, report seed %d, want 77", r.Run.Test.Seed, r.Report.Seed)
	}
	want := Seeds{Test: 77, Switch: seedFor(r.Run.Test, 0, "switch"), Hosts: map[string]uint64{"requester": seedFor(r.Run.Test, 0, "requester"),
		"responder": seedFor(r.Run.Test, 0, "responder")}}
	if r.Report.Seeds == nil || !reflect.DeepEqual(*r.Report.Seeds, want) {
		t.Errorf("report seeds %+v, want %+v", r.Report.Seeds, want)
	}
	if want.Switch == want.Hosts["requester"] || want.Hosts["requester"] == want.Hosts["responder"] {
		t.Errorf("seeds not distinct: %+v", want)
	}
	resolved, err := config.Load(filepath.Join(r.Dir, "config.yaml"))
	if err != nil || resolved.Seed != 77 {
		t.Errorf("config.yaml seed %v (%v), want 77", resolved, err)
	}
}

// TestMalformedDumperReport corrupts a dumper agent's Stop response: the
// run fails and says which field was bad, instead of going on with a zero
// report.
func TestMalformedDumperReport(t *testing.T) {
	run, err := driveSim(t, "../examples/send.yaml", func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if r, ok := resp.(*luminav1.DumperStopResponse); ok && err == nil {
			r.Report = nil
		}
		return resp, err
	})
	if err == nil || !strings.Contains(err.Error(), "DumperReport") {
		t.Fatalf("drive with a malformed dumper report = %v, want an error naming DumperReport", err)
	}
	t.Logf("error: %v", err)
	if len(run.DumperErrors) != len(run.Test.Dumpers) {
		t.Errorf("dumper errors %q, want one per dumper", run.DumperErrors)
	}
}

// TestSimReachesAgentsOverGRPC checks that the sim testbed's components
// are reached through the agents' services: a sim run's Injector, Dumper
// and Generator calls all cross the in-memory gRPC servers.
func TestSimReachesAgentsOverGRPC(t *testing.T) {
	calls := make(chan string, 64)
	run, err := driveSim(t, "../examples/quickstart.yaml", func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		calls <- info.FullMethod
		return h(ctx, req)
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := run.Test
	close(calls)
	n := map[string]int{}
	for c := range calls {
		n[c]++
	}
	want := map[string]int{"/lumina.v1.Injector/Start": 1, "/lumina.v1.Injector/Timing": 1, "/lumina.v1.Dumper/Start": 2, "/lumina.v1.Dumper/Stop": 2,
		"/lumina.v1.Generator/StartNIC": 2, "/lumina.v1.Generator/Serve": 1, "/lumina.v1.Generator/Run": 1, "/lumina.v1.Generator/Counters": 2}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("agent calls %v, want %v", n, want)
	}
	if run.Plan == nil || len(run.Connections) != tc.Traffic.NumQPs || run.Generator == nil {
		t.Errorf("run not filled: plan %v, %d connections", run.Plan != nil, len(run.Connections))
	}
}

// driveSim drives repeat 0 of the test in file on a sim testbed whose
// agents' gRPC servers intercept every unary call with icpt.
func driveSim(t *testing.T, file string, icpt grpc.UnaryServerInterceptor) (*Run, error) {
	t.Helper()
	tc, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	run, err := newRun(tc, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := newSimBed()
	b.serverOpts = []grpc.ServerOption{grpc.UnaryInterceptor(icpt)}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "dumpers"), 0o755)
	_, err = drive(context.Background(), b, run, dir, func(string) {}, hooks{})
	return run, err
}

// TestStreamedAnalysisMatchesFile checks the analysis a run streams during
// its merge against the analyzers reading the published trace file, for
// examples with drops, ECN marks, READ and CNPs.
func TestStreamedAnalysisMatchesFile(t *testing.T) {
	for _, f := range []string{"quickstart", "read", "cnp-cx6", "fast-retransmission-20k"} {
		tc, err := config.Load("../examples/" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
		if len(res.Repeats) != 1 || res.Repeats[0].Report.Analysis == nil {
			t.Fatalf("%s: %v, no analysis", f, res.Err)
		}
		run := res.Repeats[0].Run
		a, err := analyzers.AnalyzeFile(context.Background(), run.TracePath, run.meta(), analyzers.Options{Checked: &run.Integrity})
		if err != nil {
			t.Fatal(err)
		}
		a.Trace.Path = filepath.Base(a.Trace.Path)
		// The run's own checks are the run's, beside the analyzers'.
		ra := res.Repeats[0].Report.Analysis
		a.Integrity, a.Checks.Integrity = ra.Integrity, ra.Checks.Integrity
		a.Checks.SwitchState, a.Checks.EventsApplied, a.Checks.Generator = ra.Checks.SwitchState, ra.Checks.EventsApplied, ra.Checks.Generator
		got, _ := json.Marshal(ra)
		want, _ := json.Marshal(a)
		if string(got) != string(want) {
			t.Errorf("%s: streamed analysis differs from the file's:\n got %s\nwant %s", f, got, want)
		}
	}
}

// TestProgressNamesBackends: the dumpers' progress line names the capture
// backends actually used (it said afpacket for dpdk dumpers).
func TestProgressNamesBackends(t *testing.T) {
	tc, err := config.Load("../examples/send.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	if res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Progress: &progress}); !res.OK() {
		t.Fatalf("run: %v", res.Err)
	}
	if !strings.Contains(progress.String(), ": dumpers: start 2 sim\n") {
		t.Errorf("progress does not name the backends:\n%s", progress.String())
	}
}
