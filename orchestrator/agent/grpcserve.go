package agent

import (
	"errors"
	"net"

	"google.golang.org/grpc"
)

// ServeGRPC serves g on ln until g stops and reports, through logf, an
// error Serve returns other than that of a server stopped: Stop makes
// Serve return nil, or grpc.ErrServerStopped when Stop came before Serve
// started (a run that fails right after starting a server stops it
// before its goroutine serves), neither of which is a failure (grpc-go
// Server.Serve's documentation). Callers run it in their own goroutine.
func ServeGRPC(g *grpc.Server, ln net.Listener, logf func(format string, args ...any)) {
	if err := g.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		logf("%v", err)
	}
}
