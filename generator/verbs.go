package generator

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/netlumina/lumina/roce"
)

// WROpcode is the operation of a send work request.
type WROpcode uint8

// Send work request opcodes.
const (
	WRWrite WROpcode = iota + 1
	WRWriteImm
	WRSend
	WRSendImm
	WRRead
)

// String returns the verbs-like name.
func (o WROpcode) String() string {
	switch o {
	case WRWrite:
		return "RDMA_WRITE"
	case WRWriteImm:
		return "RDMA_WRITE_WITH_IMM"
	case WRSend:
		return "SEND"
	case WRSendImm:
		return "SEND_WITH_IMM"
	case WRRead:
		return "RDMA_READ"
	}
	return fmt.Sprintf("WROpcode(%d)", uint8(o))
}

// Status is a work completion status, named after ibv_wc_status.
type Status uint8

// Completion statuses.
const (
	StatusSuccess Status = iota
	StatusLocLenErr
	StatusLocProtErr
	StatusWRFlushErr
	StatusRemInvReqErr
	StatusRemAccessErr
	StatusRemOpErr
	StatusRetryExcErr
	StatusRNRRetryExcErr
)

var statusNames = [...]string{"SUCCESS", "LOC_LEN_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR"}

// String returns the ibv_wc_status name without the IBV_WC_ prefix.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// CompletionOp tells what a completion is for.
type CompletionOp uint8

// Completion kinds.
const (
	CompSend CompletionOp = iota + 1
	CompWrite
	CompRead
	CompRecv
	CompRecvWithImm
)

// String names the completion kind.
func (o CompletionOp) String() string {
	return [...]string{"?", "SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "RECV_RDMA_WITH_IMM"}[min(int(o), 5)]
}

// Completion is a work completion.
type Completion struct {
	QPN     uint32
	WRID    uint64
	Status  Status
	Op      CompletionOp
	ByteLen int
	Imm     uint32
	HasImm  bool
	TimeNs  int64 // on the NIC's Loop
}

// MR is a registered memory region. Remote peers address it with Addr..Addr+len(Buf) and RKey.
type MR struct {
	Buf  []byte
	Addr uint64
	LKey uint32
	RKey uint32
}

// SendWR is a send work request (WRITE, SEND, READ, with immediate).
type SendWR struct {
	ID     uint64
	Op     WROpcode
	Local  *MR // local buffer: source of WRITE/SEND, destination of READ
	Offset int
	Length int
	// RemoteAddr and RKey address the peer's memory (WRITE, READ).
	RemoteAddr uint64
	RKey       uint32
	Imm        uint32
}

// RecvWR is a receive work request for SEND and WRITE-with-immediate.
type RecvWR struct {
	ID     uint64
	MR     *MR
	Offset int
	Length int
}

// QPState is a queue pair state.
type QPState uint8

// QP states (RC).
const (
	QPReset QPState = iota
	QPRTS           // connected: ready to send and receive
	QPError
)

// String names the state.
func (s QPState) String() string { return [...]string{"RESET", "RTS", "ERROR"}[min(int(s), 2)] }

// ConnectAttr are the attributes a QP needs to reach its peer (ibv_modify_qp
// to RTR and RTS in one step). A nil pointer field takes its default
// (DefaultTimeout …); WithDefaults resolves them, and both devices (the
// software RNIC and verbs) apply it.
type ConnectAttr struct {
	RemoteQPN uint32
	RemotePSN roce.PSN // the peer's initial send PSN: our responder's expected PSN
	RemoteIP  netip.Addr
	RemoteMAC [6]byte
	// LocalIP selects which of the NIC's addresses (GIDs) the QP uses.
	// Default: the first.
	LocalIP netip.Addr
	// MTU is the path MTU: one of roce.MTUs; 0 is DefaultMTU.
	MTU int
	// Timeout is the local ACK timeout exponent (T_tr = 4.096 µs × 2^Timeout;
	// 0 disables the timer; 0..31).
	Timeout *uint8
	// RetryCnt is retry_cnt (0..7).
	RetryCnt *uint8
	// RNRRetry is rnr_retry (0..7, 7 = infinite).
	RNRRetry *uint8
	// MinRNRTimer is the RNR NAK timer code our responder advertises
	// (0..31, IBA Vol. 1 Table 45; roce.RNRTimer).
	MinRNRTimer *uint8
	// MaxRdAtomic bounds outstanding READs we issue (<= 0: DefaultMaxRdAtomic).
	MaxRdAtomic int
	// TrafficClass is the IP TOS/TC of our packets (DSCP<<2 | ECN).
	TrafficClass *uint8
}

// The QP attributes' defaults, which the software RNIC and verbs devices
// share through ConnectAttr.WithDefaults and which Traffic's zero values
// take: timeout 14, retry_cnt 7, rnr_retry 7 and min_rnr_timer 12 are
// perftest's (linux-rdma/perftest: DEF_QP_TIME, perftest_resources.c);
// MTU 1024 and 16 outstanding READs are the original Lumina generator's
// (docs/hardware.md).
const (
	DefaultMTU          = 1024
	DefaultTimeout      = 14 // 4.096 µs × 2^14 ≈ 67 ms
	DefaultRetryCnt     = 7
	DefaultRNRRetry     = 7  // infinite
	DefaultMinRNRTimer  = 12 // 0.64 ms
	DefaultMaxRdAtomic  = 16
	DefaultTrafficClass = 0x02 // ECT(0): RoCE NICs with ECN enabled mark their packets so
)

// QPAttr are a ConnectAttr with every default applied and every range
// checked (ConnectAttr.WithDefaults): what a device programs into its QP.
type QPAttr struct {
	RemoteQPN    uint32
	RemotePSN    roce.PSN
	RemoteIP     netip.Addr
	RemoteMAC    [6]byte
	LocalIP      netip.Addr // invalid: the device's first address
	MTU          int        // bytes, one of roce.MTUs
	Timeout      uint8
	RetryCnt     uint8
	RNRRetry     uint8
	MinRNRTimer  uint8
	MaxRdAtomic  int
	TrafficClass uint8
}

// WithDefaults returns a's attributes with the defaults applied, or an
// error wrapping ErrBadConnect if one is out of range.
func (a ConnectAttr) WithDefaults() (QPAttr, error) {
	or := func(p *uint8, def uint8) uint8 {
		if p == nil {
			return def
		}
		return *p
	}
	r := QPAttr{RemoteQPN: a.RemoteQPN, RemotePSN: a.RemotePSN & roce.PSNMask, RemoteIP: a.RemoteIP, RemoteMAC: a.RemoteMAC,
		LocalIP: a.LocalIP, MTU: a.MTU, Timeout: or(a.Timeout, DefaultTimeout), RetryCnt: or(a.RetryCnt, DefaultRetryCnt),
		RNRRetry: or(a.RNRRetry, DefaultRNRRetry), MinRNRTimer: or(a.MinRNRTimer, DefaultMinRNRTimer),
		MaxRdAtomic: a.MaxRdAtomic, TrafficClass: or(a.TrafficClass, DefaultTrafficClass)}
	if r.MTU == 0 {
		r.MTU = DefaultMTU
	}
	if r.MaxRdAtomic <= 0 {
		r.MaxRdAtomic = DefaultMaxRdAtomic
	}
	bad := func(format string, args ...any) (QPAttr, error) {
		return QPAttr{}, fmt.Errorf("%w: "+format, append([]any{ErrBadConnect}, args...)...)
	}
	switch {
	case !roce.ValidMTU(r.MTU):
		return bad("MTU %d (want %s)", r.MTU, roce.MTUChoices)
	case r.Timeout > 31:
		return bad("timeout %d > 31", r.Timeout)
	case r.RetryCnt > 7:
		return bad("retry_cnt %d > 7", r.RetryCnt)
	case r.RNRRetry > 7:
		return bad("rnr_retry %d > 7", r.RNRRetry)
	case r.MinRNRTimer > 31:
		return bad("min_rnr_timer %d > 31", r.MinRNRTimer)
	case r.RemoteQPN == 0 || r.RemoteQPN > roce.PSNMask:
		return bad("remote QPN %#x", r.RemoteQPN)
	case !r.RemoteIP.IsValid():
		return bad("no remote IP")
	}
	return r, nil
}

// Errors.
var (
	ErrQPState     = errors.New("generator: QP not in RTS")
	ErrBadWR       = errors.New("generator: invalid work request")
	ErrQueueFull   = errors.New("generator: send queue full")
	ErrBadConnect  = errors.New("generator: invalid connect attributes")
	ErrUnknownAddr = errors.New("generator: local IP not configured on the NIC")
)

// Device is an RNIC as the traffic generator uses it: the software RNIC
// (generator/softrnic) or, later, a real one through libibverbs. Its methods
// must be called on the device's Loop (see Exec in the generator's configs).
type Device interface {
	Name() string
	MAC() [6]byte
	IPs() []netip.Addr
	RegMR(buf []byte) *MR
	NewQP() QP
	SetCompletionHandler(fn func(Completion))
	// CounterMap returns the hardware counters under their Mellanox names.
	CounterMap() map[string]uint64
}

// QP is an RC queue pair of a Device.
type QP interface {
	QPN() uint32
	PSN() roce.PSN
	LocalIP() netip.Addr
	Connect(ConnectAttr) error
	PostSend(SendWR) error
	PostRecv(RecvWR) error
}
