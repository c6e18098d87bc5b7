package dumper

import (
	"bytes"
	"errors"
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
	if c.Name != "dumper" || c.Workers != 1 || c.SnapLen != 128 || c.Capacity != 1<<20 ||
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

func TestBufferAddNoAlloc(t *testing.T) {
	b := newBuffer(4, 128, true)
	s, _ := NewMirrorStream(130, 9741)
	f := s.Frame(nil, 1)
	var c batch
	allocs := testing.AllocsPerRun(100, func() { b.put(&c, f, len(f), 1) })
	if allocs != 0 {
		t.Errorf("buffer.put allocates %v times, want 0", allocs)
	}
	if b.n != 4 || c.received != 101 || c.dropped != 97 {
		t.Errorf("n=%d received=%d dropped=%d, want 4 101 97", b.n, c.received, c.dropped)
	}
	if got := b.frame(0); len(got) != 128 || !bytes.Equal(got, f[:128]) {
		t.Errorf("frame(0) = %d bytes, want the first 128 of the frame", len(got))
	}
}

// simRun sends copies seqs over a sim link to a sim dumper and stops it.
func simRun(t *testing.T, cfg Config, s *MirrorStream, seqs []uint64, extra ...[]byte) Report {
	t.Helper()
	loop := sim.NewEventLoop()
	a, b := sim.NewNetwork(loop).NewLink(sim.LinkConfig{MTU: 9500})
	cfg.Backend, cfg.SimPort = "sim", b
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 10000)
	for _, seq := range seqs {
		a.Send(s.Frame(buf[:0], seq))
	}
	for _, f := range extra {
		a.Send(f)
	}
	loop.Run()
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return r
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
	if r0.Captured != 1000 || r0.BufferDropped != 4000 || r0.KernelDropped != 0 {
		t.Fatalf("report = %+v, want 1000 captured, 4000 buffer drops", r0)
	}
	r1 := simRun(t, Config{Name: "dumper-1", Capacity: 1000, OutPath: p1}, s, seqRange(5001, 5100))
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(5100), Dumpers: []integrity.DumperCounters{r0.Counters(), r1.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, p0, p1)
	if err != nil {
		t.Fatal(err)
	}
	want := "gap: seq 1001..5000 missing (4000 packets) (between dumper-0 #999 and dumper-1 #0)"
	if v.Pass || v.Check != "seq" || v.Reason != want {
		t.Errorf("integrity = %v, want fail: seq: %s", v, want)
	}
}

// TestWriteOrder checks the k-way merge, including a worker whose records
// arrived out of order.
func TestWriteOrder(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	bufs := []*buffer{newBuffer(10, 128, false), newBuffer(10, 128, false), newBuffer(10, 128, false)}
	buf := make([]byte, 0, 200)
	add := func(w int, seqs ...uint64) {
		for _, q := range seqs {
			f := s.Frame(buf[:0], q)
			bufs[w].add(f, len(f), 0)
		}
	}
	add(0, 1, 4, 7, 10)
	add(1, 3, 2, 6, 5) // out of order within the worker
	add(2, 8, 9)
	path := filepath.Join(t.TempDir(), "x.pcap")
	written, foreign, err := writePcap(path, 128, roce.DefaultMirrorPort, bufs)
	if err != nil {
		t.Fatal(err)
	}
	if written[0] != 4 || written[1] != 4 || written[2] != 2 || foreign[0]+foreign[1]+foreign[2] != 0 {
		t.Errorf("written %v foreign %v", written, foreign)
	}
	checkStream(t, path, s, 128, seqRange(1, 10))
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
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, err := d.Stop()
	if err == nil || r.Path != "" {
		t.Errorf("Stop into a missing directory = %+v, %v; want an error and no path", r, err)
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

// TestBufferGrows fills a growable (sim) buffer past several doublings
// and past its capacity: every frame is kept intact, the rest dropped, and
// memory is only what was needed.
func TestBufferGrows(t *testing.T) {
	const capacity = 3*growFrames + 5
	b := newBuffer(capacity, 64, false)
	if len(b.slab) != 0 {
		t.Fatalf("a growable buffer starts with %d bytes, want 0", len(b.slab))
	}
	frame := make([]byte, 100)
	for i := range capacity + 10 {
		frame[0], frame[1] = byte(i), byte(i>>8)
		if ok := b.add(frame, 100+i, int64(i)); ok != (i < capacity) {
			t.Fatalf("add #%d = %v, want %v", i, ok, i < capacity)
		}
	}
	if b.n != capacity || len(b.recs) != capacity || len(b.slab) != capacity*64 {
		t.Fatalf("n %d, %d records, %d bytes; want %d, %d, %d", b.n, len(b.recs), len(b.slab), capacity, capacity, capacity*64)
	}
	for _, i := range []int{0, growFrames - 1, growFrames, 2 * growFrames, capacity - 1} {
		f := b.frame(i)
		if len(f) != 64 || f[0] != byte(i) || f[1] != byte(i>>8) || b.recs[i].origLen != uint32(100+i) {
			t.Errorf("frame %d = % x… (orig %d)", i, f[:2], b.recs[i].origLen)
		}
	}
}
