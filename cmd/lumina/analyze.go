package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/internal/safefile"
)

func init() {
	register(&command{
		name: "analyze", args: "TRACE.pcap|RUN_DIR|TEST_DIR",
		summary: "check a trace: integrity, Go-back-N, retransmissions, timeouts, CNPs, counters (see docs/analyze.md)",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			metaPath := fs.String("meta", "", "run metadata `FILE` (JSON: connections, parameters, counters)")
			checks := fs.String("checks", strings.Join(report.AllChecks, ","), "comma-separated `LIST` of checks")
			timeoutExp := optUint(fs, "timeout", 31, "QP local ACK timeout exponent `T`, 0..31 (T_tr = 4.096 µs × 2^T; default: from metadata)")
			minCNP := optFloat(fs, "min-time-between-cnps", "CNP pacing interval in `US` (default: from metadata)")
			uncert := optUint(fs, "timestamp-uncertainty", math.MaxInt64,
				"how late a switch timestamp may be, in `NS` (bound checks within it are inconclusive; default: from metadata)")
			tolerance := optUint(fs, "timestamp-tolerance", math.MaxInt64,
				"how far, in `NS`, a switch timestamp may be before the previous one without failing integrity (default: the run's switch.timestamp-tolerance-ns, else 0)")
			format := fs.String("format", "text", "output format: text or json")
			outDir := fs.String("o", "", "write report.json, report.txt and report.html into `DIR`")
			htmlOut := fs.String("html", "", "write the interactive report page (report.html's) to `FILE`")
			qp := optUint(fs, "qp", math.MaxInt32, "analyze only connection `N` (0-based, as the report lists them; default: all)")
			workers := fs.Int("workers", 0, "goroutines of the analysis pass, `N` (the report is the same for any N; default 0: GOMAXPROCS; 1: one)")
			// analyzeRun analyzes one trace or run directory.
			analyzeRun := func(ctx context.Context, arg string, sel []string, outDir, htmlOut string, stdout io.Writer) error {
				in, err := analyzers.ReadInputs(arg, *metaPath)
				if err != nil {
					return err
				}
				tracePath, meta := in.Trace, in.Meta
				if timeoutExp.set {
					t := uint8(timeoutExp.v)
					meta.Timeout = &t
				}
				if minCNP.set {
					v := minCNP.v
					meta.MinTimeBetweenCNPsUs = &v
				}
				if uncert.set {
					meta.TimestampUncertaintyNs = int64(uncert.v)
				}
				// Without a page to write, the graphs' packets are not
				// collected: report.json and report.txt do not use them.
				if *workers < 0 {
					return usagef("--workers %d: want 0 (GOMAXPROCS) or more", *workers)
				}
				opt := analyzers.Options{Checks: sel, Name: tracePath, NoPlots: outDir == "" && htmlOut == "", Workers: *workers}
				if qp.set {
					n := int(qp.v)
					opt.QP = &n
				}
				opt.Integrity = analyzers.DirIntegrity(arg) // a run directory: as lumina run checked it
				if in.RunDir != "" {
					opt.Integrity = analyzers.DirIntegrity(in.RunDir) // also its trace given alone
				}
				if tolerance.set {
					opt.Integrity.TimeToleranceNs = tolerance.v
				}
				r, err := analyzers.AnalyzeFile(ctx, tracePath, meta, opt)
				if errors.Is(err, analyzers.ErrChecks) || errors.Is(err, analyzers.ErrQP) {
					return usagef("%v", err)
				}
				if err != nil {
					return err
				}
				r.Inputs = append(in.Notes, r.Inputs...)
				if in.RunDir != "" {
					// The run's own verdicts, so that the re-analysis gives
					// every verdict the run had (docs/run.md).
					if err := analyzers.ApplyRunRecord(r, in.RunDir); err != nil {
						return err
					}
				}
				if outDir != "" {
					if err := report.WriteFiles(outDir, r); err != nil {
						return err
					}
				}
				if htmlOut != "" {
					page, err := report.HTML(r)
					if err != nil {
						return err
					}
					if err := safefile.WriteFile(htmlOut, page, 0o644); err != nil {
						return err
					}
				}
				if *format == "json" {
					b, err := r.MarshalIndent()
					if err != nil {
						return err
					}
					stdout.Write(b)
				} else {
					io.WriteString(stdout, report.Text(r))
				}
				if !r.Passed() {
					return errSilent
				}
				return nil
			}
			return func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				if len(args) != 1 {
					return usagef("analyze needs exactly one trace file or run directory")
				}
				if *format != "text" && *format != "json" {
					return usagef("unknown format %q (want text or json)", *format)
				}
				var sel []string
				for _, c := range strings.Split(*checks, ",") {
					if c = strings.TrimSpace(c); c != "" {
						sel = append(sel, c)
					}
				}
				reps := repeatDirs(args[0])
				if err := checkAnalyzeOutputs(analyzeOutputs(reps, *outDir, *htmlOut)); err != nil {
					return err
				}
				if len(reps) > 0 {
					// A test's result directory (OUT/<test>): every repeat,
					// in order, each as its own run directory.
					failed := 0
					if *format == "json" {
						io.WriteString(stdout, "[\n") // one report per repeat
						defer io.WriteString(stdout, "]\n")
					}
					for i, dir := range reps {
						if *format == "text" {
							fmt.Fprintf(stdout, "== %s\n", dir)
						} else if i > 0 {
							io.WriteString(stdout, ",\n")
						}
						out, page := repeatOutputs(dir, *outDir, *htmlOut)
						err := analyzeRun(ctx, dir, sel, out, page, stdout)
						if errors.Is(err, errSilent) {
							failed++
							continue
						}
						if err != nil {
							return fmt.Errorf("%s: %w", dir, err)
						}
					}
					if *format == "text" {
						fmt.Fprintf(stdout, "%d of %d repeats passed\n", len(reps)-failed, len(reps))
					}
					if failed > 0 {
						return errSilent
					}
					return nil
				}
				return analyzeRun(ctx, args[0], sel, *outDir, *htmlOut, stdout)
			}
		},
	})
}

// repeatDirs returns the repeat directories of a test's result directory
// (OUT/<test>: run directories named 0, 1, ...) in order, or nil if dir is
// not one.
func repeatDirs(dir string) []string {
	if analyzers.IsRunDir(dir) || analyzers.IsPublicRunDir(dir) {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var reps []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= 0 && e.IsDir() && analyzers.IsRunDir(filepath.Join(dir, e.Name())) {
			reps = append(reps, n)
		}
	}
	slices.Sort(reps)
	out := make([]string, len(reps))
	for i, n := range reps {
		out[i] = filepath.Join(dir, strconv.Itoa(n))
	}
	return out
}
