package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testlab"
)

// TestRemoteTestbed drives agents on "machines" (internal/testlab's
// namespaces) exactly as it would real hosts — TLS with pinned
// certificates, a token, TCP — through `lumina run --agent-token-file
// --agent-certs`. A wrong token and an untrusted certificate are refused:
// exit 1 with the reason, partial results kept and marked invalid.
func TestRemoteTestbed(t *testing.T) {
	lab := testlab.NewRemote(t, luminaBin)
	remote := func(token, certs string) []string {
		return []string{"--agent-token-file", token, "--agent-certs", certs, "--rnic", "softrnic", lab.Config}
	}
	_, dir := runRealTime(t, t.TempDir(), "remote-listing2", remote(lab.TokenFile, lab.CertDir)...)
	rep := readReport(t, dir)
	applied := 0
	for _, e := range rep.Events {
		if e.Applied {
			applied++
		}
	}
	if rep.Testbed != "remote" || !rep.Valid || applied != 30 || len(rep.Events) != 30 || rep.Integrity.Verdict != "pass" {
		t.Errorf("report: testbed %s, valid %v, %d of %d events applied, integrity %+v", rep.Testbed, rep.Valid, applied, len(rep.Events), rep.Integrity)
	}

	refused := func(t *testing.T, token, certs, reason string) {
		t.Helper()
		out := t.TempDir()
		r := luminaExit(t, 1, append([]string{"run", "-q", "-o", out, "--retries", "0"}, remote(token, certs)...)...)
		if !strings.Contains(r.stderr, reason) {
			t.Errorf("stderr %q, want %q in it", r.stderr, reason)
		}
		rep := readReport(t, filepath.Join(out, "remote-listing2", "0"))
		if rep.Valid || rep.Error == "" {
			t.Errorf("partial results: valid %v, error %q; want invalid with the reason", rep.Valid, rep.Error)
		}
	}
	t.Run("wrong-token", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(bad, []byte("not-the-token-at-all-000"), 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, bad, lab.CertDir, "refused our token")
	})
	t.Run("untrusted-certificate", func(t *testing.T) {
		// Every machine's pinned certificate is the responder's.
		untrusted := t.TempDir()
		other, err := os.ReadFile(filepath.Join(lab.CertDir, lab.IPs["rsp"]+".pem"))
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range lab.IPs {
			if err := os.WriteFile(filepath.Join(untrusted, ip+".pem"), other, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		refused(t, lab.TokenFile, untrusted, "requester agent")
	})
}
