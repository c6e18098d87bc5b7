package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/suite"
)

// diffFlags: lumina diff.
type diffFlags struct {
	format, htmlOut, method, failOn         string
	alpha, minRel, minNs, minGbps, minCount float64
	holm                                    bool
	resamples                               int
	seed                                    uint64
	sides                                   diffSides
}

func (f *diffFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "format", "text", "output `format`: text, json or html")
	fs.StringVar(&f.htmlOut, "html", "", "also write the HTML page to `file`")
	fs.Float64Var(&f.alpha, "alpha", 0.05, "significance level of each quantity's test")
	fs.StringVar(&f.method, "method", "mannwhitney", "two-sample `test`: mannwhitney or bootstrap")
	fs.BoolVar(&f.holm, "holm", false, "Holm–Bonferroni correction across each test's quantities")
	fs.Float64Var(&f.minRel, "min-shift", 0.10, "smallest relative median shift flagged (0.10 = 10%; 0 = none)")
	fs.Float64Var(&f.minNs, "min-abs-ns", 1000, "smallest absolute median shift flagged for latencies, in `ns` (0 = none)")
	fs.Float64Var(&f.minGbps, "min-abs-gbps", 0.1, "smallest absolute median shift flagged for goodput, in `Gb/s` (0 = none)")
	fs.Float64Var(&f.minCount, "min-abs-count", 1, "smallest absolute median shift flagged for counts (0 = none)")
	fs.IntVar(&f.resamples, "resamples", 2000, "bootstrap resamples")
	fs.Uint64Var(&f.seed, "seed", 1, "bootstrap `seed`")
	fs.StringVar(&f.failOn, "fail-on", "regression", "exit 1 on: regression, or change (any regression or change)")
	f.sides = diffStoreFlags(fs)
}

func (f *diffFlags) check(args []string) error {
	if err := f.sides.check(args); err != nil {
		return err
	}
	switch f.format {
	case "text", "json", "html":
	default:
		return usagef("diff: --format must be text, json or html, not %q", f.format)
	}
	if m := suite.Method(f.method); m != suite.MethodMannWhitney && m != suite.MethodBootstrap {
		return usagef("diff: --method must be mannwhitney or bootstrap, not %q", f.method)
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return usagef("diff: --alpha must be in (0, 1), not %g", f.alpha)
	}
	if f.failOn != "regression" && f.failOn != "change" {
		return usagef("diff: --fail-on must be regression or change, not %q", f.failOn)
	}
	if f.minRel < 0 || f.minNs < 0 || f.minGbps < 0 || f.minCount < 0 || f.resamples < 1 {
		return usagef("diff: minimum shifts must be >= 0 and --resamples >= 1")
	}
	return nil
}

// options returns the comparison's options.
func (f *diffFlags) options() suite.Options {
	none := func(v float64) float64 { // 0 means none; Options uses negative for none
		if v == 0 {
			return -1
		}
		return v
	}
	return suite.Options{Alpha: f.alpha, Method: suite.Method(f.method), Holm: f.holm, MinRelShift: none(f.minRel), MinAbsNs: none(f.minNs),
		MinAbsGbps: none(f.minGbps), MinAbsCount: none(f.minCount), Resamples: f.resamples, Seed: f.seed}
}

// runDiff is lumina diff: it compares suite BASE with suite NEW, prints the
// comparison and exits 1 on a regression (or any change, --fail-on change).
func runDiff(_ context.Context, f *diffFlags, args []string, stdout, _ io.Writer) error {
	base, nw, err := f.sides.load(args)
	if err != nil {
		return err
	}
	d := suite.Compare(base, nw, f.options())
	switch f.format {
	case "json":
		b, err := d.MarshalIndent()
		if err != nil {
			return err
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	case "html":
		h, err := d.HTML()
		if err != nil {
			return err
		}
		if _, err := stdout.Write(h); err != nil {
			return err
		}
	default:
		if err := d.WriteText(stdout); err != nil {
			return err
		}
	}
	if f.htmlOut != "" {
		h, err := d.HTML()
		if err != nil {
			return err
		}
		if err := safefile.WriteFile(f.htmlOut, h, 0o644); err != nil {
			return fmt.Errorf("diff: %w", err)
		}
	}
	if d.Regressed() || (f.failOn == "change" && d.Changes > 0) {
		return errSilent
	}
	return nil
}
