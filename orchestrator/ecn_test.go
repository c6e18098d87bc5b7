package orchestrator

import (
	"reflect"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/injector"
)

// TestSwitchECN: switch.ecn becomes the injector's ECN config (KiB to
// bytes, priorities to a bitmap) and turns the queue model on, as more than
// two hosts do; a two-host test without ecn has neither.
func TestSwitchECN(t *testing.T) {
	ecn := &config.ECN{Priorities: []int{3, 5}, KminKB: 100, KmaxKB: 400, Pmax: 0.2}
	three := []config.NamedHost{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, tc := range []struct {
		name   string
		test   config.Test
		want   *injector.ECNConfig
		queues bool
	}{
		{"two hosts", config.Test{Hosts: three[:2]}, nil, false},
		{"ecn", config.Test{Hosts: three[:2], Switch: config.Switch{ECN: ecn}},
			&injector.ECNConfig{Priorities: 1<<3 | 1<<5, KminBytes: 102400, KmaxBytes: 409600, Pmax: 0.2}, true},
		{"three hosts", config.Test{Hosts: three}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{Test: &tc.test}
			if got := r.switchECN(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("switchECN() = %+v, want %+v", got, tc.want)
			}
			if got := r.queuesOn(); got != tc.queues {
				t.Errorf("queuesOn() = %v, want %v", got, tc.queues)
			}
		})
	}
}
