package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/suite"
)

func init() {
	register(&command{
		name: "diff", args: "BASE NEW | --store ROOT --base SEL --new SEL",
		summary: "compare two suites of runs (firmware regression testing): verdicts, violations, quantities (see docs/regression.md)",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			format := fs.String("format", "text", "output `format`: text, json or html")
			htmlOut := fs.String("html", "", "also write the HTML page to `file`")
			alpha := fs.Float64("alpha", 0.05, "significance level of each quantity's test")
			method := fs.String("method", "mannwhitney", "two-sample `test`: mannwhitney or bootstrap")
			holm := fs.Bool("holm", false, "Holm–Bonferroni correction across each test's quantities")
			minRel := fs.Float64("min-shift", 0.10, "smallest relative median shift flagged (0.10 = 10%; 0 = none)")
			minNs := fs.Float64("min-abs-ns", 1000, "smallest absolute median shift flagged for latencies, in `ns` (0 = none)")
			minGbps := fs.Float64("min-abs-gbps", 0.1, "smallest absolute median shift flagged for goodput, in `Gb/s` (0 = none)")
			minCount := fs.Float64("min-abs-count", 1, "smallest absolute median shift flagged for counts (0 = none)")
			resamples := fs.Int("resamples", 2000, "bootstrap resamples")
			seed := fs.Uint64("seed", 1, "bootstrap `seed`")
			failOn := fs.String("fail-on", "regression", "exit 1 on: regression, or change (any regression or change)")
			sides := diffStoreFlags(fs)
			return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
				if err := sides.check(args); err != nil {
					return err
				}
				switch *format {
				case "text", "json", "html":
				default:
					return usagef("diff: --format must be text, json or html, not %q", *format)
				}
				m := suite.Method(*method)
				if m != suite.MethodMannWhitney && m != suite.MethodBootstrap {
					return usagef("diff: --method must be mannwhitney or bootstrap, not %q", *method)
				}
				if !(*alpha > 0 && *alpha < 1) {
					return usagef("diff: --alpha must be in (0, 1), not %g", *alpha)
				}
				if *failOn != "regression" && *failOn != "change" {
					return usagef("diff: --fail-on must be regression or change, not %q", *failOn)
				}
				if *minRel < 0 || *minNs < 0 || *minGbps < 0 || *minCount < 0 || *resamples < 1 {
					return usagef("diff: minimum shifts must be >= 0 and --resamples >= 1")
				}
				none := func(v float64) float64 { // 0 means none; Options uses negative for none
					if v == 0 {
						return -1
					}
					return v
				}
				o := suite.Options{Alpha: *alpha, Method: m, Holm: *holm, MinRelShift: none(*minRel), MinAbsNs: none(*minNs),
					MinAbsGbps: none(*minGbps), MinAbsCount: none(*minCount), Resamples: *resamples, Seed: *seed}
				base, nw, err := sides.load(args)
				if err != nil {
					return err
				}
				d := suite.Compare(base, nw, o)
				switch *format {
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
				if *htmlOut != "" {
					h, err := d.HTML()
					if err != nil {
						return err
					}
					if err := safefile.WriteFile(*htmlOut, h, 0o644); err != nil {
						return fmt.Errorf("diff: %w", err)
					}
				}
				if d.Regressed() || (*failOn == "change" && d.Changes > 0) {
					return errSilent
				}
				return nil
			}
		},
	})
}
