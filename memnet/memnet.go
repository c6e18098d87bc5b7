// Package memnet is an in-memory network of named listeners for one
// process: the sim testbed reaches its components' gRPC services, the
// P4Runtime server and the generator's control connection through it, so
// the distributed code path runs without a socket anyone else could reach.
//
// Addresses are names. A listener's address is "passthrough:///NAME", a
// gRPC target as it is; Listen and Dial take it or the bare name.
// Listening on "" or on a name ending in ":0" picks a fresh name, as a
// port 0 does. A Network is safe for concurrent use.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// ErrNoListener is returned by Dial for a name nobody listens on.
var ErrNoListener = errors.New("memnet: connection refused")

// bufSize is each direction's buffer of a connection: what gRPC's flow
// control keeps in flight by default, so a writer rarely waits on it.
const bufSize = 64 << 10

// Network maps names to listeners. The zero value is ready to use.
type Network struct {
	mu   sync.Mutex // guards ls and next
	ls   map[string]*listener
	next int
}

type listener struct {
	*bufconn.Listener
	name string
	n    *Network
}

func (l *listener) Addr() net.Addr { return addr(scheme + l.name) }

const scheme = "passthrough:///"

func (l *listener) Close() error {
	l.n.mu.Lock()
	if l.n.ls[l.name] == l {
		delete(l.n.ls, l.name)
	}
	l.n.mu.Unlock()
	return l.Listener.Close()
}

type addr string

func (a addr) Network() string { return "memnet" }
func (a addr) String() string  { return string(a) }

// Listen listens on name.
func (n *Network) Listen(name string) (net.Listener, error) {
	name = strings.TrimPrefix(name, scheme)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ls == nil {
		n.ls = map[string]*listener{}
	}
	if name == "" || strings.HasSuffix(name, ":0") {
		n.next++
		name = fmt.Sprintf("%smem%d", strings.TrimSuffix(name, "0"), n.next)
	}
	if _, ok := n.ls[name]; ok {
		return nil, fmt.Errorf("memnet: %s: address already in use", name)
	}
	l := &listener{Listener: bufconn.Listen(bufSize), name: name, n: n}
	n.ls[name] = l
	return l, nil
}

// Dial connects to the listener on name.
func (n *Network) Dial(ctx context.Context, name string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[strings.TrimPrefix(name, scheme)]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoListener, name)
	}
	return l.DialContext(ctx)
}

// DialOptions are the gRPC dial options that reach n's listeners, in
// plaintext: a connection never leaves the process.
func (n *Network) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(n.Dial)}
}

// GRPC returns a client connection to the gRPC server listening on name.
func (n *Network) GRPC(name string) (*grpc.ClientConn, error) {
	return grpc.NewClient(scheme+strings.TrimPrefix(name, scheme), n.DialOptions()...)
}
