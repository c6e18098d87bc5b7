package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsAnywhere: flags parse after and between the positional
// arguments; "--" ends them.
func TestFlagsAnywhere(t *testing.T) {
	trace := filepath.Join("..", "..", "examples", "traces", "write-drop.pcap")
	code, before, _ := runCLI("analyze", "--format", "json", trace)
	if code != 0 {
		t.Fatalf("analyze --format json TRACE: exit %d", code)
	}
	code, after, stderr := runCLI("analyze", trace, "--format", "json")
	if code != 0 || after != before {
		t.Errorf("analyze TRACE --format json: exit %d, same output %v; want 0, true\n%s", code, after == before, stderr)
	}
	code, _, stderr = runCLI("analyze", "--", "--format")
	if code != 1 || !strings.Contains(stderr, "--format: no such file") {
		t.Errorf("analyze -- --format: exit %d, stderr %q; want 1 naming the file --format", code, stderr)
	}
	dir := t.TempDir()
	write(t, dir, "a.yaml", []byte("name: a\n"))
	write(t, dir, "b.yml", []byte("name: b\n"))
	code, out, stderr := runCLI("validate", dir, "--testbed", "sim")
	if want := filepath.Join(dir, "a.yaml") + ": ok\n" + filepath.Join(dir, "b.yml") + ": ok\n"; code != 0 || out != want {
		t.Errorf("validate DIR --testbed sim = %d %q %q, want 0 %q", code, out, stderr, want)
	}
}

// TestHelpToStdout: --help and -h print the usage to stdout and exit 0,
// as lumina help CMD does; a bad flag prints it to stderr and exits 2.
func TestHelpToStdout(t *testing.T) {
	_, want, _ := runCLI("help", "run")
	for _, args := range [][]string{{"run", "--help"}, {"run", "-h"}, {"run", "x.yaml", "--help"}} {
		code, out, stderr := runCLI(args...)
		if code != 0 || out != want || stderr != "" {
			t.Errorf("lumina %s: exit %d, stdout as help run: %v, stderr %q; want 0, true, empty", strings.Join(args, " "), code, out == want, stderr)
		}
	}
	code, out, stderr := runCLI("run", "--nope")
	if code != 2 || out != "" || !strings.Contains(stderr, "Usage: lumina run") {
		t.Errorf("lumina run --nope: exit %d, stdout %q; want 2, usage on stderr", code, out)
	}
	code, out, _ = runCLI("collie", "search", "--help")
	if code != 0 || !strings.Contains(out, "-budget") {
		t.Errorf("lumina collie search --help: exit %d, stdout %q; want 0 and the flags", code, out)
	}
}

func TestHelpContents(t *testing.T) {
	_, collie, _ := runCLI("help", "collie")
	for _, f := range []string{"lumina collie search", "-budget", "-engine", "lumina collie check", "-anomalies"} {
		if !strings.Contains(collie, f) {
			t.Errorf("lumina help collie lacks %q:\n%s", f, collie)
		}
	}
	_, run, _ := runCLI("help", "run")
	if !strings.Contains(run, "sim, netns or remote") {
		t.Errorf("lumina help run: --testbed does not list remote:\n%s", run)
	}
	for _, cmd := range []string{"run", "analyze"} {
		_, h, _ := runCLI("help", cmd)
		if strings.Contains(h, "-1") {
			t.Errorf("lumina help %s shows -1:\n%s", cmd, h)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	_, want, _ := runCLI("version")
	for _, f := range []string{"--version", "-version"} {
		if code, out, _ := runCLI(f); code != 0 || out != want {
			t.Errorf("lumina %s = %d %q, want 0 %q", f, code, out, want)
		}
	}
}

func TestNegativeSeed(t *testing.T) {
	f := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(f, []byte("name: t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--seed", "-3", f},
		{"run", f, "--seed=-1"},
		{"analyze", "--timeout", "-1", "x.pcap"},
		{"analyze", "--min-time-between-cnps", "-2", "x.pcap"},
		{"analyze", "--timestamp-uncertainty", "-5", "x.pcap"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, "must not be negative") {
			t.Errorf("lumina %s: exit %d, stderr %q; want 2, must not be negative", strings.Join(args, " "), code, stderr)
		}
	}
}
