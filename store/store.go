package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/suite"
)

// Job is what the caller knows about the job whose repeats are stored:
// the lab's job id and labels; the rest overrides what report.json says.
type Job struct {
	// ID names the job's files: storing a job ID again replaces its
	// earlier rows (a redelivered job). Required.
	ID string
	// Test and Testbed override the report's names when set (a lab names
	// its testbeds; a sim run's testbed is "sim").
	Test    string
	Testbed string
	// NIC and Firmware are the partition values. Unset: the label "nic"
	// (or "firmware"), else the requester's identity in report.json (its
	// personality, or driver; its firmware), else "unknown".
	NIC      string
	Firmware string
	// Labels are the job's labels (lumina lab submit --label k=v).
	Labels map[string]string
	// Time is when the results were stored; its UTC day is the date
	// partition. Zero: now.
	Time time.Time
	// RepeatSet is the lab's repeat set (lumina lab submit --repeats N
	// makes jobs 0..N-1, each running the test's num-repeats); Worker and
	// Delivery say which worker ran the attempt stored and which delivery
	// of the job it was (1: the first). Zero when not from the lab.
	RepeatSet int
	Worker    string
	Delivery  int
	// DirBase, with AddResults, is where the rows' dir column says the
	// repeats are kept: DirBase/<test>/<repeat> (the lab moves a job's
	// results to ROOT/jobs/<id>/); empty: the directories as read.
	DirBase string
}

// Sentinel errors.
var (
	ErrNoJobID    = errors.New("store: a job id is required (it names the job's files)")
	ErrNoRunDir   = errors.New("store: no run directory (a directory holding report.json)")
	ErrSelection  = errors.New("store: bad selection")
	ErrNoSelected = errors.New("store: no run matches the selection")
)

// Unknown is the partition value of a NIC or firmware nobody named.
const Unknown = "unknown"

// Add stores the repeats whose run directories (each holding report.json,
// as `lumina run` writes OUT/<test>/<repeat>/) are runDirs as job's rows of
// the runs and losses tables under root, one file per table and partition,
// written atomically (a temporary file renamed into place); then it removes
// the files an earlier attempt of the same job left in other partitions.
// It returns the files written.
func Add(root string, job Job, runDirs ...string) ([]string, error) {
	names := make([]string, len(runDirs))
	for i, d := range runDirs {
		names[i] = filepath.ToSlash(filepath.Clean(d))
	}
	return add(root, job, runDirs, names)
}

// add stores runDirs, naming them names in the dir column.
func add(root string, job Job, runDirs, names []string) ([]string, error) {
	if job.ID == "" {
		return nil, ErrNoJobID
	}
	if len(runDirs) == 0 {
		return nil, ErrNoRunDir
	}
	when := job.Time
	if when.IsZero() {
		when = time.Now()
	}
	when = when.UTC().Truncate(time.Millisecond)
	runs := map[string][]RunRow{}
	losses := map[string][]LossRow{}
	for i, dir := range runDirs {
		r, err := suite.ReadReport(dir)
		if err != nil {
			return nil, err
		}
		rp := suite.RepeatOf(r, names[i])
		row := runRow(job, when, rp)
		part := partition(job, rp, when)
		runs[part] = append(runs[part], row)
		if a := r.Analysis; a != nil {
			for i, l := range a.Checks.Retransmission.Losses {
				lr := LossRow{JobID: job.ID, Time: when, Test: row.Test, Testbed: row.Testbed, Labels: row.Labels, Seed: row.Seed,
					Repeat: row.Repeat, Loss: int64(i), Conn: int64(l.Conn), PSN: int64(l.PSN), RelPSN: int64(l.RelPSN),
					Iter: int64(l.Iter), Index: int64(l.Index), TimeNs: l.TimeNs, Event: l.Event, Kind: l.Kind,
					NACKGenerationNs: l.NACKGenerationNs, NACKReactionNs: l.NACKReactionNs, RetransmissionNs: l.RetransmissionNs,
					NextDeliveredNs: l.NextDeliveredNs, NACKGenerationCorrectedNs: l.NACKGenerationCorrectedNs,
					NACKReactionCorrectedNs: l.NACKReactionCorrectedNs, ReissueResponseNs: l.ReissueResponseNs, RetxIndex: int64(l.RetxIndex)}
				if l.NAKPSN != nil {
					v := int64(*l.NAKPSN)
					lr.NAKPSN = &v
				}
				losses[part] = append(losses[part], lr)
			}
		}
	}
	name := JobFile(job.ID)
	var written []string
	for _, part := range slices.Sorted(maps.Keys(runs)) {
		p, err := writeFile(filepath.Join(root, TableRuns, part), name, runs[part])
		if err != nil {
			return written, err
		}
		written = append(written, p)
		if len(losses[part]) > 0 {
			p, err := writeFile(filepath.Join(root, TableLosses, part), name, losses[part])
			if err != nil {
				return written, err
			}
			written = append(written, p)
		}
	}
	// The earlier attempt's files: every file of the job not just written
	// (another partition, or a losses file the new attempt has no rows for).
	for _, table := range []string{TableRuns, TableLosses} {
		old, err := filepath.Glob(filepath.Join(root, table, "*", "*", "*", name))
		if err != nil {
			return written, err
		}
		for _, f := range old {
			if !slices.Contains(written, f) {
				if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
					return written, fmt.Errorf("store: %w", err)
				}
			}
		}
	}
	return written, nil
}

// AddResults stores every repeat under resultsDir, laid out as `lumina run
// -o resultsDir` writes it (resultsDir/<test>/<repeat>/report.json; see
// RunDirs), as job's rows: Add of them, the dir column relative to
// job.DirBase when set. It is what the lab's worker calls once a job's
// run finished, before it acks the job.
func AddResults(root string, job Job, resultsDir string) ([]string, error) {
	dirs, err := RunDirs(resultsDir)
	if err != nil {
		return nil, err
	}
	if job.DirBase == "" {
		return Add(root, job, dirs...)
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		rel, err := filepath.Rel(resultsDir, d)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		names[i] = filepath.ToSlash(filepath.Join(job.DirBase, rel))
	}
	return add(root, job, dirs, names)
}

// ContentID is the job id of results stored without one (`lumina export
// store` without --job): "content-" and 16 hex digits of the SHA-256 of
// each run directory's report.json bytes, in order, and of the job's
// metadata that changes the rows (test, testbed, NIC, firmware, labels).
// Storing the same results with the same metadata again gives the same
// id, so it replaces them; a new run written to the same directory, or
// the same results under another firmware or label, is a new job and
// adds rows. The directories' paths do not enter it.
func ContentID(job Job, runDirs ...string) (string, error) {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	for _, d := range runDirs {
		p := filepath.Join(d, "report.json")
		b, err := safefile.ReadFile(p, safefile.MaxRecordSize, safefile.Options{})
		if err != nil {
			return "", fmt.Errorf("store: %w", err)
		}
		field("report")
		field(string(b))
	}
	field("test")
	field(job.Test)
	field("testbed")
	field(job.Testbed)
	field("nic")
	field(job.NIC)
	field("firmware")
	field(job.Firmware)
	for _, k := range slices.Sorted(maps.Keys(job.Labels)) {
		field("label")
		field(k)
		field(job.Labels[k])
	}
	return "content-" + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// RunDirs lists the repeat directories (holding report.json) under dir,
// by test and repeat: dir itself when it is one; its all-digit
// subdirectories when it is one test's directory (OUT/<test>); else
// OUT/<test>/<repeat>/ of a `lumina run -o OUT` results directory, as
// suite.Read takes them (kept older results, <repeat>.replaced-…, left
// out).
func RunDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
		return []string{dir}, nil
	}
	out, err := repeatDirs(dir)
	if err != nil || len(out) > 0 {
		return out, err
	}
	tests, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for _, t := range tests {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		reps, err := repeatDirs(filepath.Join(dir, t.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, reps...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w under %s", ErrNoRunDir, dir)
	}
	return out, nil
}

// repeatDirs lists dir's repeat directories (suite.RepeatDirs), by number.
func repeatDirs(dir string) ([]string, error) {
	ns, err := suite.RepeatDirs(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = filepath.Join(dir, strconv.Itoa(n))
	}
	return out, nil
}

func runRow(job Job, when time.Time, rp suite.Repeat) RunRow {
	row := RunRow{JobID: job.ID, Time: when, Test: rp.Test, File: rp.File, Testbed: rp.Testbed, Labels: map[string]string{},
		Seed: rp.Seed, Repeat: int64(rp.Repeat), RepeatSet: int64(job.RepeatSet), Worker: job.Worker, Delivery: int64(job.Delivery), Dir: rp.Dir, Valid: rp.Valid, Verdict: string(model.Pass), Checks: map[string]string{},
		Violations: rp.Violations, CountersOK: rp.CountersOK, CountersMismatch: rp.CountersMismatch,
		CNPDecided: rp.CNPDecided, CNPScopes: rp.CNPScopes}
	if job.Test != "" {
		row.Test = job.Test
	}
	if job.Testbed != "" {
		row.Testbed = job.Testbed
	}
	maps.Copy(row.Labels, job.Labels)
	for k, v := range rp.Checks {
		row.Checks[k] = string(v)
		if v.Failed() {
			row.Failed = append(row.Failed, k)
		}
	}
	sort.Strings(row.Failed)
	if len(row.Failed) > 0 || !rp.Valid {
		row.Verdict = string(model.Fail)
	}
	for _, role := range slices.Sorted(maps.Keys(rp.NIC)) {
		id := rp.NIC[role]
		row.NICs = append(row.NICs, NICRow{Role: role, Personality: id.Personality, Driver: id.Driver, DriverVersion: id.DriverVersion, Firmware: id.Firmware})
	}
	for name, col := range row.quantities() {
		*col = rp.Quantities[name]
	}
	return row
}

// partition is the row's partition directory, nic=N/firmware=F/date=D.
func partition(job Job, rp suite.Repeat, when time.Time) string {
	id := rp.NIC["requester"]
	if id == (suite.Identity{}) && len(rp.NIC) > 0 {
		id = rp.NIC[slices.Sorted(maps.Keys(rp.NIC))[0]]
	}
	nic := firstSet(job.NIC, job.Labels["nic"], id.Personality, id.Driver, Unknown)
	fw := firstSet(job.Firmware, job.Labels["firmware"], id.Firmware, Unknown)
	return filepath.Join("nic="+Escape(nic), "firmware="+Escape(fw), "date="+when.Format(time.DateOnly))
}

func firstSet(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// JobFile is the file name of a job's rows in each partition.
func JobFile(id string) string { return "job-" + Escape(id) + ".parquet" }

// Escape percent-encodes every byte of a partition value or job id but
// ASCII letters, digits, '.', '_' and '-' (and a leading '.'), as Hive
// escapes partition values; DuckDB decodes them when reading.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Unescape reverses Escape.
func Unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: bad escape in %q", ErrSelection, s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%w: bad escape in %q", ErrSelection, s)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

// writeFile writes rows to dir/name atomically.
func writeFile[T any](dir, name string, rows []T) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	zc, err := NewZstd()
	if err != nil {
		tmp.Close()
		return "", fmt.Errorf("store: %w", err)
	}
	defer zc.Close()
	w := parquet.NewGenericWriter[T](tmp, parquet.Compression(zc))
	if _, err := w.Write(rows); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store: %s: %w", name, err)
	}
	if err := w.Close(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store: %s: %w", name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	p := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return p, nil
}
