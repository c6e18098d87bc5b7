package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue #38, point 11: the sim dumpers write into the temporary directory
// (TMPDIR) before the merge; a test whose dumper files do not fit there
// is refused by validate and run, before anything runs. A 4 MiB tmpfs
// (root only) stands in for a too-small TMPDIR.
func TestSpoolTooSmall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: mounting a small tmpfs as TMPDIR needs root")
	}
	tmp := t.TempDir()
	spool := filepath.Join(tmp, "spool")
	if err := os.Mkdir(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("lumina-test", spool, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("skip: cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(spool, 0); err != nil {
			t.Errorf("unmount %s: %v", spool, err)
		}
	})
	t.Setenv("TMPDIR", spool)
	file := filepath.Join(tmp, "t.yaml")
	// 100 messages of 1 MiB: 14.1 MiB of dumper files at least, 31 MiB at most.
	if err := os.WriteFile(file, []byte("traffic: {num-msgs-per-qp: 100, message-size: 1048576}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	want := file + ":1:28: a repeat's dumper files need at least 14.1 MiB (at least 102400 packets, before the merge) in the spool directory " + spool + ", where 4 MiB are free; set TMPDIR to a larger file system, or lower snap-len or num-msgs-per-qp\n"
	// validate exits 1 for an invalid file, run 2 (a usage error).
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"validate", "-o", out, file}, 1}, {[]string{"run", "-q", "-o", out, file}, 2}} {
		args := tc.args
		code, stdout, stderr := runCLI(args...)
		got := stdout + stderr
		if code != tc.code || !strings.Contains(got, want) {
			t.Errorf("lumina %s: exit %d, output\n%s\nwant exit %d and a refusal containing\n%s", strings.Join(args, " "), code, got, tc.code, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("lumina %s: %s created, want nothing run", args[0], out)
		}
	}
}
