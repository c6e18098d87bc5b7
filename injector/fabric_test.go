package injector_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// P4Info IDs of the fabric's tables and actions (p4src/lumina.p4info.txtpb).
const (
	tPortSwitch    = 0x02000009 // Ingress.port_switch (ingress_port)
	tFabricForward = 0x0200000a // Ingress.fabric_forward (switch_id, src MAC, dst MAC)
	tECNRedPort    = 0x0200000b // Egress.ecn_red_port (egress_port, dscp)
	aSetSwitch     = 0x01000010 // Ingress.set_switch(bit<5> id)
	aSetRed        = 0x0100000f // Egress.set_red(kmin, kmax, mask)
)

// fabricRig is one Switch partitioned into n logical switches in a line,
// switch k linked to switch k+1 by a sim link between port 200+2k (on k)
// and 201+2k (on k+1), as the run driver wires a fabric: the requester on
// port 1 of switch 0, the responder on port 2 of switch n−1, the dumper on
// port 10 of switch 0. Routes are installed both ways between the two
// hosts; l2_forward keeps the one-switch entries (programForwarding).
type fabricRig struct {
	*pfcRig
	n     int
	links []*sim.Endpoint // the sim endpoints attached to ports 200, 201, 202...
}

func newFabricRig(t *testing.T, n int, pfc *injector.PFCConfig) *fabricRig {
	t.Helper()
	loop := sim.NewEventLoop()
	net := sim.NewNetwork(loop)
	r := &fabricRig{pfcRig: &pfcRig{t: t, loop: loop, sw: injector.New(loop, injector.Config{Seed: 1, PFC: pfc}),
		req: &tport{loop: loop, name: "req"}, rsp: &tport{loop: loop, name: "rsp"}, dmp: &tport{loop: loop, name: "dmp"}}, n: n}
	for id, p := range map[uint32]sim.Port{reqPort: r.req, rspPort: r.rsp, dmpPort: r.dmp} {
		if err := r.sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	for l := range n - 1 {
		a, b := net.NewLink(sim.LinkConfig{})
		r.links = append(r.links, a, b)
		if err := r.sw.AddPort(uint32(200+2*l), a); err != nil {
			t.Fatal(err)
		}
		if err := r.sw.AddPort(uint32(201+2*l), b); err != nil {
			t.Fatal(err)
		}
	}
	r.c = servePrimary(t, r.sw)
	programForwarding(t, r.c)
	var ups []*p4v1.Update
	portSwitch := map[uint32]int{reqPort: 0, dmpPort: 0, rspPort: n - 1}
	for l := range n - 1 {
		portSwitch[uint32(200+2*l)], portSwitch[uint32(201+2*l)] = l, l+1
	}
	for port, sw := range portSwitch {
		ups = append(ups, insertEntry(tPortSwitch, [][]byte{be16(port)}, aSetSwitch, []byte{byte(sw)}))
	}
	for k := range n {
		toRsp, toReq := rspPort, reqPort
		if k < n-1 {
			toRsp = uint32(200 + 2*k)
		}
		if k > 0 {
			toReq = uint32(199 + 2*k)
		}
		ups = append(ups,
			insertEntry(tFabricForward, [][]byte{{byte(k)}, pfcReqMAC[:], pfcRspMAC[:]}, aForward, be16(toRsp)),
			insertEntry(tFabricForward, [][]byte{{byte(k)}, pfcRspMAC[:], pfcReqMAC[:]}, aForward, be16(toReq)))
	}
	if err := r.c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, ups...); err != nil {
		t.Fatal(err)
	}
	return r
}

func be16(v uint32) []byte { return []byte{byte(v >> 8), byte(v)} }

// insertEntry is the INSERT of an exact-match entry (fields 1.. in order)
// with a direct action of one or more parameters (1.. in order).
func insertEntry(table uint32, key [][]byte, action uint32, params ...[]byte) *p4v1.Update {
	te := &p4v1.TableEntry{TableId: table}
	for i, k := range key {
		te.Match = append(te.Match, &p4v1.FieldMatch{FieldId: uint32(i + 1), FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: k}}})
	}
	a := &p4v1.Action{ActionId: action}
	for i, p := range params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
}

// fabricLine describes one dumper copy with its switch: "sS #seq @ts
// roce psn=N" or "sS #seq @ts rx|tx port=P <PFC text>".
func fabricLine(t *testing.T, f []byte) string {
	t.Helper()
	var m roce.MACMirror
	if roce.ParseMACMirror(f, &m) == nil {
		var c roce.MACControlFrame
		if err := roce.ParseMACControl(m.Frame, &c); err != nil {
			t.Fatal(err)
		}
		dir := "rx"
		if m.Sent {
			dir = "tx"
		}
		return fmt.Sprintf("s%d #%d @%d %s port=%d %v", m.Switch, m.Seq, m.TimestampNs, dir, m.Port, &c)
	}
	var p roce.Packet
	if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f, 0, &p); err != nil {
		t.Fatal(err)
	}
	mm := p.Mirror()
	return fmt.Sprintf("s%d #%d @%d roce psn=%d", mm.Switch, mm.Seq, mm.TimestampNs, uint32(p.BTH.PSN()))
}

func (r *fabricRig) lines() []string {
	var out []string
	for _, f := range r.dmp.sent {
		out = append(out, fabricLine(r.t, f.b))
	}
	return out
}

// checkPerSwitch checks the copies' sequence numbers count from 1 per
// switch and their stamps never decrease in each switch's sequence.
func (r *fabricRig) checkPerSwitch() {
	r.t.Helper()
	next, last := map[uint8]uint64{}, map[uint8]uint64{}
	for _, f := range r.dmp.sent {
		var m roce.MirrorMeta
		var mm roce.MACMirror
		if roce.ParseMACMirror(f.b, &mm) == nil {
			m = mm.MirrorMeta
		} else {
			var p roce.Packet
			if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f.b, 0, &p); err != nil {
				r.t.Fatal(err)
			}
			m = p.Mirror()
		}
		if m.Seq != next[m.Switch]+1 {
			r.t.Errorf("switch %d: copy #%d follows #%d", m.Switch, m.Seq, next[m.Switch])
		}
		if m.TimestampNs < last[m.Switch] {
			r.t.Errorf("switch %d: copy #%d stamped %d after a copy stamped %d", m.Switch, m.Seq, m.TimestampNs, last[m.Switch])
		}
		next[m.Switch], last[m.Switch] = m.Seq, m.TimestampNs
	}
}

// TestFabricForwardAndMirror: frames from the requester (switch 0) to the
// responder (switch n−1) cross the links by fabric_forward (not by
// l2_forward's entry for the responder's MAC, which would send them to
// port 2 at once), each switch mirrors each frame once with its own
// switch id and sequence (from 1) and its own arrival stamp (600 ns per
// hop: 100 ns on the 100 Gb/s wire plus 500 ns of delay); the way back
// uses the reverse route; a frame whose (switch, src, dst) has no
// fabric_forward entry falls through to l2_forward.
func TestFabricForwardAndMirror(t *testing.T) {
	stranger := [6]byte{2, 0, 0, 0, 0, 9}
	tests := []struct {
		n                int
		wantCopies       []string
		wantRsp, wantReq []int64
	}{
		{n: 2, wantCopies: []string{
			"s0 #1 @0 roce psn=0", "s1 #1 @600 roce psn=0",
			"s0 #2 @1000 roce psn=1", "s1 #2 @1600 roce psn=1",
			"s0 #3 @2000 roce psn=2", "s1 #3 @2600 roce psn=2",
			"s1 #4 @5000 roce psn=7", "s0 #4 @5600 roce psn=7",
			"s0 #5 @8000 roce psn=9",
		}, wantRsp: []int64{600, 1600, 2600, 8000}, wantReq: []int64{5600}},
		{n: 3, wantCopies: []string{
			"s0 #1 @0 roce psn=0", "s1 #1 @600 roce psn=0",
			"s0 #2 @1000 roce psn=1", "s2 #1 @1200 roce psn=0", "s1 #2 @1600 roce psn=1",
			"s0 #3 @2000 roce psn=2", "s2 #2 @2200 roce psn=1", "s1 #3 @2600 roce psn=2", "s2 #3 @3200 roce psn=2",
			"s2 #4 @5000 roce psn=7", "s1 #4 @5600 roce psn=7", "s0 #4 @6200 roce psn=7",
			"s0 #5 @8000 roce psn=9",
		}, wantRsp: []int64{1200, 2200, 3200, 8000}, wantReq: []int64{6200}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d switches", tc.n), func(t *testing.T) {
			r := newFabricRig(t, tc.n, nil)
			for i := range 3 {
				r.req.deliver(int64(1000*i), writeFrame(t, roce.PSN(i), 0))
			}
			r.rsp.deliver(5000, roceFrame(t, pfcRspMAC, pfcReqMAC, "10.0.0.2", "10.0.0.1", 7, 0))
			r.req.deliver(8000, roceFrame(t, stranger, pfcRspMAC, "10.0.0.9", "10.0.0.2", 9, 0))
			r.loop.RunUntil(100_000)
			diffLines(t, "copies", r.lines(), tc.wantCopies)
			if got := times(r.rsp.sent); fmt.Sprint(got) != fmt.Sprint(tc.wantRsp) {
				t.Errorf("frames to the responder at %v, want %v", got, tc.wantRsp)
			}
			if got := times(r.req.sent); fmt.Sprint(got) != fmt.Sprint(tc.wantReq) {
				t.Errorf("frames to the requester at %v, want %v", got, tc.wantReq)
			}
			r.checkPerSwitch()
		})
	}
}

// TestFabricOneSwitchUnchanged: port_switch entries naming switch 0 only
// (or none) change nothing: the copies' sequence field is the one-switch
// field (source MAC 00:00:00:00:00:01).
func TestFabricOneSwitchUnchanged(t *testing.T) {
	r := newRig(t, injector.Config{Seed: 1})
	r.req.deliver(0, writeFrame(t, 0, 0))
	r.loop.RunUntil(10_000)
	if len(r.dmp.sent) != 1 {
		t.Fatalf("%d copies, want 1", len(r.dmp.sent))
	}
	if got, want := fmt.Sprintf("% x", r.dmp.sent[0].b[6:12]), "00 00 00 00 00 01"; got != want {
		t.Errorf("copy source MAC (sequence field) = %s, want %s", got, want)
	}
}

// TestFabricPauseOnLinkPort: a PFC frame arriving on switch 0's link port
// (200) from the link pauses that port's lossless egress queue for
// exactly its quanta (1000 at 100 Gb/s: 5120 ns, from its arrival at
// 505 ns: 5 ns on the wire, 500 of delay) while a lossy frame passes;
// the paused frames leave at 5625 and reach the responder 600 ns later,
// one wire time apart. The received PFC frame's copy names switch 0.
func TestFabricPauseOnLinkPort(t *testing.T) {
	r := newFabricRig(t, 2, pfcTestConfig())
	peer := r.links[1] // the endpoint attached to port 201 (switch 1)
	r.loop.AfterFunc(0, func() { peer.Send(pfcFrame(switchMAC, 3, 1000)) })
	r.req.deliver(1000, writeFrame(t, 0, dscpRoCE))
	r.req.deliver(1100, writeFrame(t, 1, dscpRoCE))
	r.req.deliver(1200, writeFrame(t, 2, 0)) // lossy: not paused
	r.loop.RunUntil(100_000)
	if got, want := times(r.rsp.sent), []int64{1800, 6225, 6325}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("frames to the responder at %v, want %v", got, want)
	}
	if got, want := psns(t, r.rsp.sent), []uint32{2, 0, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PSNs to the responder = %v, want %v", got, want)
	}
	if c := r.sw.PFCCounters()[200][3]; c.RxPause != 1 || c.RxPauseNs != 5120 {
		t.Errorf("counters(200, 3) = %+v, want RxPause 1, RxPauseNs 5120", c)
	}
	if got, want := r.lines()[0], "s0 #1 @505 rx port=200 PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=1000"; got != want {
		t.Errorf("first copy %q, want %q", got, want)
	}
	r.checkPerSwitch()
}

// TestFabricXOFFToPeerSwitch: the responder pauses switch 1's port toward
// it; the requester's 20 back-to-back frames (100 ns apart) cross the
// link, and when switch 1's ingress accounting on its link port 201
// passes XOFF (3750 bytes: the 4th frame, arriving at 900 ns) switch 1
// sends an XOFF out of port 201; it reaches switch 0's port 200 at 1405
// ns and stops that queue, so only the frames that left before (15, the
// last at 1400) are at switch 1, the other 5 wait at switch 0, whose
// ingress accounting on the requester's port passes XOFF in turn with the
// 4th of them (1800 ns): the pause spreads back hop by hop. When the
// responder resumes, switch 1 drains, sends an XON, and every frame
// arrives in order with no drop.
func TestFabricXOFFToPeerSwitch(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.XOFFBytes = 3750
	r := newFabricRig(t, 2, cfg)
	r.rsp.deliver(0, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	for i := range 20 {
		r.req.deliver(int64(100*i), writeFrame(t, roce.PSN(i), dscpRoCE))
	}
	r.loop.RunUntil(3000)
	perSwitch := map[string]int{}
	var pfc []string
	for _, l := range r.lines() {
		if strings.Contains(l, " rx ") || strings.Contains(l, " tx ") {
			pfc = append(pfc, l)
			continue
		}
		perSwitch[l[:2]]++
	}
	if perSwitch["s0"] != 20 || perSwitch["s1"] != 15 {
		t.Errorf("RoCE copies per switch = %v, want s0 20, s1 15", perSwitch)
	}
	diffLines(t, "PFC copies", pfc, []string{
		"s1 #1 @0 rx port=2 PFC 02:00:00:00:00:02 > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"s1 #6 @900 tx port=201 PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"s0 #16 @1405 rx port=200 PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"s0 #21 @1800 tx port=1 PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
	})
	c := r.sw.PFCCounters()
	if c[201][3].XOFF != 1 || c[201][3].TxPause != 1 || c[200][3].RxPause != 1 {
		t.Errorf("counters: (201, 3) XOFF %d TxPause %d, (200, 3) RxPause %d; want 1, 1, 1", c[201][3].XOFF, c[201][3].TxPause, c[200][3].RxPause)
	}
	r.rsp.deliver(4000, pfcFrame(pfcRspMAC, 3, 0)) // XON
	r.loop.RunUntil(100_000)
	want := make([]uint32, 20)
	for i := range want {
		want[i] = uint32(i)
	}
	if got := psns(t, r.rsp.sent); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PSNs to the responder = %v, want %v", got, want)
	}
	c = r.sw.PFCCounters()
	if c[201][3].XON != 1 || c[200][3].RxPause != 2 || c[201][3].LosslessDrops != 0 {
		t.Errorf("counters: (201, 3) XON %d LosslessDrops %d, (200, 3) RxPause %d; want 1, 0, 2", c[201][3].XON, c[201][3].LosslessDrops, c[200][3].RxPause)
	}
	r.checkPerSwitch()
}

// TestWatchdogPorts: PFCConfig.WatchdogPorts overrides Watchdog per port
// (a nil entry turns it off): continuous pauses from the responder make a
// storm on its port only when its port's watchdog is on.
func TestWatchdogPorts(t *testing.T) {
	wd := &injector.PFCWatchdog{Detection: time.Millisecond, Restoration: 2 * time.Millisecond}
	tests := []struct {
		name   string
		global *injector.PFCWatchdog
		ports  map[uint32]*injector.PFCWatchdog
		storms uint64
	}{
		{"global only", wd, nil, 1},
		{"global, port off", wd, map[uint32]*injector.PFCWatchdog{rspPort: nil}, 0},
		{"none, port on", nil, map[uint32]*injector.PFCWatchdog{rspPort: wd}, 1},
		{"none, other port on", nil, map[uint32]*injector.PFCWatchdog{reqPort: wd}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pfcTestConfig()
			cfg.Watchdog, cfg.WatchdogPorts = tc.global, tc.ports
			r := newPFCRig(t, cfg)
			for at := int64(0); at < 3_000_000; at += 100_000 {
				r.rsp.deliver(at, pfcFrame(pfcRspMAC, 3, 0xFFFF))
			}
			r.loop.RunUntil(10_000_000)
			if got := r.sw.PFCCounters()[rspPort][3].Storms; got != tc.storms {
				t.Errorf("Storms(responder, 3) = %d, want %d", got, tc.storms)
			}
		})
	}
}

// TestECNRedPort: an Egress.ecn_red_port entry (egress port, DSCP) takes
// precedence over ecn_red's entry for the DSCP on that port only: with
// ecn_red never marking (kmin 1000 cells) and ecn_red_port marking every
// frame above 0 cells on the responder's port, the second and third
// frames of a paused queue to the responder are marked, a frame to the
// requester (another port, ecn_red's thresholds) is not.
func TestECNRedPort(t *testing.T) {
	r := ecnRig(t, pfcTestConfig())
	r.redEntry(dscpRoCE, 1000, 2000, 127)
	if err := r.c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, insertEntry(tECNRedPort, [][]byte{be16(rspPort), {dscpRoCE}}, aSetRed,
		[]byte{0, 0, 0}, []byte{0, 0, 0}, []byte{0, 0, 0, 0})); err != nil {
		t.Fatal(err)
	}
	r.req.deliver(100, pfcFrame(pfcReqMAC, 3, 0xFFFF)) // the requester's queue fills too
	for i := range 3 {
		r.req.deliver(int64(1000+10*i), sizedFrame(t, roce.PSN(i), 1250, dscpRoCE, ect0))
	}
	for i, psn := range []roce.PSN{7, 8} {
		f := sizedFrame(t, psn, 1250, dscpRoCE, ect0)
		copy(f[0:6], pfcReqMAC[:])
		copy(f[6:12], pfcRspMAC[:])
		r.rsp.deliver(int64(1050+10*i), f)
	}
	r.rsp.deliver(10_000, pfcFrame(pfcRspMAC, 3, 0))
	r.req.deliver(10_000, pfcFrame(pfcReqMAC, 3, 0))
	r.loop.RunUntil(100_000)
	var got []string
	for _, c := range r.roceCopies() {
		got = append(got, fmt.Sprintf("%d:%d", c.psn, c.ecn))
	}
	if want := "0:2 1:3 2:3 7:2 8:2"; fmt.Sprint(got) != "["+want+"]" {
		t.Errorf("copies (psn:ecn) = %v, want %s", got, want)
	}
}

// TestFabricStampsPerSwitch: the stamp raising that keeps stamps from
// decreasing in sequence order is per logical switch. On a real-time
// testbed a frame can be handled after another that arrived later: here
// the responder's frame (switch 1) arrives at 900 ns but is handled at
// 1100, after the requester's (switch 0) that arrived and was handled at
// 1000. Its copy keeps its arrival, 900: switch 1's sequence has no
// earlier copy. The same frame on switch 0 is raised to 1000.
func TestFabricStampsPerSwitch(t *testing.T) {
	tests := []struct {
		name    string
		rspSw   byte
		wantRsp string
	}{
		{"other switch", 1, "s1 #1 @900 roce psn=7"},
		{"same switch", 0, "s0 #2 @1000 roce psn=7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loop := sim.NewEventLoop()
			sw := injector.New(loop, injector.Config{Seed: 1})
			req, dmp := &tport{loop: loop, name: "req"}, &tport{loop: loop, name: "dmp"}
			rsp := &lateTport{tport: &tport{loop: loop, name: "rsp"}}
			for id, p := range map[uint32]sim.Port{reqPort: req, rspPort: rsp, dmpPort: dmp} {
				if err := sw.AddPort(id, p); err != nil {
					t.Fatal(err)
				}
			}
			c := servePrimary(t, sw)
			programForwarding(t, c)
			if err := c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, insertEntry(tPortSwitch, [][]byte{be16(rspPort)}, aSetSwitch, []byte{tc.rspSw})); err != nil {
				t.Fatal(err)
			}
			req.deliver(1000, writeFrame(t, 0, 0))
			rsp.deliverLate(900, 1100, roceFrame(t, pfcRspMAC, pfcReqMAC, "10.0.0.2", "10.0.0.1", 7, 0))
			loop.RunUntil(10_000)
			var got []string
			for _, f := range dmp.sent {
				got = append(got, fabricLine(t, f.b))
			}
			diffLines(t, "copies", got, []string{"s0 #1 @1000 roce psn=0", tc.wantRsp})
		})
	}
}

// TestFabricProxyARP: proxy ARP answers on the port the request came in
// by, whatever its logical switch: the responder (port 2, switch 2) asks
// for the requester's address (a host on switch 0) and gets the reply
// from port 2; nothing crosses the links.
func TestFabricProxyARP(t *testing.T) {
	r := newFabricRig(t, 3, nil)
	const tARP, aARPReply = 0x02000002, 0x01000004
	if err := r.c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, insertEntry(tARP, [][]byte{{10, 0, 0, 1}}, aARPReply, pfcReqMAC[:])); err != nil {
		t.Fatal(err)
	}
	req := make([]byte, 42)
	copy(req[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(req[6:12], pfcRspMAC[:])
	copy(req[12:], []byte{0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1})
	copy(req[22:28], pfcRspMAC[:])
	copy(req[28:32], []byte{10, 0, 0, 2})
	copy(req[38:42], []byte{10, 0, 0, 1})
	r.rsp.deliver(100, req)
	r.loop.RunUntil(10_000)
	if len(r.rsp.sent) != 1 || len(r.req.sent) != 0 {
		t.Fatalf("frames sent: %d to the responder, %d to the requester; want 1, 0", len(r.rsp.sent), len(r.req.sent))
	}
	got := r.rsp.sent[0].b
	if fmt.Sprintf("% x", got[6:12]) != fmt.Sprintf("% x", pfcReqMAC[:]) || got[21] != 2 ||
		fmt.Sprintf("% x", got[22:32]) != fmt.Sprintf("% x", append(pfcReqMAC[:], 10, 0, 0, 1)) {
		t.Errorf("reply % x, want an ARP reply from %x for 10.0.0.1", got, pfcReqMAC)
	}
}
