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
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/suite"
)

func init() {
	register(&command{
		name: "run", args: "FILE.yaml|DIR...",
		summary: "run tests: OUT/<test>/<repeat>/ gets trace.pcap, report.json, report.txt, counters, config",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			out := fs.String("o", "", "results `dir` (default: each test's result-path)")
			testbed := fs.String("testbed", "", "override the testbed: sim, netns or remote (default: each test's testbed)")
			seed := optUint(fs, "seed", math.MaxUint64, "override the test's RNG `seed`, ≥ 0 (recorded in config.yaml; default: each test's seed)")
			retries := fs.Int("retries", 2, "re-run an invalid repeat (failed integrity check) up to `n` times (netns, remote: a sim run is deterministic)")
			mem := addMemoryLimit(fs)
			sets := addSettings(fs)
			quiet := fs.Bool("q", false, "no progress lines on stderr")
			tokenFile := fs.String("agent-token-file", "", "remote: `file` with the agents' token")
			certs := fs.String("agent-certs", "", "remote: `dir` with each agent's certificate as <control-ip>.pem")
			intakeListen := fs.String("intake-listen", "", "remote: `address` for the metadata intake service (default :0)")
			intakeAddr := fs.String("intake-addr", "", "remote: `address` the requester's agent dials for the intake (default: ours towards it)")
			rnic := fs.String("rnic", "verbs", "remote: the agents' RNIC: verbs (the hosts' NICs) or softrnic")
			p4info := fs.String("p4info", "", "remote: P4Info `file` to push (a Tofino: bf-p4c's for lumina.p4)")
			devcfg := fs.String("device-config", "", "remote: packed Tofino device config `file` (docs/tofino.md)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) == 0 {
					return usagef("run needs at least one test file or folder")
				}
				if *testbed != "" && *testbed != "sim" && *testbed != "netns" && *testbed != "remote" {
					return usagef("run: --testbed must be sim, netns or remote, not %q", *testbed)
				}
				if *retries < 0 {
					return usagef("run: --retries must be >= 0, not %d", *retries)
				}
				if *tokenFile != "" {
					if _, err := agent.ReadToken(*tokenFile); err != nil {
						return fmt.Errorf("run: --agent-token-file: %w", err)
					}
				}
				files, err := testFiles(args)
				if err != nil {
					return usagef("run: %v", err)
				}
				// Validate everything first: a typo in the tenth file should
				// not surface after nine runs.
				var tests []*config.Test
				bad := false
				lo := config.LoadOptions{Resources: resources(mem, *out), Personalities: true, NoDPDK: !dumper.DPDKAvailable,
					Warn: func(e config.Error) { fmt.Fprintln(stderr, e.Error()) }, Set: *sets}
				if *testbed != "" {
					tb, _ := config.ParseTestbed(*testbed) // checked above
					lo.Testbed = &tb
				}
				for _, f := range files {
					t, err := config.LoadWith(f, lo)
					var list config.ErrorList
					switch {
					case errors.As(err, &list):
						for _, e := range list {
							fmt.Fprintln(stderr, e.Error())
						}
						bad = true
					case err != nil:
						fmt.Fprintf(stderr, "lumina: %v\n", err)
						bad = true
					default:
						tests = append(tests, t)
					}
				}
				if bad {
					return &usageError{"run: invalid test files; nothing was run"}
				}
				o := orchestrator.Options{OutDir: *out, Testbed: *testbed, Retries: *retries, RetriesSet: true, Progress: stderr,
					Remote: orchestrator.RemoteOptions{TokenFile: *tokenFile, CertDir: *certs, IntakeListen: *intakeListen, IntakeAddr: *intakeAddr,
						RNIC: *rnic, P4Info: *p4info, DeviceConfig: *devcfg}}
				if *quiet {
					o.Progress = io.Discard
				}
				if seed.set {
					o.Seed, o.SeedSet = seed.v, true
				}
				failed := 0
				for _, t := range tests {
					res := orchestrator.RunTest(ctx, t, o)
					for i, r := range res.Repeats {
						fmt.Fprintln(stdout, repeatStatus(res.Name, i, r))
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
						suite.SummarizeRuns(*out, tests, o.Progress, stderr)
						return errInterrupted
					}
				}
				suite.SummarizeRuns(*out, tests, o.Progress, stderr)
				if failed > 0 {
					return errSilent
				}
				return nil
			}
		},
	})
}

// testFiles expands folders into their *.yaml and *.yml files, sorted.
func testFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		var found []string
		for _, pat := range []string{"*.yaml", "*.yml"} {
			m, _ := filepath.Glob(filepath.Join(a, pat))
			found = append(found, m...)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no .yaml test files", a)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// repeatStatus is the status line of the i-th repeat of test name:
// "<name> repeat N: valid, <checks> → DIR" or, for a repeat that was not
// analyzed, "<name> repeat N: INVALID (not analyzed: <why>) → DIR".
func repeatStatus(name string, i int, r orchestrator.RepeatResult) string {
	rep := i
	switch {
	case r.Report != nil:
		rep = r.Report.Repeat
	case r.Run != nil:
		rep = r.Run.Repeat
	}
	line := func(status string) string { return fmt.Sprintf("%s repeat %d: %s → %s", name, rep, status, r.Dir) }
	rpt := r.Report
	if rpt == nil {
		return line("INVALID (not analyzed: no report)")
	}
	if !rpt.Valid {
		return line("INVALID (not analyzed: " + invalidReason(rpt) + ")")
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
	return line("valid, " + checks)
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
