package lab

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions are how a client reaches the lab's NATS servers, as
// nats.go takes them (docs.nats.io, "Securing connections").
type ConnectOptions struct {
	// URL is one or more comma-separated server URLs
	// (nats://host:4222, tls://host:4222).
	URL string
	// Creds is a user credentials file (JWT + NKey seed); NKey an NKey
	// seed file; Token a token.
	Creds, NKey, Token string
	// CA is a file of CA certificates for the servers'; Cert and Key a
	// client certificate and its key (mutual TLS).
	CA, Cert, Key string
	// Name names the connection (seen in the server's monitoring).
	Name string
}

// Connect connects with reconnection on (forever, every 250 ms): a worker
// rides out a server restart or a cluster member's loss.
func Connect(o ConnectOptions) (*nats.Conn, error) {
	url := o.URL
	if url == "" {
		url = nats.DefaultURL
	}
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.Timeout(10 * time.Second)}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("lab: nkey: %w", err)
		}
		opts = append(opts, opt)
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.CA != "" {
		opts = append(opts, nats.RootCAs(o.CA))
	}
	if o.Cert != "" || o.Key != "" {
		if o.Cert == "" || o.Key == "" {
			return nil, fmt.Errorf("lab: a client certificate needs both --tls-cert and --tls-key")
		}
		opts = append(opts, nats.ClientCert(o.Cert, o.Key))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("lab: connecting to %s: %w", url, err)
	}
	return nc, nil
}
