package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #35, point 5: with LoadOptions.Personalities, the personality
// files a test names are checked as the run will load them, every error at
// FILE:LINE:COL (in the test file for a file that cannot be read, in the
// personality file for what is wrong inside it), with did-you-mean.
func TestLoadPersonalityFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("fw/ok.yaml", "base: cx5\nname: cx5-fw2\nnak-reaction-delay: 20us\n")
	write("fw/dur.yaml", "base: cx5\nnak-reaction-delay: 12 us\n")
	write("fw/typo.yaml", "base: cx5\nnak-reaction-dealy: 12us\nadaptive:\n  - {t-tr-factors: [1], max-retrys: 2}\n")
	write("fw/empty.yaml", "# spec\n")
	write("fw/two.yaml", "base: cx5\n---\nbase: cx4\n")
	test := func(req, rsp string) string {
		return "requester:\n  nic:\n    personality: " + req + "\nresponder:\n  nic: {personality: " + rsp + "}\n"
	}
	for _, tc := range []struct {
		name, test string
		want       string // "" valid
	}{
		{"ok", test("fw/ok.yaml", "cx4"), ""},
		{"empty file is spec", test("fw/empty.yaml", "spec"), ""},
		{"missing", test("fw/none.yaml", "cx5"),
			"DIR/t.yaml:3:18: personality: personality file DIR/fw/none.yaml does not exist (a relative path is relative to the test file's directory)"},
		{"duration", test("fw/dur.yaml", "cx5"),
			"DIR/t.yaml:3:18: personality: personality file DIR/fw/dur.yaml is invalid (1 error below)\n" +
				`DIR/fw/dur.yaml:2:21: nak-reaction-delay: want a duration: a number and a unit (ns, us, µs, ms, s, m, h) with no space between, such as 1.1us, 150us or 0.2s; got "12 us"; did you mean "12us"?`},
		{"typo, both hosts, errors once", test("fw/typo.yaml", "fw/typo.yaml"),
			"DIR/t.yaml:3:18: personality: personality file DIR/fw/typo.yaml is invalid (2 errors below)\n" +
				"DIR/t.yaml:5:22: personality: personality file DIR/fw/typo.yaml is invalid (2 errors below)\n" +
				`DIR/fw/typo.yaml:2:1: unknown key "nak-reaction-dealy" at top level; did you mean "nak-reaction-delay"?` + "\n" +
				`DIR/fw/typo.yaml:4:25: unknown key "max-retrys" in adaptive[0]; did you mean "max-retries"?`},
		{"two documents", test("cx5", "fw/two.yaml"),
			"DIR/t.yaml:5:22: personality: personality file DIR/fw/two.yaml is invalid (1 error below)\n" +
				"DIR/fw/two.yaml:3:1: more than one YAML document: a personality file holds exactly one"},
		{"a directory", test("cx5", "fw.yaml"),
			"DIR/t.yaml:5:22: personality: cannot read personality file DIR/fw.yaml: is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "a directory" {
				if err := os.MkdirAll(filepath.Join(dir, "fw.yaml"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := write("t.yaml", tc.test)
			_, err := LoadWith(path, LoadOptions{Personalities: true})
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir, "DIR")
			}
			if got != tc.want {
				t.Errorf("LoadWith(%q, Personalities) error =\n%s\nwant\n%s", tc.test, got, tc.want)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("LoadWith error %v is not ErrInvalid", err)
			}
			// Without the option (analyze reading a run directory's
			// config.yaml, whose personality files stay by the test), the
			// files are not read.
			if _, err := LoadWith(path, LoadOptions{}); err != nil {
				t.Errorf("LoadWith(%q) = %v, want no error", tc.test, err)
			}
		})
	}
}
