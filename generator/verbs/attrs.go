package verbs

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// HopLimit is the IP hop limit / TTL of our packets: the testbed is one
// L2 hop through the switch. The other attributes' defaults are the
// generator's (generator.DefaultTimeout …, ConnectAttr.WithDefaults).
const HopLimit = 1

// devCaps are the device and port limits attributes are checked against
// (zero: unknown, not checked).
type devCaps struct {
	MaxQPWR         int
	MaxCQE          int
	MaxQPRdAtom     int // max_qp_rd_atom: READs we accept as responder
	MaxQPInitRdAtom int // max_qp_init_rd_atom: READs we issue
	ActiveMTU       int // ibv_mtu enum
}

// qpAttrs are the resolved ibv_modify_qp attributes of Connect.
type qpAttrs struct {
	MTU             int // ibv_mtu enum (1 = 256 … 5 = 4096)
	DestQPN         uint32
	RQPSN           uint32
	MaxDestRdAtomic int
	MinRNRTimer     int
	DGID            [16]byte
	SGIDIndex       int
	HopLimit        int
	TrafficClass    int
	Timeout         int
	RetryCnt        int
	RNRRetry        int
	SQPSN           uint32
	MaxRdAtomic     int
	LocalIP         netip.Addr
}

// gidOf returns the GID of a RoCE v2 address: IPv4-mapped for IPv4.
func gidOf(ip netip.Addr) [16]byte { return ip.As16() } // As16 of an IPv4 address is ::ffff:a.b.c.d

// resolveAttrs applies ConnectAttr's defaults and checks its ranges
// against the device: ips/gids are the device's addresses and their GID
// indices; sqPSN is the QP's own initial PSN.
func resolveAttrs(a generator.ConnectAttr, ips []netip.Addr, gids []int, caps devCaps, sqPSN roce.PSN) (qpAttrs, error) {
	bad := func(format string, args ...any) (qpAttrs, error) {
		return qpAttrs{}, fmt.Errorf("%w: "+format, append([]any{generator.ErrBadConnect}, args...)...)
	}
	c, err := a.WithDefaults()
	if err != nil {
		return qpAttrs{}, err
	}
	var r qpAttrs
	if len(ips) == 0 || len(ips) != len(gids) {
		return bad("device has no addresses")
	}
	r.LocalIP = ips[0]
	if a.LocalIP.IsValid() {
		i := slices.Index(ips, a.LocalIP.Unmap())
		if i < 0 {
			return qpAttrs{}, fmt.Errorf("%w: %v", generator.ErrUnknownAddr, a.LocalIP)
		}
		r.LocalIP = ips[i]
	}
	if r.LocalIP.Is4() != a.RemoteIP.Unmap().Is4() {
		return bad("local %v and remote %v differ in address family", r.LocalIP, a.RemoteIP)
	}
	r.SGIDIndex = gids[slices.Index(ips, r.LocalIP)]
	r.DGID = gidOf(a.RemoteIP.Unmap())
	r.MTU, _ = roce.MTUEnum(c.MTU)
	if caps.ActiveMTU != 0 && r.MTU > caps.ActiveMTU {
		return bad("MTU %d exceeds the port's active MTU %d", c.MTU, 128<<caps.ActiveMTU)
	}
	r.Timeout, r.RetryCnt, r.RNRRetry, r.MinRNRTimer = int(c.Timeout), int(c.RetryCnt), int(c.RNRRetry), int(c.MinRNRTimer)
	r.MaxRdAtomic = c.MaxRdAtomic
	if caps.MaxQPInitRdAtom > 0 {
		r.MaxRdAtomic = min(r.MaxRdAtomic, caps.MaxQPInitRdAtom)
	}
	// As responder accept as many READs as the device allows (the public
	// READ server does the same).
	r.MaxDestRdAtomic = generator.DefaultMaxRdAtomic
	if caps.MaxQPRdAtom > 0 {
		r.MaxDestRdAtomic = caps.MaxQPRdAtom
	}
	r.TrafficClass = int(c.TrafficClass)
	r.HopLimit = HopLimit
	r.DestQPN = a.RemoteQPN
	r.RQPSN = uint32(c.RemotePSN)
	r.SQPSN = uint32(sqPSN) & roce.PSNMask
	return r, nil
}
