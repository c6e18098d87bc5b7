package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/examples"
)

// TestInit: lumina init writes the starter test, which validates and
// runs on sim with every check passing; lumina init EXAMPLE writes the
// example's bytes, which validate too; an existing file is never
// overwritten; -o - prints the test.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, stderr := runCLI("init")
	if code != 0 || out != "" || stderr != "lumina: wrote test.yaml; check it with 'lumina validate test.yaml', run it with 'lumina run test.yaml'\n" {
		t.Fatalf("lumina init: exit %d, %q %q", code, out, stderr)
	}
	got, err := os.ReadFile("test.yaml")
	if err != nil || !bytes.Equal(got, starterTest) {
		t.Fatalf("test.yaml: %v, same as the starter: %v", err, bytes.Equal(got, starterTest))
	}
	if !bytes.HasPrefix(got, []byte("# ")) || bytes.Count(got, []byte("#")) < 20 {
		t.Errorf("the starter test is not commented:\n%s", got)
	}
	if code, out, _ := runCLI("validate", "test.yaml"); code != 0 || out != "test.yaml: ok\n" {
		t.Errorf("lumina validate test.yaml: exit %d, %q", code, out)
	}
	tst, err := config.Load("test.yaml")
	if err != nil || tst.Name != "test" || tst.Testbed != config.TestbedSim || len(tst.Traffic.Events) != 1 {
		t.Fatalf("config.Load(test.yaml) = %+v, %v; want test named test on sim with one event", tst, err)
	}
	code, out, stderr = runCLI("run", "-q", "-o", "out", "test.yaml")
	if code != 0 || out != "test repeat 0: valid, all checks pass → out/test/0\n" {
		t.Errorf("lumina run test.yaml: exit %d, %q %q", code, out, stderr)
	}

	// Never overwritten: exit 1, the file as it was.
	if err := os.WriteFile("test.yaml", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("init")
	if b, _ := os.ReadFile("test.yaml"); code != 1 || string(b) != "mine\n" ||
		stderr != "lumina: init: test.yaml exists; not overwriting it (-o FILE writes elsewhere)\n" {
		t.Errorf("lumina init over test.yaml: exit %d, %q, file %q; want 1, the file kept", code, stderr, b)
	}
	// Nor through a dangling symbolic link.
	if err := os.Symlink(filepath.Join(dir, "elsewhere.yaml"), "link.yaml"); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI("init", "-o", "link.yaml"); code != 1 {
		t.Errorf("lumina init -o link.yaml (dangling link): exit %d, want 1", code)
	}
	if _, err := os.Stat("elsewhere.yaml"); err == nil {
		t.Errorf("lumina init -o link.yaml wrote through the link")
	}

	// Every example: its bytes, valid.
	for _, name := range exampleNames() {
		want, err := examples.FS.ReadFile(name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runCLI("init", "-o", "-", name)
		if code != 0 || out != string(want) || stderr != "" {
			t.Errorf("lumina init -o - %s: exit %d, the example's bytes: %v, %q", name, code, out == string(want), stderr)
		}
		code, _, stderr = runCLI("init", name+".yaml") // as examples/NAME.yaml is named too
		if code != 0 {
			t.Errorf("lumina init %s.yaml: exit %d, %s", name, code, stderr)
		}
		if code, out, _ := runCLI("validate", name+".yaml"); code != 0 {
			t.Errorf("lumina validate %s.yaml (from lumina init): exit %d\n%s", name, code, out)
		}
	}
	if n := len(exampleNames()); n < 20 {
		t.Errorf("%d examples embedded, want the 20 or more of examples/*.yaml", n)
	}
	code, _, stderr = runCLI("init", "nope")
	if code != 2 || !strings.Contains(stderr, `no example "nope"; want one of: bidirectional, `) {
		t.Errorf("lumina init nope: exit %d, %q", code, stderr)
	}
}
