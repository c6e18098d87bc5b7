package dumper

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
	"github.com/netlumina/lumina/trace"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Interface: "eth0"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "dumper" || c.Workers != 1 || c.SnapLen != 128 || c.Capacity != 0 ||
		c.MirrorPort != roce.DefaultMirrorPort || c.FanoutMode != "lb" || c.OutPath != "dumper.pcap" {
		t.Errorf("defaults = %+v", c)
	}
}

func TestConfigInvalid(t *testing.T) {
	port := sim.NewNetwork(sim.NewEventLoop())
	a, _ := port.NewLink(sim.LinkConfig{})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"backend", Config{Backend: "pcap", Interface: "x"}, `unknown backend "pcap"`},
		{"no interface", Config{Backend: "afpacket"}, "needs Interface"},
		{"no sim port", Config{Backend: "sim"}, "needs SimPort"},
		{"snaplen small", Config{Interface: "x", SnapLen: 63}, "snaplen 63 out of range 64..9216"},
		{"snaplen big", Config{Interface: "x", SnapLen: 9217}, "snaplen 9217"},
		{"workers", Config{Interface: "x", Workers: -1}, "workers -1"},
		{"capacity", Config{Interface: "x", Capacity: -5}, "capacity -5"},
		{"fanout", Config{Interface: "x", FanoutMode: "rr"}, `fanout mode "rr"`},
		{"block", Config{Interface: "x", BlockSize: 5000}, "block size 5000"},
		{"sim ok", Config{Backend: "sim", SimPort: a}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("withDefaults() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("withDefaults() = %v, want ErrInvalidConfig containing %q", err, tc.want)
			}
		})
	}
}

func TestMirrorDstPort(t *testing.T) {
	s, _ := NewMirrorStream(130, 9741)
	f := s.Frame(nil, 7)
	if p, ok := mirrorDstPort(f); !ok || p != 9741 {
		t.Errorf("mirrorDstPort(copy) = %d, %v, want 9741, true", p, ok)
	}
	o := s.Original(nil, 7)
	if p, ok := mirrorDstPort(o); !ok || p != roce.UDPPort {
		t.Errorf("mirrorDstPort(original) = %d, %v, want 4791, true", p, ok)
	}
	for _, n := range []int{0, 13, 20, 37} {
		if _, ok := mirrorDstPort(f[:n]); ok {
			t.Errorf("mirrorDstPort(%d bytes) ok, want not", n)
		}
	}
	arp := bytes.Clone(f)
	arp[12], arp[13] = 0x08, 0x06
	if _, ok := mirrorDstPort(arp); ok {
		t.Error("mirrorDstPort(ARP) ok")
	}
}

func TestStreamRetag(t *testing.T) {
	s, _ := NewMirrorStream(130, 9741)
	f := s.Frame(nil, 1)
	s.Retag(f, 12345)
	g := s.Frame(nil, 12345)
	// Retag keeps the PSN of seq 1; everything else matches.
	copy(g[14+20+8+9:14+20+8+12], f[14+20+8+9:14+20+8+12])
	copy(g[len(g)-4:], f[len(f)-4:])
	if !bytes.Equal(f, g) {
		t.Errorf("Retag(Frame(1), 12345) =\n%x\nwant\n%x", f, g)
	}
}

func TestSpoolPutNoAlloc(t *testing.T) {
	sp, err := newSpool(filepath.Join(t.TempDir(), "x.pcap"), 0, 128, roce.DefaultMirrorPort, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	f := s.Frame(nil, 1)
	g := bytes.Clone(f)
	var c batch
	allocs := testing.AllocsPerRun(100000, func() { sp.put(&c, f, len(f)) })
	if allocs != 0 {
		t.Errorf("spool.put allocates %v times, want 0", allocs)
	}
	if !bytes.Equal(f, g) {
		t.Error("spool.put changed the frame it was given")
	}
	// 100001 frames of 16+128 bytes: the 1 MiB buffer was written out.
	if sp.n != 100001 || c.received != 100001 || c.dropped != 0 || len(sp.runs) != 1 || sp.off != 24+100001*144 {
		t.Errorf("n=%d received=%d dropped=%d runs=%d off=%d", sp.n, c.received, c.dropped, len(sp.runs), sp.off)
	}
}

// TestSpoolLimit: Capacity bounds the frames a worker writes; the rest
// are dropped and the spool says it was full.
func TestSpoolLimit(t *testing.T) {
	sp, err := newSpool(filepath.Join(t.TempDir(), "x.pcap"), 0, 128, roce.DefaultMirrorPort, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	var c batch
	for seq := range uint64(10) {
		f := s.Frame(nil, seq)
		sp.put(&c, f, len(f))
	}
	sp.put(&c, make([]byte, 11), 11) // too short to be a mirror copy
	if sp.n != 4 || !sp.full || c.received != 10 || c.dropped != 6 || c.foreign != 1 {
		t.Errorf("n=%d full=%v received=%d dropped=%d foreign=%d, want 4 true 10 6 1", sp.n, sp.full, c.received, c.dropped, c.foreign)
	}
}

// simRun sends copies seqs over a sim link to a sim dumper and stops it.
func simRun(t *testing.T, cfg Config, s *MirrorStream, seqs []uint64, extra ...[]byte) Report {
	t.Helper()
	var frames [][]byte
	for _, seq := range seqs {
		frames = append(frames, s.Frame(nil, seq))
	}
	return simRunFrames(t, cfg, append(frames, extra...))
}

func readAll(t *testing.T, path string) []trace.Packet {
	t.Helper()
	var ps []trace.Packet
	if err := trace.ReadFile(path, func(p trace.Packet) error {
		p.Data = bytes.Clone(p.Data)
		ps = append(ps, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ps
}

// checkStream compares the packets of path with the restored copies of
// seqs, cut to snaplen, with switch timestamps.
func checkStream(t *testing.T, path string, s *MirrorStream, snaplen int, seqs []uint64) {
	t.Helper()
	ps := readAll(t, path)
	if len(ps) != len(seqs) {
		t.Fatalf("%s has %d packets, want %d", path, len(ps), len(seqs))
	}
	buf := make([]byte, 0, 10000)
	for i, seq := range seqs {
		want := s.Restored(buf[:0], seq)
		orig := len(want)
		want = want[:min(len(want), snaplen)]
		p := ps[i]
		if !bytes.Equal(p.Data, want) || p.OrigLen != orig || p.TimeNs != int64(s.TimeBase+seq*s.TimeStep) {
			t.Fatalf("packet %d (seq %d) = ts %d len %d/%d\n%x\nwant ts %d len %d/%d\n%x", i, seq,
				p.TimeNs, len(p.Data), p.OrigLen, p.Data, s.TimeBase+seq*s.TimeStep, len(want), orig, want)
		}
	}
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestSimStream(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	dir := t.TempDir()
	foreign := s.Original(nil, 1) // UDP 4791: not a mirror copy
	cfg := Config{Name: "dumper-0", Workers: 3, SnapLen: 128, Capacity: 1000, OutPath: filepath.Join(dir, "d0.pcap")}
	seqs := seqRange(1, 500)
	r := simRun(t, cfg, s, seqs, foreign, []byte{1, 2, 3})
	if r.Captured != 500 || r.BufferDropped != 0 || r.Foreign != 2 || r.Path != cfg.OutPath || len(r.PerWorker) != 3 {
		t.Errorf("report = %+v, want 500 captured, 2 foreign", r)
	}
	checkStream(t, cfg.OutPath, s, 128, seqs)
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(500), SwitchRoCEReceived: integrity.Known(500),
		Dumpers: []integrity.DumperCounters{r.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, cfg.OutPath)
	if err != nil || !v.Pass {
		t.Errorf("integrity = %v, %v; want pass", v, err)
	}
}

func TestSimOverflow(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	dir := t.TempDir()
	p0, p1 := filepath.Join(dir, "d0.pcap"), filepath.Join(dir, "d1.pcap")
	r0 := simRun(t, Config{Name: "dumper-0", Capacity: 1000, OutPath: p0}, s, seqRange(1, 5000))
	if r0.Captured != 1000 || r0.BufferDropped != 4000 || r0.KernelDropped != 0 || !r0.Full {
		t.Fatalf("report = %+v, want 1000 captured, 4000 buffer drops, full", r0)
	}
	r1 := simRun(t, Config{Name: "dumper-1", Capacity: 1000, OutPath: p1}, s, seqRange(5001, 5100))
	if r1.Full {
		t.Errorf("dumper-1 (100 of 1000) reports full")
	}
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(5100), Dumpers: []integrity.DumperCounters{r0.Counters(), r1.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, p0, p1)
	if err != nil {
		t.Fatal(err)
	}
	want := "gap: seq 1001..5000 missing (4000 packets) (between dumper-0 #999 and dumper-1 #0); " +
		"dumper-0 dropped 4000 packets (a worker wrote its num-pkts (Capacity) and dropped the rest: raise num-pkts or remove it, and the disk is the limit)"
	if v.Pass || v.Check != "seq" || v.Reason != want {
		t.Errorf("integrity = %v, want fail: seq: %s", v, want)
	}
}

// spoolsOf writes seqs[w] to worker w's spool next to path.
func spoolsOf(t *testing.T, path string, s *MirrorStream, seqs ...[]uint64) []*spool {
	t.Helper()
	var sps []*spool
	for w, q := range seqs {
		sp, err := newSpool(path, w, 128, roce.DefaultMirrorPort, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		var c batch
		for _, seq := range q {
			f := s.Frame(nil, seq)
			sp.put(&c, f, len(f))
		}
		sps = append(sps, sp)
	}
	return sps
}

// TestWriteOrder checks the k-way merge, including a worker whose frames
// arrived out of order (three sorted runs), and that no spool file is left.
func TestWriteOrder(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcap")
	sps := spoolsOf(t, path, s, []uint64{1, 4, 7, 10}, []uint64{3, 2, 6, 5}, []uint64{8, 9})
	if len(sps[1].runs) != 3 || sps[1].runs[1] != (sortedRun{off: 24 + 144, n: 2}) {
		t.Fatalf("runs of 3 2 6 5 = %+v, want 3 | 2 6 | 5", sps[1].runs)
	}
	if err := finish(path, 128, sps); err != nil {
		t.Fatal(err)
	}
	checkStream(t, path, s, 128, seqRange(1, 10))
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left in the directory, want only x.pcap", len(ents))
	}
}

// TestWriteManyRuns merges more runs than one pass reads (a worker whose
// frames arrive in reverse order: every frame is a run), through
// intermediate files.
func TestWriteManyRuns(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	const n = 3*mergeFanIn + 7
	var rev []uint64
	for i := n; i >= 1; i-- {
		rev = append(rev, uint64(i))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcap")
	sps := spoolsOf(t, path, s, rev, []uint64{n + 1, n + 2})
	if len(sps[0].runs) != n {
		t.Fatalf("%d runs, want %d", len(sps[0].runs), n)
	}
	if err := finish(path, 128, sps); err != nil {
		t.Fatal(err)
	}
	checkStream(t, path, s, 128, seqRange(1, n+2))
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left in the directory, want only x.pcap", len(ents))
	}
}

// push is the producer side in Go, as the C loop does it: copy frame
// into the next slot and publish it, or report a full ring.
func (r *ring) push(frame []byte, origLen int) bool {
	h := r.ctl.head.Load()
	if h-r.ctl.tail.Load() == r.slots {
		return false
	}
	i := h % r.slots
	c := copy(r.slab[int(i)*r.snap:int(i+1)*r.snap], frame)
	r.recs[i] = ringRec{origLen: uint32(origLen), capLen: uint32(c)}
	r.ctl.head.Store(h + 1)
	return true
}

// TestRing passes frames through a ring smaller than the stream while the
// drain goroutine writes them: a producer that finds it full counts a
// drop, every frame it accepted reaches the file, in order.
func TestRing(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	path := filepath.Join(t.TempDir(), "x.pcap")
	sp, err := newSpool(path, 0, 128, roce.DefaultMirrorPort, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{sp: sp}
	r := newRing(64*128, 128)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		r.drain(w, done)
		close(finished)
	}()
	var kept []uint64
	var dropped uint64
	for seq := range uint64(20000) {
		f := s.Frame(nil, seq)
		if r.push(f, len(f)) {
			kept = append(kept, seq)
		} else {
			dropped++
		}
	}
	close(done)
	<-finished
	if err := finish(path, 128, []*spool{sp}); err != nil {
		t.Fatal(err)
	}
	if uint64(len(kept))+dropped != 20000 || w.c.dropped.Load() != 0 || w.c.received.Load() != 0 {
		t.Errorf("kept %d dropped %d; worker counted received %d dropped %d (the producer counts)",
			len(kept), dropped, w.c.received.Load(), w.c.dropped.Load())
	}
	checkStream(t, path, s, 128, kept)
}

func TestStateErrors(t *testing.T) {
	a, _ := sim.NewNetwork(sim.NewEventLoop()).NewLink(sim.LinkConfig{})
	d, err := New(Config{Backend: "sim", SimPort: a, Capacity: 1, OutPath: filepath.Join(t.TempDir(), "x.pcap")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Stop(); !errors.Is(err, ErrState) {
		t.Errorf("Stop before Start = %v, want ErrState", err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); !errors.Is(err, ErrState) {
		t.Errorf("second Start = %v, want ErrState", err)
	}
	if _, err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Stop(); !errors.Is(err, ErrState) {
		t.Errorf("second Stop = %v, want ErrState", err)
	}
}

func TestWriteFailureLeavesNoFile(t *testing.T) {
	a, _ := sim.NewNetwork(sim.NewEventLoop()).NewLink(sim.LinkConfig{})
	d, err := New(Config{Backend: "sim", SimPort: a, Capacity: 1, OutPath: filepath.Join(t.TempDir(), "nodir", "x.pcap")})
	if err != nil {
		t.Fatal(err)
	}
	// The spool files are created next to the output: Start fails.
	if err := d.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "nodir") {
		t.Errorf("Start into a missing directory = %v, want an error naming it", err)
	}
	if _, err := d.Stop(); !errors.Is(err, ErrState) {
		t.Errorf("Stop after a failed Start = %v, want ErrState", err)
	}
}

// TestWriteFailureAtStop: an output that cannot be published (the path is
// a directory) fails Stop, reports no path and no capture, and leaves no
// spool file behind.
func TestWriteFailureAtStop(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.pcap")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	loop := sim.NewEventLoop()
	a, b := sim.NewNetwork(loop).NewLink(sim.LinkConfig{MTU: 9500})
	d, err := New(Config{Backend: "sim", SimPort: b, OutPath: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.Send(s.Frame(nil, 1))
	loop.Run()
	r, err := d.Stop()
	if err == nil || r.Path != "" || r.Captured != 0 {
		t.Errorf("Stop onto a directory = %+v, %v; want an error, no path, nothing captured", r, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left, want only the directory x.pcap", len(ents))
	}
}

func TestDPDKStubError(t *testing.T) {
	if DPDKAvailable {
		t.Skip("built with dpdk")
	}
	d, err := New(Config{Backend: "dpdk", Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(t.Context())
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "go build -tags dpdk") {
		t.Errorf("Start(dpdk) = %v, want ErrNotSupported naming the build tag", err)
	}
}
