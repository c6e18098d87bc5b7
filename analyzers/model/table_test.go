package model

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestTableLookup compares Table.Lookup with a map of every flow key, on
// connections that share QPNs, addresses and whole keys (the later
// connection wins, as a map assignment), IPv4 and IPv6, and on keys that
// are no connection's.
func TestTableLookup(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	addr := func() netip.Addr {
		if rng.IntN(3) == 0 {
			return netip.AddrFrom16([16]byte{0x20, 1, 0xd, 0xb8, 15: byte(rng.IntN(4))})
		}
		return netip.AddrFrom4([4]byte{10, 0, 0, byte(rng.IntN(6))})
	}
	for _, n := range []int{0, 1, 2, 7, 64, 1000} {
		var conns []Connection
		want := map[flowKey]flowVal{}
		for i := range n {
			c := Connection{ID: i, Requester: Endpoint{IP: addr(), QPN: uint32(rng.IntN(20))}, Responder: Endpoint{IP: addr(), QPN: uint32(rng.IntN(20))}}
			conns = append(conns, c)
			want[flowKey{c.Requester.IP, c.Responder.IP, c.Responder.QPN, true}] = flowVal{i, ToResponder}
			want[flowKey{c.Responder.IP, c.Requester.IP, c.Requester.QPN, false}] = flowVal{i, ToRequester}
		}
		tb := NewTable(conns)
		for range 20_000 {
			k := flowKey{addr(), addr(), uint32(rng.IntN(22)), rng.IntN(2) == 0}
			w, ok := want[k]
			if !ok {
				w = flowVal{-1, DirNone}
			}
			if c, d := tb.Lookup(k.src, k.dst, k.qpn, k.req); c != w.conn || d != w.dir {
				t.Fatalf("%d connections: Lookup(%v) = %d %v, want %d %v", n, k, c, d, w.conn, w.dir)
			}
		}
		for k, w := range want {
			if c, d := tb.Lookup(k.src, k.dst, k.qpn, k.req); c != w.conn || d != w.dir {
				t.Fatalf("%d connections: Lookup(%v) = %d %v, want %d %v", n, k, c, d, w.conn, w.dir)
			}
		}
	}
}

func TestTableLookupAllocs(t *testing.T) {
	c := Connection{Requester: Endpoint{IP: netip.MustParseAddr("10.0.0.1"), QPN: 5}, Responder: Endpoint{IP: netip.MustParseAddr("10.0.0.2"), QPN: 7}}
	tb := NewTable([]Connection{c})
	if n := testing.AllocsPerRun(1000, func() { tb.Lookup(c.Requester.IP, c.Responder.IP, 7, true) }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}
