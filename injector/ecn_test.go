package injector_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// ECN codepoints (RFC 3168 §5).
const (
	notECT = 0
	ect1   = 1
	ect0   = 2
	ce     = 3
)

// newRig is newPFCRig with a whole switch Config.
func newRig(t *testing.T, cfg injector.Config) *pfcRig {
	t.Helper()
	loop := sim.NewEventLoop()
	r := &pfcRig{t: t, loop: loop, sw: injector.New(loop, cfg),
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

// sizedFrame is an RC WRITE ONLY from the requester to the responder of n
// bytes (n >= 74) with the given DSCP and ECN bits.
func sizedFrame(t *testing.T, psn roce.PSN, n int, dscp, ecn uint8) []byte {
	t.Helper()
	spec := roce.FrameSpec{SrcMAC: pfcReqMAC, DstMAC: pfcRspMAC, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		TOS: dscp<<2 | ecn, Opcode: roce.RCWriteOnly, DestQP: 0x222, PSN: psn, RETH: roce.RETHFields{VA: 0x1000, RKey: 1, Length: uint32(n - 74)},
		Payload: make([]byte, n-74)}
	b, err := spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != n {
		t.Fatalf("frame length %d, want %d", len(b), n)
	}
	return b
}

// copyInfo is what a RoCE mirror copy says: PSN, event, ECN bits, depth.
type copyInfo struct {
	psn   uint32
	ev    roce.Event
	ecn   uint8
	depth int64
}

// roceCopies decodes the dumper's RoCE copies, checking each one's ICRC.
func (r *pfcRig) roceCopies() []copyInfo {
	r.t.Helper()
	var out []copyInfo
	for _, f := range r.dmp.sent {
		var p roce.Packet
		if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort, VerifyICRC: true}).Parse(f.b, 0, &p); err != nil {
			continue // a wrapped PFC copy
		}
		if p.ICRC != roce.ICRCOK || roce.IPv4Checksum(p.Frame[p.L3:p.L4]) != 0 {
			r.t.Fatalf("copy of PSN %d: ICRC %v, IPv4 checksum residual %#x", p.BTH.PSN(), p.ICRC, roce.IPv4Checksum(p.Frame[p.L3:p.L4]))
		}
		m := p.Mirror()
		out = append(out, copyInfo{uint32(p.BTH.PSN()), m.Event, p.ECN(), m.QDepth})
	}
	return out
}

// TestQueueDepthInCopies: every copy carries the depth of the egress queue
// its packet joined, before it joined, rounded down to its DepthCode: three
// 1078-byte frames queued behind a pause, the fourth copy says 3234 →
// 3200; a lossy frame to the same port sees its own priority's queue
// (empty); without a queue model every copy says 0.
func TestQueueDepthInCopies(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  injector.Config
		want []int64
	}{
		{"pfc", injector.Config{Seed: 1, PFC: pfcTestConfig()}, []int64{0, 1072, 2112, 3200, 0}}, // 0, 1078, 2156, 3234 rounded
		{"no queue model", injector.Config{Seed: 1}, []int64{0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg)
			r.rsp.deliver(100, pfcFrame(pfcRspMAC, 3, 0xFFFF))
			for i := range 4 {
				r.req.deliver(int64(1000+10*i), sizedFrame(t, roce.PSN(i), 1078, dscpRoCE, ect0))
			}
			r.req.deliver(2000, sizedFrame(t, 9, 1078, 0, ect0))
			r.loop.RunUntil(10_000)
			var got []int64
			for _, c := range r.roceCopies() {
				got = append(got, c.depth)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("copies' depths = %v, want %v", got, tc.want)
			}
		})
	}
	if got := roce.EncodeDepth(3 * 1078).Bytes(); got != 3200 {
		t.Errorf("EncodeDepth(3234).Bytes() = %d, want 3200", got)
	}
}

// delayEntry installs event_table (requester port, QP 0x222, psn, ITER 1)
// → delay_event(ns).
func (r *pfcRig) delayEntry(psn byte, ns uint32) {
	r.t.Helper()
	r.eventEntry(psn, 0x0100000c, &p4v1.Action_Param{ParamId: 1, Value: []byte{byte(ns >> 8), byte(ns)}})
}

// eventEntry installs event_table (requester port, QP 0x222, psn, ITER 1)
// → the action with its parameters.
func (r *pfcRig) eventEntry(psn byte, action uint32, params ...*p4v1.Action_Param) {
	r.t.Helper()
	exact := func(id uint32, v []byte) *p4v1.FieldMatch {
		return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
	}
	te := &p4v1.TableEntry{TableId: 0x02000004,
		Match:  []*p4v1.FieldMatch{exact(1, []byte{byte(reqPort)}), exact(2, []byte{0x02, 0x22}), exact(3, []byte{psn}), exact(4, []byte{1})},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: action, Params: params}}}}
	if err := r.c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, &p4v1.Update{Type: p4v1.Update_INSERT,
		Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}); err != nil {
		r.t.Fatal(err)
	}
}

// TestQueueDepthHeldPacket: a delayed packet's copy, taken when it leaves
// the hold, carries the depth of the queue at its release (the frames that
// passed it, still paused), not at its arrival; a dropped packet joins no
// queue: its copy says 0.
func TestQueueDepthHeldPacket(t *testing.T) {
	r := newRig(t, injector.Config{Seed: 1, PFC: pfcTestConfig()})
	r.trackConn()
	r.delayEntry(1, 5000)
	r.eventEntry(3, 0x01000006) // drop_event
	r.rsp.deliver(100, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	for i := range 4 {
		r.req.deliver(int64(1000+10*i), writeFrame(t, roce.PSN(i), dscpRoCE))
	}
	r.loop.RunUntil(20_000)
	got := fmt.Sprint(r.roceCopies())
	// 1250 and 2500 bytes, rounded down to their DepthCodes.
	if want := fmt.Sprint([]copyInfo{{0, roce.EventNone, 0, 0}, {2, roce.EventNone, 0, 1248}, {3, roce.EventDrop, 0, 0},
		{1, roce.EventDelay, 0, 2496}}); got != want {
		t.Errorf("copies (psn ev ecn depth) = %s, want %s", got, want)
	}
}

// ecnRig is a switch whose responder queue of priority 3 is paused, so
// that each 1250-byte frame from the requester joins it 16 cells (80
// bytes each) deeper than the one before.
func ecnRig(t *testing.T, pfc *injector.PFCConfig) *pfcRig {
	r := newRig(t, injector.Config{Seed: 1, PFC: pfc})
	r.rsp.deliver(100, pfcFrame(pfcRspMAC, 3, 0xFFFF))
	return r
}

// redEntry installs Egress.ecn_red dscp → set_red(kmin, kmax, mask).
func (r *pfcRig) redEntry(dscp byte, kmin, kmax, mask uint32) {
	r.t.Helper()
	p := func(id uint32, v uint32, n int) *p4v1.Action_Param {
		b := make([]byte, n)
		for i := n - 1; i >= 0; i-- {
			b[i], v = byte(v), v>>8
		}
		return &p4v1.Action_Param{ParamId: id, Value: b}
	}
	te := &p4v1.TableEntry{TableId: 0x02000008,
		Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{dscp}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x0100000f,
			Params: []*p4v1.Action_Param{p(1, kmin, 3), p(2, kmax, 3), p(3, mask, 4)}}}}}
	if err := r.c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, &p4v1.Update{Type: p4v1.Update_INSERT,
		Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}); err != nil {
		r.t.Fatal(err)
	}
}

// floatMarks is how many of n draws of the ECN stream of seed 1 are below
// p as rand.Float64 draws them: the decisions of a RED that computes its
// probability exactly (the software switch before #30's control-plane
// entries), for comparison.
func floatMarks(n int, p float64) int {
	rng := rand.New(rand.NewPCG(1, 0xEC4))
	m := 0
	for range n {
		if rng.Float64() < p {
			m++
		}
	}
	return m
}

// TestECNMarkByDepth: the ecn_red entry of DSCP 26 set_red(32, 96, 127),
// what the control plane writes for kmin 2560 B, kmax 7680 B, pmax 0.5.
// Frames joining at 0, 16 and 32 cells (≤ kmin) are never marked, those
// above 96 cells always, those between with probability (q − 32)/128
// drawn from the seed's stream (the exact decisions for seed 1 are
// asserted: the same as an exact RED with kmin 2500 B, kmax 7500 B, pmax
// 0.5 on the same bytes, whose probabilities 0.125..0.5 are these); non-ECT
// frames are never marked and CE frames stay CE; a DSCP without an entry
// is never marked. A mark sets CE, keeps event none, and the forwarded
// frame's IPv4 checksum and ICRC stay valid.
func TestECNMarkByDepth(t *testing.T) {
	ecns := []uint8{ect0, ect0, ect0, ect1, ect0, ect1, ect0, ect0, ect0, notECT, ce, ect1, notECT}
	r := ecnRig(t, pfcTestConfig())
	r.redEntry(dscpRoCE, 32, 96, 127)
	for i, e := range ecns {
		r.req.deliver(int64(1000+10*i), sizedFrame(t, roce.PSN(i), 1250, dscpRoCE, e))
	}
	r.req.deliver(2000, sizedFrame(t, 99, 1250, 0, ect0)) // DSCP 0, no entry: not marked
	r.rsp.deliver(10_000, pfcFrame(pfcRspMAC, 3, 0))      // XON: the queue drains
	r.loop.RunUntil(100_000)
	var got []string
	for _, c := range r.roceCopies() {
		got = append(got, fmt.Sprintf("%d:%d:%d:%v", c.psn, c.depth, c.ecn, c.ev))
	}
	// Frame i joins at 1250·i bytes, 16·i cells (the copy says the bytes
	// rounded down to their DepthCode). 48 cells: p 0.125, marked for
	// seed 1; 64: p 0.25, not; 80: p 0.375, not; 96: p 0.5, marked; 112
	// and above: always.
	var want []string
	for i, e := range []uint8{ect0, ect0, ect0, ce, ect0, ect1, ce, ce, ce, notECT, ce, ce, notECT} {
		want = append(want, fmt.Sprintf("%d:%d:%d:none", i, roce.EncodeDepth(int64(i)*1250).Bytes(), e))
	}
	want = append(want, "99:0:2:none")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("copies (psn:depth:ecn:event)\n got %v\nwant %v", got, want)
	}
	if st := r.sw.Stats(); st.ECNMarked != 5 {
		t.Errorf("Stats().ECNMarked = %d, want 5 (psn 3, 6, 7, 8, 11)", st.ECNMarked)
	}
	// The forwarded frames carry the same marks, with valid checksums.
	var fwd []string
	for _, f := range r.rsp.sent {
		var p roce.Packet
		if err := (&roce.Parser{VerifyICRC: true}).Parse(f.b, 0, &p); err != nil || p.ICRC != roce.ICRCOK || roce.IPv4Checksum(p.Frame[p.L3:p.L4]) != 0 {
			t.Fatalf("forwarded frame: %v, ICRC %v", err, p.ICRC)
		}
		fwd = append(fwd, fmt.Sprintf("%d:%d", p.BTH.PSN(), p.ECN()))
	}
	if want := "99:2 0:2 1:2 2:2 3:3 4:2 5:1 6:3 7:3 8:3 9:0 10:3 11:3 12:0"; strings.Join(fwd, " ") != want {
		t.Errorf("forwarded (psn:ecn) = %s, want %s", strings.Join(fwd, " "), want)
	}
}

// TestECNMarkProbability: a queue held at a constant depth (the responder
// paused, the ingress accounting full, so every further frame is mirrored
// at that depth and then dropped) of 176 cells, halfway between the
// entry's kmin 160 and kmax 192 cells with mask 127 (the control plane's
// entry for 12800 B, 15360 B, pmax 0.25), marks with probability
// 16/128 = 0.125: over 20,000 frames the count is within 5σ of the
// binomial mean and, the draws being the seed's, exactly the count seed 1
// gives, the same as rand.Float64() < 0.125 on the same stream. (An exact
// probability such as 0.1 has no entry: lumina.p4's probabilities are
// multiples of 1/(rand_mask + 1), a power of two.)
func TestECNMarkProbability(t *testing.T) {
	pfc := pfcTestConfig()
	pfc.XOFFBytes, pfc.HeadroomBytes = 3750, 10000 // 11 frames of 1250 bytes, then drops
	const depth = 11 * 1250                        // 176 cells
	r := ecnRig(t, pfc)
	r.redEntry(dscpRoCE, 160, 192, 127)
	for i := range 11 { // the fill: not ECT, never marked
		r.req.deliver(1000, sizedFrame(t, roce.PSN(i), 1250, dscpRoCE, notECT))
	}
	const n = 20000
	for i := range n {
		r.req.deliver(2000+int64(i), sizedFrame(t, roce.PSN(11+i), 1250, dscpRoCE, ect0))
	}
	r.loop.RunUntil(1_000_000)
	cs := r.roceCopies()
	if len(cs) != 11+n {
		t.Fatalf("%d copies, want %d", len(cs), 11+n)
	}
	marked := 0
	for i, c := range cs {
		switch {
		case i < 11 && (c.ecn != notECT || c.depth != roce.EncodeDepth(int64(i)*1250).Bytes()):
			t.Fatalf("fill copy %d: ecn %d depth %d, want not ECT at depth %d", i, c.ecn, c.depth, i*1250)
		case i >= 11 && c.depth != roce.EncodeDepth(depth).Bytes():
			t.Fatalf("copy %d: depth %d, want %d", i, c.depth, roce.EncodeDepth(depth).Bytes())
		case i >= 11 && c.ecn == ce:
			marked++
		}
	}
	p := 16.0 / 128
	mean, sigma := n*p, math.Sqrt(n*p*(1-p))
	if math.Abs(float64(marked)-mean) > 5*sigma {
		t.Errorf("%d of %d marked at p %.2f, want %.0f ± %.0f (5σ)", marked, n, p, mean, 5*sigma)
	}
	if want := floatMarks(n, p); marked != want || marked != 2497 {
		t.Errorf("%d of %d marked, want 2497 (seed 1's draws; rand.Float64() < %v: %d)", marked, n, p, want)
	}
	if c := r.sw.PFCCounters()[reqPort][3]; c.LosslessDrops != n {
		t.Errorf("LosslessDrops = %d, want %d (the queue stayed at %d bytes)", c.LosslessDrops, n, depth)
	}
}

// TestECNWithoutPFC: the queue model without PFC (the zero PFCConfig:
// every priority lossy, all traffic priority 0), as the orchestrator runs
// it for switch.ecn alone: frames queue behind the link's pace, copies
// carry their depth, and the ecn_red entry set_red(12, 25, 15) (kmin 1000
// B, kmax 2000 B, pmax 1) marks by the depth in cells.
func TestECNWithoutPFC(t *testing.T) {
	r := newRig(t, injector.Config{Seed: 1, PFC: &injector.PFCConfig{}})
	r.redEntry(dscpRoCE, 12, 25, 15)
	for i := range 4 {
		r.req.deliver(1000, sizedFrame(t, roce.PSN(i), 1250, dscpRoCE, ect0))
	}
	r.loop.RunUntil(100_000)
	var got []string
	for _, c := range r.roceCopies() {
		got = append(got, fmt.Sprintf("%d:%d:%d", c.psn, c.depth, c.ecn))
	}
	// The first frame starts at once; each next one joins behind the ones
	// not yet started: 0, 0, 16 cells (p 4/16, marked for seed 1), 32
	// cells (above 25: always).
	if want := "0:0:2 1:0:2 2:1248:3 3:2496:3"; strings.Join(got, " ") != want {
		t.Errorf("copies (psn:depth:ecn) = %s, want %s", strings.Join(got, " "), want)
	}
	if got := times(r.rsp.sent); fmt.Sprint(got) != "[1000 1100 1200 1300]" {
		t.Errorf("departures = %v, want [1000 1100 1200 1300] (paced at 100 Gb/s)", got)
	}
}

// TestECNDuplicateCopies: the copies of a duplicated packet join the queue
// as the packet arrived, each drawing its own mark by depth (not carrying
// the original's), each at its own depth.
func TestECNDuplicateCopies(t *testing.T) {
	pfc := pfcTestConfig()
	pfc.XOFFBytes, pfc.HeadroomBytes = 1<<20, 1<<20 // no drops
	r := ecnRig(t, pfc)
	r.redEntry(dscpRoCE, 128, 1250, 1023) // kmin 10 KiB, kmax 100,000 B, pmax 1
	r.trackConn()
	r.eventEntry(40, 0x0100000e, &p4v1.Action_Param{ParamId: 1, Value: []byte{3}}) // duplicate_event(3)
	for i := range 41 {
		e := uint8(notECT)
		if i == 40 {
			e = ect0
		}
		r.req.deliver(int64(1000+10*i), sizedFrame(t, roce.PSN(i), 1250, dscpRoCE, e))
	}
	r.loop.RunUntil(100_000)
	cs := r.roceCopies()
	var got []string
	for _, c := range cs[40:] {
		got = append(got, fmt.Sprintf("%d:%v:%d:%d", c.psn, c.ev, c.depth, c.ecn))
	}
	// 50,000, 51,250, 52,500, 53,750 bytes; 640, 656, 672, 688 cells
	// (p 512/1024, 528/1024, 544/1024, 560/1024): the original is marked,
	// the first copy is not (seed 1).
	want := "40:none:49664:3 40:duplicate:51200:2 40:duplicate:52224:3 40:duplicate:53248:3"
	if strings.Join(got, " ") != want {
		t.Errorf("copies (psn:event:depth:ecn) = %s, want %s", strings.Join(got, " "), want)
	}
}

// TestBufferDropCopies: the copy of a frame the switch's queues have no
// room for is tagged drop, so the trace does not show a packet its host
// never got as delivered; its counters say how many. Lossless: with the
// egress toward the responder paused, the requester's ingress buffer on
// priority 3 takes frames up to XOFF + headroom (93,544 bytes: 86 frames
// of 1078 bytes); the next four are dropped. Lossy (priority 0, not
// paused): 4400 frames of 4002 bytes arrive at once; the first starts at
// once, frame i ≥ 1 finds i−1 queued and is dropped when i × 4002 bytes
// exceed LossyQueueBytes (16 MiB), from frame 4193 on.
func TestBufferDropCopies(t *testing.T) {
	t.Run("lossless", func(t *testing.T) {
		r := newRig(t, injector.Config{Seed: 1, PFC: pfcTestConfig()})
		r.rsp.deliver(100, pfcFrame(pfcRspMAC, 3, 0xFFFF))
		for i := range 90 {
			r.req.deliver(1000, sizedFrame(t, roce.PSN(i), 1078, dscpRoCE, notECT))
		}
		r.loop.RunUntil(10_000)
		cs := r.roceCopies()
		if len(cs) != 90 {
			t.Fatalf("%d copies, want 90", len(cs))
		}
		for i, c := range cs {
			if want := map[bool]roce.Event{false: roce.EventNone, true: roce.EventDrop}[i >= 86]; c.ev != want {
				t.Errorf("copy %d: event %v, want %v", i, c.ev, want)
			}
		}
		if c := r.sw.PFCCounters()[reqPort][3]; c.LosslessDrops != 4 {
			t.Errorf("LosslessDrops = %d, want 4", c.LosslessDrops)
		}
	})
	t.Run("lossy", func(t *testing.T) {
		r := newRig(t, injector.Config{Seed: 1, PFC: &injector.PFCConfig{MAC: switchMAC}})
		const n, size = 4400, 4002
		for i := range n {
			r.req.deliver(1000, sizedFrame(t, roce.PSN(i), size, 0, notECT))
		}
		r.loop.RunUntil(1000)
		cs := r.roceCopies()
		if len(cs) != n {
			t.Fatalf("%d copies, want %d", len(cs), n)
		}
		drops := 0
		for i, c := range cs {
			want := roce.EventNone
			if i*size > injector.LossyQueueBytes {
				want = roce.EventDrop
				drops++
			}
			if c.ev != want {
				t.Fatalf("copy %d: event %v, want %v", i, c.ev, want)
			}
		}
		if drops != n-4193 {
			t.Errorf("%d drops, want %d", drops, n-4193)
		}
		if c := r.sw.PFCCounters()[rspPort][0]; c.LossyDrops != uint64(drops) {
			t.Errorf("LossyDrops = %d, want %d", c.LossyDrops, drops)
		}
	})
}
