package agent

import (
	"bytes"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
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

// TestReadToken: token files hold at least 16 characters (surrounding
// white space trimmed); anything else is a clear error naming the file.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty": "", "blank": " \n\t\n", "short": "abcde\n", "fifteen": "0123456789abcde",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		tok, err := ReadToken(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "at least 16 characters") {
			t.Errorf("ReadToken(%s) = %q, %v; want an error naming the file and the rule", name, tok, err)
		}
	}
	if _, err := ReadToken(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("ReadToken(missing) = %v", err)
	}
	path := filepath.Join(dir, "good")
	if err := os.WriteFile(path, []byte("  0123456789abcdef \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := ReadToken(path); err != nil || tok != "0123456789abcdef" {
		t.Errorf("ReadToken(good) = %q, %v", tok, err)
	}
}

// TestEnsureCertKeepsFiles: EnsureCert generates a pair only when both
// files are absent; a corrupt, unreadable or half pair is an error and is
// left as it is.
func TestEnsureCertKeepsFiles(t *testing.T) {
	good := t.TempDir()
	c1, err := EnsureCert(good)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := EnsureCert(good)
	if err != nil || !bytes.Equal(c1.Certificate[0], c2.Certificate[0]) {
		t.Fatalf("EnsureCert of an existing pair: %v, same certificate %v", err, err == nil && bytes.Equal(c1.Certificate[0], c2.Certificate[0]))
	}
	goodCert, _ := os.ReadFile(filepath.Join(good, "cert.pem"))
	goodKey, _ := os.ReadFile(filepath.Join(good, "key.pem"))
	otherDir := t.TempDir()
	if _, err := EnsureCert(otherDir); err != nil {
		t.Fatal(err)
	}
	otherKey, _ := os.ReadFile(filepath.Join(otherDir, "key.pem"))
	for name, files := range map[string]map[string][]byte{
		"corrupt cert":    {"cert.pem": []byte("garbage"), "key.pem": goodKey},
		"corrupt key":     {"cert.pem": goodCert, "key.pem": []byte("garbage")},
		"mismatched pair": {"cert.pem": goodCert, "key.pem": otherKey},
		"empty pair":      {"cert.pem": nil, "key.pem": nil},
		"only cert":       {"cert.pem": goodCert},
		"only key":        {"key.pem": goodKey},
		"cert is a dir":   {"key.pem": goodKey},
	} {
		dir := t.TempDir()
		for f, b := range files {
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if name == "cert is a dir" {
			if err := os.Mkdir(filepath.Join(dir, "cert.pem"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		_, err := EnsureCert(dir)
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("EnsureCert with %s = %v; want an error naming the files", name, err)
		}
		for f, b := range files {
			if got, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("EnsureCert with %s changed %s: %v", name, f, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "cert.pem")); name == "only key" && err == nil {
			t.Errorf("EnsureCert with %s wrote cert.pem", name)
		}
		if _, err := os.Stat(filepath.Join(dir, "key.pem")); name == "only cert" && err == nil {
			t.Errorf("EnsureCert with %s wrote key.pem", name)
		}
	}
}
