package model

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestHostCache: the cache answers as the map on every packet, whatever
// the connection, direction and address sequence (addresses that change
// within a connection direction, unknown ones, packets of no connection).
func TestHostCache(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"),
		netip.MustParseAddr("fd00::2"), netip.MustParseAddr("10.0.0.9")}
	hosts := map[netip.Addr]int{addrs[0]: 0, addrs[1]: 1, addrs[2]: 1} // addrs[3]: no host
	c := NewHostCache(hosts, 3)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		p := Pkt{Conn: r.IntN(5) - 1, Dir: Dir(r.IntN(4)), DstIP: IPFrom(addrs[r.IntN(len(addrs))])}
		if r.IntN(4) != 0 { // mostly the same address as last time
			p.DstIP = IPFrom(addrs[p.Conn&1])
		}
		h, ok := c.Dst(&p)
		wh, wok := hosts[p.DstIP.Addr()]
		if h != wh || ok != wok {
			t.Fatalf("packet %d %+v: host %d %v, want %d %v", i, p, h, ok, wh, wok)
		}
	}
	var zero HostCache
	if _, ok := zero.Dst(&Pkt{Conn: 0, Dir: ToResponder, DstIP: IPFrom(addrs[0])}); ok {
		t.Fatal("zero HostCache found a host")
	}
}
