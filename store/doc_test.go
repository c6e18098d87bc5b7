//go:build cgo

package store

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
)

var update = flag.Bool("update", false, "rewrite the query outputs of docs/lab-results.md")

const docPage = "../docs/lab-results.md"

// docStore makes the store of docs/lab-results.md's firmware A vs B
// recipe: examples/regression/{cx5,cx4}/fast-retx.yaml, 5 repeats, seeds
// 11 (tb1) and 7 (tb2), stored as firmware 22.39 and 22.40.
func docStore(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	root := filepath.Join(tmp, "lab")
	for _, c := range []struct {
		p, job, testbed, fw, date string
		seed                      uint64
	}{
		{"cx5", "A-tb1", "tb1", "22.39", "2026-11-27", 0}, {"cx5", "A-tb2", "tb2", "22.39", "2026-11-27", 7},
		{"cx4", "B-tb1", "tb1", "22.40", "2026-11-28", 0}, {"cx4", "B-tb2", "tb2", "22.40", "2026-11-28", 7},
	} {
		f := filepath.Join("..", "examples", "regression", c.p, "fast-retx.yaml")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := config.Parse(f, data)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(tmp, c.job)
		if res := orchestrator.RunTest(context.Background(), tc, orchestrator.Options{OutDir: out, Seed: c.seed, SeedSet: c.seed != 0}); res.Err != nil {
			t.Fatal(res.Err)
		}
		dirs, err := RunDirs(out)
		if err != nil {
			t.Fatal(err)
		}
		day, _ := time.Parse(time.DateOnly, c.date)
		if _, err := Add(root, Job{ID: c.job, Testbed: c.testbed, Firmware: c.fw, Time: day}, dirs...); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// docQuery is a ```sql block of the page and the ```text block after it
// (-1: none).
type docQuery struct {
	sql        string
	start, end int // the text block's lines (exclusive of the fences)
}

func parseDocQueries(lines []string) []docQuery {
	var out []docQuery
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sql" {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		q := docQuery{sql: strings.Join(lines[i+1:j], "\n"), start: -1}
		k := j + 1
		for k < len(lines) && strings.TrimSpace(lines[k]) == "" {
			k++
		}
		if k < len(lines) && strings.TrimSpace(lines[k]) == "```text" {
			e := k + 1
			for e < len(lines) && strings.TrimSpace(lines[e]) != "```" {
				e++
			}
			q.start, q.end = k+1, e
		}
		out = append(out, q)
		i = j
	}
	return out
}

// table formats a query's result: a header and the rows, columns aligned.
func table(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	cols, data := query(t, db, q)
	cells := [][]string{cols}
	for _, vals := range data {
		row := make([]string, len(cols))
		for i, v := range vals {
			switch x := v.(type) {
			case float64:
				row[i] = strconv.FormatFloat(x, 'f', -1, 64)
			case time.Time:
				row[i] = x.Format(time.DateOnly)
			case nil:
				row[i] = "NULL"
			default:
				row[i] = fmt.Sprint(x)
			}
		}
		cells = append(cells, row)
	}
	width := make([]int, len(cols))
	for _, r := range cells {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var out []string
	for _, r := range cells {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len([]rune(c))+2))
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestDuckDBDocQueries runs every query of docs/lab-results.md with DuckDB
// on the page's store and compares the output with the page's (-update
// rewrites it). Queries of the exported trace (fast-retx.parquet) are
// left to TestExportParquetRunDir (cmd/lumina), which checks the same
// counts.
func TestDuckDBDocQueries(t *testing.T) {
	b, err := os.ReadFile(docPage)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	qs := parseDocQueries(lines)
	if len(qs) < 6 {
		t.Fatalf("%d sql blocks in %s, want at least 6", len(qs), docPage)
	}
	root := docStore(t)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type repl struct {
		start, end int
		lines      []string
	}
	var repls []repl
	checked := 0
	for _, q := range qs {
		text := strings.ReplaceAll(q.sql, "'lab/", "'"+root+"/")
		if strings.Contains(text, "fast-retx.parquet") {
			continue
		}
		if q.start < 0 {
			if _, err := db.Exec(text); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
			continue
		}
		got := table(t, db, text)
		checked++
		if *update {
			repls = append(repls, repl{q.start, q.end, got})
			continue
		}
		if want := lines[q.start:q.end]; strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("%s\ngives\n%s\nthe page says\n%s", q.sql, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if checked < 5 {
		t.Errorf("%d queries with output checked, want 5", checked)
	}
	if *update {
		for i := len(repls) - 1; i >= 0; i-- {
			r := repls[i]
			lines = append(lines[:r.start], append(r.lines, lines[r.end:]...)...)
		}
		if err := os.WriteFile(docPage, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
