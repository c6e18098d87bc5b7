package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
)

// The end-to-end scenario tests (examples through the CLI on each testbed)
// are in the top-level tests folder; these need Options the CLI does not
// expose (an injected clock, a testbed that is not available).

func TestResultsNotLost(t *testing.T) {
	out := t.TempDir()
	tc, _ := config.Load("../examples/send.yaml")
	RunTest(context.Background(), tc, Options{OutDir: out})
	tc, _ = config.Load("../examples/send.yaml")
	RunTest(context.Background(), tc, Options{OutDir: out, Now: func() time.Time { return time.Unix(0, 0) }})
	old := filepath.Join(out, "send", "0.replaced-19700101T000000.000", "report.json")
	if _, err := os.Stat(old); err != nil {
		t.Errorf("previous results not kept: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "send"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".run-") {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}
}

func TestUnavailableTestbed(t *testing.T) {
	tc, _ := config.Load("../examples/send.yaml")
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Testbed: "remote"})
	if res.Err == nil || res.OK() || !strings.Contains(res.Err.Error(), "testbed not available") {
		t.Fatalf("remote testbed: %v", res.Err)
	}
	// Partial results are kept and marked invalid.
	if len(res.Repeats) != 1 || res.Repeats[0].Report.Valid || res.Repeats[0].Report.Error == "" {
		t.Errorf("repeats %+v", res.Repeats)
	}
}
