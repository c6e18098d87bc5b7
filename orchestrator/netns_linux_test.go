package orchestrator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/internal/testutil"
)

// buildAgent builds the lumina binary the netns testbed runs as agents.
func buildAgent(t *testing.T) {
	t.Helper()
	testutil.RequireNetns(t)
	bin := filepath.Join(t.TempDir(), "lumina")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/lumina").CombinedOutput()
	if err != nil {
		t.Fatalf("building lumina: %v\n%s", err, out)
	}
	AgentBinary = bin
	t.Cleanup(func() { AgentBinary = "" })
}

func leftovers(t *testing.T) []string {
	out, _ := exec.Command("ip", "netns", "list").Output()
	var left []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "lum"+strconv.Itoa(os.Getpid())+"-") {
			left = append(left, l)
		}
	}
	return left
}

// TestNetnsComponentKilled kills the requester's agent during traffic: the
// run fails with a clear reason, keeps its partial results marked invalid,
// and leaves no namespace or process behind. (It needs the unexported
// hooks; the netns testbed's end-to-end scenario test is
// tests.TestNetnsListing2.)
func TestNetnsComponentKilled(t *testing.T) {
	buildAgent(t)
	pids := make(chan map[string]int, 1)
	kill := hooks{traffic: func(pl *placement) {
		time.Sleep(300 * time.Millisecond) // traffic is under way (it takes ~2.7 s)
		syscall.Kill(pl.pids["requester"], syscall.SIGKILL)
		pids <- pl.pids
	}}
	tc, _ := config.Load("../examples/quickstart.yaml")
	start := time.Now()
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Testbed: "netns", Retries: 0, RetriesSet: true, hooks: kill})
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), "requester") {
		t.Fatalf("run after a killed requester: OK=%v err=%v", res.OK(), res.Err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("failure took %v", time.Since(start))
	}
	if len(res.Repeats) != 1 || res.Repeats[0].Report.Valid || res.Repeats[0].Report.Error == "" {
		t.Fatalf("partial results: %+v", res.Repeats)
	}
	if _, err := os.Stat(filepath.Join(res.Repeats[0].Dir, "report.json")); err != nil {
		t.Errorf("partial results not kept: %v", err)
	}
	t.Logf("failure reason: %s", res.Repeats[0].Report.Error)
	for role, pid := range <-pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s agent (pid %d) still running", role, pid)
		}
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("namespaces left behind: %v", l)
	}
}
