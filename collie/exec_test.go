package collie

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "engine.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExecEngine(t *testing.T) {
	w := Workload{Traffics: []Traffic{tr(Uni, "UD", "SEND", 1024)}}
	// Reports a pause for UD traffic, line rate otherwise.
	good := script(t, `in=$(cat)
case "$in" in
*'"qp_type":"UD"'*) echo '{"tx_gbps":1,"rx_gbps":60,"tx_mpps":1,"rx_mpps":7,"pause_duration_ratio":0.05,"diag":{"rx_wqe_cache_miss":42}}' ;;
*) echo '{"tx_gbps":1,"rx_gbps":95,"tx_mpps":1,"rx_mpps":11,"pause_duration_ratio":0}' ;;
esac
`)
	m, err := (&ExecEngine{Command: good}).Run(context.Background(), 3, w)
	if err != nil {
		t.Fatal(err)
	}
	if m.PauseDurationRatio != 0.05 || m.Diag["rx_wqe_cache_miss"] != 42 {
		t.Errorf("Run = %+v, want the script's metrics", m)
	}
	// The workload reaches stdin with its id.
	echo := script(t, `cat > "$0.in"; echo '{}'`)
	if _, err := (&ExecEngine{Command: echo}).Run(context.Background(), 9, w); err != nil {
		t.Fatal(err)
	}
	in, _ := os.ReadFile(echo + ".in")
	if !strings.HasPrefix(string(in), `{"id":9,"traffics":[{"direction":"uni"`) {
		t.Errorf("stdin = %s", in)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"crash", "echo boom >&2; exit 3", "boom"},
		{"bad-json", "echo 'not json'", "metrics"},
		{"negative", `echo '{"rx_gbps":-1}'`, "rx_gbps"},
		{"trailing", `echo '{}{}'`, "trailing"},
		{"timeout", "sleep 5; echo '{}'", "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &ExecEngine{Command: script(t, tc.body), Timeout: 300 * time.Millisecond}
			start := time.Now()
			_, err := e.Run(context.Background(), 0, w)
			if !errors.Is(err, ErrEngine) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want ErrEngine mentioning %q", err, tc.want)
			}
			if time.Since(start) > 4*time.Second {
				t.Errorf("Run took %v", time.Since(start))
			}
		})
	}
}

// TestSearchWithCrashingEngine: failed experiments are retried once,
// logged and never stop the search.
func TestSearchWithCrashingEngine(t *testing.T) {
	// Fails for every workload with a loopback traffic (the MFS probes the
	// direction of the bidirectional anomaly), works otherwise.
	eng := script(t, `in=$(cat)
case "$in" in
*'"direction":"loopback"'*) exit 1 ;;
*'"direction":"bi"'*) echo '{"tx_gbps":50,"rx_gbps":50,"tx_mpps":1,"rx_mpps":1,"pause_duration_ratio":0.2,"diag":{"x":2}}' ;;
*) echo '{"tx_gbps":95,"rx_gbps":95,"tx_mpps":9,"rx_mpps":9,"pause_duration_ratio":0,"diag":{"x":1}}' ;;
esac
`)
	sp, err := ParseSpace([]byte("max_traffics: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	var failed, retried int
	res, err := Search(context.Background(), Options{Space: sp, Engine: &ExecEngine{Command: eng}, Budget: 40, Seed: 5,
		Monitor: Monitor{LineGbps: 100, LineMpps: 10},
		LogPath: filepath.Join(t.TempDir(), "experiments.jsonl"),
		OnExperiment: func(r Record) {
			if r.Error != "" {
				failed++
				if r.Attempts == 2 {
					retried++
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if failed == 0 || failed != retried || res.Failed != failed {
		t.Errorf("failed %d, retried %d, Result.Failed %d; want equal and > 0", failed, retried, res.Failed)
	}
	if res.Experiments != 40 {
		t.Errorf("Experiments = %d, want 40", res.Experiments)
	}
	found := false
	for _, a := range res.Anomalies {
		if a.Symptom == SymptomPause && a.MFS.Match(Workload{Traffics: []Traffic{tr(Bi, "RC", "WRITE", 4096)}}) {
			found = true
		}
	}
	if !found {
		t.Errorf("anomalies %+v: want a pause anomaly whose MFS covers bidirectional traffic", res.Anomalies)
	}
}
