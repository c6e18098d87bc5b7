package model

import (
	"encoding/binary"
	"net/netip"
)

// IP is an IP address as a Pkt holds it: a netip.Addr without a zone (a
// packet's addresses have none), held as plain bytes. A netip.Addr holds
// a pointer (its zone's handle), which made Pkt a type with pointers: the
// GC scanned every batch of Pkts, and every copy of one went through
// typedmemmove and write barriers. The zero IP is the invalid address
// (netip.Addr{}). IPs compare (==) as their Addrs do.
type IP struct {
	// a is the address in 16 bytes: netip.Addr.As16 (an IPv4 address in
	// the IPv4-mapped form ::ffff:a.b.c.d).
	a [16]byte
	v uint8 // 4: IPv4; 6: IPv6; 0: invalid
}

// IPFrom returns a as an IP, without its zone.
func IPFrom(a netip.Addr) IP {
	switch {
	case a.Is4():
		return IP{a: a.As16(), v: 4}
	case a.Is6():
		return IP{a: a.As16(), v: 6}
	}
	return IP{}
}

// set4 sets ip to the IPv4 address u (its first byte the most
// significant): IPFrom of it, with one 8-byte store for the address.
func (ip *IP) set4(u uint32) {
	binary.BigEndian.PutUint64(ip.a[8:], 0xFFFF<<32|uint64(u))
	binary.BigEndian.PutUint64(ip.a[:8], 0)
	ip.v = 4
}

// Addr returns ip as a netip.Addr.
func (ip IP) Addr() netip.Addr {
	switch ip.v {
	case 4:
		return netip.AddrFrom4([4]byte(ip.a[12:]))
	case 6:
		return netip.AddrFrom16(ip.a)
	}
	return netip.Addr{}
}

// IsValid reports whether ip is an address (netip.Addr.IsValid).
func (ip IP) IsValid() bool { return ip.v != 0 }

// Is4 reports whether ip is an IPv4 address (netip.Addr.Is4).
func (ip IP) Is4() bool { return ip.v == 4 }

// String returns ip's netip.Addr.String.
func (ip IP) String() string { return ip.Addr().String() }

// AppendTo appends ip's text form to b (netip.Addr.AppendTo).
func (ip IP) AppendTo(b []byte) []byte { return ip.Addr().AppendTo(b) }
