package model

import (
	"net/netip"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestDecodeQDepth: the decoder fills QDepth/QDepthUnit from a mirror
// copy's depth code and reads its event from the TTL's low 3 bits; a
// decoder of a non-mirror trace leaves both 0.
func TestDecodeQDepth(t *testing.T) {
	spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		UDPSrc: 0xC123, Opcode: roce.RCWriteOnly, DestQP: 0x11, PSN: 5, AckReq: true,
		RETH: roce.RETHFields{VA: 1, RKey: 2, Length: 4}, Payload: []byte{1, 2, 3, 4}}
	for _, tc := range []struct {
		name      string
		mirror    bool
		meta      roce.MirrorMeta
		ev        roce.Event
		ce        bool
		q, unit   int64
		delivered bool
	}{
		{"empty queue", true, roce.MirrorMeta{Seq: 1, TimestampNs: 100}, roce.EventNone, false, 0, 1, true},
		{"exact", true, roce.MirrorMeta{Seq: 1, TimestampNs: 100, QDepth: 255}, roce.EventNone, false, 255, 1, true},
		{"three frames", true, roce.MirrorMeta{Seq: 1, TimestampNs: 100, QDepth: 3234}, roce.EventNone, false, 3200, 64, true},
		{"ecn event", true, roce.MirrorMeta{Seq: 1, TimestampNs: 100, Event: roce.EventECN, QDepth: 1 << 20}, roce.EventECN, true, 1 << 20, 1 << 15, true},
		{"drop", true, roce.MirrorMeta{Seq: 1, TimestampNs: 100, Event: roce.EventDrop, QDepth: 0}, roce.EventDrop, false, 0, 1, false},
		{"not a mirror trace", false, roce.MirrorMeta{Seq: 1, TimestampNs: 100, QDepth: 3234}, roce.EventNone, false, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr, err := spec.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !roce.ApplyMirror(fr, tc.meta, roce.DefaultMirrorPort, 1) || !roce.RestoreMirror(fr, roce.DefaultMirrorPort) {
				t.Fatal("mirror codec failed")
			}
			d := Decoder{Mirror: tc.mirror, MTU: 1024}
			var p Pkt
			if !d.Decode(&trace.Packet{Data: fr, OrigLen: len(fr), LinkType: trace.LinkTypeEthernet}, &p) {
				t.Fatal("Decode() = false")
			}
			if p.Event != tc.ev || p.CE != tc.ce || p.QDepth != tc.q || p.QDepthUnit != tc.unit || p.Delivered != tc.delivered {
				t.Errorf("Decode() = event %v CE %v qdepth %d unit %d delivered %v, want %v %v %d %d %v",
					p.Event, p.CE, p.QDepth, p.QDepthUnit, p.Delivered, tc.ev, tc.ce, tc.q, tc.unit, tc.delivered)
			}
		})
	}
}
