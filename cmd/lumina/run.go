package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/suite"
)

// runFlags: lumina run.
type runFlags struct {
	out, testbed, format string
	seed                 *optional[uint64]
	retries              int
	mem                  *memoryLimit
	sets                 *settings
	quiet                bool
	remote               orchestrator.RemoteOptions
}

func (f *runFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "o", "", "results `dir` (default: each test's result-path)")
	fs.StringVar(&f.testbed, "testbed", "", "override the testbed: sim, netns or remote (default: each test's testbed)")
	f.seed = optUint(fs, "seed", math.MaxUint64, "override the test's RNG `seed`, ≥ 0 (recorded in config.yaml; default: each test's seed)")
	fs.IntVar(&f.retries, "retries", 2, "re-run an invalid repeat (failed integrity check) up to `n` times (netns, remote: a sim run is deterministic)")
	f.mem = addMemoryLimit(fs)
	f.sets = addSettings(fs)
	fs.BoolVar(&f.quiet, "q", false, "no progress lines on stderr")
	fs.StringVar(&f.format, "format", "text", "stdout `format`: text (a line per repeat) or json (the repeats' summary, docs/run.md)")
	r := &f.remote
	fs.StringVar(&r.TokenFile, "agent-token-file", "", "remote: `file` with the agents' token")
	fs.StringVar(&r.CertDir, "agent-certs", "", "remote: `dir` with each agent's certificate as <control-ip>.pem")
	fs.StringVar(&r.IntakeListen, "intake-listen", "", "remote: `address` for the metadata intake service (default :0)")
	fs.StringVar(&r.IntakeAddr, "intake-addr", "", "remote: `address` the requester's agent dials for the intake (default: ours towards it)")
	fs.StringVar(&r.RNIC, "rnic", "verbs", "remote: the agents' RNIC: verbs (the hosts' NICs) or softrnic")
	fs.StringVar(&r.P4Info, "p4info", "", "remote: P4Info `file` to push (a Tofino: bf-p4c's for lumina.p4)")
	fs.StringVar(&r.DeviceConfig, "device-config", "", "remote: packed Tofino device config `file` (docs/tofino.md)")
	fs.StringVar(&r.BfRt, "bfrt", "", "remote: the Tofino's BfRt server `host[:port]` (bf_switchd, port 50052): pauses by its packet generator, PFC counters (docs/tofino.md §8)")
	fs.IntVar(&r.Tofino, "tofino", 1, "remote: the Tofino `generation` behind --bfrt: 1 or 2")
	fs.IntVar(&r.PktgenPort, "pktgen-port", 0, "remote: the pipe-local pktgen `port` lumina.p4 was built with (-DLUMINA_PKTGEN_PORT; 0: its default, 68 on Tofino 1, 6 on Tofino 2)")
	fs.IntVar(&r.Slowdown, "slowdown", 1, "remote, --rnic softrnic: run the software RNICs `k` times slower than the wall clock, as netns-slowdown does on netns; "+
		"the switch must be lumina injector --slowdown k (docs/run.md#remote-slowdown)")
}

func (f *runFlags) check(args []string) error {
	if len(args) == 0 {
		return usagef("run needs at least one test file or folder")
	}
	if f.testbed != "" && f.testbed != "sim" && f.testbed != "netns" && f.testbed != "remote" {
		return usagef("run: --testbed must be sim, netns or remote, not %q", f.testbed)
	}
	if f.retries < 0 {
		return usagef("run: --retries must be >= 0, not %d", f.retries)
	}
	if f.remote.Slowdown < 1 || f.remote.Slowdown > config.MaxNetnsSlowdown {
		return usagef("run: --slowdown must be 1..%d, not %d", config.MaxNetnsSlowdown, f.remote.Slowdown)
	}
	if f.format != "text" && f.format != "json" {
		return usagef("run: --format must be text or json, not %q", f.format)
	}
	return nil
}

// runTests is lumina run: it loads and validates every test file (all of
// them before anything runs), then runs each test with
// orchestrator.RunTest, prints each repeat's outcome (a status line, or the
// JSON summary at the end) and writes the suite summary.
func runTests(ctx context.Context, f *runFlags, args []string, stdout, stderr io.Writer) error {
	if f.remote.TokenFile != "" {
		if _, err := agent.ReadToken(f.remote.TokenFile); err != nil {
			return fmt.Errorf("run: --agent-token-file: %w", err)
		}
	}
	tests, loadErrs, err := loadTests(f, args, stderr)
	if err != nil {
		if f.format == "json" {
			// One document whatever happens: the load errors, nothing run.
			s := runSummary{Errors: loadErrs}
			if s.Errors == nil {
				s.Errors = []string{err.Error()}
			}
			if werr := s.write(stdout); werr != nil {
				return werr
			}
		}
		return err
	}
	o := f.options(stderr)
	var summary runSummary
	failed := 0
	for _, t := range tests {
		res := orchestrator.RunTest(ctx, t, o)
		if f.format == "json" {
			summary.add(res)
		} else {
			for i, r := range res.Repeats {
				fmt.Fprintln(stdout, repeatStatus(res.Name, i, r))
			}
		}
		interrupted := ctx.Err() != nil
		if res.Err != nil && !interrupted {
			fmt.Fprintf(stderr, "lumina: %v\n", res.Err)
		}
		if !res.OK() {
			failed++
		}
		if interrupted {
			// Keep the partial results (marked invalid) summarized.
			suite.SummarizeRuns(f.out, tests, o.Progress, stderr)
			if f.format == "json" {
				summary.Interrupted = true
				summary.write(stdout)
			}
			return errInterrupted
		}
	}
	suite.SummarizeRuns(f.out, tests, o.Progress, stderr)
	if f.format == "json" {
		if err := summary.write(stdout); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errSilent
	}
	return nil
}

// options returns the orchestrator's options; progress goes to stderr
// unless -q.
func (f *runFlags) options(stderr io.Writer) orchestrator.Options {
	o := orchestrator.Options{OutDir: f.out, Testbed: f.testbed, Retries: f.retries, RetriesSet: true, Progress: stderr, Remote: f.remote}
	if f.quiet {
		o.Progress = io.Discard
	}
	if f.seed.set {
		o.Seed, o.SeedSet = f.seed.v, true
	}
	return o
}

// loadTests loads and validates every test file args name, with the
// flags' overrides, printing every error (and returning the lines
// printed); one invalid file is a usage error: a typo in the tenth file
// should not surface after nine runs.
func loadTests(f *runFlags, args []string, stderr io.Writer) ([]*config.Test, []string, error) {
	files, err := config.TestFiles(args)
	if err != nil {
		err = usagef("run: %v", err)
		return nil, []string{"lumina: " + err.Error()}, err
	}
	var errs []string
	printErr := func(s string) {
		fmt.Fprintln(stderr, s)
		errs = append(errs, s)
	}
	lo := config.LoadOptions{Resources: resources(f.mem, f.out), Personalities: true, NoDPDK: !dumper.DPDKAvailable,
		Warn: func(e config.Error) { fmt.Fprintln(stderr, e.Error()) }, Set: *f.sets}
	if f.testbed != "" {
		tb, _ := config.ParseTestbed(f.testbed) // checked by check
		lo.Testbed = &tb
	}
	var tests []*config.Test
	bad := false
	for _, file := range files {
		t, err := config.LoadWith(file, lo)
		var list config.ErrorList
		switch {
		case errors.As(err, &list):
			for _, e := range list {
				printErr(e.Error())
			}
			bad = true
		case err != nil:
			printErr(fmt.Sprintf("lumina: %v", err))
			bad = true
		default:
			tests = append(tests, t)
		}
	}
	if bad {
		return nil, errs, &usageError{"run: invalid test files; nothing was run"}
	}
	return tests, nil, nil
}

// repeatStatus is the status line of the i-th repeat of test name:
// "<name> repeat N: valid, <checks> → DIR" or, for a repeat that was not
// analyzed, "<name> repeat N: INVALID (not analyzed: <why>) → DIR".
func repeatStatus(name string, i int, r orchestrator.RepeatResult) string {
	rep, status := repeatOutcome(i, r)
	return fmt.Sprintf("%s repeat %d: %s → %s", name, rep, status, r.Dir)
}

// repeatOutcome returns the number of the i-th repeat r and its status:
// "valid, <checks>" or "INVALID (not analyzed: <why>)".
func repeatOutcome(i int, r orchestrator.RepeatResult) (int, string) {
	rep := i
	switch {
	case r.Report != nil:
		rep = r.Report.Repeat
	case r.Run != nil:
		rep = r.Run.Repeat
	}
	rpt := r.Report
	if rpt == nil {
		return rep, "INVALID (not analyzed: no report)"
	}
	if !rpt.Valid {
		return rep, "INVALID (not analyzed: " + invalidReason(rpt) + ")"
	}
	checks := "all checks pass"
	failed, inconclusive := rpt.Verdicts(model.Fail), rpt.Verdicts(model.Inconclusive)
	if len(failed) > 0 {
		checks = "FAILED: " + strings.Join(failed, ", ")
		if a, ok := rpt.Checks[areport.CheckAnalyzers]; ok && a.Verdict == model.Fail {
			why := firstLine(a.Detail)
			if why == "" {
				why = "analyzer error"
			}
			checks += " (not analyzed: " + why + ")"
		}
	}
	if len(inconclusive) > 0 {
		// Within the timestamp uncertainty of a bound: valid, not a failure.
		checks += " (inconclusive: " + strings.Join(inconclusive, ", ") + ")"
	}
	return rep, "valid, " + checks
}

// invalidReason says why a repeat is invalid: the run's error, else the
// failed switch_state check, else the failed integrity check.
func invalidReason(r *orchestrator.Report) string {
	if why := firstLine(r.Error); why != "" {
		if strings.HasSuffix(why, context.Canceled.Error()) {
			return "interrupted"
		}
		return why
	}
	if c := r.Checks[areport.CheckSwitchState]; c.Verdict == model.Fail && r.Integrity.Verdict != model.Fail {
		return "switch state is not what the test asked for: " + firstLine(c.Detail)
	}
	if why := firstLine(r.Integrity.Reason); why != "" {
		return "integrity check failed: " + why
	}
	if why := firstLine(r.Checks[areport.CheckIntegrity].Detail); why != "" {
		return "integrity check failed: " + why
	}
	return "integrity check failed"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
