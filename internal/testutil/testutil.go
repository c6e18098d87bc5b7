// Package testutil holds helpers shared by lumina's tests: requirement checks
// that skip a test with an actionable reason when the machine lacks root, a
// tool or a kernel feature.
//
// CI runs as root and installs the tools (scripts/test.sh), so a skip there
// is a defect: set LUMINA_REQUIRE_ALL=1 to turn every skip into a failure.
package testutil

import (
	"os"
	"os/exec"
	"testing"
)

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("LUMINA_REQUIRE_ALL") == "1" {
		t.Fatalf("requirement missing (LUMINA_REQUIRE_ALL=1): "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireRoot skips the test unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root (run scripts/test.sh as root, or sudo go test)")
	}
}

// RequireTool skips the test unless the named program is on PATH and returns
// its path.
func RequireTool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		skipOrFail(t, "needs %s: apt-get install -y %s (scripts/test.sh installs it when root)", name, debianPackage)
	}
	return p
}

// RequireTshark skips the test unless tshark is installed and returns its path.
func RequireTshark(t testing.TB) string {
	t.Helper()
	return RequireTool(t, "tshark", "tshark")
}

// BenchRun returns the lumina run directory the benchmarks that read a
// real trace use, named by LUMINA_BENCH_RUN, and skips b when it is unset
// (an optional input, never a missing requirement).
func BenchRun(b *testing.B) string {
	b.Helper()
	dir := os.Getenv("LUMINA_BENCH_RUN")
	if dir == "" {
		b.Skip("LUMINA_BENCH_RUN not set")
	}
	return dir
}
