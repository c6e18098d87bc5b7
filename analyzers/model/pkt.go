package model

import (
	"encoding/binary"

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

// Pkt is one RoCE packet of a trace as the analyzers see it. It holds
// no pointers (IP, not netip.Addr: copies of it are plain memory copies,
// the GC does not scan slices of it), and its fields are ordered by size,
// without padding between them: 144 bytes.
type Pkt struct {
	Index  int   // frame index in the trace (0-based)
	TimeNs int64 // switch timestamp (mirror traces, unwrapped) or capture time
	Conn   int   // index into Table.Conns; -1 when unknown
	// NPkts is, for a READ request, the number of response packets (PSNs)
	// it covers; 1 otherwise.
	NPkts      int
	PayloadLen int
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
	PSN      roce.PSN
	DMALen   uint32
	// MSN is the AETH's MSN of an ACK, NAK or RNR NAK; 0 otherwise.
	MSN    uint32
	DestQP uint32
	SrcIP  IP
	DstIP  IP
	Dir    Dir
	Kind   Kind
	Op     roce.Opcode
	Event  roce.Event
	// Delivered: the packet reached its destination intact (event neither
	// drop nor corrupt).
	Delivered bool
	// CE: the packet was delivered ECN-marked (event ecn, or the IP ECN
	// bits are 11).
	CE      bool
	AckReq  bool
	NAKCode roce.NAKCode
	// RNRTimer is an RNR NAK's minimum RNR timer code (0..31,
	// roce.RNRTimer); 0 otherwise.
	RNRTimer uint8
	// Retx is set by the retransmission tracker when this data packet
	// re-sends a PSN already sent.
	Retx bool
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
	// The last frame Decode read, and whether d.pk holds it parsed (the
	// fast path reads its fields without parsing it: Packet parses it).
	frame    []byte
	origLen  int
	pkParsed bool
	slow     bool // tests: always parse
	// conns caches the connections of IPv4 frames the fast path read,
	// for Table conns (a Table does not change once built): most
	// frames' connection is found without hashing addresses.
	conns    [64]connEnt
	connsFor *Table
	// fastOK: the fast path read d.frame (an untagged IPv4 RoCE frame
	// of at least fastExt bytes).
	fastOK bool
}

// LastTOS returns the IPv4 TOS byte (DSCP and ECN: roce.FrameTOS) of the
// last frame Decode read without parsing it; ok is false as for
// LastMirrorFields.
func (d *Decoder) LastTOS() (tos uint8, ok bool) {
	if !d.fastOK {
		return 0, false
	}
	return d.frame[fastL3+1], true
}

// LastMirrorFields returns what the last Decode (or DecodeDeferred) read
// of its frame when it read the frame without parsing it (an untagged
// IPv4 RoCE frame): the 48-bit fields a mirror copy carries in its source
// MAC (switch and sequence number, trace.MirrorFields' seq) and
// destination MAC (timestamp), and the IPv4 TTL (event and queue depth
// bits). ok is false when the frame was parsed, or not decoded: the
// caller reads the frame itself then. It saves reading the same bytes
// twice (the integrity check reads these of every frame).
func (d *Decoder) LastMirrorFields() (seqField, tsNs uint64, ttl uint8, ok bool) {
	if !d.fastOK {
		return 0, 0, 0, false
	}
	b := d.frame[:fastExt] // the fast path's layout, as decodeFast reads it
	return uint64(binary.BigEndian.Uint16(b[6:]))<<32 | uint64(binary.BigEndian.Uint32(b[8:])),
		uint64(binary.BigEndian.Uint16(b[0:]))<<32 | uint64(binary.BigEndian.Uint32(b[2:])), b[fastL3+8], true
}

// connEnt is a cached Table.Assign: k1 the IPv4 source and destination,
// k2 the destination QPN and the kind of lookup (kindLookup), or
// emptyConn.
type connEnt struct {
	k1, k2 uint64
	conn   int32
	dir    Dir
}

// emptyConn is the k2 of an empty connEnt: no packet's (a QPN has 24
// bits).
const emptyConn = ^uint64(0)

// opClass is what Decode needs of an opcode: one lookup in opClasses
// instead of a dozen calls of roce.Opcode's methods (each its own lookup
// in roce's table, several with their own branches).
type opClass struct {
	// kind is the packet's Kind, but for an acknowledgement (ack), whose
	// AETH decides it.
	kind Kind
	ack  bool // Opcode.IsAck
	data bool // Opcode.IsData
	// fast: the fast path reads the opcode's packets (RC or CNP, without
	// RDETH, DETH or FETH).
	fast bool
	ext  uint8 // Opcode.ExtLen
	// aethOff is the offset of an acknowledgement's AETH in the extended
	// headers (after the RETH and AtomicETH of the opcodes with them).
	aethOff uint8
}

// opClasses is opClass of every opcode, derived from roce's Opcode
// methods.
var opClasses = func() (t [256]opClass) {
	for i := range t {
		op := roce.Opcode(i)
		c := &t[i]
		switch {
		case op.IsCNP():
			c.kind = KindCNP
		case op.Transport() != roce.TransportRC:
			c.kind = KindOther
		case op.IsAck():
			c.ack = true
		case op.IsReadRequest():
			c.kind = KindReadReq
		case op.IsReadResponse():
			c.kind = KindReadResp
		case op.IsWrite() || op.IsSend():
			c.kind = KindData
		default:
			c.kind = KindOther
		}
		c.data = op.IsData()
		c.fast = (op.Transport() == roce.TransportRC || op.IsCNP()) && !op.HasRDETH() && !op.HasDETH() && !op.HasFETH()
		c.ext = uint8(op.ExtLen())
		if op.HasRETH() {
			c.aethOff += roce.RETHLen
		}
		if op.HasAtomicETH() {
			c.aethOff += roce.AtomicETHLen
		}
	}
	return t
}()

// Offsets of the fast path's frames: Ethernet without VLAN tags, IPv4
// without options, UDP, BTH.
const (
	fastL3  = roce.EthernetLen
	fastL4  = fastL3 + roce.IPv4MinLen
	fastBTH = fastL4 + roce.UDPLen
	fastExt = fastBTH + roce.BTHLen
)

// decodeFast decodes tp into p when its frame has the common shape (an
// RC RoCEv2 packet or a CNP over untagged IPv4 without options or
// fragmentation, its BTH captured, its lengths consistent) and reports
// whether it did (fast) and what decode returns then; it gives what
// parsing the frame gives (decodeParsed), and reports fast false, p left
// alone, for any other frame (decodeParsed decides). It reads the fields
// it needs straight from the frame into p: no copy in between, and each
// with one load of the frame's bytes (an array copied to the stack and
// read back with wider loads than were stored stalls on store
// forwarding, see the Intel 64 and IA-32 Architectures Optimization
// Reference Manual, "Store Forwarding": reading the MACs that way cost
// ~20 ns a packet).
func (d *Decoder) decodeFast(tp *trace.Packet, p *Pkt, deferred bool) (fast, ok bool, raw uint64, hasRaw bool) {
	frame := tp.Data
	if len(frame) < fastExt {
		return
	}
	// EtherType IPv4, version 4 with a 20-byte header, protocol UDP, no
	// fragment.
	if binary.BigEndian.Uint32(frame[12:])>>8 != 0x08_00_45 || frame[fastL3+9] != 17 ||
		binary.BigEndian.Uint16(frame[fastL3+6:])&0x3FFF != 0 {
		return
	}
	ipLen := int(binary.BigEndian.Uint16(frame[fastL3+2:]))
	udpLen := int(binary.BigEndian.Uint16(frame[fastL4+4:]))
	if fastL4+udpLen != fastL3+ipLen || udpLen < roce.UDPLen+roce.BTHLen+roce.ICRCLen {
		return
	}
	holdAt := fastL4 + 6 // the hold: the UDP checksum (roce.Packet.HoldCode)
	switch udpDst := binary.BigEndian.Uint16(frame[fastL4+2:]); {
	case udpDst == roce.UDPPort:
	case d.Parser.MirrorPort != 0 && udpDst == d.Parser.MirrorPort:
		holdAt = fastL4 // a raw copy's: its source port
	default:
		return
	}
	op := roce.Opcode(frame[fastBTH])
	c := &opClasses[op]
	if !c.fast {
		return
	}
	pad := int(frame[fastBTH+1]>>4) & 3
	payloadLen := fastL3 + ipLen - roce.ICRCLen - (fastExt + int(c.ext)) - pad
	if payloadLen < 0 {
		return
	}
	// The frame is the fast path's to decode. Every field of p is set
	// once, each with its own store: the fields set below, then the rest
	// (their zero values) here. Clearing p first (*p = Pkt{}) stores most
	// bytes twice, which cost ~5 ns a packet (BenchmarkDecode); a
	// composite literal is built on the stack and copied, with a failed
	// store forwarding. TestDecodeFast decodes into a Pkt whose every
	// field is set, to catch a field left out.
	p.Index, p.TimeNs, p.Conn, p.Op, p.PayloadLen = tp.Index, tp.TimeNs, -1, op, payloadLen
	p.HoldNs, p.HoldUnitNs, p.QDepth, p.QDepthUnit = 0, 0, 0, 0
	p.DMALen, p.MSN = 0, 0
	p.Dir, p.Event, p.CE, p.NAKCode, p.RNRTimer, p.Retx, p.Switch = DirNone, roce.EventNone, false, 0, 0, false, 0
	// BTH bytes 4..11: resv6 (the depth's low bits), DestQP, AckReq,
	// PSN.
	bth := binary.BigEndian.Uint64(frame[fastBTH+4:])
	p.PSN, p.DestQP, p.AckReq = roce.PSN(bth&0xFF_FFFF), uint32(bth>>32)&0xFF_FFFF, bth&(0x80<<24) != 0
	src4, dst4 := binary.BigEndian.Uint32(frame[fastL3+12:]), binary.BigEndian.Uint32(frame[fastL3+16:])
	p.SrcIP.set4(src4)
	p.DstIP.set4(dst4)
	p.NPkts = 1
	if p.FrameLen = tp.OrigLen; p.FrameLen == 0 {
		p.FrameLen = len(tp.Data)
	}
	if d.Mirror {
		// The MACs as 48-bit numbers (roce.MAC.Uint64), one 8-byte load
		// each.
		dstMAC := binary.BigEndian.Uint64(frame[0:]) >> 16
		srcMAC := binary.BigEndian.Uint64(frame[4:]) & (1<<48 - 1)
		if deferred {
			raw, hasRaw = dstMAC, true
		} else {
			p.TimeNs = d.unwrap(dstMAC)
		}
		ttl := frame[fastL3+8]
		d.mirrorMeta(p, srcMAC, ttl, roce.HoldCode(binary.BigEndian.Uint16(frame[holdAt:])),
			roce.DepthCode(ttl>>3)<<6|roce.DepthCode(bth>>56&0x3F))
	}
	p.Delivered = Delivered(p.Event)
	p.Kind = c.kind
	if c.ack {
		at := fastExt + int(c.aethOff)
		if at+roce.AETHLen > len(frame) {
			return true, false, raw, hasRaw
		}
		aeth := binary.BigEndian.Uint32(frame[at:])
		setAck(p, roce.Syndrome(aeth>>24), aeth&0xFF_FFFF)
	}
	if p.Kind == KindReadReq && fastExt+roce.RETHLen <= len(frame) { // its RETH: first after the BTH
		d.setDMALen(p, binary.BigEndian.Uint32(frame[fastExt+12:]))
	}
	if p.Delivered && c.data && (p.Event == roce.EventECN || frame[fastL3+1]&3 == 3) {
		p.CE = true
	}
	if d.Table != nil {
		// d.Table.Assign(p), cached by addresses, QPN and kind of lookup
		// (in line: a call would cost as much as the lookup).
		k1, k2 := uint64(src4)<<32|uint64(dst4), uint64(p.DestQP)<<2|uint64(kindLookup[p.Kind])
		e := &d.conns[(k1*0x9E3779B97F4A7C15^k2*0xC2B2AE3D27D4EB4F)>>58]
		if e.k1 == k1 && e.k2 == k2 && d.connsFor == d.Table {
			p.Conn, p.Dir = int(e.conn), e.dir
		} else {
			d.assignMiss(p, e, k1, k2)
		}
	}
	return true, true, raw, hasRaw
}

// mirrorMeta sets p's fields from the mirror metadata of its frame: the
// source MAC's switch, the TTL's event, the hold and the queue depth.
func (d *Decoder) mirrorMeta(p *Pkt, srcMAC uint64, ttl uint8, hold roce.HoldCode, depth roce.DepthCode) {
	p.Switch, _ = roce.SplitMirrorSeq(srcMAC)
	if p.Event = roce.Event(ttl & 7); !p.Event.Valid() {
		p.Event = roce.EventNone
	}
	if d.Holds && roce.Event(ttl&7).Held() {
		p.HoldNs, p.HoldUnitNs = hold.Ns(), hold.Unit()
	}
	p.QDepth, p.QDepthUnit = depth.Bytes(), depth.Unit()
}

// setAck sets the kind of an acknowledgement p from its AETH.
func setAck(p *Pkt, s roce.Syndrome, msn uint32) {
	p.MSN = msn
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
}

// setDMALen sets the DMA length of a READ request p and the number of
// response packets it asks for.
func (d *Decoder) setDMALen(p *Pkt, dmaLen uint32) {
	p.DMALen = dmaLen
	mtu := d.MTU
	if mtu <= 0 {
		mtu = 1024
	}
	p.NPkts = max(1, int((uint64(dmaLen)+uint64(mtu)-1)/uint64(mtu)))
}

// decodeParsed decodes tp, which d.pk holds parsed, into p: decode's
// answer for the frames decodeFast does not read.
func (d *Decoder) decodeParsed(tp *trace.Packet, p *Pkt, deferred bool) (ok bool, raw uint64, hasRaw bool) {
	pk := &d.pk
	op := pk.Opcode
	c := &opClasses[op]
	*p = Pkt{}
	p.Index, p.TimeNs, p.Conn, p.Op, p.PSN = tp.Index, tp.TimeNs, -1, op, pk.BTH.PSN()
	p.SrcIP, p.DstIP = IPFrom(pk.SrcIP), IPFrom(pk.DstIP)
	p.DestQP, p.NPkts, p.PayloadLen, p.AckReq = pk.BTH.DestQP(), 1, pk.PayloadLen, pk.BTH.AckReq()
	if p.FrameLen = tp.OrigLen; p.FrameLen == 0 {
		p.FrameLen = len(tp.Data)
	}
	if d.Mirror {
		if ts := roce.MAC(pk.DstMAC).Uint64(); deferred {
			raw, hasRaw = ts, true
		} else {
			p.TimeNs = d.unwrap(ts)
		}
		d.mirrorMeta(p, roce.MAC(pk.SrcMAC).Uint64(), pk.TTL, pk.HoldCode(), pk.DepthCode())
	}
	p.Delivered = Delivered(p.Event)
	p.Kind = c.kind
	if c.ack {
		if pk.AETH == nil {
			return false, raw, hasRaw
		}
		setAck(p, pk.AETH.Syndrome(), pk.AETH.MSN())
	}
	if p.Kind == KindReadReq && pk.RETH != nil {
		d.setDMALen(p, pk.RETH.DMALength())
	}
	if p.Delivered && c.data && (p.Event == roce.EventECN || pk.TOS&3 == 3) {
		p.CE = true
	}
	if d.Table != nil {
		d.Table.Assign(p)
	}
	return true, raw, hasRaw
}

// Decode fills p from tp and reports whether tp is an RC RoCE packet (or a
// CNP). Connections are assigned when d.Table is set. A wrapped mirror copy
// (a PFC or PAUSE frame, trace.IsMACMirror) is no RoCE packet: Decode
// reports false, so the analyzers never see it; it still sets p.Index and
// p.Switch (the copy's switch, when d.Mirror).
func (d *Decoder) Decode(tp *trace.Packet, p *Pkt) bool {
	ok, _, _ := d.decode(tp, p, false)
	return ok
}

// DecodeDeferred is Decode without the one step that depends on the
// frames decoded before: the extension of the 48-bit switch timestamp
// across wraps. When Decode would have unwrapped a timestamp (d.Mirror),
// hasRaw is set and raw is that timestamp; whoever sees the packets in
// trace order then calls Unwrap(raw) for each (whether ok or not, as
// Decode does) and, when ok, sets p.TimeNs to the result. Decoders that
// share d's settings and Table can thus decode batches of a trace in
// parallel (each with its own Decoder: the connection cache is per
// Decoder) and give the packets Decode gives.
func (d *Decoder) DecodeDeferred(tp *trace.Packet, p *Pkt) (ok bool, raw uint64, hasRaw bool) {
	return d.decode(tp, p, true)
}

// Unwrap is the timestamp extension DecodeDeferred leaves out, applied
// to the raw timestamps in trace order.
func (d *Decoder) Unwrap(raw uint64) int64 { return d.unwrap(raw) }

func (d *Decoder) decode(tp *trace.Packet, p *Pkt, deferred bool) (ok bool, raw uint64, hasRaw bool) {
	if tp.IsMACMirror() {
		d.fastOK = false
		*p = Pkt{Index: tp.Index, Conn: -1}
		if d.Mirror {
			p.Switch, _, _, _ = trace.MirrorSwitchSeq(tp.Data)
		}
		return false, 0, false
	}
	d.frame, d.origLen, d.pkParsed = tp.Data, tp.OrigLen, false
	if !d.slow {
		if d.fastOK, ok, raw, hasRaw = d.decodeFast(tp, p, deferred); d.fastOK {
			return ok, raw, hasRaw
		}
	}
	d.fastOK, d.pkParsed = false, true
	if err := d.Parser.Parse(tp.Data, tp.OrigLen, &d.pk); err != nil {
		return false, 0, false
	}
	return d.decodeParsed(tp, p, deferred)
}

// kindLookup is the kind of Table lookup a packet of a kind needs: 1
// request, 2 response, 3 CNP (connEnt.k2), 0 none (KindOther).
var kindLookup = func() (t [256]uint8) {
	for k := range t {
		switch k := Kind(k); {
		case k == KindOther || int(k) >= len(kindNames):
		case k == KindCNP:
			t[k] = 3
		case k.IsRequest():
			t[k] = 1
		default:
			t[k] = 2
		}
	}
	return t
}()

// assignMiss assigns p's connection when e, the entry of the connection
// cache for p's keys k1 and k2, holds another (or is the cache of another
// Table), and caches it in e.
func (d *Decoder) assignMiss(p *Pkt, e *connEnt, k1, k2 uint64) {
	if k2&3 == 0 { // KindOther: no connection, not cached
		p.Conn, p.Dir = -1, DirNone
		return
	}
	if d.connsFor != d.Table {
		for i := range d.conns {
			d.conns[i] = connEnt{k2: emptyConn}
		}
		d.connsFor = d.Table
	}
	d.Table.Assign(p)
	*e = connEnt{k1: k1, k2: k2, conn: int32(p.Conn), dir: p.Dir}
}

// Packet returns the frame the last Decode that reported true read,
// parsed with d.Parser (the ICRC is not verified): its fields for
// whoever needs more than a Pkt. It is overwritten by the next Decode.
func (d *Decoder) Packet() *roce.Packet {
	if !d.pkParsed {
		d.Parser.Parse(d.frame, d.origLen, &d.pk) // it parses: Decode's fast path read it
		d.pkParsed = true
	}
	return &d.pk
}

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
