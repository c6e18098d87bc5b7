package suite

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/config"
)

var update = flag.Bool("update", false, "rewrite the derived example suites (examples/regression/cx4, cx6) and golden files")

const examplesDir = "../examples/regression"

// derivedPersonalities are the example suites generated from the cx5 one.
var derivedPersonalities = []string{"cx4", "cx6"}

func derivedHeader(src, p string) string {
	return fmt.Sprintf("# Generated from ../cx5/%s with personality %s by\n"+
		"# `go test ./suite -run TestRegressionExamples -update`. Do not edit.\n", src, p)
}

// TestRegressionExamples checks that examples/regression/cx4 and cx6 are
// examples/regression/cx5 with the personality replaced (-update rewrites
// them), and that every file is a valid test for its personality.
func TestRegressionExamples(t *testing.T) {
	srcs, err := filepath.Glob(filepath.Join(examplesDir, "cx5", "*.yaml"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no example suite in %s/cx5: %v", examplesDir, err)
	}
	for _, p := range derivedPersonalities {
		dir := filepath.Join(examplesDir, p)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		have, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, h := range have {
			if _, err := os.Stat(filepath.Join(examplesDir, "cx5", filepath.Base(h))); err != nil {
				if *update {
					os.Remove(h)
					continue
				}
				t.Errorf("%s has no source in cx5 (run with -update)", h)
			}
		}
		for _, src := range srcs {
			base := filepath.Base(src)
			t.Run(p+"/"+base, func(t *testing.T) {
				data, err := os.ReadFile(src)
				if err != nil {
					t.Fatal(err)
				}
				body, err := SetPersonality(data, p)
				if err != nil {
					t.Fatal(err)
				}
				want := append([]byte(derivedHeader(base, p)), body...)
				dst := filepath.Join(dir, base)
				if *update {
					if err := os.WriteFile(dst, want, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				got, err := os.ReadFile(dst)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s is not %s with personality %s (run with -update)", dst, src, p)
				}
				for _, f := range []struct{ path, p string }{{src, "cx5"}, {dst, p}} {
					tc, err := config.Load(f.path)
					if err != nil {
						t.Fatalf("config.Load(%s) = %v", f.path, err)
					}
					if got := [2]string{tc.Requester.NIC.Personality, tc.Responder.NIC.Personality}; got != [2]string{f.p, f.p} {
						t.Errorf("config.Load(%s) personalities = %v, want %s", f.path, got, f.p)
					}
				}
			})
		}
	}
}

func TestSetPersonality(t *testing.T) {
	tests := []struct {
		name, in, p, want string
		err               bool
	}{
		{name: "flow", p: "cx4",
			in:   "# cx5 stays in comments\nrequester:\n  nic: {personality: cx5, ip-list: [10.0.0.1/24]}\nresponder:\n  nic: {personality: cx5}\n",
			want: "# cx5 stays in comments\nrequester:\n  nic: {personality: cx4, ip-list: [10.0.0.1/24]}\nresponder:\n  nic: {personality: cx4}\n"},
		{name: "block", p: "cx6",
			in:   "requester:\n  nic:\n    personality: spec   # ideal\nresponder:\n  nic:\n    personality: cx5\n",
			want: "requester:\n  nic:\n    personality: cx6   # ideal\nresponder:\n  nic:\n    personality: cx6\n"},
		{name: "file personality", p: "my.yaml",
			in:   "requester: {nic: {personality: a.yaml}}\nresponder: {nic: {personality: b.yaml}}\n",
			want: "requester: {nic: {personality: my.yaml}}\nresponder: {nic: {personality: my.yaml}}\n"},
		{name: "missing responder", p: "cx4", in: "requester: {nic: {personality: cx5}}\n", err: true},
		{name: "quoted", p: "cx4", in: "requester: {nic: {personality: \"cx5\"}}\nresponder: {nic: {personality: cx5}}\n", err: true},
		{name: "not a mapping", p: "cx4", in: "- a\n", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetPersonality([]byte(tc.in), tc.p)
			if tc.err {
				if err == nil {
					t.Errorf("SetPersonality(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("SetPersonality(%q, %s) = %q, %v, want %q", tc.in, tc.p, got, err, tc.want)
			}
		})
	}
}
