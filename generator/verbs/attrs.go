package verbs

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// QP attribute defaults (roce-facts §8, the public tool's my-ib-traffic-gen).
const (
	DefaultMTU          = 1024
	DefaultTimeout      = 14 // 4.096 µs × 2^14 ≈ 67 ms
	DefaultRetryCnt     = 7
	DefaultRNRRetry     = 7  // infinite
	DefaultMinRNRTimer  = 12 // 0.64 ms
	DefaultMaxRdAtomic  = 16
	DefaultTrafficClass = 0x02 // ECT(0), as generator.ConnectAttr documents
	HopLimit            = 1    // the testbed is one L2 hop through the switch
)

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

// mtuEnum maps a path MTU in bytes to ibv_mtu.
func mtuEnum(b int) (int, bool) {
	switch b {
	case 256:
		return 1, true
	case 512:
		return 2, true
	case 1024:
		return 3, true
	case 2048:
		return 4, true
	case 4096:
		return 5, true
	}
	return 0, false
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
	var r qpAttrs
	if a.RemoteQPN == 0 || a.RemoteQPN > roce.PSNMask {
		return bad("remote QPN %#x", a.RemoteQPN)
	}
	if !a.RemoteIP.IsValid() {
		return bad("no remote IP")
	}
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
	mtu := a.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	var ok bool
	if r.MTU, ok = mtuEnum(mtu); !ok {
		return bad("MTU %d (want 256, 512, 1024, 2048 or 4096)", mtu)
	}
	if caps.ActiveMTU != 0 && r.MTU > caps.ActiveMTU {
		return bad("MTU %d exceeds the port's active MTU %d", mtu, 128<<caps.ActiveMTU)
	}
	r.Timeout, r.RetryCnt, r.RNRRetry, r.MinRNRTimer = DefaultTimeout, DefaultRetryCnt, DefaultRNRRetry, DefaultMinRNRTimer
	if a.TimeoutSet {
		r.Timeout = int(a.Timeout)
	}
	if a.RetryCntSet {
		r.RetryCnt = int(a.RetryCnt)
	}
	if a.RNRRetrySet {
		r.RNRRetry = int(a.RNRRetry)
	}
	if a.MinRNRTimerSet {
		r.MinRNRTimer = int(a.MinRNRTimer)
	}
	switch {
	case r.Timeout > 31:
		return bad("timeout %d > 31", r.Timeout)
	case r.RetryCnt > 7:
		return bad("retry_cnt %d > 7", r.RetryCnt)
	case r.RNRRetry > 7:
		return bad("rnr_retry %d > 7", r.RNRRetry)
	case r.MinRNRTimer > 31:
		return bad("min_rnr_timer %d > 31", r.MinRNRTimer)
	}
	r.MaxRdAtomic = a.MaxRdAtomic
	if r.MaxRdAtomic <= 0 {
		r.MaxRdAtomic = DefaultMaxRdAtomic
	}
	if caps.MaxQPInitRdAtom > 0 {
		r.MaxRdAtomic = min(r.MaxRdAtomic, caps.MaxQPInitRdAtom)
	}
	// As responder accept as many READs as the device allows (the public
	// READ server does the same).
	r.MaxDestRdAtomic = DefaultMaxRdAtomic
	if caps.MaxQPRdAtom > 0 {
		r.MaxDestRdAtomic = caps.MaxQPRdAtom
	}
	r.TrafficClass = DefaultTrafficClass
	if a.TrafficClassSet {
		r.TrafficClass = int(a.TrafficClass)
	}
	r.HopLimit = HopLimit
	r.DestQPN = a.RemoteQPN
	r.RQPSN = uint32(a.RemotePSN) & roce.PSNMask
	r.SQPSN = uint32(sqPSN) & roce.PSNMask
	return r, nil
}
