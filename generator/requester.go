package generator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/netlumina/lumina/roce"
)

// RequesterConfig configures the requester side of a test.
type RequesterConfig struct {
	Device  Device
	Clock   Clock
	Exec    Exec // default: direct calls
	Traffic Traffic
	// OnConnections receives the connection list after the QPs are
	// connected and before any traffic; traffic starts only after it
	// returns nil (the control plane installs its entries meanwhile).
	OnConnections func(ctx context.Context, conns []Connection) error
	// Secret, when set, is sent first on the control connection, for a
	// responder that checks it (Authenticate). Default: none.
	Secret string
	// After runs fn on the device's Loop d from now (sim.Loop.AfterFunc):
	// the timer of Traffic.PostIntervalNs's post schedule. Required when
	// PostIntervalNs > 0; unused otherwise.
	After func(d time.Duration, fn func())
}

// Requester creates QPs, exchanges metadata with the responder, reports the
// connections, generates the traffic and measures it.
//
// Concurrency: Handshake, Start and Finish are called from one goroutine in
// that order; completions arrive on the device's Loop and only touch state
// guarded by mu.
type Requester struct {
	cfg   RequesterConfig
	ctl   *ctl
	qps   []QP
	mrs   []*MR
	peers []Endpoint
	conns []Connection

	mu       sync.Mutex
	startNs  int64
	endNs    int64
	qpState  []qpRun
	inRound  int // barrier: completions missing in the current round
	failures []string
	done     chan struct{}
	closed   bool
}

type qpRun struct {
	posted, completed int
	timer             bool    // a post timer is pending (PostIntervalNs)
	postNs            []int64 // post time of outstanding messages, FIFO
	mct               []int64 // message completion times (ns)
	lastNs            int64
	errors            int
}

// Result is what the requester measured.
type Result struct {
	Verb        Verb              `json:"verb"`
	Bytes       int64             `json:"bytes"`
	DurationNs  int64             `json:"duration_ns"`
	GoodputGbps float64           `json:"goodput_gbps"`
	QPs         []QPResult        `json:"qps"`
	Errors      []string          `json:"errors,omitempty"`
	Responder   *ResponderStats   `json:"responder,omitempty"`
	Connections []Connection      `json:"connections"`
	Counters    map[string]uint64 `json:"counters,omitempty"`
}

// QPResult is one QP's part of the Result.
type QPResult struct {
	Index     int     `json:"index"`
	Posted    int     `json:"posted"`
	Completed int     `json:"completed"`
	Errors    int     `json:"errors"`
	MCTNs     []int64 `json:"message_completion_ns"`
	// AvgMCTNs is (last completion − start) / messages, the public tool's
	// "usec/iter".
	AvgMCTNs int64 `json:"avg_mct_ns"`
}

// NewRequester validates the configuration.
func NewRequester(cfg RequesterConfig) (*Requester, error) {
	if cfg.Device == nil || cfg.Clock == nil {
		return nil, errors.New("generator: requester needs a Device and a Clock")
	}
	if err := cfg.Traffic.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.Traffic.PostIntervalNs > 0 && cfg.After == nil {
		return nil, errors.New("generator: a post interval needs RequesterConfig.After")
	}
	if cfg.Exec == nil {
		cfg.Exec = func(fn func()) { fn() }
	}
	return &Requester{cfg: cfg, done: make(chan struct{})}, nil
}

// Handshake creates the QPs and memory, exchanges QP metadata with the
// responder over conn, connects the QPs and reports the connections.
func (r *Requester) Handshake(ctx context.Context, conn net.Conn) ([]Connection, error) {
	t := r.cfg.Traffic
	dev := r.cfg.Device
	r.ctl = newCtl(conn)
	var mine []Endpoint
	r.cfg.Exec(func() {
		ips := dev.IPs()
		for i := range t.NumQPs {
			qp := dev.NewQP()
			buf := make([]byte, max(*t.MsgSize, 1))
			pattern(buf, i, 'q')
			r.qps = append(r.qps, qp)
			r.mrs = append(r.mrs, dev.RegMR(buf))
			ip := ips[0]
			if t.MultiGID {
				ip = ips[i%len(ips)]
			}
			mine = append(mine, Endpoint{IP: ip, MAC: dev.MAC(), QPN: qp.QPN(), IPSN: uint32(qp.PSN())})
		}
		handleQPs(dev, r.qps, r.onCompletion)
	})
	dl := deadline(ctx)
	if r.cfg.Secret != "" {
		if err := r.ctl.send(message{Auth: r.cfg.Secret}, dl); err != nil {
			return nil, err
		}
	}
	if err := r.ctl.send(message{Hello: &hello{Version: protocolVersion, Traffic: t, QPs: mine}}, dl); err != nil {
		return nil, err
	}
	m, err := r.ctl.recv(dl)
	if err != nil {
		return nil, err
	}
	if m.Ready == nil || len(m.Ready.QPs) != t.NumQPs {
		return nil, fmt.Errorf("%w: want ready with %d QPs", ErrProtocol, t.NumQPs)
	}
	r.peers = m.Ready.QPs
	var cerr error
	r.cfg.Exec(func() {
		for i, qp := range r.qps {
			peer := r.peers[i]
			if err := checkEndpoint(peer); err != nil {
				cerr = err
				return
			}
			a := ConnectAttr{RemoteQPN: peer.QPN, RemotePSN: psn(peer.IPSN), RemoteIP: peer.IP, RemoteMAC: peer.MAC,
				LocalIP: mine[i].IP, MTU: t.MTU, Timeout: t.Timeout, RetryCnt: t.RetryCnt,
				RNRRetry: t.RNRRetry, MinRNRTimer: t.MinRNRTimer,
				MaxRdAtomic: max(16, t.TxDepth)}
			if t.DSCP != nil {
				a.TrafficClass = new(uint8(t.DSCP[i]<<2 | 2))
			}
			if err := qp.Connect(a); err != nil {
				cerr = fmt.Errorf("generator: connecting QP %d: %w", i, err)
				return
			}
		}
	})
	if cerr != nil {
		r.ctl.send(message{Error: cerr.Error()}, dl)
		return nil, cerr
	}
	for i := range r.qps {
		r.conns = append(r.conns, Connection{Index: i, Verb: t.verbOf(i), Requester: mine[i], Responder: r.peers[i]})
	}
	if r.cfg.OnConnections != nil {
		if err := r.cfg.OnConnections(ctx, r.conns); err != nil {
			r.ctl.send(message{Error: "control plane: " + err.Error()}, dl)
			return nil, fmt.Errorf("generator: reporting connections: %w", err)
		}
	}
	return r.conns, nil
}

// Start posts the first work requests through the Exec. Call it after
// Handshake; in the sim testbed, before running the event loop. The
// Result's duration and goodput count from this instant.
func (r *Requester) Start() { r.cfg.Exec(r.StartOnLoop) }

// StartOnLoop is Start for a caller already on the device's Loop (a timer
// of a delayed start, a driver of a virtual clock holding the Exec's
// lock).
func (r *Requester) StartOnLoop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.cfg.Traffic
	r.startNs = r.cfg.Clock.Now()
	r.qpState = make([]qpRun, len(r.qps))
	first := t.TxDepth
	if t.Barrier {
		first = 1
		r.inRound = len(r.qps)
	}
	if t.PostIntervalNs > 0 && !t.Barrier {
		for i := range r.qps {
			r.pumpLocked(i)
		}
		return
	}
	for i := range r.qps {
		for range min(first, t.MsgsPerQP) {
			r.postLocked(i)
		}
	}
}

// dueNs returns when message k of a QP is due: the start + k ×
// PostIntervalNs.
func (r *Requester) dueNs(k int) int64 { return r.startNs + int64(k)*r.cfg.Traffic.PostIntervalNs }

// pumpLocked posts QP i's messages that are due while fewer than TxDepth
// are outstanding, and sets a timer for the next one that is not yet
// due (PostIntervalNs without Barrier).
func (r *Requester) pumpLocked(i int) {
	t := r.cfg.Traffic
	s := &r.qpState[i]
	for s.errors == 0 && s.posted < t.MsgsPerQP && len(s.postNs) < t.TxDepth {
		now := r.cfg.Clock.Now()
		if due := r.dueNs(s.posted); now < due {
			if !s.timer {
				s.timer = true
				r.cfg.After(time.Duration(due-now), func() {
					r.mu.Lock()
					defer r.mu.Unlock()
					r.qpState[i].timer = false
					r.pumpLocked(i)
				})
			}
			return
		}
		if !r.postLocked(i) {
			return
		}
	}
}

// nextRoundLocked posts the next round of every QP (Barrier) when it is
// due, else sets a timer that posts it then.
func (r *Requester) nextRoundLocked() {
	post := func() {
		r.inRound = len(r.qps)
		for j := range r.qps {
			r.postLocked(j)
		}
	}
	now := r.cfg.Clock.Now()
	due := r.dueNs(r.qpState[0].posted)
	if r.cfg.Traffic.PostIntervalNs == 0 || now >= due {
		post()
		return
	}
	r.cfg.After(time.Duration(due-now), func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		post()
	})
}

// postLocked posts QP i's next message and reports whether it could.
func (r *Requester) postLocked(i int) bool {
	t := r.cfg.Traffic
	s := &r.qpState[i]
	wr := SendWR{ID: uint64(i), Local: r.mrs[i], Length: *t.MsgSize,
		RemoteAddr: r.peers[i].Addr, RKey: r.peers[i].RKey, Imm: uint32(s.posted)}
	switch t.verbOf(i) {
	case VerbWrite:
		wr.Op = WRWrite
		if t.WithImm {
			wr.Op = WRWriteImm
		}
	case VerbSend:
		wr.Op = WRSend
		if t.WithImm {
			wr.Op = WRSendImm
		}
	case VerbRead:
		wr.Op = WRRead
	}
	if err := r.qps[i].PostSend(wr); err != nil {
		r.failLocked(fmt.Sprintf("QP %d: post: %v", i, err))
		return false
	}
	s.posted++
	s.postNs = append(s.postNs, r.cfg.Clock.Now())
	return true
}

func (r *Requester) onCompletion(c Completion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := int(c.WRID)
	if i < 0 || i >= len(r.qpState) {
		return
	}
	s := &r.qpState[i]
	if len(s.postNs) > 0 {
		s.mct = append(s.mct, c.TimeNs-s.postNs[0])
		s.postNs = s.postNs[1:]
	}
	if c.Status != StatusSuccess {
		s.errors++
		r.failLocked(fmt.Sprintf("QP %d: completion %v", i, c.Status))
		return
	}
	s.completed++
	s.lastNs = c.TimeNs
	t := r.cfg.Traffic
	switch {
	case t.Barrier:
		r.inRound--
		if r.inRound == 0 && s.posted < t.MsgsPerQP {
			r.nextRoundLocked()
		}
	case t.PostIntervalNs > 0:
		r.pumpLocked(i)
	case s.posted < t.MsgsPerQP:
		r.postLocked(i)
	}
	r.checkDoneLocked()
}

func (r *Requester) failLocked(msg string) {
	r.failures = append(r.failures, msg)
	r.checkDoneLocked()
}

// checkDoneLocked closes done when every QP finished or failed.
func (r *Requester) checkDoneLocked() {
	if r.closed {
		return
	}
	for _, s := range r.qpState {
		if s.errors == 0 && s.completed < r.cfg.Traffic.MsgsPerQP {
			return
		}
	}
	r.closed = true
	r.endNs = r.cfg.Clock.Now()
	close(r.done)
}

// Done is closed when all messages completed or a QP failed.
func (r *Requester) Done() <-chan struct{} { return r.done }

// Finish tells the responder that traffic is over, collects its verdict
// and returns the results. Call it after Done is closed (or to abort).
func (r *Requester) Finish(ctx context.Context) (*Result, error) {
	dl := deadline(ctx)
	r.mu.Lock()
	ok := r.closed && len(r.failures) == 0
	r.mu.Unlock()
	if err := r.ctl.send(message{Complete: &complete{OK: ok}}, dl); err != nil {
		return r.result(), err
	}
	m, err := r.ctl.recv(dl)
	res := r.result()
	if err != nil {
		return res, err
	}
	res.Responder = m.Bye
	if m.Bye == nil {
		return res, fmt.Errorf("%w: want bye", ErrProtocol)
	}
	return res, nil
}

func (r *Requester) result() *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.cfg.Traffic
	res := &Result{Verb: t.Verb, Errors: append([]string(nil), r.failures...), Connections: r.conns}
	end := r.endNs
	if end == 0 {
		end = r.cfg.Clock.Now()
	}
	res.DurationNs = end - r.startNs
	for i, s := range r.qpState {
		q := QPResult{Index: i, Posted: s.posted, Completed: s.completed, Errors: s.errors, MCTNs: s.mct}
		if s.completed > 0 {
			q.AvgMCTNs = (s.lastNs - r.startNs) / int64(s.completed)
		}
		res.Bytes += int64(s.completed) * int64(*t.MsgSize)
		res.QPs = append(res.QPs, q)
	}
	if res.DurationNs > 0 {
		res.GoodputGbps = float64(res.Bytes) * 8 / float64(res.DurationNs)
	}
	return res
}

func psn(v uint32) (p roce.PSN) { return roce.PSN(v) & roce.PSNMask }
