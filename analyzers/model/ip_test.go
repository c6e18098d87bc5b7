package model

import (
	"net/netip"
	"testing"
)

// TestIP: an IP holds what its netip.Addr holds (zones aside), compares
// as it does, and set4 gives what IPFrom gives.
func TestIP(t *testing.T) {
	addrs := []netip.Addr{{}, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("255.255.255.255"),
		netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("fd00::1"),
		netip.MustParseAddr("::"), netip.MustParseAddr("fe80::1%eth0")}
	for _, a := range addrs {
		ip := IPFrom(a)
		if want := a.WithZone(""); ip.Addr() != want || ip.IsValid() != a.IsValid() || ip.Is4() != a.Is4() {
			t.Errorf("IPFrom(%v).Addr() = %v (valid %v, 4 %v)", a, ip.Addr(), ip.IsValid(), ip.Is4())
		}
		if a.IsValid() && (ip.String() != a.WithZone("").String() || string(ip.AppendTo(nil)) != a.WithZone("").String()) {
			t.Errorf("IPFrom(%v): String %q, AppendTo %q", a, ip.String(), ip.AppendTo(nil))
		}
		for _, b := range addrs {
			if (ip == IPFrom(b)) != (a.WithZone("") == b.WithZone("")) {
				t.Errorf("IPFrom(%v) == IPFrom(%v): %v", a, b, ip == IPFrom(b))
			}
		}
		if a.Is4() {
			b := a.As4()
			set := IPFrom(netip.MustParseAddr("fd00::9")) // set4 overwrites all of it
			set.set4(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
			if set != ip {
				t.Errorf("set4 of %v: %+v, want %+v", a, set, ip)
			}
		}
	}
}
