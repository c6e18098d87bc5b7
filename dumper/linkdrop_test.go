package dumper

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// Issue #38, point 10: a copy the clone session cut to the snap length
// is written as the dumper would have cut the whole copy: the same bytes,
// and the original's length from its IP header (before: the cut length).
func TestSimCutCopyKeepsOrigLen(t *testing.T) {
	s, _ := NewMirrorStream(1030, roce.DefaultMirrorPort)
	seqs := seqRange(1, 20)
	var frames [][]byte
	for _, seq := range seqs {
		frames = append(frames, s.Frame(nil, seq)[:128]) // the switch's clone session cut it
	}
	cfg := Config{Name: "dumper-0", SnapLen: 128, OutPath: filepath.Join(t.TempDir(), "d0.pcap")}
	if r := simRunFrames(t, cfg, frames); r.Captured != 20 || r.Foreign != 0 {
		t.Fatalf("report = %+v, want 20 captured", r)
	}
	checkStream(t, cfg.OutPath, s, 128, seqs) // OrigLen 1030
}

func TestIPFrameLen(t *testing.T) {
	v4 := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		Opcode: roce.RCSendOnly, Payload: make([]byte, 1000)}
	v6 := v4
	v6.SrcIP, v6.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	tagged := v4
	tagged.HasVLAN, tagged.VLANID = true, 7
	frame := func(f roce.FrameSpec) []byte {
		b, err := f.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name  string
		frame []byte
		want  int
	}{
		{"ipv4", frame(v4), len(frame(v4))},
		{"ipv4 cut", frame(v4)[:64], len(frame(v4))},
		{"ipv6 cut", frame(v6)[:64], len(frame(v6))},
		{"vlan cut", frame(tagged)[:64], len(frame(tagged))},
		{"ipv4 header cut", frame(v4)[:17], 0},
		{"not ip", append(make([]byte, 12), 0x88, 0xB5, 0, 0), 0},
		{"short", []byte{1, 2, 3}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ipFrameLen(tt.frame); got != tt.want {
				t.Errorf("ipFrameLen(%x) = %d, want %d", tt.frame, got, tt.want)
			}
		})
	}
}

// Issue #38, point 10: copies the switch→dumper link drops (a burst
// above its queue) are the sim backend's kernel drops, and the integrity
// verdict names them (before: kernel_dropped 0 and a bare gap).
func TestSimLinkDropsCounted(t *testing.T) {
	s, _ := NewMirrorStream(1030, roce.DefaultMirrorPort)
	loop := sim.NewEventLoop()
	// The queue holds the frame on the wire and 9 more: of a burst of 50,
	// 40 are dropped.
	sw, host := sim.NewNetwork(loop).NewLink(sim.LinkConfig{QueueBytes: 10 * 1030})
	out := filepath.Join(t.TempDir(), "d0.pcap")
	d, err := New(Config{Name: "dumper-0", Backend: "sim", SimPort: host, OutPath: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for seq := range uint64(50) {
		sw.Send(s.Frame(nil, seq+1))
	}
	loop.Run()
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if r.Captured != 10 || r.KernelDropped != 40 || r.BufferDropped != 0 {
		t.Fatalf("report: captured %d, kernel_dropped %d, buffer_dropped %d; want 10, 40, 0", r.Captured, r.KernelDropped, r.BufferDropped)
	}
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(50), Dumpers: []integrity.DumperCounters{r.Counters()},
	}, integrity.Options{ExpectFirstSeq: true}, out)
	if err != nil {
		t.Fatal(err)
	}
	want := "count: trace has 10 packets, switch mirrored 50; dumper-0 dropped 40 packets (the switch→dumper link dropped them: " +
		"a burst of copies overflowed its queue; lower snap-len (the clone session cuts copies to it) or add dumpers)"
	if v.Pass || v.Reason != want {
		t.Errorf("integrity = %v\nwant fail: %s", v, want)
	}
}
