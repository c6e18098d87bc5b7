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
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
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
	if name == "-h" || name == "--help" || name == "-help" {
		name = "help"
	}
	c := lookup(name)
	if c == nil {
		return usagef("unknown command %q%s; run 'lumina help'", name, suggest(name))
	}
	fs := flag.NewFlagSet("lumina "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFn := c.setup(fs)
	fs.Usage = func() { printCommandUsage(stderr, c, fs) }
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	return runFn(ctx, fs.Args(), stdout, stderr)
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
	fmt.Fprintln(w, "\nUsage: lumina <command> [flags] [args]\n\nCommands:")
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
