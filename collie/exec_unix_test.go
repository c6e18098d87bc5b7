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
	// The child's sleep has 30 s to run: dead well before that is dead
	// because the experiment killed it. A killed child stays a zombie
	// until the process that adopted it (PID 1 or a subreaper) reaps it,
	// which on a loaded machine took over 2 s: a zombie counts as dead.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the background child %d outlived its experiment", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether process pid exists and is not a zombie (Linux:
// the state in /proc/PID/stat, proc(5); elsewhere whether it exists).
func alive(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// The state follows the command name in parentheses, which may
		// itself contain ") ".
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] != 'Z'
		}
		return true
	} else if _, serr := os.Stat("/proc/self/stat"); serr == nil {
		return false // /proc works and the process is gone
	}
	return syscall.Kill(pid, 0) == nil
}
