package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/trace"
)

// Options control a run. Zero values are defaults.
type Options struct {
	// OutDir is where results go: OutDir/<test-name>/<repeat>/. Default:
	// the test's result-path.
	OutDir string
	// Testbed overrides the test's testbed (sim, netns). Default: the test's.
	Testbed string
	// Seed overrides the test's seed when SeedSet.
	Seed    uint64
	SeedSet bool
	// Retries is how many times an invalid repeat (failed integrity check)
	// is run again. Default 2.
	Retries    int
	RetriesSet bool
	// Progress receives one line per phase. Default: discarded.
	Progress io.Writer
	// Now is the wall clock for result directory bookkeeping. Default time.Now.
	Now func() time.Time
	// Remote says how to reach the agents of the remote testbed.
	Remote RemoteOptions
}

// RepeatResult is one repeat's outcome.
type RepeatResult struct {
	Dir      string
	Report   *Report
	Attempts int
}

// TestResult is one test file's outcome.
type TestResult struct {
	Name    string
	File    string
	Repeats []RepeatResult
	Err     error
}

// OK reports whether every repeat is valid and every check passed.
func (r *TestResult) OK() bool {
	if r.Err != nil || len(r.Repeats) == 0 {
		return false
	}
	for _, rep := range r.Repeats {
		if rep.Report == nil || !rep.Report.Valid || !rep.Report.Passed() {
			return false
		}
	}
	return true
}

// ErrTestbed is returned for a testbed this build or machine cannot run.
var ErrTestbed = errors.New("orchestrator: testbed not available")

// RunTest runs every repeat of one loaded test.
func RunTest(ctx context.Context, t *config.Test, o Options) *TestResult {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if !o.RetriesSet {
		o.Retries = 2
	}
	if o.SeedSet {
		t.Seed = o.Seed
	}
	if o.Testbed != "" {
		tb, err := parseTestbed(o.Testbed)
		if err != nil {
			return &TestResult{Name: t.Name, File: t.File, Err: err}
		}
		t.Testbed = tb
		// Keep the resolved config valid: dumpers use the testbed's backend.
		for i := range t.Dumpers {
			switch {
			case tb == config.TestbedSim:
				t.Dumpers[i].Backend = config.BackendSim
			case t.Dumpers[i].Backend == config.BackendSim:
				t.Dumpers[i].Backend = config.BackendAFPacket
			}
		}
	}
	out := o.OutDir
	if out == "" {
		out = t.ResultPath
	}
	res := &TestResult{Name: t.Name, File: t.File}
	for rep := range t.NumRepeats {
		var rr RepeatResult
		for attempt := 1; attempt <= o.Retries+1; attempt++ {
			progress := func(msg string) {
				fmt.Fprintf(o.Progress, "lumina: %s [%d/%d]: %s\n", t.Name, rep+1, t.NumRepeats, msg)
			}
			if attempt > 1 {
				progress(fmt.Sprintf("invalid run, attempt %d of %d", attempt, o.Retries+1))
			}
			dir, report, err := runRepeat(ctx, t, rep, out, o, progress)
			if err != nil {
				res.Err = fmt.Errorf("%s repeat %d: %w", t.Name, rep, err)
				if dir != "" {
					rr = RepeatResult{Dir: dir, Report: report, Attempts: attempt}
					res.Repeats = append(res.Repeats, rr)
				}
				return res
			}
			rr = RepeatResult{Dir: dir, Report: report, Attempts: attempt}
			if report.Valid || ctx.Err() != nil {
				break
			}
		}
		res.Repeats = append(res.Repeats, rr)
		if ctx.Err() != nil {
			res.Err = ctx.Err()
			return res
		}
	}
	return res
}

func parseTestbed(s string) (config.Testbed, error) {
	switch s {
	case "sim":
		return config.TestbedSim, nil
	case "netns":
		return config.TestbedNetns, nil
	case "remote":
		return config.TestbedRemote, nil
	}
	return 0, fmt.Errorf("%w: unknown testbed %q (want sim, netns or remote)", ErrTestbed, s)
}

// runRepeat runs one attempt and publishes its directory atomically. It
// returns the published directory (also for failed runs, whose partial
// results are kept and marked invalid).
func runRepeat(ctx context.Context, t *config.Test, rep int, outDir string, o Options, progress func(string)) (string, *Report, error) {
	testDir := filepath.Join(outDir, t.Name)
	if err := os.MkdirAll(testDir, 0o755); err != nil {
		return "", nil, errorf("results: %w", err)
	}
	tmp, err := os.MkdirTemp(testDir, ".run-"+strconv.Itoa(rep)+"-")
	if err != nil {
		return "", nil, errorf("results: %w", err)
	}
	defer os.RemoveAll(tmp) // only does anything if we did not publish
	for _, d := range []string{"dumpers"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return "", nil, errorf("results: %w", err)
		}
	}
	resolved, err := t.Marshal()
	if err != nil {
		return "", nil, errorf("resolved config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "config.yaml"), resolved, 0o644); err != nil {
		return "", nil, errorf("results: %w", err)
	}

	started := time.Now()
	var col *collected
	var runErr error
	switch t.Testbed {
	case config.TestbedSim:
		col, runErr = runSim(ctx, t, rep, tmp, progress)
	case config.TestbedNetns:
		col, runErr = runNetns(ctx, t, rep, tmp, progress)
	case config.TestbedRemote:
		col, runErr = runRemote(ctx, t, rep, tmp, o.Remote, progress)
	default:
		runErr = fmt.Errorf("%w: %v", ErrTestbed, t.Testbed)
	}
	rpt := newReport(t, rep, col)
	rpt.WallNs = time.Since(started).Nanoseconds()
	if runErr != nil {
		rpt.Valid = false
		rpt.Error = runErr.Error()
	} else {
		progress("trace: merge dumper files, integrity check")
		rpt.analyze(t, col, filepath.Join(tmp, t.AggregatePcapFilename))
		if rpt.Valid {
			progress("analyzers: events applied, checks")
		}
	}
	if col != nil {
		if err := writeJSON(filepath.Join(tmp, "counters.json"), map[string]any{"switch": col.Switch, "nics": col.NICs, "dumpers": col.Dumpers}); err != nil {
			return "", nil, err
		}
		if err := writeJSON(filepath.Join(tmp, "generator.json"), col.Generator); err != nil {
			return "", nil, err
		}
	}
	if err := writeJSON(filepath.Join(tmp, "report.json"), rpt); err != nil {
		return "", nil, err
	}
	if rpt.Valid {
		// The analyzers read the run directory exactly as `lumina analyze
		// DIR` does, so both give the same verdicts.
		if err := rpt.runAnalyzers(ctx, tmp); err != nil {
			rpt.Checks["analyzers"] = CheckEntry{Verdict: "fail", Detail: err.Error()}
		}
		if err := writeJSON(filepath.Join(tmp, "report.json"), rpt); err != nil {
			return "", nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "report.txt"), []byte(rpt.Text()), 0o644); err != nil {
		return "", nil, errorf("results: %w", err)
	}
	final := filepath.Join(testDir, strconv.Itoa(rep))
	if _, err := os.Stat(final); err == nil {
		old := final + ".replaced-" + o.Now().UTC().Format("20060102T150405.000")
		if err := os.Rename(final, old); err != nil {
			return "", nil, errorf("results: keeping the previous %s: %w", final, err)
		}
		progress("results: previous results moved to " + old)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", nil, errorf("results: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", nil, errorf("results: %w", err)
	}
	progress(fmt.Sprintf("results: %s (valid=%v)", final, rpt.Valid))
	return final, rpt, runErr
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return errorf("results: %w", err)
	}
	return nil
}

// mergeAndCheck merges the dumper pcaps into tracePath and runs the
// integrity check with the switch and dumper counters, in one pass; also,
// if set, sees every merged packet.
func mergeAndCheck(col *collected, tracePath string, snaplen int, also func(trace.Packet)) (integrity.Verdict, error) {
	c := integrity.Counters{}
	if col.Switch != nil {
		c.SwitchRoCEReceived = integrity.Known(col.Switch.RxRoCE[col.ReqPort] + col.Switch.RxRoCE[col.RspPort])
		c.SwitchMirrored = integrity.Known(col.Switch.MirrorTotal)
	}
	names := make([]string, len(col.DumperPcap))
	for i, p := range col.DumperPcap {
		names[i] = filepath.Base(p)
	}
	for i, d := range col.Dumpers {
		c.Dumpers = append(c.Dumpers, d.Counters())
		if i < len(names) && d.Name != "" {
			names[i] = d.Name
		}
	}
	opt := integrity.Options{ExpectFirstSeq: true}
	chk, err := integrity.NewChecker(opt, names...)
	if err != nil {
		return integrity.Verdict{}, err
	}
	observe := func(src int, p trace.Packet) error {
		if also != nil {
			also(p)
		}
		return chk.Observe(src, p)
	}
	if _, err := (trace.MergeOptions{Seq: opt.Seq, Observe: observe}).MergeFiles(tracePath, snaplen, col.DumperPcap...); err != nil {
		return integrity.Verdict{}, err
	}
	return chk.Finish(c), nil
}
