package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Client certificates (mutual TLS) as an alternative to the token, for
// standard P4Runtime clients that cannot send lumina's bearer token
// (p4runtime-shell, as against Stratum): a call is accepted if its
// connection presented a certificate that verifies against the configured
// pool (a CA's, or pinned self-signed client certificates with the
// clientAuth key usage) or, when a token is configured, if it carries the
// token.

var errNoCredential = status.Error(codes.Unauthenticated, "lumina: neither a verified client certificate nor the token")

// ReadCertPool reads a PEM file of CA certificates (or pinned self-signed
// client certificates) whose client certificates a server accepts.
func ReadCertPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("client CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// verifiedClient reports whether ctx's connection presented a client
// certificate that the TLS handshake verified.
func verifiedClient(ctx context.Context) bool {
	ti, ok := authInfo(ctx).(credentials.TLSInfo)
	return ok && len(ti.State.VerifiedChains) > 0
}

// ServerOptionsClientCerts returns gRPC server options like ServerOptions
// that also accept clients by certificate: TLS with cert, client
// certificates verified against clientCAs, and on every call either a
// verified client certificate or, if token is not empty, the token. With
// an empty token a client certificate is required (the handshake fails
// without one). The bounds are ServerOptions'. The options install a tap
// handle, so they cannot be combined with another grpc.InTapHandle.
func ServerOptionsClientCerts(cert tls.Certificate, token string, clientCAs *x509.CertPool) ([]grpc.ServerOption, error) {
	if clientCAs == nil {
		return nil, errors.New("agent: client certificates need a CA pool")
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, ClientCAs: clientCAs,
		ClientAuth: tls.RequireAndVerifyClientCert}
	if token != "" {
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	}
	check := func(ctx context.Context, md metadata.MD) error {
		if verifiedClient(ctx) || (token != "" && tokenOK(md, token)) {
			markCall(ctx)
			return nil
		}
		return errNoCredential
	}
	incoming := func(ctx context.Context) metadata.MD {
		md, _ := metadata.FromIncomingContext(ctx)
		return md
	}
	return []grpc.ServerOption{
		grpc.Creds(markingCreds{credentials.NewTLS(tc)}),
		// As in ServerOptions, refuse a call before its request is read
		// (issue #17); the interceptors check again.
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			return ctx, check(ctx, info.Header)
		}),
		grpc.MaxRecvMsgSize(MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		grpc.MaxHeaderListSize(MaxHeaderListSize),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx, incoming(ctx)); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context(), incoming(ss.Context())); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}, nil
}

// ClientCertDialOptions returns client options that trust exactly the
// server certificate in certPEM and present clientCert (mutual TLS, no
// token).
func ClientCertDialOptions(certPEM []byte, clientCert tls.Certificate) ([]grpc.DialOption, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("agent: no certificate in the PEM data")
	}
	tc := &tls.Config{RootCAs: pool, ServerName: "lumina-agent", MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{clientCert}}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tc))}, nil
}
