package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/trace"
)

// Regression tests for issue #17 (hardening).

// runCLICtx is runCLI under ctx; a panic is reported as exit -1 with the
// panic in stderr, so a crash fails one test instead of the binary.
func runCLICtx(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			code, stdout, stderr = -1, out.String(), errb.String()+fmt.Sprintf("PANIC: %v", p)
		}
	}()
	code = exitCode(run(ctx, args, &out, &errb), &errb)
	return code, out.String(), errb.String()
}

func quickstart(t *testing.T) string {
	t.Helper()
	test := filepath.Join("..", "..", "examples", "quickstart.yaml")
	if _, err := os.Stat(test); err != nil {
		t.Skipf("example test missing: %v", err)
	}
	return test
}

// Point 3: every token file (injector, agent, run --agent-token-file)
// needs a token of at least 16 characters.
func TestTokenFileRule(t *testing.T) {
	tmp := t.TempDir()
	write(t, tmp, "empty", nil)
	write(t, tmp, "short", []byte("abcde\n"))
	tls := filepath.Join(tmp, "tls")
	for _, tok := range []string{"empty", "short"} {
		file := filepath.Join(tmp, tok)
		for _, args := range [][]string{
			{"injector", "--port", "1=nonexistent0", "--listen", "unix://" + filepath.Join(tmp, "inj.sock"), "--token-file", file, "--tls-dir", tls},
			{"agent", "--listen", "unix://" + filepath.Join(tmp, "agent.sock"), "--token-file", file, "--tls-dir", tls},
			{"run", "-q", "--testbed", "sim", "-o", filepath.Join(tmp, "out"), "--agent-token-file", file, quickstart(t)},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			code, _, stderr := runCLICtx(ctx, args...)
			cancel()
			if code != 1 || !strings.Contains(stderr, "at least 16 characters") || !strings.Contains(stderr, file) {
				t.Errorf("lumina %s with a %s token file: exit %d, stderr %q; want exit 1 and the 16-character rule naming the file",
					args[0], tok, code, stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "out")); err == nil {
		t.Errorf("lumina run with a bad token file ran the test")
	}
}

// Point 8: a suite.json with null entries is an invalid file, not a panic.
func TestDiffNullEntries(t *testing.T) {
	good := `{"name":"t","testbed":"sim","repeats":1,"valid":1,"runs":[{"repeat":0,"dir":"t/0","valid":true}],` +
		`"checks":{"integrity":{"pass":1}},"violations":{},"counters":{},"quantities":{}}`
	for name, tests := range map[string]string{
		"null-test":       `[null]`,
		"null-after-good": `[` + good + `,null]`,
		"null-run":        `[{"name":"t","testbed":"sim","repeats":1,"valid":1,"runs":[null],"checks":{"integrity":{"pass":1}}}]`,
		"null-check":      `[{"name":"t","testbed":"sim","repeats":1,"valid":1,"runs":[{"repeat":0,"dir":"t/0","valid":true}],"checks":{"integrity":null}}]`,
		"null-quantity":   `[{"name":"t","testbed":"sim","repeats":1,"valid":1,"runs":[{"repeat":0,"dir":"t/0","valid":true}],"checks":{"integrity":{"pass":1}},"quantities":{"goodput":null}}]`,
		"null-violation":  `[{"name":"t","testbed":"sim","repeats":1,"valid":1,"runs":[{"repeat":0,"dir":"t/0","valid":true}],"checks":{"integrity":{"pass":1}},"violations":{"requester/x":null}}]`,
		"null-counter":    `[{"name":"t","testbed":"sim","repeats":1,"valid":1,"runs":[{"repeat":0,"dir":"t/0","valid":true}],"checks":{"integrity":{"pass":1}},"counters":{"requester/x":null}}]`,
	} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			write(t, tmp, "good.json", []byte(`{"schema":"lumina.suite/v1","tests":[`+good+`]}`))
			write(t, tmp, "suite.json", []byte(`{"schema":"lumina.suite/v1","tests":`+tests+`}`))
			bad, ok := filepath.Join(tmp, "suite.json"), filepath.Join(tmp, "good.json")
			for _, args := range [][]string{{"diff", bad, ok}, {"diff", ok, bad}, {"diff", tmp, ok}} {
				code, stdout, stderr := runCLICtx(context.Background(), args...)
				if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "null") || stdout != "" {
					t.Errorf("lumina %s: exit %d, stdout %q, stderr %q; want exit 1 and an error naming %s", strings.Join(args, " "), code, stdout, stderr, bad)
				}
			}
		})
	}
}

// Point 8: lumina analyze refuses traces that are not Ethernet, as decode
// does.
func TestAnalyzeLinkType(t *testing.T) {
	tmp := t.TempDir()
	src, err := os.Open(filepath.Join("..", "..", "examples", "traces", "write-drop.pcap"))
	if err != nil {
		t.Skip(err)
	}
	defer src.Close()
	r, err := trace.NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, 0, trace.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := r.Next()
		if err != nil {
			break
		}
		if err := w.WritePacket(p.TimeNs, p.Data, p.OrigLen); err != nil {
			t.Fatal(err)
		}
	}
	write(t, tmp, "raw.pcap", buf.Bytes())
	path := filepath.Join(tmp, "raw.pcap")
	dcode, _, dstderr := runCLICtx(context.Background(), "decode", path)
	if dcode != 1 || !strings.Contains(dstderr, "link type RAW not supported (Ethernet only)") {
		t.Fatalf("lumina decode of a RAW trace: exit %d, %q", dcode, dstderr)
	}
	for _, args := range [][]string{{"analyze", path}, {"analyze", "--format", "json", path}} {
		code, stdout, stderr := runCLICtx(context.Background(), args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, path) || !strings.Contains(stderr, "link type RAW not supported (Ethernet only)") {
			t.Errorf("lumina %s: exit %d, stdout %.60q, stderr %q; want exit 1 and decode's link-type error", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// Point 8: negative --retries is a usage error, not a panic.
func TestRunNegativeRetries(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLICtx(context.Background(), "run", "-q", "--testbed", "sim", "--retries", "-1", "-o", out, quickstart(t))
	if code != 2 || !strings.Contains(stderr, "--retries") || stdout != "" {
		t.Errorf("lumina run --retries -1: exit %d, stdout %q, stderr %q; want exit 2 (usage)", code, stdout, stderr)
	}
}

// Point 8 and 14: the status line of a repeat without a report or of an
// invalid repeat never panics and never says "all checks pass".
func TestRepeatStatus(t *testing.T) {
	valid := &orchestrator.Report{Repeat: 3, Valid: true, Analysis: nil,
		Checks: map[string]orchestrator.CheckEntry{"integrity": {Verdict: "pass"}, "gbn": {Verdict: "pass"}, "timeout": {Verdict: "inconclusive"}}}
	for _, tc := range []struct {
		rr   orchestrator.RepeatResult
		want string
	}{
		{orchestrator.RepeatResult{Dir: "D"}, "t repeat 2: INVALID (not analyzed: no report) → D"},
		{orchestrator.RepeatResult{Dir: "D", Run: &orchestrator.Run{Repeat: 5}}, "t repeat 5: INVALID (not analyzed: no report) → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: &orchestrator.Report{Repeat: 1, Error: "generator: connection refused\nsecond line",
			Checks: map[string]orchestrator.CheckEntry{}}}, "t repeat 1: INVALID (not analyzed: generator: connection refused) → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: &orchestrator.Report{Repeat: 1, Error: "context canceled",
			Checks: map[string]orchestrator.CheckEntry{}}}, "t repeat 1: INVALID (not analyzed: interrupted) → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: &orchestrator.Report{Repeat: 0,
			Integrity: orchestrator.IntegrityReport{Verdict: "fail", Reason: "dumper-1 lost 3 packets"},
			Checks:    map[string]orchestrator.CheckEntry{"integrity": {Verdict: "fail", Detail: "dumper-1 lost 3 packets"}}}},
			"t repeat 0: INVALID (not analyzed: integrity check failed: dumper-1 lost 3 packets) → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: &orchestrator.Report{Repeat: 0, Integrity: orchestrator.IntegrityReport{Verdict: "pass"},
			Checks: map[string]orchestrator.CheckEntry{"integrity": {Verdict: "pass"}, "switch_state": {Verdict: "fail", Detail: "2 event_drops on port 1, the plan has 1"}}}},
			"t repeat 0: INVALID (not analyzed: switch state is not what the test asked for: 2 event_drops on port 1, the plan has 1) → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: valid}, "t repeat 3: valid, all checks pass (inconclusive: timeout) → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: &orchestrator.Report{Repeat: 3, Valid: true,
			Checks: map[string]orchestrator.CheckEntry{"integrity": {Verdict: "pass"}, "gbn": {Verdict: "fail"}, "cnp": {Verdict: "fail"}}}},
			"t repeat 3: valid, FAILED: cnp, gbn → D"},
		{orchestrator.RepeatResult{Dir: "D", Report: &orchestrator.Report{Repeat: 3, Valid: true,
			Checks: map[string]orchestrator.CheckEntry{"integrity": {Verdict: "pass"}, "analyzers": {Verdict: "fail", Detail: "bad metadata\nmore"}}}},
			"t repeat 3: valid, FAILED: analyzers (not analyzed: bad metadata) → D"},
	} {
		if got := repeatStatus("t", 2, tc.rr); got != tc.want {
			t.Errorf("repeatStatus = %q\n                  want %q", got, tc.want)
		}
	}
}

// Point 14: a run that fails before traffic (missing remote flags) says
// why it is invalid.
func TestRunInvalidSaysWhy(t *testing.T) {
	out := t.TempDir()
	remote := filepath.Join("..", "..", "examples", "remote", "listing2.yaml")
	code, stdout, stderr := runCLICtx(context.Background(), "run", "-q", "-o", out, remote)
	if code != 1 || strings.Contains(stdout, "all checks pass") ||
		!strings.Contains(stdout, "repeat 0: INVALID (not analyzed: ") || !strings.Contains(stdout, "--agent-token-file") {
		t.Errorf("lumina run remote (no flags): exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// Point 7: run refuses, before running anything, what validate refuses
// with the same flags: --testbed remote on a file without control-ips.
func TestRunRefusesWhatValidateRefuses(t *testing.T) {
	code, stdout, stderr := runCLICtx(context.Background(), "run", "-q", "--testbed", "remote", "-o", t.TempDir(), quickstart(t))
	vcode, vout, _ := runCLICtx(context.Background(), "validate", "--testbed", "remote", quickstart(t))
	want := "quickstart.yaml:8:1: --testbed remote: requester has no control-ip"
	if code != 2 || stdout != "" || !strings.Contains(stderr, want) || !strings.Contains(stderr, "nothing was run") ||
		vcode != 1 || !strings.Contains(vout, want) {
		t.Errorf("run --testbed remote: exit %d, stdout %q, stderr %q; validate: exit %d, %q", code, stdout, stderr, vcode, vout)
	}
}

// Point 14: Ctrl-C exits 130 with one "lumina: interrupted" line; the
// partial results are kept, marked invalid.
func TestRunInterrupted(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, stdout, stderr := runCLICtx(ctx, "run", "-q", "--testbed", "sim", "-o", out, quickstart(t))
	if code != 130 || stderr != "lumina: interrupted\n" {
		t.Errorf("interrupted lumina run: exit %d, stderr %q; want 130 and one \"lumina: interrupted\" line", code, stderr)
	}
	if strings.Contains(stdout, "all checks pass") || !strings.Contains(stdout, "INVALID (not analyzed: interrupted)") {
		t.Errorf("interrupted lumina run: stdout %q; want the repeat INVALID (not analyzed: interrupted)", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "quickstart", "0", "report.json"))
	if err != nil || !bytes.Contains(b, []byte(`"valid": false`)) {
		t.Errorf("interrupted run's report.json: %v, %.200s; want kept and invalid", err, b)
	}
}

// Point 10: --listen unix://PATH removes only a stale socket.
func TestListenUnixKeepsFiles(t *testing.T) {
	tmp := t.TempDir()
	write(t, tmp, "token", []byte("0123456789abcdef0123\n"))
	tls := filepath.Join(tmp, "tls")
	regular := filepath.Join(tmp, "precious.txt")
	write(t, tmp, "precious.txt", []byte("keep me"))
	// A live socket: someone listens on it.
	live := filepath.Join(tmp, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	// A stale socket: nobody listens on it any more.
	stale := filepath.Join(tmp, "stale.sock")
	sl, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	sl.SetUnlinkOnClose(false)
	sl.Close()

	agentArgs := func(path string) []string {
		return []string{"agent", "--listen", "unix://" + path, "--token-file", filepath.Join(tmp, "token"), "--tls-dir", tls}
	}
	injectorArgs := func(path string) []string {
		return []string{"injector", "--port", "1=lo", "--listen", "unix://" + path}
	}
	for _, mk := range []func(string) []string{agentArgs, injectorArgs} {
		for _, path := range []string{regular, live, tmp} {
			args := mk(path)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			code, _, stderr := runCLICtx(ctx, args...)
			cancel()
			if strings.Contains(stderr, "lo: ") && strings.Contains(stderr, "operation not permitted") {
				t.Logf("lumina %s: no AF_PACKET here: %s", args[0], stderr)
				continue
			}
			if code != 1 || !strings.Contains(stderr, path) {
				t.Errorf("lumina %s --listen unix://%s: exit %d, stderr %q; want exit 1 naming the path", args[0], path, code, stderr)
			}
			if _, err := os.Lstat(path); err != nil {
				t.Errorf("lumina %s --listen unix://%s removed it: %v", args[0], path, err)
			}
		}
		if b, _ := os.ReadFile(regular); string(b) != "keep me" {
			t.Errorf("%s now holds %q", regular, b)
		}
	}
	// The stale socket is replaced and served on until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	code, _, stderr := runCLICtx(ctx, agentArgs(stale)...)
	cancel()
	if code != 0 || !strings.Contains(stderr, "agent serving on "+stale) {
		t.Errorf("lumina agent --listen on a stale socket: exit %d, stderr %q; want it served", code, stderr)
	}
}
