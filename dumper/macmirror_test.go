package dumper

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
	"github.com/netlumina/lumina/trace"
)

// macEvery: in a mixed stream, every macEvery-th sequence number is a
// wrapped PFC copy.
const macEvery = 7

// isMAC reports whether sequence number seq of a mixed stream is a wrapped
// copy.
func isMAC(seq uint64) bool { return seq%macEvery == 3 }

// macCopy appends the wrapped copy seq of a mixed stream: a PFC frame (a
// sent XOFF or a received XON, alternately) with s's timestamp for seq.
func macCopy(dst []byte, s *MirrorStream, seq uint64) []byte {
	pfc := roce.BuildPFC(nil, [6]byte{0x02, 0, 0, 0, 0, byte(seq)}, 0x08, [8]uint16{3: uint16(seq%2) * 0xFFFF})
	m := roce.MirrorMeta{Seq: seq, TimestampNs: s.TimeBase + seq*s.TimeStep}
	if seq%2 == 1 {
		m.Event = roce.EventPause
	}
	return roce.AppendMACMirror(dst, m, seq%2 == 1, uint16(seq%4), pfc)
}

// mixedFrame appends what the switch sends the dumpers as copy seq of a
// mixed stream, and mixedRestored what the dumper writes.
func mixedFrame(dst []byte, s *MirrorStream, seq uint64) []byte {
	if isMAC(seq) {
		return macCopy(dst, s, seq)
	}
	return s.Frame(dst, seq)
}

func mixedRestored(dst []byte, s *MirrorStream, seq uint64) []byte {
	if isMAC(seq) {
		return macCopy(dst, s, seq)
	}
	return s.Restored(dst, seq)
}

func macCount(first, last uint64) uint64 {
	n := uint64(0)
	for seq := first; seq <= last; seq++ {
		if isMAC(seq) {
			n++
		}
	}
	return n
}

// checkMixed compares the packets of path with the mixed stream's copies
// first..last, cut to snaplen, with switch timestamps, and checks the
// file's integrity against counters that count the wrapped copies as
// mirrored but not as received RoCE packets.
func checkMixed(t *testing.T, path string, s *MirrorStream, snaplen int, first, last uint64, r Report) {
	t.Helper()
	ps := readAll(t, path)
	if uint64(len(ps)) != last-first+1 {
		t.Fatalf("%s has %d packets, want %d", path, len(ps), last-first+1)
	}
	buf := make([]byte, 0, 10000)
	for i, p := range ps {
		seq := first + uint64(i)
		want := mixedRestored(buf[:0], s, seq)
		orig := len(want)
		want = want[:min(len(want), snaplen)]
		if !bytes.Equal(p.Data, want) || p.OrigLen != orig || p.TimeNs != int64(s.TimeBase+seq*s.TimeStep) {
			t.Fatalf("packet %d (seq %d) = ts %d len %d/%d\n%x\nwant ts %d len %d/%d\n%x", i, seq,
				p.TimeNs, len(p.Data), p.OrigLen, p.Data, s.TimeBase+seq*s.TimeStep, len(want), orig, want)
		}
		if p.IsMACMirror() != isMAC(seq) {
			t.Fatalf("packet %d (seq %d): IsMACMirror = %v", i, seq, p.IsMACMirror())
		}
	}
	n, macs := last-first+1, macCount(first, last)
	v, err := integrity.CheckFiles(integrity.Counters{
		SwitchMirrored: integrity.Known(n), SwitchRoCEReceived: integrity.Known(n - macs),
		Dumpers: []integrity.DumperCounters{r.Counters()},
	}, integrity.Options{ExpectFirstSeq: first == 1}, path)
	if err != nil || !v.Pass || len(v.Skipped()) != 0 || uint64(v.Stats.MACCopies) != macs {
		t.Errorf("integrity = %v (%d wrapped copies), %v; want pass with nothing skipped, %d wrapped copies", v, v.Stats.MACCopies, err, macs)
	}
}

// TestSimMACMirror: the sim backend keeps wrapped copies, writes them
// unchanged in sequence order among the RoCE copies, and a raw PFC frame
// (not mirrored) or a truncated wrapper is foreign.
func TestSimMACMirror(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	out := filepath.Join(t.TempDir(), "d0.pcap")
	cfg := Config{Name: "dumper-0", Workers: 3, SnapLen: 64, Capacity: 1000, OutPath: out}
	var frames [][]byte
	for seq := uint64(1); seq <= 300; seq++ {
		frames = append(frames, mixedFrame(nil, s, seq))
	}
	raw := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 9}, 0x08, [8]uint16{3: 100})
	short := macCopy(nil, s, 10)[:trace.MACMirrorMinLen-1]
	r := simRunFrames(t, cfg, append(frames, raw, short))
	if r.Captured != 300 || r.Foreign != 2 || r.Dropped() != 0 {
		t.Fatalf("report = %+v, want 300 captured, 2 foreign", r)
	}
	checkMixed(t, out, s, 64, 1, 300, r)
}

// simRunFrames sends frames over a sim link to a sim dumper and stops it.
func simRunFrames(t *testing.T, cfg Config, frames [][]byte) Report {
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
	for _, f := range frames {
		a.Send(f)
	}
	loop.Run()
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
