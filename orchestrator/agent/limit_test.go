package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// At most n authenticated connections are held: the n+1-th is accepted
// only once one of the first n closes.
func TestLimitListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := NewLimitListener(raw, ListenLimits{MaxConns: 2, AuthTimeout: time.Hour})
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			MarkAuthenticated(c)
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	var held []net.Conn
	for range 2 {
		select {
		case c := <-accepted:
			held = append(held, c)
		case <-time.After(10 * time.Second):
			t.Fatal("the first two connections were not accepted")
		}
	}
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while two authenticated ones are held")
	case <-time.After(100 * time.Millisecond):
	}
	held[0].Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the third connection was not accepted after one closed")
	}
	held[1].Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitHeld waits until ln holds n connections.
func waitHeld(t *testing.T, ln net.Listener, n int) {
	t.Helper()
	l := ln.(*limitListener)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		used := l.used
		l.mu.Unlock()
		if used == n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the listener holds %d connections, want %d", used, n)
		}
	}
}

// TestLimitListenerAuthTimeout: a connection that sends nothing is closed
// after AuthTimeout and frees its slot; one marked authenticated stays.
func TestLimitListenerAuthTimeout(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	ln := NewLimitListener(raw, ListenLimits{MaxConns: 4, AuthTimeout: timeout})
	defer ln.Close()
	srv := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			srv <- c
		}
	}()
	idle, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	authed, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	<-srv
	MarkAuthenticated(<-srv) // (which of the two it is does not matter yet)
	waitHeld(t, ln, 2)
	// One of the two is pending: it is closed after the timeout.
	waitHeld(t, ln, 1)
	start := time.Now()
	idle.SetReadDeadline(time.Now().Add(20 * time.Second))
	authed.SetReadDeadline(time.Now().Add(20 * time.Second))
	var closed, open int
	for _, c := range []net.Conn{idle, authed} {
		c.SetReadDeadline(time.Now().Add(3 * timeout))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++
		} else {
			closed++
		}
	}
	if closed != 1 || open != 1 {
		t.Errorf("after the auth timeout: %d connections closed by the server, %d open (%v); want 1 and 1", closed, open, time.Since(start))
	}
}

// TestIdleConnectionsDoNotLockOut (#38.1): with every slot of a listener
// taken by connections that never authenticate — raw TCP that sends
// nothing, TLS that completes its handshake and stops, gRPC clients
// without the token — an authenticated call still succeeds at once, for
// the token (ServerOptions), client certificates with a token
// (ServerOptionsClientCerts) and plaintext (PlaintextServerOptions). The
// auth timeout is an hour: only evicting a pending connection can let the
// call in. (Before, the call waited for a slot: 120 s for raw TCP, for
// ever for the others.)
func TestIdleConnectionsDoNotLockOut(t *testing.T) {
	dir := t.TempDir()
	cert, err := EnsureCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	pemb, err := ReadCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemb)
	withCA, err := ServerOptionsClientCerts(cert, limitsToken, pool)
	if err != nil {
		t.Fatal(err)
	}
	tlsDial := func(addr string) (net.Conn, error) {
		// (ALPN h2: gRPC closes a TLS connection without it at once.)
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "lumina-agent", MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}})
	}
	for _, tc := range []struct {
		name string
		opts []grpc.ServerOption
		tls  bool
	}{
		{"token", ServerOptions(cert, limitsToken), true},
		{"client-ca and token", withCA, true},
		{"plaintext", PlaintextServerOptions(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := NewLimitListener(raw, ListenLimits{AuthTimeout: time.Hour})
			g := grpc.NewServer(tc.opts...)
			g.RegisterService(&countingDesc, &counting{})
			go g.Serve(ln)
			defer g.Stop()
			addr := raw.Addr().String()
			// The cap's worth of idle connections, a third of each kind
			// (plaintext: raw TCP only).
			for i := range MaxConnsPerListener {
				var c net.Conn
				var err error
				switch {
				case !tc.tls || i%3 == 0:
					c, err = net.Dial("tcp", addr)
				case i%3 == 1:
					c, err = tlsDial(addr)
				default:
					cc := dialCounting(t, addr, pemb, "")
					if _, err := echo(cc, 1); status.Code(err) != codes.Unauthenticated {
						t.Fatalf("a call without the token: %v, want Unauthenticated", err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
			}
			waitHeld(t, ln, MaxConnsPerListener)
			var cc *grpc.ClientConn
			if tc.tls {
				cc = dialCounting(t, addr, pemb, limitsToken)
			} else {
				if cc, err = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
					t.Fatal(err)
				}
				defer cc.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			start := time.Now()
			out := new(wrapperspb.Int64Value)
			err = cc.Invoke(ctx, "/lumina.test.Counting/Echo", wrapperspb.Bytes(make([]byte, 10)), out)
			if err != nil || out.GetValue() != 10 {
				t.Fatalf("authenticated Echo(10 bytes) with %d idle connections held = %d, %v after %v; want 10, nil",
					MaxConnsPerListener, out.GetValue(), err, time.Since(start).Round(time.Millisecond))
			}
			t.Logf("authenticated call with the slots full of idle connections: %v", time.Since(start).Round(time.Millisecond))
		})
	}
}
