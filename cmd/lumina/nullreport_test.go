package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #38, point 13: a report.json of null is refused by lumina analyze
// and lumina diff with an error naming it (both exited 0 before).
func TestNullReport(t *testing.T) {
	dir := t.TempDir()
	trace, err := os.ReadFile(filepath.Join("..", "..", "examples", "traces", "write-drop.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "trace.pcap", trace)
	write(t, dir, "report.json", []byte("null\n"))
	rj := filepath.Join(dir, "report.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", dir}, "lumina: " + rj + ": invalid run metadata: want a JSON object\n"},
		{[]string{"diff", dir, dir}, "lumina: diff: BASE: suite: " + rj + ": not a run report: want a JSON object\n"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 1 || stderr != tc.want {
			t.Errorf("lumina %s: exit %d, stderr %q; want exit 1, stderr %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
