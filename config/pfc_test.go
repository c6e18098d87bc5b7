package config

import (
	"reflect"
	"testing"
)

// The PFC keys of issue #19, exactly as tests written elsewhere spell them.
const pfcYAML = `switch:
  pfc-watchdog: {detection-ms: 100, restoration-ms: 200}
requester:
  nic:
    pfc: {priorities: [3]}
responder:
  nic:
    pfc: {priorities: [3, 4], page-size: 2097152}
traffic:
  message-size: 10240
  pfc-events:
    - {type: pause, to: requester, priority: 3, quanta: 65535, start-us: 200, duration-us: 1000, interval-us: 20}
    - {type: rx-stall, host: responder, start-us: 100, duration-us: 0}
    - {type: pause, to: responder, priority: 3, start: {qpn: 0, psn: 4}}
`

func TestParsePFC(t *testing.T) {
	tt, err := Parse("t.yaml", []byte(pfcYAML))
	if err != nil {
		t.Fatal(err)
	}
	check := func(tt *Test) {
		t.Helper()
		if w := tt.Switch.PFCWatchdog; w == nil || *w != (PFCWatchdog{100, 200}) {
			t.Errorf("pfc-watchdog %+v", w)
		}
		if p := tt.Requester.NIC.PFC; p == nil || !reflect.DeepEqual(p.Priorities, []int{3}) || p.PageSize != 4096 || p.PrioritiesMask() != 0x08 {
			t.Errorf("requester pfc %+v", p)
		}
		if p := tt.Responder.NIC.PFC; p == nil || p.PrioritiesMask() != 0x18 || p.PageSize != 2<<20 {
			t.Errorf("responder pfc %+v", p)
		}
		ev := tt.Traffic.PFCEvents
		if len(ev) != 3 {
			t.Fatalf("%d pfc-events, want 3", len(ev))
		}
		ev[0].Pos, ev[1].Pos, ev[2].Pos = Pos{}, Pos{}, Pos{}
		want := []PFCEvent{
			{Type: PFCPause, To: "requester", Priority: 3, Quanta: 65535, StartUs: 200, DurationUs: 1000, IntervalUs: 20},
			{Type: PFCRxStall, Host: "responder", Quanta: 65535, StartUs: 100},
			{Type: PFCPause, To: "responder", Priority: 3, Quanta: 65535, Start: &PacketRef{QPN: 0, PSN: 4, Iter: 1}},
		}
		if !reflect.DeepEqual(ev, want) {
			t.Errorf("pfc-events\n%+v\nwant\n%+v", ev, want)
		}
	}
	check(tt)
	out, err := tt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("m.yaml", out)
	if err != nil {
		t.Fatalf("Parse(Marshal()) = %v\n%s", err, out)
	}
	check(again)
	if tt.Requester.NIC.DSCPToPriority()[26] != 3 {
		t.Errorf("default map: DSCP 26 has priority %d, want 3", tt.Requester.NIC.DSCPToPriority()[26])
	}
	if _, err := Parse("t.yaml", []byte("requester: {nic: {pfc: {priorities: [3]}}}\n")); err != nil {
		t.Errorf("pfc without events: %v", err)
	}
	remote := "testbed: remote\nrequester: {control-ip: 10.1.0.1, nic: {pfc: {priorities: [3]}}}\nresponder: {control-ip: 10.1.0.2}\n" +
		"switch: {control-ip: 10.1.0.3}\ndumpers: [{name: d, control-ip: 10.1.0.4}]\ntraffic:\n  pfc-events:\n" +
		"    - {type: pause, to: requester, priority: 3, start-us: 20, duration-us: 200, interval-us: 20}\n"
	if rt, err := Parse("t.yaml", []byte(remote)); err != nil || len(rt.PFCEvents) != 1 || rt.PFCEvents[0].Type != PFCPause {
		t.Errorf("remote pause at start-us: %v", err)
	}
}

func TestParsePFCErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no priorities", "requester:\n  nic:\n    pfc: {page-size: 4096}\n",
			`t.yaml:3:10: missing key "priorities" in requester.nic.pfc`},
		{"priority range", "requester:\n  nic:\n    pfc: {priorities: [8]}\n",
			"t.yaml:3:24: priorities[0]: want 0..7, got 8 (a priority)"},
		{"pause without to", "traffic:\n  pfc-events:\n    - {type: pause, priority: 3}\n",
			"t.yaml:3:7: type pause needs to: the host the switch pauses (requester or responder)"},
		{"pause without priority", "traffic:\n  pfc-events:\n    - {type: pause, to: requester}\n",
			"t.yaml:3:7: type pause needs priority: the paused priority 0..7"},
		{"duration without interval", "traffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, duration-us: 100}\nrequester: {nic: {pfc: {priorities: [3]}}}\n",
			"t.yaml:3:62: duration-us needs interval-us: the time between pause frames"},
		{"stall with priority", "traffic:\n  pfc-events:\n    - {type: rx-stall, host: responder, priority: 3}\n",
			"t.yaml:3:51: priority applies to type pause only (this event is rx-stall)"},
		{"stall with trigger", "traffic:\n  pfc-events:\n    - {type: rx-stall, host: responder, start: {qpn: 0, psn: 0}}\n",
			"t.yaml:3:48: start applies to type pause only: an rx-stall starts at start-us"},
		{"both starts", "traffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, start-us: 5, start: {qpn: 0, psn: 0}}\nrequester: {nic: {pfc: {priorities: [3]}}}\n",
			"t.yaml:3:69: give start-us or start, not both"},
		{"trigger psn", "traffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, start: {qpn: 0, psn: 4}}\nrequester: {nic: {pfc: {priorities: [3]}}}\n",
			"t.yaml:3:70: psn: want 0..3, got 4 (a message is 4 packets)"},
		{"bad type", "traffic:\n  pfc-events:\n    - {type: paws, to: requester}\n",
			`t.yaml:3:14: type: want pause or rx-stall, got "paws"`},
		{"remote", "testbed: remote\nrequester: {control-ip: 10.1.0.1}\nresponder: {control-ip: 10.1.0.2}\nswitch: {control-ip: 10.1.0.3}\ndumpers: [{name: d, control-ip: 10.1.0.4}]\ntraffic:\n  pfc-events:\n    - {type: rx-stall, host: responder}\n",
			"t.yaml:8:7: testbed remote: type rx-stall needs the software NIC (sim, netns)"},
		// Issue #33: a pause at start-us runs on remote (the Tofino's
		// packet generator); one on a packet has no trigger there.
		{"remote pause on a packet", "testbed: remote\nrequester: {control-ip: 10.1.0.1, nic: {pfc: {priorities: [3]}}}\nresponder: {control-ip: 10.1.0.2}\nswitch: {control-ip: 10.1.0.3}\ndumpers: [{name: d, control-ip: 10.1.0.4}]\ntraffic:\n  pfc-events:\n    - {type: pause, to: requester, priority: 3, start: {qpn: 0, psn: 0}}\n",
			"t.yaml:8:56: testbed remote: " + RemoteStartPause},
		{"remote slowdown", "testbed: remote\nnetns-slowdown: 20\nrequester: {control-ip: 10.1.0.1}\nresponder: {control-ip: 10.1.0.2}\nswitch: {control-ip: 10.1.0.3}\ndumpers: [{name: d, control-ip: 10.1.0.4}]\n",
			"t.yaml:2:17: testbed remote: netns-slowdown 20: hardware runs in real time (the key is for the netns testbed; remove it or set 1)"},
		{"slowdown range", "netns-slowdown: 0\n", "t.yaml:1:17: netns-slowdown: want 1..10000, got 0"},
		// Issue #35: a NIC without nic.pfc discards pauses as unknown
		// frames (and the counters check then fails it): refused at to.
		{"pause to a NIC without pfc", "requester: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  pfc-events:\n    - {type: pause, to: responder, priority: 4}\n",
			"t.yaml:4:25: to: responder has no nic.pfc, so its NIC would discard the pauses instead of pausing; add nic.pfc with priority 4 to responder (nic: {pfc: {priorities: [4]}})"},
		{"pause to a NIC without pfc, block style", "traffic:\n  dscp-list: [26]\n  pfc-events:\n    - type: pause\n      priority: 3\n      to: requester\n",
			"t.yaml:6:11: to: requester has no nic.pfc, so its NIC would discard the pauses instead of pausing; add nic.pfc with priority 3 to requester (nic: {pfc: {priorities: [3]}})"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse(%q) = %v\nwant %s", tc.in, err, tc.want)
			}
		})
	}
}
