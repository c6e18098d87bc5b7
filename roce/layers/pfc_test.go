package layers

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	gl "github.com/gopacket/gopacket/layers"

	"github.com/netlumina/lumina/roce"
)

var macSrc = [6]byte{0x02, 0, 0, 0, 0, 0x01}

func TestMACControlNewPacket(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  MACControl
	}{
		{"pfc", roce.BuildPFC(nil, macSrc, 0x89, [8]uint16{0: 0, 3: 0xFFFF, 7: 1234, 5: 9}),
			MACControl{Opcode: roce.MACControlPFC, EnableVector: 0x89, Time: [8]uint16{0: 0, 3: 0xFFFF, 5: 9, 7: 1234}}},
		{"pfc all", roce.BuildPFC(nil, macSrc, 0xFF, [8]uint16{1, 2, 3, 4, 5, 6, 7, 8}),
			MACControl{Opcode: roce.MACControlPFC, EnableVector: 0xFF, Time: [8]uint16{1, 2, 3, 4, 5, 6, 7, 8}}},
		{"pause", roce.BuildPause(nil, macSrc, 0xABCD),
			MACControl{Opcode: roce.MACControlPause, PauseTime: 0xABCD}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkt := gopacket.NewPacket(tt.frame, gl.LayerTypeEthernet, gopacket.Default)
			if e := pkt.ErrorLayer(); e != nil {
				t.Fatalf("decode error: %v", e.Error())
			}
			eth, ok := pkt.Layer(gl.LayerTypeEthernet).(*gl.Ethernet)
			if !ok || eth.EthernetType != roce.EtherTypeMACControl ||
				!bytes.Equal(eth.SrcMAC, macSrc[:]) || !bytes.Equal(eth.DstMAC, roce.MACControlDst[:]) {
				t.Fatalf("Ethernet layer = %+v", eth)
			}
			m, ok := pkt.Layer(LayerTypeMACControl).(*MACControl)
			if !ok {
				t.Fatalf("no MACControl layer in %v", pkt)
			}
			if m.Opcode != tt.want.Opcode || m.PauseTime != tt.want.PauseTime || m.EnableVector != tt.want.EnableVector ||
				m.Time != tt.want.Time {
				t.Errorf("MACControl = {%v %#x %#x %v}, want {%v %#x %#x %v}", m.Opcode, m.PauseTime, m.EnableVector, m.Time,
					tt.want.Opcode, tt.want.PauseTime, tt.want.EnableVector, tt.want.Time)
			}
			n := roce.PFCLen
			if m.Opcode == roce.MACControlPause {
				n = roce.PauseLen
			}
			if !bytes.Equal(m.LayerContents(), tt.frame[14:14+n]) || !bytes.Equal(m.LayerPayload(), tt.frame[14+n:]) {
				t.Errorf("contents %x payload %x, want %x %x", m.LayerContents(), m.LayerPayload(), tt.frame[14:14+n], tt.frame[14+n:])
			}
			if got := len(pkt.Layers()); got != 2 {
				t.Errorf("packet has %d layers (%v), want Ethernet and MACControl", got, pkt.Layers())
			}
			// Agree with package roce.
			var f roce.MACControlFrame
			if err := roce.ParseMACControl(tt.frame, &f); err != nil || f.Opcode != m.Opcode || f.Time != m.Time ||
				f.EnableVector != m.EnableVector || f.PauseTime != m.PauseTime {
				t.Errorf("roce.ParseMACControl = %v %+v, disagrees with layer %+v", err, f, m)
			}
		})
	}
}

func TestMACControlEthernetTypeRegistered(t *testing.T) {
	et := gl.EthernetType(roce.EtherTypeMACControl)
	if got := et.String(); got != "MACControl" {
		t.Errorf("EthernetType(0x8808).String() = %q, want MACControl", got)
	}
	if got := et.LayerType(); got != LayerTypeMACControl {
		t.Errorf("EthernetType(0x8808).LayerType() = %v, want MACControl", got)
	}
}

func TestMACControlDecodingLayerParser(t *testing.T) {
	var (
		eth gl.Ethernet
		m   MACControl
	)
	parser := gopacket.NewDecodingLayerParser(gl.LayerTypeEthernet, &eth, &m)
	var decoded []gopacket.LayerType
	frame := roce.BuildPFC(nil, macSrc, 0x08, [8]uint16{3: 0xFFFF})
	if err := parser.DecodeLayers(frame, &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 2 || decoded[0] != gl.LayerTypeEthernet || decoded[1] != LayerTypeMACControl {
		t.Fatalf("decoded %v, want [Ethernet MACControl]", decoded)
	}
	if m.Opcode != roce.MACControlPFC || m.EnableVector != 0x08 || m.Time != [8]uint16{3: 0xFFFF} {
		t.Errorf("MACControl = %+v", m)
	}
	if n := testing.AllocsPerRun(100, func() { _ = parser.DecodeLayers(frame, &decoded) }); n != 0 {
		t.Errorf("DecodeLayers allocs = %v, want 0", n)
	}
}

func TestMACControlDecodeErrors(t *testing.T) {
	pfc := roce.BuildPFC(nil, macSrc, 0x01, [8]uint16{0: 7})
	// gopacket stops at an empty Ethernet payload, so 14 bytes decode
	// cleanly to Ethernet alone.
	for _, n := range []int{15, 14 + roce.PFCLen - 1} {
		pkt := gopacket.NewPacket(pfc[:n], gl.LayerTypeEthernet, gopacket.Default)
		e := pkt.ErrorLayer()
		if e == nil || !errors.Is(e.Error(), ErrMACControlTruncated) {
			t.Errorf("%d bytes: error layer %v, want ErrMACControlTruncated", n, e)
		}
	}
	pause := roce.BuildPause(nil, macSrc, 1)
	var m MACControl
	if err := m.DecodeFromBytes(pause[14:14+roce.PauseLen-1], gopacket.NilDecodeFeedback); !errors.Is(err, ErrMACControlTruncated) {
		t.Errorf("cut PAUSE: %v, want ErrMACControlTruncated", err)
	}
	unknown := bytes.Clone(pause)
	unknown[15] = 0x02
	if err := m.DecodeFromBytes(unknown[14:], gopacket.NilDecodeFeedback); err != nil {
		t.Fatalf("unknown opcode: %v", err)
	}
	if m.Opcode != 0x0002 || m.PauseTime != 0 || len(m.LayerContents()) != 2 || len(m.LayerPayload()) != 44 {
		t.Errorf("unknown opcode decoded as %+v", m)
	}
}

// TestMACControlSerialize checks that gopacket serialization (Ethernet pads
// to 60 bytes) produces exactly what roce.BuildPFC and BuildPause build.
func TestMACControlSerialize(t *testing.T) {
	eth := &gl.Ethernet{SrcMAC: net.HardwareAddr(macSrc[:]), DstMAC: net.HardwareAddr(roce.MACControlDst[:]),
		EthernetType: roce.EtherTypeMACControl}
	tests := []struct {
		name  string
		layer *MACControl
		want  []byte
	}{
		{"pfc", &MACControl{Opcode: roce.MACControlPFC, EnableVector: 0x81, Time: [8]uint16{0: 5, 7: 0xFFFF}},
			roce.BuildPFC(nil, macSrc, 0x81, [8]uint16{0: 5, 7: 0xFFFF})},
		{"pause", &MACControl{Opcode: roce.MACControlPause, PauseTime: 0x0102, Time: [8]uint16{1: 1}},
			roce.BuildPause(nil, macSrc, 0x0102)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, eth, tt.layer); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), tt.want) {
				t.Errorf("serialized %x, want %x", buf.Bytes(), tt.want)
			}
		})
	}
	buf := gopacket.NewSerializeBuffer()
	if err := (&MACControl{Opcode: 0x0002}).SerializeTo(buf, gopacket.SerializeOptions{}); err == nil {
		t.Error("serializing opcode 0x0002 succeeded, want an error")
	}
}
