package verbs

import (
	"fmt"
	"strings"
)

// ibvABI holds the libibverbs enum values the pure-Go code below computes
// with: access flags, ODP capability bits, ibv_advise_mr's advice and flag,
// and the ibv_modify_qp attribute mask bits of Connect. The verbs build
// takes every value from the headers (headerABI in verbs_linux.go); none
// is written down in this package's non-test code. The tests use a
// fixture that a verbs-build test compares with the headers.
type ibvABI struct {
	// enum ibv_access_flags
	AccessLocalWrite, AccessRemoteWrite, AccessRemoteRead, AccessOnDemand uint32
	// enum ibv_odp_general_caps (ibv_device_attr_ex.odp_caps.general_caps)
	ODPSupport uint64
	// enum ibv_odp_transport_cap_bits (odp_caps.per_transport_caps.rc_odp_caps)
	ODPSend, ODPRecv, ODPWrite, ODPRead uint32
	// IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE and IBV_ADVISE_MR_FLAG_FLUSH
	AdvisePrefetchWrite, AdviseFlagFlush uint32
	// enum ibv_qp_attr_mask
	QPState, QPAV, QPPathMTU, QPDestQPN, QPRQPSN, QPMaxDestRdAtomic, QPMinRNRTimer uint32
	QPTimeout, QPRetryCnt, QPRNRRetry, QPSQPSN, QPMaxQPRdAtomic                    uint32
}

// mrAccess is the ibv_reg_mr access of every MR: local write, remote
// READ and WRITE, and IBV_ACCESS_ON_DEMAND when the device config asks for
// ODP memory.
func mrAccess(a ibvABI, odp bool) uint32 {
	f := a.AccessLocalWrite | a.AccessRemoteWrite | a.AccessRemoteRead
	if odp {
		f |= a.AccessOnDemand
	}
	return f
}

// rtrMask is the ibv_modify_qp mask of INIT → RTR: with min_rnr_timer
// (IBV_QP_MIN_RNR_TIMER, an RTR attribute: the RNR NAK timer this QP's
// responder advertises).
func rtrMask(a ibvABI) uint32 {
	return a.QPState | a.QPAV | a.QPPathMTU | a.QPDestQPN | a.QPRQPSN | a.QPMaxDestRdAtomic | a.QPMinRNRTimer
}

// rtsMask is the ibv_modify_qp mask of RTR → RTS: with rnr_retry
// (IBV_QP_RNR_RETRY, an RTS attribute: how often this QP's requester
// retries after an RNR NAK, 7 = infinitely).
func rtsMask(a ibvABI) uint32 {
	return a.QPState | a.QPTimeout | a.QPRetryCnt | a.QPRNRRetry | a.QPSQPSN | a.QPMaxQPRdAtomic
}

// odpCaps is the ODP part of ibv_device_attr_ex (ibv_query_device_ex).
type odpCaps struct {
	General uint64 // odp_caps.general_caps
	RC      uint32 // odp_caps.per_transport_caps.rc_odp_caps
}

// checkODP returns nil if device dev can serve the generator's RC traffic
// from ODP memory: ODP at all (IBV_ODP_SUPPORT) and, on RC, SEND (a SEND's
// source and every requester WQE), RECV (receive buffers), WRITE (the
// WRITE responder's destination) and READ (the READ responder's source).
// The error wraps ErrNoODP and names the device and what it lacks.
func checkODP(dev string, a ibvABI, c odpCaps) error {
	if c.General&a.ODPSupport == 0 {
		return fmt.Errorf("%w: %s does not support On-Demand Paging (odp_caps.general_caps %#x lacks IBV_ODP_SUPPORT)",
			ErrNoODP, dev, c.General)
	}
	var missing []string
	for _, b := range []struct {
		bit  uint32
		name string
	}{{a.ODPSend, "SEND"}, {a.ODPRecv, "RECV"}, {a.ODPWrite, "WRITE"}, {a.ODPRead, "READ"}} {
		if c.RC&b.bit == 0 {
			missing = append(missing, "IBV_ODP_SUPPORT_"+b.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s supports ODP but not on RC for %s (odp_caps.per_transport_caps.rc_odp_caps %#x)",
			ErrNoODP, dev, strings.Join(missing, ", "), c.RC)
	}
	return nil
}

// sge is one struct ibv_sge of an ibv_advise_mr request.
type sge struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// adviseReq is one ibv_advise_mr call.
type adviseReq struct {
	Advice, Flags uint32
	SGEs          []sge
}

// maxAdviseSGE is the most bytes one SGE of a prefetch covers: ibv_sge's
// length is 32 bits; 1 GiB keeps each piece page-aligned.
const maxAdviseSGE = 1 << 30

// prefetchReq is the ibv_advise_mr request that maps all n bytes of the
// MR at addr (lkey) for the NIC before any traffic:
// IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE (map writable: the generator's MRs
// are READ and RECV destinations too) with IBV_ADVISE_MR_FLAG_FLUSH (the
// call returns once the pages are mapped, so the first access does not
// fault). n is split into SGEs of at most maxAdviseSGE bytes.
func prefetchReq(a ibvABI, addr uint64, n int, lkey uint32) adviseReq {
	r := adviseReq{Advice: a.AdvisePrefetchWrite, Flags: a.AdviseFlagFlush}
	for off := 0; off < n; off += maxAdviseSGE {
		r.SGEs = append(r.SGEs, sge{Addr: addr + uint64(off), Length: uint32(min(n-off, maxAdviseSGE)), LKey: lkey})
	}
	return r
}
