package controlplane

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

var testPorts = Ports{
	Hosts: []Host{{Name: "requester", Port: 1, MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.11")}},
		{Name: "responder", Port: 2, MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}}},
	Dumpers: []Dumper{{Name: "d0", Port: 10, MAC: [6]byte{2, 0, 0, 0, 1, 0}, Weight: 1}, {Name: "d1", Port: 11, MAC: [6]byte{2, 0, 0, 0, 1, 1}, Weight: 2}},
}

// mkConn makes connection i; a reqIP that does not parse is the zero
// address (an endpoint without one).
func mkConn(i int, verb generator.Verb, reqIP string, reqQPN, reqIPSN, rspQPN, rspIPSN uint32) generator.Connection {
	ip, _ := netip.ParseAddr(reqIP)
	return generator.Connection{Index: i, Verb: verb,
		Requester: generator.Endpoint{IP: ip, MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: reqQPN, IPSN: reqIPSN},
		Responder: generator.Endpoint{IP: netip.MustParseAddr("10.0.0.2"), MAC: roce.MAC{2, 0, 0, 0, 0, 2}, QPN: rspQPN, IPSN: rspIPSN}}
}

func renderEvents(p *Plan) string {
	var s []string
	for _, e := range p.Events {
		s = append(s, fmt.Sprintf("p%d/q%#x/psn%#x/i%d/%v", e.Port, e.DestQP, uint32(e.PSN), e.Iter, e.Type))
	}
	return strings.Join(s, " ")
}

func TestTranslate(t *testing.T) {
	// A test with 4-packet messages, 3 messages per QP.
	mk := func(yamlEvents string, verb string, nqps int) []config.ExpandedEvent {
		src := fmt.Sprintf("traffic:\n  num-qps: %d\n  rdma-verb: %s\n  num-msgs-per-qp: 3\n  message-size: 4096\n  mtu: 1024\n  data-pkt-events:\n%s", nqps, verb, yamlEvents)
		tc, err := config.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		return tc.ExpandEvents()
	}
	tests := []struct {
		name  string
		ev    []config.ExpandedEvent
		conns []generator.Connection
		want  string
	}{
		{
			name:  "write, one event on msg 1, IPSN near the wrap",
			ev:    mk("    - {qpn: 0, psn: 1, type: drop, iter: 1, msg: 1}\n", "write", 1),
			conns: []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xAAA, 0xFFFFFE, 0xBBB, 0x10)},
			// rel PSN 1*4+1 = 5 → 0xFFFFFE+5 = 0x3 (mod 2^24), addressed to the responder's QPN from the requester port.
			want: "p1/q0xbbb/psn0x3/i1/drop",
		},
		{
			name:  "every message (msg omitted)",
			ev:    mk("    - {qpn: 0, psn: 3, type: ecn, iter: 2}\n", "write", 1),
			conns: []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xAAA, 0xFFFFFF, 0xBBB, 0x10)},
			want:  "p1/q0xbbb/psn0x2/i2/ecn p1/q0xbbb/psn0x6/i2/ecn p1/q0xbbb/psn0xa/i2/ecn",
		},
		{
			name:  "psn all on one message",
			ev:    mk("    - {qpn: 0, psn: all, type: corrupt, iter: 1, msg: 2}\n", "send", 1),
			conns: []generator.Connection{mkConn(0, generator.VerbSend, "10.0.0.1", 0xAAA, 100, 0xBBB, 0x10)},
			want:  "p1/q0xbbb/psn0x6c/i1/corrupt p1/q0xbbb/psn0x6d/i1/corrupt p1/q0xbbb/psn0x6e/i1/corrupt p1/q0xbbb/psn0x6f/i1/corrupt",
		},
		{
			name:  "read: responses from the responder port, to the requester QPN, in the requester's PSN space",
			ev:    mk("    - {qpn: 0, psn: 0, type: drop, iter: 1, msg: 0}\n", "read", 1),
			conns: []generator.Connection{mkConn(0, generator.VerbRead, "10.0.0.1", 0xAAA, 0x500, 0xBBB, 0x900)},
			want:  "p2/q0xaaa/psn0x500/i1/drop",
		},
		{
			name: "two QPs (multi-GID requester), events kept per QP",
			ev:   mk("    - {qpn: 1, psn: 2, type: drop, iter: 1, msg: 0}\n    - {qpn: 0, psn: 0, type: drop, iter: 3, msg: 0}\n", "write", 2),
			conns: []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA1, 10, 0xB1, 0),
				mkConn(1, generator.VerbWrite, "10.0.0.11", 0xA2, 20, 0xB2, 0)},
			want: "p1/q0xb1/psn0xa/i3/drop p1/q0xb2/psn0x16/i1/drop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Translate(Intent{Events: tt.ev}, tt.conns, testPorts)
			if err != nil {
				t.Fatal(err)
			}
			if got := renderEvents(p); got != tt.want {
				t.Errorf("events\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTranslatePlan(t *testing.T) {
	p, err := Translate(Intent{IterScope: config.IterScopeConnection},
		[]generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA1, 0xFFFFFE, 0xB1, 7),
			mkConn(1, generator.VerbRead, "10.0.0.11", 0xA2, 5, 0xB2, 9)}, testPorts)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.Conns)
	want := "[{0 1 177 16777214 connection 0 requester false} {1 2 162 5 connection 1 responder false}]"
	if got != want {
		t.Errorf("conns = %s, want %s", got, want)
	}
	if fmt.Sprint(p.WRR) != "[2 1 2]" || len(p.Sessions) != 2 || p.Sessions[1].Port != 11 || p.MirrorPort != 9741 {
		t.Errorf("WRR %v sessions %v mirror port %d", p.WRR, p.Sessions, p.MirrorPort)
	}
	if len(p.ARP) != 3 || len(p.Forward) != 4 {
		t.Errorf("ARP %v forward %v", p.ARP, p.Forward)
	}
}

func TestTranslateErrors(t *testing.T) {
	good := mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA1, 1, 0xB1, 2)
	tests := []struct {
		name  string
		in    Intent
		conns []generator.Connection
		ports Ports
		want  error
		msg   string
	}{
		{"no connections", Intent{}, nil, testPorts, ErrMetadata, "no connections"},
		{"bad index", Intent{}, []generator.Connection{mkConn(3, generator.VerbWrite, "10.0.0.1", 1, 1, 2, 2)}, testPorts, ErrMetadata, "index 3"},
		{"qpn 0", Intent{}, []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0, 1, 2, 2)}, testPorts, ErrMetadata, "QPN 0x0"},
		{"qpn > 24 bits", Intent{}, []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 1<<24, 1, 2, 2)}, testPorts, ErrMetadata, "24-bit"},
		{"ipsn > 24 bits", Intent{}, []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 1, 1<<24, 2, 2)}, testPorts, ErrMetadata, "exceeds 24 bits"},
		{"foreign ip", Intent{}, []generator.Connection{mkConn(0, generator.VerbWrite, "10.9.9.9", 1, 1, 2, 2)}, testPorts, ErrMetadata, "not between"},
		{"no ip", Intent{}, []generator.Connection{mkConn(0, generator.VerbWrite, "", 1, 1, 2, 2)}, testPorts, ErrMetadata, `requester IP "invalid IP" is not IPv4`},
		{"ipv6", Intent{}, []generator.Connection{mkConn(0, generator.VerbWrite, "fd00::1", 1, 1, 2, 2)}, testPorts, ErrMetadata, `requester IP "fd00::1" is not IPv4`},
		{"no mac", Intent{}, []generator.Connection{func() generator.Connection {
			c := mkConn(0, generator.VerbWrite, "10.0.0.1", 1, 1, 2, 2)
			c.Responder.MAC = roce.MAC{}
			return c
		}()}, testPorts, ErrMetadata, "connection 0 responder has no MAC address"},
		{"duplicate qpn", Intent{}, []generator.Connection{good, mkConn(1, generator.VerbWrite, "10.0.0.11", 0xA2, 1, 0xB1, 2)}, testPorts, ErrMetadata, "both receive"},
		{"event on missing qp", Intent{Events: []config.ExpandedEvent{{QP: 1, Iter: 1, Type: config.EventDrop}}}, []generator.Connection{good}, testPorts, ErrIntent, "only 1 connections"},
		{"conflicting events", Intent{Events: []config.ExpandedEvent{{QP: 0, Iter: 1, Type: config.EventDrop}, {QP: 0, Iter: 1, Type: config.EventECN}}},
			[]generator.Connection{good}, testPorts, ErrIntent, "both drop and ecn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Translate(tt.in, tt.conns, tt.ports)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Translate() = %v, want %v containing %q", err, tt.want, tt.msg)
			}
		})
	}
	bad := testPorts
	bad.Dumpers = nil
	if _, err := Translate(Intent{}, []generator.Connection{good}, bad); err == nil {
		t.Error("no dumpers accepted")
	}
}

func TestSmoothWRR(t *testing.T) {
	for _, w := range [][]int{{1}, {1, 1}, {1, 2, 3}, {5, 1}, {3, 3, 3, 1}} {
		seq, err := SmoothWRR(w)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, x := range w {
			total += x
		}
		counts := make([]int, len(w))
		for i, s := range seq {
			counts[s]++
			for d := range w {
				ideal := float64((i+1)*w[d]) / float64(total)
				if diff := float64(counts[d]) - ideal; diff > 1 || diff < -1 {
					t.Errorf("weights %v: after %d slots index %d has %d, ideal %.2f", w, i+1, d, counts[d], ideal)
				}
			}
		}
		for d := range w {
			if counts[d] != w[d] {
				t.Errorf("weights %v: index %d got %d slots", w, d, counts[d])
			}
		}
	}
	if _, err := SmoothWRR([]int{200, 100}); err == nil {
		t.Error("300 slots accepted")
	}
}

var _ = roce.PSN(0)

// Events with direction response get a conn_lookup entry of their own for
// the responder's ACK/NAK packets (responder port, requester QPN, requester
// PSN space, per-connection ITER); the event parameters reach the action.
func TestTranslateResponseAndParamEvents(t *testing.T) {
	conns := []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA1, 0xFFFFFE, 0xB1, 7),
		mkConn(1, generator.VerbRead, "10.0.0.11", 0xA2, 5, 0xB2, 9)}
	in := Intent{IterScope: config.IterScopeMessage, Events: []config.ExpandedEvent{
		{QP: 0, RelPSN: 3, Iter: 1, Type: config.EventDelay, EventParams: config.EventParams{DelayNs: 20000}},
		{QP: 0, RelPSN: 3, Iter: 1, Type: config.EventDuplicate, EventParams: config.EventParams{Direction: config.DirResponse, Copies: 2}},
		{QP: 0, RelPSN: 4, Iter: 2, Type: config.EventReorder, EventParams: config.EventParams{Direction: config.DirResponse, Overtakers: 1, MaxHoldNs: 1000000}},
		{QP: 1, RelPSN: 0, Iter: 1, Type: config.EventDuplicate, EventParams: config.EventParams{Direction: config.DirRequest, Copies: 1}},
	}}
	p, err := Translate(in, conns, testPorts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(p.Conns), "[{0 1 177 16777214 message 0 requester false} {1 2 162 5 message 1 responder false} {2 2 161 16777214 connection 0 responder true} {3 1 178 5 connection 1 requester false}]"; got != want {
		t.Errorf("conns = %s\nwant    %s", got, want)
	}
	var got []string
	for _, e := range p.Events {
		name, params := e.Action()
		got = append(got, fmt.Sprintf("port %d qpn %#x psn %#x iter %d %s%v", e.Port, e.DestQP, uint32(e.PSN), e.Iter, name, params))
	}
	want := []string{
		"port 1 qpn 0xb1 psn 0x1 iter 1 Ingress.delay_event[{20000 32}]",
		"port 2 qpn 0xa1 psn 0x1 iter 1 Ingress.duplicate_event[{2 8}]",
		"port 2 qpn 0xa1 psn 0x2 iter 2 Ingress.reorder_event[{1 8} {1000000 32}]",
		"port 1 qpn 0xb2 psn 0x5 iter 1 Ingress.duplicate_event[{1 8}]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	name, params := p.Conns[2].Action()
	if fmt.Sprint(name, params) != "Ingress.set_conn[{2 16} {1 1} {1 1}]" {
		t.Errorf("response conn action %s %v", name, params)
	}

	for _, tc := range []struct {
		name string
		ev   config.ExpandedEvent
		want string
	}{
		{"response on READ", config.ExpandedEvent{QP: 1, Iter: 1, Type: config.EventDrop, EventParams: config.EventParams{Direction: config.DirResponse}},
			"controlplane: intent does not fit the connections: event with direction response on QP 1, whose data flows from the responder"},
		{"request on WRITE", config.ExpandedEvent{QP: 0, Iter: 1, Type: config.EventDrop, EventParams: config.EventParams{Direction: config.DirRequest}},
			"controlplane: intent does not fit the connections: event with direction request on QP 0, whose data flows from the requester"},
		{"copies 0", config.ExpandedEvent{QP: 0, Iter: 1, Type: config.EventDuplicate},
			"controlplane: intent does not fit the connections: duplicate event on QP 0 relative PSN 0: copies 0 out of 1..255"},
		{"delay too long", config.ExpandedEvent{QP: 0, Iter: 1, Type: config.EventDelay, EventParams: config.EventParams{DelayNs: 1 << 32}},
			"controlplane: intent does not fit the connections: delay event on QP 0 relative PSN 0: delay_ns 4294967296 out of 1..4294967295"},
	} {
		_, err := Translate(Intent{Events: []config.ExpandedEvent{tc.ev}}, conns, testPorts)
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrIntent) {
			t.Errorf("%s: Translate = %v, want %s", tc.name, err, tc.want)
		}
	}
}

// threeHosts is two senders h1, h2 and a host r on port 32, as the
// orchestrator numbers a third host's port.
var threeHosts = Ports{
	Hosts: []Host{{Name: "h1", Port: 1, MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}},
		{Name: "h2", Port: 2, MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}},
		{Name: "r", Port: 32, MAC: [6]byte{2, 0, 0, 0, 0, 3}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.9")}}},
	Dumpers: []Dumper{{Name: "d0", Port: 10, MAC: [6]byte{2, 0, 0, 0, 1, 0}, Weight: 1}},
}

// conn3 is connection i from the host at reqIP to the one at rspIP.
func conn3(i int, verb generator.Verb, reqIP, rspIP string, reqQPN, reqIPSN, rspQPN, rspIPSN uint32) generator.Connection {
	return generator.Connection{Index: i, Verb: verb,
		Requester: generator.Endpoint{IP: netip.MustParseAddr(reqIP), MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: reqQPN, IPSN: reqIPSN},
		Responder: generator.Endpoint{IP: netip.MustParseAddr(rspIP), MAC: roce.MAC{2, 0, 0, 0, 0, 2}, QPN: rspQPN, IPSN: rspIPSN}}
}

// TestTranslateHosts: with three hosts every host gets forwarding and ARP,
// and each connection's entries (data, responses, READ requests) and
// events take the ports of its own requester and responder hosts.
func TestTranslateHosts(t *testing.T) {
	conns := []generator.Connection{
		conn3(0, generator.VerbWrite, "10.0.0.1", "10.0.0.9", 0xA1, 100, 0xB1, 7), // h1 → r
		conn3(1, generator.VerbWrite, "10.0.0.2", "10.0.0.9", 0xA2, 200, 0xB2, 8), // h2 → r
		conn3(2, generator.VerbRead, "10.0.0.9", "10.0.0.1", 0xA3, 300, 0xB3, 9),  // r reads from h1
	}
	in := Intent{Events: []config.ExpandedEvent{
		{QP: 0, RelPSN: 1, Iter: 1, Type: config.EventDrop},
		{QP: 0, RelPSN: 2, Iter: 1, Type: config.EventDrop, EventParams: config.EventParams{Direction: config.DirResponse}},
		{QP: 1, RelPSN: 3, Iter: 1, Type: config.EventECN},
		{QP: 2, RelPSN: 4, Iter: 1, Type: config.EventDrop},
		{QP: 2, RelPSN: 5, Iter: 2, Type: config.EventDrop, EventParams: config.EventParams{Direction: config.DirRequest}},
	}}
	p, err := Translate(in, conns, threeHosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"forward", fmt.Sprint(p.Forward), "[{[2 0 0 0 0 1] 1} {[2 0 0 0 0 2] 2} {[2 0 0 0 0 3] 32} {[2 0 0 0 1 0] 10}]"},
		{"arp", fmt.Sprint(p.ARP), "[{10.0.0.1 [2 0 0 0 0 1]} {10.0.0.2 [2 0 0 0 0 2]} {10.0.0.9 [2 0 0 0 0 3]}]"},
		{"count ports", fmt.Sprint(p.CountPorts), "[1 2 32 10]"},
		// h1's data enters on 1 to r's QP; h2's on 2; r's READ responses
		// come from h1 (port 1) to r's QP; the response entry of QP 0
		// comes from r (32) to h1's QP; QP 2's READ requests from r (32)
		// to h1's QP.
		{"conns", fmt.Sprint(p.Conns), "[{0 1 177 100 message 0 requester false} {1 2 178 200 message 1 requester false} " +
			"{2 1 163 300 message 2 responder false} {3 32 161 100 connection 0 responder true} {4 32 179 300 connection 2 requester false}]"},
		{"events", renderEvents(p), "p1/q0xb1/psn0x65/i1/drop p32/q0xa1/psn0x66/i1/drop p2/q0xb2/psn0xcb/i1/ecn p1/q0xa3/psn0x130/i1/drop p32/q0xb3/psn0x131/i2/drop"},
	} {
		if c.got != c.want {
			t.Errorf("Translate(3 hosts) %s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestTranslateHostsErrors: a connection must run between two different
// hosts of the test; the error names the hosts.
func TestTranslateHostsErrors(t *testing.T) {
	tests := []struct {
		name  string
		conns []generator.Connection
		ports Ports
		msg   string
	}{
		{"same host", []generator.Connection{conn3(0, generator.VerbWrite, "10.0.0.1", "10.0.0.1", 1, 1, 2, 2)}, threeHosts,
			"10.0.0.1 → 10.0.0.1 is not between two hosts of the test (h1 [10.0.0.1], h2 [10.0.0.2], r [10.0.0.9])"},
		{"unknown responder", []generator.Connection{conn3(0, generator.VerbWrite, "10.0.0.1", "10.0.0.5", 1, 1, 2, 2)}, threeHosts,
			"10.0.0.1 → 10.0.0.5 is not between two hosts"},
		{"one host", []generator.Connection{conn3(0, generator.VerbWrite, "10.0.0.1", "10.0.0.2", 1, 1, 2, 2)},
			Ports{Hosts: threeHosts.Hosts[:1], Dumpers: threeHosts.Dumpers}, "1 traffic hosts, want 2 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Translate(Intent{}, tt.conns, tt.ports)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Translate() = %v, want an error containing %q", err, tt.msg)
			}
		})
	}
}
