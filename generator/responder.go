package generator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// ResponderConfig configures the responder side.
type ResponderConfig struct {
	Device Device
	Exec   Exec // default: direct calls
	// Verify checks, after WRITE/SEND traffic, that every QP's buffer holds
	// the requester's data pattern. Default false.
	Verify bool
}

// ResponderStats is what the responder reports back to the requester.
type ResponderStats struct {
	RecvCompletions int               `json:"recv_completions"`
	RecvErrors      int               `json:"recv_errors"`
	Verified        bool              `json:"verified"`
	BadQPs          []int             `json:"bad_qps,omitempty"`
	Counters        map[string]uint64 `json:"counters,omitempty"`
}

// Serve runs the responder on one control connection: it answers the
// requester's hello by creating, connecting and (for SEND) arming its QPs,
// then waits for the requester's complete message, verifies memory if
// asked, and reports. It returns the same stats it sent.
func Serve(ctx context.Context, cfg ResponderConfig, conn net.Conn) (*ResponderStats, error) {
	if cfg.Device == nil {
		return nil, errors.New("generator: responder needs a Device")
	}
	if cfg.Exec == nil {
		cfg.Exec = func(fn func()) { fn() }
	}
	c := newCtl(conn)
	dl := deadline(ctx)
	m, err := c.recv(dl)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*ResponderStats, error) {
		c.send(message{Error: err.Error()}, dl)
		return nil, err
	}
	if m.Hello == nil {
		return fail(fmt.Errorf("%w: want hello", ErrProtocol))
	}
	if m.Hello.Version != protocolVersion {
		return fail(fmt.Errorf("%w: protocol version %d, want %d", ErrProtocol, m.Hello.Version, protocolVersion))
	}
	t := m.Hello.Traffic
	if err := t.setDefaults(); err != nil {
		return fail(err)
	}
	if len(m.Hello.QPs) != t.NumQPs {
		return fail(fmt.Errorf("%w: %d QPs for num_qps %d", ErrProtocol, len(m.Hello.QPs), t.NumQPs))
	}
	if *t.MsgSize > 1<<30 || int64(t.NumQPs)*int64(*t.MsgSize) > 8<<30 {
		return fail(fmt.Errorf("generator: %d QPs × %d B is more memory than the responder allocates", t.NumQPs, *t.MsgSize))
	}
	dev := cfg.Device
	stats := &ResponderStats{}
	var mrs []*MR
	var mine []Endpoint
	var cerr error
	cfg.Exec(func() {
		onComp := func(cp Completion) {
			if cp.Status != StatusSuccess {
				stats.RecvErrors++
				return
			}
			stats.RecvCompletions++
		}
		ips := dev.IPs()
		for i, peer := range m.Hello.QPs {
			if err := checkEndpoint(peer); err != nil {
				cerr = err
				return
			}
			ip := peer.IP
			local := ips[0]
			if t.MultiGID {
				local = ips[i%len(ips)]
			}
			if local.Is4() != ip.Is4() {
				cerr = fmt.Errorf("generator: QP %d: requester %v and responder %v differ in address family", i, ip, local)
				return
			}
			buf := make([]byte, max(*t.MsgSize, 1))
			pattern(buf, i, 's')
			mr := dev.RegMR(buf)
			qp := dev.NewQP()
			handleQPs(dev, []QP{qp}, onComp)
			a := ConnectAttr{RemoteQPN: peer.QPN, RemotePSN: psn(peer.IPSN), RemoteIP: ip, RemoteMAC: peer.MAC, LocalIP: local,
				MTU: t.MTU, Timeout: t.Timeout, RetryCnt: t.RetryCnt, MaxRdAtomic: max(16, t.TxDepth),
				RNRRetry: t.RNRRetry, MinRNRTimer: t.MinRNRTimer}
			if t.DSCP != nil {
				a.TrafficClass = new(uint8(t.DSCP[i]<<2 | 2))
			}
			if err := qp.Connect(a); err != nil {
				cerr = fmt.Errorf("generator: connecting responder QP %d: %w", i, err)
				return
			}
			if v := t.verbOf(i); v == VerbSend || v == VerbWrite && t.WithImm {
				for range t.MsgsPerQP {
					if err := qp.PostRecv(RecvWR{ID: uint64(i), MR: mr, Length: *t.MsgSize}); err != nil {
						cerr = err
						return
					}
				}
			}
			mrs = append(mrs, mr)
			mine = append(mine, Endpoint{IP: local, MAC: dev.MAC(), QPN: qp.QPN(), IPSN: uint32(qp.PSN()),
				Addr: mr.Addr, RKey: mr.RKey, Len: len(mr.Buf)})
		}
	})
	if cerr != nil {
		return fail(cerr)
	}
	if err := c.send(message{Ready: &ready{QPs: mine}}, dl); err != nil {
		return nil, err
	}
	// Traffic runs now; the requester says when it is over. No deadline but
	// the caller's context.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			conn.SetReadDeadline(time.Unix(1, 0))
		case <-done:
		}
	}()
	m, err = c.recv(time.Time{})
	if err != nil {
		return nil, err
	}
	if m.Complete == nil {
		return fail(fmt.Errorf("%w: want complete", ErrProtocol))
	}
	var out ResponderStats
	cfg.Exec(func() {
		stats.Verified = cfg.Verify && m.Complete.OK
		if stats.Verified {
			for i, mr := range mrs {
				if v := t.verbOf(i); (v == VerbWrite || v == VerbSend) && !checkPattern(mr.Buf[:*t.MsgSize], i, 'q') {
					stats.BadQPs = append(stats.BadQPs, i)
					stats.Verified = false
				}
			}
		}
		stats.Counters = dev.CounterMap()
		out = *stats
	})
	if err := c.send(message{Bye: &out}, deadline(ctx)); err != nil {
		return &out, err
	}
	return &out, nil
}
