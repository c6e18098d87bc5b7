package store

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/netlumina/lumina/suite"
)

// Selection picks runs from the store: every key must match. The keys nic,
// firmware and date pick partitions; job (job id), test, testbed and
// valid compare the row's columns; any other key compares the label of
// that name. `lumina diff --store ROOT --base 'firmware=22.39'`.
type Selection map[string]string

// ParseSelection parses "k=v,k=v" (values may not hold ','; an empty
// selection selects everything).
func ParseSelection(s string) (Selection, error) {
	sel := Selection{}
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w %q: want key=value[,key=value…]", ErrSelection, s)
		}
		if _, dup := sel[k]; dup {
			return nil, fmt.Errorf("%w %q: %s given twice", ErrSelection, s, k)
		}
		sel[k] = strings.TrimSpace(v)
	}
	return sel, nil
}

// String is the selection as ParseSelection reads it, keys sorted.
func (sel Selection) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

// Partition is a row's partition values.
type Partition struct{ NIC, Firmware, Date string }

// parsePartition reads nic=N/firmware=F/date=D (rel to the table).
func parsePartition(rel string) (Partition, bool) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 3 {
		return Partition{}, false
	}
	var vals [3]string
	for i, k := range partitionKeys {
		v, ok := strings.CutPrefix(parts[i], k+"=")
		if !ok {
			return Partition{}, false
		}
		u, err := Unescape(v)
		if err != nil {
			return Partition{}, false
		}
		vals[i] = u
	}
	return Partition{NIC: vals[0], Firmware: vals[1], Date: vals[2]}, true
}

func (sel Selection) matchPartition(p Partition) bool {
	for k, want := range map[string]string{"nic": p.NIC, "firmware": p.Firmware, "date": p.Date} {
		if v, ok := sel[k]; ok && v != want {
			return false
		}
	}
	return true
}

func (sel Selection) matchRow(r *RunRow) bool {
	for k, v := range sel {
		switch k {
		case "nic", "firmware", "date":
		case "job":
			if r.JobID != v {
				return false
			}
		case "test":
			if r.Test != v {
				return false
			}
		case "testbed":
			if r.Testbed != v {
				return false
			}
		case "valid":
			if fmt.Sprint(r.Valid) != v {
				return false
			}
		default:
			if lv, ok := r.Labels[k]; !ok || lv != v {
				return false
			}
		}
	}
	return true
}

// SelectedRun is a runs row with its partition.
type SelectedRun struct {
	Partition
	RunRow
}

// Runs reads the runs rows under root that sel selects, ordered by time,
// job id, test and repeat. Files are read one at a time (rows are
// repeats: small).
func Runs(root string, sel Selection) ([]SelectedRun, error) {
	dir := filepath.Join(root, TableRuns)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: %s is not a results root: %w", root, err)
	}
	var out []SelectedRun
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") || !strings.HasSuffix(d.Name(), ".parquet") {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		p, ok := parsePartition(rel)
		if !ok || !sel.matchPartition(p) {
			return nil
		}
		rows, err := parquet.ReadFile[RunRow](path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for i := range rows {
			if sel.matchRow(&rows[i]) {
				out = append(out, SelectedRun{Partition: p, RunRow: rows[i]})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		switch {
		case !a.Time.Equal(b.Time):
			return a.Time.Before(b.Time)
		case a.JobID != b.JobID:
			return a.JobID < b.JobID
		case a.Test != b.Test:
			return a.Test < b.Test
		}
		return a.Repeat < b.Repeat
	})
	return out, nil
}

// Select is the suite the selected runs make, as `lumina diff` compares
// it: one test per test name, pooling its repeats over jobs and testbeds
// (in Runs order), each summarized as suite.Read summarizes report.json
// files.
func Select(root string, sel Selection) (*suite.Suite, error) {
	rows, err := Runs(root, sel)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w %q under %s", ErrNoSelected, sel.String(), root)
	}
	by := map[string][]suite.Repeat{}
	for i := range rows {
		by[rows[i].Test] = append(by[rows[i].Test], rows[i].repeatOf())
	}
	s := &suite.Suite{Schema: suite.Schema, Tests: []*suite.Test{}, Dir: root + "[" + sel.String() + "]"}
	for _, name := range slices.Sorted(maps.Keys(by)) {
		s.Tests = append(s.Tests, suite.TestOf(by[name]))
	}
	return s, nil
}
