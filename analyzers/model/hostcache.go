package model

import "net/netip"

// HostCache answers which host owns a packet's destination address from
// a map of addresses, remembering the answer for the last destination of
// each connection and direction: a connection's packets almost always
// carry one address per direction, so the common packet is looked up
// without hashing its address. The zero value answers from no map.
type HostCache struct {
	hosts map[netip.Addr]int
	dst   []hostEntry // by 2*conn + dir-1
}

type hostEntry struct {
	ip     IP
	h      int
	ok, in bool // in: ip, h and ok are set
}

// NewHostCache returns a HostCache of hosts (read, never written) for
// conns connections.
func NewHostCache(hosts map[netip.Addr]int, conns int) HostCache {
	return HostCache{hosts: hosts, dst: make([]hostEntry, 2*conns)}
}

// Dst returns hosts[p.DstIP] and whether it is there.
func (c *HostCache) Dst(p *Pkt) (int, bool) {
	k := 2*p.Conn + int(p.Dir) - 1
	if p.Conn < 0 || k >= len(c.dst) || p.Dir != ToResponder && p.Dir != ToRequester {
		h, ok := c.hosts[p.DstIP.Addr()]
		return h, ok
	}
	e := &c.dst[k]
	if !e.in || e.ip != p.DstIP {
		e.h, e.ok = c.hosts[p.DstIP.Addr()]
		e.ip, e.in = p.DstIP, true
	}
	return e.h, e.ok
}
