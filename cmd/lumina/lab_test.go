package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/lab"
)

// lumina lab run: the results as lumina run writes them, byte for byte
// (but report.json's wall_ns), and its exit status.
func TestLabRunCLI(t *testing.T) {
	ex := filepath.Join("..", "..", "examples")
	out, ref := filepath.Join(t.TempDir(), "lab"), filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI("lab", "run", "-q", "-o", out, filepath.Join(ex, "quickstart.yaml"), filepath.Join(ex, "timeout-adaptive.yaml"))
	if code != 1 {
		t.Fatalf("lab run: exit %d, want 1 (timeout-adaptive fails its timeout check); stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		`^quickstart repeat 0: valid, all checks pass → ` + regexp.QuoteMeta(filepath.Join(out, "quickstart", "0")) + ` \[job [0-9a-f]{16} on sim-0\]$`,
		`^timeout-adaptive repeat 0: valid, FAILED: timeout → ` + regexp.QuoteMeta(filepath.Join(out, "timeout-adaptive", "0")) + ` \[job [0-9a-f]{16} on sim-0\]$`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(stdout) {
			t.Errorf("lab run stdout lacks %s:\n%s", want, stdout)
		}
	}
	if code, _, stderr := runCLI("run", "-q", "-o", ref, filepath.Join(ex, "quickstart.yaml")); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"trace.pcap", "report.txt", "config.yaml"} { // counters.json names temporary files
		a, errA := os.ReadFile(filepath.Join(out, "quickstart", "0", f))
		b, errB := os.ReadFile(filepath.Join(ref, "quickstart", "0", f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: lab run's differs from run's (%v, %v)", f, errA, errB)
		}
	}
	wall := regexp.MustCompile(`"wall_ns": \d+`)
	a, _ := os.ReadFile(filepath.Join(out, "quickstart", "0", "report.json"))
	b, _ := os.ReadFile(filepath.Join(ref, "quickstart", "0", "report.json"))
	if len(a) == 0 || !bytes.Equal(wall.ReplaceAll(a, nil), wall.ReplaceAll(b, nil)) {
		t.Error("report.json: lab run's differs from run's beyond wall_ns")
	}
	if _, err := os.Stat(filepath.Join(out, ".lab-work")); !os.IsNotExist(err) {
		t.Errorf("lab run left its work directory: %v", err)
	}
	// --set reaches the worker's run: config.yaml holds the test as run.
	out2 := filepath.Join(t.TempDir(), "set")
	if code, _, stderr := runCLI("lab", "run", "-q", "--set", "traffic.mtu=2048", "-o", out2, filepath.Join(ex, "quickstart.yaml")); code > 1 {
		t.Fatalf("lab run --set: exit %d: %s", code, stderr) // 1: its checks may fail at that MTU
	}
	if cfg, err := os.ReadFile(filepath.Join(out2, "quickstart", "0", "config.yaml")); err != nil || !regexp.MustCompile(`(?m)^\s+mtu: 2048$`).Match(cfg) {
		t.Errorf("lab run --set traffic.mtu=2048: config.yaml %v without mtu: 2048:\n%s", err, cfg)
	}
}

func TestLabCLIErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\ntraffic:\n  mtu: 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lab"}, "lab needs a subcommand"},
		{[]string{"lab", "launch"}, `unknown subcommand "launch"`},
		{[]string{"lab", "run", "-o", t.TempDir(), bad}, bad + ":3:"},
		{[]string{"lab", "submit", "--pool", "p", bad}, bad + ":3:"},
		{[]string{"lab", "submit", filepath.Join("..", "..", "examples", "quickstart.yaml")}, "--pool"},
		{[]string{"lab", "submit", "--pool", "a.b", filepath.Join("..", "..", "examples", "quickstart.yaml")}, "pool"},
		{[]string{"lab", "worker", "--pool", "p"}, "--testbed"},
		{[]string{"lab", "wait"}, "job ids"},
		{[]string{"lab", "run", "--parallel", "0", "x.yaml"}, "--parallel"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("lumina %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}

func TestLabJUnit(t *testing.T) {
	at := lab.Attempt{Worker: "w", Testbed: "tb1", Started: time.Unix(0, 0), Finished: time.Unix(1, 500e6)}
	res := []*lab.Result{
		{Job: lab.JobSpec{ID: "a1", Test: "quickstart", Pool: "cx6", Labels: map[string]string{"firmware": "22.39"}}, Attempt: at,
			Outcome: lab.Outcome{Repeats: []lab.RepeatOutcome{{Repeat: 0, Valid: true}, {Repeat: 1, Valid: true, Failed: []string{"timeout"}}}}},
		{Job: lab.JobSpec{ID: "b2", Test: "read", Pool: "cx6", Repeat: 1}, Attempt: at, Outcome: lab.Outcome{Error: "testbed down"}},
	}
	f := filepath.Join(t.TempDir(), "junit.xml")
	if err := writeJUnit(f, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || len(s.Cases) != 3 {
		t.Fatalf("suite %+v: want 3 tests, 1 failure, 1 error", s)
	}
	c := s.Cases
	if c[0].Class != "quickstart[firmware=22.39]" || c[0].Failure != nil || c[0].Time != "1.500" ||
		c[1].Failure == nil || c[1].Failure.Message != "failed checks: timeout" ||
		c[2].Error == nil || c[2].Error.Message != "testbed down" || c[2].Name != "read set 1" {
		t.Fatalf("cases %+v", c)
	}
	if err := finishResults(res[:1], ""); err != errSilent {
		t.Fatalf("a failed repeat: %v, want a failure", err)
	}
	res[0].Outcome.Repeats[1].Failed = nil
	if err := finishResults(res[:1], ""); err != nil {
		t.Fatalf("every repeat passed: %v", err)
	}
}
