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

func (*collieCmdFlags) check(args []string) error {
	if len(args) == 0 {
		return usagef("collie needs a subcommand: search or check")
	}
	if args[0] != "search" && args[0] != "check" {
		return usagef("collie: unknown subcommand %q (want search or check)", args[0])
	}
	return nil
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

func collieSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := collieFlags("search", stderr)
	space := fs.String("space", "", "search space `file` (YAML; default: the paper-scale space)")
	engine := fs.String("engine", "model", "engine: model[:PROFILE.yaml], exec:CMD or lumina")
	planted := fs.String("planted", "", "planted-anomaly `file` for the model engine")
	lineGbps := fs.Float64("line-gbps", 0, "NIC bit-rate bound per direction (default: the model profile's; 0 with exec/lumina disables the throughput check)")
	lineMpps := fs.Float64("line-mpps", 0, "NIC packet-rate bound per direction, Mpps (default: the model profile's)")
	budget := fs.Int("budget", 1000, "experiments, MFS probes included")
	seed := fs.Uint64("seed", 1, "random `seed`")
	algo := fs.String("algo", "sa", "algorithm: sa (annealing + MFS), sa-nomfs or random")
	out := fs.String("o", "", "output `dir` (experiments.jsonl, anomalies.json, best.json); required")
	timeout := fs.Duration("timeout", 10*time.Minute, "per-experiment timeout of the exec engine")
	personality := fs.String("personality", "cx4", "NIC personality of the lumina engine")
	counters := fs.String("counters", "", "comma-separated counters to drive, in order (default: ranked by std/mean)")
	t0 := fs.Float64("t0", 1, "initial temperature")
	tmin := fs.Float64("tmin", 0.05, "final temperature")
	alpha := fs.Float64("alpha", 0.8, "temperature decay")
	n := fs.Int("n", 5, "iterations per temperature")
	quiet := fs.Bool("q", false, "no progress on stderr")
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
	if *out == "" {
		return usagef("collie search: -o DIR is required")
	}
	if *algo != collie.AlgoSA && *algo != collie.AlgoSANoMFS && *algo != collie.AlgoRandom {
		return usagef("collie search: --algo must be sa, sa-nomfs or random, not %q", *algo)
	}
	if *budget < 1 {
		return usagef("collie search: --budget must be ≥ 1")
	}
	sp := collie.DefaultSpace()
	if *space != "" {
		var err error
		if sp, err = collie.LoadSpace(*space); err != nil {
			return err
		}
	}
	mon := collie.Monitor{LineGbps: *lineGbps, LineMpps: *lineMpps}
	var eng collie.Engine
	switch name, arg, _ := strings.Cut(*engine, ":"); name {
	case "model":
		prof := collie.Profile{}
		var pl []collie.Planted
		if arg != "" {
			p, filePl, err := collie.LoadProfile(arg)
			if err != nil {
				return err
			}
			prof, pl = *p, filePl
		}
		if *planted != "" {
			more, err := collie.LoadPlanted(*planted)
			if err != nil {
				return err
			}
			pl = append(pl, more...)
		}
		m := collie.NewModel(prof, pl, *seed)
		if mon.LineGbps == 0 && mon.LineMpps == 0 {
			mon.LineGbps, mon.LineMpps = m.Profile.LineGbps, m.Profile.LineMpps
		}
		eng = m
	case "exec":
		if arg == "" {
			return usagef("collie search: --engine exec:CMD needs a command")
		}
		eng = &collie.ExecEngine{Command: arg, Timeout: *timeout}
	case "lumina":
		eng = &collie.LuminaEngine{Space: sp, Personality: *personality, Seed: *seed}
	default:
		return usagef("collie search: unknown engine %q (want model[:PROFILE], exec:CMD or lumina)", *engine)
	}
	if *planted != "" && !strings.HasPrefix(*engine, "model") {
		return usagef("collie search: --planted needs the model engine")
	}
	o := collie.Options{
		Space: sp, Engine: eng, Monitor: mon, Algo: *algo, Budget: *budget, Seed: *seed,
		T0: *t0, Tmin: *tmin, Alpha: *alpha, N: *n,
		LogPath:       filepath.Join(*out, "experiments.jsonl"),
		AnomaliesPath: filepath.Join(*out, "anomalies.json"),
		Progress:      stderr,
	}
	if *quiet {
		o.Progress = io.Discard
	}
	if *counters != "" {
		o.Counters = strings.Split(*counters, ",")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	res, err := collie.Search(ctx, o)
	if res != nil {
		if b, jerr := json.MarshalIndent(res.Best, "", "  "); jerr == nil {
			safefile.WriteFile(filepath.Join(*out, "best.json"), append(b, '\n'), 0o644)
		}
		fmt.Fprintf(stdout, "%d experiments (%d replayed, %d failed, %d candidates skipped by MFS), %d anomalies → %s\n",
			res.Experiments, res.Replayed, res.Failed, res.Skipped, len(res.Anomalies), filepath.Join(*out, "anomalies.json"))
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

func collieCheck(args []string, stdout, stderr io.Writer) error {
	fs := collieFlags("check", stderr)
	space := fs.String("space", "", "the application's restricted search space `file` (YAML); required")
	anomalies := fs.String("anomalies", "", "anomalies.json of a search; required")
	format := fs.String("format", "text", "output format: text or json")
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
	if *space == "" || *anomalies == "" {
		return usagef("collie check: --space and --anomalies are required")
	}
	if *format != "text" && *format != "json" {
		return usagef("collie check: --format must be text or json")
	}
	sp, err := collie.LoadSpace(*space)
	if err != nil {
		return err
	}
	as, err := collie.ReadAnomalies(*anomalies)
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
	if *format == "json" {
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
