package integrity

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// mixedFrames returns the mirror copies of script (sequence numbers from
// 1) with a wrapped PFC copy after the RoCE copies whose index is in after.
// Each wrapped copy takes the next sequence number; the first carries event
// duplicate, which must not make it count as a duplicate copy.
func mixedFrames(t *testing.T, script string, after map[int]bool) (frames [][]byte, macs int) {
	t.Helper()
	fr, err := tracetest.Frames(tracetest.Conns(1, 0, model.VerbWrite), script, tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	for i, f := range fr {
		b := append([]byte(nil), f.Data...)
		seq++
		roce.ApplyMirror(b, roce.MirrorMeta{Seq: seq, TimestampNs: uint64(f.TimeNs), Event: f.Event}, roce.DefaultMirrorPort, 1)
		frames = append(frames, b)
		if after[i] {
			seq++
			ev := roce.EventPause
			if macs == 0 {
				ev = roce.EventDuplicate
			}
			pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 0xFFFF})
			frames = append(frames, roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: seq, TimestampNs: uint64(f.TimeNs) + 1, Event: ev}, macs%2 == 0, 2, pfc))
			macs++
		}
	}
	return frames, macs
}

// TestMACCopies: wrapped PFC/PAUSE copies are in the sequence and the
// mirrored count, not in the received count.
func TestMACCopies(t *testing.T) {
	// 7 RoCE copies (2 duplicate copies), 3 wrapped copies: 10 mirrored, 5 received.
	frames, macs := mixedFrames(t, "0 0+ 0+ 1d 3 2o A3", map[int]bool{0: true, 3: true, 6: true})
	if macs != 3 || len(frames) != 10 {
		t.Fatalf("built %d frames, %d wrapped; want 10, 3", len(frames), macs)
	}
	noDup, _ := mixedFrames(t, "0 1 2 3 A3", map[int]bool{1: true, 4: true})
	for _, tt := range []struct {
		name               string
		frames             [][]byte
		drop               int // index of a frame left out, or -1
		received, mirrored uint64
		want               string
	}{
		{"pass", frames, -1, 5, 10, "pass (skipped: dumpers)"},
		{"received counts wrapped", frames, -1, 8, 10,
			"fail: received: count: trace has 10 packets less 2 duplicate copies and 3 PFC/PAUSE copies, switch received 8 RoCE packets"},
		{"no duplicates", noDup, -1, 4, 7, "fail: received: count: trace has 7 packets less 2 PFC/PAUSE copies, switch received 4 RoCE packets"},
		{"no duplicates pass", noDup, -1, 5, 7, "pass (skipped: dumpers)"},
		{"mirrored", frames, -1, 5, 7, "fail: mirrored: count: trace has 10 packets, switch mirrored 7"},
		{"lost wrapped copy", frames, 1, 5, 10, "fail: seq: gap: seq 2 missing (between index 0 and index 1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := NewChecker(Options{ExpectFirstSeq: true})
			for i, f := range tt.frames {
				if i != tt.drop && !c.AddFrame(f, -1, i) {
					t.Fatal("AddFrame")
				}
			}
			v := c.Finish(Counters{SwitchRoCEReceived: Known(tt.received), SwitchMirrored: Known(tt.mirrored)})
			if v.String() != tt.want {
				t.Errorf("Finish(received %d, mirrored %d) = %q, want %q", tt.received, tt.mirrored, v, tt.want)
			}
		})
	}
	c, _ := NewChecker(Options{})
	for i, f := range frames {
		c.AddFrame(f, -1, i)
	}
	if v := c.Finish(Counters{}); v.Stats.MACCopies != 3 || v.Stats.Copies != 2 || v.Stats.Packets != 10 {
		t.Errorf("stats %+v, want 3 wrapped copies, 2 duplicate copies, 10 packets", v.Stats)
	}
}

func TestAddFrameMACAllocs(t *testing.T) {
	frames, _ := mixedFrames(t, "0 1 2 3 A3", map[int]bool{1: true, 4: true})
	c, _ := NewChecker(Options{})
	if n := testing.AllocsPerRun(1000, func() {
		for i, f := range frames {
			c.AddFrame(f, -1, i)
		}
	}); n != 0 {
		t.Errorf("AddFrame allocs per %d frames = %v, want 0", len(frames), n)
	}
}
