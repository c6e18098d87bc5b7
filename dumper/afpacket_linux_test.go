//go:build linux

package dumper

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// vethPair makes two namespaces joined by a veth pair ("ltx" in tx, "lrx"
// in rx) with the given MTU and IPv6 off (no stray router solicitations).
func vethPair(t testing.TB, mtu int) (tx, rx *testutil.Netns) {
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
func blast(t testing.TB, ns *testutil.Netns, s *MirrorStream, first, last uint64, exact bool, extra [][]byte) {
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
func startDumper(t testing.TB, ns *testutil.Netns, cfg Config) *Dumper {
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
func waitFor(t testing.TB, d *Dumper, n uint64) {
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
// default snap length. Nothing it asserts depends on machine load: the
// blaster keeps at most millionWindow frames ahead of what the dumper has
// handed to its spool (a rate the test controls), blocks are retired after
// 200 ms (so the 64-block ring fills only if the worker is starved for
// over 12 s), and what it checks is the accounting — every frame sent is
// captured or counted as a kernel drop, exactly — and that the file holds
// exactly the captured frames, each intact, in order. How fast the dumper
// captures without loss is BenchmarkAFPacketRate's.
func TestAFPacketMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 1_100_000
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	out := filepath.Join(t.TempDir(), "dumper-0.pcap")
	d := startDumper(t, rx, Config{Name: "dumper-0", Workers: 1, Capacity: 1_200_000, OutPath: out,
		BlockTimeout: 200 * time.Millisecond})
	err := tx.Do(func() error {
		b, err := OpenBlaster("ltx")
		if err != nil {
			return err
		}
		defer b.Close()
		f := s.Frame(nil, 1)
		for seq := uint64(1); seq <= n; seq++ {
			if seq%1024 == 0 {
				if err := waitWindow(d, seq); err != nil {
					return err
				}
			}
			s.Retag(f, seq)
			if err := b.Send(f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, n)
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report %+v", r)
	if r.Captured+r.KernelDropped != n || r.BufferDropped != 0 || r.Foreign != 0 {
		t.Fatalf("captured %d + kernel dropped %d = %d, want %d sent (buffer dropped %d, foreign %d, want 0 0)",
			r.Captured, r.KernelDropped, r.Captured+r.KernelDropped, n, r.BufferDropped, r.Foreign)
	}
	// Every frame in the file is a sent one, intact, in sequence order.
	var got, prev uint64
	first := s.Restored(nil, 1)[:DefaultSnapLen]
	want := bytes.Clone(first)
	err = trace.ReadFile(out, func(p trace.Packet) error {
		seq, _, _ := trace.MirrorFields(p.Data)
		if seq <= prev || seq > n {
			return fmt.Errorf("packet %d: seq %d after %d", got, seq, prev)
		}
		// The blaster retagged copy 1: the restored copy differs from
		// copy 1's in its timestamp and sequence number only.
		s.Retag(want, seq)
		copy(want[34:36], first[34:36])
		if !bytes.Equal(p.Data, want) || p.OrigLen != 130 || p.TimeNs != int64(s.TimeBase+seq*s.TimeStep) {
			return fmt.Errorf("packet %d (seq %d) = ts %d %x (len %d), want ts %d %x (130)",
				got, seq, p.TimeNs, p.Data, p.OrigLen, s.TimeBase+seq*s.TimeStep, want)
		}
		got++
		prev = seq
		return nil
	})
	if err != nil || got != r.Captured {
		t.Fatalf("%s: %d packets, %v; want %d", out, got, err, r.Captured)
	}
	if r.KernelDropped != 0 {
		t.Logf("the kernel dropped %d frames: the worker was starved for seconds", r.KernelDropped)
		return
	}
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(n), Dumpers: []integrity.DumperCounters{r.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, out)
	if err != nil || !v.Pass {
		t.Errorf("integrity = %v, %v; want pass", v, err)
	}
}

// millionWindow is how far TestAFPacketMillion's blaster may run ahead of
// the dumper: a fifth of what the default ring holds (64 blocks of about
// 5,000 frames of 130 bytes).
const millionWindow = 64_000

// waitWindow waits (up to 60 s without progress) until the dumper has
// handed over all but millionWindow of the frames before seq.
func waitWindow(d *Dumper, seq uint64) error {
	last, since := uint64(0), time.Now()
	for {
		l := d.Live()
		done := l.Received + l.Foreign
		if done+millionWindow >= seq {
			return nil
		}
		if done != last {
			last, since = done, time.Now()
		} else if time.Since(since) > 60*time.Second {
			return fmt.Errorf("the dumper handed over no frame for 60 s (%d of %d)", done, seq)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkAFPacketRate blasts 1.1 M copies as fast as one sender can,
// without flow control, at one afpacket worker, and reports the offered
// rate and what was lost: the rate aspect TestAFPacketMillion leaves out
// (it depends on the machine and its load).
func BenchmarkAFPacketRate(b *testing.B) {
	const n = 1_100_000
	b.ReportAllocs()
	var sent time.Duration
	var lost uint64
	for range b.N {
		tx, rx := vethPair(b, 1500)
		s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
		out := filepath.Join(b.TempDir(), "dumper-0.pcap")
		d := startDumper(b, rx, Config{Name: "dumper-0", Workers: 1, Capacity: 1_200_000, OutPath: out})
		start := time.Now()
		blast(b, tx, s, 1, n, false, nil)
		sent += time.Since(start)
		waitFor(b, d, n)
		r, err := d.Stop()
		if err != nil {
			b.Fatal(err)
		}
		if r.Captured+r.Dropped() != n {
			b.Fatalf("captured %d + dropped %d != %d sent", r.Captured, r.Dropped(), n)
		}
		lost += r.Dropped()
	}
	b.ReportMetric(float64(n*b.N)/sent.Seconds(), "offered-pkts/s")
	b.ReportMetric(float64(lost)/float64(b.N), "lost/op")
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
