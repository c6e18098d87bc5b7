package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/internal/testlab"
)

// TestRemoteAgentKilled kills the responder's agent during traffic: the run
// fails with a clear reason within its timeout and keeps partial results,
// marked invalid. (It needs the unexported hooks; the remote testbed's
// end-to-end scenario test is tests.TestRemoteTestbed.)
func TestRemoteAgentKilled(t *testing.T) {
	buildAgent(t)
	lab := testlab.NewRemote(t, AgentBinary)
	kill := hooks{traffic: func(*placement) {
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(lab.PIDs["rsp"], syscall.SIGKILL)
	}}
	tc, err := config.Load(lab.Config)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Retries: 0, RetriesSet: true,
		Remote: RemoteOptions{TokenFile: lab.TokenFile, CertDir: lab.CertDir, RNIC: "softrnic"}, hooks: kill})
	if res.OK() || len(res.Repeats) != 1 || res.Repeats[0].Report.Valid {
		t.Fatalf("run with a killed responder agent: OK=%v err=%v", res.OK(), res.Err)
	}
	rep := res.Repeats[0].Report
	reason := rep.Error
	if reason == "" && rep.Generator != nil {
		reason = rep.Generator.Stopped
	}
	if reason == "" || time.Since(start) > 2*time.Minute {
		t.Errorf("failure after %v with reason %q", time.Since(start), reason)
	}
	if _, err := os.Stat(filepath.Join(res.Repeats[0].Dir, "report.json")); err != nil {
		t.Errorf("partial results not kept: %v", err)
	}
	t.Logf("failed in %v: %s", time.Since(start).Round(time.Millisecond), reason)
}
