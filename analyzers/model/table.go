package model

import (
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

// Table maps packets to connections. Lookups do not allocate. A Table is
// not safe for concurrent use (it caches the last hit).
type Table struct {
	Conns []Conn
	flows map[flowKey]flowVal

	lastKey flowKey
	lastVal flowVal
	hasLast bool
}

// NewTable builds a table for conns.
func NewTable(conns []Connection) *Table {
	t := &Table{flows: make(map[flowKey]flowVal, 4*len(conns))}
	for i, c := range conns {
		t.Conns = append(t.Conns, Conn{Connection: c, IPSN: roce.PSN(c.Requester.IPSN)})
		r, s := c.Requester, c.Responder
		t.flows[flowKey{r.IP, s.IP, s.QPN, true}] = flowVal{i, ToResponder}
		t.flows[flowKey{s.IP, r.IP, r.QPN, false}] = flowVal{i, ToRequester}
	}
	return t
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
	k := flowKey{src, dst, qpn, req}
	if t.hasLast && k == t.lastKey {
		return t.lastVal.conn, t.lastVal.dir
	}
	v, ok := t.flows[k]
	if !ok {
		return -1, DirNone
	}
	t.lastKey, t.lastVal, t.hasLast = k, v, true
	return v.conn, v.dir
}

// Assign sets p.Conn and p.Dir.
func (t *Table) Assign(p *Pkt) {
	switch p.Kind {
	case KindOther:
		p.Conn, p.Dir = -1, DirNone
	case KindCNP:
		p.Conn, p.Dir = t.Lookup(p.SrcIP, p.DstIP, p.DestQP, false)
		if p.Conn < 0 {
			p.Conn, p.Dir = t.Lookup(p.SrcIP, p.DstIP, p.DestQP, true)
		}
	default:
		p.Conn, p.Dir = t.Lookup(p.SrcIP, p.DstIP, p.DestQP, p.Kind.IsRequest())
	}
}

// Rel returns psn relative to connection c's requester IPSN.
func (t *Table) Rel(c int, psn roce.PSN) int {
	if c < 0 || c >= len(t.Conns) {
		return 0
	}
	return psn.Sub(t.Conns[c].IPSN)
}
