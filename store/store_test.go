package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/suite"
)

// fixture: examples/regression/{cx5,cx4}/{fast-retx,read,timeout}.yaml, 3
// repeats each, run once on the sim testbed for every test of the package.
type fixture struct {
	dir string // OUT/<personality>/<test>/<repeat>
	err error
}

var (
	fixOnce sync.Once
	fix     fixture
)

var fixTests = []string{"fast-retx", "read", "timeout"}

func runs(t *testing.T) string {
	t.Helper()
	fixOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lumina-results-test-")
		if err != nil {
			fix.err = err
			return
		}
		fix.dir = dir
		for _, p := range []string{"cx5", "cx4"} {
			for _, name := range fixTests {
				f := filepath.Join("..", "examples", "regression", p, name+".yaml")
				data, err := os.ReadFile(f)
				if err != nil {
					fix.err = err
					return
				}
				tc, err := config.Parse(f, data)
				if err != nil {
					fix.err = err
					return
				}
				tc.NumRepeats = 3
				res := orchestrator.RunTest(context.Background(), tc, orchestrator.Options{OutDir: filepath.Join(dir, p)})
				if res.Err != nil {
					fix.err = res.Err
					return
				}
			}
		}
	})
	if fix.err != nil {
		t.Fatal(fix.err)
	}
	return fix.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fix.dir != "" {
		os.RemoveAll(fix.dir)
	}
	os.Exit(code)
}

var day1 = time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)

// store adds both personalities' results as firmware A (cx5) and B (cx4),
// one job per test.
func store(t *testing.T) string {
	t.Helper()
	dir := runs(t)
	root := t.TempDir()
	for _, fw := range []struct{ p, fw string }{{"cx5", "22.39"}, {"cx4", "22.40"}} {
		for _, name := range fixTests {
			dirs, err := RunDirs(filepath.Join(dir, fw.p, name))
			if err != nil {
				t.Fatal(err)
			}
			job := Job{ID: fw.fw + "/" + name, Testbed: "tb1", Firmware: fw.fw, Labels: map[string]string{"build": "b" + fw.fw}, Time: day1}
			if _, err := Add(root, job, dirs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// TestSelectMatchesRead: the suite a selection of the store makes is the
// one suite.Read makes of the same report.json files (but the runs'
// directories, which the store records as given).
func TestSelectMatchesRead(t *testing.T) {
	root := store(t)
	for _, c := range []struct{ p, fw string }{{"cx5", "22.39"}, {"cx4", "22.40"}} {
		want, err := suite.Read(filepath.Join(runs(t), c.p))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Select(root, Selection{"firmware": c.fw})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*suite.Suite{want, got} {
			for _, tt := range s.Tests {
				tt.Testbed = "x"
				for i := range tt.Runs {
					tt.Runs[i].Dir = filepath.Base(tt.Runs[i].Dir)
				}
			}
		}
		wb, _ := json.MarshalIndent(want, "", " ")
		gb, _ := json.MarshalIndent(got, "", " ")
		if string(wb) != string(gb) {
			t.Errorf("%s: store selection differs from suite.Read:\n%s\nwant\n%s", c.fw, gb, wb)
		}
		if len(got.Tests) != 3 || got.Tests[0].Repeats != 3 {
			t.Errorf("%s: %d tests, want 3 of 3 repeats", c.fw, len(got.Tests))
		}
	}
	// The NIC is the personality (no nic label), firmware and date the
	// job's.
	for _, want := range []string{
		"runs/nic=cx5/firmware=22.39/date=2026-11-27/job-22.39%2Ffast-retx.parquet",
		"losses/nic=cx4/firmware=22.40/date=2026-11-27/job-22.40%2Fread.parquet",
	} {
		if _, err := os.Stat(filepath.Join(root, want)); err != nil {
			t.Error(err)
		}
	}
	// timeout losses are timeout retransmissions: the read and fast-retx
	// tests' losses have files, every test a runs file.
	n := 0
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if n != 12 {
		t.Errorf("%d files in the store, want 12", n)
	}
}

// TestQuantityColumns: every quantity lumina diff knows has its column.
func TestQuantityColumns(t *testing.T) {
	var r RunRow
	cols := r.quantities()
	for _, q := range suite.Quantities {
		if cols[q.Name] == nil {
			t.Errorf("no runs column for quantity %s", q.Name)
		}
	}
	if len(cols) != len(suite.Quantities) {
		t.Errorf("%d quantity columns for %d quantities", len(cols), len(suite.Quantities))
	}
	typ := reflect.TypeFor[RunRow]()
	for name := range cols {
		found := false
		for i := range typ.NumField() {
			if strings.HasPrefix(typ.Field(i).Tag.Get("parquet"), name+",") {
				found = true
			}
		}
		if !found {
			t.Errorf("quantity %s: no field tagged with its name", name)
		}
	}
}

// TestRedeliveredJobReplaces: storing a job id again (later, so in another
// date partition, and with another firmware label) leaves only the new
// attempt's rows.
func TestRedeliveredJobReplaces(t *testing.T) {
	dir := runs(t)
	root := t.TempDir()
	dirs, err := RunDirs(filepath.Join(dir, "cx5", "fast-retx"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := RunDirs(filepath.Join(dir, "cx5", "read"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Add(root, Job{ID: "other", Time: day1}, other...); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(root, Job{ID: "j1", Firmware: "A", Time: day1}, dirs...); err != nil {
		t.Fatal(err)
	}
	written, err := Add(root, Job{ID: "j1", Firmware: "B", Time: day1.Add(24 * time.Hour)}, dirs[:2]...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(root, "runs/nic=cx5/firmware=B/date=2026-11-28/job-j1.parquet"),
		filepath.Join(root, "losses/nic=cx5/firmware=B/date=2026-11-28/job-j1.parquet"),
	}
	if !slices.Equal(written, want) {
		t.Errorf("written %q, want %q", written, want)
	}
	rows, err := Runs(root, Selection{"job": "j1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Firmware != "B" || rows[0].Date != "2026-11-28" || rows[1].Repeat != 1 {
		t.Errorf("job j1 after the redelivery: %d rows %+v", len(rows), rows)
	}
	for _, p := range []string{"runs/nic=cx5/firmware=A", "losses/nic=cx5/firmware=A"} {
		ents, _ := filepath.Glob(filepath.Join(root, p, "*", "*"))
		if len(ents) != 0 {
			t.Errorf("the first attempt's files remain: %q", ents)
		}
	}
	if rows, err := Runs(root, Selection{"job": "other"}); err != nil || len(rows) != 3 {
		t.Errorf("another job's rows: %d, %v; want 3", len(rows), err)
	}
}

func TestSelectionErrors(t *testing.T) {
	for _, s := range []string{"firmware", "=x", "a=1,a=2", "a=1,,b=2"} {
		if _, err := ParseSelection(s); err == nil {
			t.Errorf("ParseSelection(%q): no error", s)
		}
	}
	sel, err := ParseSelection(" firmware=22.39 , build=b1")
	if err != nil || sel.String() != "build=b1,firmware=22.39" {
		t.Errorf("ParseSelection: %v %v", sel, err)
	}
	root := t.TempDir()
	if _, err := Select(root, sel); err == nil {
		t.Error("Select of a directory without runs/: no error")
	}
	if _, err := Add(root, Job{}, "x"); err != ErrNoJobID {
		t.Errorf("Add without a job id: %v", err)
	}
	if _, err := Add(root, Job{ID: "j"}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "report.json") {
		t.Errorf("Add of a directory without report.json: %v", err)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{"22.39": "22.39", "a/b c": "a%2Fb%20c", ".x": "%2Ex", "fw=1": "fw%3D1", "": ""} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if back, err := Unescape(Escape(in)); err != nil || back != in {
			t.Errorf("Unescape(Escape(%q)) = %q, %v", in, back, err)
		}
	}
	for _, bad := range []string{"%", "%2", "%zz"} {
		if _, err := Unescape(bad); err == nil {
			t.Errorf("Unescape(%q): no error", bad)
		}
	}
}

// TestAddResults: the lab's call — a `lumina run -o` results directory,
// the dir column under DirBase, the lab's attempt in its columns.
func TestAddResults(t *testing.T) {
	root := t.TempDir()
	job := Job{ID: "3f2a9c0d4e5b6a71", Testbed: "tb-a", NIC: "cx5-lab", Labels: map[string]string{"firmware": "22.39"},
		RepeatSet: 2, Worker: "w1", Delivery: 2, DirBase: "jobs/3f2a9c0d4e5b6a71", Time: day1}
	files, err := AddResults(root, job, filepath.Join(runs(t), "cx4"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0] != filepath.Join(root, "runs/nic=cx5-lab/firmware=22.39/date=2026-11-27/job-3f2a9c0d4e5b6a71.parquet") {
		t.Errorf("files %q", files)
	}
	rows, err := Runs(root, Selection{"firmware": "22.39", "testbed": "tb-a"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s %d %d %s %d %s", r.Test, r.Repeat, r.RepeatSet, r.Worker, r.Delivery, r.Dir))
	}
	want := []string{
		"fast-retx 0 2 w1 2 jobs/3f2a9c0d4e5b6a71/fast-retx/0", "fast-retx 1 2 w1 2 jobs/3f2a9c0d4e5b6a71/fast-retx/1", "fast-retx 2 2 w1 2 jobs/3f2a9c0d4e5b6a71/fast-retx/2",
		"read 0 2 w1 2 jobs/3f2a9c0d4e5b6a71/read/0", "read 1 2 w1 2 jobs/3f2a9c0d4e5b6a71/read/1", "read 2 2 w1 2 jobs/3f2a9c0d4e5b6a71/read/2",
		"timeout 0 2 w1 2 jobs/3f2a9c0d4e5b6a71/timeout/0", "timeout 1 2 w1 2 jobs/3f2a9c0d4e5b6a71/timeout/1", "timeout 2 2 w1 2 jobs/3f2a9c0d4e5b6a71/timeout/2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%q\nwant\n%q", got, want)
	}
}

// TestCorruptFile: a file of the store that is not Parquet is an error
// naming it, not a panic; files outside the partition layout and
// temporary files are ignored.
func TestCorruptFile(t *testing.T) {
	root := t.TempDir()
	dirs, err := RunDirs(filepath.Join(runs(t), "cx5", "timeout"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Add(root, Job{ID: "j", Time: day1}, dirs...); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(root, "runs", "nic=cx5", "firmware=unknown", "date=2026-11-27")
	for _, f := range []string{filepath.Join(root, "runs", "stray.parquet"), filepath.Join(part, ".job-x.parquet.tmp-1")} {
		if err := os.WriteFile(f, []byte("not parquet"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rows, err := Runs(root, nil); err != nil || len(rows) != 3 {
		t.Fatalf("Runs: %d rows, %v; want 3", len(rows), err)
	}
	bad := filepath.Join(part, "job-bad.parquet")
	if err := os.WriteFile(bad, []byte("PAR1 but not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Select(root, Selection{}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Select with a corrupt file: %v; want an error naming %s", err, bad)
	}
}
