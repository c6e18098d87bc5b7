package safefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after 10 s, so
// that a read that blocks (a FIFO) fails instead of hanging the test.
func within(t *testing.T, name string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still blocked after 10 s", name)
		return nil
	}
}

// Issue #38, point 5: every read is bounded; what is not a regular file is
// refused before it is read, a FIFO without blocking.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	big := filepath.Join(dir, "big.json")
	zero := filepath.Join(dir, "zero.json")
	fifo := filepath.Join(dir, "fifo.json")
	link := filepath.Join(dir, "link.json")
	must(t, os.WriteFile(small, []byte("{}"), 0o644))
	must(t, os.WriteFile(big, bytes.Repeat([]byte{' '}, 1025), 0o644))
	must(t, os.Symlink("/dev/zero", zero))
	must(t, syscall.Mkfifo(fifo, 0o644))
	must(t, os.Symlink("small.json", link))
	for _, tc := range []struct {
		name string
		path string
		o    Options
		want error
		msg  string
	}{
		{name: "regular", path: small},
		{name: "link followed", path: link},
		{name: "too large", path: big, want: ErrTooLarge, msg: big + ": file too large: above the 1024 bytes limit"},
		{name: "dev-zero", path: zero, want: ErrNotRegular, msg: zero + ": not a regular file (a character device)"},
		{name: "fifo", path: fifo, want: ErrNotRegular, msg: fifo + ": not a regular file (a FIFO)"},
		{name: "directory", path: dir, want: syscall.EISDIR, msg: dir + ": is a directory"},
		{name: "link not followed", path: link, o: NoFollow, want: ErrSymlink, msg: link + ": a symbolic link, not followed"},
		{name: "fifo not followed", path: fifo, o: NoFollow, want: ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			err := within(t, "ReadFile("+tc.path+")", func() (err error) {
				data, err = ReadFile(tc.path, 1024, tc.o)
				return err
			})
			if tc.want == nil {
				if err != nil || string(data) != "{}" {
					t.Fatalf("ReadFile(%s) = %q, %v, want {}", tc.path, data, err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("ReadFile(%s) error = %v, want %v containing %q", tc.path, err, tc.want, tc.msg)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Issue #38, point 7: a write never goes through a symbolic link, and
// replaces a regular file whole.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	must(t, os.WriteFile(victim, []byte("keep"), 0o600))
	planted := filepath.Join(dir, "report.html")
	must(t, os.Symlink(victim, planted))
	err := WriteFile(planted, []byte("<html>"), 0o644)
	if !errors.Is(err, ErrSymlink) {
		t.Errorf("WriteFile(link) error = %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim = %q after WriteFile through a link, want %q", b, "keep")
	}
	if fi, err := os.Lstat(planted); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}

	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	if err := within(t, "WriteFile(fifo)", func() error { return WriteFile(fifo, []byte("x"), 0o644) }); !errors.Is(err, ErrNotRegular) {
		t.Errorf("WriteFile(fifo) error = %v, want ErrNotRegular", err)
	}

	out := filepath.Join(dir, "report.json")
	must(t, os.WriteFile(out, []byte("old old old"), 0o600))
	must(t, WriteFile(out, []byte("new"), 0o644))
	fi, err := os.Stat(out)
	b, _ := os.ReadFile(out)
	if err != nil || string(b) != "new" || fi.Mode().Perm() != 0o644 {
		t.Errorf("after WriteFile: %q, %v, %v; want %q, -rw-r--r--", b, fi.Mode(), err, "new")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Errorf("directory holds %d entries after the writes, want 4 (no temporary file left)", len(ents))
	}
}
