package dumper

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the lumina dump golden files")

var (
	cliOnce sync.Once
	cliExe  string
	cliErr  error
)

// TestDumpCLIGolden runs "lumina dump" usage and error cases and compares
// them with cmd/lumina/testdata/golden/dump-*.golden, in the format of
// cmd/lumina's TestCLIGolden (which may take these cases over). It builds
// the binary, since package main cannot be imported.
func TestDumpCLIGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds cmd/lumina")
	}
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lumina-cli-test-")
		if err != nil {
			cliErr = err
			return
		}
		cliExe = filepath.Join(dir, "lumina")
		if out, err := exec.Command("go", "build", "-o", cliExe, "github.com/netlumina/lumina/cmd/lumina").CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	golden := filepath.Join("..", "cmd", "lumina", "testdata", "golden")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"dump-bad-flag", []string{"dump", "--nope"}},
		{"dump-bad-format", []string{"dump", "--format", "xml", "--interface", "eth0"}},
		{"dump-no-interface", []string{"dump"}},
		{"dump-bad-snaplen", []string{"dump", "--interface", "eth0", "--snaplen", "32"}},
		{"dump-bad-port", []string{"dump", "--interface", "eth0", "--mirror-port", "70000"}},
		{"dump-extra-args", []string{"dump", "--interface", "eth0", "x.pcap"}},
		{"dump-sim", []string{"dump", "--backend", "sim"}},
		{"dump-no-dpdk", []string{"dump", "--backend", "dpdk", "--out", "$TMP/x.pcap", "--capacity", "10"}},
		{"help-dump", []string{"help", "dump"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "$TMP", tmp)
			}
			cmd := exec.Command(cliExe, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			got := fmt.Sprintf("$ lumina %s\nexit %d\n-- stdout --\n%s-- stderr --\n%s",
				strings.Join(tc.args, " "), code, strings.ReplaceAll(stdout.String(), tmp, "$TMP"), strings.ReplaceAll(stderr.String(), tmp, "$TMP"))
			path := filepath.Join(golden, tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n--- want\n%s\n--- got\n%s", path, want, got)
			}
		})
	}
}
