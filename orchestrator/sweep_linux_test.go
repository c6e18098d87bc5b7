package orchestrator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
)

// TestSweepDeadRuns leaves what an orchestrator killed with SIGKILL leaves
// (namespaces lum<pid>-…, a work dir with the run's token) for a dead pid
// and for a live one: the sweep removes the dead run's and keeps the rest.
func TestSweepDeadRuns(t *testing.T) {
	testutil.RequireNetns(t)
	p := exec.Command("true")
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID, livePID := p.Process.Pid, os.Getpid()
	deadNS, liveNS := fmt.Sprintf("lum%d-1-requester", deadPID), fmt.Sprintf("lum%d-990-requester", livePID)
	for _, ns := range []string{deadNS, liveNS} {
		testutil.MustRun(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
	}
	tmp := t.TempDir()
	dirs := map[string]string{"lumina-netns-dead": strconv.Itoa(deadPID), "lumina-netns-live": strconv.Itoa(livePID), "lumina-netns-unowned": ""}
	for d, pid := range dirs {
		os.MkdirAll(filepath.Join(tmp, d), 0o700)
		os.WriteFile(filepath.Join(tmp, d, "token"), []byte("secret"), 0o600)
		if pid != "" {
			os.WriteFile(filepath.Join(tmp, d, "owner.pid"), []byte(pid), 0o600)
		}
	}
	swept := sweepDeadRuns(tmp)
	want := []string{"namespace " + deadNS, filepath.Join(tmp, "lumina-netns-dead")}
	if !slices.Equal(swept, want) {
		t.Errorf("swept %q, want %q", swept, want)
	}
	list := string(testutil.MustRun(t, "ip", "netns", "list"))
	if strings.Contains(list, deadNS) || !strings.Contains(list, liveNS) {
		t.Errorf("namespaces after the sweep:\n%s", list)
	}
	for d := range dirs {
		_, err := os.Stat(filepath.Join(tmp, d))
		if gone := os.IsNotExist(err); gone != (d == "lumina-netns-dead") {
			t.Errorf("%s removed = %v", d, gone)
		}
	}
}
