package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliCase runs lumina with args (in which $TMP names a per-test temporary
// directory) and compares exit code, stdout and stderr with
// testdata/golden/<name>.golden; -update rewrites the golden files.
type cliCase struct {
	name  string
	args  []string
	setup func(t *testing.T, tmp string)
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = exitCode(run(context.Background(), args, &out, &errb), &errb)
	return code, out.String(), errb.String()
}

func TestCLIGolden(t *testing.T) {
	sample := filepath.Join("..", "..", "examples", "traces")
	cases := []cliCase{
		{name: "decode-text", args: []string{"decode", sample + "/write-drop.pcap"}},
		{name: "decode-jsonl", args: []string{"decode", "--format", "jsonl", sample + "/write-drop.pcap"}},
		{name: "decode-mixed-text", args: []string{"decode", sample + "/mixed.pcapng"}},
		{name: "decode-mixed-jsonl", args: []string{"decode", "--format=jsonl", sample + "/mixed.pcapng"}},
		{name: "decode-mirror-off", args: []string{"decode", "--mirror", "off", sample + "/mixed.pcapng"}},
		{name: "decode-mirror-on", args: []string{"decode", "--mirror", "on", "--format", "jsonl", sample + "/mixed.pcapng"}},
		{name: "decode-garbage", args: []string{"decode", "$TMP/garbage.pcap"}, setup: func(t *testing.T, tmp string) {
			write(t, tmp, "garbage.pcap", []byte("this is not a capture file at all\n"))
		}},
		{name: "decode-empty", args: []string{"decode", "$TMP/empty.pcap"}, setup: func(t *testing.T, tmp string) {
			write(t, tmp, "empty.pcap", nil)
		}},
		{name: "decode-truncated", args: []string{"decode", "$TMP/cut.pcap"}, setup: func(t *testing.T, tmp string) {
			b, err := os.ReadFile(filepath.Join(sample, "write-drop.pcap"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, tmp, "cut.pcap", b[:24+3*(16+128)+50]) // three packets and part of the fourth
		}},
		{name: "decode-missing", args: []string{"decode", "$TMP/nope.pcap"}},
		{name: "decode-no-args", args: []string{"decode"}},
		{name: "decode-bad-format", args: []string{"decode", "--format", "xml", "x.pcap"}},
		{name: "decode-bad-flag", args: []string{"decode", "--nope", "x.pcap"}},
		{name: "no-command", args: nil},
		{name: "unknown-command", args: []string{"decod"}},
		{name: "help", args: []string{"help"}},
		{name: "help-decode", args: []string{"help", "decode"}},
	}
	cases = append(cases, validateCases()...)
	runGolden(t, cases)
}

// runGolden runs each case and compares it with its golden file.
func runGolden(t *testing.T, cases []cliCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, tmp)
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "$TMP", tmp)
			}
			code, stdout, stderr := runCLI(args...)
			got := fmt.Sprintf("$ lumina %s\nexit %d\n-- stdout --\n%s-- stderr --\n%s",
				strings.Join(tc.args, " "), code, strings.ReplaceAll(stdout, tmp, "$TMP"), strings.ReplaceAll(stderr, tmp, "$TMP"))
			golden := filepath.Join("testdata", "golden", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (-want +got):\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineDiff is a minimal line diff for golden mismatches.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI("version")
	if code != 0 || !strings.HasPrefix(out, "lumina "+version+" ") {
		t.Errorf("lumina version = %d %q", code, out)
	}
	if code, _, _ := runCLI("version", "x"); code != 2 {
		t.Errorf("lumina version x: exit %d, want 2", code)
	}
}
