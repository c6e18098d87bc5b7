//go:build cgo

package store

// DuckDB reads the store (the queries of docs/lab-results.md, "Results and
// queries") and must find the numbers report.json holds. DuckDB is
// imported by this test file only: its engine is a cgo library of its
// bindings module, and only `go test ./store` links it (docs/lab-results.md says
// what that costs; no lumina binary carries it).

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" database/sql driver

	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/suite"
)

func duck(t *testing.T, root string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The views docs/lab-results.md defines: partition values as text (DuckDB
	// would read firmware=22 as a number), dates as dates.
	for _, table := range []string{TableRuns, TableLosses} {
		q := fmt.Sprintf(`CREATE VIEW %s AS SELECT * FROM read_parquet('%s/%s/*/*/*/*.parquet', hive_partitioning = true,
			hive_types = {'nic': VARCHAR, 'firmware': VARCHAR, 'date': DATE})`, table, root, table)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// query runs q and returns its column names and every row's values.
func query(t *testing.T, db *sql.DB, q string, args ...any) (cols []string, out [][]any) {
	t.Helper()
	rs, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	if cols, err = rs.Columns(); err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return cols, out
}

// rows runs q and returns every row as its columns formatted with %v,
// joined by " ".
func rows(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	_, vals := query(t, db, q, args...)
	var out []string
	for _, row := range vals {
		var s []string
		for _, v := range row {
			s = append(s, fmt.Sprint(v))
		}
		out = append(out, strings.Join(s, " "))
	}
	return out
}

var fixFirmware = []struct{ p, fw string }{{"cx5", "22.39"}, {"cx4", "22.40"}}

// TestDuckDBLosses: the losses per firmware and test, and the latency
// breakdown of one loss, are report.json's.
func TestDuckDBLosses(t *testing.T) {
	root := store(t)
	db := duck(t, root)
	got := rows(t, db, `SELECT firmware, test, count(*), count(DISTINCT repeat), count(*) FILTER (kind = 'fast')
		FROM losses GROUP BY ALL ORDER BY ALL`)
	// From the reports.
	var want []string
	for _, c := range fixFirmware {
		for _, name := range fixTests {
			dirs, err := RunDirs(filepath.Join(runs(t), c.p, name))
			if err != nil {
				t.Fatal(err)
			}
			n, fast := 0, 0
			for _, d := range dirs {
				r := readReportT(t, d)
				for _, l := range r.Analysis.Checks.Retransmission.Losses {
					n++
					if l.Kind == "fast" {
						fast++
					}
				}
			}
			want = append(want, fmt.Sprintf("%s %s %d %d %d", c.fw, name, n, len(dirs), fast))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("losses per firmware and test:\n got %q\nwant %q", got, want)
	}
	// fast-retx drops 16 packets per repeat, read one response per READ
	// (2 QPs × 8), timeout the tail packet of each of its 5 messages.
	exact := []string{"22.39 fast-retx 48 3 48", "22.39 read 48 3 48", "22.39 timeout 15 3 0",
		"22.40 fast-retx 48 3 48", "22.40 read 48 3 48", "22.40 timeout 15 3 0"}
	if !slices.Equal(got, exact) {
		t.Errorf("losses per firmware and test:\n got %q\nwant %q", got, exact)
	}

	// One loss: cx4 ("22.40"), fast-retx, repeat 1, the report's losses[2].
	got = rows(t, db, `SELECT psn, rel_psn, kind, nack_generation_ns, nack_reaction_ns, retransmission_ns
		FROM losses WHERE firmware = '22.40' AND test = 'fast-retx' AND repeat = 1 AND loss = 2`)
	l := readReportT(t, filepath.Join(runs(t), "cx4", "fast-retx", "1")).Analysis.Checks.Retransmission.Losses[2]
	w := fmt.Sprintf("%d %d %s %d %d %d", l.PSN, l.RelPSN, l.Kind, *l.NACKGenerationNs, *l.NACKReactionNs, *l.RetransmissionNs)
	if len(got) != 1 || got[0] != w {
		t.Errorf("loss 2 of cx4 fast-retx repeat 1: got %q, report.json has %q", got, w)
	}
	if exact := "4798488 50 fast 1230 171797 173247"; w != exact { // cx4's jittered reaction, seed 11
		t.Errorf("loss 2 of cx4 fast-retx repeat 1 in report.json: %q, want %q", w, exact)
	}
}

// TestDuckDBVerdicts: the verdicts per check and test are the suite
// summary's counts.
func TestDuckDBVerdicts(t *testing.T) {
	root := store(t)
	db := duck(t, root)
	got := rows(t, db, `SELECT firmware, test, c.key, c.value, count(*)
		FROM (SELECT firmware, test, unnest(map_entries(checks)) AS c FROM runs) GROUP BY ALL ORDER BY ALL`)
	var want []string
	for _, c := range fixFirmware {
		s, err := suite.Read(filepath.Join(runs(t), c.p))
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range s.Tests {
			for _, name := range slices.Sorted(maps.Keys(tt.Checks)) {
				cs := tt.Checks[name]
				for _, v := range []struct {
					verdict string
					n       int
				}{{"fail", cs.Fail}, {"inconclusive", cs.Inconclusive}, {"pass", cs.Pass}, {"skip", cs.Skip}} {
					if v.n > 0 {
						want = append(want, fmt.Sprintf("%s %s %s %s %d", c.fw, tt.Name, name, v.verdict, v.n))
					}
				}
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("verdicts:\n got %q\nwant %q", got, want)
	}
	if len(got) != 54 { // 9 checks × 3 tests × 2 firmwares, all pass
		t.Errorf("%d verdict rows, want 54", len(got))
	}
}

// TestDuckDBTrend: the median NACK reaction and retransmission latency of
// fast-retx across firmware are the suite summary's medians (both
// interpolate: quantile_cont, type 7).
func TestDuckDBTrend(t *testing.T) {
	root := store(t)
	db := duck(t, root)
	got := rows(t, db, `SELECT firmware, count(*), median(x)
		FROM (SELECT firmware, unnest(nack_reaction_ns) AS x FROM runs WHERE test = 'fast-retx')
		GROUP BY firmware ORDER BY firmware`)
	var want []string
	for _, c := range fixFirmware {
		s, err := suite.Read(filepath.Join(runs(t), c.p))
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range s.Tests {
			if tt.Name == "fast-retx" {
				q := tt.Quantities["nack_reaction_ns"]
				want = append(want, fmt.Sprintf("%s %d %v", c.fw, q.N, q.Median))
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("trend:\n got %q\nwant %q", got, want)
	}
	// The same from the losses table.
	got2 := rows(t, db, `SELECT firmware, count(*), median(nack_reaction_ns)::DOUBLE FROM losses
		WHERE test = 'fast-retx' AND kind = 'fast' GROUP BY firmware ORDER BY firmware`)
	if !slices.Equal(got2, want) {
		t.Errorf("trend from losses:\n got %q\nwant %q", got2, want)
	}
	if exact := []string{"22.39 48 3000", "22.40 48 172070"}; !slices.Equal(got, exact) {
		t.Errorf("trend: got %q, want %q", got, exact)
	}
}

// TestDuckDBFlaky: the flaky-test query finds a test whose repeats
// disagree; a firmware value with '/' and ' ' reads back decoded.
func TestDuckDBFlaky(t *testing.T) {
	root := store(t)
	// A fourth repeat of cx5 timeout whose timeout check failed.
	src := filepath.Join(runs(t), "cx5", "timeout", "2", "report.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["repeat"] = 3
	m["checks"].(map[string]any)["timeout"] = map[string]any{"verdict": "fail", "detail": "edited by the test"}
	dir := filepath.Join(t.TempDir(), "3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(root, Job{ID: "extra", Testbed: "tb2", Firmware: "22.39", Time: day1}, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(root, Job{ID: "odd", Firmware: "fw 1/2", Time: day1}, dir); err != nil {
		t.Fatal(err)
	}
	db := duck(t, root)
	got := rows(t, db, `SELECT firmware, test, count(*) AS repeats, count(*) FILTER (verdict = 'fail') AS failing,
			list_sort(list_distinct(flatten(list(failed)))) AS checks
		FROM runs GROUP BY ALL HAVING failing > 0 AND failing < repeats ORDER BY ALL`)
	want := []string{"22.39 timeout 4 1 [timeout]"}
	if !slices.Equal(got, want) {
		t.Errorf("flaky:\n got %q\nwant %q", got, want)
	}
	got = rows(t, db, `SELECT DISTINCT firmware, testbed FROM runs WHERE job_id = 'odd'`)
	if want := []string{"fw 1/2 sim"}; !slices.Equal(got, want) {
		t.Errorf("escaped partition: got %q, want %q", got, want)
	}
}

func readReportT(t *testing.T, dir string) *orchestrator.Report {
	t.Helper()
	r, err := suite.ReadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
