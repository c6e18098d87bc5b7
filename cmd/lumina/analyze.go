package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
)

func init() {
	register(&command{
		name: "analyze", args: "TRACE.pcap|RUN_DIR",
		summary: "check a trace: integrity, Go-back-N, retransmissions, timeouts, CNPs, counters (see docs/analyze.md)",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			metaPath := fs.String("meta", "", "run metadata `FILE` (JSON: connections, parameters, counters)")
			checks := fs.String("checks", strings.Join(report.AllChecks, ","), "comma-separated `LIST` of checks")
			timeoutExp := fs.Int("timeout", -1, "QP local ACK timeout exponent `T` (T_tr = 4.096 µs × 2^T); -1: from metadata")
			minCNP := fs.Float64("min-time-between-cnps", -1, "CNP pacing interval in `US`; -1: from metadata")
			uncert := fs.Int64("timestamp-uncertainty", -1,
				"how late a switch timestamp may be, in `NS` (bound checks within it are inconclusive); -1: from metadata")
			format := fs.String("format", "text", "output format: text or json")
			outDir := fs.String("o", "", "write report.json, report.txt and report.html into `DIR`")
			return func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				if len(args) != 1 {
					return usagef("analyze needs exactly one trace file or run directory")
				}
				if *format != "text" && *format != "json" {
					return usagef("unknown format %q (want text or json)", *format)
				}
				if *timeoutExp < -1 || *timeoutExp > 31 {
					return usagef("--timeout %d out of range 0..31", *timeoutExp)
				}
				if *minCNP < -1 {
					return usagef("--min-time-between-cnps must not be negative")
				}
				if *uncert < -1 {
					return usagef("--timestamp-uncertainty must not be negative")
				}
				var sel []string
				for _, c := range strings.Split(*checks, ",") {
					if c = strings.TrimSpace(c); c != "" {
						sel = append(sel, c)
					}
				}
				tracePath, meta, err := analyzeInputs(args[0], *metaPath)
				if err != nil {
					return err
				}
				if *timeoutExp >= 0 {
					t := uint8(*timeoutExp)
					meta.Timeout = &t
				}
				if *minCNP >= 0 {
					v := *minCNP
					meta.MinTimeBetweenCNPsUs = &v
				}
				if *uncert >= 0 {
					meta.TimestampUncertaintyNs = *uncert
				}
				opt := analyzers.Options{Checks: sel, Name: tracePath}
				if analyzers.IsRunDir(args[0]) {
					opt.Integrity = analyzers.RunIntegrity // as lumina run checked it
				}
				r, err := analyzers.AnalyzeFile(ctx, tracePath, meta, opt)
				if errors.Is(err, analyzers.ErrChecks) {
					return usagef("%v", err)
				}
				if err != nil {
					return err
				}
				if *outDir != "" {
					if err := report.WriteFiles(*outDir, r); err != nil {
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
		},
	})
}

// analyzeInputs resolves the trace and metadata: a file is the trace; a
// run directory (lumina run's OUT/<test>/<repeat>) holds trace.pcap (or
// trace.pcapng), config.yaml (parameters), meta.json or report.json
// (connections, parameters) and counters.json (NIC, switch and dumper
// counters), each merged over the previous. --meta is merged on top.
func analyzeInputs(arg, metaPath string) (string, model.Meta, error) {
	return analyzers.RunInputs(arg, metaPath)
}
