package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/orchestrator"
)

// Schema names the suite.json format. Fields are only ever added.
const Schema = "lumina.suite/v1"

// FileName is the suite summary's file name in a results directory.
const FileName = "suite.json"

// Sentinel errors.
var (
	// ErrNoRuns: the directory holds no OUT/<test>/<repeat>/report.json and
	// no suite.json.
	ErrNoRuns = errors.New("suite: no runs found")
	// ErrSchema: a suite.json of an unknown schema.
	ErrSchema = errors.New("suite: unknown suite.json schema")
)

// Suite is suite.json: the summary of every run under a results directory.
type Suite struct {
	Schema string  `json:"schema"`
	Tests  []*Test `json:"tests"`
	// Dir is where the suite was read from (not serialized).
	Dir string `json:"-"`
}

// Identity is what a run recorded about one RNIC under test: the software
// RNIC personality in sim and netns, the driver and firmware on real hosts
// (empty when not recorded).
type Identity struct {
	Personality   string `json:"personality,omitempty"`
	Driver        string `json:"driver,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	Firmware      string `json:"firmware,omitempty"`
}

// String is "cx5", "mlx5_core 5.8 fw 16.35.2000", or "unknown".
func (id Identity) String() string {
	var parts []string
	if id.Personality != "" {
		parts = append(parts, id.Personality)
	}
	if id.Driver != "" {
		parts = append(parts, strings.TrimSpace(id.Driver+" "+id.DriverVersion))
	}
	if id.Firmware != "" {
		parts = append(parts, "fw "+id.Firmware)
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, " ")
}

// Test summarizes every repeat of one test.
type Test struct {
	Name    string `json:"name"`
	File    string `json:"file,omitempty"`
	Testbed string `json:"testbed"`
	Seed    uint64 `json:"seed"`
	// NIC is the identity of the requester's and the responder's RNIC, by
	// role. Repeats that disagree are joined with " | ".
	NIC map[string]Identity `json:"nic"`
	// Repeats counts the repeats found, Valid those whose trace passed the
	// integrity check. Only valid repeats contribute to Checks (except
	// integrity), Violations, Counters, CNPScopes and Quantities.
	Repeats int   `json:"repeats"`
	Valid   int   `json:"valid"`
	Runs    []Run `json:"runs"`
	// Checks counts each check's verdicts over the repeats.
	Checks map[string]*CheckSummary `json:"checks"`
	// Violations counts Go-back-N violations by "side/rule".
	Violations map[string]*Count `json:"violations"`
	// Counters counts, by "nic/counter", the repeats whose counter agreed
	// with the trace (OK) and those where it did not.
	Counters map[string]*CounterSummary `json:"counters"`
	// CNPScopes are the CNP pacing scopes consistent with the trace in
	// every valid repeat where the cnp check ran and was not inconclusive;
	// nil when it never did.
	CNPScopes []string `json:"cnp_scopes"`
	// Quantities are the measured distributions, by QuantitySpec name;
	// quantities never measured are absent.
	Quantities map[string]*Dist `json:"quantities"`
}

// Run is one repeat.
type Run struct {
	Repeat int    `json:"repeat"`
	Dir    string `json:"dir"` // relative to the suite directory
	Valid  bool   `json:"valid"`
	// Failed lists the checks that failed.
	Failed []string `json:"failed,omitempty"`
	// Inconclusive lists the checks that were inconclusive (within the
	// timestamp uncertainty): the repeat is valid, these checks decided
	// nothing.
	Inconclusive []string `json:"inconclusive,omitempty"`
}

// CheckSummary counts one check's verdicts.
type CheckSummary struct {
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
	// Inconclusive counts the repeats whose check was inconclusive (its
	// margin within the timestamp uncertainty): missing data, like Skip.
	Inconclusive int `json:"inconclusive,omitempty"`
}

// Mixed is the verdict of a check that passed on some repeats of a test
// and failed on others: a suite's verdict, which no single run has.
const Mixed model.Verdict = "mixed"

// Verdict is pass (no fail, some pass), fail (no pass, some fail), Mixed
// (both), else inconclusive (some inconclusive) or skip. Inconclusive
// repeats are missing data: they count only when no repeat decided.
func (c *CheckSummary) Verdict() model.Verdict {
	switch {
	case c.Fail > 0 && c.Pass > 0:
		return Mixed
	case c.Fail > 0:
		return model.Fail
	case c.Pass > 0:
		return model.Pass
	case c.Inconclusive > 0:
		return model.Inconclusive
	}
	return model.Skip
}

// Count is how often something occurred and in how many repeats.
type Count struct {
	Total   int `json:"total"`
	Repeats int `json:"repeats"`
}

// CounterSummary counts the repeats in which one counter relation held.
type CounterSummary struct {
	OK       int `json:"ok"`
	Mismatch int `json:"mismatch"`
}

// Dist is the distribution of one quantity over the valid repeats.
type Dist struct {
	Unit   Unit      `json:"unit"`
	N      int       `json:"n"`
	Min    float64   `json:"min"`
	P25    float64   `json:"p25"`
	Median float64   `json:"median"`
	P75    float64   `json:"p75"`
	Max    float64   `json:"max"`
	Mean   float64   `json:"mean"`
	Values []float64 `json:"values"` // in measurement order
}

func newDist(u Unit, v []float64) *Dist {
	s := slices.Clone(v)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return &Dist{Unit: u, N: len(s), Min: s[0], P25: quantile(s, 0.25), Median: quantile(s, 0.5), P75: quantile(s, 0.75),
		Max: s[len(s)-1], Mean: sum / float64(len(s)), Values: v}
}

// Summarize reads every OUT/<test>/<repeat>/report.json under outDir and
// writes outDir/suite.json atomically (a temporary file renamed into
// place). Repeat directories are the all-digit names; kept older results
// (<repeat>.replaced-…) and temporary ones are skipped. It returns
// ErrNoRuns when there is no repeat at all (and then writes nothing).
func Summarize(outDir string) (*Suite, error) {
	s, err := Read(outDir)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	tmp, err := os.CreateTemp(outDir, ".suite-*.json")
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("suite: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("suite: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(outDir, FileName)); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	return s, nil
}

// Read summarizes the runs under outDir like Summarize without writing
// anything.
func Read(outDir string) (*Suite, error) {
	ents, err := os.ReadDir(outDir)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	s := &Suite{Schema: Schema, Tests: []*Test{}, Dir: outDir}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		t, err := readTest(filepath.Join(outDir, e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		if t != nil {
			s.Tests = append(s.Tests, t)
		}
	}
	if len(s.Tests) == 0 {
		return nil, fmt.Errorf("%w under %s", ErrNoRuns, outDir)
	}
	sort.Slice(s.Tests, func(i, j int) bool { return s.Tests[i].Name < s.Tests[j].Name })
	return s, nil
}

// RepeatDirs returns the repeat numbers of testDir's subdirectories that
// hold a report.json (OUT/<test>/<repeat>/, as lumina run writes them), in
// order.
func RepeatDirs(testDir string) ([]int, error) {
	ents, err := os.ReadDir(testDir)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	var reps []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if !e.IsDir() || err != nil || n < 0 || strconv.Itoa(n) != e.Name() {
			continue
		}
		if _, err := os.Stat(filepath.Join(testDir, e.Name(), "report.json")); err == nil {
			reps = append(reps, n)
		}
	}
	sort.Ints(reps)
	return reps, nil
}

// readTest summarizes testDir; nil if it holds no repeat.
func readTest(testDir, rel string) (*Test, error) {
	reps, err := RepeatDirs(testDir)
	if err != nil || len(reps) == 0 {
		return nil, err
	}
	var reports []*orchestrator.Report
	var dirs []string
	for _, n := range reps {
		dir := filepath.Join(testDir, strconv.Itoa(n))
		r, err := ReadReport(dir)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
		dirs = append(dirs, filepath.ToSlash(filepath.Join(rel, strconv.Itoa(n))))
	}
	return summarizeTest(reports, dirs), nil
}

// ReadReport reads a repeat directory's report.json (bounded, as
// safefile reads records); a file that is not a JSON object is
// ErrNotReport.
func ReadReport(dir string) (*orchestrator.Report, error) {
	b, err := safefile.ReadFile(filepath.Join(dir, "report.json"), safefile.MaxRecordSize, safefile.Options{})
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// null decodes as an empty report, which would compare as a run.
		return nil, fmt.Errorf("suite: %s: %w", filepath.Join(dir, "report.json"), ErrNotReport)
	}
	var r orchestrator.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("suite: %s: %w", filepath.Join(dir, "report.json"), err)
	}
	return &r, nil
}

// summarizeTest builds a Test from its repeats' reports; dirs are the
// repeat directories relative to the suite.
func summarizeTest(reports []*orchestrator.Report, dirs []string) *Test {
	reps := make([]Repeat, len(reports))
	for i, r := range reports {
		reps[i] = RepeatOf(r, dirs[i])
	}
	return TestOf(reps)
}

func joinDistinct(a, b string) string {
	if b == "" || slices.Contains(strings.Split(a, " | "), b) {
		return a
	}
	if a == "" {
		return b
	}
	return a + " | " + b
}

var scopeOrder = []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}

func orderScopes(s []string) []string {
	out := []string{}
	for _, o := range scopeOrder {
		if slices.Contains(s, o) {
			out = append(out, o)
		}
	}
	for _, x := range s {
		if !slices.Contains(scopeOrder, x) {
			out = append(out, x)
		}
	}
	return out
}

// Load reads a suite from path, which may be:
//   - a results directory (OUT/<test>/<repeat>/report.json): summarized
//     afresh from the reports, so a stale suite.json does not matter;
//   - a directory with only a suite.json, or a suite.json file;
//   - one test's directory (OUT/<test>, holding repeat directories);
//   - one repeat's directory (holding report.json).
//
// Nothing is written.
func Load(path string) (*Suite, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if !st.IsDir() {
		return readSuiteFile(path)
	}
	if _, err := os.Stat(filepath.Join(path, "report.json")); err == nil {
		r, err := ReadReport(path)
		if err != nil {
			return nil, err
		}
		return &Suite{Schema: Schema, Dir: path, Tests: []*Test{summarizeTest([]*orchestrator.Report{r}, []string{"."})}}, nil
	}
	if reps, err := RepeatDirs(path); err == nil && len(reps) > 0 {
		t, err := readTest(path, ".")
		if err != nil {
			return nil, err
		}
		return &Suite{Schema: Schema, Dir: path, Tests: []*Test{t}}, nil
	}
	s, err := Read(path)
	if errors.Is(err, ErrNoRuns) {
		if _, serr := os.Stat(filepath.Join(path, FileName)); serr == nil {
			return readSuiteFile(filepath.Join(path, FileName))
		}
	}
	return s, err
}

func readSuiteFile(path string) (*Suite, error) {
	b, err := safefile.ReadFile(path, safefile.MaxRecordSize, safefile.Options{})
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	var s Suite
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("suite: %s: %w", path, err)
	}
	if s.Schema != Schema {
		return nil, fmt.Errorf("%w %q in %s (want %s)", ErrSchema, s.Schema, path, Schema)
	}
	if err := s.checkEntries(b); err != nil {
		return nil, fmt.Errorf("suite: %s: %w", path, err)
	}
	s.Dir = filepath.Dir(path)
	return &s, nil
}

// ErrNotReport: a report.json that is not a JSON object (null, an array).
var ErrNotReport = errors.New("not a run report: want a JSON object")

// ErrNullEntry: a suite.json holding null where a test, run or summary
// entry belongs (edited by hand or written by something else).
var ErrNullEntry = errors.New("null entry")

// checkEntries rejects null tests, runs and map entries, which the
// comparison cannot use; b is the suite.json s was decoded from (a null
// run decodes as a zero Run).
func (s *Suite) checkEntries(b []byte) error {
	var raw struct {
		Tests []*struct {
			Runs []*json.RawMessage `json:"runs"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	nullKey := func(m map[string]bool) (string, bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if m[k] {
				return k, true
			}
		}
		return "", false
	}
	for i, t := range s.Tests {
		if t == nil {
			return fmt.Errorf("%w: tests[%d] is null", ErrNullEntry, i)
		}
		if i < len(raw.Tests) && raw.Tests[i] != nil {
			for j, r := range raw.Tests[i].Runs {
				if r == nil {
					return fmt.Errorf("%w: tests[%d] (%q): runs[%d] is null", ErrNullEntry, i, t.Name, j)
				}
			}
		}
		for field, nulls := range map[string]map[string]bool{
			"checks": nilValues(t.Checks), "violations": nilValues(t.Violations),
			"counters": nilValues(t.Counters), "quantities": nilValues(t.Quantities),
		} {
			if k, ok := nullKey(nulls); ok {
				return fmt.Errorf("%w: tests[%d] (%q): %s[%q] is null", ErrNullEntry, i, t.Name, field, k)
			}
		}
	}
	return nil
}

// nilValues maps each key of m to whether its value is nil.
func nilValues[V any](m map[string]*V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v == nil
	}
	return out
}

// SummarizeRuns writes the suite summary of a `lumina run`: into outDir,
// or, when outDir is empty, into the result-path of every test (each
// directory once). It prints "lumina: suite summary: DIR/suite.json" to
// progress and errors to stderr; it never fails the run.
func SummarizeRuns(outDir string, tests []*config.Test, progress, stderr io.Writer) {
	var dirs []string
	if outDir != "" {
		dirs = []string{outDir}
	} else {
		for _, t := range tests {
			if !slices.Contains(dirs, t.ResultPath) {
				dirs = append(dirs, t.ResultPath)
			}
		}
	}
	if progress == nil {
		progress = io.Discard
	}
	for _, d := range dirs {
		if _, err := Summarize(d); err != nil {
			fmt.Fprintf(stderr, "lumina: suite summary: %v\n", err)
			continue
		}
		fmt.Fprintf(progress, "lumina: suite summary: %s\n", filepath.Join(d, FileName))
	}
}
