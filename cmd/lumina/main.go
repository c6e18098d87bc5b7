// Command lumina is the one CLI of the lumina RoCEv2 test harness.
//
// Usage: lumina <command> [flags] [args]. Run "lumina help" for the list of
// commands and "lumina help <command>" for one command's flags.
//
// Exit codes: 0 success, 1 failure (an invalid file, a failed check, an I/O
// error), 2 usage error, 130 interrupted (SIGINT or SIGTERM).
//
// LUMINA_CPUPROFILE=FILE writes a CPU profile of the command to FILE
// (cpuprofile.go), for go tool pprof and scripts/pgo.sh.
//
// The path from main to a command reads top to bottom: main calls run,
// which finds the command in the table below (commands), parses its flags
// (the command's flags type defines them), checks the arguments (the flags
// type's check) and calls the command's top-level function, e.g. runTests
// (run.go) for `lumina run`, which calls orchestrator.RunTest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/netlumina/lumina/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := exitCode(profiled(os.Getenv(cpuProfileEnv), os.Stderr, func() error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) }), os.Stderr)
	stop()
	os.Exit(code)
}

// commands is lumina's command table; help lists it sorted by name.
//
// To add a command X (in its own file, x.go):
//
//  1. a flags type with the two methods of cmdFlags:
//
//     type xFlags struct{ out string }
//     func (f *xFlags) define(fs *flag.FlagSet) { fs.StringVar(&f.out, "o", "", "output `dir`") }
//     func (f *xFlags) check(args []string) error { ...; return usagef("x needs ...") }
//
//     define declares the flags on fs (defaults included); check gets the
//     positional arguments after parsing and returns a usageError (usagef:
//     exit 2) for any argument or flag-value rule that needs no I/O;
//
//  2. its top-level function, called once check passed:
//
//     func runX(ctx context.Context, f *xFlags, args []string, stdout, stderr io.Writer) error
//
//     returning nil (exit 0), errSilent (exit 1, details already printed),
//     a usageError (exit 2) or any other error (exit 1, printed once as
//     "lumina: ERROR");
//
//  3. one entry here: {name: "x", args: "FILE...", summary: "...", action: do(runX)}.
//
// Nothing else registers a command: completion scripts and help are
// generated from this table. It is plain package flag on purpose: a CLI
// library such as cobra would generate the completion scripts too, but
// with pflag's syntax (one dash is a one-letter shorthand, so -testbed
// and -seed=-1 as the docs write them would break) and its own help
// format, a new dependency for what this table and completion.go do.
var commands = []*command{
	{name: "agent", summary: "host lumina components (RNIC + generator, dumper, software switch) for an orchestrator, over TLS with a token",
		action: do(runAgent)},
	{name: "analyze", args: "TRACE.pcap|RUN_DIR|TEST_DIR",
		summary: "check a trace: integrity, Go-back-N, retransmissions, timeouts, CNPs, counters (see docs/analyze.md)",
		action:  do(runAnalyze)},
	{name: "collie", args: "search|check [flags]", subcommands: true, moreHelp: collieHelp,
		summary: "Collie anomaly search: find workloads that trigger pause frames or low throughput, and check application spaces against them",
		action:  do(runCollie)},
	{name: "completion", args: "bash|zsh|fish",
		summary: "print a shell completion script (see README.md)",
		action:  do(runCompletion)},
	{name: "decode", args: "TRACE.pcap|TRACE.pcapng...", summary: "print one line per frame of a trace, RoCE-aware (see docs/decode.md)",
		action: do(runDecode)},
	{name: "diff", args: "BASE NEW | --store ROOT --base SEL --new SEL",
		summary: "compare two suites of runs (firmware regression testing): verdicts, violations, quantities (see docs/regression.md)",
		action:  do(runDiff)},
	{name: "dump", summary: "capture mirror copies to disk until SIGTERM/SIGINT, then make them one pcap (see dumper/doc.go)",
		action: do(runDump)},
	{name: "export", args: "parquet|store [flags] ...", subcommands: true, moreHelp: exportHelp,
		summary: "export a trace as Parquet (one row per packet), or store runs in a Parquet results store (see docs/lab-results.md)",
		action:  do(runExport)},
	{name: "help", args: "[command]", summary: "show help for lumina or one command", action: do(runHelp)},
	{name: "init", args: "[EXAMPLE]", summary: "write a commented starting test (EXAMPLE: a copy of examples/EXAMPLE.yaml)",
		action: do(runInit)},
	{name: "injector", summary: "run the software switch target on network interfaces, serving P4Runtime (for hosts without a Tofino)",
		action: do(runInjector)},
	{name: "lab", args: "serve|worker|submit|status|wait|run [flags] [args]", subcommands: true, moreHelp: labHelp,
		summary: "a lab of testbeds on NATS JetStream: queue jobs, lease testbeds to workers, wait for verdicts (docs/lab.md)",
		action:  do(runLab)},
	{name: "run", args: "FILE.yaml|DIR...",
		summary: "run tests: OUT/<test>/<repeat>/ gets trace.pcap, report.json, report.txt, counters, config",
		action:  do(runTests)},
	{name: "validate", args: "FILE.yaml|DIR...", summary: "check test files: prints 'FILE: ok' or one 'FILE:LINE:COL: message' per error",
		action: do(runValidate)},
	{name: "version", summary: "print the lumina version", action: do(runVersion)},
}

// command is one subcommand of lumina.
type command struct {
	name    string
	args    string // usage synopsis after the flags
	summary string
	action  action // its flags type and top-level function: do(runX)
	// subcommands: the first argument names a subcommand that parses the
	// flags after it, so flags are parsed only up to the first argument.
	subcommands bool
	// moreHelp, if set, prints more of the command's usage (its
	// subcommands' flags) after its own flags.
	moreHelp func(w io.Writer)
}

// cmdFlags is a command's flags type (see commands).
type cmdFlags interface {
	// define declares the flags on fs.
	define(fs *flag.FlagSet)
	// check checks the positional arguments and the flags' values once
	// parsed: a usageError for a broken rule, before anything runs.
	check(args []string) error
}

// action is a command's flags type and its top-level function.
type action struct {
	// flags returns a fresh flags value of the command's flags type.
	flags func() cmdFlags
	// run calls the command's function with flags from flags().
	run func(ctx context.Context, f cmdFlags, args []string, stdout, stderr io.Writer) error
}

// do makes a command's action from its top-level function; the flags type
// is the function's second parameter.
func do[F any, P interface {
	*F
	cmdFlags
}](fn func(ctx context.Context, f P, args []string, stdout, stderr io.Writer) error) action {
	return action{
		flags: func() cmdFlags { return P(new(F)) },
		run: func(ctx context.Context, f cmdFlags, args []string, stdout, stderr io.Writer) error {
			return fn(ctx, f.(P), args, stdout, stderr)
		},
	}
}

// run runs one lumina command line (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printCommands(stderr, commands)
		return usagef("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "--version", "-version":
		name = "version"
	}
	c := lookup(commands, name)
	if c == nil {
		return usagef("unknown command %q%s; run 'lumina help'", name, suggest(commands, name))
	}
	f := c.action.flags()
	if t, ok := f.(tableReader); ok {
		t.setTable(commands) // help and completion read the table
	}
	fs := newFlagSet(c, f, stderr)
	var pos []string
	var err error
	if c.subcommands {
		err = fs.Parse(rest)
		pos = fs.Args()
	} else {
		pos, err = parseInterspersed(fs, rest)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Asked for: the usage goes to stdout and the exit is 0.
			fs.SetOutput(stdout)
			printCommandUsage(stdout, c, fs)
			return nil
		}
		printCommandUsage(stderr, c, fs)
		return &usageError{err.Error()}
	}
	if err := f.check(pos); err != nil {
		return err
	}
	return c.action.run(ctx, f, pos, stdout, stderr)
}

// tableReader is the flags type of a command that reads the command table
// (help, completion): run hands it the table, which the table's
// declaration cannot name itself (an initialization cycle).
type tableReader interface{ setTable([]*command) }

// table is embedded in the flags of the commands that read the table.
type table struct{ commands []*command }

func (t *table) setTable(cs []*command) { t.commands = cs }

// newFlagSet returns c's FlagSet with f's flags defined on it; errors go to
// stderr, and the usage is printed by the caller.
func newFlagSet(c *command, f cmdFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lumina "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.define(fs)
	fs.Usage = func() {} // printed by the caller: to stdout if asked for
	return fs
}

func lookup(cs []*command, name string) *command {
	for _, c := range cs {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usageError makes the process exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// checkSubcommand is the check of a command (name) whose first argument
// is one of its subcommands, subs (its argWords).
func checkSubcommand(name string, args, subs []string) error {
	want := strings.Join(subs[:len(subs)-1], ", ") + " or " + subs[len(subs)-1]
	if len(args) == 0 {
		return usagef("%s needs a subcommand: %s", name, want)
	}
	if !slices.Contains(subs, args[0]) {
		return usagef("%s: unknown subcommand %q (want %s)", name, args[0], want)
	}
	return nil
}

// errInterrupted: the command was interrupted (Ctrl-C); exit 130 with one
// "lumina: interrupted" line. A command's own context.Canceled counts too.
var errInterrupted = errors.New("interrupted")

// errSilent is a failure whose details were already printed (exit 1).
var errSilent = errors.New("failed")

func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "lumina: %s\n", ue.msg)
		return 2
	case errors.Is(err, errInterrupted) || errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "lumina: interrupted")
		return 130
	case errors.Is(err, errSilent):
		return 1
	default:
		fmt.Fprintf(stderr, "lumina: %v\n", err)
		return 1
	}
}

// parseInterspersed parses fs's flags anywhere in args: before, between and
// after the positional arguments, which it returns in order. "--" ends the
// flags: every argument after it is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil // "--" ended the flags
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseSubFlags parses a subcommand's flags anywhere among its arguments
// (lab's and export's subcommands); -h prints the usage to stdout, once,
// and returns errHelp.
func parseSubFlags(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
		}
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, errHelp
	}
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	return pos, nil
}

func suggest(cs []*command, name string) string {
	for _, c := range cs {
		if strings.HasPrefix(c.name, name) || strings.HasPrefix(name, c.name) {
			return fmt.Sprintf(" (did you mean %q?)", c.name)
		}
	}
	return ""
}

// sortedCommands returns cs sorted by name.
func sortedCommands(cs []*command) []*command {
	cs = append([]*command(nil), cs...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

func printCommands(w io.Writer, cs []*command) {
	fmt.Fprintln(w, "lumina: reproducible tests of RoCEv2 NICs (see README.md)")
	fmt.Fprintln(w, "\nUsage: lumina <command> [flags] [args]   (flags may follow the args; -- ends them)\n\nCommands:")
	for _, c := range sortedCommands(cs) {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'lumina help <command>' for a command's flags.")
}

func printCommandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: lumina %s [flags] %s\n\n%s\n", c.name, c.args, c.summary)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
	if c.moreHelp != nil {
		c.moreHelp(w)
	}
}

// helpFlags: lumina help [command].
type helpFlags struct{ table }

func (*helpFlags) define(*flag.FlagSet) {}

func (*helpFlags) check(args []string) error {
	if len(args) > 1 {
		return usagef("help takes at most one command")
	}
	return nil
}

// runHelp prints the command list, or one command's usage and flags.
func runHelp(_ context.Context, f *helpFlags, args []string, stdout, _ io.Writer) error {
	if len(args) == 0 {
		printCommands(stdout, f.commands)
		return nil
	}
	c := lookup(f.commands, args[0])
	if c == nil {
		return usagef("unknown command %q%s", args[0], suggest(f.commands, args[0]))
	}
	fs := newFlagSet(c, c.action.flags(), stdout)
	printCommandUsage(stdout, c, fs)
	return nil
}

// optional is a flag.Value that records whether the flag was given: its
// usage shows no default (unset means "from the test file or metadata"),
// and parse checks the value (e.g. rejects negative numbers).
type optional[T any] struct {
	v     T
	set   bool
	parse func(string) (T, error)
}

func (o *optional[T]) String() string {
	if o == nil || !o.set {
		return ""
	}
	return fmt.Sprint(o.v)
}

func (o *optional[T]) Set(s string) error {
	v, err := o.parse(s)
	if err != nil {
		return err
	}
	o.v, o.set = v, true
	return nil
}

// optUint is an optional flag taking an integer in [0, max].
func optUint(fs *flag.FlagSet, name string, max uint64, usage string) *optional[uint64] {
	o := &optional[uint64]{parse: func(s string) (uint64, error) {
		if strings.HasPrefix(strings.TrimSpace(s), "-") {
			return 0, errors.New("must not be negative")
		}
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return 0, errors.New("not a whole number")
		}
		if v > max {
			return 0, fmt.Errorf("out of range 0..%d", max)
		}
		return v, nil
	}}
	fs.Var(o, name, usage)
	return o
}

// optFloat is an optional flag taking a number ≥ 0.
func optFloat(fs *flag.FlagSet, name, usage string) *optional[float64] {
	o := &optional[float64]{parse: func(s string) (float64, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, errors.New("not a number")
		}
		if v < 0 || math.IsNaN(v) {
			return 0, errors.New("must not be negative")
		}
		return v, nil
	}}
	fs.Var(o, name, usage)
	return o
}

// settings is the repeatable --set PATH=VALUE flag (config.Setting).
type settings []config.Setting

func (s *settings) String() string {
	parts := make([]string, len(*s))
	for i, x := range *s {
		parts[i] = x.String()
	}
	return strings.Join(parts, " ")
}

func (s *settings) Set(v string) error {
	x, err := config.ParseSetting(v)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "config: "))
	}
	*s = append(*s, x)
	return nil
}

// addSettings declares --set on fs.
func addSettings(fs *flag.FlagSet) *settings {
	s := new(settings)
	fs.Var(s, "set", "override a key of every test file, `PATH=VALUE` (e.g. traffic.post-interval-us=3000; repeatable; docs/run.md)")
	return s
}
