package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netlumina/lumina/orchestrator"
)

// luminaBin is the lumina binary TestMain builds into workDir, a
// temporary directory removed after the tests.
var luminaBin, workDir string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "lumina-tests-"); err != nil {
		fmt.Fprintln(os.Stderr, "tests:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	luminaBin = filepath.Join(workDir, "lumina")
	build := exec.Command("go", "build", "-o", luminaBin, "./cmd/lumina")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "tests: building lumina: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// cliResult is what one lumina invocation did.
type cliResult struct {
	code           int
	stdout, stderr string
	pid            int
}

// invoke runs the built binary with args and returns its exit code and
// output; an error means it could not run or took over 5 min.
func invoke(args ...string) (cliResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, luminaBin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	if cmd.Process != nil {
		r.pid = cmd.Process.Pid
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, fmt.Errorf("lumina %s: timed out\nstderr:\n%s", strings.Join(args, " "), r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("lumina %s: %v", strings.Join(args, " "), err)
	}
	return r, nil
}

// invokeExit is invoke, and an error unless lumina exits with code.
func invokeExit(code int, args ...string) (cliResult, error) {
	r, err := invoke(args...)
	if err == nil && r.code != code {
		err = fmt.Errorf("lumina %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r, err
}

// lumina runs lumina with args; it fails the test only if lumina cannot
// run.
func lumina(t *testing.T, args ...string) cliResult {
	t.Helper()
	r, err := invoke(args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// luminaExit runs lumina and fails the test unless it exits with code.
func luminaExit(t *testing.T, code int, args ...string) cliResult {
	t.Helper()
	r, err := invokeExit(code, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readReport decodes a run directory's report.json.
func readReport(t testing.TB, dir string) *orchestrator.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r orchestrator.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s/report.json: %v", dir, err)
	}
	return &r
}

// examples returns examples/*.yaml.
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("found %d examples (%v)", len(files), err)
	}
	return files
}

// exampleName is an example's test name: its file name without .yaml.
func exampleName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".yaml")
}

// failsTimeout reports whether an example shows what the paper found:
// CX timeouts beyond the IB bound of 4·T_tr, so its timeout check fails
// (and lumina run exits 1).
func failsTimeout(file string) bool {
	return strings.HasPrefix(filepath.Base(file), "timeout-")
}

// runExampleIn runs one example on sim (args are extra flags) with results
// in out and returns its repeat 0 directory. The exit code and output must
// be those of a valid run whose checks all pass, except the timeout
// examples' timeout check.
func runExampleIn(out, file string, args ...string) (string, error) {
	code, checks := 0, "all checks pass"
	if failsTimeout(file) {
		code, checks = 1, "FAILED: timeout"
	}
	r, err := invokeExit(code, append(append([]string{"run", "-q", "-o", out}, args...), file)...)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(out, exampleName(file), "0")
	if want := fmt.Sprintf("%s repeat 0: valid, %s → %s\n", exampleName(file), checks, dir); r.stdout != want || r.stderr != "" {
		return "", fmt.Errorf("lumina run %s: stdout %q, stderr %q; want stdout %q and no stderr", file, r.stdout, r.stderr, want)
	}
	return dir, nil
}

// runExample runs one example on sim afresh, results in a directory of the
// test's own (see runExampleIn).
func runExample(t *testing.T, file string, args ...string) string {
	t.Helper()
	dir, err := runExampleIn(t.TempDir(), file, args...)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// shared holds the examples' runs on sim with their own seeds, made once
// per test binary and read by every test that only reads results.
var shared struct {
	sync.Mutex
	runs map[string]sharedRun
}

type sharedRun struct {
	dir string
	err error
}

// exampleRun returns the repeat 0 directory of the example's shared run on
// sim with its own seed (see runExampleIn), running it on first use. The
// directory is read-only for tests.
func exampleRun(t *testing.T, file string) string {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	r, ok := shared.runs[file]
	if !ok {
		r.dir, r.err = runExampleIn(filepath.Join(workDir, "examples"), file)
		if shared.runs == nil {
			shared.runs = map[string]sharedRun{}
		}
		shared.runs[file] = r
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.dir
}
