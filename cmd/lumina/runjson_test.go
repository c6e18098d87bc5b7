package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/orchestrator"
)

// TestRunFormatJSON: lumina run --format json prints one document, the
// repeats' summary of docs/run.md, instead of the status lines; its
// verdicts and quantities are the run directories' report.json's.
func TestRunFormatJSON(t *testing.T) {
	abs, err := filepath.Abs(filepath.Join("..", "..", "examples", "timeout-adaptive.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	starter := filepath.Join(dir, "starter.yaml")
	if err := os.WriteFile(starter, starterTest, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI("run", "-q", "-o", "out", "--format", "json", "--set", "num-repeats=2", starter, abs)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (timeout-adaptive fails its timeout check)\n%s", code, stderr)
	}
	var s runSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, out)
	}
	if s.Schema != "lumina.run/v1" || s.OK || s.Interrupted || len(s.Tests) != 2 {
		t.Fatalf("summary: schema %q ok %v interrupted %v, %d tests; want lumina.run/v1, false, false, 2", s.Schema, s.OK, s.Interrupted, len(s.Tests))
	}
	for i, want := range []struct {
		name   string
		ok     bool
		failed []string
		status string
	}{
		{"starter", true, []string{}, "valid, all checks pass"},
		{"timeout-adaptive", false, []string{"timeout"}, "valid, FAILED: timeout"},
	} {
		ts := s.Tests[i]
		if ts.Name != want.name || ts.OK != want.ok || ts.Error != "" || len(ts.Repeats) != 2 {
			t.Errorf("test %d: %s ok %v error %q, %d repeats; want %s %v, 2 repeats", i, ts.Name, ts.OK, ts.Error, len(ts.Repeats), want.name, want.ok)
			continue
		}
		for r, rs := range ts.Repeats {
			if rs.Repeat != r || rs.Dir != filepath.Join("out", want.name, strconv.Itoa(r)) || !rs.Valid || rs.Attempts != 1 ||
				rs.Status != want.status || !slices.Equal(rs.Failed, want.failed) || len(rs.Inconclusive) != 0 || rs.Invalid != "" || rs.Testbed != "sim" {
				t.Errorf("%s repeat %d: %+v", want.name, r, rs)
			}
			var rep orchestrator.Report
			b, err := os.ReadFile(filepath.Join(rs.Dir, "report.json"))
			if err != nil || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("%s: report.json: %v", rs.Dir, err)
			}
			checks := map[string]model.Verdict{}
			for n, c := range rep.Checks {
				checks[n] = c.Verdict
			}
			if !reflect.DeepEqual(rs.Checks, checks) || len(checks) < 8 {
				t.Errorf("%s: checks %v, report.json's %v", rs.Dir, rs.Checks, checks)
			}
			if rs.Seed != rep.Seed || rs.Packets != rep.Packets || rs.Packets == 0 {
				t.Errorf("%s: seed %d packets %d, report.json's %d %d", rs.Dir, rs.Seed, rs.Packets, rep.Seed, rep.Packets)
			}
			g := rs.Quantities["goodput_gbps"]
			if rep.Generator == nil || g.N != 1 || g.Unit != "Gb/s" || g.Median != rep.Generator.GoodputGbps || g.Min != g.Max {
				t.Errorf("%s: goodput %+v, report.json's %+v", rs.Dir, g, rep.Generator)
			}
			m := rs.Quantities["message_completion_ns"]
			if n := len(rep.Generator.QPs[0].MCTNs); m.N != n || m.Unit != "ns" || !(m.Min <= m.Median && m.Median <= m.Max) || m.Min <= 0 {
				t.Errorf("%s: message_completion_ns %+v, want %d messages", rs.Dir, m, n)
			}
		}
	}
	if _, ok := s.Tests[1].Repeats[0].Quantities["timeout_interval_ns"]; !ok {
		t.Errorf("timeout-adaptive: no timeout_interval_ns quantity")
	}
	// The text status lines are the JSON's statuses.
	code, text, _ := runCLI("run", "-q", "-o", "out", "--set", "num-repeats=2", starter)
	if want := "starter repeat 0: valid, all checks pass → out/starter/0\nstarter repeat 1: valid, all checks pass → out/starter/1\n"; code != 0 || text != want {
		t.Errorf("text: exit %d %q, want 0 %q", code, text, want)
	}
}

// TestRepeatSummaryInvalid: a repeat that was not analyzed says why, has
// no quantities and its checks are the report's.
func TestRepeatSummaryInvalid(t *testing.T) {
	rs := summarizeRepeat(3, orchestrator.RepeatResult{Dir: "out/t/3", Attempts: 3})
	if rs.Repeat != 3 || rs.Valid || rs.Invalid != "no report" || rs.Status != "INVALID (not analyzed: no report)" || rs.Attempts != 3 ||
		len(rs.Checks) != 0 || len(rs.Quantities) != 0 || rs.Failed == nil || rs.Inconclusive == nil {
		t.Errorf("no report: %+v", rs)
	}
	rep := &orchestrator.Report{Repeat: 1, Seed: 7, Testbed: "netns", Valid: false, Error: "dumper d0: exited\nmore",
		Checks: map[string]orchestrator.CheckEntry{"integrity": {Verdict: model.Fail}, "gbn": {Verdict: model.Skip}}}
	rs = summarizeRepeat(0, orchestrator.RepeatResult{Dir: "out/t/1", Report: rep, Attempts: 3})
	want := repeatSummary{Repeat: 1, Dir: "out/t/1", Attempts: 3, Status: "INVALID (not analyzed: dumper d0: exited)", Invalid: "dumper d0: exited",
		Failed: []string{"integrity"}, Inconclusive: []string{}, Checks: map[string]model.Verdict{"integrity": model.Fail, "gbn": model.Skip},
		Seed: 7, Testbed: "netns", Quantities: map[string]quantitySummary{}}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("invalid repeat:\n got %+v\nwant %+v", rs, want)
	}
}

// TestRunFormatJSONLoadErrors: with invalid test files, --format json
// still prints its one document: nothing ran, and errors holds each
// load error as stderr gives it (exit 2).
func TestRunFormatJSONLoadErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, starterTest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("traffic:\n  mtu: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{good, bad}, []string{bad + ":2:8: mtu: want 256, 512, 1024, 2048 or 4096, got 7"}},
		{[]string{filepath.Join(dir, "nope.yaml")}, []string{"lumina: run: stat " + filepath.Join(dir, "nope.yaml") + ": no such file or directory"}},
	} {
		code, out, stderr := runCLI(append([]string{"run", "-q", "-o", filepath.Join(dir, "out"), "--format", "json"}, tc.args...)...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", tc.args, code, stderr)
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%q: stdout is not the JSON document: %v\n%q", tc.args, err, out)
		}
		want := map[string]any{"schema": "lumina.run/v1", "ok": false, "tests": []any{}, "errors": []any{}}
		for _, e := range tc.want {
			want["errors"] = append(want["errors"].([]any), e)
		}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("%q: document %v, want %v", tc.args, s, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("results directory: %v, want none (nothing ran)", err)
	}
}
