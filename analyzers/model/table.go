package model

import (
	"encoding/binary"
	"net/netip"

	"github.com/netlumina/lumina/roce"
)

// flowKey identifies one direction of one connection: source, destination,
// destination QPN, and whether the packets are requests.
type flowKey struct {
	src, dst netip.Addr
	qpn      uint32
	req      bool
}

type flowVal struct {
	conn int
	dir  Dir
}

// Conn is a connection plus what the pipeline derives for it.
type Conn struct {
	Connection
	IPSN roce.PSN // the requester's initial PSN: PSNs are relative to it
}

// Table maps packets to connections. Lookups do not allocate and do not
// write: a Table may be read concurrently once built.
type Table struct {
	Conns []Conn
	// flows is an open-addressing hash table of the flow keys (linear
	// probing; len a power of two, at most half full); flowMask is len-1.
	flows    []flowEnt
	flowMask uint64
}

type flowEnt struct {
	key  flowKey
	val  flowVal
	used bool
}

// NewTable builds a table for conns.
func NewTable(conns []Connection) *Table {
	n := 16
	for n < 4*len(conns) {
		n *= 2
	}
	t := &Table{flows: make([]flowEnt, n), flowMask: uint64(n - 1)}
	for i, c := range conns {
		t.Conns = append(t.Conns, Conn{Connection: c, IPSN: roce.PSN(c.Requester.IPSN)})
		r, s := c.Requester, c.Responder
		t.insert(flowKey{r.IP, s.IP, s.QPN, true}, flowVal{i, ToResponder})
		t.insert(flowKey{s.IP, r.IP, r.QPN, false}, flowVal{i, ToRequester})
	}
	return t
}

// insert sets k's value (a key seen before gets the later value).
func (t *Table) insert(k flowKey, v flowVal) {
	for i := flowHash(k.src, k.dst, k.qpn, k.req); ; i++ {
		e := &t.flows[i&t.flowMask]
		if !e.used || e.key == k {
			*e = flowEnt{key: k, val: v, used: true}
			return
		}
	}
}

// flowHash mixes a flow key's fields.
func flowHash(src, dst netip.Addr, qpn uint32, req bool) uint64 {
	h := uint64(qpn)<<1 | uint64(b2u(req))
	h ^= addrBits(src) * 0x9E3779B97F4A7C15
	h ^= addrBits(dst) * 0xC2B2AE3D27D4EB4F
	h *= 0x165667B19E3779F9
	return h ^ h>>29
}

// addrBits are an IPv4 address, or the low 64 bits of an IPv6 one.
func addrBits(a netip.Addr) uint64 {
	if a.Is4() {
		b := a.As4()
		return uint64(binary.BigEndian.Uint32(b[:]))
	}
	b := a.As16()
	return binary.LittleEndian.Uint64(b[8:])
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Connections returns the table's connections.
func (t *Table) Connections() []Connection {
	out := make([]Connection, len(t.Conns))
	for i, c := range t.Conns {
		out[i] = c.Connection
	}
	return out
}

// Lookup returns the connection index and direction of a packet from src
// to dst addressed to qpn; req says the packet is a request. CNPs are
// looked up as responses first (WRITE/SEND), then as requests (READ).
func (t *Table) Lookup(src, dst netip.Addr, qpn uint32, req bool) (int, Dir) {
	for i := flowHash(src, dst, qpn, req); ; i++ {
		e := &t.flows[i&t.flowMask]
		if !e.used {
			return -1, DirNone
		}
		if e.key.qpn == qpn && e.key.req == req && e.key.src == src && e.key.dst == dst {
			return e.val.conn, e.val.dir
		}
	}
}

// Assign sets p.Conn and p.Dir.
func (t *Table) Assign(p *Pkt) {
	switch p.Kind {
	case KindOther:
		p.Conn, p.Dir = -1, DirNone
	case KindCNP:
		p.Conn, p.Dir = t.Lookup(p.SrcIP.Addr(), p.DstIP.Addr(), p.DestQP, false)
		if p.Conn < 0 {
			p.Conn, p.Dir = t.Lookup(p.SrcIP.Addr(), p.DstIP.Addr(), p.DestQP, true)
		}
	default:
		p.Conn, p.Dir = t.Lookup(p.SrcIP.Addr(), p.DstIP.Addr(), p.DestQP, p.Kind.IsRequest())
	}
}

// Rel returns psn relative to connection c's requester IPSN.
func (t *Table) Rel(c int, psn roce.PSN) int {
	if c < 0 || c >= len(t.Conns) {
		return 0
	}
	return psn.Sub(t.Conns[c].IPSN)
}
