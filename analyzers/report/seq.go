package report

import (
	"net/netip"
	"unsafe"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// Point classes of the time-sequence graph. Every packet of a connection
// is one point of exactly one class; a packet with a switch event is drawn
// as the event (drop, corrupt, ECN mark, other event) rather than as data.
const (
	ClassData = iota
	ClassRetx
	ClassDrop
	ClassCorrupt
	ClassECN
	// ClassEvent: delayed, reordered or duplicated by the switch.
	ClassEvent
	ClassAck
	ClassNAK
	ClassCNP
	NumClasses
)

// ClassNames name the classes in legends.
var ClassNames = [NumClasses]string{"data", "retransmission", "drop", "corrupt", "ECN mark",
	"delay/reorder/duplicate", "ACK", "NAK", "CNP"}

// Limits of the collected plot data.
const (
	// MaxPlotBytes bounds the memory of the packets kept over all graphs
	// (the records' buffers, RecordBytes a packet, as allocated); later
	// packets are counted (Plots.Dropped), not drawn. The first packets of
	// the trace are kept, in trace order, whatever their connection.
	MaxPlotBytes = 64 << 20
	// RecordBytes is the memory of one kept packet.
	RecordBytes = int(unsafe.Sizeof(pktRec{}))
	// MaxPlotPackets is the most packets kept: MaxPlotBytes /
	// RecordBytes (1,048,576), fewer when the buffers of many connections
	// are partly filled or messages carry a RETH.
	MaxPlotPackets = MaxPlotBytes / RecordBytes
	// chunkMin and chunkMax are the sizes, in records, of a connection's
	// first and largest buffers (they double in between): a buffer is
	// never copied to grow.
	chunkMin, chunkMax = 256, 4096
)

// Flag bits of a packet record (the fl column of the page).
const (
	flagAckReq   = 1 << 0
	flagBECN     = 1 << 1
	flagECNShift = 2 // 2 bits: IP ECN
	flagMirror   = 1 << 4
	flagPadShift = 5 // 2 bits: BTH PadCnt
	flagICRCSh   = 7 // 2 bits: roce.ICRCStatus
	flagAETH     = 1 << 9
	flagRETH     = 1 << 10
)

// pktRec is one packet of a graph: what the time-sequence graph draws and
// what the page needs to print its `lumina decode` line.
type pktRec struct {
	t     int64  // graph time: switch timestamp (mirror traces) or capture time
	cap   int64  // capture time (pcap), the decode line's
	seq   uint64 // mirror sequence number
	ts    uint64 // mirror timestamp (raw)
	idx   uint32 // frame index in the trace
	rel   int32  // PSN − IPSN (CNP: the connection's last data PSN)
	psn   uint32
	aeth  uint32 // syndrome<<24 | MSN
	reth  int32  // index into ConnPackets.reth; -1 none
	flags uint16
	tup   uint16 // index into Plots.Tuples
	plen  uint16
	cls   uint8
	op    uint8
	ev    uint8
	hold  uint16 // a held copy's roce.HoldCode (0 none)
}

// rethRec is a packet's RETH (rare: one per message).
type rethRec struct {
	va         uint64
	rkey, dlen uint32
}

// Tuple is the addressing of a packet: "src:port > dst:port " as lumina
// decode prints it, and the destination QP.
type Tuple struct {
	Prefix string
	QP     uint32
}

type tupleKey struct {
	src, dst     netip.Addr
	sport, dport uint16
	qp           uint32
}

// ConnPackets are one connection's packets, in trace order.
type ConnPackets struct {
	Conn   int // connection ID
	chunks [][]pktRec
	n      int
	reth   []rethRec
	Count  [NumClasses]int // points per class
}

// Len returns the number of packets kept.
func (c *ConnPackets) Len() int { return c.n }

// all calls f with every packet kept, in trace order.
func (c *ConnPackets) all(f func(r *pktRec)) {
	for _, ch := range c.chunks {
		for j := range ch {
			f(&ch[j])
		}
	}
}

// Plots is the data behind report.html's time-sequence graphs.
type Plots struct {
	T0 int64 // first graph time of the trace
	// Conns are the graphs' connections (every connection with packets,
	// in table order; the page draws the first 16 at once, the others on
	// demand).
	Conns  []ConnPackets
	Tuples []Tuple
	// Dropped counts packets of graphed connections beyond
	// MaxPlotBytes (not drawn).
	Dropped int
	// page is the graphs as the page stores them, once a page was
	// rendered: each connection's records are released as soon as they
	// are encoded, so that the page is built without a second copy of
	// them (Len and Count stay).
	page *plotPage
}

// plotPage is the graphs' part of the page data, encoded once.
type plotPage struct {
	conns       []pageConn
	ops, events map[int]string
}

// SeqCollector gathers every packet of every connection
// during the analysis pass (at most MaxPlotBytes of them in all). Add
// allocates only to add a buffer (amortized) and for a new address tuple.
type SeqCollector struct {
	table   *model.Table
	conns   []*connBuf
	t0      int64
	started bool
	bytes   int // allocated for records
	full    bool
	dropped int
	parser  roce.Parser
	pk      roce.Packet
	tuples  map[tupleKey]uint16
	tupList []Tuple
}

type connBuf struct {
	chunks  [][]pktRec
	n       int
	reth    []rethRec
	count   [NumClasses]int
	lastPSN int32
	// The last tuple of each direction (to responder, to requester) and
	// its index: the tuples map is read only when it changes.
	lastKey [2]tupleKey
	lastTup [2]uint16
	hasTup  [2]bool
}

// NewSeqCollector returns a collector for the connections of t. mirrorPort is the UDP port of unrestored mirror copies
// (roce.Parser.MirrorPort), as the analysis decodes them.
func NewSeqCollector(t *model.Table, mirrorPort uint16) *SeqCollector {
	return &SeqCollector{table: t, conns: make([]*connBuf, len(t.Conns)),
		parser: roce.Parser{VerifyICRC: true, MirrorPort: mirrorPort}, tuples: map[tupleKey]uint16{}}
}

// Class returns p's class.
func Class(p *model.Pkt) int {
	switch p.Kind {
	case model.KindData, model.KindReadResp:
		switch {
		case p.Event == roce.EventDrop:
			return ClassDrop
		case p.Event == roce.EventCorrupt:
			return ClassCorrupt
		case p.CE:
			return ClassECN
		case p.Event == roce.EventDelay || p.Event == roce.EventReorder || p.Event == roce.EventDuplicate:
			return ClassEvent
		case p.Retx:
			return ClassRetx
		}
		return ClassData
	case model.KindReadReq:
		if p.Retx { // a re-issued READ: the NAK's role
			return ClassNAK
		}
		return ClassData
	case model.KindAck:
		return ClassAck
	case model.KindNak, model.KindNakFatal, model.KindRNR:
		return ClassNAK
	case model.KindCNP:
		return ClassCNP
	}
	return ClassData
}

// Add records the packet tp, decoded as p (after the analyzers saw it: p.Retx
// is set). mirror says whether lumina decode would print tp's mirror
// metadata (the trace carries mirror metadata).
func (c *SeqCollector) Add(tp *trace.Packet, p *model.Pkt, mirror bool) {
	if !c.keeps(p) {
		return
	}
	if c.parser.Parse(tp.Data, tp.OrigLen, &c.pk) != nil {
		return
	}
	c.add(tp, p, &c.pk, mirror)
}

// AddParsed is Add of a packet whose frame the caller has parsed into pk
// (with the collector's mirror port, and VerifyICRC or not: the ICRC is
// verified here if it was not), so that the frame is not parsed twice.
func (c *SeqCollector) AddParsed(tp *trace.Packet, p *model.Pkt, pk *roce.Packet, mirror bool) {
	if c.keeps(p) {
		c.add(tp, p, pk, mirror)
	}
}

// AddDecoded is AddParsed of the frame dec decoded last as p, which it
// parses (model.Decoder.Packet) only when the packet is kept: once the
// plots are full (MaxPlotBytes), no packet is, and parsing each cost ~70
// ns.
func (c *SeqCollector) AddDecoded(tp *trace.Packet, p *model.Pkt, dec *model.Decoder, mirror bool) {
	if c.keeps(p) {
		c.add(tp, p, dec.Packet(), mirror)
	}
}

// keeps reports whether a packet decoded as p is to be kept (and counts
// it dropped when beyond the limit).
func (c *SeqCollector) keeps(p *model.Pkt) bool {
	if !c.started {
		c.t0, c.started = p.TimeNs, true
	}
	if p.Conn < 0 || p.Conn >= len(c.conns) {
		return false
	}
	if c.full {
		c.dropped++
		return false
	}
	return true
}

func (c *SeqCollector) add(tp *trace.Packet, p *model.Pkt, pk *roce.Packet, mirror bool) {
	b := c.conns[p.Conn]
	if b == nil {
		b = &connBuf{}
		c.conns[p.Conn] = b
	}
	var last []pktRec
	if k := len(b.chunks); k > 0 {
		last = b.chunks[k-1]
	}
	need := 0 // bytes to allocate for this packet
	if len(last) == cap(last) {
		need = min(max(chunkMin, 2*cap(last)), chunkMax) * RecordBytes
	}
	if pk.RETH != nil && len(b.reth) == cap(b.reth) {
		need += max(4, 2*cap(b.reth)) * int(unsafe.Sizeof(rethRec{}))
	}
	if c.bytes+need > MaxPlotBytes {
		c.full = true // later packets of every connection: not drawn
		c.dropped++
		return
	}
	if len(last) == cap(last) {
		last = make([]pktRec, 0, min(max(chunkMin, 2*cap(last)), chunkMax))
		b.chunks = append(b.chunks, last)
	}
	if pk.RETH != nil && len(b.reth) == cap(b.reth) {
		b.reth = append(make([]rethRec, 0, max(4, 2*cap(b.reth))), b.reth...)
	}
	c.bytes += need
	rel := int32(c.table.Rel(p.Conn, p.PSN))
	cls := Class(p)
	switch p.Kind {
	case model.KindData, model.KindReadResp:
		b.lastPSN = rel
	case model.KindCNP:
		rel = b.lastPSN
	}
	k := tupleKey{src: pk.SrcIP, dst: pk.DstIP, sport: pk.UDPSrc, dport: pk.UDPDst, qp: pk.BTH.DestQP()}
	d := 0 // a connection's packets have two tuples, one per direction
	if p.Dir == model.ToRequester {
		d = 1
	}
	tup := b.lastTup[d]
	if !b.hasTup[d] || b.lastKey[d] != k {
		var ok bool
		if tup, ok = c.tuples[k]; !ok {
			tup = uint16(len(c.tupList))
			if len(c.tupList) < 0xFFFF {
				c.tuples[k] = tup
				c.tupList = append(c.tupList, Tuple{Prefix: tuplePrefix(pk), QP: k.qp})
			}
		}
		b.lastKey[d], b.lastTup[d], b.hasTup[d] = k, tup, true
	}
	// Filled in place, field by field: a record built on the stack and
	// then copied is read back in wider loads than it was written with,
	// which stalls store forwarding (Intel 64 and IA-32 Architectures
	// Optimization Reference Manual, "Store Forwarding").
	last = append(last, pktRec{})
	r := &last[len(last)-1]
	r.t, r.cap, r.idx, r.rel, r.psn = p.TimeNs, tp.TimeNs, uint32(tp.Index), rel, uint32(pk.BTH.PSN())
	r.tup, r.plen, r.cls, r.op, r.reth = tup, uint16(pk.PayloadLen), uint8(cls), uint8(pk.Opcode), -1
	f := uint16(pk.ECN()) << flagECNShift
	f |= uint16(pk.PadLen&3)<<flagPadShift | uint16(pk.VerifiedICRC()&3)<<flagICRCSh
	if pk.BTH.AckReq() {
		f |= flagAckReq
	}
	if pk.BTH.BECN() {
		f |= flagBECN
	}
	if mirror || pk.MirrorRaw {
		f |= flagMirror
		m := pk.Mirror()
		r.seq, r.ts, r.ev = m.Seq, m.TimestampNs, uint8(m.Event)
		if m.Event.Held() {
			r.hold = uint16(pk.HoldCode())
		}
	}
	if pk.AETH != nil {
		f |= flagAETH
		r.aeth = uint32(pk.AETH.Syndrome())<<24 | pk.AETH.MSN()&0xFFFFFF
	}
	if pk.RETH != nil {
		f |= flagRETH
		r.reth = int32(len(b.reth))
		b.reth = append(b.reth, rethRec{va: pk.RETH.VirtualAddress(), rkey: pk.RETH.RKey(), dlen: pk.RETH.DMALength()})
	}
	r.flags = f
	b.chunks[len(b.chunks)-1] = last
	b.n++
	b.count[cls]++
}

// tuplePrefix is "src:port > dst:port " as lumina decode prints it.
func tuplePrefix(pk *roce.Packet) string {
	return string(append(pk.AppendTuple(nil), ' '))
}

// Plots returns the collected data.
func (c *SeqCollector) Plots() *Plots {
	pl := &Plots{T0: c.t0, Tuples: c.tupList, Dropped: c.dropped}
	for i, b := range c.conns {
		if b == nil {
			continue
		}
		pl.Conns = append(pl.Conns, ConnPackets{Conn: c.table.Conns[i].ID, chunks: b.chunks, n: b.n, reth: b.reth, Count: b.count})
	}
	return pl
}
