package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #38, point 12: lumina run refuses, before running anything and
// with exit 2, what would fail after starting (here a name too long for a
// directory: before, the run failed "file name too long", three times).
func TestRunRefusesLongName(t *testing.T) {
	tmp, out := t.TempDir(), t.TempDir()
	write(t, tmp, "long.yaml", []byte("name: "+strings.Repeat("n", 256)+"\ntraffic: {num-msgs-per-qp: 1}\n"))
	code, stdout, stderr := runCLICtx(context.Background(), "run", "-q", "-o", out, filepath.Join(tmp, "long.yaml"))
	want := filepath.Join(tmp, "long.yaml") + ":1:7: name is 256 bytes, want at most 255 (it names the results directory of the test)"
	if code != 2 || stdout != "" || !strings.Contains(stderr, want) || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("lumina run: exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, want)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("%s holds %d entries, want none", out, len(ents))
	}
}

// Issue #38, point 12: the longest names validation allows do run: the
// limits are those of the files the run makes, not stricter.
func TestRunLongestNames(t *testing.T) {
	tmp, out := t.TempDir(), t.TempDir()
	name, agg, dump := strings.Repeat("n", 255), strings.Repeat("a", 240), strings.Repeat("f", 225)
	write(t, tmp, "longest.yaml", []byte("name: "+name+"\naggregate-pcap-filename: "+agg+
		"\ndumpers:\n  - {dump-filename: "+dump+"}\n  - {name: "+strings.Repeat("d", 220)+"}\n"+
		"traffic: {num-msgs-per-qp: 2, message-size: 4096}\n"))
	code, stdout, stderr := runCLICtx(context.Background(), "run", "-q", "--testbed", "sim", "-o", out, filepath.Join(tmp, "longest.yaml"))
	if code != 0 || !strings.Contains(stdout, "valid, all checks pass") {
		t.Fatalf("lumina run: exit %d, stdout %q, stderr %q; want exit 0, valid", code, stdout, stderr)
	}
	for _, f := range []string{filepath.Join(out, name, "0", agg), filepath.Join(out, name, "0", "dumpers", dump),
		filepath.Join(out, name, "0", "dumpers", strings.Repeat("d", 220)+".pcap")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%.80s…: %v", f, err)
		}
	}
}
