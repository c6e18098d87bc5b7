package agent

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// MaxConnsPerListener bounds the connections a lumina listener (agent
// control, P4Runtime, intake, generator control) holds at once: a run needs
// a handful, so a local user opening connections by the thousand cannot
// make an agent hold them all (#17 point 11).
const MaxConnsPerListener = 64

// DefaultAuthTimeout is how long a connection may stay unauthenticated
// before a limited listener closes it (#38 point 1): a TLS handshake and
// the first call take a few round trips.
const DefaultAuthTimeout = 5 * time.Second

// ListenLimits bound a listener of NewLimitListener.
type ListenLimits struct {
	// MaxConns bounds the connections held at once. Default
	// MaxConnsPerListener.
	MaxConns int
	// AuthTimeout is how long an accepted connection may stay
	// unauthenticated (no call with a valid credential yet) before it is
	// closed and loses its slot. Default DefaultAuthTimeout.
	AuthTimeout time.Duration
}

// LimitListener returns ln accepting at most n connections at a time, with
// the default AuthTimeout (NewLimitListener).
func LimitListener(ln net.Listener, n int) net.Listener {
	return NewLimitListener(ln, ListenLimits{MaxConns: n})
}

// NewLimitListener returns ln holding at most lim.MaxConns connections at
// a time, so that unauthenticated connections cannot lock out
// authenticated callers (#38 point 1):
//
//   - a connection is pending until it is marked authenticated: by the
//     gRPC options of this package (ServerOptions, ServerOptionsClientCerts,
//     PlaintextServerOptions) when a call with a valid credential arrives
//     on it, or by MarkAuthenticated; a pending connection is closed
//     after lim.AuthTimeout;
//   - when every slot is taken and a connection arrives, a pending
//     connection is closed to make room: the oldest one of the peer (IP
//     address; all unix and in-memory peers are one) holding the most
//     pending connections, counting the newcomer. Authenticated
//     connections are never closed by the listener; only when all slots
//     hold authenticated connections does a new one wait (in the kernel's
//     backlog) for a slot.
//
// One peer that floods connections thus evicts its own first; a caller
// sharing its address can still be evicted before it authenticates, if
// the flood opens MaxConns connections within that caller's handshake.
func NewLimitListener(ln net.Listener, lim ListenLimits) net.Listener {
	if lim.MaxConns <= 0 {
		lim.MaxConns = MaxConnsPerListener
	}
	if lim.AuthTimeout <= 0 {
		lim.AuthTimeout = DefaultAuthTimeout
	}
	return &limitListener{Listener: ln, lim: lim, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// limitListener: mu guards used, pending and every limitConn's state.
type limitListener struct {
	net.Listener
	lim       ListenLimits
	mu        sync.Mutex
	used      int          // connections holding a slot
	pending   []*limitConn // unauthenticated connections, oldest first
	wake      chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

type connState int

const (
	statePending connState = iota
	stateAuthenticated
	stateClosed
)

type limitConn struct {
	net.Conn
	l     *limitListener
	peer  string
	state connState // guarded by l.mu
	timer *time.Timer
}

// peerKey is the address a peer's share is counted by: the IP address of
// a TCP peer, "" for any other.
func peerKey(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// Accept waits until a slot is free or a pending connection can be
// evicted, then accepts a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		room := l.used < l.lim.MaxConns || len(l.pending) > 0
		l.mu.Unlock()
		if room {
			break
		}
		select {
		case <-l.wake:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.admit(c)
}

// admit gives c a slot, evicting a pending connection if all are taken.
func (l *limitListener) admit(c net.Conn) (net.Conn, error) {
	peer := peerKey(c)
	for {
		l.mu.Lock()
		if l.used < l.lim.MaxConns {
			l.used++
			lc := &limitConn{Conn: c, l: l, peer: peer}
			l.pending = append(l.pending, lc)
			lc.timer = time.AfterFunc(l.lim.AuthTimeout, lc.expire)
			l.mu.Unlock()
			return lc, nil
		}
		v := l.victimLocked(peer)
		if v != nil {
			l.dropLocked(v)
		}
		l.mu.Unlock()
		if v != nil {
			v.timer.Stop()
			v.Conn.Close()
			continue
		}
		// Every slot holds an authenticated connection (they were pending
		// when Accept looked): wait for one to close.
		select {
		case <-l.wake:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// victimLocked chooses the pending connection to evict for a newcomer
// from peer: the oldest of the peer with the most pending connections,
// the newcomer counted (ties go to the newcomer's peer, then to the peer
// of the oldest connection); nil if none is pending.
func (l *limitListener) victimLocked(peer string) *limitConn {
	if len(l.pending) == 0 {
		return nil
	}
	count := map[string]int{peer: 1}
	for _, c := range l.pending {
		count[c.peer]++
	}
	best := peer
	for _, c := range l.pending { // oldest first: ties go to the older
		if count[c.peer] > count[best] {
			best = c.peer
		}
	}
	for _, c := range l.pending {
		if c.peer == best {
			return c
		}
	}
	return l.pending[0] // the newcomer's peer has nothing pending
}

// dropLocked frees c's slot and marks it closed; the caller closes the
// underlying connection.
func (l *limitListener) dropLocked(c *limitConn) {
	if c.state == statePending {
		for i, p := range l.pending {
			if p == c {
				l.pending = append(l.pending[:i], l.pending[i+1:]...)
				break
			}
		}
	}
	if c.state != stateClosed {
		c.state = stateClosed
		l.used--
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// expire closes c if it is still pending (its AuthTimeout passed).
func (c *limitConn) expire() {
	c.l.mu.Lock()
	pending := c.state == statePending
	if pending {
		c.l.dropLocked(c)
	}
	c.l.mu.Unlock()
	if pending {
		c.Conn.Close()
	}
}

// authenticated marks c authenticated: it keeps its slot until it closes.
func (c *limitConn) authenticated() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.state != statePending {
		return
	}
	for i, p := range c.l.pending {
		if p == c {
			c.l.pending = append(c.l.pending[:i], c.l.pending[i+1:]...)
			break
		}
	}
	c.state = stateAuthenticated
	c.timer.Stop()
}

// Close closes the connection and frees its slot (once).
func (c *limitConn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	c.timer.Stop()
	return c.Conn.Close()
}

// MarkAuthenticated tells the limited listener that accepted c (its
// connection, NewLimitListener) that c's peer proved its credential: c is
// no longer closed for want of authentication nor evicted. It does
// nothing for another connection.
func MarkAuthenticated(c net.Conn) {
	if lc, ok := c.(*limitConn); ok {
		lc.authenticated()
	}
}

// markingCreds wraps a server's transport credentials so that the
// AuthInfo of a connection accepted by a limited listener leads back to
// it: a call's tap handle then marks the connection authenticated
// (markCall).
type markingCreds struct {
	credentials.TransportCredentials
}

// ServerHandshake implements credentials.TransportCredentials.
func (m markingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, ai, err := m.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return c, ai, err
	}
	if lc, ok := raw.(*limitConn); ok {
		return c, connAuthInfo{AuthInfo: ai, lc: lc}, nil
	}
	return c, ai, nil
}

// Clone implements credentials.TransportCredentials.
func (m markingCreds) Clone() credentials.TransportCredentials {
	return markingCreds{m.TransportCredentials.Clone()}
}

// connAuthInfo is a connection's AuthInfo and its limited connection.
type connAuthInfo struct {
	credentials.AuthInfo
	lc *limitConn
}

// GetCommonAuthInfo forwards to the wrapped AuthInfo (gRPC reads the
// security level through it).
func (a connAuthInfo) GetCommonAuthInfo() credentials.CommonAuthInfo {
	if c, ok := a.AuthInfo.(interface {
		GetCommonAuthInfo() credentials.CommonAuthInfo
	}); ok {
		return c.GetCommonAuthInfo()
	}
	return credentials.CommonAuthInfo{}
}

// authInfo returns the AuthInfo of ctx's connection, unwrapped.
func authInfo(ctx context.Context) credentials.AuthInfo {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if w, ok := p.AuthInfo.(connAuthInfo); ok {
		return w.AuthInfo
	}
	return p.AuthInfo
}

// markCall marks the connection of a call that presented a valid
// credential authenticated (NewLimitListener).
func markCall(ctx context.Context) {
	if p, ok := peer.FromContext(ctx); ok {
		if w, ok := p.AuthInfo.(connAuthInfo); ok {
			w.lc.authenticated()
		}
	}
}
