package lab

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerOptions configure an embedded NATS server with JetStream.
type ServerOptions struct {
	// Host and Port to listen on for clients (default 127.0.0.1, port
	// 4222; -1 picks a free port).
	Host string
	Port int
	// StoreDir is JetStream's store directory (required: jobs, leases and
	// results survive a restart in it).
	StoreDir string
	// Name is the server's name (required in a cluster, unique).
	Name string
	// Cluster: a JetStream cluster of servers with one ClusterName, each
	// listening for routes on ClusterHost:ClusterPort and dialling Routes
	// (nats-route://host:port). Empty ClusterName: a single server.
	ClusterName string
	ClusterHost string
	ClusterPort int
	Routes      []string
	// Log turns the server's own log on (stderr).
	Log bool
}

// StartServer starts an embedded NATS server with JetStream and waits until
// it accepts clients (bounded: 10 s).
func StartServer(o ServerOptions) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("lab: the server needs a JetStream store directory")
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := o.Port
	if port == 0 {
		port = 4222
	}
	so := &server.Options{
		ServerName: o.Name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		NoLog:      !o.Log,
		// Generous against a loaded machine: a client is dropped only
		// after 4 missed pings of 20 s.
		PingInterval: 20 * time.Second,
		MaxPingsOut:  4,
	}
	if o.ClusterName != "" {
		so.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: o.ClusterHost, Port: o.ClusterPort}
		if so.Cluster.Host == "" {
			so.Cluster.Host = host
		}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("lab: route %q: %v", r, err)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	return startNATS(so, o.Log)
}

// ServerFromConfig starts an embedded server from a nats-server
// configuration file (TLS, accounts, cluster: docs.nats.io's server
// configuration), with JetStream on and storeDir as its store unless the
// file names one.
func ServerFromConfig(file, storeDir string, log bool) (*server.Server, error) {
	so, err := server.ProcessConfigFile(file)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	so.JetStream = true
	if so.StoreDir == "" {
		so.StoreDir = storeDir
	}
	so.NoSigs, so.NoLog = true, !log
	return startNATS(so, log)
}

// startNATS starts the embedded server with options so and waits until
// it accepts connections (10 s at most).
func startNATS(so *server.Options, log bool) (*server.Server, error) {
	s, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("lab: nats server: %w", err)
	}
	if log {
		s.ConfigureLogger()
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("lab: nats server not ready for connections within 10 s")
	}
	return s, nil
}
