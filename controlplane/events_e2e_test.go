package controlplane_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// burst sends WRITE packets rel 0..n-1 (FIRST, MIDDLE..., LAST) back to
// back from the requester and runs the loop once, so that the switch sees
// them at the link's serialization spacing.
func (r *rig) burst(n int) {
	r.t.Helper()
	for rel := range n {
		op := roce.RCWriteMiddle
		switch rel {
		case 0:
			op = roce.RCWriteFirst
		case n - 1:
			op = roce.RCWriteLast
		}
		spec := writePkt(roce.PSN(rel), op)
		b, err := spec.Append(nil)
		if err != nil {
			r.t.Fatal(err)
		}
		r.req.Send(b)
	}
	r.loop.Run()
}

// copyInfo is one mirror copy: PSN, event and timestamp.
type copyInfo struct {
	psn   roce.PSN
	event roce.Event
	ts    int64
}

func (r *rig) copies() []copyInfo {
	r.t.Helper()
	var out []copyInfo
	for _, f := range r.dumps[0] {
		var p roce.Packet
		if err := (&roce.Parser{MirrorPort: roce.DefaultMirrorPort}).Parse(f, 0, &p); err != nil {
			r.t.Fatal(err)
		}
		m := p.Mirror()
		out = append(out, copyInfo{p.BTH.PSN(), m.Event, int64(m.TimestampNs)})
	}
	return out
}

func psnsOf(frames [][]byte) string {
	var s []string
	for _, f := range frames {
		var p roce.Packet
		(&roce.Parser{}).Parse(f, 0, &p)
		s = append(s, fmt.Sprint(uint32(p.BTH.PSN())))
	}
	return strings.Join(s, " ")
}

func mirrored(cs []copyInfo) string {
	var s []string
	for _, c := range cs {
		s = append(s, fmt.Sprintf("%d/%v", uint32(c.psn), c.event))
	}
	return strings.Join(s, " ")
}

func ev(rel int, typ config.EventType, p config.EventParams) config.ExpandedEvent {
	return config.ExpandedEvent{QP: 0, PSN: rel, RelPSN: rel, Iter: 1, Type: typ, EventParams: p}
}

// A delayed packet leaves delay-ns after it arrived, behind the packets
// that followed it; it is mirrored when it leaves, tagged delay.
func TestDelayEvent(t *testing.T) {
	r := newRig(t, 1)
	r.install(controlplane.Intent{Events: []config.ExpandedEvent{ev(1, config.EventDelay, config.EventParams{DelayNs: 20000})}},
		conn(generator.VerbWrite, 0x111, 0, 0x222, 0))
	r.burst(4)
	cs := r.copies()
	if got, want := mirrored(cs), "0/none 2/none 3/none 1/delay"; got != want {
		t.Fatalf("mirror copies %s, want %s", got, want)
	}
	// Equal frames arrive evenly spaced: packet 1 arrived halfway between 0 and 2.
	if arrived := (cs[0].ts + cs[1].ts) / 2; cs[3].ts != arrived+20000 {
		t.Errorf("delayed packet left at %d, want its arrival %d + 20000", cs[3].ts, arrived)
	}
	if got := psnsOf(r.atRsp); got != "0 2 3 1" {
		t.Errorf("responder received PSNs %s, want 0 2 3 1", got)
	}
	if st := r.sw.Stats(); st.Held != 1 || st.Released != 1 || st.Copies != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A reordered packet leaves right after its overtakers-th successor.
func TestReorderEvent(t *testing.T) {
	r := newRig(t, 1)
	r.install(controlplane.Intent{Events: []config.ExpandedEvent{ev(1, config.EventReorder, config.EventParams{Overtakers: 2, MaxHoldNs: 1000000})}},
		conn(generator.VerbWrite, 0x111, 0, 0x222, 0))
	r.burst(5)
	cs := r.copies()
	if got, want := mirrored(cs), "0/none 2/none 3/none 1/reorder 4/none"; got != want {
		t.Fatalf("mirror copies %s, want %s", got, want)
	}
	if cs[3].ts != cs[2].ts {
		t.Errorf("reordered packet left at %d, want with its second overtaker at %d", cs[3].ts, cs[2].ts)
	}
	if got := psnsOf(r.atRsp); got != "0 2 3 1 4" {
		t.Errorf("responder received PSNs %s, want 0 2 3 1 4", got)
	}
}

// Too few overtakers: the hold expires after max-hold-ns.
func TestReorderEventMaxHold(t *testing.T) {
	r := newRig(t, 1)
	r.install(controlplane.Intent{Events: []config.ExpandedEvent{ev(1, config.EventReorder, config.EventParams{Overtakers: 5, MaxHoldNs: 50000})}},
		conn(generator.VerbWrite, 0x111, 0, 0x222, 0))
	r.burst(4)
	cs := r.copies()
	if got, want := mirrored(cs), "0/none 2/none 3/none 1/reorder"; got != want {
		t.Fatalf("mirror copies %s, want %s", got, want)
	}
	if arrived := (cs[0].ts + cs[1].ts) / 2; cs[3].ts != arrived+50000 {
		t.Errorf("held packet left at %d, want its arrival %d + max hold 50000", cs[3].ts, arrived)
	}
}

// A duplicated packet: the original untagged, then each copy tagged
// duplicate; the switch's RoCE-received count does not count the copies,
// its mirrored and transmitted counts do.
func TestDuplicateEvent(t *testing.T) {
	r := newRig(t, 1)
	r.install(controlplane.Intent{Events: []config.ExpandedEvent{ev(1, config.EventDuplicate, config.EventParams{Copies: 2})}},
		conn(generator.VerbWrite, 0x111, 0, 0x222, 0))
	r.burst(4)
	if got, want := mirrored(r.copies()), "0/none 1/none 1/duplicate 1/duplicate 2/none 3/none"; got != want {
		t.Fatalf("mirror copies %s, want %s", got, want)
	}
	if got := psnsOf(r.atRsp); got != "0 1 1 1 2 3" {
		t.Errorf("responder received PSNs %s, want 0 1 1 1 2 3", got)
	}
	if string(r.atRsp[1]) != string(r.atRsp[2]) || string(r.atRsp[1]) != string(r.atRsp[3]) {
		t.Errorf("copies differ from the original")
	}
	c, err := r.cp.ReadCounters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.RxRoCE[1] != 4 || c.MirrorTotal != 6 || c.TxRoCE[2] != 6 {
		t.Errorf("counters rx %d mirrored %d tx %d, want 4, 6, 6", c.RxRoCE[1], c.MirrorTotal, c.TxRoCE[2])
	}
	if fmt.Sprint(c.LastSeq) != "[6]" {
		t.Errorf("LastSeq = %v, want [6] (one switch, 6 copies)", c.LastSeq)
	}
	if st := r.sw.Stats(); st.Copies != 2 || st.Held != 0 {
		t.Errorf("stats %+v", st)
	}
}

// direction: response targets the responder's ACKs of the QP (responder
// port, requester QPN, requester PSN space); data events of the same PSN
// still match the data packet only.
func TestResponseEvents(t *testing.T) {
	r := newRig(t, 1)
	resp := config.EventParams{Direction: config.DirResponse}
	r.install(controlplane.Intent{Events: []config.ExpandedEvent{
		ev(2, config.EventDrop, resp),
		ev(3, config.EventDuplicate, config.EventParams{Direction: config.DirResponse, Copies: 1}),
		ev(3, config.EventECN, config.EventParams{}),
	}, IterScope: config.IterScopeConnection}, conn(generator.VerbWrite, 0x111, 100, 0x222, 0))
	ack := func(psn roce.PSN) roce.FrameSpec {
		return roce.FrameSpec{SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, Opcode: roce.RCAcknowledge, DestQP: 0x111,
			PSN: psn, AETH: roce.AETHFields{Syndrome: 0x1F, MSN: 1}}
	}
	r.send(true, writePkt(103, roce.RCWriteOnly))
	for _, psn := range []roce.PSN{101, 102, 103} {
		r.send(false, ack(psn))
	}
	if got, want := mirrored(r.copies()), "103/ecn 101/none 102/drop 103/none 103/duplicate"; got != want {
		t.Fatalf("mirror copies %s, want %s", got, want)
	}
	if got := psnsOf(r.atReq); got != "101 103 103" {
		t.Errorf("requester received ACK PSNs %s, want 101 103 103", got)
	}
}
