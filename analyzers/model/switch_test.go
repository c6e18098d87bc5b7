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

// TestParseMetaFabric: meta.json's fabric and the switch's last_seq are
// read, and Merge keeps them under a record without them.
func TestParseMetaFabric(t *testing.T) {
	m, err := ParseMeta([]byte(`{"fabric": {"switches": ["tor1", "spine"], "ports": [{"port": 200, "switch": "tor1", "peer_switch": "spine", "peer_port": 201},
		{"port": 201, "switch": "spine", "peer_switch": "tor1", "peer_port": 200}],
		"observe": {"f1": "tor1"}}, "switch": {"mirrored": 7, "last_seq": [4, 3]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Fabric == nil || len(m.Fabric.Switches) != 2 || m.Fabric.Switches[1] != "spine" || m.Fabric.Observe["f1"] != "tor1" || m.Fabric.Ports[0].PeerPort != 201 {
		t.Fatalf("ParseMeta fabric = %+v", m.Fabric)
	}
	if m.Switch == nil || len(m.Switch.LastSeq) != 2 || m.Switch.LastSeq[0] != 4 || m.Switch.LastSeq[1] != 3 {
		t.Fatalf("ParseMeta switch = %+v, want last_seq [4 3]", m.Switch)
	}
	mirrored := uint64(9)
	got := m.Merge(Meta{Switch: &Switch{Mirrored: &mirrored}})
	if got.Fabric != m.Fabric || len(got.Switch.LastSeq) != 2 || *got.Switch.Mirrored != 9 {
		t.Errorf("Merge = fabric %p switch %+v, want the fabric and last_seq kept, mirrored 9", got.Fabric, got.Switch)
	}
}
