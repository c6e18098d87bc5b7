package orchestrator

import (
	"reflect"
	"testing"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/roce"
)

// TestBufferDrops: copies tagged drop that no event asked for are the
// switch's buffer drops when its lossless_drops plus lossy_drops are at
// least as many; more copies than counted drops stay unexpected, and so
// do other events.
func TestBufferDrops(t *testing.T) {
	counters := func(lossless, lossy uint64) *agent.SwitchPFCStatus {
		var cs [roce.PFCPriorities]injector.PFCCounters
		cs[3].LosslessDrops, cs[0].LossyDrops = lossless, lossy
		return &agent.SwitchPFCStatus{Counters: map[uint32][roce.PFCPriorities]injector.PFCCounters{34: cs}}
	}
	drop := UnexpectedEvent{DestQP: 1, PSN: 7, Type: "drop", Copies: 2}
	drop2 := UnexpectedEvent{DestQP: 2, PSN: 9, Type: "drop", Copies: 2, Asked: 1}
	ecn := UnexpectedEvent{DestQP: 1, PSN: 8, Type: "ecn", Copies: 1}
	for _, tc := range []struct {
		name     string
		st       *agent.SwitchPFCStatus
		in, want []UnexpectedEvent
		copies   int
	}{
		{"explained", counters(1, 2), []UnexpectedEvent{drop, ecn, drop2}, []UnexpectedEvent{ecn}, 3},
		{"exactly", counters(0, 3), []UnexpectedEvent{drop, drop2}, nil, 3},
		{"more copies than drops", counters(1, 1), []UnexpectedEvent{drop, ecn, drop2}, []UnexpectedEvent{drop, ecn, drop2}, 0},
		{"no switch counters", nil, []UnexpectedEvent{drop}, []UnexpectedEvent{drop}, 0},
		{"no drop copies", counters(5, 5), []UnexpectedEvent{ecn}, []UnexpectedEvent{ecn}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := bufferDrops(&Run{SwitchPFC: tc.st}, tc.in)
			if !reflect.DeepEqual(got, tc.want) || n != tc.copies {
				t.Errorf("bufferDrops() = %+v, %d; want %+v, %d", got, n, tc.want, tc.copies)
			}
		})
	}
}
