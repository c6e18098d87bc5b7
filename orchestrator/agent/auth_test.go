package agent

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// TestEnsureCertAtomic polls for an agent's certificate while the agent
// generates it, as an orchestrator pinning it does: whenever cert.pem
// exists, it holds a whole certificate.
func TestEnsureCertAtomic(t *testing.T) {
	base := t.TempDir()
	for i := range 100 {
		dir := filepath.Join(base, "tls", string(rune('a'+i%26))+string(rune('a'+i/26)))
		done := make(chan error, 1)
		go func() { _, err := EnsureCert(dir); done <- err }()
		for finished := false; !finished; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				finished = true
			default:
			}
			b, err := ReadCert(dir)
			if err != nil {
				continue
			}
			if blk, _ := pem.Decode(b); blk == nil || blk.Type != "CERTIFICATE" {
				t.Fatalf("cert.pem read while it was written holds %q", b)
			}
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 2 {
			t.Errorf("%s holds %d files, want cert.pem and key.pem", dir, len(ents))
		}
	}
}
