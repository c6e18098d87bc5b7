package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Agents accept only orchestrators that present the configured token (in
// the "authorization: Bearer <token>" metadata of every call) over TLS.
// The agent's certificate is self-signed, generated on first use into its
// TLS directory; the orchestrator pins it (trusts exactly that
// certificate), so no CA is involved.

const tokenHeader = "authorization"

// MinTokenLen is the shortest token agents, injectors and orchestrators
// accept.
const MinTokenLen = 16

// ReadToken reads a token file: its content without surrounding white
// space, which must be at least MinTokenLen characters. Every token file
// (an agent's, an injector's, an orchestrator's --agent-token-file) is
// read with it.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < MinTokenLen {
		return "", fmt.Errorf("token file %s: the token must be at least %d characters (it has %d)", path, MinTokenLen, len(tok))
	}
	return tok, nil
}

// EnsureCert returns the TLS certificate in dir (cert.pem, key.pem),
// generating a self-signed one valid for the given names when neither file
// exists. A pair that cannot be read or loaded (corrupt, unreadable, not
// matching), or only one of the two files, is an error: nothing is
// overwritten.
func EnsureCert(dir string, names ...string) (tls.Certificate, error) {
	c, err := ensureCert(dir, names...)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS certificate: %w", err)
	}
	return c, nil
}

func ensureCert(dir string, names ...string) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_, cerr := os.Lstat(certPath)
	_, kerr := os.Lstat(keyPath)
	switch {
	case cerr == nil && kerr == nil:
		c, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("loading %s and %s: %w (fix or remove both to generate a new pair)", certPath, keyPath, err)
		}
		return c, nil
	case cerr == nil && errors.Is(kerr, fs.ErrNotExist):
		return tls.Certificate{}, fmt.Errorf("%s exists but %s does not (restore it, or remove both to generate a new pair)", certPath, keyPath)
	case kerr == nil && errors.Is(cerr, fs.ErrNotExist):
		return tls.Certificate{}, fmt.Errorf("%s exists but %s does not (restore it, or remove both to generate a new pair)", keyPath, certPath)
	case !errors.Is(cerr, fs.ErrNotExist):
		return tls.Certificate{}, cerr
	case !errors.Is(kerr, fs.ErrNotExist):
		return tls.Certificate{}, kerr
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "lumina-agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		DNSNames: append([]string{"lumina-agent", "localhost"}, names...), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	// Key first, then the certificate, each renamed into place: whoever
	// sees cert.pem (an orchestrator pinning it) sees all of it.
	if err := writeAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certPath, keyPath)
}

// writeAtomic writes data to a temporary file in path's directory and
// renames it to path.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Limits of the servers ServerOptions configures (the agent's services,
// an injector's P4Runtime server, the orchestrator's Intake service).
const (
	// MaxRecvMsgSize bounds one received message. The agent's own
	// requests are small (typed configs and connection lists of a few
	// KiB; Dumper.Fetch streams 1 MiB chunks the other way, server to
	// client, which this limit does not touch). The largest legitimate
	// messages received are P4Runtime's: a Write of controlplane's
	// default 1000-update batch is a few hundred KiB, and the software
	// target's SetForwardingPipelineConfig carries only the P4Info (a few
	// KiB) with an empty device config. 4 MiB (gRPC's default, so nothing
	// that fitted before is refused now) keeps ample room for both; it is
	// only reachable by authenticated callers, since the token is checked
	// before a message is read.
	MaxRecvMsgSize = 4 << 20
	// MaxConcurrentStreams bounds the calls in progress on one
	// connection; further calls wait on the client side for a free slot.
	// An orchestrator makes a handful at a time, a P4Runtime controller
	// one StreamChannel plus its Writes.
	MaxConcurrentStreams = 64
	// MaxHeaderListSize bounds the (uncompressed) headers of one call,
	// which the server reads before it can check the token: gRPC's
	// default is 16 MiB; legitimate headers (path, authority, content
	// type, user agent, timeout, the token) are well under 1 KiB.
	MaxHeaderListSize = 64 << 10
)

var errUnauthenticated = status.Error(codes.Unauthenticated, "lumina agent: missing or wrong token")

// tokenOK reports whether md holds "authorization: Bearer <token>".
func tokenOK(md metadata.MD, token string) bool {
	want := []byte("Bearer " + token)
	for _, v := range md.Get(tokenHeader) {
		if subtle.ConstantTimeCompare([]byte(v), want) == 1 {
			return true
		}
	}
	return false
}

// ServerOptions returns gRPC server options: TLS with cert, a token check
// on every call, and bounds on message, header and concurrency sizes. A
// call with the token marks its connection authenticated for the limited
// listener that accepted it (NewLimitListener).
//
// The token is checked in a tap handle, which gRPC runs as soon as a
// call's headers arrive, before it reads (or buffers) the request
// message: a call without the token is refused with Unauthenticated and
// never reaches a handler, so unauthenticated callers cannot make the
// server hold their request bodies (issue #17). The interceptors check it
// again as a second line. The options install a tap handle, so they
// cannot be combined with another grpc.InTapHandle.
func ServerOptions(cert tls.Certificate, token string) []grpc.ServerOption {
	check := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		if !tokenOK(md, token) {
			return errUnauthenticated
		}
		return nil
	}
	return []grpc.ServerOption{
		grpc.Creds(markingCreds{credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})}),
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			if !tokenOK(info.Header, token) {
				return ctx, errUnauthenticated
			}
			markCall(ctx)
			return ctx, nil
		}),
		grpc.MaxRecvMsgSize(MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		grpc.MaxHeaderListSize(MaxHeaderListSize),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

// PlaintextServerOptions returns the gRPC server options of a server
// without TLS or token (`lumina injector` without --token-file or
// --client-ca): ServerOptions' bounds, and every call marks its
// connection authenticated for the limited listener that accepted it, so
// connections that never make a call lose their slot (NewLimitListener).
// Anyone who reaches such a server may use it. The options install a tap
// handle, so they cannot be combined with another grpc.InTapHandle.
func PlaintextServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(markingCreds{insecure.NewCredentials()}),
		grpc.InTapHandle(func(ctx context.Context, _ *tap.Info) (context.Context, error) {
			markCall(ctx)
			return ctx, nil
		}),
		grpc.MaxRecvMsgSize(MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		grpc.MaxHeaderListSize(MaxHeaderListSize),
	}
}

type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{tokenHeader: "Bearer " + string(t)}, nil
}
func (tokenCreds) RequireTransportSecurity() bool { return true }

// DialOptions returns client options that trust exactly the certificate in
// certPEM and send token.
func DialOptions(certPEM []byte, token string) ([]grpc.DialOption, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("agent: no certificate in the PEM data")
	}
	tc := &tls.Config{RootCAs: pool, ServerName: "lumina-agent", MinVersion: tls.VersionTLS13}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tc)), grpc.WithPerRPCCredentials(tokenCreds(token))}, nil
}

// ReadCert reads an agent's certificate for pinning.
func ReadCert(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cert.pem"))
	if err != nil {
		return nil, fmt.Errorf("agent: reading the agent certificate: %w", err)
	}
	return b, nil
}
