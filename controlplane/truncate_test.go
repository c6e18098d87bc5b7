package controlplane_test

import (
	"bytes"
	"testing"

	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// Issue #38, point 10: each clone session cuts its copies to its dumper's
// snap length, as a hardware mirror session does (before: whole copies,
// so that a burst of 4 KiB copies overflowed the sim's switch→dumper
// link); the forwarded packet stays whole.
func TestCloneSessionTruncatesToSnapLen(t *testing.T) {
	for _, tt := range []struct {
		name    string
		snapLen int
		want    int // length of the copy
	}{
		{"snap-len 128", 128, 128},
		{"snap-len 64", 64, 64},
		{"longer than the frame", 9216, 0},
		{"unset", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 1)
			r.dumpers[0].SnapLen = tt.snapLen
			plan := r.install(controlplane.Intent{}, conn(generator.VerbWrite, 0x111, 5, 0x222, 0x42))
			if got := plan.Sessions[0].Truncate; got != tt.snapLen {
				t.Errorf("plan: session truncate %d, want %d", got, tt.snapLen)
			}
			r.send(true, writePkt(5, roce.RCWriteFirst))
			if len(r.atRsp) != 1 || len(r.dumps[0]) != 1 {
				t.Fatalf("%d frames at the responder, %d copies; want 1, 1", len(r.atRsp), len(r.dumps[0]))
			}
			full := len(r.atRsp[0])
			want := tt.want
			if want == 0 {
				want = full
			}
			cp := r.dumps[0][0]
			if len(cp) != want || full <= 128 {
				t.Errorf("copy of a %d-byte frame: %d bytes, want %d", full, len(cp), want)
			}
			var p roce.Packet
			if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(cp, 0, &p); err != nil || p.L3+p.IPLen != full {
				t.Errorf("copy: %v, IP length says %d bytes, want %d", err, p.L3+p.IPLen, full)
			}
			// From the BTH on (the mirror rewrote MACs, TTL and UDP ports),
			// the copy is the frame's first bytes.
			if w := r.atRsp[0][p.BTHOff:want]; !bytes.Equal(cp[p.BTHOff:], w) {
				t.Errorf("copy from the BTH = %x, want %x", cp[p.BTHOff:], w)
			}
		})
	}
}
