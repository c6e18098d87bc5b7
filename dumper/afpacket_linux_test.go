//go:build linux

package dumper

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
)

// vethPair makes two namespaces joined by a veth pair ("ltx" in tx, "lrx"
// in rx) with the given MTU and IPv6 off (no stray router solicitations).
func vethPair(t *testing.T, mtu int) (tx, rx *testutil.Netns) {
	t.Helper()
	tx, rx = testutil.NewNetns(t, "dtx"), testutil.NewNetns(t, "drx")
	testutil.Veth(t, tx, "ltx", "", rx, "lrx", "")
	for _, x := range []struct {
		ns  *testutil.Netns
		ifn string
	}{{tx, "ltx"}, {rx, "lrx"}} {
		x.ns.Run(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
		x.ns.Run(t, "ip", "link", "set", "dev", x.ifn, "mtu", strconv.Itoa(mtu))
	}
	return tx, rx
}

// blast sends copies first..last of s from ltx in namespace ns (Frame for
// each when exact, else Retag of one frame), plus the extra frames half way.
func blast(t *testing.T, ns *testutil.Netns, s *MirrorStream, first, last uint64, exact bool, extra [][]byte) {
	t.Helper()
	err := ns.Do(func() error {
		b, err := OpenBlaster("ltx")
		if err != nil {
			return err
		}
		defer b.Close()
		buf := make([]byte, 0, 10000)
		f := s.Frame(buf[:0], first)
		for seq := first; seq <= last; seq++ {
			if exact {
				f = s.Frame(buf[:0], seq)
			} else {
				s.Retag(f, seq)
			}
			if err := b.Send(f); err != nil {
				return err
			}
			if seq == first+(last-first)/2 {
				for _, x := range extra {
					if err := b.Send(x); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startDumper starts an afpacket dumper on lrx in ns.
func startDumper(t *testing.T, ns *testutil.Netns, cfg Config) *Dumper {
	t.Helper()
	cfg.Backend, cfg.Interface = "afpacket", "lrx"
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error { return d.Start(t.Context()) }); err != nil {
		t.Fatal(err)
	}
	return d
}

// waitFor waits until the dumper has seen n frames (or 20 s).
func waitFor(t *testing.T, d *Dumper, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for d.Live().Received+d.Live().Foreign < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAFPacketStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		workers  int
		fanout   string
		frameLen int
		n        uint64
	}{
		{"lb-2", 2, "lb", 130, 20000},
		{"hash-2", 2, "hash", 202, 20000},
		{"cpu-1", 1, "cpu", 130, 5000},
		{"jumbo-9k", 2, "lb", 9002, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, rx := vethPair(t, 9500)
			s, err := NewMirrorStream(tc.frameLen, roce.DefaultMirrorPort)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "dumper-0.pcap")
			snap := max(tc.frameLen, 64) // every byte kept, and no more memory than that
			d := startDumper(t, rx, Config{Name: "dumper-0", Workers: tc.workers, FanoutMode: tc.fanout,
				SnapLen: snap, Capacity: int(tc.n), OutPath: out})
			other := s.Frame(nil, 99)
			other[37] ^= 1 // UDP destination port 9740: filtered out
			blast(t, tx, s, 1, tc.n, true, [][]byte{s.Original(nil, 1), other})
			waitFor(t, d, tc.n)
			r, err := d.Stop()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("report: %+v", r)
			if r.Captured != tc.n || r.Dropped() != 0 || r.Foreign != 0 {
				t.Fatalf("captured %d dropped %d foreign %d, want %d 0 0", r.Captured, r.Dropped(), r.Foreign, tc.n)
			}
			if tc.workers > 1 && tc.fanout == "lb" {
				for _, w := range r.PerWorker {
					if w.Captured == 0 {
						t.Errorf("worker %d captured nothing with lb fanout", w.Worker)
					}
				}
			}
			checkStream(t, out, s, snap, seqRange(1, tc.n))
			v, err := integrity.CheckFiles(integrity.Counters{
				SwitchMirrored: integrity.Known(tc.n), SwitchRoCEReceived: integrity.Known(tc.n),
				Dumpers: []integrity.DumperCounters{r.Counters()},
			}, integrity.Options{ExpectFirstSeq: true}, out)
			if err != nil || !v.Pass || len(v.Skipped()) != 0 {
				t.Errorf("integrity = %v, %v; want pass with nothing skipped", v, err)
			}
		})
	}
}

// TestAFPacketMillion captures over a million packets on one worker at the
// default snap length.
func TestAFPacketMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 1_100_000
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	out := filepath.Join(t.TempDir(), "dumper-0.pcap")
	d := startDumper(t, rx, Config{Name: "dumper-0", Workers: 1, Capacity: 1_200_000, OutPath: out})
	start := time.Now()
	blast(t, tx, s, 1, n, false, nil)
	sent := time.Since(start)
	waitFor(t, d, n)
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d packets sent in %v (%.0f pps); report %+v", n, sent, n/sent.Seconds(), r)
	if r.Captured != n || r.Dropped() != 0 {
		t.Fatalf("captured %d dropped %d (kernel %d), want %d 0", r.Captured, r.Dropped(), r.KernelDropped, n)
	}
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(n), Dumpers: []integrity.DumperCounters{r.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, out)
	if err != nil || !v.Pass {
		t.Errorf("integrity = %v, %v; want pass", v, err)
	}
}

// TestAFPacketOverflow fills a 1000-frame buffer with 5000 copies: 4000
// buffer drops are reported, the file holds 1000, and the pool's trace (a
// second dumper got the copies after them) fails integrity with a gap.
func TestAFPacketOverflow(t *testing.T) {
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	dir := t.TempDir()
	p0, p1 := filepath.Join(dir, "dumper-0.pcap"), filepath.Join(dir, "dumper-1.pcap")
	d := startDumper(t, rx, Config{Name: "dumper-0", Capacity: 1000, OutPath: p0})
	blast(t, tx, s, 1, 5000, false, nil)
	waitFor(t, d, 5000)
	r0, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if r0.Captured != 1000 || r0.BufferDropped != 4000 || r0.KernelDropped != 0 || !r0.Full {
		t.Fatalf("report %+v, want 1000 captured and 4000 buffer drops", r0)
	}
	if ps := readAll(t, p0); len(ps) != 1000 {
		t.Fatalf("%s has %d packets, want 1000", p0, len(ps))
	}
	r1 := simRun(t, Config{Name: "dumper-1", Capacity: 100, OutPath: p1}, s, seqRange(5001, 5100))
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(5100), Dumpers: []integrity.DumperCounters{r0.Counters(), r1.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, p0, p1)
	if err != nil {
		t.Fatal(err)
	}
	drop := "dumper-0 dropped 4000 packets (a worker wrote its num-pkts (Capacity) and dropped the rest: raise num-pkts or remove it, and the disk is the limit)"
	want := "gap: seq 1001..5000 missing (4000 packets) (between dumper-0 #999 and dumper-1 #0); " + drop
	if v.Pass || v.Check != "seq" || v.Reason != want {
		t.Errorf("integrity = %v, want fail: seq: %s", v, want)
	}
	if d := v.Checks[4]; d.Status != integrity.Failed || d.Reason != drop {
		t.Errorf("dumpers check = %+v", d)
	}
}

// TestAFPacketKernelDrops gives the kernel a tiny ring (two 4 KiB blocks)
// for a fast stream: what does not fit must show up as KernelDropped, and
// captured + dropped must account for every frame sent.
func TestAFPacketKernelDrops(t *testing.T) {
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(1026, roce.DefaultMirrorPort)
	d := startDumper(t, rx, Config{Name: "dumper-0", Capacity: 100000, SnapLen: 1500,
		BlockSize: 4096, BlockCount: 2, BlockTimeout: 100 * time.Millisecond, OutPath: filepath.Join(t.TempDir(), "d.pcap")})
	blast(t, tx, s, 1, 20000, false, nil)
	time.Sleep(300 * time.Millisecond)
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report %+v", r)
	if r.Captured+r.KernelDropped != 20000 || r.BufferDropped != 0 {
		t.Errorf("captured %d + kernel dropped %d != 20000 sent (buffer dropped %d)", r.Captured, r.KernelDropped, r.BufferDropped)
	}
}
