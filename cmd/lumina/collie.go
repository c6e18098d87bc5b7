package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netlumina/lumina/collie"
	"github.com/netlumina/lumina/internal/safefile"
)

// collieCmdFlags: lumina collie; each subcommand parses its own flags.
type collieCmdFlags struct{}

func (*collieCmdFlags) define(*flag.FlagSet) {}

func (f *collieCmdFlags) check(args []string) error {
	return checkSubcommand("collie", args, f.argWords(nil))
}

// runCollie is lumina collie: search or check.
func runCollie(ctx context.Context, _ *collieCmdFlags, args []string, stdout, stderr io.Writer) error {
	if args[0] == "search" {
		return collieSearch(ctx, args[1:], stdout, stderr)
	}
	return collieCheck(args[1:], stdout, stderr)
}

// collieHelp prints the subcommands' usage after collie's.
func collieHelp(w io.Writer) {
	fmt.Fprintln(w)
	collieSearch(context.Background(), []string{"-h"}, w, io.Discard)
	fmt.Fprintln(w)
	collieCheck([]string{"-h"}, w, io.Discard)
}

func collieFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lumina collie "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseSub parses a collie subcommand's flags; -h or --help prints its
// usage to stdout.
func parseSub(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			fs.SetOutput(stdout)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// errHelp ends a subcommand after -h printed its usage.
var errHelp = errors.New("help shown")

// collieSearchFlags: lumina collie search.
type collieSearchFlags struct {
	space, engine, planted, algo, out, personality, counters string
	lineGbps, lineMpps, t0, tmin, alpha                      float64
	budget, n                                                int
	seed                                                     uint64
	timeout                                                  time.Duration
	quiet                                                    bool
}

func (f *collieSearchFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.space, "space", "", "search space `file` (YAML; default: the paper-scale space)")
	fs.StringVar(&f.engine, "engine", "model", "engine: model[:PROFILE.yaml], exec:CMD or lumina")
	fs.StringVar(&f.planted, "planted", "", "planted-anomaly `file` for the model engine")
	fs.Float64Var(&f.lineGbps, "line-gbps", 0, "NIC bit-rate bound per direction (default: the model profile's; 0 with exec/lumina disables the throughput check)")
	fs.Float64Var(&f.lineMpps, "line-mpps", 0, "NIC packet-rate bound per direction, Mpps (default: the model profile's)")
	fs.IntVar(&f.budget, "budget", 1000, "experiments, MFS probes included")
	fs.Uint64Var(&f.seed, "seed", 1, "random `seed`")
	fs.StringVar(&f.algo, "algo", "sa", "algorithm: sa (annealing + MFS), sa-nomfs or random")
	fs.StringVar(&f.out, "o", "", "output `dir` (experiments.jsonl, anomalies.json, best.json); required")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "per-experiment timeout of the exec engine")
	fs.StringVar(&f.personality, "personality", "cx4", "NIC personality of the lumina engine")
	fs.StringVar(&f.counters, "counters", "", "comma-separated counters to drive, in order (default: ranked by std/mean)")
	fs.Float64Var(&f.t0, "t0", 1, "initial temperature")
	fs.Float64Var(&f.tmin, "tmin", 0.05, "final temperature")
	fs.Float64Var(&f.alpha, "alpha", 0.8, "temperature decay")
	fs.IntVar(&f.n, "n", 5, "iterations per temperature")
	fs.BoolVar(&f.quiet, "q", false, "no progress on stderr")
}

func (f *collieSearchFlags) check([]string) error {
	if f.out == "" {
		return usagef("collie search: -o DIR is required")
	}
	if f.algo != collie.AlgoSA && f.algo != collie.AlgoSANoMFS && f.algo != collie.AlgoRandom {
		return usagef("collie search: --algo must be sa, sa-nomfs or random, not %q", f.algo)
	}
	if f.budget < 1 {
		return usagef("collie search: --budget must be ≥ 1")
	}
	return nil
}

func collieSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := new(collieSearchFlags)
	fs := collieFlags("search", stderr)
	f.define(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: lumina collie search --space SPACE.yaml --engine model[:PROFILE]|exec:CMD|lumina -o DIR [flags]")
		fs.PrintDefaults()
	}
	if err := parseSub(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if err := f.check(nil); err != nil {
		return err
	}
	return runCollieSearch(ctx, f, stdout, stderr)
}

// searchEngine returns the engine --engine names, and the monitor's rate
// bounds (a model profile's unless --line-gbps or --line-mpps).
func (f *collieSearchFlags) searchEngine(sp *collie.Space) (collie.Engine, collie.Monitor, error) {
	mon := collie.Monitor{LineGbps: f.lineGbps, LineMpps: f.lineMpps}
	switch name, arg, _ := strings.Cut(f.engine, ":"); name {
	case "model":
		prof := collie.Profile{}
		var pl []collie.Planted
		if arg != "" {
			p, filePl, err := collie.LoadProfile(arg)
			if err != nil {
				return nil, mon, err
			}
			prof, pl = *p, filePl
		}
		if f.planted != "" {
			more, err := collie.LoadPlanted(f.planted)
			if err != nil {
				return nil, mon, err
			}
			pl = append(pl, more...)
		}
		m := collie.NewModel(prof, pl, f.seed)
		if mon.LineGbps == 0 && mon.LineMpps == 0 {
			mon.LineGbps, mon.LineMpps = m.Profile.LineGbps, m.Profile.LineMpps
		}
		return m, mon, nil
	case "exec":
		if arg == "" {
			return nil, mon, usagef("collie search: --engine exec:CMD needs a command")
		}
		return &collie.ExecEngine{Command: arg, Timeout: f.timeout}, mon, nil
	case "lumina":
		return &collie.LuminaEngine{Space: sp, Personality: f.personality, Seed: f.seed}, mon, nil
	}
	return nil, mon, usagef("collie search: unknown engine %q (want model[:PROFILE], exec:CMD or lumina)", f.engine)
}

// runCollieSearch is lumina collie search: the anomaly search, its
// results in the -o directory and a summary on stdout.
func runCollieSearch(ctx context.Context, f *collieSearchFlags, stdout, stderr io.Writer) error {
	sp := collie.DefaultSpace()
	if f.space != "" {
		var err error
		if sp, err = collie.LoadSpace(f.space); err != nil {
			return err
		}
	}
	eng, mon, err := f.searchEngine(sp)
	if err != nil {
		return err
	}
	if f.planted != "" && !strings.HasPrefix(f.engine, "model") {
		return usagef("collie search: --planted needs the model engine")
	}
	o := collie.Options{
		Space: sp, Engine: eng, Monitor: mon, Algo: f.algo, Budget: f.budget, Seed: f.seed,
		T0: f.t0, Tmin: f.tmin, Alpha: f.alpha, N: f.n,
		LogPath:       filepath.Join(f.out, "experiments.jsonl"),
		AnomaliesPath: filepath.Join(f.out, "anomalies.json"),
		Progress:      stderr,
	}
	if f.quiet {
		o.Progress = io.Discard
	}
	if f.counters != "" {
		o.Counters = strings.Split(f.counters, ",")
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	res, err := collie.Search(ctx, o)
	if res != nil {
		if b, jerr := json.MarshalIndent(res.Best, "", "  "); jerr == nil {
			safefile.WriteFile(filepath.Join(f.out, "best.json"), append(b, '\n'), 0o644)
		}
		fmt.Fprintf(stdout, "%d experiments (%d replayed, %d failed, %d candidates skipped by MFS), %d anomalies → %s\n",
			res.Experiments, res.Replayed, res.Failed, res.Skipped, len(res.Anomalies), filepath.Join(f.out, "anomalies.json"))
		for _, a := range res.Anomalies {
			desc := a.MFS.String()
			switch a.Method {
			case "incomplete":
				desc = "MFS incomplete (the budget ran out during its probes)"
			case "signature":
				desc = fmt.Sprintf("%s (signature, %d occurrences)", desc, a.Occurrences)
			}
			at := fmt.Sprint(a.FoundAtExperiment)
			if a.ProbeOf != "" {
				at += " (a probe of " + a.ProbeOf + ")"
			}
			fmt.Fprintf(stdout, "  %s %-14s at experiment %s: %s\n", a.ID, a.Symptom, at, desc)
		}
		if err == nil && res.Experiments > 0 && res.Failed == res.Experiments {
			err = fmt.Errorf("collie search: every experiment failed (%d); the first: %s", res.Failed, res.FirstError)
		}
	}
	return err
}

// collieCheckFlags: lumina collie check.
type collieCheckFlags struct{ space, anomalies, format string }

func (f *collieCheckFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.space, "space", "", "the application's restricted search space `file` (YAML); required")
	fs.StringVar(&f.anomalies, "anomalies", "", "anomalies.json of a search; required")
	fs.StringVar(&f.format, "format", "text", "output format: text or json")
}

func (f *collieCheckFlags) check([]string) error {
	if f.space == "" || f.anomalies == "" {
		return usagef("collie check: --space and --anomalies are required")
	}
	if f.format != "text" && f.format != "json" {
		return usagef("collie check: --format must be text or json")
	}
	return nil
}

func collieCheck(args []string, stdout, stderr io.Writer) error {
	f := new(collieCheckFlags)
	fs := collieFlags("check", stderr)
	f.define(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: lumina collie check --space APP.yaml --anomalies anomalies.json [--format text|json]")
		fmt.Fprintln(fs.Output(), "Exit status 1 when the space intersects a known anomaly.")
		fs.PrintDefaults()
	}
	if err := parseSub(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if err := f.check(nil); err != nil {
		return err
	}
	return runCollieCheck(f, stdout)
}

// runCollieCheck is lumina collie check: which known anomalies the
// application's space intersects (exit 1 if any).
func runCollieCheck(f *collieCheckFlags, stdout io.Writer) error {
	sp, err := collie.LoadSpace(f.space)
	if err != nil {
		return err
	}
	as, err := collie.ReadAnomalies(f.anomalies)
	if err != nil {
		return err
	}
	rs := collie.CheckSpace(sp, as)
	bad := 0
	for _, r := range rs {
		if r.Intersects {
			bad++
		}
	}
	if f.format == "json" {
		b, _ := json.MarshalIndent(rs, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		for _, r := range rs {
			if !r.Intersects {
				fmt.Fprintf(stdout, "%s (%s): clear — %s\n", r.Anomaly, r.Symptom, r.Reason)
				continue
			}
			fmt.Fprintf(stdout, "%s (%s): INTERSECTS — %s\n", r.Anomaly, r.Symptom, r.MFS)
			if r.Witness != nil {
				b, _ := json.Marshal(r.Witness)
				fmt.Fprintf(stdout, "  e.g. %s\n", b)
			}
			fmt.Fprintln(stdout, "  break any one condition:")
			for _, s := range r.Break {
				fmt.Fprintf(stdout, "    - %s\n", s)
			}
		}
		fmt.Fprintf(stdout, "%d of %d anomalies intersect the space\n", bad, len(rs))
	}
	if bad > 0 {
		return errSilent
	}
	return nil
}
