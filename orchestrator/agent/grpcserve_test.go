package agent

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
)

// TestServeGRPCStoppedFirst: a server stopped before it serves logs
// nothing (Serve returns grpc.ErrServerStopped, not a failure); a
// listener that fails is logged.
func TestServeGRPCStoppedFirst(t *testing.T) {
	var logs []string
	logf := func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	g.Stop()
	ServeGRPC(g, ln, logf)
	if len(logs) != 0 {
		t.Errorf("Stop before Serve logged %q, want nothing", logs)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln2.Close()
	ServeGRPC(grpc.NewServer(), ln2, logf)
	if len(logs) != 1 || !strings.Contains(logs[0], "use of closed network connection") {
		t.Errorf("Serve on a closed listener logged %q, want its accept error", logs)
	}
}
