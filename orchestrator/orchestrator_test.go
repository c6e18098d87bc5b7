package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestExamples runs every example on the sim testbed, as the README does,
// and checks each report.
func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) < 10 {
		t.Fatalf("found %d examples", len(files))
	}
	out := t.TempDir()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tc, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			res := RunTest(context.Background(), tc, Options{OutDir: out})
			if res.Err != nil || len(res.Repeats) != tc.NumRepeats {
				t.Fatalf("run: %v (%d repeats)", res.Err, len(res.Repeats))
			}
			r := res.Repeats[0]
			rep := r.Report
			if !rep.Valid || rep.Integrity.Verdict != "pass" {
				t.Fatalf("report: valid %v integrity %+v error %q", rep.Valid, rep.Integrity, rep.Error)
			}
			// Every check passes, except that the timeout examples show what
			// the paper found: CX timeouts beyond the IB bound of 4·T_tr.
			for name, c := range rep.Checks {
				want := "pass"
				if name == "timeout" && strings.HasPrefix(filepath.Base(f), "timeout-") {
					want = "fail"
				}
				if c.Verdict != want {
					t.Errorf("check %s = %s (%s), want %s", name, c.Verdict, c.Detail, want)
				}
			}
			for _, name := range []string{"gbn", "retransmission", "timeout", "cnp", "counters"} {
				if _, ok := rep.Checks[name]; !ok {
					t.Errorf("no %s check in the report", name)
				}
			}
			// lumina analyze on the run directory gives the run's verdicts.
			tracePath, meta, err := analyzers.RunInputs(r.Dir, "")
			if err != nil {
				t.Fatal(err)
			}
			a, err := analyzers.AnalyzeFile(context.Background(), tracePath, meta, analyzers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range a.Checks.Verdicts() {
				if string(v) != rep.Checks[name].Verdict {
					t.Errorf("lumina analyze %s: %s, the run's report: %s", name, v, rep.Checks[name].Verdict)
				}
			}
			if a.Valid != rep.Valid {
				t.Errorf("lumina analyze valid %v, run %v", a.Valid, rep.Valid)
			}
			if rep.Generator == nil || rep.Generator.GoodputGbps <= 0 || !rep.Generator.Verified {
				t.Errorf("generator %+v", rep.Generator)
			}
			if len(rep.Connections) != tc.Traffic.NumQPs {
				t.Errorf("%d connections, want %d", len(rep.Connections), tc.Traffic.NumQPs)
			}
			if len(rep.Events) != len(tc.ExpandEvents()) {
				t.Errorf("%d events in the report, %d expanded", len(rep.Events), len(tc.ExpandEvents()))
			}
			for _, e := range rep.Events {
				if !e.Applied || e.TimeNs == 0 {
					t.Errorf("event %+v not applied", e)
				}
			}
			for _, name := range []string{"trace.pcap", "report.json", "report.txt", "report.html", "counters.json", "generator.json", "config.yaml"} {
				if _, err := os.Stat(filepath.Join(r.Dir, name)); err != nil {
					t.Error(err)
				}
			}
			// report.json on disk is what RunTest returned.
			var disk Report
			b, _ := os.ReadFile(filepath.Join(r.Dir, "report.json"))
			if err := json.Unmarshal(b, &disk); err != nil || disk.Valid != rep.Valid || len(disk.Events) != len(rep.Events) {
				t.Errorf("report.json: %v", err)
			}
			// The resolved config reloads and records the seed.
			if rc, err := config.Load(filepath.Join(r.Dir, "config.yaml")); err != nil || rc.Seed != tc.Seed {
				t.Errorf("config.yaml: %v", err)
			}
		})
	}
}

// cnpsPerQP counts CNPs by destination QP in a run's trace, in connection
// order of the requester QPNs.
func cnpsPerQP(t *testing.T, dir string, rep *Report) []int {
	counts := map[uint32]int{}
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) == nil && p.Opcode == roce.CNP {
			counts[p.BTH.DestQP()]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, c := range rep.Connections {
		out = append(out, counts[c.Requester.QPN])
	}
	return out
}

// TestCNPScopeTable4 reproduces the paper's Table 4 through the whole run
// pipeline: CX6 (per-port pacing) answers only the first QP's marks,
// CX4/CX5 (per destination IP) answer all three.
func TestCNPScopeTable4(t *testing.T) {
	want := map[string]string{"cx4": "[2 2 2]", "cx5": "[2 2 2]", "cx6": "[2 0 0]"}
	for pers, w := range want {
		tc, err := config.Load("../examples/cnp-" + pers + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
		if !res.OK() {
			t.Fatalf("%s: %v", pers, res.Err)
		}
		a := res.Repeats[0].Report.Analysis
		if a == nil || !strings.Contains(fmt.Sprint(a.Checks.CNP.ConsistentScopes), map[string]string{"cx4": "per-dest-ip", "cx5": "per-dest-ip", "cx6": "per-port"}[pers]) {
			t.Errorf("%s: analyzer's consistent CNP scopes %v", pers, a.Checks.CNP.ConsistentScopes)
		}
		if got := fmt.Sprint(cnpsPerQP(t, res.Repeats[0].Dir, res.Repeats[0].Report)); got != w {
			t.Errorf("%s: CNPs per QP %s, want %s", pers, got, w)
		}
	}
}

func TestDeterministic(t *testing.T) {
	tc, _ := config.Load("../examples/quickstart.yaml")
	a := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
	tc2, _ := config.Load("../examples/quickstart.yaml")
	b := RunTest(context.Background(), tc2, Options{OutDir: t.TempDir()})
	ta, _ := os.ReadFile(filepath.Join(a.Repeats[0].Dir, "trace.pcap"))
	tb, _ := os.ReadFile(filepath.Join(b.Repeats[0].Dir, "trace.pcap"))
	if len(ta) == 0 || string(ta) != string(tb) {
		t.Error("the same seed gave different traces")
	}
	tc3, _ := config.Load("../examples/quickstart.yaml")
	c := RunTest(context.Background(), tc3, Options{OutDir: t.TempDir(), Seed: 99, SeedSet: true})
	if c.Repeats[0].Report.Connections[0].Requester.QPN == a.Repeats[0].Report.Connections[0].Requester.QPN {
		t.Error("another seed gave the same QPN")
	}
}

func TestResultsNotLost(t *testing.T) {
	out := t.TempDir()
	tc, _ := config.Load("../examples/send.yaml")
	RunTest(context.Background(), tc, Options{OutDir: out})
	tc, _ = config.Load("../examples/send.yaml")
	RunTest(context.Background(), tc, Options{OutDir: out, Now: func() time.Time { return time.Unix(0, 0) }})
	old := filepath.Join(out, "send", "0.replaced-19700101T000000.000", "report.json")
	if _, err := os.Stat(old); err != nil {
		t.Errorf("previous results not kept: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "send"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".run-") {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}
}

func TestUnavailableTestbed(t *testing.T) {
	tc, _ := config.Load("../examples/send.yaml")
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Testbed: "remote"})
	if res.Err == nil || res.OK() || !strings.Contains(res.Err.Error(), "testbed not available") {
		t.Fatalf("remote testbed: %v", res.Err)
	}
	// Partial results are kept and marked invalid.
	if len(res.Repeats) != 1 || res.Repeats[0].Report.Valid || res.Repeats[0].Report.Error == "" {
		t.Errorf("repeats %+v", res.Repeats)
	}
}
