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
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/internal/safefile"
)

// analyzeFlags: lumina analyze.
type analyzeFlags struct {
	metaPath, checks, format, outDir, htmlOut string
	timeoutExp, uncert, tolerance, qp         *optional[uint64]
	minCNP                                    *optional[float64]
	workers                                   int
	sel                                       []string // checks, as a list (set by check)
}

func (f *analyzeFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.metaPath, "meta", "", "run metadata `FILE` (JSON: connections, parameters, counters)")
	fs.StringVar(&f.checks, "checks", strings.Join(report.AllChecks, ","), "comma-separated `LIST` of checks")
	f.timeoutExp = optUint(fs, "timeout", 31, "QP local ACK timeout exponent `T`, 0..31 (T_tr = 4.096 µs × 2^T; default: from metadata)")
	f.minCNP = optFloat(fs, "min-time-between-cnps", "CNP pacing interval in `US` (default: from metadata)")
	f.uncert = optUint(fs, "timestamp-uncertainty", math.MaxInt64,
		"how late a switch timestamp may be, in `NS` (bound checks within it are inconclusive; default: from metadata)")
	f.tolerance = optUint(fs, "timestamp-tolerance", math.MaxInt64,
		"how far, in `NS`, a switch timestamp may be before the previous one without failing integrity (default: the run's switch.timestamp-tolerance-ns, else 0)")
	fs.StringVar(&f.format, "format", "text", "output format: text or json")
	fs.StringVar(&f.outDir, "o", "", "write report.json, report.txt and report.html into `DIR`")
	fs.StringVar(&f.htmlOut, "html", "", "write the interactive report page (report.html's) to `FILE`")
	f.qp = optUint(fs, "qp", math.MaxInt32, "analyze only connection `N` (0-based, as the report lists them; default: all)")
	fs.IntVar(&f.workers, "workers", 0, "goroutines of the analysis pass, `N` (the report is the same for any N; default 0: GOMAXPROCS; 1: one)")
}

func (f *analyzeFlags) check(args []string) error {
	if len(args) != 1 {
		return usagef("analyze needs exactly one trace file or run directory")
	}
	if f.format != "text" && f.format != "json" {
		return usagef("unknown format %q (want text or json)", f.format)
	}
	if f.workers < 0 {
		return usagef("--workers %d: want 0 (GOMAXPROCS) or more", f.workers)
	}
	f.sel = nil
	for _, c := range strings.Split(f.checks, ",") {
		if c = strings.TrimSpace(c); c != "" {
			f.sel = append(f.sel, c)
		}
	}
	return nil
}

// runAnalyze is lumina analyze: one trace or run directory, or every
// repeat of a test's result directory (OUT/<test>).
func runAnalyze(ctx context.Context, f *analyzeFlags, args []string, stdout, _ io.Writer) error {
	reps := repeatDirs(args[0])
	if err := checkAnalyzeOutputs(analyzeOutputs(reps, f.outDir, f.htmlOut)); err != nil {
		return err
	}
	if len(reps) == 0 {
		return analyzeOne(ctx, f, args[0], f.outDir, f.htmlOut, stdout)
	}
	return analyzeRepeats(ctx, f, reps, stdout)
}

// analyzeRepeats analyzes every repeat of a test's result directory, in
// order, each as its own run directory: text reports headed "== DIR" and
// a count of the repeats that passed, or a JSON list of reports.
func analyzeRepeats(ctx context.Context, f *analyzeFlags, reps []string, stdout io.Writer) error {
	failed := 0
	if f.format == "json" {
		io.WriteString(stdout, "[\n") // one report per repeat
		defer io.WriteString(stdout, "]\n")
	}
	for i, dir := range reps {
		if f.format == "text" {
			fmt.Fprintf(stdout, "== %s\n", dir)
		} else if i > 0 {
			io.WriteString(stdout, ",\n")
		}
		out, page := repeatOutputs(dir, f.outDir, f.htmlOut)
		err := analyzeOne(ctx, f, dir, out, page, stdout)
		if errors.Is(err, errSilent) {
			failed++
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	if f.format == "text" {
		fmt.Fprintf(stdout, "%d of %d repeats passed\n", len(reps)-failed, len(reps))
	}
	if failed > 0 {
		return errSilent
	}
	return nil
}

// analyzeOne analyzes one trace or run directory arg, writes its reports
// into outDir and its page to htmlOut (either may be ""), and prints the
// report; errSilent when a check failed.
func analyzeOne(ctx context.Context, f *analyzeFlags, arg, outDir, htmlOut string, stdout io.Writer) error {
	in, err := analyzers.ReadInputs(arg, f.metaPath)
	if err != nil {
		return err
	}
	f.overrideMeta(&in.Meta)
	r, err := analyzers.AnalyzeFile(ctx, in.Trace, in.Meta, f.options(arg, &in, outDir == "" && htmlOut == ""))
	if errors.Is(err, analyzers.ErrChecks) || errors.Is(err, analyzers.ErrQP) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	r.Inputs = append(in.Notes, r.Inputs...)
	if in.RunDir != "" {
		// The run's own verdicts, so that the re-analysis gives every
		// verdict the run had (docs/run.md).
		if err := analyzers.ApplyRunRecord(r, in.RunDir); err != nil {
			return err
		}
	}
	if err := writeAnalysis(r, outDir, htmlOut); err != nil {
		return err
	}
	if f.format == "json" {
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

// overrideMeta applies the flags that override the run's metadata.
func (f *analyzeFlags) overrideMeta(meta *model.Meta) {
	if f.timeoutExp.set {
		t := uint8(f.timeoutExp.v)
		meta.Timeout = &t
	}
	if f.minCNP.set {
		v := f.minCNP.v
		meta.MinTimeBetweenCNPsUs = &v
	}
	if f.uncert.set {
		meta.TimestampUncertaintyNs = int64(f.uncert.v)
	}
}

// options returns the analyzers' options for arg (read as in). Without a
// page to write (noPlots), the graphs' packets are not collected:
// report.json and report.txt do not use them.
func (f *analyzeFlags) options(arg string, in *analyzers.Inputs, noPlots bool) analyzers.Options {
	opt := analyzers.Options{Checks: f.sel, Name: in.Trace, NoPlots: noPlots, Workers: f.workers}
	if f.qp.set {
		n := int(f.qp.v)
		opt.QP = &n
	}
	opt.Integrity = analyzers.DirIntegrity(arg) // a run directory: as lumina run checked it
	if in.RunDir != "" {
		opt.Integrity = analyzers.DirIntegrity(in.RunDir) // also its trace given alone
	}
	if f.tolerance.set {
		opt.Integrity.TimeToleranceNs = f.tolerance.v
	}
	return opt
}

// writeAnalysis writes r's reports into outDir and its page to htmlOut,
// each when not "".
func writeAnalysis(r *report.Report, outDir, htmlOut string) error {
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
	return nil
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
