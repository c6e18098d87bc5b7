package model

import (
	"net/netip"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// Dir is the direction of a packet within its connection.
type Dir uint8

// Directions. The zero value means the packet belongs to no known
// connection.
const (
	DirNone     Dir = 0
	ToResponder Dir = 1 // requests; READ CNPs
	ToRequester Dir = 2 // ACKs, NAKs, READ responses; WRITE/SEND CNPs
)

// String returns "none", "to-responder" or "to-requester".
func (d Dir) String() string {
	switch d {
	case ToResponder:
		return "to-responder"
	case ToRequester:
		return "to-requester"
	}
	return "none"
}

// Kind is the coarse class of a packet.
type Kind uint8

// Packet kinds.
const (
	KindOther    Kind = iota // atomics, UD, unknown opcodes
	KindData                 // SEND or WRITE request packet
	KindReadReq              // READ request
	KindReadResp             // READ response (any position)
	KindAck                  // ACKNOWLEDGE with an ACK syndrome
	KindNak                  // NAK: PSN sequence error
	KindNakFatal             // NAK with another code (the QP goes to error)
	KindRNR                  // RNR NAK
	KindCNP                  // congestion notification
)

var kindNames = [...]string{"other", "data", "read-req", "read-resp", "ack", "nak", "nak-fatal", "rnr", "cnp"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// IsRequest reports whether packets of kind k are sent by a requester.
func (k Kind) IsRequest() bool { return k == KindData || k == KindReadReq }

// Pkt is one RoCE packet of a trace as the analyzers see it.
type Pkt struct {
	Index  int   // frame index in the trace (0-based)
	TimeNs int64 // switch timestamp (mirror traces, unwrapped) or capture time
	Conn   int   // index into Table.Conns; -1 when unknown
	Dir    Dir
	Kind   Kind
	Op     roce.Opcode
	PSN    roce.PSN
	Event  roce.Event
	// Delivered: the packet reached its destination intact (event neither
	// drop nor corrupt).
	Delivered bool
	// CE: the packet was delivered ECN-marked (event ecn, or the IP ECN
	// bits are 11).
	CE     bool
	AckReq bool
	// NPkts is, for a READ request, the number of response packets (PSNs)
	// it covers; 1 otherwise.
	NPkts      int
	DMALen     uint32
	PayloadLen int
	NAKCode    roce.NAKCode
	// RNRTimer is an RNR NAK's minimum RNR timer code (0..31,
	// roce.RNRTimer); 0 otherwise.
	RNRTimer uint8
	// MSN is the AETH's MSN of an ACK, NAK or RNR NAK; 0 otherwise.
	MSN    uint32
	SrcIP  netip.Addr
	DstIP  netip.Addr
	DestQP uint32
	// Retx is set by the retransmission tracker when this data packet
	// re-sends a PSN already sent.
	Retx bool
	// HoldNs is, for a Late packet of a mirror trace, how long the switch
	// held it (roce.MirrorMeta.HoldNs): it arrived at TimeNs − HoldNs. The
	// true hold is in [HoldNs, HoldNs+HoldUnitNs). HoldUnitNs is 0 when the
	// trace carries no hold (not a mirror trace, or not Late).
	HoldNs, HoldUnitNs int64
	// QDepth is, for a packet of a mirror trace, the depth in bytes of the
	// switch's egress queue it joined, measured before it joined
	// (roce.MirrorMeta.QDepth; 0 from a switch without a queue model and
	// for a dropped packet). The true depth is in [QDepth,
	// QDepth+QDepthUnit). Both are 0 when the trace is not a mirror trace.
	QDepth, QDepthUnit int64
	// FrameLen is the length in bytes of the frame as it was forwarded
	// (the capture's original length; the mirror copy keeps it): its
	// serialization time on the egress link.
	FrameLen int
	// Switch is the logical switch whose copy this is
	// (roce.MirrorMeta.Switch; Fabric.Switches[Switch] names it): 0 in a
	// one-switch run and when the trace is not a mirror trace.
	Switch uint8
}

// ArrivalNs returns when p reached the switch: TimeNs less the hold of a
// Late packet (at most HoldUnitNs early), TimeNs otherwise.
func (p *Pkt) ArrivalNs() int64 { return p.TimeNs - p.HoldNs }

// Late reports whether the switch held p before forwarding it (event
// delay or reorder): its mirror copy is taken when it leaves, so it may
// follow packets sent after it.
func (p *Pkt) Late() bool { return p.Event == roce.EventDelay || p.Event == roce.EventReorder }

// Copy reports whether p is an extra copy the switch made of the packet
// before it (event duplicate): its sender did not send it.
func (p *Pkt) Copy() bool { return p.Event == roce.EventDuplicate }

// Delivered reports whether a packet with event e reached its destination
// intact.
func Delivered(e roce.Event) bool { return e != roce.EventDrop && e != roce.EventCorrupt }

// Decoder turns trace packets into Pkts. Mirror selects how timestamps and
// events are read; Table assigns connections. It does not allocate.
type Decoder struct {
	Parser roce.Parser
	// Mirror: the trace carries Lumina mirror metadata (48-bit switch
	// timestamps in the destination MAC, events in the TTL bits 0..2, queue
	// depths in the TTL bits 3..7 and the BTH's resv6).
	Mirror bool
	// MTU computes the PSN ranges of READ requests.
	MTU   int
	Table *Table
	// Holds: the mirror copies of held packets carry their hold
	// (Params.MirrorHolds); Pkt.HoldNs is read only then.
	Holds bool

	pk      roce.Packet
	lastRaw uint64
	wraps   int64
	started bool
}

// Decode fills p from tp and reports whether tp is an RC RoCE packet (or a
// CNP). Connections are assigned when d.Table is set. A wrapped mirror copy
// (a PFC or PAUSE frame, trace.IsMACMirror) is no RoCE packet: Decode
// reports false, so the analyzers never see it; it still sets p.Index and
// p.Switch (the copy's switch, when d.Mirror).
func (d *Decoder) Decode(tp *trace.Packet, p *Pkt) bool {
	if tp.IsMACMirror() {
		*p = Pkt{Index: tp.Index, Conn: -1}
		if d.Mirror {
			p.Switch, _, _, _ = trace.MirrorSwitchSeq(tp.Data)
		}
		return false
	}
	if err := d.Parser.Parse(tp.Data, tp.OrigLen, &d.pk); err != nil {
		return false
	}
	pk := &d.pk
	op := pk.Opcode
	*p = Pkt{Index: tp.Index, TimeNs: tp.TimeNs, Conn: -1, Op: op, PSN: pk.BTH.PSN(),
		SrcIP: pk.SrcIP, DstIP: pk.DstIP, DestQP: pk.BTH.DestQP(), NPkts: 1, PayloadLen: pk.PayloadLen,
		AckReq: pk.BTH.AckReq(), FrameLen: tp.OrigLen}
	if p.FrameLen == 0 {
		p.FrameLen = len(tp.Data)
	}
	if d.Mirror {
		m := pk.Mirror()
		p.TimeNs = d.unwrap(m.TimestampNs)
		p.Switch = m.Switch
		p.Event = m.Event
		if !m.Event.Valid() {
			p.Event = roce.EventNone
		}
		if d.Holds && m.Event.Held() {
			c := pk.HoldCode()
			p.HoldNs, p.HoldUnitNs = c.Ns(), c.Unit()
		}
		c := pk.DepthCode()
		p.QDepth, p.QDepthUnit = c.Bytes(), c.Unit()
	}
	p.Delivered = Delivered(p.Event)
	switch {
	case op.IsCNP():
		p.Kind = KindCNP
	case op.Transport() != roce.TransportRC:
		p.Kind = KindOther
	case op.IsAck():
		if pk.AETH == nil {
			return false
		}
		s := pk.AETH.Syndrome()
		p.MSN = pk.AETH.MSN()
		switch s.Type() {
		case roce.AckTypeACK:
			p.Kind = KindAck
		case roce.AckTypeRNR:
			p.Kind = KindRNR
			p.RNRTimer = s.Value()
		case roce.AckTypeNAK:
			p.NAKCode = s.NAKCode()
			p.Kind = KindNakFatal
			if p.NAKCode == roce.NAKPSNSequenceError {
				p.Kind = KindNak
			}
		default:
			p.Kind = KindOther
		}
	case op.IsReadRequest():
		p.Kind = KindReadReq
		if pk.RETH != nil {
			p.DMALen = pk.RETH.DMALength()
			mtu := d.MTU
			if mtu <= 0 {
				mtu = 1024
			}
			p.NPkts = max(1, int((uint64(p.DMALen)+uint64(mtu)-1)/uint64(mtu)))
		}
	case op.IsReadResponse():
		p.Kind = KindReadResp
	case op.IsWrite() || op.IsSend():
		p.Kind = KindData
	default:
		p.Kind = KindOther
	}
	if p.Delivered && op.IsData() && (p.Event == roce.EventECN || pk.ECN() == 3) {
		p.CE = true
	}
	if d.Table != nil {
		d.Table.Assign(p)
	}
	return true
}

// Packet returns the frame the last Decode that reported true parsed (with
// d.Parser; the ICRC is not verified): its fields for whoever needs more
// than a Pkt, without parsing the frame again. It is overwritten by the
// next Decode.
func (d *Decoder) Packet() *roce.Packet { return &d.pk }

// unwrap extends a 48-bit switch timestamp to a monotonic int64 across
// wraps (a step back of more than half the range is a wrap).
func (d *Decoder) unwrap(raw uint64) int64 {
	const span = roce.MirrorTimeMask + 1
	if d.started && raw < d.lastRaw && d.lastRaw-raw > span/2 {
		d.wraps++
	}
	d.started = true
	d.lastRaw = raw
	return d.wraps*span + int64(raw)
}
