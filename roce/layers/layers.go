package layers

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gopacket/gopacket"
	gl "github.com/gopacket/gopacket/layers"

	"github.com/netlumina/lumina/roce"
)

// LayerTypeRoCE is the gopacket layer type of the RoCEv2 transport layer
// (BTH, extended headers, payload, pad, ICRC). Registered with number 1791.
var LayerTypeRoCE = gopacket.RegisterLayerType(1791, gopacket.LayerTypeMetadata{
	Name:    "RoCEv2",
	Decoder: gopacket.DecodeFunc(decodeRoCE),
})

func init() {
	gl.RegisterUDPPortLayerType(roce.UDPPort, LayerTypeRoCE)
}

// RoCE is the RoCEv2 transport layer: the BTH, the extended transport
// headers its opcode carries, the payload, the pad and the ICRC. Header
// fields that the opcode does not carry are zero after decoding and ignored
// when serializing.
//
// LayerContents holds BTH + extended headers; LayerPayload the payload
// without pad and ICRC.
type RoCE struct {
	gl.BaseLayer

	Opcode         roce.Opcode
	SolicitedEvent bool
	MigReq         bool
	PadCount       uint8
	TVer           uint8
	PKey           uint16
	FECN, BECN     bool
	DestQP         uint32
	AckReq         bool
	PSN            roce.PSN

	RETH      roce.RETHFields
	AETH      roce.AETHFields
	Immediate uint32
	InvRKey   uint32
	Atomic    roce.AtomicFields
	AtomicAck uint64
	QKey      uint32
	SrcQP     uint32
	EEContext uint32
	FETH      uint32

	// ICRC is the value of the ICRC as a little-endian uint32 (as
	// roce.Packet.ICRCOnWire). SerializeTo writes it as is: the ICRC covers
	// the IP and UDP headers, which are serialized after this layer, so
	// compute it afterwards with FixICRC on the finished frame.
	ICRC uint32
}

// ErrTruncated is returned when the data is shorter than the headers the
// opcode requires.
var ErrTruncated = errors.New("roce/layers: truncated RoCEv2 packet")

// LayerType returns LayerTypeRoCE.
func (r *RoCE) LayerType() gopacket.LayerType { return LayerTypeRoCE }

// CanDecode returns LayerTypeRoCE.
func (r *RoCE) CanDecode() gopacket.LayerClass { return LayerTypeRoCE }

// NextLayerType returns gopacket.LayerTypePayload.
func (r *RoCE) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes decodes a RoCEv2 transport layer (the UDP payload).
func (r *RoCE) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < roce.BTHLen {
		df.SetTruncated()
		return fmt.Errorf("%w: %d bytes, BTH needs %d", ErrTruncated, len(data), roce.BTHLen)
	}
	b := roce.BTH(data)
	*r = RoCE{
		Opcode: b.Opcode(), SolicitedEvent: b.SolicitedEvent(), MigReq: b.MigReq(),
		PadCount: uint8(b.PadCount()), TVer: b.TVer(), PKey: b.PKey(), FECN: b.FECN(), BECN: b.BECN(),
		DestQP: b.DestQP(), AckReq: b.AckReq(), PSN: b.PSN(),
	}
	hdr := roce.BTHLen + r.Opcode.ExtLen()
	if len(data) < hdr+roce.ICRCLen+int(r.PadCount) {
		df.SetTruncated()
		return fmt.Errorf("%w: %v needs %d bytes, have %d", ErrTruncated, r.Opcode, hdr+roce.ICRCLen, len(data))
	}
	e := data[roce.BTHLen:hdr]
	take := func(has bool, n int) []byte {
		if !has {
			return nil
		}
		h := e[:n]
		e = e[n:]
		return h
	}
	op := r.Opcode
	if h := take(op.HasRDETH(), roce.RDETHLen); h != nil {
		r.EEContext = roce.RDETH(h).EEContext()
	}
	if h := take(op.HasDETH(), roce.DETHLen); h != nil {
		r.QKey, r.SrcQP = roce.DETH(h).QKey(), roce.DETH(h).SrcQP()
	}
	if h := take(op.HasFETH(), roce.FETHLen); h != nil {
		r.FETH = roce.FETH(h).Value()
	}
	if h := take(op.HasRETH(), roce.RETHLen); h != nil {
		x := roce.RETH(h)
		r.RETH = roce.RETHFields{VA: x.VirtualAddress(), RKey: x.RKey(), Length: x.DMALength()}
	}
	if h := take(op.HasAtomicETH(), roce.AtomicETHLen); h != nil {
		x := roce.AtomicETH(h)
		r.Atomic = roce.AtomicFields{VA: x.VirtualAddress(), RKey: x.RKey(), SwapAdd: x.SwapAdd(), Compare: x.Compare()}
	}
	if h := take(op.HasAETH(), roce.AETHLen); h != nil {
		r.AETH = roce.AETHFields{Syndrome: roce.AETH(h).Syndrome(), MSN: roce.AETH(h).MSN()}
	}
	if h := take(op.HasAtomicAckETH(), roce.AtomicAckETHLen); h != nil {
		r.AtomicAck = roce.AtomicAckETH(h).OriginalData()
	}
	if h := take(op.HasImmDt(), roce.ImmDtLen); h != nil {
		r.Immediate = roce.ImmDt(h).Immediate()
	}
	if h := take(op.HasIETH(), roce.IETHLen); h != nil {
		r.InvRKey = roce.IETH(h).RKey()
	}
	end := len(data) - roce.ICRCLen
	r.ICRC = binary.LittleEndian.Uint32(data[end:])
	r.BaseLayer = gl.BaseLayer{Contents: data[:hdr], Payload: data[hdr : end-int(r.PadCount)]}
	return nil
}

// SerializeTo prepends BTH and extended headers to the payload in b and
// appends pad and ICRC. With opts.FixLengths, PadCount is set from the
// payload length.
func (r *RoCE) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if !r.Opcode.Valid() {
		return fmt.Errorf("roce/layers: cannot serialize unknown opcode %v", r.Opcode)
	}
	payload := len(b.Bytes())
	if opts.FixLengths {
		r.PadCount = uint8(roce.PadLen(payload))
	}
	tail, err := b.AppendBytes(int(r.PadCount) + roce.ICRCLen)
	if err != nil {
		return err
	}
	clear(tail[:r.PadCount])
	binary.LittleEndian.PutUint32(tail[r.PadCount:], r.ICRC)
	hdr, err := b.PrependBytes(roce.BTHLen + r.Opcode.ExtLen())
	if err != nil {
		return err
	}
	clear(hdr)
	bth := roce.BTH(hdr)
	bth.SetOpcode(r.Opcode)
	bth.SetSolicitedEvent(r.SolicitedEvent)
	bth.SetMigReq(r.MigReq)
	bth.SetPadCount(int(r.PadCount))
	bth.SetTVer(r.TVer)
	bth.SetPKey(r.PKey)
	bth.SetFECN(r.FECN)
	bth.SetBECN(r.BECN)
	bth.SetDestQP(r.DestQP)
	bth.SetAckReq(r.AckReq)
	bth.SetPSN(r.PSN)
	e := hdr[roce.BTHLen:]
	put := func(has bool, n int, fill func([]byte)) {
		if has {
			fill(e[:n])
			e = e[n:]
		}
	}
	op := r.Opcode
	put(op.HasRDETH(), roce.RDETHLen, func(h []byte) { roce.RDETH(h).SetEEContext(r.EEContext) })
	put(op.HasDETH(), roce.DETHLen, func(h []byte) { roce.DETH(h).SetQKey(r.QKey); roce.DETH(h).SetSrcQP(r.SrcQP) })
	put(op.HasFETH(), roce.FETHLen, func(h []byte) { roce.FETH(h).SetValue(r.FETH) })
	put(op.HasRETH(), roce.RETHLen, func(h []byte) {
		x := roce.RETH(h)
		x.SetVirtualAddress(r.RETH.VA)
		x.SetRKey(r.RETH.RKey)
		x.SetDMALength(r.RETH.Length)
	})
	put(op.HasAtomicETH(), roce.AtomicETHLen, func(h []byte) {
		x := roce.AtomicETH(h)
		x.SetVirtualAddress(r.Atomic.VA)
		x.SetRKey(r.Atomic.RKey)
		x.SetSwapAdd(r.Atomic.SwapAdd)
		x.SetCompare(r.Atomic.Compare)
	})
	put(op.HasAETH(), roce.AETHLen, func(h []byte) { roce.AETH(h).SetSyndrome(r.AETH.Syndrome); roce.AETH(h).SetMSN(r.AETH.MSN) })
	put(op.HasAtomicAckETH(), roce.AtomicAckETHLen, func(h []byte) { roce.AtomicAckETH(h).SetOriginalData(r.AtomicAck) })
	put(op.HasImmDt(), roce.ImmDtLen, func(h []byte) { roce.ImmDt(h).SetImmediate(r.Immediate) })
	put(op.HasIETH(), roce.IETHLen, func(h []byte) { roce.IETH(h).SetRKey(r.InvRKey) })
	return nil
}

// FixICRC computes and writes the ICRC of a complete serialized Ethernet
// frame; see roce.SetICRC.
func FixICRC(frame []byte) bool { return roce.SetICRC(frame) }

func decodeRoCE(data []byte, p gopacket.PacketBuilder) error {
	r := &RoCE{}
	if err := r.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(r)
	return p.NextDecoder(r.NextLayerType())
}

var (
	_ gopacket.DecodingLayer     = (*RoCE)(nil)
	_ gopacket.SerializableLayer = (*RoCE)(nil)
)
