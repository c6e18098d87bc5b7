package controlplane

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
)

// lineFabric is three logical switches in a line, tor0 (0) — spine (1) —
// tor2 (2), linked by ports 200 (on 0) – 201 (on 1) and 202 (on 1) – 203
// (on 2): the requester (port 1) and the dumpers (10, 11) on switch 0,
// the responder (port 2) on switch 2. Flows "f1" and "f2" are observed
// at switches 1 and 2, others at their requester's switch.
func lineFabric() *Fabric {
	return &Fabric{
		PortSwitch: map[uint32]uint8{1: 0, 10: 0, 11: 0, 200: 0, 201: 1, 202: 1, 203: 2, 2: 2},
		Routes: []Route{
			{From: 0, To: 1, Hops: []Hop{{0, 1, 200}, {1, 201, 202}, {2, 203, 2}}},
			{From: 1, To: 0, Hops: []Hop{{2, 2, 203}, {1, 202, 201}, {0, 200, 1}}},
		},
		Observed: map[string]uint8{"f1": 1, "f2": 2},
	}
}

func fabricPorts(f *Fabric) Ports {
	p := testPorts
	p.Fabric = f
	return p
}

// TestTranslateFabricLine: on a 3-switch line, every port gets its
// port_switch entry, every hop of both routes its fabric_forward entry,
// and each connection's entries (data, and the response or request
// entries its events need) and events are at the in-port of its flow's
// observed switch on the route of each direction: flow f0 (not listed)
// at the requester's switch 0 (data in by port 1, ACKs from the responder
// in by link port 200), f1 at the spine (READ responses in by 202, the
// requests in by 201), f2 at switch 2 (data in by 203). Switch 1's
// switch.ecn becomes ecn_red_port entries for its two ports.
func TestTranslateFabricLine(t *testing.T) {
	conns := []generator.Connection{
		mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA0, 100, 0xB0, 200),
		mkConn(1, generator.VerbRead, "10.0.0.11", 0xA1, 300, 0xB1, 400),
		mkConn(2, generator.VerbWrite, "10.0.0.1", 0xA2, 500, 0xB2, 600),
	}
	conns[0].Flow, conns[1].Flow, conns[2].Flow = "f0", "f1", "f2"
	evs := []config.ExpandedEvent{
		{QP: 0, RelPSN: 1, Iter: 1, Type: config.EventDrop},
		{QP: 0, RelPSN: 2, Iter: 1, Type: config.EventDrop, EventParams: config.EventParams{Direction: config.DirResponse}},
		{QP: 1, RelPSN: 0, Iter: 1, Type: config.EventECN},
		{QP: 1, RelPSN: 3, Iter: 1, Type: config.EventDrop, EventParams: config.EventParams{Direction: config.DirRequest}},
		{QP: 2, RelPSN: 4, Iter: 2, Type: config.EventCorrupt},
	}
	f := lineFabric()
	f.ECN = map[uint8]*config.ECN{1: {Priorities: []int{3}, KminKB: 100, KmaxKB: 400, Pmax: 0.2}}
	var dscp [64]uint8
	dscp[26] = 3
	p, err := Translate(Intent{Events: evs, DSCPToPriority: dscp}, conns, fabricPorts(f))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(p.PortSwitch), "[{1 0} {2 2} {10 0} {11 0} {200 0} {201 1} {202 1} {203 2}]"; got != want {
		t.Errorf("PortSwitch = %s, want %s", got, want)
	}
	var fwd []string
	for _, e := range p.FabricForward {
		fwd = append(fwd, fmt.Sprintf("s%d %x>%x:%d", e.Switch, e.Src[5], e.Dst[5], e.Port))
	}
	if got, want := strings.Join(fwd, " "), "s0 1>2:200 s1 1>2:202 s2 1>2:2 s2 2>1:203 s1 2>1:201 s0 2>1:1"; got != want {
		t.Errorf("FabricForward = %s, want %s", got, want)
	}
	var cs []string
	for _, c := range p.Conns {
		cs = append(cs, fmt.Sprintf("%d:p%d/q%#x/%s/r%v", c.Index, c.Port, c.DestQP, c.DataFrom, c.Responses))
	}
	if got, want := strings.Join(cs, " "),
		"0:p1/q0xb0/requester/rfalse 1:p202/q0xa1/responder/rfalse 2:p203/q0xb2/requester/rfalse 3:p200/q0xa0/responder/rtrue 4:p201/q0xb1/requester/rfalse"; got != want {
		t.Errorf("Conns = %s, want %s", got, want)
	}
	if got, want := renderEvents(p), "p1/q0xb0/psn0x65/i1/drop p200/q0xa0/psn0x66/i1/drop p202/q0xa1/psn0x12c/i1/ecn p201/q0xb1/psn0x12f/i1/drop p203/q0xb2/psn0x1f8/i2/corrupt"; got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	// switch.ecn of switch 1: DSCP 26 (priority 3) on ports 201 and 202.
	var reds []string
	for _, e := range p.ECNRedPort {
		reds = append(reds, fmt.Sprintf("p%d/d%d/%d-%d/%#x", e.Port, e.DSCP, e.KminCells, e.KmaxCells, e.RandMask))
	}
	if got, want := strings.Join(reds, " "), "p201/d26/1280-5120/0x3fff p202/d26/1280-5120/0x3fff"; got != want {
		t.Errorf("ECNRedPort = %s, want %s", got, want)
	}
	// The one-switch entries stay: l2_forward, ARP, mirroring.
	if len(p.Forward) != 4 || len(p.ARP) != 3 || len(p.ECNRed) != 0 {
		t.Errorf("Forward %v ARP %v ECNRed %v; want 4, 3, 0 entries", p.Forward, p.ARP, p.ECNRed)
	}
}

// TestTranslateWithoutFabric: without a fabric the plan has no entry of
// the fabric's tables and its other entries are those of the same
// translation with a fabric whose observed switch is each requester's
// port's: a fabric moves entries, it does not change the rest.
func TestTranslateWithoutFabric(t *testing.T) {
	conns := []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA0, 100, 0xB0, 200)}
	evs := []config.ExpandedEvent{{QP: 0, RelPSN: 1, Iter: 1, Type: config.EventDrop}}
	p, err := Translate(Intent{Events: evs}, conns, testPorts)
	if err != nil {
		t.Fatal(err)
	}
	if p.PortSwitch != nil || p.FabricForward != nil || p.ECNRedPort != nil {
		t.Errorf("fabric entries without a fabric: %v %v %v", p.PortSwitch, p.FabricForward, p.ECNRedPort)
	}
	pf, err := Translate(Intent{Events: evs}, conns, fabricPorts(lineFabric()))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.Conns, p.Events, p.Forward, p.ARP, p.WRR, p.Sessions) != fmt.Sprint(pf.Conns, pf.Events, pf.Forward, pf.ARP, pf.WRR, pf.Sessions) {
		t.Errorf("plans differ beyond the fabric's entries:\n%v\n%v", p, pf)
	}
}

// TestTranslateFabricErrors: a fabric that does not fit the hosts or the
// connections is an error naming what is wrong.
func TestTranslateFabricErrors(t *testing.T) {
	conns := []generator.Connection{mkConn(0, generator.VerbWrite, "10.0.0.1", 0xA0, 100, 0xB0, 200)}
	conns[0].Flow = "f0"
	tests := []struct {
		name string
		edit func(f *Fabric)
		want string
	}{
		{"host port in no switch", func(f *Fabric) { delete(f.PortSwitch, 2) }, "host responder's port 2 is in no switch"},
		{"switch id out of range", func(f *Fabric) { f.PortSwitch[203] = 32 }, "port 203 in switch 32"},
		{"route not from the host's port", func(f *Fabric) { f.Routes[0].Hops[0].In = 10 }, "the route requester → responder must enter by port 1"},
		{"hop through a port of another switch", func(f *Fabric) { f.Routes[0].Hops[1].Out = 203 }, "leaves switch 1 by port 203"},
		{"a switch twice", func(f *Fabric) {
			f.Routes[0].Hops = []Hop{{0, 1, 200}, {1, 201, 202}, {1, 201, 202}, {2, 203, 2}}
		}, "passes switch 1 twice"},
		{"observed switch off the route", func(f *Fabric) { f.Observed["f0"] = 5 }, "switch 5, where the connection is observed, is not on the route from requester to responder"},
		{"no route", func(f *Fabric) { f.Routes = f.Routes[1:] }, "no route from host 0 to host 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := lineFabric()
			tc.edit(f)
			_, err := Translate(Intent{}, conns, fabricPorts(f))
			if err == nil || !errors.Is(err, ErrFabric) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Translate() = %v, want an ErrFabric containing %q", err, tc.want)
			}
		})
	}
}
