package injector_test

import (
	"testing"
)

// TestHalt: before Halt a frame is forwarded, counted and mirrored; after
// it a frame is dropped, neither counted (Stats.Frames) nor mirrored, and
// the responder gets nothing more.
func TestHalt(t *testing.T) {
	r := newPFCRig(t, nil)
	r.req.deliver(1000, writeFrame(t, 1, dscpRoCE))
	r.loop.Run()
	frames, copies, fwd := r.sw.Stats().Frames, len(r.dmp.sent), len(r.rsp.sent)
	if frames != 1 || copies != 1 || fwd != 1 {
		t.Fatalf("before Halt: %d frames, %d copies, %d forwarded; want 1 each", frames, copies, fwd)
	}
	r.sw.Halt()
	r.req.deliver(r.loop.Now()+1000, writeFrame(t, 2, dscpRoCE))
	r.loop.Run()
	if got := r.sw.Stats().Frames; got != 1 || len(r.dmp.sent) != 1 || len(r.rsp.sent) != 1 {
		t.Errorf("after Halt: %d frames, %d copies, %d forwarded; want 1 each (the frame dropped unseen)", got, len(r.dmp.sent), len(r.rsp.sent))
	}
}
