package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/orchestrator/agent"
)

func init() {
	register(&command{
		name: "agent", args: "",
		summary: "host lumina components (RNIC + generator, dumper, software switch) for an orchestrator, over TLS with a token",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			listen := fs.String("listen", "", "`address` to serve on: host:port, or unix:///path.sock")
			tokenFile := fs.String("token-file", "", "`file` holding the token orchestrators must present")
			tlsDir := fs.String("tls-dir", "", "`dir` with cert.pem/key.pem (a self-signed pair is generated on first use)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) != 0 || *listen == "" || *tokenFile == "" || *tlsDir == "" {
					return usagef("agent needs --listen, --token-file and --tls-dir")
				}
				tok, err := os.ReadFile(*tokenFile)
				if err != nil {
					return err
				}
				token := strings.TrimSpace(string(tok))
				if len(token) < 16 {
					return errors.New("agent: the token must be at least 16 characters")
				}
				cert, err := agent.EnsureCert(*tlsDir)
				if err != nil {
					return fmt.Errorf("agent: certificate: %w", err)
				}
				network, addr := "tcp", *listen
				if rest, ok := strings.CutPrefix(addr, "unix://"); ok {
					network, addr = "unix", rest
					os.Remove(addr)
				}
				ln, err := net.Listen(network, addr)
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
		},
	})
}
