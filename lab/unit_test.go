package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
)

func TestJobID(t *testing.T) {
	y := []byte("name: a\n")
	base := JobID("a.yaml", y, "p", map[string]string{"firmware": "1", "nic": "cx6"}, 0)
	if len(base) != 16 || base != JobID("a.yaml", y, "p", map[string]string{"nic": "cx6", "firmware": "1"}, 0) {
		t.Fatalf("job id %q: not 16 hex digits or not deterministic", base)
	}
	for what, id := range map[string]string{
		"file":   JobID("b.yaml", y, "p", map[string]string{"firmware": "1", "nic": "cx6"}, 0),
		"yaml":   JobID("a.yaml", []byte("name: b\n"), "p", map[string]string{"firmware": "1", "nic": "cx6"}, 0),
		"pool":   JobID("a.yaml", y, "q", map[string]string{"firmware": "1", "nic": "cx6"}, 0),
		"label":  JobID("a.yaml", y, "p", map[string]string{"firmware": "2", "nic": "cx6"}, 0),
		"labels": JobID("a.yaml", y, "p", map[string]string{"firmware": "1nic", "": "cx6"}, 0),
		"repeat": JobID("a.yaml", y, "p", map[string]string{"firmware": "1", "nic": "cx6"}, 1),
	} {
		if id == base {
			t.Errorf("another %s gives the same job id", what)
		}
	}
}

func TestJobsInvalidFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(f, []byte("name: bad\ntraffic:\n  mtu: 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, err := Jobs([]string{f}, "p", nil, 1, time.Now())
	if !errors.Is(err, config.ErrInvalid) || jobs != nil || !strings.HasPrefix(err.Error(), f+":3:") {
		t.Fatalf("Jobs of an invalid file: %v %v, want FILE:3:COL errors and no jobs", jobs, err)
	}
	if _, err := Jobs([]string{quickstart}, "a.b", nil, 1, time.Now()); err == nil {
		t.Fatal("pool a.b accepted: it is two subject tokens")
	}
	if _, err := Jobs([]string{quickstart}, "p", nil, 0, time.Now()); err == nil {
		t.Fatal("0 repeats accepted")
	}
	// --set: checked against the file, part of the id.
	if _, err := JobsWith([]string{quickstart}, "p", nil, []string{"traffic.mtu=2000"}, 1, time.Now()); !errors.Is(err, config.ErrInvalid) ||
		!strings.Contains(err.Error(), "(--set traffic.mtu=2000)") {
		t.Fatalf("a bad --set: %v", err)
	}
	plain, err1 := Jobs([]string{quickstart}, "p", nil, 1, time.Now())
	set, err2 := JobsWith([]string{quickstart}, "p", nil, []string{"traffic.mtu=2048"}, 1, time.Now())
	if err1 != nil || err2 != nil || plain[0].ID == set[0].ID || len(set[0].Set) != 1 {
		t.Fatalf("--set: %v %v; ids %s %s, want different", err1, err2, plain[0].ID, set[0].ID)
	}
}

func TestParseTestbed(t *testing.T) {
	tb, err := ParseTestbed("tb.yaml", []byte("name: tb1\ntestbed: remote\nnic: cx6\nset: [requester.nic.control-ip=10.1.0.1]\nremote: {rnic: softrnic}\n"))
	if err != nil || tb.Name != "tb1" || tb.Testbed != "remote" || tb.Remote.RNIC != "softrnic" || len(tb.settings) != 1 {
		t.Fatalf("%+v %v", tb, err)
	}
	for _, bad := range []struct{ src, want string }{
		{"name: tb1\ntestbed: sim\nnics: cx6\n", "tb.yaml: line 3: field nics not found"},
		{"name: tb1\ntestbed: vm\n", `testbed: want sim, netns or remote, not "vm"`},
		{"testbed: sim\n", "name"},
		{"name: tb1\ntestbed: sim\nset: [nokey]\n", "set:"},
	} {
		if _, err := ParseTestbed("tb.yaml", []byte(bad.src)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.src, err, bad.want)
		}
	}
}

func TestDirStoreReplaces(t *testing.T) {
	root := t.TempDir()
	mk := func(content string) string {
		d, err := os.MkdirTemp(root, ".run-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(d, "qs", "0"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "qs", "0", "report.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	job := JobSpec{ID: "00112233aabbccdd", Test: "qs"}
	for _, flat := range []bool{false, true} {
		s := DirStore{Root: filepath.Join(root, map[bool]string{false: "jobs", true: "flat"}[flat]), Flat: flat}
		for i, content := range []string{"first", "second"} {
			if err := s.Store(context.Background(), job, mk(content), Attempt{Delivery: uint64(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		dir := s.JobDir(job.ID)
		if flat {
			dir = s.Root
		}
		got, err := os.ReadFile(filepath.Join(dir, "qs", "0", "report.txt"))
		if err != nil || string(got) != "second" {
			t.Fatalf("flat=%v: %q %v, want the second attempt's", flat, got, err)
		}
		all, _ := filepath.Glob(filepath.Join(s.Root, "*"))
		if len(all) != 1 {
			t.Fatalf("flat=%v: root holds %v, want one entry", flat, all)
		}
	}
}

// The lease: one holder; a second cannot take it until released or
// expired; a holder whose lease expired and was taken cannot renew it.
func TestLease(t *testing.T) {
	s := startServer(t, ServerOptions{StoreDir: t.TempDir()})
	l := openLab(t, connect(t, s.ClientURL()), Options{LeaseTTL: time.Second})
	if l.LeaseTTL != time.Second {
		t.Fatalf("lease TTL %v", l.LeaseTTL)
	}
	wa := &Worker{Lab: l, Name: "a", Testbed: SimTestbed("tb")}
	wb := &Worker{Lab: l, Name: "b", Testbed: SimTestbed("tb")}
	ctx := context.Background()
	la, err := wa.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := wb.acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b acquired a held lease: %v", err)
	}
	cancel()
	if err := la.renew(ctx); err != nil {
		t.Fatal(err)
	}
	la.release(ctx)
	lb, err := wb.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lb.acquired <= la.rev {
		t.Fatalf("b's lease revision %d not after a's last %d", lb.acquired, la.rev)
	}
	// b stops renewing: its lease expires and a takes the testbed.
	la2, err := wa.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("b renewed an expired, retaken lease: %v", err)
	}
	lb.release(ctx) // a lost lease: does nothing
	if err := la2.renew(ctx); err != nil {
		t.Fatalf("a lost its lease to b's release: %v", err)
	}
}
