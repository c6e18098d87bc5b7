package integrity

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// TestDuplicateCopies: copies tagged duplicate are mirrored but not
// received by the switch; the event is read from the TTL's low 3 bits,
// whatever queue depth the bits above carry.
func TestDuplicateCopies(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbWrite)
	// 7 packets, 2 of them copies; delayed and reordered ones count once.
	fr, err := tracetest.Frames(conns, "0 0+ 0+ 1d 3 2o A3", tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		received, mirrored uint64
		want               string
	}{
		{5, 7, "pass (skipped: dumpers)"},
		{7, 7, "fail: received: count: trace has 7 packets less 2 duplicate copies, switch received 7 RoCE packets"},
		{5, 5, "fail: mirrored: count: trace has 7 packets, switch mirrored 5"},
	} {
		c2, _ := NewChecker(Options{ExpectFirstSeq: true})
		for i, f := range fr {
			b := append([]byte(nil), f.Data...)
			roce.ApplyMirror(b, roce.MirrorMeta{Seq: uint64(i + 1), TimestampNs: uint64(f.TimeNs), Event: f.Event, QDepth: int64(i) * 5000}, roce.DefaultMirrorPort, 1)
			if !c2.AddFrame(b, -1, i) {
				t.Fatal("AddFrame")
			}
		}
		v := c2.Finish(Counters{SwitchRoCEReceived: Known(tt.received), SwitchMirrored: Known(tt.mirrored)})
		if v.String() != tt.want || v.Stats.Copies != 2 {
			t.Errorf("Finish(received %d, mirrored %d) = %q, copies %d; want %q, 2", tt.received, tt.mirrored, v, v.Stats.Copies, tt.want)
		}
	}
	if e := roce.FrameEvent([]byte{1, 2}); e != roce.EventNone {
		t.Errorf("FrameEvent(short) = %v", e)
	}
}
