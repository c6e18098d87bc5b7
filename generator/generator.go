package generator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/netlumina/lumina/roce"
)

// Verb is an RDMA verb: of a test's traffic (the YAML key rdma-verb, the
// generator's Traffic), or of one connection (write, read or send; mixed
// only where a connection was inferred from a trace). It is lumina's one
// verb type: config and the analyzers use it too.
type Verb string

// Verbs.
const (
	VerbWrite Verb = "write"
	VerbRead  Verb = "read"
	VerbSend  Verb = "send"
	// VerbSendRead (traffic): the first NumQPs-NumReadQPs QPs SEND, the
	// rest READ.
	VerbSendRead Verb = "send_read"
	// VerbMixed (a connection): a QP seen issuing READs and SENDs/WRITEs;
	// the Go-back-N check does not model it.
	VerbMixed Verb = "mixed"
)

// IsRead reports whether the data of a connection with this verb flows as
// READ responses (from the responder to the requester).
func (v Verb) IsRead() bool { return v == VerbRead }

// Traffic are the generator's parameters (the YAML test's traffic section).
// Zero values take the defaults noted.
type Traffic struct {
	Verb       Verb `json:"verb"`               // default write
	NumQPs     int  `json:"num_qps"`            // default 1
	NumReadQPs int  `json:"num_read_qps"`       // send_read: how many of NumQPs READ
	MsgsPerQP  int  `json:"msgs_per_qp"`        // default 1
	MsgSize    *int `json:"msg_size,omitempty"` // bytes, default 4096 (0 is a zero-length message)
	MTU        int  `json:"mtu"`                // default DefaultMTU
	TxDepth    int  `json:"tx_depth"`           // outstanding messages per QP, default 1
	Barrier    bool `json:"barrier"`            // post the next round only when every QP completed the current one
	MultiGID   bool `json:"multi_gid"`
	// Timeout and RetryCnt are the QP's timeout exponent and retry_cnt,
	// MinRNRTimer its min_rnr_timer code (0..31, IBA Vol. 1 Table 45;
	// roce.RNRTimer) and RNRRetry its rnr_retry (0..7, 7 = infinite), set
	// on both sides' QPs; nil takes ConnectAttr's default (DefaultTimeout …).
	Timeout     *uint8 `json:"timeout,omitempty"`
	RetryCnt    *uint8 `json:"retry_cnt,omitempty"`
	MinRNRTimer *uint8 `json:"min_rnr_timer,omitempty"`
	RNRRetry    *uint8 `json:"rnr_retry,omitempty"`
	// PostIntervalNs, if > 0, spaces the posts of each QP's messages:
	// message k of a QP is posted at the start + k × PostIntervalNs, or
	// later, as soon as fewer than TxDepth of the QP's messages are
	// outstanding. With Barrier, round k (message k of every QP) is
	// posted at the start + k × PostIntervalNs or, if later, when round
	// k−1 completed on every QP. Default 0: back to back, each message as
	// soon as TxDepth (or the barrier) allows. The requester needs
	// RequesterConfig.After for it.
	PostIntervalNs int64 `json:"post_interval_ns,omitempty"`
	// DSCP per QP (optional; length NumQPs).
	DSCP []int `json:"dscp,omitempty"`
	// WithImm uses WRITE/SEND with immediate data.
	WithImm bool `json:"with_imm,omitempty"`
}

func (t *Traffic) setDefaults() error {
	if t.Verb == "" {
		t.Verb = VerbWrite
	}
	if t.NumQPs == 0 {
		t.NumQPs = 1
	}
	if t.MsgsPerQP == 0 {
		t.MsgsPerQP = 1
	}
	if t.MsgSize == nil {
		t.MsgSize = new(4096)
	}
	if t.MTU == 0 {
		t.MTU = DefaultMTU
	}
	if t.TxDepth == 0 {
		t.TxDepth = 1
	}
	switch {
	case t.Verb != VerbWrite && t.Verb != VerbRead && t.Verb != VerbSend && t.Verb != VerbSendRead:
		return fmt.Errorf("generator: unknown verb %q", t.Verb)
	case t.NumQPs < 1 || t.MsgsPerQP < 1 || *t.MsgSize < 0 || t.TxDepth < 1:
		return fmt.Errorf("generator: num_qps %d, msgs_per_qp %d, msg_size %d, tx_depth %d out of range", t.NumQPs, t.MsgsPerQP, *t.MsgSize, t.TxDepth)
	case t.MinRNRTimer != nil && *t.MinRNRTimer > 31 || t.RNRRetry != nil && *t.RNRRetry > 7:
		return fmt.Errorf("generator: min_rnr_timer %d (0..31) or rnr_retry %d (0..7) out of range", deref(t.MinRNRTimer), deref(t.RNRRetry))
	case t.PostIntervalNs < 0:
		return fmt.Errorf("generator: post_interval_ns %d is negative", t.PostIntervalNs)
	case t.Barrier && t.TxDepth != 1:
		return errors.New("generator: barrier sync needs tx_depth 1")
	case t.DSCP != nil && len(t.DSCP) != t.NumQPs:
		return fmt.Errorf("generator: %d DSCP values for %d QPs", len(t.DSCP), t.NumQPs)
	case t.Verb == VerbSendRead && (t.NumReadQPs < 0 || t.NumReadQPs > t.NumQPs):
		return fmt.Errorf("generator: num_read_qps %d out of 0..%d", t.NumReadQPs, t.NumQPs)
	}
	return nil
}

// deref is *p, or 0 for nil.
func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// verbOf returns the verb QP i uses.
func (t *Traffic) verbOf(i int) Verb {
	if t.Verb == VerbSendRead {
		if i >= t.NumQPs-t.NumReadQPs {
			return VerbRead
		}
		return VerbSend
	}
	return t.Verb
}

// Connection is one QP connection as the requester reports it to the
// control plane before traffic starts (Lumina §3.4).
type Connection struct {
	// Index is the connection's index in the run (0..num-qps-1): the "id"
	// of report.json's and the analyzers' connections. A Requester numbers
	// its own QPs from 0; with several flows the run driver renumbers them
	// globally in flow order (config.Test.QPOffset).
	Index     int      `json:"id"`
	Verb      Verb     `json:"verb"`
	Requester Endpoint `json:"requester"`
	Responder Endpoint `json:"responder"`
	// Flow names the test's flow the connection belongs to (config.Flow;
	// hosts form only, empty in the two-host form). The generator does not
	// know it: the run driver names the connections it gets back (the
	// intake's InstallRequest.flow, the flow of each RunRequest), and the
	// agent's wire conversion carries the name.
	Flow string `json:"flow,omitempty"`
}

// Exec runs fn on the device's Loop and returns when fn has run. The
// default, a direct call, is right when nothing else drives the Loop (the
// sim testbed before the event loop runs); over a RealLoop use PostAndWait.
type Exec func(fn func())

// Clock tells time on the device's Loop (sim.Loop satisfies it).
type Clock interface{ Now() int64 }

// pattern fills b with the data pattern of QP qp on side side ('q'
// requester, 's' responder) so the receiver can verify it.
func pattern(b []byte, qp int, side byte) {
	for i := range b {
		b[i] = byte(i) ^ byte(qp*31) ^ side
	}
}

func checkPattern(b []byte, qp int, side byte) bool {
	for i := range b {
		if b[i] != byte(i)^byte(qp*31)^side {
			return false
		}
	}
	return true
}

// checkEndpoint checks a peer's endpoint from the control connection.
func checkEndpoint(e Endpoint) error {
	switch {
	case !e.IP.IsValid():
		return fmt.Errorf("%w: endpoint without an IP address", ErrProtocol)
	case e.MAC.IsZero():
		return fmt.Errorf("%w: endpoint without a MAC address", ErrProtocol)
	case e.QPN == 0 || e.QPN > roce.PSNMask || e.IPSN > roce.PSNMask:
		return fmt.Errorf("%w: QPN %#x / IPSN %#x out of 24 bits", ErrProtocol, e.QPN, e.IPSN)
	}
	return nil
}

// PostAndWait returns an Exec that runs fn through post (a Loop's Post) and
// waits for it.
func PostAndWait(post func(func())) Exec {
	return func(fn func()) {
		var wg sync.WaitGroup
		wg.Add(1)
		post(func() { defer wg.Done(); fn() })
		wg.Wait()
	}
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
