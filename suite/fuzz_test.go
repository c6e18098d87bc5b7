package suite

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad fuzzes the readers behind `lumina diff`: Load of a suite.json
// file (asReport false) or of a repeat directory holding one report.json
// (asReport true). Load must never panic; a failure returns no Suite and an
// error naming the package; an accepted suite has the right schema, no nil
// entries, survives a Marshal/Load round trip and can be compared with
// itself.
func FuzzLoad(f *testing.F) {
	for i, fr := range []fakeRun{
		{personality: "cx5", reaction: []int64{2000, 2100}, timeouts: [][]int64{{4000, 8000}}, goodput: 12.5, mct: []int64{100, 200}},
		{personality: "cx6", invalid: true},
		{personality: "cx4", cnpScopes: []string{"per-qp"}, cnpObserved: 3, violations: []string{"r1"}, counterBad: true, failCheck: "gbn", versions: true},
	} {
		b, err := json.Marshal(fr.report("t", i))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		// The suite of that one run, as Summarize writes it.
		dir := f.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "t", "0"), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "t", "0", "report.json"), b, 0o644); err != nil {
			f.Fatal(err)
		}
		s, err := Summarize(dir)
		if err != nil {
			f.Fatal(err)
		}
		sb, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sb, false)
	}
	f.Add([]byte(`{"schema":"lumina.suite/v1","tests":[null]}`), false)
	f.Add([]byte(`{"schema":"lumina.suite/v1","tests":[{"name":"a","runs":[null],"checks":{"x":null}}]}`), false)
	f.Add([]byte(`{"schema":"lumina.suite/v2"}`), false)
	f.Add([]byte(`{}`), true)
	// One directory per fuzzing process, reused: the fuzz function runs
	// serially within a process, and a fresh t.TempDir per input halves
	// the rate.
	base := f.TempDir()
	for _, d := range []string{"r", "s", "again"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, asReport bool) {
		dir := filepath.Join(base, "s")
		if asReport {
			dir = filepath.Join(base, "r")
		}
		path := filepath.Join(dir, FileName)
		if asReport {
			path = dir
			if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(path)
		if err != nil {
			if s != nil {
				t.Fatalf("Load returned a Suite and an error")
			}
			if !strings.HasPrefix(err.Error(), "suite: ") && !errors.Is(err, ErrSchema) {
				t.Fatalf("Load error %q does not name the package", err)
			}
			return
		}
		checkSuite(t, s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("Marshal of a loaded suite: %v", err)
		}
		again := filepath.Join(base, "again", FileName)
		if err := os.WriteFile(again, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s2, err := Load(again)
		if err != nil {
			t.Fatalf("Load of a re-marshalled suite: %v\n%s", err, b)
		}
		b2, err := json.Marshal(s2)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(b2) {
			t.Fatalf("round trip differs:\n%s\n%s", b, b2)
		}
		_ = Compare(s, s2, Options{Resamples: 10, Seed: 1})
	})
}

func checkSuite(t *testing.T, s *Suite) {
	t.Helper()
	if s.Schema != Schema {
		t.Fatalf("accepted suite has schema %q", s.Schema)
	}
	for i, tt := range s.Tests {
		if tt == nil {
			t.Fatalf("accepted suite has tests[%d] == nil", i)
		}
		for _, m := range []map[string]bool{nilValues(tt.Checks), nilValues(tt.Violations), nilValues(tt.Counters), nilValues(tt.Quantities)} {
			for k, isNil := range m {
				if isNil {
					t.Fatalf("accepted suite has a nil entry %q in tests[%d]", k, i)
				}
			}
		}
	}
}
