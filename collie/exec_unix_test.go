//go:build unix

package collie

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExecEngineKillsLeftovers: a command that leaves a child in the
// background holding its stdout and stderr still ends its experiment when
// the command exits, and the child does not outlive the experiment.
func TestExecEngineKillsLeftovers(t *testing.T) {
	w := Workload{Traffics: []Traffic{tr(Uni, "UD", "SEND", 1024)}}
	e := &ExecEngine{Command: script(t, `cat >/dev/null; sleep 30 & echo $! > "$0.pid"; echo '{"rx_gbps":5}'`)}
	start := time.Now()
	m, err := e.Run(context.Background(), 0, w)
	if err != nil || m.RxGbps != 5 {
		t.Fatalf("Run = %+v, %v; want the metrics", m, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the experiment took %v: it waited for the background child", d)
	}
	b, err := os.ReadFile(strings.TrimPrefix(e.Command, "") + ".pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the background child %d outlived its experiment", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
