package verbs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// testABI is libibverbs' values (rdma-core verbs.h, verbs_api.h,
// ib_user_ioctl_verbs.h); TestHeaderABI (verbs build) checks it against
// the headers.
var testABI = ibvABI{
	AccessLocalWrite: 1, AccessRemoteWrite: 1 << 1, AccessRemoteRead: 1 << 2, AccessOnDemand: 1 << 6,
	ODPSupport: 1,
	ODPSend:    1, ODPRecv: 1 << 1, ODPWrite: 1 << 2, ODPRead: 1 << 3,
	AdvisePrefetchWrite: 1, AdviseFlagFlush: 1,
	QPState: 1, QPAV: 1 << 7, QPPathMTU: 1 << 8, QPDestQPN: 1 << 20, QPRQPSN: 1 << 12, QPMaxDestRdAtomic: 1 << 17,
	QPMinRNRTimer: 1 << 15, QPTimeout: 1 << 9, QPRetryCnt: 1 << 10, QPRNRRetry: 1 << 11, QPSQPSN: 1 << 16,
	QPMaxQPRdAtomic: 1 << 13,
}

func TestMRAccess(t *testing.T) {
	for _, tt := range []struct {
		odp  bool
		want uint32
	}{
		{false, 0x07}, // LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ
		{true, 0x47},  // … | ON_DEMAND
	} {
		if got := mrAccess(testABI, tt.odp); got != tt.want {
			t.Errorf("mrAccess(odp %v) = %#x, want %#x", tt.odp, got, tt.want)
		}
	}
}

// TestQPMasks pins the modify_qp masks: min_rnr_timer goes with RTR,
// rnr_retry with RTS (IBA Table 91 (QP state transition properties): each
// is valid only in its own transition, so neither mask may carry the
// other's bit).
func TestQPMasks(t *testing.T) {
	const rtr = 1 | 1<<7 | 1<<8 | 1<<12 | 1<<15 | 1<<17 | 1<<20 // STATE AV PATH_MTU RQ_PSN MIN_RNR_TIMER MAX_DEST_RD_ATOMIC DEST_QPN
	const rts = 1 | 1<<9 | 1<<10 | 1<<11 | 1<<13 | 1<<16        // STATE TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC SQ_PSN
	if got := rtrMask(testABI); got != rtr {
		t.Errorf("rtrMask = %#x, want %#x", got, rtr)
	}
	if got := rtsMask(testABI); got != rts {
		t.Errorf("rtsMask = %#x, want %#x", got, rts)
	}
	if rtrMask(testABI)&testABI.QPRNRRetry != 0 || rtsMask(testABI)&testABI.QPMinRNRTimer != 0 {
		t.Error("an RNR attribute in the wrong transition")
	}
}

func TestCheckODP(t *testing.T) {
	all := testABI.ODPSend | testABI.ODPRecv | testABI.ODPWrite | testABI.ODPRead
	tests := []struct {
		name string
		caps odpCaps
		want string // "" = supported
	}{
		// mlx5_ib_internal_fill_odp_caps on a ConnectX-4 and later: ODP
		// and implicit ODP, RC SEND RECV WRITE READ ATOMIC SRQ_RECV.
		{"mlx5", odpCaps{General: 0x3, RC: 0x3f}, ""},
		{"exactly what is needed", odpCaps{General: 0x1, RC: all}, ""},
		{"no ODP (provider without query_device_ex: zeroed)", odpCaps{},
			"verbs: no ODP: mlx5_0 does not support On-Demand Paging (odp_caps.general_caps 0x0 lacks IBV_ODP_SUPPORT)"},
		{"implicit only bit", odpCaps{General: 0x2, RC: all}, "lacks IBV_ODP_SUPPORT"},
		{"RC without READ", odpCaps{General: 0x1, RC: all &^ testABI.ODPRead},
			"verbs: no ODP: mlx5_0 supports ODP but not on RC for IBV_ODP_SUPPORT_READ (odp_caps.per_transport_caps.rc_odp_caps 0x7)"},
		{"UD-only ODP", odpCaps{General: 0x1, RC: 0},
			"not on RC for IBV_ODP_SUPPORT_SEND, IBV_ODP_SUPPORT_RECV, IBV_ODP_SUPPORT_WRITE, IBV_ODP_SUPPORT_READ (odp_caps.per_transport_caps.rc_odp_caps 0x0)"},
		{"RC without SEND and RECV", odpCaps{General: 0x1, RC: testABI.ODPWrite | testABI.ODPRead},
			"not on RC for IBV_ODP_SUPPORT_SEND, IBV_ODP_SUPPORT_RECV (odp_caps.per_transport_caps.rc_odp_caps 0xc)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkODP("mlx5_0", testABI, tt.caps)
			if tt.want == "" {
				if err != nil {
					t.Errorf("checkODP(%+v) = %v, want nil", tt.caps, err)
				}
				return
			}
			if !errors.Is(err, ErrNoODP) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkODP(%+v) = %v, want ErrNoODP with %q", tt.caps, err, tt.want)
			}
		})
	}
}

func TestPrefetchReq(t *testing.T) {
	const addr, lkey = 0x7f12_3456_0000, 0xabcd
	tests := []struct {
		name string
		n    int
		want []sge
	}{
		{"one page", 4096, []sge{{addr, 4096, lkey}}},
		{"one byte", 1, []sge{{addr, 1, lkey}}},
		{"exactly 1 GiB", 1 << 30, []sge{{addr, 1 << 30, lkey}}},
		{"3 GiB and a page", 3<<30 + 4096, []sge{{addr, 1 << 30, lkey}, {addr + 1<<30, 1 << 30, lkey},
			{addr + 2<<30, 1 << 30, lkey}, {addr + 3<<30, 4096, lkey}}},
		{"empty", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prefetchReq(testABI, addr, tt.n, lkey)
			want := adviseReq{Advice: 1, Flags: 1, SGEs: tt.want} // PREFETCH_WRITE, FLUSH
			if !reflect.DeepEqual(got, want) {
				t.Errorf("prefetchReq(%#x, %d, %#x) = %+v, want %+v", uint64(addr), tt.n, lkey, got, want)
			}
		})
	}
}
