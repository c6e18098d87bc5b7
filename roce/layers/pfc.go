package layers

import (
	"errors"
	"fmt"

	"github.com/gopacket/gopacket"
	gl "github.com/gopacket/gopacket/layers"

	"github.com/netlumina/lumina/roce"
)

// LayerTypeMACControl is the gopacket layer type of MAC Control frames
// (EtherType 0x8808): PAUSE and PFC. Registered with number 1792.
var LayerTypeMACControl = gopacket.RegisterLayerType(1792, gopacket.LayerTypeMetadata{
	Name:    "MACControl",
	Decoder: gopacket.DecodeFunc(decodeMACControl),
})

// gopacket/layers (v1.7.7) has no decoder for EtherType 0x8808, so Ethernet
// frames of that type end in a DecodeFailure layer. Register ours, but only
// if nobody registered one first: EthernetTypeMetadata is process-wide.
func init() {
	if gl.EthernetTypeMetadata[roce.EtherTypeMACControl].DecodeWith == nil {
		gl.EthernetTypeMetadata[roce.EtherTypeMACControl] = gl.EnumMetadata{
			DecodeWith: gopacket.DecodeFunc(decodeMACControl),
			Name:       "MACControl",
			LayerType:  LayerTypeMACControl,
		}
	}
}

// MACControl is a MAC Control layer: the opcode and its parameters after an
// EtherType 0x8808. PAUSE sets PauseTime, PFC sets EnableVector and Time;
// fields the opcode does not carry are zero after decoding and ignored when
// serializing. Other opcodes decode with only Opcode set.
//
// LayerContents holds the opcode and the parameters the opcode defines;
// LayerPayload the rest (the pad). The layer is terminal: NextLayerType is
// gopacket.LayerTypeZero.
type MACControl struct {
	gl.BaseLayer

	Opcode roce.MACControlOpcode
	// PauseTime is the PAUSE pause_time, in quanta.
	PauseTime uint16
	// EnableVector is the whole 16-bit PFC priority_enable_vector; the high
	// octet is reserved (zero).
	EnableVector uint16
	// Time is the PFC time[0..7], in quanta, priority 0 first.
	Time [roce.PFCPriorities]uint16
}

// ErrMACControlTruncated is returned when the data ends before the opcode or
// the parameters the opcode requires.
var ErrMACControlTruncated = errors.New("roce/layers: truncated MAC Control frame")

// LayerType returns LayerTypeMACControl.
func (m *MACControl) LayerType() gopacket.LayerType { return LayerTypeMACControl }

// CanDecode returns LayerTypeMACControl.
func (m *MACControl) CanDecode() gopacket.LayerClass { return LayerTypeMACControl }

// NextLayerType returns gopacket.LayerTypeZero: nothing follows.
func (m *MACControl) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes decodes a MAC Control PDU (the Ethernet payload).
func (m *MACControl) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = MACControl{}
	if len(data) < 2 {
		df.SetTruncated()
		return fmt.Errorf("%w: %d bytes, opcode needs 2", ErrMACControlTruncated, len(data))
	}
	v := roce.MACControl(data)
	m.Opcode = v.Opcode()
	n := 2
	switch m.Opcode {
	case roce.MACControlPause:
		n = roce.PauseLen
	case roce.MACControlPFC:
		n = roce.PFCLen
	}
	if len(data) < n {
		df.SetTruncated()
		return fmt.Errorf("%w: %v needs %d bytes, have %d", ErrMACControlTruncated, m.Opcode, n, len(data))
	}
	switch m.Opcode {
	case roce.MACControlPause:
		m.PauseTime = v.PauseTime()
	case roce.MACControlPFC:
		m.EnableVector = v.PriorityEnableVector()
		for i := range m.Time {
			m.Time[i] = v.Time(i)
		}
	}
	m.BaseLayer = gl.BaseLayer{Contents: data[:n], Payload: data[n:]}
	return nil
}

// SerializeTo prepends the opcode and its parameters to b. It adds no pad:
// gopacket's Ethernet layer pads frames to 60 bytes. Opcodes other than
// PAUSE and PFC are refused, since their parameters are unknown.
func (m *MACControl) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	var n int
	switch m.Opcode {
	case roce.MACControlPause:
		n = roce.PauseLen
	case roce.MACControlPFC:
		n = roce.PFCLen
	default:
		return fmt.Errorf("roce/layers: cannot serialize MAC Control opcode %v", m.Opcode)
	}
	h, err := b.PrependBytes(n)
	if err != nil {
		return err
	}
	v := roce.MACControl(h)
	v.SetOpcode(m.Opcode)
	if m.Opcode == roce.MACControlPause {
		v.SetPauseTime(m.PauseTime)
		return nil
	}
	v.SetPriorityEnableVector(m.EnableVector)
	for i, q := range m.Time {
		v.SetTime(i, q)
	}
	return nil
}

func decodeMACControl(data []byte, p gopacket.PacketBuilder) error {
	m := &MACControl{}
	if err := m.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(m)
	return nil
}

var (
	_ gopacket.DecodingLayer     = (*MACControl)(nil)
	_ gopacket.SerializableLayer = (*MACControl)(nil)
)
