package config

import (
	"strings"
	"testing"
)

// Issue #38, point 12: what validation let through and the run then
// failed on, refused at its line with the reason.
func TestRefusedBeforeRun(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name string
		in   string
		o    LoadOptions
		want string // "" : valid
	}{
		// The switch's event table holds 65536 entries (before: 1048576
		// were allowed, and the run failed installing them).
		{"65537 events", "traffic:\n  num-msgs-per-qp: 65537\n  message-size: 1024\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn}\n", LoadOptions{},
			`t.yaml:5:5: data-pkt-events expand to more than 65536 (event, message, packet) entries, the switch's event table; give msg, or fewer psn: all events`},
		{"65536 events", "traffic:\n  num-msgs-per-qp: 65536\n  message-size: 1024\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn}\n", LoadOptions{}, ""},
		// Responders coalesce ACKs: most PSNs never appear in a response.
		{"response psn all", "traffic:\n  message-size: 4096\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: drop, direction: response}\n", LoadOptions{},
			`t.yaml:4:21: psn: all with direction: response: the responder acknowledges several packets with one ACK, so most of a message's 4 PSNs never appear in a response and the events could not all apply; give the PSNs of acknowledged packets, e.g. psn: 3 (the last of each message)`},
		{"response psn all, 1-packet messages", "traffic:\n  message-size: 1024\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: drop, direction: response}\n", LoadOptions{}, ""},
		{"response psn 3", "traffic:\n  message-size: 4096\n  data-pkt-events:\n    - {qpn: 0, psn: 3, type: drop, direction: response}\n", LoadOptions{}, ""},
		// File names have at most 255 bytes.
		{"name 256 bytes", "name: " + long(256) + "\n", LoadOptions{},
			`t.yaml:1:7: name is 256 bytes, want at most 255 (it names the results directory of the test)`},
		{"name 255 bytes", "name: " + long(255) + "\n", LoadOptions{}, ""},
		{"dump-filename 226 bytes", "dumpers:\n  - {dump-filename: " + long(226) + "}\n", LoadOptions{},
			`t.yaml:2:21: dump-filename is 226 bytes, want at most 225 (the dumper writes it under a temporary name 30 bytes longer)`},
		{"dump-filename 225 bytes", "dumpers:\n  - {dump-filename: " + long(225) + "}\n", LoadOptions{}, ""},
		{"dumper name 221 bytes", "dumpers:\n  - {name: " + long(221) + "}\n", LoadOptions{},
			`t.yaml:2:12: the default dump-filename <name>.pcap is 226 bytes, want at most 225 (the dumper writes it under a temporary name 30 bytes longer; give a shorter name or dump-filename)`},
		{"mirror dump-filename 226 bytes", "requester-mirror:\n  pkt-dump-conf: {dump-filename: " + long(226) + "}\n", LoadOptions{},
			`t.yaml:2:34: dump-filename is 226 bytes, want at most 225 (the dumper writes it under a temporary name 30 bytes longer)`},
		{"aggregate-pcap-filename 241 bytes", "aggregate-pcap-filename: " + long(241) + "\n", LoadOptions{},
			`t.yaml:1:26: aggregate-pcap-filename is 241 bytes, want at most 240 (the merge writes it under a temporary name 15 bytes longer)`},
		// backend dpdk in a binary built without it.
		{"dpdk on netns without dpdk", "testbed: netns\ndumpers:\n  - {backend: dpdk}\n", LoadOptions{NoDPDK: true},
			`t.yaml:3:15: backend dpdk: this lumina was built without it (build with go build -tags dpdk, on Linux with cgo and libdpdk-dev); use backend afpacket`},
		{"dpdk by --testbed netns without dpdk", "testbed: remote\nrequester: {control-ip: a}\nresponder: {control-ip: b}\nswitch: {control-ip: c}\n" +
			"dumpers:\n  - {backend: dpdk, control-ip: d}\n", LoadOptions{NoDPDK: true, Testbed: new(TestbedNetns)},
			`t.yaml:6:15: backend dpdk: this lumina was built without it (build with go build -tags dpdk, on Linux with cgo and libdpdk-dev); use backend afpacket`},
		{"dpdk on remote without dpdk", "testbed: remote\nrequester: {control-ip: a}\nresponder: {control-ip: b}\nswitch: {control-ip: c}\n" +
			"dumpers:\n  - {backend: dpdk, control-ip: d}\n", LoadOptions{NoDPDK: true}, ""}, // the remote agents' binaries decide
		{"dpdk on netns, not checked", "testbed: netns\ndumpers:\n  - {backend: dpdk}\n", LoadOptions{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseError(tt.in, tt.o); got != tt.want {
				t.Errorf("ParseWith(%.60q) error =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
		})
	}
}

// parseError is ParseWith's error for the file t.yaml holding in, "" for
// none.
func parseError(in string, o LoadOptions) string {
	if _, err := ParseWith("t.yaml", []byte(in), o); err != nil {
		return err.Error()
	}
	return ""
}
