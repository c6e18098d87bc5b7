package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/orchestrator/agent"
)

// agentFlags: lumina agent.
type agentFlags struct{ listen, tokenFile, tlsDir string }

func (f *agentFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "", "`address` to serve on: host:port, or unix:///path.sock")
	fs.StringVar(&f.tokenFile, "token-file", "", "`file` holding the token orchestrators must present")
	fs.StringVar(&f.tlsDir, "tls-dir", "", "`dir` with cert.pem/key.pem (a self-signed pair is generated on first use)")
}

func (f *agentFlags) check(args []string) error {
	if len(args) != 0 || f.listen == "" || f.tokenFile == "" || f.tlsDir == "" {
		return usagef("agent needs --listen, --token-file and --tls-dir")
	}
	return nil
}

// runAgent is lumina agent: it serves the agent's gRPC services over TLS
// with a token until the context ends.
func runAgent(ctx context.Context, f *agentFlags, _ []string, _, stderr io.Writer) error {
	token, err := agent.ReadToken(f.tokenFile)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	cert, err := agent.EnsureCert(f.tlsDir)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	ln, err := listenOn("agent", f.listen)
	if err != nil {
		return err
	}
	opts := agent.ServerOptions(cert, token)
	a := &agent.Agent{ServerOpts: opts}
	defer a.Close()
	g := grpc.NewServer(opts...)
	a.Register(g)
	fmt.Fprintf(stderr, "lumina: agent serving on %s\n", ln.Addr())
	go func() { <-ctx.Done(); g.Stop() }()
	if err := g.Serve(ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// listenOn listens on addr, host:port or unix:///path.sock, for command
// cmd. An existing file at a unix socket's path is removed only when it is
// a stale socket (a socket nobody listens on); anything else is an error.
func listenOn(cmd, addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		return agent.LimitListener(ln, agent.MaxConnsPerListener), nil
	}
	if path == "" {
		return nil, usagef("%s: --listen unix:// needs a path (unix:///path.sock)", cmd)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, fmt.Errorf("%s: --listen %s: %w", cmd, addr, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return agent.LimitListener(ln, agent.MaxConnsPerListener), nil
}

// removeStaleSocket removes the unix socket at path if nobody listens on
// it. It does nothing when path does not exist and refuses anything else:
// a file that is not a socket, or a socket in use.
func removeStaleSocket(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSocket == 0 {
		what := "a regular file"
		switch {
		case st.IsDir():
			what = "a directory"
		case st.Mode()&os.ModeSymlink != 0:
			what = "a symbolic link"
		case !st.Mode().IsRegular():
			what = "a special file"
		}
		return fmt.Errorf("%s is %s, not a socket; not removing it", path, what)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s is in use: something listens on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s: cannot tell whether the socket is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing the stale socket: %w", err)
	}
	return nil
}
