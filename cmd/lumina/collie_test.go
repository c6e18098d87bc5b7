package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCollieGolden(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "collie")
	anomalies := func(t *testing.T, tmp string) {
		write(t, tmp, "anomalies.json", []byte(`[
 {"id":"A1","symptom":"pause","mfs":{"qp_type":{"values":["UD"]},"wqe_batch":{"min":64}},"method":"mfs","validated":true,"example":{"traffics":[]},"found_at_experiment":3},
 {"id":"A2","symptom":"pause","mfs":{"direction":{"values":["bi"]},"sge_per_wqe":{"min":3},"msg_size_min":{"max":1024},"msg_size_max":{"min":65536}},"method":"mfs","validated":true,"example":{"traffics":[]},"found_at_experiment":40}
]`))
	}
	runGolden(t, []cliCase{
		{name: "collie-no-sub", args: []string{"collie"}},
		{name: "collie-bad-sub", args: []string{"collie", "serch"}},
		{name: "collie-search-no-out", args: []string{"collie", "search", "--budget", "5"}},
		{name: "collie-search-bad-algo", args: []string{"collie", "search", "--algo", "bo", "-o", "$TMP/out"}},
		{name: "collie-search-bad-engine", args: []string{"collie", "search", "--engine", "magic", "-o", "$TMP/out"}},
		{name: "collie-search-model", args: []string{"collie", "search", "-q", "--engine", "model:" + ex + "/cx6-200g.yaml",
			"--planted", ex + "/table2-planted.yaml", "--space", ex + "/space.yaml", "--budget", "60", "--seed", "2", "-o", "$TMP/out"}},
		{name: "collie-check", args: []string{"collie", "check", "--space", ex + "/app-rpc.yaml", "--anomalies", "$TMP/anomalies.json"}, setup: anomalies},
		{name: "collie-check-missing", args: []string{"collie", "check", "--space", ex + "/app-rpc.yaml"}},
	})
}

func TestCollieSearchResumes(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "collie")
	out := t.TempDir()
	args := []string{"collie", "search", "-q", "--engine", "model:" + ex + "/cx6-200g.yaml", "--planted", ex + "/table2-planted.yaml",
		"--budget", "80", "--seed", "4", "-o", out}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	full, _ := os.ReadFile(filepath.Join(out, "experiments.jsonl"))
	lines := strings.SplitAfter(string(full), "\n")
	os.WriteFile(filepath.Join(out, "experiments.jsonl"), []byte(strings.Join(lines[:30], "")), 0o644)
	code, stdout, stderr := runCLI(args...)
	if code != 0 || !strings.Contains(stdout, "30 replayed") {
		t.Fatalf("resume: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	again, _ := os.ReadFile(filepath.Join(out, "experiments.jsonl"))
	if string(again) != string(full) {
		t.Errorf("resumed log differs from the uninterrupted one")
	}
}

func TestCollieExecEngine(t *testing.T) {
	out := t.TempDir()
	eng := filepath.Join(out, "engine.sh")
	write(t, out, "engine.sh", []byte("#!/bin/sh\ncat >/dev/null\necho '{\"tx_gbps\":90,\"rx_gbps\":90,\"tx_mpps\":9,\"rx_mpps\":9,\"pause_duration_ratio\":0,\"diag\":{\"c\":1}}'\n"))
	os.Chmod(eng, 0o755)
	code, stdout, stderr := runCLI("collie", "search", "-q", "--engine", "exec:"+eng, "--line-gbps", "100", "--line-mpps", "10",
		"--budget", "12", "-o", filepath.Join(out, "res"))
	if code != 0 || !strings.Contains(stdout, "12 experiments (0 replayed, 0 failed") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestCollieSearchAllFailed: a search in which every experiment failed
// exits 1 and says so, with the engine's error.
func TestCollieSearchAllFailed(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("collie", "search", "-q", "--engine", "exec:echo broken >&2; exit 3", "--budget", "4", "-o", out)
	if code != 1 || !strings.Contains(stdout, "4 experiments (0 replayed, 4 failed") ||
		!strings.Contains(stderr, "every experiment failed") || !strings.Contains(stderr, "broken") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming the engine's error", code, stdout, stderr)
	}
}

// TestCollieRefusedResumeWritesNothing: a resume refused because the log
// belongs to another search (another seed) leaves every file as it was.
func TestCollieRefusedResumeWritesNothing(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "collie")
	out := t.TempDir()
	args := []string{"collie", "search", "-q", "--engine", "model:" + ex + "/cx6-200g.yaml", "--budget", "30", "-o", out}
	if code, _, stderr := runCLI(append(args, "--seed", "4")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	before := map[string]string{}
	for _, f := range []string{"experiments.jsonl", "anomalies.json", "best.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = string(b)
	}
	code, _, stderr := runCLI(append(args, "--seed", "5")...)
	if code != 1 || !strings.Contains(stderr, "does not match this search") {
		t.Errorf("resume with another seed: exit %d, stderr %q", code, stderr)
	}
	for f, want := range before {
		if b, _ := os.ReadFile(filepath.Join(out, f)); string(b) != want {
			t.Errorf("%s changed by a refused resume:\n%s", f, b)
		}
	}
}
