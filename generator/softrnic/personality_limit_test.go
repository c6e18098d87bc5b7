package softrnic

import (
	"fmt"
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

// Issue #38, point 6: a mapping of more than MaxPersonalityKeys keys is
// refused at FILE:LINE:COL of the first key beyond the limit, before
// anything is decoded (an 80,000-key personality took 50 s at 1486b75).
func TestPersonalityMappingLimit(t *testing.T) {
	keys := func(n int) []byte {
		var b strings.Builder
		b.WriteString("base: cx5\nadaptive:\n  - ")
		for i := range n {
			if i > 0 {
				b.WriteString("    ")
			}
			fmt.Fprintf(&b, "k%d: %d\n", i, i)
		}
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name string
		n    int
		want string // the first error
	}{
		{name: "at the limit", n: MaxPersonalityKeys, want: `p.yaml:3:5: unknown key "k0" in adaptive[0]`},
		{name: "beyond", n: MaxPersonalityKeys + 1,
			want: fmt.Sprintf("p.yaml:%d:5: more than %d keys in one mapping (softrnic.MaxPersonalityKeys); nothing was decoded", 3+MaxPersonalityKeys, MaxPersonalityKeys)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePersonality("p.yaml", keys(tc.n))
			if err == nil {
				t.Fatalf("ParsePersonality(%d keys) = nil error, want %q", tc.n, tc.want)
			}
			if got, _, _ := strings.Cut(err.Error(), "\n"); !strings.HasPrefix(got, tc.want) {
				t.Errorf("ParsePersonality(%d keys) first error = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
