package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
)

// clos16 is a 2-ToR, 2-leaf, 1-spine fabric of 16 hosts (RDMA at scale,
// Fig. 5's shape): h1..h8 on tor1, h9..h16 on tor2, tor1–leaf1–spine–
// leaf2–tor2; eight flows h<i> → h<i+8> WRITE 4 MiB each on lossless
// priority 3, so every packet crosses all five switches.
func clos16() string {
	var b strings.Builder
	b.WriteString("name: clos-16\nseed: 1\nswitches:\n  tor1: {}\n  tor2: {}\n  leaf1: {}\n  leaf2: {}\n  spine: {}\nlinks:\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  - {a: h%d, b: tor%d}\n", i, 1+(i-1)/8)
	}
	b.WriteString("  - {a: tor1, b: leaf1}\n  - {a: tor2, b: leaf2}\n  - {a: leaf1, b: spine}\n  - {a: leaf2, b: spine}\nhosts:\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  h%d: {nic: {personality: cx5, ip-list: [10.0.0.%d/24], pfc: {priorities: [3]}}}\n", i, i)
	}
	b.WriteString("flows:\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "  - {name: f%d, from: h%d, to: h%d, rdma-verb: write, num-qps: 1, message-size: 1048576, num-msgs-per-qp: 4, mtu: 1024, dscp-list: [26]}\n", i, i, i+8)
	}
	return b.String()
}

// TestFabricClos16Memory: the 16-host, five-switch fabric on sim runs
// valid with every check passing, every switch's sequence complete, and
// every switch mirrors every data packet (8 flows × 4 MiB / 1 KiB
// = 32,768 WRITE packets at each of the five), and lumina run's peak
// resident set stays under 1 GB (the bound), measured as the
// process's own maximum RSS (getrusage).
func TestFabricClos16Memory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "clos-16.yaml")
	if err := os.WriteFile(file, []byte(clos16()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(luminaBin, "run", "-q", "-o", out, file)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lumina run: %v\n%s", err, b)
	}
	run := filepath.Join(out, "clos-16", "0")
	if want := "clos-16 repeat 0: valid, all checks pass → " + run + "\n"; string(b) != want {
		t.Errorf("lumina run: %q, want %q", b, want)
	}
	rep := readReport(t, run)
	if !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) || rep.Checks["generator"].Verdict != model.Pass {
		t.Errorf("integrity %+v, generator %+v; want %v and pass", rep.Integrity, rep.Checks["generator"], integrityAll)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage")
	}
	rss := ru.Maxrss * 1024
	t.Logf("lumina run peak RSS %d bytes", rss)
	if rss >= 1e9 {
		t.Errorf("lumina run peak RSS = %d bytes, want < 1 GB", rss)
	}
	got := fabricWrites(t, run)
	for sw := range 5 {
		if got[uint8(sw)] != 32768 {
			t.Errorf("switch %d: %d WRITE copies, want 32768", sw, got[uint8(sw)])
		}
	}
	if len(got) != 5 {
		t.Errorf("copies from switches %v, want ids 0..4", got)
	}
}
