package injector_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// Ports of the PFC rigs: the requester, the responder and a dumper.
const (
	reqPort uint32 = 1
	rspPort uint32 = 2
	dmpPort uint32 = 10
)

var (
	pfcReqMAC = [6]byte{2, 0, 0, 0, 0, 1}
	pfcRspMAC = [6]byte{2, 0, 0, 0, 0, 2}
	switchMAC = [6]byte{2, 0, 0, 0, 0, 0xee}
)

// sentFrame is a frame a port sent, with the loop time it sent it.
type sentFrame struct {
	at int64
	b  []byte
}

// tport records what the switch sends, with times, and lets the test
// deliver frames.
type tport struct {
	loop *sim.EventLoop
	name string
	recv func([]byte)
	sent []sentFrame
}

func (p *tport) Send(f []byte) {
	p.sent = append(p.sent, sentFrame{p.loop.Now(), append([]byte(nil), f...)})
}
func (p *tport) SetReceiver(fn func([]byte)) { p.recv = fn }
func (p *tport) Name() string                { return p.name }

// deliver makes frame arrive on p at loop time at.
func (p *tport) deliver(at int64, frame []byte) {
	p.loop.AfterFunc(time.Duration(at-p.loop.Now()), func() { p.recv(frame) })
}

// pfcRig is a switch with PFC on fake ports, programmed over P4Runtime to
// forward between the requester and the responder and to mirror to the
// dumper.
type pfcRig struct {
	t             *testing.T
	loop          *sim.EventLoop
	sw            *injector.Switch
	req, rsp, dmp *tport
	c             *p4c
}

func newPFCRig(t *testing.T, cfg *injector.PFCConfig) *pfcRig {
	t.Helper()
	loop := sim.NewEventLoop()
	r := &pfcRig{t: t, loop: loop, sw: injector.New(loop, injector.Config{Seed: 1, PFC: cfg}),
		req: &tport{loop: loop, name: "req"}, rsp: &tport{loop: loop, name: "rsp"}, dmp: &tport{loop: loop, name: "dmp"}}
	for id, p := range map[uint32]sim.Port{reqPort: r.req, rspPort: r.rsp, dmpPort: r.dmp} {
		if err := r.sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	r.c = servePrimary(t, r.sw)
	programForwarding(t, r.c)
	return r
}

// programForwarding installs the requester and responder MACs and
// mirroring of every copy to the dumper port.
func programForwarding(t *testing.T, c *p4c) {
	t.Helper()
	exact := func(v []byte) []*p4v1.FieldMatch {
		return []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}}
	}
	mirrorSelect := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: 0x02000006, Match: exact([]byte{0}),
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x0100000a,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{1}}}}}}}}}}
	session := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
		PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
			CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: 1, Replicas: []*p4v1.Replica{{EgressPort: dmpPort, Instance: 1}}}}}}}}
	if err := c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR,
		fwdEntry(pfcReqMAC[:], []byte{byte(reqPort)}), fwdEntry(pfcRspMAC[:], []byte{byte(rspPort)}), mirrorSelect, session); err != nil {
		t.Fatal(err)
	}
}

// trackConn installs conn_lookup (requester port, QP 0x222) → connection
// 0, message-scope ITER.
func (r *pfcRig) trackConn() {
	r.t.Helper()
	te := &p4v1.TableEntry{TableId: 0x02000003,
		Match: []*p4v1.FieldMatch{
			{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{byte(reqPort)}}}},
			{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{0x02, 0x22}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000005,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{0}}, {ParamId: 2, Value: []byte{0}}, {ParamId: 3, Value: []byte{0}}}}}}}
	if err := r.c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, &p4v1.Update{Type: p4v1.Update_INSERT,
		Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}); err != nil {
		r.t.Fatal(err)
	}
}

// dscpRoCE is the DSCP the tests map to priority 3.
const dscpRoCE = 26

// pfcTestConfig: priority 3 lossless, DSCP 26 → 3, 100 Gb/s ports.
func pfcTestConfig() *injector.PFCConfig {
	c := &injector.PFCConfig{Lossless: 1 << 3, MAC: switchMAC}
	c.DSCPToPriority[dscpRoCE] = 3
	return c
}

// writeFrame is a 1250-byte RC WRITE ONLY from the requester to the
// responder (100 ns at 100 Gb/s) with DSCP dscp.
func writeFrame(t *testing.T, psn roce.PSN, dscp uint8) []byte {
	t.Helper()
	return roceFrame(t, pfcReqMAC, pfcRspMAC, "10.0.0.1", "10.0.0.2", psn, dscp)
}

func roceFrame(t *testing.T, src, dst [6]byte, sip, dip string, psn roce.PSN, dscp uint8) []byte {
	t.Helper()
	spec := roce.FrameSpec{SrcMAC: src, DstMAC: dst, SrcIP: netip.MustParseAddr(sip), DstIP: netip.MustParseAddr(dip),
		TOS: dscp << 2, Opcode: roce.RCWriteOnly, DestQP: 0x222, PSN: psn, RETH: roce.RETHFields{VA: 0x1000, RKey: 1, Length: 1176},
		Payload: make([]byte, 1176)}
	b, err := spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 1250 {
		t.Fatalf("frame length %d, want 1250", len(b))
	}
	return b
}

// pfcFrame is a PFC frame from src enabling prio with quanta.
func pfcFrame(src [6]byte, prio int, quanta uint16) []byte {
	var q [roce.PFCPriorities]uint16
	q[prio] = quanta
	return roce.BuildPFC(nil, src, 1<<prio, q)
}

func times(fs []sentFrame) []int64 {
	var out []int64
	for _, f := range fs {
		out = append(out, f.at)
	}
	return out
}

func psns(t *testing.T, fs []sentFrame) []uint32 {
	t.Helper()
	var out []uint32
	for _, f := range fs {
		var p roce.Packet
		if err := (&roce.Parser{}).Parse(f.b, 0, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, uint32(p.BTH.PSN()))
	}
	return out
}

// mirrorLine describes one dumper copy: "seq@ts kind", kind "roce psn=N
// ev=E" or "rx|tx port=P ev=E <PFC text>".
func mirrorLine(t *testing.T, f []byte) string {
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
		return fmt.Sprintf("%d@%d %s port=%d ev=%v %v", m.Seq, m.TimestampNs, dir, m.Port, m.Event, &c)
	}
	var p roce.Packet
	if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f, 0, &p); err != nil {
		t.Fatal(err)
	}
	mm := p.Mirror()
	return fmt.Sprintf("%d@%d roce psn=%d ev=%v", mm.Seq, mm.TimestampNs, uint32(p.BTH.PSN()), mm.Event)
}

func (r *pfcRig) mirrorLines() []string {
	var out []string
	for _, f := range r.dmp.sent {
		out = append(out, mirrorLine(r.t, f.b))
	}
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// TestPFCPauseHoldsEgress: a PFC frame received on the responder port
// pauses the switch's lossless queue toward the responder for exactly
// quanta × 512 bit times (1000 quanta at 100 Gb/s = 5120 ns); a lossy
// priority keeps flowing; XON (quanta 0) resumes at once; PAUSE pauses
// every priority; PFC for a lossy priority is counted, not honoured.
func TestPFCPauseHoldsEgress(t *testing.T) {
	tests := []struct {
		name     string
		pauses   []sentFrame // frames from the responder
		lossy    bool        // also send a priority-0 frame at 2000
		wantRsp  []int64     // departures toward the responder
		wantPSNs []uint32
		wantNs   int64 // RxPauseNs of (responder, 3)
	}{
		{"quanta", []sentFrame{{1000, pfcFrame(pfcRspMAC, 3, 1000)}}, true,
			[]int64{2000, 6120, 6220, 6320}, []uint32{9, 0, 1, 2}, 5120},
		{"xon", []sentFrame{{1000, pfcFrame(pfcRspMAC, 3, 0xFFFF)}, {3000, pfcFrame(pfcRspMAC, 3, 0)}}, false,
			[]int64{3000, 3100, 3200}, []uint32{0, 1, 2}, 2000},
		{"replace", []sentFrame{{1000, pfcFrame(pfcRspMAC, 3, 0xFFFF)}, {1500, pfcFrame(pfcRspMAC, 3, 100)}}, false,
			[]int64{2012, 2112, 2212}, []uint32{0, 1, 2}, 1012}, // 100 quanta = 512 ns from 1500
		{"pause", []sentFrame{{1000, roce.BuildPause(nil, pfcRspMAC, 1000)}}, true,
			[]int64{6120, 6220, 6320, 6420}, []uint32{0, 1, 2, 9}, 5120},
		{"lossy-priority", []sentFrame{{1000, pfcFrame(pfcRspMAC, 0, 1000)}}, true,
			[]int64{2000, 2100, 2200, 2300}, []uint32{0, 1, 2, 9}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newPFCRig(t, pfcTestConfig())
			for _, p := range tt.pauses {
				r.rsp.deliver(p.at, p.b)
			}
			for psn := range 3 {
				r.req.deliver(2000, writeFrame(t, roce.PSN(psn), dscpRoCE))
			}
			if tt.lossy {
				r.req.deliver(2000, writeFrame(t, 9, 0))
			}
			r.loop.RunUntil(1_000_000)
			if got := times(r.rsp.sent); fmt.Sprint(got) != fmt.Sprint(tt.wantRsp) {
				t.Errorf("departure times toward the responder = %v, want %v", got, tt.wantRsp)
			}
			if got := psns(t, r.rsp.sent); fmt.Sprint(got) != fmt.Sprint(tt.wantPSNs) {
				t.Errorf("PSNs toward the responder = %v, want %v", got, tt.wantPSNs)
			}
			c := r.sw.PFCCounters()[rspPort][3]
			if c.RxPauseNs != tt.wantNs || c.RxPause != uint64(len(tt.pauses)) && tt.name != "lossy-priority" {
				t.Errorf("counters(responder, 3) = %+v, want RxPauseNs %d, RxPause %d", c, tt.wantNs, len(tt.pauses))
			}
			if len(r.req.sent) != 0 {
				t.Errorf("switch sent %d frames to the requester, want none", len(r.req.sent))
			}
		})
	}
}

// TestPFCXOFFXON: with the responder paused, frames from the requester
// fill its ingress accounting; the switch sends XOFF to the requester the
// moment the queued bytes exceed XOFFBytes, refreshes it every half of
// 65535 quanta (167770 ns), and sends XON when they fall to XONBytes.
// Every PFC frame it receives and sends is mirrored in the same sequence as
// the RoCE copies.
func TestPFCXOFFXON(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.XOFFBytes, cfg.XONBytes, cfg.HeadroomBytes = 3750, 1250, 10000 // 3 frames, 1 frame
	r := newPFCRig(t, cfg)
	r.rsp.deliver(0, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	for i := range 4 {
		r.req.deliver(int64(100*(i+1)), writeFrame(t, roce.PSN(i), dscpRoCE))
	}
	r.rsp.deliver(200_000, pfcFrame(pfcRspMAC, 3, 0))
	r.loop.RunUntil(1_000_000)

	xoff, xon := pfcFrame(switchMAC, 3, 0xFFFF), pfcFrame(switchMAC, 3, 0)
	wantReq := []sentFrame{{400, xoff}, {168_170, xoff}, {200_200, xon}}
	if len(r.req.sent) != len(wantReq) {
		t.Fatalf("switch sent %d frames to the requester (at %v), want %d", len(r.req.sent), times(r.req.sent), len(wantReq))
	}
	for i, w := range wantReq {
		if g := r.req.sent[i]; g.at != w.at || !bytes.Equal(g.b, w.b) {
			t.Errorf("frame %d to the requester at %d: % x; want at %d: % x", i, g.at, g.b, w.at, w.b)
		}
	}
	if got, want := times(r.rsp.sent), []int64{200_000, 200_100, 200_200, 200_300}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("departures toward the responder = %v, want %v", got, want)
	}
	diffLines(t, "mirror copies", r.mirrorLines(), []string{
		"1@0 rx port=2 ev=none PFC 02:00:00:00:00:02 > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"2@100 roce psn=0 ev=none",
		"3@200 roce psn=1 ev=none",
		"4@300 roce psn=2 ev=none",
		"5@400 roce psn=3 ev=none",
		"6@400 tx port=1 ev=none PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"7@168170 tx port=1 ev=none PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"8@200000 rx port=2 ev=none PFC 02:00:00:00:00:02 > 01:80:c2:00:00:01 enable=0x08 p3=0(xon)",
		"9@200200 tx port=1 ev=none PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=0(xon)",
	})
	cs := r.sw.PFCCounters()
	if c := cs[reqPort][3]; c.XOFF != 1 || c.XON != 1 || c.TxPause != 3 || c.LosslessDrops != 0 {
		t.Errorf("counters(requester, 3) = %+v, want XOFF 1, XON 1, TxPause 3, no drops", c)
	}
	if c := cs[rspPort][3]; c.RxPause != 2 || c.RxPauseNs != 200_000 {
		t.Errorf("counters(responder, 3) = %+v, want RxPause 2, RxPauseNs 200000", c)
	}
	if st := r.sw.Stats(); st.Mirrored != 9 {
		t.Errorf("Stats().Mirrored = %d, want 9", st.Mirrored)
	}
	rx, err := r.c.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: 301989889,
		Index: &p4v1.Index{Index: int64(rspPort)}}}})
	if err != nil || len(rx) != 1 || rx[0].GetCounterEntry().GetData().GetPacketCount() != 0 {
		t.Errorf("rx_roce[responder] = %v, %v; want 0 packets (PFC frames are not RoCE)", rx, err)
	}
	mirrored, err := r.c.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: 301989891,
		Index: &p4v1.Index{Index: 0}}}})
	if err != nil || len(mirrored) != 1 || mirrored[0].GetCounterEntry().GetData().GetPacketCount() != 9 {
		t.Errorf("mirrored[0] = %v, %v; want 9 packets", mirrored, err)
	}
}

// TestPFCHeadroomDrop: a lossless frame beyond XOFF + headroom is dropped
// and counted.
func TestPFCHeadroomDrop(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.XOFFBytes, cfg.XONBytes, cfg.HeadroomBytes = 2500, 1250, 1250 // the 4th frame is beyond
	r := newPFCRig(t, cfg)
	r.rsp.deliver(0, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	for i := range 4 {
		r.req.deliver(int64(100*(i+1)), writeFrame(t, roce.PSN(i), dscpRoCE))
	}
	r.rsp.deliver(10_000, pfcFrame(pfcRspMAC, 3, 0))
	r.loop.RunUntil(100_000)
	if got, want := psns(t, r.rsp.sent), []uint32{0, 1, 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PSNs toward the responder = %v, want %v", got, want)
	}
	if c := r.sw.PFCCounters()[reqPort][3]; c.LosslessDrops != 1 || c.XOFF != 1 {
		t.Errorf("counters(requester, 3) = %+v, want LosslessDrops 1, XOFF 1", c)
	}
}

// TestPFCSpreadsOverLinks: on sim links at 100 Gb/s, the responder's XOFF
// stops the switch's queue toward it; the requester's back-to-back burst
// fills the switch's ingress accounting and the switch pauses the
// requester (Guo et al., SIGCOMM 2016, Fig. 5, on one switch).
func TestPFCSpreadsOverLinks(t *testing.T) {
	loop := sim.NewEventLoop()
	nw := sim.NewNetwork(loop)
	reqHost, reqSw := nw.NewLink(sim.LinkConfig{Name: "req"})
	rspHost, rspSw := nw.NewLink(sim.LinkConfig{Name: "rsp"})
	_, dmpSw := nw.NewLink(sim.LinkConfig{Name: "dmp"})
	cfg := pfcTestConfig()
	cfg.XOFFBytes, cfg.XONBytes = 3750, 1250
	sw := injector.New(loop, injector.Config{Seed: 1, PFC: cfg})
	for id, p := range map[uint32]sim.Port{reqPort: reqSw, rspPort: rspSw, dmpPort: dmpSw} {
		if err := sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	programForwarding(t, servePrimary(t, sw))
	var atReq []sentFrame
	var atRsp []int64
	reqHost.SetReceiver(func(f []byte) { atReq = append(atReq, sentFrame{loop.Now(), append([]byte(nil), f...)}) })
	rspHost.SetReceiver(func([]byte) { atRsp = append(atRsp, loop.Now()) })

	rspHost.Send(pfcFrame(pfcRspMAC, 3, 0xFFFF)) // 60 bytes: at the switch at 5 + 500 ns
	for i := range 10 {
		reqHost.Send(writeFrame(t, roce.PSN(i), dscpRoCE)) // at the switch at 600, 700, ... ns
	}
	loop.AfterFunc(100_000, func() { rspHost.Send(pfcFrame(pfcRspMAC, 3, 0)) }) // XON at the switch at 100505
	loop.RunUntil(1_000_000)

	// The 4th frame (arrival 900) takes the accounting to 5000 > 3750:
	// XOFF leaves at 900, reaches the requester at 900 + 5 + 500.
	// After the XON at 100505 the queue drains at 100 ns a frame; the
	// accounting is at 1250 when the 9th frame starts (100505 + 8×100 =
	// 101305): XON leaves then and reaches the requester 505 ns later.
	want := []sentFrame{{1405, pfcFrame(switchMAC, 3, 0xFFFF)}, {101810, pfcFrame(switchMAC, 3, 0)}}
	if len(atReq) != len(want) {
		t.Fatalf("requester received %d frames at %v, want %d", len(atReq), times(atReq), len(want))
	}
	for i, w := range want {
		if g := atReq[i]; g.at != w.at || !bytes.Equal(g.b, w.b) {
			t.Errorf("frame %d at the requester at %d: % x; want at %d: % x", i, g.at, g.b, w.at, w.b)
		}
	}
	if len(atRsp) != 10 || atRsp[0] != 100505+100+500 || atRsp[9] != 100505+10*100+500 {
		t.Errorf("responder received %v, want 10 frames from %d to %d", atRsp, 100505+100+500, 100505+10*100+500)
	}
}

// TestPFCWatchdog: the responder pauses priority 3 every 100 µs from 0 to
// 4.9 ms. With Detection 1 ms the watchdog declares a storm at exactly
// 1 ms, flushes the queue toward the responder and drops lossless frames
// to and from it; 2 ms (Restoration) after the last pause, at 6.9 ms, it
// restores lossless mode.
func TestPFCWatchdog(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.Watchdog = &injector.PFCWatchdog{Detection: time.Millisecond, Restoration: 2 * time.Millisecond}
	r := newPFCRig(t, cfg)
	for at := int64(0); at < 5_000_000; at += 100_000 {
		r.rsp.deliver(at, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	}
	r.req.deliver(500_000, writeFrame(t, 0, dscpRoCE))   // queued, flushed at 1 ms
	r.req.deliver(1_500_000, writeFrame(t, 1, dscpRoCE)) // dropped: to a stormed port
	r.req.deliver(1_500_000, writeFrame(t, 2, 0))        // lossy: forwarded
	fromRsp := roceFrame(t, pfcRspMAC, pfcReqMAC, "10.0.0.2", "10.0.0.1", 7, dscpRoCE)
	r.rsp.deliver(2_000_000, fromRsp)                    // dropped: from a stormed port
	r.req.deliver(6_899_999, writeFrame(t, 3, dscpRoCE)) // dropped: still stormed
	r.req.deliver(7_000_000, writeFrame(t, 4, dscpRoCE)) // restored: forwarded
	r.loop.RunUntil(20_000_000)

	want := []injector.PFCEvent{
		{At: time.Millisecond, Port: rspPort, Priority: 3, Kind: injector.PFCStorm},
		{At: 6_900_000, Port: rspPort, Priority: 3, Kind: injector.PFCRestore},
	}
	if got := r.sw.PFCLog(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PFCLog() = %v, want %v", got, want)
	}
	if got, want := psns(t, r.rsp.sent), []uint32{2, 4}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PSNs toward the responder = %v, want %v", got, want)
	}
	if got, want := times(r.rsp.sent), []int64{1_500_000, 7_000_000}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("departures toward the responder = %v, want %v", got, want)
	}
	if len(r.req.sent) != 0 {
		t.Errorf("requester got %d frames, want none (the frame from the stormed port is dropped)", len(r.req.sent))
	}
	// Paused from 0 to the storm at 1 ms; pauses are ignored afterwards.
	if c := r.sw.PFCCounters()[rspPort][3]; c.Storms != 1 || c.Restores != 1 || c.WatchdogDrops != 4 || c.RxPause != 50 ||
		c.RxPauseNs != 1_000_000 {
		t.Errorf("counters(responder, 3) = %+v, want Storms 1, Restores 1, WatchdogDrops 4, RxPause 50, RxPauseNs 1000000", c)
	}
}

// lateTport is a tport that is a sim.TimedPort: frames arrive at one time
// and are handed to the switch, with that arrival time, at a later one (a
// real-time loop that ran behind).
type lateTport struct {
	*tport
	timedRecv func([]byte, int64)
}

func (p *lateTport) SetTimedReceiver(fn func([]byte, int64)) { p.timedRecv = fn }

// deliverLate makes frame arrive at at and be handled at handled ≥ at.
func (p *lateTport) deliverLate(at, handled int64, frame []byte) {
	p.loop.AfterFunc(time.Duration(handled-p.loop.Now()), func() { p.timedRecv(frame, at) })
}

// TestPFCWatchdogLateRefreshes: the responder pauses priority 3 every 100
// µs (65535 quanta: 335.5 µs at 100 Gb/s), but the switch's loop stalls
// and handles the refreshes that arrived at 100..400 µs only at 450 µs,
// after the first pause would have expired. The pause counts from each
// frame's arrival, so it stays continuous and the watchdog (Detection 1 ms)
// declares the storm at exactly 1 ms; counted from the handling, the pause
// lapsed at 335.5 µs and the storm would wait until 1.45 ms.
func TestPFCWatchdogLateRefreshes(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.Watchdog = &injector.PFCWatchdog{Detection: time.Millisecond, Restoration: 2 * time.Millisecond}
	loop := sim.NewEventLoop()
	sw := injector.New(loop, injector.Config{Seed: 1, PFC: cfg})
	req, dmp := &tport{loop: loop, name: "req"}, &tport{loop: loop, name: "dmp"}
	rsp := &lateTport{tport: &tport{loop: loop, name: "rsp"}}
	for id, p := range map[uint32]sim.Port{reqPort: req, rspPort: rsp, dmpPort: dmp} {
		if err := sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	programForwarding(t, servePrimary(t, sw))
	for at := int64(0); at < 2_000_000; at += 100_000 {
		handled := at
		if at >= 100_000 && at <= 400_000 {
			handled = 450_000
		}
		rsp.deliverLate(at, handled, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	}
	loop.RunUntil(3_000_000)
	if got := sw.PFCLog(); len(got) == 0 || got[0].Kind != injector.PFCStorm || got[0].At != time.Millisecond {
		t.Errorf("PFCLog() = %v, want a storm at exactly 1ms first", got)
	}
}

// TestPFCWatchdogShortStorm: pauses that end (XON) before Detection do not
// trigger the watchdog.
func TestPFCWatchdogShortStorm(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.Watchdog = &injector.PFCWatchdog{Detection: time.Millisecond}
	r := newPFCRig(t, cfg)
	for at := int64(0); at < 900_000; at += 100_000 {
		r.rsp.deliver(at, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	}
	r.rsp.deliver(950_000, pfcFrame(pfcRspMAC, 3, 0))
	r.loop.RunUntil(10_000_000)
	if got := r.sw.PFCLog(); len(got) != 0 {
		t.Errorf("PFCLog() = %v, want none", got)
	}
}

// TestPFCPauseInjection: the example (65535 quanta to the
// requester on priority 3 from 200 µs for 1000 µs, every 20 µs) sends 50
// frames at 200, 220, ..., 1180 µs, mirrored as sent with event pause.
func TestPFCPauseInjection(t *testing.T) {
	r := newPFCRig(t, pfcTestConfig())
	r.loop.RunUntil(50_000) // the call's time is the origin of Start
	if err := r.sw.SchedulePauses(injector.PauseInjection{Port: reqPort, Priority: 3, Quanta: 65535,
		Start: 200 * time.Microsecond, Duration: 1000 * time.Microsecond, Interval: 20 * time.Microsecond}); err != nil {
		t.Fatal(err)
	}
	r.loop.RunUntil(10_000_000)
	want := pfcFrame(switchMAC, 3, 65535)
	if len(r.req.sent) != 50 {
		t.Fatalf("%d frames to the requester, want 50", len(r.req.sent))
	}
	for i, f := range r.req.sent {
		if at := int64(50_000 + 200_000 + i*20_000); f.at != at || !bytes.Equal(f.b, want) {
			t.Errorf("frame %d at %d: % x; want at %d: % x", i, f.at, f.b, at, want)
		}
	}
	lines := r.mirrorLines()
	if len(lines) != 50 {
		t.Fatalf("%d mirror copies, want 50", len(lines))
	}
	diffLines(t, "first and last mirror copies", []string{lines[0], lines[49]}, []string{
		"1@250000 tx port=1 ev=pause PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"50@1230000 tx port=1 ev=pause PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535",
	})
	if c := r.sw.PFCCounters()[reqPort][3]; c.TxPause != 50 {
		t.Errorf("TxPause(requester, 3) = %d, want 50", c.TxPause)
	}
}

// TestPFCPauseInjectionTrigger: a triggered injection starts when the
// switch sees the packet (port, QP, PSN, ITER); Duration 0 sends one frame.
func TestPFCPauseInjectionTrigger(t *testing.T) {
	r := newPFCRig(t, pfcTestConfig())
	r.trackConn()
	for _, tr := range []injector.PauseTrigger{
		{Port: reqPort, DestQP: 0x222, PSN: 5, Iter: 1},
		{Port: reqPort, DestQP: 0x222, PSN: 5, Iter: 2}, // never seen
	} {
		if err := r.sw.SchedulePauses(injector.PauseInjection{Port: reqPort, Priority: 3, Quanta: 100,
			Start: 10 * time.Microsecond, Trigger: &tr}); err != nil {
			t.Fatal(err)
		}
	}
	for psn := range 8 {
		r.req.deliver(int64(1000*(psn+1)), writeFrame(t, roce.PSN(psn), dscpRoCE))
	}
	r.loop.RunUntil(1_000_000)
	if len(r.req.sent) != 1 || r.req.sent[0].at != 6000+10_000 || !bytes.Equal(r.req.sent[0].b, pfcFrame(switchMAC, 3, 100)) {
		t.Errorf("frames to the requester at %v, want one PFC (p3=100) at 16000", times(r.req.sent))
	}
}

// TestSchedulePausesErrors checks validation.
func TestSchedulePausesErrors(t *testing.T) {
	off := injector.New(sim.NewEventLoop(), injector.Config{})
	if err := off.SchedulePauses(injector.PauseInjection{Priority: 3}); !errors.Is(err, injector.ErrPFCOff) {
		t.Errorf("PFC off: %v, want ErrPFCOff", err)
	}
	r := newPFCRig(t, pfcTestConfig())
	for _, ev := range []injector.PauseInjection{
		{Port: reqPort, Priority: 8},
		{Port: reqPort, Priority: 3, Duration: time.Millisecond},
		{Port: 99, Priority: 3},
	} {
		if err := r.sw.SchedulePauses(ev); !errors.Is(err, injector.ErrPauseInjection) {
			t.Errorf("SchedulePauses(%+v) = %v, want ErrPauseInjection", ev, err)
		}
	}
}

// TestPFCOnMatchesOffOnLinks: with no pause, the PFC model paces each port
// at its link's speed, so hosts and dumpers see exactly what they see with
// PFC off: same frames, same times.
func TestPFCOnMatchesOffOnLinks(t *testing.T) {
	run := func(cfg *injector.PFCConfig) (rsp, dmp []sentFrame) {
		loop := sim.NewEventLoop()
		nw := sim.NewNetwork(loop)
		reqHost, reqSw := nw.NewLink(sim.LinkConfig{Name: "req"})
		rspHost, rspSw := nw.NewLink(sim.LinkConfig{Name: "rsp"})
		dmpHost, dmpSw := nw.NewLink(sim.LinkConfig{Name: "dmp"})
		sw := injector.New(loop, injector.Config{Seed: 1, PFC: cfg})
		for id, p := range map[uint32]sim.Port{reqPort: reqSw, rspPort: rspSw, dmpPort: dmpSw} {
			if err := sw.AddPort(id, p); err != nil {
				t.Fatal(err)
			}
		}
		programForwarding(t, servePrimary(t, sw))
		rspHost.SetReceiver(func(f []byte) { rsp = append(rsp, sentFrame{loop.Now(), append([]byte(nil), f...)}) })
		dmpHost.SetReceiver(func(f []byte) { dmp = append(dmp, sentFrame{loop.Now(), append([]byte(nil), f...)}) })
		for i := range 20 {
			dscp := uint8(0)
			if i%3 == 0 {
				dscp = dscpRoCE
			}
			reqHost.Send(writeFrame(t, roce.PSN(i), dscp))
		}
		// The responder's frames share nothing with the requester's.
		rspHost.Send(roceFrame(t, pfcRspMAC, pfcReqMAC, "10.0.0.2", "10.0.0.1", 100, dscpRoCE))
		loop.Run()
		return rsp, dmp
	}
	offRsp, offDmp := run(nil)
	onRsp, onDmp := run(pfcTestConfig())
	if len(offRsp) != 20 || len(offDmp) != 21 {
		t.Fatalf("PFC off: %d frames at the responder, %d at the dumper; want 20, 21", len(offRsp), len(offDmp))
	}
	for name, pair := range map[string][2][]sentFrame{"responder": {offRsp, onRsp}, "dumper": {offDmp, onDmp}} {
		off, on := pair[0], pair[1]
		if len(on) != len(off) {
			t.Errorf("%s: %d frames with PFC on, %d with PFC off", name, len(on), len(off))
			continue
		}
		for i := range off {
			if on[i].at != off[i].at || !bytes.Equal(on[i].b, off[i].b) {
				t.Errorf("%s frame %d: PFC on at %d, off at %d (same bytes: %v)", name, i, on[i].at, off[i].at, bytes.Equal(on[i].b, off[i].b))
			}
		}
	}
}

// discardPort is a Port that drops what it is sent.
type discardPort struct{ recv func([]byte) }

func (p *discardPort) Send([]byte)                 {}
func (p *discardPort) SetReceiver(fn func([]byte)) { p.recv = fn }
func (p *discardPort) Name() string                { return "discard" }

// TestPFCOffNoAllocs: with PFC off, forwarding and mirroring a RoCE frame
// does not allocate.
func TestPFCOffNoAllocs(t *testing.T) {
	loop := sim.NewEventLoop()
	sw := injector.New(loop, injector.Config{Seed: 1})
	ports := map[uint32]*discardPort{reqPort: {}, rspPort: {}, dmpPort: {}}
	for id, p := range ports {
		if err := sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	programForwarding(t, servePrimary(t, sw))
	frame := writeFrame(t, 1, dscpRoCE)
	pfc := pfcFrame(pfcRspMAC, 3, 0xFFFF)
	if n := testing.AllocsPerRun(1000, func() {
		ports[reqPort].recv(frame)
		ports[rspPort].recv(pfc)
	}); n != 0 {
		t.Errorf("allocations per frame with PFC off: %v, want 0", n)
	}
	if st := sw.Stats(); st.Forwarded == 0 || st.Mirrored == 0 {
		t.Errorf("Stats() = %+v: nothing forwarded or mirrored", st)
	}
}

// slowLoop is an EventLoop whose clock a port's write can advance: a
// real-time loop in a system call that takes time.
type slowLoop struct {
	*sim.EventLoop
	skew int64
}

func (l *slowLoop) Now() int64 { return l.EventLoop.Now() + l.skew }

// slowPort is a port whose every write takes cost on its slowLoop.
type slowPort struct {
	tport
	sl   *slowLoop
	cost int64
}

func (p *slowPort) Send(f []byte) {
	p.sl.skew += p.cost
	p.tport.Send(f)
}

// txTimedPort is a slowPort that knows when a frame left: depart after the
// write began (a sim.TxTimedPort).
type txTimedPort struct {
	slowPort
	depart int64
}

func (p *txTimedPort) SendTimed(f []byte) (int64, bool) {
	at := p.sl.Now() + p.depart
	p.Send(f)
	return at, true
}

var _ sim.TxTimedPort = (*txTimedPort)(nil)

// TestPFCSentStamp: a pause injected at 200 µs whose write to the requester
// takes 30 µs (on a real-time port the kernel may run pending receive work
// in the write). On a port that says when the frame left (5 µs into the
// write) the copy is stamped with that, exactly; on one that does not, when
// the write returned, and the 30 µs bound how late that is
// (Timing.SentMax). Stamped before the write, a host that stopped on time
// would look up to 30 µs late.
func TestPFCSentStamp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		departure bool
		stamp     int64
		sentMax   time.Duration
	}{{"departure known", true, 205_000, 0}, {"write returned", false, 230_000, 30 * time.Microsecond}} {
		sl := &slowLoop{EventLoop: sim.NewEventLoop()}
		sw := injector.New(sl, injector.Config{Seed: 1, PFC: pfcTestConfig()})
		slow := slowPort{tport: tport{loop: sl.EventLoop, name: "req"}, sl: sl, cost: 30_000}
		var req sim.Port = &slow
		sent := &slow.sent
		if tc.departure {
			tp := &txTimedPort{slowPort: slow, depart: 5_000}
			req, sent = tp, &tp.sent
		}
		rsp, dmp := &tport{loop: sl.EventLoop, name: "rsp"}, &tport{loop: sl.EventLoop, name: "dmp"}
		for id, p := range map[uint32]sim.Port{reqPort: req, rspPort: rsp, dmpPort: dmp} {
			if err := sw.AddPort(id, p); err != nil {
				t.Fatal(err)
			}
		}
		programForwarding(t, servePrimary(t, sw))
		if err := sw.SchedulePauses(injector.PauseInjection{Port: reqPort, Priority: 3, Quanta: 65535, Start: 200 * time.Microsecond}); err != nil {
			t.Fatal(err)
		}
		sl.RunUntil(1_000_000)
		if len(*sent) != 1 || len(dmp.sent) != 1 {
			t.Fatalf("%s: %d frames to the requester, %d mirror copies; want 1 and 1", tc.name, len(*sent), len(dmp.sent))
		}
		diffLines(t, tc.name+": mirror copy", []string{mirrorLine(t, dmp.sent[0].b)},
			[]string{fmt.Sprintf("1@%d tx port=1 ev=pause PFC 02:00:00:00:00:ee > 01:80:c2:00:00:01 enable=0x08 p3=65535", tc.stamp)})
		if got := sw.Timing(); got.SentMax != tc.sentMax || got.ClampMax != 0 {
			t.Errorf("%s: Timing() = %+v, want SentMax %v, ClampMax 0", tc.name, got, tc.sentMax)
		}
	}
}

// lateLoop is an EventLoop whose AfterFunc timers all fire late by a fixed
// amount: a real-time loop running behind.
type lateLoop struct {
	*sim.EventLoop
	late time.Duration
}

func (l *lateLoop) AfterFunc(d time.Duration, f func()) sim.Timer {
	return l.EventLoop.AfterFunc(d+l.late, f)
}

// TestPFCWatchdogLateCheck: the responder pauses every 100 µs from 0 to
// 900 µs (each 335.5 µs at 100 Gb/s: paused until 1,235,544 ns); the
// detection time is 1 ms, but the switch's timers run 400 µs late, so its
// check comes at 1.4 ms, after the pause lapsed. The pause lasted past the
// detection time: a storm, declared when the check ran.
func TestPFCWatchdogLateCheck(t *testing.T) {
	cfg := pfcTestConfig()
	cfg.Watchdog = &injector.PFCWatchdog{Detection: time.Millisecond, Restoration: 2 * time.Millisecond}
	ll := &lateLoop{EventLoop: sim.NewEventLoop(), late: 400 * time.Microsecond}
	sw := injector.New(ll, injector.Config{Seed: 1, PFC: cfg})
	req, rsp, dmp := &tport{loop: ll.EventLoop, name: "req"}, &tport{loop: ll.EventLoop, name: "rsp"}, &tport{loop: ll.EventLoop, name: "dmp"}
	for id, p := range map[uint32]sim.Port{reqPort: req, rspPort: rsp, dmpPort: dmp} {
		if err := sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	programForwarding(t, servePrimary(t, sw))
	for at := int64(0); at <= 900_000; at += 100_000 {
		rsp.deliver(at, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	}
	ll.RunUntil(10_000_000)
	if got := sw.PFCLog(); len(got) == 0 || got[0].Kind != injector.PFCStorm || got[0].At != 1400*time.Microsecond {
		t.Errorf("PFCLog() = %v, want a storm at 1.4ms (the late check) first", got)
	}
}
