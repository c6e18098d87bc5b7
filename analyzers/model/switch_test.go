package model

import (
	"net/netip"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestDecodeSwitch: the decoder reads the copy's switch from the sequence
// field of RoCE and wrapped (PFC) copies.
func TestDecodeSwitch(t *testing.T) {
	spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC001,
		Opcode: roce.RCSendOnly, DestQP: 0x11, PSN: 7, Payload: make([]byte, 16)}
	pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 65535})
	for _, sw := range []uint8{0, 4, 31} {
		f, err := spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		roce.ApplyMirror(f, roce.MirrorMeta{Switch: sw, Seq: 9, TimestampNs: 1000}, roce.DefaultMirrorPort, 1)
		roce.RestoreMirror(f, roce.DefaultMirrorPort)
		d := Decoder{Mirror: true}
		var p Pkt
		if !d.Decode(&trace.Packet{Data: f, OrigLen: len(f), LinkType: trace.LinkTypeEthernet, Index: 3}, &p) || p.Switch != sw || p.PSN != 7 {
			t.Errorf("Decode(RoCE copy of switch %d) = Switch %d PSN %d, want %d, 7", sw, p.Switch, p.PSN, sw)
		}
		w := roce.AppendMACMirror(nil, roce.MirrorMeta{Switch: sw, Seq: 10, TimestampNs: 1100}, false, 1, pfc)
		if d.Decode(&trace.Packet{Data: w, OrigLen: len(w), LinkType: trace.LinkTypeEthernet, Index: 4}, &p) || p.Switch != sw || p.Index != 4 {
			t.Errorf("Decode(PFC copy of switch %d) = Switch %d index %d, want false, %d, 4", sw, p.Switch, p.Index, sw)
		}
	}
}
