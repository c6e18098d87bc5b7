package config_test

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/nic"
)

// TestPrioDSCPMapReaders: the three readers of a prio-dscp-map agree on
// every DSCP's priority: config.NIC.DSCPToPriority (the software NIC and
// switch on sim and netns), nic.DSCP2Prio (mlnx_qos --dscp2prio on a
// ConnectX host) and model.Params.PriorityOfDSCP (the pfc analyzer). A DSCP
// the map does not name keeps the default priority DSCP/8
// (docs/config.md, nic.prio-dscp-map).
func TestPrioDSCPMapReaders(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want map[int]int // spot checks: DSCP → priority
	}{
		{"default", "requester: {nic: {ip-list: [10.0.0.1]}}\n", map[int]int{0: 0, 24: 3, 26: 3, 63: 7}},
		{"one DSCP moved", "requester: {nic: {prio-dscp-map: {5: [26]}}}\n", map[int]int{26: 5, 24: 3, 0: 0, 8: 1, 63: 7}},
		{"DSCP 0 to priority 3", "requester: {nic: {prio-dscp-map: {3: \"0,1\"}}}\n", map[int]int{0: 3, 1: 3, 2: 0, 8: 1, 26: 3, 40: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test, err := config.Parse("t.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			n := test.Requester.NIC
			sw := n.DSCPToPriority()
			hw := nic.DSCP2Prio(n.PrioDSCPMap)
			an := model.Params{PrioDSCPMap: n.PrioDSCPMap}
			for d := range 64 {
				if int(sw[d]) != hw[d] || hw[d] != an.PriorityOfDSCP(uint8(d)) {
					t.Errorf("DSCP %d: DSCPToPriority = %d, nic.DSCP2Prio = %d, PriorityOfDSCP = %d, want all equal",
						d, sw[d], hw[d], an.PriorityOfDSCP(uint8(d)))
				}
			}
			for d, p := range tt.want {
				if int(sw[d]) != p {
					t.Errorf("DSCPToPriority()[%d] = %d, want %d", d, sw[d], p)
				}
			}
		})
	}
}
