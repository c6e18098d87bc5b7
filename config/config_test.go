package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// errorTests maps an input to the exact error Parse returns for it. The
// file name is always "t.yaml".
var errorTests = []struct {
	name string
	in   string
	want string
}{
	// Decoding.
	{"unknown key with suggestion", "traffic:\n  num-msg-per-qp: 3\n",
		`t.yaml:2:3: unknown key "num-msg-per-qp" in traffic; did you mean "num-msgs-per-qp"?`},
	{"unknown key at top level", "result-pth: x\nbogus: 1\n",
		"t.yaml:1:1: unknown key \"result-pth\" at top level; did you mean \"result-path\"?\n" +
			`t.yaml:2:1: unknown key "bogus" at top level`},
	{"unknown key underscore", "traffic:\n  num_qps: 2\n",
		`t.yaml:2:3: unknown key "num_qps" in traffic; did you mean "num-qps"?`},
	{"unknown key in event", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 0, type: drop, itr: 1}\n",
		`t.yaml:3:36: unknown key "itr" in traffic.data-pkt-events[0]; did you mean "iter"?`},
	{"mtu not an integer", "traffic:\n  mtu: abc\n", `t.yaml:2:8: mtu: want an integer, got "abc"`},
	{"integer is a float", "traffic:\n  num-qps: 1.5\n", `t.yaml:2:12: num-qps: want an integer, got "1.5"`},
	{"integer out of range", "traffic:\n  mtu: 99999999999999999999\n", `t.yaml:2:8: mtu: integer 99999999999999999999 out of range`},
	{"bool", "traffic:\n  multi-gid: maybe\n", `t.yaml:2:14: multi-gid: want a boolean (true or false), got "maybe"`},
	{"section not a mapping", "traffic: [1, 2]\n", `t.yaml:1:10: traffic: want a mapping, got a list`},
	{"string is a mapping", "switch:\n  username: {a: 1}\n", `t.yaml:2:13: username: want a string, got a mapping`},
	{"duplicate key", "traffic:\n  mtu: 1024\n  mtu: 2048\n", `t.yaml:3:3: duplicate key "mtu" in traffic (first at 2:3)`},
	{"syntax error", "traffic:\n  num-qps: 2\n  mtu 1024\n  rdma-verb: write\n",
		`t.yaml:3:1: YAML syntax error: could not find expected ':'`},
	{"syntax error on line 1", "a: b: c\n", `t.yaml:1:1: YAML syntax error: mapping values are not allowed in this context`},
	{"unknown anchor", "name: x\ntraffic:\n  mtu: *m\n", `t.yaml:3:8: YAML syntax error: unknown anchor 'm' referenced`},
	{"control character", "name: a\x01\n", `t.yaml:1:8: YAML syntax error: control characters are not allowed`},
	{"empty file", "", `t.yaml:1:1: empty test file: want a mapping with the test's keys`},
	{"comments only", "# nothing\n", `t.yaml:1:1: empty test file: want a mapping with the test's keys`},
	{"null document", "---\n~\n", `t.yaml:2:1: empty test file: want a mapping with the test's keys`},
	{"top level is a list", "- a\n- b\n", `t.yaml:1:1: top level: want a mapping, got a list`},
	{"top level is a scalar", "hello\n", `t.yaml:1:1: top level: want a mapping, got "hello"`},
	{"two documents", "name: a\n---\nname: b\n", `t.yaml:3:1: more than one YAML document: a test file holds exactly one`},
	{"non-string key", "[a]: 1\n", `t.yaml:1:1: keys must be strings, got a list at top level`},
	{"bad merge", "traffic:\n  <<: 3\n", `t.yaml:2:7: merge key (<<): want a mapping or a list of mappings, got "3"`},

	// Top level.
	{"num-repeats", "num-repeats: 0\n", `t.yaml:1:14: num-repeats: want 1..10000, got 0`},
	{"rewrite port 0", "rewrite-udp-dst-port: 0\n", `t.yaml:1:23: rewrite-udp-dst-port: want 1..65535, got 0`},
	{"rewrite port 4791", "rewrite-udp-dst-port: 4791\n",
		`t.yaml:1:23: rewrite-udp-dst-port: must not be 4791, the RoCEv2 port: dumpers could not tell mirrored copies from live traffic`},
	{"rewrite port too big", "rewrite-udp-dst-port: 65536\n", `t.yaml:1:23: rewrite-udp-dst-port: want 1..65535, got 65536`},
	{"testbed", "testbed: simulation\n", `t.yaml:1:10: testbed: want sim, netns or remote, got "simulation"`},
	{"iter-scope", "iter-scope: conection\n",
		`t.yaml:1:13: iter-scope: want message or connection, got "conection"; did you mean "connection"?`},
	{"empty name", "name: \"\"\n", `t.yaml:1:7: name: must not be empty`},
	{"seed", "seed: -1\n", `t.yaml:1:7: seed: want an unsigned 64-bit integer, got "-1"`},
	{"aggregate file name with dir", "aggregate-pcap-filename: a/b.pcap\n",
		`t.yaml:1:26: aggregate-pcap-filename: want a file name without a directory, got "a/b.pcap"`},

	// Traffic.
	{"mtu", "traffic:\n  mtu: 1000\n", `t.yaml:2:8: mtu: want 256, 512, 1024, 2048 or 4096, got 1000`},
	{"min-retransmit-timeout", "traffic:\n  min-retransmit-timeout: 32\n", `t.yaml:2:27: min-retransmit-timeout: want 0..31, got 32`},
	{"max-retransmit-retry", "traffic:\n  max-retransmit-retry: 8\n", `t.yaml:2:25: max-retransmit-retry: want 0..7, got 8`},
	{"tx-depth", "traffic:\n  tx-depth: 0\n", `t.yaml:2:13: tx-depth: want an integer >= 1, got 0`},
	{"num-qps 0", "traffic:\n  num-qps: 0\n", `t.yaml:2:12: num-qps: want 1..16384, got 0`},
	{"num-qps too many", "traffic:\n  num-qps: 16385\n", `t.yaml:2:12: num-qps: want 1..16384, got 16385`},
	{"message-size", "traffic:\n  message-size: -1\n", `t.yaml:2:17: message-size: want 0..2147483648, got -1`},
	{"num-msgs-per-qp", "traffic:\n  num-msgs-per-qp: 0\n", `t.yaml:2:20: num-msgs-per-qp: want 1..2147483647, got 0`},
	{"rdma-verb", "traffic:\n  rdma-verb: wrte\n",
		`t.yaml:2:14: rdma-verb: want write, read, send or send_read, got "wrte"; did you mean "write"?`},
	{"num-connections and num-qps", "traffic:\n  num-qps: 2\n  num-connections: 2\n",
		`t.yaml:3:3: num-connections and num-qps are the same setting (the paper's and the public tool's spelling): give only one`},
	{"a,b without send_read", "traffic:\n  num-qps: \"2,3\"\n",
		`t.yaml:2:12: num-qps: "2,3" (a SEND QPs, then b READ QPs) is only allowed with rdma-verb send_read, not write`},
	{"send_read with an integer", "traffic:\n  rdma-verb: send_read\n  num-qps: 4\n",
		`t.yaml:3:12: num-qps: rdma-verb send_read wants "a,b" (a SEND QPs, then b READ QPs), got 4`},
	{"send_read with a zero", "traffic:\n  rdma-verb: send_read\n  num-qps: 0,4\n",
		`t.yaml:3:12: num-qps: want "a,b" with a >= 1, b >= 1 and a+b <= 16384, got "0,4"`},
	{"dscp-list length", "traffic:\n  num-qps: 2\n  dscp-list: [1, 2, 3]\n",
		`t.yaml:3:14: dscp-list: want 2 entries (one per QP; num-qps is 2), got 3`},
	{"dscp value", "traffic:\n  dscp-list: [64]\n", `t.yaml:2:15: dscp-list[0]: want 0..63, got 64`},

	// Events.
	{"psn out of range", "traffic:\n  message-size: 10240\n  data-pkt-events:\n    - {qpn: 0, psn: 10, type: drop}\n",
		`t.yaml:4:21: psn: want 0..9 or "all", got 10 (a message of 10240 bytes at mtu 1024 is 10 packets; psn is the 0-based packet index within a message)`},
	{"psn out of range empty message", "traffic:\n  message-size: 0\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop}\n",
		`t.yaml:4:21: psn: want 0..0 or "all", got 1 (a message of 0 bytes at mtu 1024 is 1 packet; psn is the 0-based packet index within a message)`},
	{"psn not a number", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: first, type: drop}\n",
		`t.yaml:3:21: psn: want an integer or "all", got "first"`},
	{"qpn out of range", "traffic:\n  num-qps: 2\n  data-pkt-events:\n    - {qpn: 2, psn: 0, type: drop}\n",
		`t.yaml:4:13: qpn: want 0..1, got 2 (num-qps is 2); qpn is 0-based; the paper's Listing 2 counts from 1`},
	{"qpn negative", "traffic:\n  data-pkt-events:\n    - {qpn: -1, psn: 0, type: drop}\n",
		`t.yaml:3:13: qpn: want an integer >= 0, got -1 (qpn is the 0-based QP index)`},
	{"iter 0", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 0, type: drop, iter: 0}\n",
		`t.yaml:3:42: iter: want an integer >= 1, got 0 (iter is the 1-based transmission round: 1 is the first transmission)`},
	{"msg out of range", "traffic:\n  num-msgs-per-qp: 10\n  data-pkt-events:\n    - {qpn: 0, psn: 0, type: drop, msg: 10}\n",
		`t.yaml:4:41: msg: want 0..9, got 10 (num-msgs-per-qp is 10; msg is 0-based)`},
	{"event type", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 0, type: dorp}\n",
		`t.yaml:3:30: type: want drop, ecn, corrupt, bit-error, delay, reorder or duplicate, got "dorp"; did you mean "drop"?`},
	{"missing key", "traffic:\n  data-pkt-events:\n    - qpn: 0\n      type: drop\n",
		`t.yaml:3:7: missing key "psn" in traffic.data-pkt-events[0]`},
	{"null required key", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: ~, type: drop}\n",
		`t.yaml:3:21: psn: required, got null`},
	{"event not a mapping", "traffic:\n  data-pkt-events:\n    - drop\n",
		`t.yaml:3:7: data-pkt-events[0]: want a mapping, got "drop"`},
	{"events not a list", "traffic:\n  data-pkt-events: {qpn: 0}\n",
		`t.yaml:2:20: data-pkt-events: want a list, got a mapping`},
	{"control packet", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 0, type: drop, packet: ack}\n",
		`t.yaml:3:44: packet: want data, got "ack"; to address the responder's ACK/NAK packets, give direction: response`},
	{"duplicate event", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop}\n    - {qpn: 0, psn: 1, type: drop, iter: 1}\n",
		`t.yaml:4:7: duplicate event: same as the event at 3:7`},
	{"conflicting events", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop}\n    - {qpn: 0, psn: 1, type: ecn}\n",
		`t.yaml:4:7: conflicting events: this ecn and the drop event at 3:7 both match qpn 0, psn 1, iter 1 in every message`},
	{"conflict via psn all", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 2, type: drop, msg: 0}\n    - {qpn: 0, psn: all, type: corrupt}\n",
		`t.yaml:4:7: conflicting events: this corrupt and the drop event at 3:7 both match qpn 0, psn 2, iter 1 in message 0`},
	{"redundant event", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn}\n    - {qpn: 0, psn: 3, type: ecn, msg: 0}\n",
		`t.yaml:4:7: redundant event: the ecn event at 3:7 already matches qpn 0, psn 3, iter 1 in message 0`},
	{"tx-depth with drop", "traffic:\n  tx-depth: 2\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop}\n    - {qpn: 0, psn: 2, type: ecn}\n",
		`t.yaml:4:30: type drop with tx-depth 2 and iter-scope message: per-message ITER is ambiguous with several messages in flight; use iter-scope: connection, or only ecn events`},
	{"too many expanded events", "traffic:\n  num-msgs-per-qp: 1000000\n  message-size: 4096\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn}\n",
		`t.yaml:5:5: data-pkt-events expand to more than 65536 (event, message, packet) entries, the switch's event table; give msg, or fewer psn: all events`},

	// Hosts.
	{"xl710 on a traffic host", "requester:\n  nic:\n    type: XL710\n",
		`t.yaml:3:11: type: xl710 has no RDMA support: it is allowed on dumpers (mirrors) only; want cx4, cx5, cx6 or e810`},
	{"nic type", "responder:\n  nic:\n    type: cx7\n", `t.yaml:3:11: type: want cx4, cx5, cx6 or e810, got "cx7"; did you mean "cx4"?`},
	{"personality", "requester:\n  nic:\n    personality: mellanox\n",
		`t.yaml:3:18: personality: want spec, cx4, cx5 or cx6, or the path of a .yaml/.yml file, got "mellanox"`},
	{"ip-list entry", "requester:\n  nic:\n    ip-list: [10.0.0.2/24, 10.0.0.256, fe80::1]\n",
		"t.yaml:3:28: ip-list[1]: want an IPv4 address or CIDR prefix such as 10.0.0.2/24, got \"10.0.0.256\"\n" +
			`t.yaml:3:40: ip-list[2]: want an IPv4 address or CIDR prefix such as 10.0.0.2/24, got "fe80::1"`},
	{"ip-list not a list", "requester:\n  nic:\n    ip-list: 10.0.0.2/24\n",
		`t.yaml:3:14: ip-list: want a list, got "10.0.0.2/24"`},
	{"prio-dscp-map", "requester:\n  nic:\n    prio-dscp-map: {8: \"1,2\", 3: \"4,99\"}\n",
		"t.yaml:3:21: prio-dscp-map: want a priority 0..7 as key, got \"8\"\n" +
			`t.yaml:3:34: prio-dscp-map: want DSCP values 0..63, got "99"`},
	{"mirror key on a host", "requester:\n  pkt-dump-conf: {}\n",
		`t.yaml:2:3: unknown key "pkt-dump-conf" in requester`},
	{"remote without control-ips", "testbed: remote\nrequester:\n  control-ip: a\n",
		"t.yaml:1:10: testbed remote: responder has no control-ip\n" +
			"t.yaml:1:10: testbed remote: switch has no control-ip\n" +
			"t.yaml:1:10: testbed remote: the dumpers need control-ips: add dumpers (or requester-mirror and responder-mirror) with control-ip"},
	{"derived remote without control-ips", "switch:\n  control-ip: sw\nrequester:\n  control-ip: a\nresponder:\n  control-ip: b\nrequester-mirror:\n  username: x\n",
		`t.yaml:8:3: testbed remote: dumper "requester-mirror" has no control-ip`},

	// Dumpers.
	{"dumpers and mirrors", "requester-mirror: {}\nresponder-mirror: {}\ndumpers:\n  - name: a\n",
		`t.yaml:3:1: dumpers and requester-mirror/responder-mirror are mutually exclusive: use dumpers, or the public tool's requester-mirror and responder-mirror`},
	{"no dumpers", "dumpers: []\n", `t.yaml:1:10: dumpers: want 1..16 dumpers, got 0`},
	{"too many dumpers", "dumpers: [{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}]\n",
		`t.yaml:1:10: dumpers: want 1..16 dumpers, got 17`},
	{"dumper weight 0", "dumpers:\n  - weight: 0\n", `t.yaml:2:13: weight: want 1..255, got 0`},
	{"dumper weight 256", "dumpers:\n  - weight: 256\n", `t.yaml:2:13: weight: want 1..255, got 256`},
	{"duplicate dumper names", "dumpers:\n  - name: a\n  - name: a\n",
		`t.yaml:3:11: duplicate dumper name "a" (first at 2:11)`},
	{"default name collision", "dumpers:\n  - name: dumper-1\n  - {}\n",
		`t.yaml:3:5: duplicate dumper name "dumper-1" (first at 2:11)`},
	{"dumper name", "dumpers:\n  - name: a/b\n", `t.yaml:2:11: name: want letters, digits, '.', '_' or '-', got "a/b"`},
	{"dump-filename clash", "dumpers:\n  - {name: a, dump-filename: x.pcap}\n  - {name: b, dump-filename: x.pcap}\n",
		`t.yaml:3:30: dump-filename "x.pcap" is already used by another dumper (at 2:30)`},
	{"snap-len", "requester-mirror:\n  pkt-dump-conf:\n    snap-len: 32\n", `t.yaml:3:15: snap-len: want 64..9216, got 32`},
	{"backend on sim", "dumpers:\n  - backend: dpdk\n",
		`t.yaml:2:14: backend dpdk needs a real network: testbed sim only supports backend sim`},
	{"sim backend on netns", "testbed: netns\ndumpers:\n  - backend: sim\n",
		`t.yaml:3:14: backend sim only works on testbed sim, not netns; use afpacket or dpdk`},
	{"eal-args without dpdk", "testbed: netns\ndumpers:\n  - eal-args: [-l, 0-3]\n",
		`t.yaml:3:15: eal-args are only used by backend dpdk, not afpacket`},
	{"dumper nic key", "dumpers:\n  - nic: {ib-device: mlx5_0}\n",
		`t.yaml:2:11: unknown key "ib-device" in dumpers[0].nic`},

	// Several errors at once, in file order.
	{"several", "traffic:\n  mtu: 1000\n  tx-depth: 0\nnum-repeats: 0\n",
		"t.yaml:2:8: mtu: want 256, 512, 1024, 2048 or 4096, got 1000\n" +
			"t.yaml:3:13: tx-depth: want an integer >= 1, got 0\n" +
			"t.yaml:4:14: num-repeats: want 1..10000, got 0"},
	// A bad mtu does not also make every psn "out of range".
	{"no cascade", "traffic:\n  mtu: 1000\n  data-pkt-events:\n    - {qpn: 0, psn: 7, type: drop}\n",
		`t.yaml:2:8: mtu: want 256, 512, 1024, 2048 or 4096, got 1000`},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range errorTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, nil; want error %q", tt.in, got, tt.want)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned a Test along with an error", tt.in)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n%s\nwant\n%s", tt.in, err, tt.want)
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Errorf("errors.As(%T, *ErrorList) = false, want true", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false, want true")
			}
		})
	}
}

func TestErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("traffic:\n  data-pkt-events:\n")
	for i := 0; i < 80; i++ {
		b.WriteString("    - {qpn: x, psn: 0, type: drop}\n")
	}
	_, err := Parse("t.yaml", []byte(b.String()))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse(80 bad events) error = %v, want an ErrorList", err)
	}
	if len(list) != maxErrors+1 {
		t.Errorf("len(ErrorList) = %d, want %d", len(list), maxErrors+1)
	}
	if got, want := list[len(list)-1].Error(), "t.yaml:53:13: too many errors (30 more not shown)"; got != want {
		t.Errorf("last error = %q, want %q", got, want)
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "a.yaml", Line: 3, Col: 7, Msg: "bad"}
	if got, want := e.Error(), "a.yaml:3:7: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	l := ErrorList{e, {File: "a.yaml", Line: 4, Col: 1, Msg: "worse"}}
	if got, want := l.Error(), "a.yaml:3:7: bad\na.yaml:4:1: worse"; got != want {
		t.Errorf("ErrorList.Error() = %q, want %q", got, want)
	}
	if !errors.Is(l, ErrInvalid) || !errors.Is(e, ErrInvalid) {
		t.Errorf("errors.Is(..., ErrInvalid) = false, want true")
	}
}

func TestInvalidTestdata(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"invalid-typo.yaml", "testdata/invalid-typo.yaml:2:1: unknown key \"result-pth\" at top level; did you mean \"result-path\"?\n" +
			`testdata/invalid-typo.yaml:5:3: unknown key "num-msg-per-qp" in traffic; did you mean "num-msgs-per-qp"?`},
		{"invalid-mtu.yaml", `testdata/invalid-mtu.yaml:2:8: mtu: want 256, 512, 1024, 2048 or 4096, got 1000`},
		{"invalid-qpn.yaml", "testdata/invalid-qpn.yaml:13:12: qpn: want 0..1, got 2 (num-qps is 2); qpn is 0-based; the paper's Listing 2 counts from 1\n" +
			"testdata/invalid-qpn.yaml:17:12: qpn: want 0..1, got 2 (num-qps is 2); qpn is 0-based; the paper's Listing 2 counts from 1"},
		{"invalid-syntax.yaml", `testdata/invalid-syntax.yaml:3:1: YAML syntax error: could not find expected ':'`},
		{"invalid-hosts.yaml", strings.Join([]string{
			`testdata/invalid-hosts.yaml:5:24: ip-list[0]: 10.0.0.1 is also an address of host h1 (at 3:24): every host needs its own addresses`,
			`testdata/invalid-hosts.yaml:6:1: requester: the hosts form (hosts and flows) replaces requester, responder and traffic: give hosts and flows, or requester, responder and traffic`,
			`testdata/invalid-hosts.yaml:8:49: kmax-kb: want more than kmin-kb (400), got 100`,
			`testdata/invalid-hosts.yaml:11:21: from: no host named "h3" (hosts: h1, h2, r); did you mean "h1"?`,
			`testdata/invalid-hosts.yaml:12:12: duplicate flow name "a" (first at 10:12)`,
			`testdata/invalid-hosts.yaml:12:29: to: flow a goes from h2 to itself; want another host`,
			`testdata/invalid-hosts.yaml:17:15: qpn: want 0..0, got 1 (num-qps is 1); qpn is 0-based; the paper's Listing 2 counts from 1`,
			`testdata/invalid-hosts.yaml:18:5: pfc-events in a flow: in the hosts form pfc-events is a top-level key (its to and host name a host, its start names the flow)`,
			`testdata/invalid-hosts.yaml:20:23: to: no host named "hx" (hosts: h1, h2, r); did you mean "h1"?`,
			`testdata/invalid-hosts.yaml:21:62: qpn: want 0..1, got 2 (num-qps of flow a is 2)`,
		}, "\n")},
		{"invalid-semantics.yaml", strings.Join([]string{
			`testdata/invalid-semantics.yaml:2:10: testbed: want sim, netns or remote, got "simulation"`,
			`testdata/invalid-semantics.yaml:4:14: num-repeats: want 1..10000, got 0`,
			`testdata/invalid-semantics.yaml:5:23: rewrite-udp-dst-port: must not be 4791, the RoCEv2 port: dumpers could not tell mirrored copies from live traffic`,
			`testdata/invalid-semantics.yaml:8:11: type: xl710 has no RDMA support: it is allowed on dumpers (mirrors) only; want cx4, cx5, cx6 or e810`,
			`testdata/invalid-semantics.yaml:11:9: ip-list[1]: want an IPv4 address or CIDR prefix such as 10.0.0.2/24, got "10.0.0.300"`,
			`testdata/invalid-semantics.yaml:14:15: snap-len: want 64..9216, got 32`,
			`testdata/invalid-semantics.yaml:15:1: dumpers and requester-mirror are mutually exclusive: use dumpers, or the public tool's requester-mirror and responder-mirror`,
			`testdata/invalid-semantics.yaml:18:14: rdma-verb: want write, read, send or send_read, got "wrte"; did you mean "write"?`,
			`testdata/invalid-semantics.yaml:20:27: min-retransmit-timeout: want 0..31, got 32`,
			`testdata/invalid-semantics.yaml:21:25: max-retransmit-retry: want 0..7, got 8`,
			`testdata/invalid-semantics.yaml:22:18: dscp-list[1]: want 0..63, got 64`,
			`testdata/invalid-semantics.yaml:24:30: type drop with tx-depth 4 and iter-scope message: per-message ITER is ambiguous with several messages in flight; use iter-scope: connection, or only ecn events`,
			`testdata/invalid-semantics.yaml:25:41: iter: want an integer >= 1, got 0 (iter is the 1-based transmission round: 1 is the first transmission)`,
			`testdata/invalid-semantics.yaml:26:43: packet: want data, got "ack"; to address the responder's ACK/NAK packets, give direction: response`,
		}, "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tt.file))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Load(%q) error =\n%v\nwant\n%s", tt.file, err, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(%q) error = %v, want one matching fs.ErrNotExist", path, err)
	}
	if errors.Is(err, ErrInvalid) {
		t.Errorf("Load(%q) error matches ErrInvalid, want not", path)
	}
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(%q) error = %v, want it to name the path", path, err)
	}
}

// defaultTest is what Parse("t.yaml", "name: t") returns.
func defaultTest() *Test {
	return &Test{
		File:                  "t.yaml",
		Name:                  "t",
		Seed:                  1,
		Testbed:               TestbedSim,
		IterScope:             IterScopeMessage,
		ResultPath:            "results",
		AggregatePcapFilename: "trace.pcap",
		NumRepeats:            1,
		KeepDumperFiles:       true,
		NetnsSlowdown:         1,
		RewriteUDPDstPort:     9741,
		Switch:                Switch{ListenPort: 9000},
		Requester:             Host{NIC: NIC{IBPort: 1, Personality: "spec"}, RoCE: RoCEParameters{DCQCNRPEnable: true, DCQCNNPEnable: true, MinTimeBetweenCNPs: 4, DCQCNEnable: true}},
		Responder:             Host{NIC: NIC{IBPort: 1, Personality: "spec"}, RoCE: RoCEParameters{DCQCNRPEnable: true, DCQCNNPEnable: true, MinTimeBetweenCNPs: 4, DCQCNEnable: true}},
		Dumpers: []Dumper{
			{Name: "dumper-0", Weight: 1, Workers: 1, Backend: BackendSim, SnapLen: 128, DumpFilename: "dumper-0.pcap"},
			{Name: "dumper-1", Weight: 1, Workers: 1, Backend: BackendSim, SnapLen: 128, DumpFilename: "dumper-1.pcap"},
		},
		Traffic: Traffic{
			NumQPs: 1, Verb: VerbWrite, NumMsgsPerQP: 1, MTU: 1024, MessageSize: 4096, ListenPort: 12345,
			TxDepth: 1, MinRetransmitTimeout: 14, MaxRetransmitRetry: 7, MinRNRTimer: 12, RNRRetry: 7,
		},
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name string
		file string
		in   string
		want func(*Test)
	}{
		{"name only", "t.yaml", "name: t\n", func(*Test) {}},
		{"name from file", "dir/my-test.yml", "seed: 1\n", func(t *Test) { t.File, t.Name = "dir/my-test.yml", "my-test" }},
		{"name from dotted file", "a.b.yaml", "seed: 1\n", func(t *Test) { t.File, t.Name = "a.b.yaml", "a.b" }},
		{"empty traffic", "t.yaml", "traffic: {}\n", func(*Test) {}},
		{"null traffic", "t.yaml", "traffic:\n", func(*Test) {}},
		{"remote from control-ips", "t.yaml",
			"switch: {control-ip: s}\nrequester: {control-ip: a}\nresponder: {control-ip: b}\ndumpers: [{control-ip: d}]\n",
			func(t *Test) {
				t.Testbed = TestbedRemote
				t.Switch.ControlIP, t.Requester.ControlIP, t.Responder.ControlIP = "s", "a", "b"
				t.Dumpers = []Dumper{{Name: "dumper-0", Weight: 1, Workers: 1, Backend: BackendAFPacket, SnapLen: 128,
					DumpFilename: "dumper-0.pcap", ControlIP: "d"}}
			}},
		{"netns", "t.yaml", "testbed: netns\n", func(t *Test) {
			t.Testbed = TestbedNetns
			t.Dumpers[0].Backend, t.Dumpers[1].Backend = BackendAFPacket, BackendAFPacket
		}},
		{"personality from type", "t.yaml", "requester: {nic: {type: CX6}}\nresponder: {nic: {type: E810, personality: e810.yaml}}\n", func(t *Test) {
			t.Requester.NIC.Type, t.Requester.NIC.Personality = "cx6", "cx6"
			t.Responder.NIC.Type, t.Responder.NIC.Personality = "e810", "e810.yaml"
		}},
		{"personality file", "t.yaml", "requester: {nic: {type: cx4, personality: quirks/my.YAML}}\n", func(t *Test) {
			t.Requester.NIC.Type, t.Requester.NIC.Personality = "cx4", "quirks/my.YAML"
		}},
		{"mirrors", "t.yaml", "requester-mirror: {pkt-dump-conf: {dump-filename: req.pcap, snap-len: 256}}\nresponder-mirror: {nic: {type: XL710}}\n", func(t *Test) {
			t.Dumpers = []Dumper{
				{Name: "requester-mirror", Weight: 1, Workers: 1, Backend: BackendSim, SnapLen: 256, DumpFilename: "req.pcap"},
				{Name: "responder-mirror", Weight: 1, Workers: 1, Backend: BackendSim, SnapLen: 128, DumpFilename: "responder-mirror.pcap",
					NIC: NIC{Type: "xl710"}},
			}
		}},
		{"num-connections", "t.yaml", "traffic: {num-connections: 3}\n", func(t *Test) { t.Traffic.NumQPs = 3 }},
		{"send_read a,b", "t.yaml", "traffic: {rdma-verb: send_read, num-qps: \"2,3\"}\n", func(t *Test) {
			t.Traffic.Verb, t.Traffic.NumQPs, t.Traffic.NumReadQPs = VerbSendRead, 5, 3
		}},
		{"send_read default", "t.yaml", "traffic: {rdma-verb: SEND_READ}\n", func(t *Test) {
			t.Traffic.Verb, t.Traffic.NumQPs, t.Traffic.NumReadQPs = VerbSendRead, 2, 1
		}},
		{"leading zero is decimal", "t.yaml", "seed: 010\ntraffic: {num-qps: 010}\n", func(t *Test) { t.Seed, t.Traffic.NumQPs = 10, 10 }},
		{"hex and booleans", "t.yaml", "seed: 0xff\ntraffic: {mtu: 0x400, multi-gid: True, barrier-sync: yes}\n", func(t *Test) {
			t.Seed = 255
			t.Traffic.MultiGID, t.Traffic.BarrierSync = true, true
		}},
		{"merge keys and x- anchors", "t.yaml", "x-login: &login {username: u, workspace: /w}\nrequester:\n  <<: *login\n  username: me\n", func(t *Test) {
			t.Requester.Username, t.Requester.Workspace = "me", "/w"
		}},
		{"ip-list and prio map", "t.yaml", "requester:\n  nic:\n    ip-list: [10.0.0.2/24, 10.0.0.12]\n    prio-dscp-map: {3: \"24, 25\", 4: [32]}\n", func(t *Test) {
			t.Requester.NIC.IPList = []netip.Prefix{netip.MustParsePrefix("10.0.0.2/24"), netip.MustParsePrefix("10.0.0.12/32")}
			t.Requester.NIC.PrioDSCPMap = map[int][]int{3: {24, 25}, 4: {32}}
		}},
		{"events", "t.yaml", "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: ALL, type: bit-error, iter: 2}\n    - {qpn: 0, psn: 1, type: ECN, msg: 0, packet: data}\n", func(t *Test) {
			t.Traffic.Events = []Event{
				{QPN: 0, PSN: AllPackets, Type: EventCorrupt, Iter: 2, Msg: AllMessages, Pos: Pos{3, 7}},
				{QPN: 0, PSN: 1, Type: EventECN, Iter: 1, Msg: 0, Pos: Pos{4, 7}},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := defaultTest()
			tt.want(want)
			want.Normalize()
			got, err := Parse(tt.file, []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(%q) =\n%+v\nwant\n%+v", tt.in, got, want)
			}
		})
	}
}

func TestListing2(t *testing.T) {
	got, err := Load("testdata/listing2.yaml")
	if err != nil {
		t.Fatalf("Load(listing2.yaml) error = %v", err)
	}
	tr := got.Traffic
	if tr.NumQPs != 2 || tr.Verb != VerbWrite || tr.NumMsgsPerQP != 10 || tr.MTU != 1024 || tr.MessageSize != 10240 {
		t.Errorf("Load(listing2.yaml).Traffic = %+v, want 2 QPs, write, 10 msgs, mtu 1024, 10240 B", tr)
	}
	if got, want := tr.PacketsPerMessage(), 10; got != want {
		t.Errorf("PacketsPerMessage() = %d, want %d", got, want)
	}
	wantEvents := []Event{
		{QPN: 0, PSN: 3, Type: EventECN, Iter: 1, Msg: AllMessages, Pos: Pos{53, 7}},
		{QPN: 1, PSN: 4, Type: EventDrop, Iter: 1, Msg: AllMessages, Pos: Pos{58, 7}},
		{QPN: 1, PSN: 4, Type: EventDrop, Iter: 2, Msg: AllMessages, Pos: Pos{63, 7}},
	}
	if !reflect.DeepEqual(tr.Events, wantEvents) {
		t.Errorf("Load(listing2.yaml).Traffic.Events = %+v, want %+v", tr.Events, wantEvents)
	}
	if got.Testbed != TestbedRemote || got.Requester.NIC.Personality != "cx4" || got.Requester.RoCE.DCQCNRPEnable || !got.Requester.RoCE.SlowRestart {
		t.Errorf("Load(listing2.yaml) = testbed %v, personality %q, roce %+v; want remote, cx4, rp off, slow-restart on",
			got.Testbed, got.Requester.NIC.Personality, got.Requester.RoCE)
	}
	if n := len(got.ExpandEvents()); n != 30 {
		t.Errorf("len(ExpandEvents()) = %d, want 30 (3 events x 10 messages)", n)
	}
}

func TestPublicExample(t *testing.T) {
	got, err := Load("testdata/public-example.yaml")
	if err != nil {
		t.Fatalf("Load(public-example.yaml) error = %v", err)
	}
	if len(got.Dumpers) != 2 || got.Dumpers[0].Name != "requester-mirror" || got.Dumpers[1].Name != "responder-mirror" {
		t.Fatalf("Dumpers = %+v, want requester-mirror and responder-mirror", got.Dumpers)
	}
	d := got.Dumpers[0]
	want := Dumper{Name: "requester-mirror", Weight: 1, Workers: 1, Backend: BackendAFPacket, SnapLen: 256, NumPkts: 16383,
		DumpFilename: "requester.pcap", ControlIP: "192.168.1.13", Username: "lumina", SSHKeyFilepath: "/home/lumina/.ssh/id_rsa",
		Workspace: "/home/lumina/workspace", NIC: NIC{Type: "xl710", IfName: "ens3f0", PCIAddr: "0000:af:00.0", SwitchPort: 160}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Dumpers[0] =\n%+v\nwant\n%+v", d, want)
	}
	if got.Responder.NIC.Type != "e810" || got.Responder.NIC.Personality != "spec" {
		t.Errorf("Responder.NIC = %+v, want type e810, personality spec", got.Responder.NIC)
	}
	if got.Traffic.Events[2].Type != EventCorrupt {
		t.Errorf("Events[2].Type = %v, want corrupt (bit-error)", got.Traffic.Events[2].Type)
	}
}

func TestPacketsPerMessage(t *testing.T) {
	tests := []struct {
		size, mtu, want int
	}{
		{0, 1024, 1}, {1, 1024, 1}, {1024, 1024, 1}, {1025, 1024, 2}, {10240, 1024, 10}, {65536, 4096, 16},
		{4096, 0, 4}, // zero MTU counts as 1024
	}
	for _, tt := range tests {
		tr := Traffic{MessageSize: tt.size, MTU: tt.mtu}
		if got := tr.PacketsPerMessage(); got != tt.want {
			t.Errorf("Traffic{MessageSize: %d, MTU: %d}.PacketsPerMessage() = %d, want %d", tt.size, tt.mtu, got, tt.want)
		}
	}
}

func TestQPVerb(t *testing.T) {
	tr := Traffic{Verb: VerbSendRead, NumQPs: 5, NumReadQPs: 3}
	want := []Verb{VerbSend, VerbSend, VerbRead, VerbRead, VerbRead}
	for qp, w := range want {
		if got := tr.QPVerb(qp); got != w {
			t.Errorf("QPVerb(%d) = %v, want %v", qp, got, w)
		}
	}
	if got := (&Traffic{Verb: VerbRead}).QPVerb(0); got != VerbRead {
		t.Errorf("QPVerb(0) = %v, want read", got)
	}
}

func TestExpandEvents(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ExpandedEvent
	}{
		{"msg omitted", "traffic:\n  num-msgs-per-qp: 3\n  message-size: 2048\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop}\n",
			[]ExpandedEvent{
				{QP: 0, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: EventDrop},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 3, Iter: 1, Type: EventDrop},
				{QP: 0, Msg: 2, PSN: 1, RelPSN: 5, Iter: 1, Type: EventDrop},
			}},
		{"psn all", "traffic:\n  num-msgs-per-qp: 3\n  message-size: 3000\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn, msg: 1, iter: 2}\n",
			[]ExpandedEvent{
				{QP: 0, Msg: 1, PSN: 0, RelPSN: 3, Iter: 2, Type: EventECN},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 4, Iter: 2, Type: EventECN},
				{QP: 0, Msg: 1, PSN: 2, RelPSN: 5, Iter: 2, Type: EventECN},
			}},
		{"msg given, sorted", "traffic:\n  num-qps: 2\n  num-msgs-per-qp: 4\n  data-pkt-events:\n" +
			"    - {qpn: 1, psn: 0, type: drop, msg: 0}\n" +
			"    - {qpn: 0, psn: 3, type: drop, msg: 2, iter: 2}\n" +
			"    - {qpn: 0, psn: 3, type: corrupt, msg: 2}\n" +
			"    - {qpn: 0, psn: 0, type: ecn, msg: 3}\n",
			[]ExpandedEvent{
				{QP: 0, Msg: 2, PSN: 3, RelPSN: 11, Iter: 1, Type: EventCorrupt},
				{QP: 0, Msg: 2, PSN: 3, RelPSN: 11, Iter: 2, Type: EventDrop},
				{QP: 0, Msg: 3, PSN: 0, RelPSN: 12, Iter: 1, Type: EventECN},
				{QP: 1, Msg: 0, PSN: 0, RelPSN: 0, Iter: 1, Type: EventDrop},
			}},
		{"psn all and msg omitted", "traffic:\n  num-msgs-per-qp: 2\n  message-size: 2048\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn}\n",
			[]ExpandedEvent{
				{QP: 0, Msg: 0, PSN: 0, RelPSN: 0, Iter: 1, Type: EventECN},
				{QP: 0, Msg: 0, PSN: 1, RelPSN: 1, Iter: 1, Type: EventECN},
				{QP: 0, Msg: 1, PSN: 0, RelPSN: 2, Iter: 1, Type: EventECN},
				{QP: 0, Msg: 1, PSN: 1, RelPSN: 3, Iter: 1, Type: EventECN},
			}},
		{"psn all with iter 2 and tx-depth", "iter-scope: connection\ntraffic:\n  tx-depth: 4\n  message-size: 1024\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: drop, iter: 2}\n",
			[]ExpandedEvent{{QP: 0, Msg: 0, PSN: 0, RelPSN: 0, Iter: 2, Type: EventDrop}}},
		{"no events", "name: x\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("t.yaml", []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.in, err)
			}
			if got := cfg.ExpandEvents(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ExpandEvents() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// stripPos zeroes the positions (Event.Pos, PFCEvent.Pos, and in the
// hosts form NamedHost.Pos, Flow.Pos and ECN.Pos), which a Marshal/Parse
// round trip changes. It copies what it changes, so that t's slices are
// left alone.
func stripPos(t *Test) {
	strip := func(tr *Traffic) {
		tr.Events = slices.Clone(tr.Events)
		for i := range tr.Events {
			tr.Events[i].Pos = Pos{}
		}
		tr.PFCEvents = slices.Clone(tr.PFCEvents)
		for i := range tr.PFCEvents {
			tr.PFCEvents[i].Pos = Pos{}
		}
	}
	strip(&t.Traffic)
	stripECN := func(sw *Switch) {
		if sw.ECN != nil {
			e := *sw.ECN
			e.Pos = Pos{}
			sw.ECN = &e
		}
	}
	stripECN(&t.Switch)
	t.Switches = slices.Clone(t.Switches)
	for i := range t.Switches {
		t.Switches[i].Pos = Pos{}
		stripECN(&t.Switches[i].Switch)
	}
	t.Links = slices.Clone(t.Links)
	for i := range t.Links {
		t.Links[i].Pos = Pos{}
	}
	if !t.HostsForm {
		t.Normalize() // Flows[0] from the stripped traffic
		return
	}
	t.Hosts = slices.Clone(t.Hosts)
	for i := range t.Hosts {
		t.Hosts[i].Pos = Pos{}
	}
	t.Flows = slices.Clone(t.Flows)
	for i := range t.Flows {
		t.Flows[i].Pos = Pos{}
		strip(&t.Flows[i].Traffic)
	}
	t.PFCEvents = slices.Clone(t.PFCEvents)
	for i := range t.PFCEvents {
		t.PFCEvents[i].Pos = Pos{}
	}
}

// checkRoundTrip asserts that Parse(Marshal(t)) equals t (Pos aside) and
// that Marshal is a fixed point.
func checkRoundTrip(t testing.TB, cfg *Test) {
	t.Helper()
	out, err := cfg.Marshal()
	if err != nil {
		t.Fatalf("Marshal() error = %v", err)
	}
	again, err := Parse(cfg.File, out)
	if err != nil {
		t.Fatalf("Parse(Marshal()) error = %v\n%s", err, out)
	}
	a, b := *cfg, *again
	stripPos(&a)
	stripPos(&b)
	if !reflect.DeepEqual(&a, &b) {
		t.Fatalf("Parse(Marshal(t)) =\n%+v\nwant\n%+v\nYAML:\n%s", b, a, out)
	}
	out2, err := again.Marshal()
	if err != nil || string(out2) != string(out) {
		t.Fatalf("Marshal(Parse(Marshal(t))) =\n%s\nwant\n%s", out2, out)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "invalid-") {
			continue
		}
		t.Run(f, func(t *testing.T) {
			cfg, err := Load(f)
			if err != nil {
				t.Fatalf("Load(%q) error = %v", f, err)
			}
			checkRoundTrip(t, cfg)
		})
	}
	for _, in := range []string{
		"traffic: {rdma-verb: send_read, num-qps: \"2,3\", dscp-list: [1, 2, 3, 4, 5]}\n",
		"name: \"123\"\nresult-path: \" spaced \"\nlocal-workspace: \"a\\nb\"\nseed: 18446744073709551615\n",
		"dumpers:\n  - {name: x, weight: 3, workers: 4}\n  - {name: y, snap-len: 9216}\n",
		"testbed: netns\ndumpers:\n  - {backend: dpdk, eal-args: [-l, 0-3], nic: {rte-port-id: 2, type: e810}}\n",
		"requester:\n  nic:\n    ip-list: [10.0.0.2]\n    prio-dscp-map: {0: [], 7: \"1,2\"}\n",
		"traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: drop, iter: 3, msg: 0}\n",
		"switch: {ecn: {priorities: [3, 5], kmin-kb: 0, kmax-kb: 1, pmax: 1}}\nrequester: {nic: {pfc: {priorities: [3]}}}\n" +
			"traffic: {num-qps: 2, pfc-events: [{type: pause, to: requester, priority: 3, start: {flow: traffic, qpn: 1, psn: 0}}]}\n",
		"hosts: {b: {nic: {ip-list: [10.0.0.2]}}, a: {control-ip: x}}\ntestbed: sim\n" +
			"flows: [{name: f, from: a, to: b, rdma-verb: send_read, num-qps: \"2,3\", start-us: 7}, {name: g, from: b, to: a, data-pkt-events: [{qpn: 0, psn: all, type: ecn}]}]\n" +
			"pfc-events: [{type: rx-stall, host: b, duration-us: 10}]\n",
		"hosts: {h1: {nic: {pfc: {priorities: [1]}}}, h2: {}}\nswitch: {ecn: {priorities: [1], kmin-kb: 10, kmax-kb: 20, pmax: 0.125}}\n" +
			"flows: [{name: f, from: h1, to: h2, num-qps: 2}]\npfc-events: [{type: pause, to: h1, priority: 1, start: {flow: f, qpn: 1, psn: 0, iter: 2}}]\n",
	} {
		cfg, err := Parse("t.yaml", []byte(in))
		if err != nil {
			t.Fatalf("Parse(%q) error = %v", in, err)
		}
		checkRoundTrip(t, cfg)
	}
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{string(VerbWrite), "write"}, {string(VerbRead), "read"}, {string(VerbSend), "send"}, {string(VerbSendRead), "send_read"},
		{EventDrop.String(), "drop"}, {EventECN.String(), "ecn"}, {EventCorrupt.String(), "corrupt"}, {EventType(0).String(), "none"},
		{TestbedSim.String(), "sim"}, {TestbedNetns.String(), "netns"}, {TestbedRemote.String(), "remote"}, {Testbed(-1).String(), "Testbed(-1)"},
		{IterScopeMessage.String(), "message"}, {IterScopeConnection.String(), "connection"},
		{BackendSim.String(), "sim"}, {BackendAFPacket.String(), "afpacket"}, {BackendDPDK.String(), "dpdk"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
	if EventDrop != 1 || EventECN != 2 || EventCorrupt != 3 {
		t.Errorf("EventType values = %d, %d, %d; want 1, 2, 3 (the mirror TTL encoding)", EventDrop, EventECN, EventCorrupt)
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"num-qps", "num-msgs-per-qp", "mtu", "message-size"}
	tests := []struct{ in, want string }{
		{"num-msg-per-qp", "num-msgs-per-qp"}, {"mut", "mtu"}, {"MTU", "mtu"}, {"num_qps", "num-qps"},
		{"messagesize", "message-size"}, {"zzz", ""}, {"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, keys); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDocExamples parses every yaml block of docs/config.md.
func TestDocExamples(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Skipf("docs/config.md not readable: %v", err)
	}
	blocks := strings.Split(string(data), "```yaml\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("docs/config.md has no yaml examples")
	}
	for i, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		if _, err := Parse("config.md", []byte(b)); err != nil {
			t.Errorf("example %d in docs/config.md: Parse error = %v", i, err)
		}
	}
}

// TestNewIsParsedDefaults checks New against Parse of a file that sets only
// the name.
func TestNewIsParsedDefaults(t *testing.T) {
	want, err := Parse("x.yaml", []byte("name: collie-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want.File = ""
	if got := New("collie-1"); !reflect.DeepEqual(got, want) {
		t.Errorf("New = %+v\nParse = %+v", got, want)
	}
}
