package softrnic

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue #17, point 6: a personality file is read with a size limit, so a
// huge file fails fast with a clear error. Issue #38, point 5: a link to
// /dev/zero or a FIFO is refused unread, the FIFO without blocking.
func TestLoadPersonalityBounded(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	want := map[string]string{}
	if _, err := os.Stat("/dev/zero"); err == nil {
		zero := filepath.Join(dir, "zero.yaml")
		if err := os.Symlink("/dev/zero", zero); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, zero)
		want[zero] = "not a regular file (a character device)"
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, fifo)
	want[fifo] = "not a regular file (a FIFO)"
	big := filepath.Join(dir, "big.yaml")
	data := []byte("base: cx5\n" + strings.Repeat("# padding padding padding padding\n", (4<<20)/34+1))
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, big)
	want[big] = "4 MiB"
	for _, path := range paths {
		done := make(chan error, 1)
		go func() { _, err := LoadPersonality(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want[path]) {
				t.Errorf("LoadPersonality(%s) error = %v, want one naming the file and %q", path, err, want[path])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("LoadPersonality(%s) still running after 5 s", path)
		}
	}
	// A small file still loads.
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("base: cx5\nname: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadPersonality(small); err != nil || p.Name != "mine" {
		t.Errorf("LoadPersonality(small) = %q, %v", p.Name, err)
	}
}
