package main

import (
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestCommandTable: one entry per command, each with its flags type and
// function; no file of the command registers anything in init(): the
// table is the one place that lists the commands.
func TestCommandTable(t *testing.T) {
	var names []string
	for _, c := range commands {
		if c.action.flags == nil || c.action.run == nil || c.summary == "" {
			t.Errorf("command %q: action or summary missing", c.name)
		}
		names = append(names, c.name)
	}
	want := []string{"agent", "analyze", "collie", "completion", "decode", "diff", "dump", "export", "help", "init", "injector", "lab", "run", "validate", "version"}
	if !slices.Equal(names, want) {
		t.Errorf("commands = %v, want %v (sorted)", names, want)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				t.Errorf("%s: func init() (declare the command in the table in main.go)", fset.Position(fd.Pos()))
			}
		}
	}
}

// parseFor parses args as the command name's flags do and returns its
// flags value and the positional arguments.
func parseFor(t *testing.T, name string, args ...string) (cmdFlags, []string) {
	t.Helper()
	c := lookup(commands, name)
	f := c.action.flags()
	fs := newFlagSet(c, f, io.Discard)
	pos, err := parseInterspersed(fs, args)
	if c.subcommands {
		err = fs.Parse(args)
		pos = fs.Args()
	}
	if err != nil {
		t.Fatalf("lumina %s %s: %v", name, strings.Join(args, " "), err)
	}
	return f, pos
}

// TestCheck: each command's argument and flag-value rules, without
// running anything: the message of the usage error, or none.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string // "" for no error
	}{
		{"run", nil, "run needs at least one test file or folder"},
		{"run", []string{"x.yaml"}, ""},
		{"run", []string{"--testbed", "lab", "x.yaml"}, `run: --testbed must be sim, netns or remote, not "lab"`},
		{"run", []string{"--retries", "-1", "x.yaml"}, "run: --retries must be >= 0, not -1"},
		{"run", []string{"--format", "yaml", "x.yaml"}, `run: --format must be text or json, not "yaml"`},
		{"run", []string{"--format", "json", "--testbed", "netns", "x.yaml"}, ""},
		{"run", []string{"--slowdown", "0", "x.yaml"}, "run: --slowdown must be 1..10000, not 0"},
		{"run", []string{"--rnic", "softrnic", "--slowdown", "1000", "x.yaml"}, ""},
		{"validate", nil, "validate needs at least one YAML file or folder"},
		{"validate", []string{"a.yaml", "b"}, ""},
		{"analyze", nil, "analyze needs exactly one trace file or run directory"},
		{"analyze", []string{"a", "b"}, "analyze needs exactly one trace file or run directory"},
		{"analyze", []string{"--format", "xml", "t.pcap"}, `unknown format "xml" (want text or json)`},
		{"analyze", []string{"--checks", "gbn, ,cnp", "t.pcap"}, ""},
		{"decode", nil, "decode needs a trace file"},
		{"decode", []string{"--format", "json", "t.pcap"}, `decode: --format must be text or jsonl, not "json"`},
		{"decode", []string{"--mirror", "maybe", "t.pcap"}, `decode: --mirror must be auto, on or off, not "maybe"`},
		{"decode", []string{"--mirror-port", "70000", "t.pcap"}, "decode: --mirror-port 70000 out of range"},
		{"diff", []string{"a"}, "diff needs BASE and NEW (run or suite directories, or suite.json files)"},
		{"diff", []string{"--alpha", "1", "a", "b"}, "diff: --alpha must be in (0, 1), not 1"},
		{"diff", []string{"--method", "t", "a", "b"}, `diff: --method must be mannwhitney or bootstrap, not "t"`},
		{"diff", []string{"--fail-on", "any", "a", "b"}, `diff: --fail-on must be regression or change, not "any"`},
		{"diff", []string{"--resamples", "0", "a", "b"}, "diff: minimum shifts must be >= 0 and --resamples >= 1"},
		{"diff", []string{"a", "b"}, ""},
		{"dump", []string{"x"}, `dump takes no arguments (got "x")`},
		{"dump", []string{"--mirror-port", "0"}, "dump: --mirror-port 0 out of range 1..65535"},
		{"dump", []string{"--duration", "-1s"}, "dump: --duration must not be negative"},
		{"dump", nil, "dump: --interface is required with --backend afpacket"},
		{"dump", []string{"--backend", "sim"}, "dump: the sim backend is for embedding (dumper.Config.SimPort), not the CLI"},
		{"dump", []string{"--bench", "--bench-count", "0"}, "dump: --bench-count must be positive"},
		{"dump", []string{"--bench"}, ""},
		{"dump", []string{"--interface", "eth0"}, ""},
		{"agent", []string{"--listen", ":1", "--token-file", "t"}, "agent needs --listen, --token-file and --tls-dir"},
		{"agent", []string{"--listen", ":1", "--token-file", "t", "--tls-dir", "d"}, ""},
		{"injector", nil, "injector needs at least one --port PORT=INTERFACE"},
		{"injector", []string{"--port", "1=eth0", "--tls-dir", "d"}, "injector: --tls-dir goes with --token-file, --client-ca or both"},
		{"injector", []string{"--port", "1=eth0", "--client-ca", "ca.pem"}, "injector: --tls-dir goes with --token-file, --client-ca or both"},
		{"injector", []string{"--port", "1=eth0"}, ""},
		{"injector", []string{"--port", "1=eth0", "--slowdown", "10001"}, "injector: --slowdown must be 1..10000, not 10001"},
		{"injector", []string{"--port", "1=eth0", "--slowdown", "1000"}, ""},
		{"collie", nil, "collie needs a subcommand: search or check"},
		{"collie", []string{"find"}, `collie: unknown subcommand "find" (want search or check)`},
		{"collie", []string{"check"}, ""},
		{"help", []string{"run", "decode"}, "help takes at most one command"},
		{"help", []string{"nope"}, ""}, // an unknown command is run's answer: it reads the table
		{"version", []string{"x"}, "version takes no arguments"},
		{"completion", nil, "completion needs one shell: bash, zsh or fish"},
		{"completion", []string{"tcsh"}, "completion needs one shell: bash, zsh or fish"},
		{"completion", []string{"fish"}, ""},
		{"init", []string{"a", "b"}, "init takes at most one EXAMPLE"},
		{"init", []string{"quickstart.yaml"}, ""},
		{"init", nil, ""},
	} {
		f, pos := parseFor(t, tc.cmd, tc.args...)
		err := f.check(pos)
		var ue *usageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("lumina %s %s: check: %v, want nil", tc.cmd, strings.Join(tc.args, " "), err)
		case tc.want != "" && (!errors.As(err, &ue) || ue.msg != tc.want):
			t.Errorf("lumina %s %s: check: %v, want usage error %q", tc.cmd, strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// check splits --checks into the list the analyzers get.
	f, pos := parseFor(t, "analyze", "--checks", "gbn, ,cnp", "t.pcap")
	if err := f.check(pos); err != nil || !slices.Equal(f.(*analyzeFlags).sel, []string{"gbn", "cnp"}) {
		t.Errorf("analyze --checks 'gbn, ,cnp': sel %q, %v; want [gbn cnp]", f.(*analyzeFlags).sel, err)
	}
	if _, pos := parseFor(t, "collie", "search", "--budget", "3"); !slices.Equal(pos, []string{"search", "--budget", "3"}) {
		t.Errorf("collie: arguments %q, want the subcommand's flags left unparsed", pos)
	}
}

// TestCollieCheck: the collie subcommands' flag rules.
func TestCollieCheck(t *testing.T) {
	for _, tc := range []struct {
		f    cmdFlags
		args []string
		want string
	}{
		{new(collieSearchFlags), nil, "collie search: -o DIR is required"},
		{new(collieSearchFlags), []string{"-o", "d", "--algo", "ga"}, `collie search: --algo must be sa, sa-nomfs or random, not "ga"`},
		{new(collieSearchFlags), []string{"-o", "d", "--budget", "0"}, "collie search: --budget must be ≥ 1"},
		{new(collieSearchFlags), []string{"-o", "d", "--algo", "random"}, ""},
		{new(collieCheckFlags), []string{"--space", "s.yaml"}, "collie check: --space and --anomalies are required"},
		{new(collieCheckFlags), []string{"--space", "s", "--anomalies", "a", "--format", "csv"}, "collie check: --format must be text or json"},
		{new(collieCheckFlags), []string{"--space", "s", "--anomalies", "a"}, ""},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		tc.f.define(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := tc.f.check(nil)
		var ue *usageError
		if (tc.want == "" && err != nil) || (tc.want != "" && (!errors.As(err, &ue) || ue.msg != tc.want)) {
			t.Errorf("%T %q: check: %v, want %q", tc.f, tc.args, err, tc.want)
		}
	}
}

// TestHelpEveryCommand: lumina help CMD works for every command of the
// table and lists exactly the flags its flags type defines.
func TestHelpEveryCommand(t *testing.T) {
	for _, c := range commands {
		code, out, stderr := runCLI("help", c.name)
		if code != 0 || !strings.HasPrefix(out, "Usage: lumina "+c.name+" [flags] "+c.args+"\n\n"+c.summary+"\n") {
			t.Errorf("lumina help %s: exit %d, %q %q", c.name, code, out, stderr)
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.action.flags().define(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(out, "\n  -"+f.Name+" ") && !strings.Contains(out, "\n  -"+f.Name+"\n") && !strings.Contains(out, "\n  -"+f.Name+"\t") {
				t.Errorf("lumina help %s lacks -%s", c.name, f.Name)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "91db7df0123456789abcdef0123456789abcdef0"},
		{Key: "vcs.time", Value: "2026-11-28T15:10:00Z"}, {Key: "vcs.modified", Value: "true"}}
	tail := " " + strings.TrimPrefix(versionLine(nil, "x"), "lumina x ")
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ld   string
		want string
	}{
		{"no build info", nil, devVersion, "lumina 0.1.0-dev"},
		{"go run, -buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, devVersion, "lumina 0.1.0-dev"},
		{"go build from a checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128151000-91db7df01234+dirty"}, Settings: vcs},
			devVersion, "lumina v0.0.0-20261128151000-91db7df01234+dirty (commit 91db7df01234, 2026-11-28T15:10:00Z, modified)"},
		{"a tag, clean", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs[:3]}, devVersion,
			"lumina v1.4.0 (commit 91db7df01234, 2026-11-28T15:10:00Z)"},
		{"-ldflags -X main.version wins", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs[:2]}, "2.0.0-rc1",
			"lumina 2.0.0-rc1 (commit 91db7df01234)"},
		{"go install module@version", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, devVersion, "lumina v1.4.0"},
	} {
		if got := versionLine(tc.bi, tc.ld); got != tc.want+tail {
			t.Errorf("%s: versionLine = %q, want %q", tc.name, got, tc.want+tail)
		}
	}
	if !strings.HasPrefix(tail, " go1.") || !strings.Contains(tail, "/") {
		t.Errorf("version line tail %q, want \" GOVERSION OS/ARCH\"", tail)
	}
}
