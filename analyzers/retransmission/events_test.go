package retransmission

import (
	"fmt"
	"slices"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestSpurious checks that held packets are no losses and that go-backs
// re-sending nothing lost are spurious. PSNs are relative (IPSN 0xFFFFF0).
func TestSpurious(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		losses   int
		spurious []string // "rel kind cause original_index"
		fast, to int
	}{
		{name: "reorder by one: no loss, go-back after the NAK is spurious",
			script: "0 1 3 4 2o N2 2 3 4 A4", spurious: []string{"2 fast delivered -1"}, fast: 1},
		{name: "delay past the timeout of the tail",
			script: "0 1 2a @9000 3a A3 @100 3ad A3", spurious: []string{"3 timeout late 5"}, to: 1},
		{name: "delay past the NAK: the fast retransmission was spurious",
			script: "0 1 3 N2 2 3 A3 2d A3", spurious: []string{"2 fast late 7"}, fast: 1},
		{name: "dropped ACK, timeout",
			script: "0 1a A1x @9000 0 1a A1", spurious: []string{"0 timeout delivered -1"}, to: 1},
		{name: "real loss is not spurious",
			script: "0 1x 2 N1 1 2 A2", losses: 1, fast: 1},
		{name: "duplicate copy is no retransmission",
			script: "0 0+ 1 A1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := track(t, model.VerbWrite, tt.script, tracetest.Options{}, Options{})
			var sp []string
			for _, s := range r.Spurious {
				sp = append(sp, fmt.Sprintf("%d %s %s %d", s.RelPSN, s.Kind, s.Cause, s.OriginalIndex))
			}
			if !slices.Equal(sp, tt.spurious) {
				t.Errorf("spurious = %q, want %q", sp, tt.spurious)
			}
			c := r.Conns[0]
			if len(r.Losses) != tt.losses || c.Losses != tt.losses || c.Spurious != len(tt.spurious) || c.Fast != tt.fast || c.Timeouts != tt.to {
				t.Errorf("losses %d (%d), spurious %d, fast %d, timeouts %d; want %d, %d, %d, %d\n%+v",
					len(r.Losses), c.Losses, c.Spurious, c.Fast, c.Timeouts, tt.losses, len(tt.spurious), tt.fast, tt.to, r.Losses)
			}
			if r.Verdict != model.Pass {
				t.Errorf("verdict %s (%s)", r.Verdict, r.Reason)
			}
		})
	}
}
