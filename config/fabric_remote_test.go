package config

import (
	"reflect"
	"strings"
	"testing"
)

// remoteFab is a fabric on testbed remote (lines 1..13): h1 and h2 on s1
// at switch ports 5 and 6, h3 on s2 at port 9, the loopback cable s1–s2
// between ports 7 (a, on s1) and 8 (b, on s2), one dumper on port 10.
// Each line is a variable so that the error tests can swap one.
const (
	rfTestbed  = "testbed: remote\n"
	rfHosts    = "hosts: {h1: {control-ip: a, nic: {switch-port: 5}}, h2: {control-ip: b, nic: {switch-port: 6}}, h3: {control-ip: c, nic: {switch-port: 9}}}\n"
	rfSwitches = "switches:\n  s1: {control-ip: s}\n  s2: {}\n"
	rfHostLink = "links:\n  - {a: h1, b: s1}\n  - {a: h2, b: s1}\n  - {a: h3, b: s2}\n"
	rfSwLink   = "  - {a: s1, b: s2, a-port: 7, b-port: 8}\n"
	rfFlow     = "flows:\n  - {name: f, from: h1, to: h3}\n"
	rfDumper   = "dumpers: [{control-ip: d, nic: {switch-port: 10}}]\n"
	remoteFab  = rfTestbed + rfHosts + rfSwitches + rfHostLink + rfSwLink + rfFlow + rfDumper
)

// TestRemoteFabricTopology: on testbed remote the ports are the real
// switch's: each host's nic.switch-port, each link's a-port and b-port
// (not 1, 2, 32 and 200+2l); routes and the observed switch use them.
func TestRemoteFabricTopology(t *testing.T) {
	cfg, err := Parse("t.yaml", []byte(remoteFab))
	if err != nil {
		t.Fatalf("Parse(remoteFab) error = %v", err)
	}
	want := &Topology{
		Switches: []string{"s1", "s2"},
		Ports: []TopoPort{
			{Port: 5, Switch: 0, Host: 0, PeerSwitch: -1, Pos: Pos{7, 5}},
			{Port: 6, Switch: 0, Host: 1, PeerSwitch: -1, Pos: Pos{8, 5}},
			{Port: 9, Switch: 1, Host: 2, PeerSwitch: -1, Pos: Pos{9, 5}},
			{Port: 7, Switch: 0, Host: -1, PeerPort: 8, PeerSwitch: 1, Pos: Pos{10, 5}},
			{Port: 8, Switch: 1, Host: -1, PeerPort: 7, PeerSwitch: 0, Pos: Pos{10, 5}},
		},
	}
	if tp := cfg.Topology(); !reflect.DeepEqual(tp, want) {
		t.Errorf("Topology() =\n%+v\nwant\n%+v", tp, want)
	}
	if got, want := cfg.Route(0, 2), []Hop{{Switch: 0, In: 5, Out: 7}, {Switch: 1, In: 8, Out: 9}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Route(h1, h3) = %+v, want %+v", got, want)
	}
	if got, want := cfg.Route(2, 0), []Hop{{Switch: 1, In: 9, Out: 8}, {Switch: 0, In: 7, Out: 5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Route(h3, h1) = %+v, want %+v", got, want)
	}
	if got, want := cfg.Route(0, 1), []Hop{{Switch: 0, In: 5, Out: 6}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Route(h1, h2) = %+v, want %+v", got, want)
	}
	if got := cfg.Links[3]; got.APort != 7 || got.BPort != 8 {
		t.Errorf("Links[3] ports = %d, %d; want 7, 8", got.APort, got.BPort)
	}
	if got := cfg.Links[0]; got.APort != -1 || got.BPort != -1 {
		t.Errorf("Links[0] (a host's) ports = %d, %d; want -1, -1 (not given)", got.APort, got.BPort)
	}
	checkRoundTrip(t, cfg)

	// The same file on sim numbers the ports itself: --testbed sim ignores
	// a-port and b-port, hosts keep 1, 2, 32, the link 200 and 201.
	sim, err := cfg.WithTestbed(TestbedSim)
	if err != nil {
		t.Fatalf("WithTestbed(sim) error = %v", err)
	}
	if got, want := sim.Route(0, 2), []Hop{{Switch: 0, In: 1, Out: 200}, {Switch: 1, In: 201, Out: 32}}; !reflect.DeepEqual(got, want) {
		t.Errorf("on sim: Route(h1, h3) = %+v, want %+v", got, want)
	}
}

// TestRemoteFabricErrors: a-port and b-port are required on testbed
// remote between switches, refused elsewhere, and every switch port is
// used once.
func TestRemoteFabricErrors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(remoteFab, old) {
			t.Fatalf("remoteFab has no %q", old)
		}
		return strings.Replace(remoteFab, old, new, 1)
	}
	tests := []struct{ name, in, want string }{
		{"no a-port", replace(rfSwLink, "  - {a: s1, b: s2, b-port: 8}\n"),
			`t.yaml:10:5: testbed remote: link s1–s2 needs a-port: the switch ports of its ends (a-port on s1, b-port on s2), which its loopback cable joins (docs/fabric.md)`},
		{"no ports", replace(rfSwLink, "  - {a: s1, b: s2}\n"),
			`t.yaml:10:5: testbed remote: link s1–s2 needs a-port and b-port: the switch ports of its ends (a-port on s1, b-port on s2), which its loopback cable joins (docs/fabric.md)`},
		{"a-port out of range", replace(rfSwLink, "  - {a: s1, b: s2, a-port: 512, b-port: 8}\n"),
			`t.yaml:10:28: a-port: want 0..511, got 512 (a-port: the remote switch's port of the link's a end)`},
		{"a-port on sim", replace(rfTestbed, "testbed: sim\n"),
			"t.yaml:10:28: a-port: testbed sim numbers a switch-to-switch link's ports itself, 200+2l and 201+2l (here 200 for a, 201 for b); a-port and b-port are the remote switch's ports (testbed remote)\n" +
				`t.yaml:10:39: b-port: testbed sim numbers a switch-to-switch link's ports itself, 200+2l and 201+2l (here 200 for a, 201 for b); a-port and b-port are the remote switch's ports (testbed remote)`},
		{"b-port on netns, second link", "testbed: netns\n" + rfHosts + "switches:\n  s1: {control-ip: s}\n  s2: {}\n  s3: {}\n" + rfHostLink +
			"  - {a: s1, b: s2}\n  - {a: s2, b: s3, b-port: 8}\n" + rfFlow + rfDumper,
			`t.yaml:12:28: b-port: testbed netns numbers a switch-to-switch link's ports itself, 200+2l and 201+2l (here 202 for a, 203 for b); a-port and b-port are the remote switch's ports (testbed remote)`},
		{"a-port on a host's link", replace("  - {a: h2, b: s1}\n", "  - {a: h2, b: s1, a-port: 6}\n"),
			`t.yaml:8:28: a-port: h2's switch port is its nic.switch-port: a-port and b-port apply to links between switches`},
		{"link port is a host's", replace(rfSwLink, "  - {a: s1, b: s2, a-port: 7, b-port: 9}\n"),
			`t.yaml:10:39: testbed remote: switch port 9 is both host h3's nic.switch-port (at 2:136) and b-port of link s1–s2: each port of the switch is one cable, so every host, dumper and loopback cable end needs its own`},
		{"both ends on one port", replace(rfSwLink, "  - {a: s1, b: s2, a-port: 7, b-port: 7}\n"),
			`t.yaml:10:39: testbed remote: switch port 7 is both a-port of link s1–s2 (at 10:28) and b-port of link s1–s2: each port of the switch is one cable, so every host, dumper and loopback cable end needs its own`},
		{"dumper on a host's port", replace(rfDumper, "dumpers: [{control-ip: d, nic: {switch-port: 6}}]\n"),
			`t.yaml:13:46: testbed remote: switch port 6 is both host h2's nic.switch-port (at 2:92) and dumper dumper-0's nic.switch-port: each port of the switch is one cable, so every host, dumper and loopback cable end needs its own`},
		{"host without switch-port", replace("h3: {control-ip: c, nic: {switch-port: 9}}", "h3: {control-ip: c}"),
			`t.yaml:2:97: testbed remote: host h3 needs nic.switch-port in a fabric: the switch port its cable plugs into, which puts it in its logical switch`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, nil; want error %q", tt.in, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n%s\nwant\n%s", tt.in, err, tt.want)
			}
		})
	}
}

// TestRemoteFabricWithTestbed: a sim fabric run with --testbed remote
// lacks its links' ports, and its hosts' ports must differ.
func TestRemoteFabricWithTestbed(t *testing.T) {
	in := strings.Replace(strings.Replace(strings.Replace(remoteFab, rfTestbed, "testbed: sim\n", 1), rfSwLink, "  - {a: s1, b: s2}\n", 1),
		"{switch-port: 9}", "{switch-port: 6}", 1)
	cfg, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse error = %v", err)
	}
	_, err = cfg.WithTestbed(TestbedRemote)
	want := "t.yaml: --testbed remote: link s1–s2 needs a-port and b-port: the switch ports of its ends (a-port on s1, b-port on s2), which its loopback cable joins (docs/fabric.md); " +
		"switch port 6 is both host h2's nic.switch-port and host h3's nic.switch-port: give each its own nic.switch-port, a-port or b-port"
	if err == nil || err.Error() != want {
		t.Errorf("WithTestbed(remote) error = %v, want %s", err, want)
	}
	// ParseWith points at the keys.
	_, err = ParseWith("t.yaml", []byte(in), LoadOptions{Testbed: new(TestbedRemote)})
	want = "t.yaml:2:136: --testbed remote: switch port 6 is both host h2's nic.switch-port and host h3's nic.switch-port: give each its own nic.switch-port, a-port or b-port\n" +
		"t.yaml:10:5: --testbed remote: link s1–s2 needs a-port and b-port: the switch ports of its ends (a-port on s1, b-port on s2), which its loopback cable joins (docs/fabric.md)"
	if err == nil || err.Error() != want {
		t.Errorf("ParseWith(--testbed remote) error =\n%v\nwant\n%s", err, want)
	}
}
