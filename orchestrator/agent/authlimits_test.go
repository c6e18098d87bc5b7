package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// counting is a fake service whose handlers count how often they are
// entered: Echo (unary; the count is taken before the request is even
// decoded) and Sink (client streaming, counting received bytes).
type counting struct {
	echo, sink atomic.Int64
}

var countingDesc = grpc.ServiceDesc{
	ServiceName: "lumina.test.Counting",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			srv.(*counting).echo.Add(1)
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(context.Context, any) (any, error) { return wrapperspb.Int64(int64(len(in.GetValue()))), nil }
			if ic == nil {
				return h(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/lumina.test.Counting/Echo"}, h)
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Sink",
		ClientStreams: true,
		Handler: func(srv any, ss grpc.ServerStream) error {
			srv.(*counting).sink.Add(1)
			var n int64
			for {
				in := new(wrapperspb.BytesValue)
				if err := ss.RecvMsg(in); err == io.EOF {
					return ss.SendMsg(wrapperspb.Int64(n))
				} else if err != nil {
					return err
				}
				n += int64(len(in.GetValue()))
			}
		},
	}},
}

const limitsToken = "0123456789abcdef-limits"

// serveCounting serves a counting service with ServerOptions and returns
// it, the address and the agent's certificate (PEM).
func serveCounting(t *testing.T) (*counting, string, []byte) {
	t.Helper()
	dir := t.TempDir()
	cert, err := EnsureCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	pemb, err := ReadCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(ServerOptions(cert, limitsToken)...)
	svc := &counting{}
	g.RegisterService(&countingDesc, svc)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return svc, ln.Addr().String(), pemb
}

// dialCounting connects to addr trusting certPEM; token "" sends none.
func dialCounting(t *testing.T, addr string, certPEM []byte, token string) *grpc.ClientConn {
	t.Helper()
	var opts []grpc.DialOption
	if token != "" {
		var err error
		if opts, err = DialOptions(certPEM, token); err != nil {
			t.Fatal(err)
		}
	} else {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		opts = []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(pool, "lumina-agent"))}
	}
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func echo(cc *grpc.ClientConn, n int) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := new(wrapperspb.Int64Value)
	err := cc.Invoke(ctx, "/lumina.test.Counting/Echo", wrapperspb.Bytes(make([]byte, n)), out)
	return out.GetValue(), err
}

func sink(cc *grpc.ClientConn, sizes ...int) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cc.NewStream(ctx, &countingDesc.Streams[0], "/lumina.test.Counting/Sink")
	if err != nil {
		return 0, err
	}
	for _, n := range sizes {
		if err := cs.SendMsg(wrapperspb.Bytes(make([]byte, n))); err != nil {
			break // the status comes from RecvMsg
		}
	}
	if err := cs.CloseSend(); err != nil {
		return 0, err
	}
	out := new(wrapperspb.Int64Value)
	if err := cs.RecvMsg(out); err != nil {
		return 0, err
	}
	return out.GetValue(), nil
}

// TestAuthBeforeBody: a call without the right token whose request is
// larger than MaxRecvMsgSize is refused with Unauthenticated, not
// ResourceExhausted: the token is checked before the message is read.
// (With the check only in interceptors, gRPC read the message first and
// refused it as too large.)
func TestAuthBeforeBody(t *testing.T) {
	svc, addr, pemb := serveCounting(t)
	big := MaxRecvMsgSize + 1<<20
	for name, token := range map[string]string{"no token": "", "wrong token": "fedcba9876543210-wrong"} {
		cc := dialCounting(t, addr, pemb, token)
		if _, err := echo(cc, big); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: unary call with a %d-byte request: %v, want Unauthenticated", name, big, err)
		}
		if _, err := sink(cc, big, big); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: streaming call with %d-byte messages: %v, want Unauthenticated", name, big, err)
		}
	}
	if e, s := svc.echo.Load(), svc.sink.Load(); e != 0 || s != 0 {
		t.Errorf("handlers entered %d (Echo) and %d (Sink) times for unauthenticated calls, want 0", e, s)
	}
	// The limit holds for authenticated callers too.
	cc := dialCounting(t, addr, pemb, limitsToken)
	if _, err := echo(cc, big); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("authenticated unary call with a %d-byte request: %v, want ResourceExhausted", big, err)
	}
}

// TestAuthRefusedAtTap: calls without the right token, small ones
// included, are refused before any handler runs (the unary handler counts
// before decoding its request, where gRPC used to call it and leave the
// refusal to the interceptor).
func TestAuthRefusedAtTap(t *testing.T) {
	svc, addr, pemb := serveCounting(t)
	for name, token := range map[string]string{"no token": "", "wrong token": "fedcba9876543210-wrong"} {
		cc := dialCounting(t, addr, pemb, token)
		for range 5 {
			if _, err := echo(cc, 10); status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s: Echo: %v, want Unauthenticated", name, err)
			}
			if _, err := sink(cc, 10); status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s: Sink: %v, want Unauthenticated", name, err)
			}
		}
	}
	if e, s := svc.echo.Load(), svc.sink.Load(); e != 0 || s != 0 {
		t.Errorf("handlers entered %d (Echo) and %d (Sink) times for unauthenticated calls, want 0", e, s)
	}
}

// TestAuthOK: with the token, calls up to the limits work, including
// more concurrent calls than MaxConcurrentStreams on one connection (the
// excess waits for a slot).
func TestAuthOK(t *testing.T) {
	svc, addr, pemb := serveCounting(t)
	cc := dialCounting(t, addr, pemb, limitsToken)
	if n, err := echo(cc, 1000); err != nil || n != 1000 {
		t.Fatalf("Echo(1000 bytes) = %d, %v", n, err)
	}
	near := MaxRecvMsgSize - 64 // room for the message's framing
	if n, err := echo(cc, near); err != nil || n != int64(near) {
		t.Fatalf("Echo(%d bytes) = %d, %v", near, n, err)
	}
	if n, err := sink(cc, 1<<20, 1<<20, 1<<20); err != nil || n != 3<<20 {
		t.Fatalf("Sink(3 × 1 MiB) = %d, %v", n, err)
	}
	errs := make(chan error, 2*MaxConcurrentStreams)
	for range cap(errs) {
		go func() {
			_, err := sink(cc, 100)
			errs <- err
		}()
	}
	var failed error
	for range cap(errs) {
		failed = errors.Join(failed, <-errs)
	}
	if failed != nil {
		t.Fatalf("%d concurrent calls: %v", cap(errs), failed)
	}
	if e, s := svc.echo.Load(), svc.sink.Load(); e != 2 || s != 1+2*MaxConcurrentStreams {
		t.Errorf("handlers entered %d (Echo) and %d (Sink) times, want 2 and %d", e, s, 1+2*MaxConcurrentStreams)
	}
}
