// Command lumina is the one CLI of the lumina RoCEv2 test harness.
//
// Usage: lumina <command> [flags] [args]. Run "lumina help" for the list of
// commands and "lumina help <command>" for one command's flags.
//
// Exit codes: 0 success, 1 failure (an invalid file, a failed check, an I/O
// error), 2 usage error, 130 interrupted (SIGINT or SIGTERM).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/netlumina/lumina/config"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its flags are defined by setup on a fresh
// FlagSet, and run gets the remaining arguments.
type command struct {
	name    string
	args    string // usage synopsis after the flags
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// subcommands: the first argument names a subcommand that parses the
	// flags after it, so flags are parsed only up to the first argument.
	subcommands bool
	// moreHelp, if set, prints more of the command's usage (its
	// subcommands' flags) after its own flags.
	moreHelp func(w io.Writer)
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func lookup(name string) *command {
	for _, c := range commands {
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printCommands(stderr)
		return usagef("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "--version", "-version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		return usagef("unknown command %q%s; run 'lumina help'", name, suggest(name))
	}
	fs := flag.NewFlagSet("lumina "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFn := c.setup(fs)
	fs.Usage = func() {} // printed below: to stdout if asked for
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
	return runFn(ctx, pos, stdout, stderr)
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

func suggest(name string) string {
	for _, c := range commands {
		if strings.HasPrefix(c.name, name) || strings.HasPrefix(name, c.name) {
			return fmt.Sprintf(" (did you mean %q?)", c.name)
		}
	}
	return ""
}

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "lumina: reproducible tests of RoCEv2 NICs (see README.md)")
	fmt.Fprintln(w, "\nUsage: lumina <command> [flags] [args]   (flags may follow the args; -- ends them)\n\nCommands:")
	cs := append([]*command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
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

func init() {
	register(&command{
		name: "help", args: "[command]", summary: "show help for lumina or one command",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			return func(_ context.Context, args []string, stdout, _ io.Writer) error {
				switch len(args) {
				case 0:
					printCommands(stdout)
					return nil
				case 1:
					c := lookup(args[0])
					if c == nil {
						return usagef("unknown command %q%s", args[0], suggest(args[0]))
					}
					cfs := flag.NewFlagSet("lumina "+c.name, flag.ContinueOnError)
					c.setup(cfs)
					cfs.SetOutput(stdout)
					printCommandUsage(stdout, c, cfs)
					return nil
				}
				return usagef("help takes at most one command")
			}
		},
	})
	register(&command{
		name: "version", summary: "print the lumina version",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			return func(_ context.Context, args []string, stdout, _ io.Writer) error {
				if len(args) != 0 {
					return usagef("version takes no arguments")
				}
				rev := ""
				if bi, ok := debug.ReadBuildInfo(); ok {
					for _, s := range bi.Settings {
						if s.Key == "vcs.revision" && len(s.Value) >= 12 {
							rev = " " + s.Value[:12]
						}
					}
				}
				fmt.Fprintf(stdout, "lumina %s%s %s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			}
		},
	})
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
