package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// analyzeChecks runs lumina analyze --format json on arg and returns each
// check's verdict.
func analyzeChecks(t *testing.T, arg string) map[string]string {
	t.Helper()
	r := lumina(t, "analyze", "--format", "json", arg)
	var doc struct {
		Valid  bool `json:"valid"`
		Checks map[string]struct {
			Verdict string `json:"verdict"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("analyze %s: %v\n%s", arg, err, r.stdout)
	}
	if !doc.Valid {
		t.Errorf("analyze %s: not valid", arg)
	}
	v := map[string]string{}
	for n, c := range doc.Checks {
		v[n] = c.Verdict
	}
	return v
}

// TestPublicExample: the public Lumina's conf/example.yml, unmodified
// (testdata/public-example.yml; it names its merged trace merge.pcap),
// runs valid on the sim testbed with every check passing, lumina analyze
// finds the trace in the run directory under that name, and a public
// Lumina result directory (<result-path>/<i>/pcap-result/merge.pcap,
// rdma-result/ counter dumps, config.yml in the result-path) gets the same
// checks, the CNP check among them.
func TestPublicExample(t *testing.T) {
	out := t.TempDir()
	luminaExit(t, 0, "run", "--testbed", "sim", "-q", "-o", out, filepath.Join("testdata", "public-example.yml"))
	for rep := range 5 {
		dir := filepath.Join(out, "public-example", string(rune('0'+rep)))
		r := readReport(t, dir)
		if !r.Valid || r.TracePath != "merge.pcap" {
			t.Errorf("repeat %d: valid %v, trace %q; want valid, merge.pcap", rep, r.Valid, r.TracePath)
		}
	}
	// Every repeat in one call: the test's result directory.
	all := lumina(t, "analyze", filepath.Join(out, "public-example"))
	if !strings.HasSuffix(all.stdout, "5 of 5 repeats passed\n") || strings.Count(all.stdout, "\n== ") != 4 {
		t.Errorf("lumina analyze TEST_DIR:\n%s", all.stdout)
	}
	var reps []struct{ Valid bool }
	if err := json.Unmarshal([]byte(lumina(t, "analyze", "--format", "json", filepath.Join(out, "public-example")).stdout), &reps); err != nil || len(reps) != 5 {
		t.Errorf("lumina analyze --format json TEST_DIR: %d reports, %v; want an array of 5", len(reps), err)
	}

	runDir := filepath.Join(out, "public-example", "0")
	got := analyzeChecks(t, runDir)
	if got["cnp"] != "pass" || got["gbn"] != "pass" {
		t.Errorf("analyze run dir: checks %v, want cnp and gbn pass", got)
	}

	// The same repeat in the public tool's layout.
	pub := filepath.Join(t.TempDir(), "results")
	rep := filepath.Join(pub, "0")
	for _, d := range []string{"pcap-result", "rdma-result", "switch-result"} {
		if err := os.MkdirAll(filepath.Join(rep, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, filepath.Join(runDir, "merge.pcap"), filepath.Join(rep, "pcap-result", "merge.pcap"))
	copyFile(t, filepath.Join("testdata", "public-example.yml"), filepath.Join(pub, "config.yml"))
	var counters struct {
		NICs map[string]map[string]uint64 `json:"nics"`
	}
	b, err := os.ReadFile(filepath.Join(runDir, "counters.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &counters); err != nil {
		t.Fatal(err)
	}
	for side, c := range counters.NICs {
		var start, finish strings.Builder
		start.WriteString("hw-counters:\n")
		finish.WriteString("hw-counters:\n")
		for k, v := range c {
			start.WriteString("  " + k + ": 100\n")
			finish.WriteString("  " + k + ": " + itoa(v+100) + "\n")
		}
		writeFile(t, filepath.Join(rep, "rdma-result", side+"_counter_start.yml"), start.String())
		writeFile(t, filepath.Join(rep, "rdma-result", side+"_counter_finish.yml"), finish.String())
	}
	pubGot := analyzeChecks(t, rep)
	// The run's own checks come from a lumina run's record (report.json),
	// which the public tool's layout has not: every check a trace gives.
	for _, n := range []string{"switch_state", "events_applied", "generator"} {
		if got[n] != "pass" {
			t.Errorf("analyze run dir: check %s = %q, want pass (from the run's record)", n, got[n])
		}
		delete(got, n)
	}
	if len(pubGot) != len(got) {
		t.Errorf("analyze public dir: checks %v, want %v", pubGot, got)
	}
	for n, v := range got {
		if pubGot[n] != v {
			t.Errorf("analyze public dir: check %s = %q, want %q (as on the run dir)", n, pubGot[n], v)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
