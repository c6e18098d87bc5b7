package config

import (
	"strings"
	"testing"
)

// TestWarnings: a pause of a priority no flow uses is valid but warned
// about at the event (issue #35: pause-reaction without dscp-list paused
// priority 3 while its traffic ran on priority 0, and every check passed).
func TestWarnings(t *testing.T) {
	const hosts = "requester: {nic: {pfc: {priorities: [3]}}}\nresponder: {nic: {pfc: {priorities: [3]}}}\n"
	for _, tc := range []struct {
		name, traffic string
		want          []string
	}{
		{"no dscp-list", "traffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3}\n",
			[]string{"t.yaml:5:7: warning: pfc-events[0] pauses requester on priority 3, but no flow uses it (the QPs' DSCP is 0 without traffic.dscp-list: priority 0): " +
				"the pause stops nothing and the pfc check has nothing to check; give traffic.dscp-list a DSCP of priority 3, such as 26"}},
		{"dscp-list of other priorities", "traffic:\n  num-qps: 3\n  dscp-list: [0, 8, 9]\n  pfc-events:\n    - {type: rx-stall, host: responder}\n    - {type: pause, to: responder, priority: 3}\n",
			[]string{"t.yaml:8:7: warning: pfc-events[1] pauses responder on priority 3, but no flow uses it (traffic.dscp-list gives priority 0, 1): " +
				"the pause stops nothing and the pfc check has nothing to check; give traffic.dscp-list a DSCP of priority 3, such as 26"}},
		{"a flow on the paused priority", "traffic:\n  num-qps: 2\n  dscp-list: [0, 26]\n  pfc-events:\n    - {type: pause, to: requester, priority: 3}\n", nil},
		{"no pause", "traffic:\n  pfc-events:\n    - {type: rx-stall, host: responder}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt, err := Parse("t.yaml", []byte(hosts+tc.traffic))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range Warnings(tt) {
				got = append(got, w.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Warnings = %q, want %q", got, tc.want)
			}
		})
	}
}
