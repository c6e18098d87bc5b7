package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// personalityFiles writes the test files of issue #35 point 5 into tmp: a
// test naming a missing personality file, one whose personality file has
// a duration with a space ("12 us"), one with a typo key.
func personalityFiles(t *testing.T, tmp string) {
	test := func(name, pers string) {
		write(t, tmp, name+".yaml", []byte("name: "+name+"\nresult-path: "+filepath.Join(tmp, "res-"+name)+
			"\nrequester:\n  nic:\n    personality: "+pers+"\ntraffic: {num-msgs-per-qp: 1, message-size: 4096}\n"))
	}
	test("missing", "fw-none.yaml")
	test("duration", "fw-duration.yaml")
	test("typo", "fw-typo.yaml")
	write(t, tmp, "fw-duration.yaml", []byte("base: cx5\nname: cx5-fw2\nnak-reaction-delay: 12 us\n"))
	write(t, tmp, "fw-typo.yaml", []byte("base: cx5\nname: cx5-fw2\nnak-reaction-dealy: 12us\n"))
}

// Issue #35, point 5: lumina validate checks the personality files a test
// names (it said ok, and the run was INVALID), each error as
// FILE:LINE:COL: message in the personality file, with did-you-mean.
func TestValidatePersonalityGolden(t *testing.T) {
	runGolden(t, []cliCase{
		{name: "validate-personality-missing", args: []string{"validate", "$TMP/missing.yaml"}, setup: personalityFiles},
		{name: "validate-personality-duration", args: []string{"validate", "$TMP/duration.yaml"}, setup: personalityFiles},
		{name: "validate-personality-typo", args: []string{"validate", "$TMP/typo.yaml"}, setup: personalityFiles},
	})
}

// Issue #35, point 5: lumina run refuses the same tests before anything
// runs: exit 2, the errors, and no results directory (it ran an INVALID
// repeat, exit 1, and left one).
func TestRunInvalidPersonality(t *testing.T) {
	const units = "want a duration: a number and a unit (ns, us, µs, ms, s, m, h) with no space between, such as 1.1us, 150us or 0.2s"
	for _, tc := range []struct {
		name, want string
	}{
		{"missing", "$TMP/missing.yaml:5:18: personality: personality file $TMP/fw-none.yaml does not exist (a relative path is relative to the test file's directory)\n"},
		{"duration", "$TMP/duration.yaml:5:18: personality: personality file $TMP/fw-duration.yaml is invalid (1 error below)\n" +
			`$TMP/fw-duration.yaml:3:21: nak-reaction-delay: ` + units + `; got "12 us"; did you mean "12us"?` + "\n"},
		{"typo", "$TMP/typo.yaml:5:18: personality: personality file $TMP/fw-typo.yaml is invalid (1 error below)\n" +
			`$TMP/fw-typo.yaml:3:1: unknown key "nak-reaction-dealy" at top level; did you mean "nak-reaction-delay"?` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			personalityFiles(t, tmp)
			for _, args := range [][]string{
				{"run", "-q", filepath.Join(tmp, tc.name+".yaml")},
				{"run", "-q", "-o", filepath.Join(tmp, "out"), filepath.Join(tmp, tc.name+".yaml")},
			} {
				code, stdout, stderr := runCLI(args...)
				stderr = strings.ReplaceAll(stderr, tmp, "$TMP")
				want := tc.want + "lumina: run: invalid test files; nothing was run\n"
				if code != 2 || stdout != "" || stderr != want {
					t.Errorf("lumina %s = exit %d, stdout %q, stderr\n%s\nwant exit 2, no stdout, stderr\n%s", strings.Join(args, " "), code, stdout, stderr, want)
				}
				for _, dir := range []string{"res-" + tc.name, "out"} {
					if _, err := os.Stat(filepath.Join(tmp, dir)); !os.IsNotExist(err) {
						t.Errorf("lumina %s left %s (stat: %v), want no results directory", strings.Join(args, " "), dir, err)
					}
				}
			}
		})
	}
}

// TestPersonalityDocExample runs the example of docs/personality.md and
// checks the numbers the page quotes (sim is deterministic for a seed).
func TestPersonalityDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/personality.md")
	if err != nil {
		t.Fatal(err)
	}
	test := "../../examples/personality/fast-retransmission-fw2.yaml"
	if code, stdout, stderr := runCLI("validate", test); code != 0 || !strings.Contains(string(doc), strings.TrimPrefix(stdout, "../../")) {
		t.Errorf("lumina validate %s = exit %d, %q %q; want exit 0 and the page's line", test, code, stdout, stderr)
	}
	out := t.TempDir()
	if code, _, stderr := runCLI("run", "-q", "-o", out, test); code != 0 {
		t.Fatalf("lumina run %s = exit %d, %s", test, code, stderr)
	}
	code, stdout, stderr := runCLI("analyze", filepath.Join(out, "fast-retransmission-fw2", "0"))
	if code != 0 {
		t.Fatalf("lumina analyze = exit %d, %s", code, stderr)
	}
	n := 0
	for _, l := range strings.Split(stdout, "\n") {
		if !strings.Contains(l, "rel ") {
			continue
		}
		n++
		if !strings.Contains(string(doc), l+"\n") {
			t.Errorf("lumina analyze printed %q, which docs/personality.md does not quote", l)
		}
	}
	if n != 4 {
		t.Errorf("lumina analyze printed %d losses, want the page's 4:\n%s", n, stdout)
	}
}
