package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
)

var update = flag.Bool("update", false, "rewrite testdata/sim-traces.sha256 from fresh runs")

const tracesFile = "testdata/sim-traces.sha256"

// TestSimTraces runs every example on sim with its own seed (examples/*.yaml
// and those of simTraceFolders) and compares the sha256 of its trace.pcap
// with testdata/sim-traces.sha256 (made from the traces of the binary
// before the run-driver refactor): the sim testbed's traces do not change
// by accident. -update rewrites the file.
func TestSimTraces(t *testing.T) {
	got := map[string]string{}
	for _, f := range examples(t) {
		b, err := os.ReadFile(filepath.Join(exampleRun(t, f), "trace.pcap"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got[exampleName(f)] = hex.EncodeToString(sum[:])
	}
	for _, folder := range simTraceFolders {
		files, err := filepath.Glob(filepath.Join("..", "examples", folder, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("examples/%s: found %d examples (%v)", folder, len(files), err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(validRun(t, folder, f), "trace.pcap"))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			got[folder+"/"+exampleName(f)] = hex.EncodeToString(sum[:])
		}
	}
	if *update {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(got)) {
			fmt.Fprintf(&b, "%s  %s\n", got[name], name)
		}
		if err := os.WriteFile(tracesFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(tracesFile)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	want := map[string]string{}
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok || len(sum) != 64 || name == "" {
			t.Fatalf("%s:%d: %q is not `sha256  name`", tracesFile, i+1, l)
		}
		want[name] = sum
	}
	for name, sum := range got {
		switch w, ok := want[name]; {
		case !ok:
			t.Errorf("%s: no trace hash in %s (run with -update)", name, tracesFile)
		case w != sum:
			t.Errorf("%s: trace.pcap sha256 %s, want %s", name, sum, w)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s lists %s, which is not an example", tracesFile, name)
		}
	}
}

// simTraceFolders are the folders of examples/ whose examples
// TestSimTraces pins too, each as FOLDER/NAME in testdata/sim-traces.sha256.
// Their runs need only be valid: their checks' verdicts are other tests'
// (odp: tests/odp_test.go pins their traces frame by frame).
var simTraceFolders = []string{"odp"}

// validRun runs examples/FOLDER/FILE on sim with its own seed and returns
// its repeat 0 directory; the run must be valid, whatever its checks say.
func validRun(t *testing.T, folder, file string) string {
	t.Helper()
	out := filepath.Join(workDir, "examples-"+folder)
	r, err := invoke("run", "-q", "-o", out, file)
	if err != nil {
		t.Fatal(err)
	}
	name := exampleName(file)
	if !strings.HasPrefix(r.stdout, name+" repeat 0: valid,") {
		t.Fatalf("lumina run %s: exit %d, stdout %q stderr %q; want a valid run", file, r.code, r.stdout, r.stderr)
	}
	return filepath.Join(out, name, "0")
}

// keyPaths returns the dotted path of every object key named key in a
// decoded JSON value, sorted.
func keyPaths(v any, key, at string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if at != "" {
				p = at + "." + k
			}
			if k == key {
				out = append(out, p)
			}
			out = append(out, keyPaths(x, key, p)...)
		}
	case []any:
		for i, x := range v {
			out = append(out, keyPaths(x, key, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	sort.Strings(out)
	return out
}

// TestReportOneIntegrityVerdict: report.json carries exactly one integrity
// verdict, the top-level integrity object ({verdict, reason, checks}) that
// the checks' integrity entries repeat (checks.integrity, and
// analysis.checks.integrity, where every check is); the analysis has none
// of its own.
func TestReportOneIntegrityVerdict(t *testing.T) {
	for _, f := range examples(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(exampleRun(t, f), "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			if got, want := keyPaths(raw, "integrity", ""), []string{"analysis.checks.integrity", "checks.integrity", "integrity"}; !reflect.DeepEqual(got, want) {
				t.Errorf("integrity keys in report.json: %v, want %v", got, want)
			}
			in, ok := raw["integrity"].(map[string]any)
			if !ok {
				t.Fatalf("integrity = %v, want an object", raw["integrity"])
			}
			for k := range in {
				if k != "verdict" && k != "reason" && k != "checks" {
					t.Errorf("integrity has key %q; want only verdict, reason, checks", k)
				}
			}
			if in["verdict"] != "pass" {
				t.Errorf("integrity verdict %v (reason %v), want pass", in["verdict"], in["reason"])
			}
			if r, ok := in["reason"]; ok && r != "" {
				t.Errorf("integrity reason %q on a pass", r)
			}
			wantChecks := []any{"seq: pass", "timestamp: pass", "mirrored: pass", "received: pass", "dumpers: pass"}
			if !reflect.DeepEqual(in["checks"], wantChecks) {
				t.Errorf("integrity checks %v, want %v", in["checks"], wantChecks)
			}
			analysis, ok := raw["analysis"].(map[string]any)
			if !ok {
				t.Fatalf("analysis = %v, want an object", raw["analysis"])
			}
			if _, ok := analysis["integrity"]; ok {
				t.Errorf("analysis has an integrity key: %v", analysis["integrity"])
			}
			checks, _ := raw["checks"].(map[string]any)
			if c, _ := checks["integrity"].(map[string]any); c["verdict"] != in["verdict"] {
				t.Errorf("checks.integrity %v, integrity verdict %v", checks["integrity"], in["verdict"])
			}
			achecks, _ := analysis["checks"].(map[string]any)
			if c, _ := achecks["integrity"].(map[string]any); c["verdict"] != in["verdict"] || c["reason"] != in["reason"] && !(c["reason"] == "" && in["reason"] == nil) {
				t.Errorf("analysis.checks.integrity %v, integrity %v", achecks["integrity"], in)
			}
		})
	}
}

// TestReportSeeds: report.json records every seed the run used — the
// test's (the YAML's or --seed) and the switch's and each RNIC's derived
// from it — the same seed gives the same seeds, and config.yaml in the run
// directory holds the seed.
func TestReportSeeds(t *testing.T) {
	const f = "../examples/quickstart.yaml"
	tc, err := config.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	type seeds struct{ Test, Switch, Requester, Responder uint64 }
	check := func(t *testing.T, dir string, seed uint64) seeds {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Seed  uint64                     `json:"seed"`
			Seeds map[string]json.RawMessage `json:"seeds"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		if keys := slices.Sorted(maps.Keys(raw.Seeds)); !reflect.DeepEqual(keys, []string{"requester", "responder", "switch", "test"}) {
			t.Errorf("seeds keys %v, want requester, responder, switch, test", keys)
		}
		rep := readReport(t, dir)
		if rep.Seeds == nil {
			t.Fatal("no seeds in report.json")
		}
		s := seeds{rep.Seeds.Test, rep.Seeds.Switch, rep.Seeds.Hosts["requester"], rep.Seeds.Hosts["responder"]}
		if s.Test != seed || raw.Seed != seed {
			t.Errorf("seeds.test %d, seed %d; want %d", s.Test, raw.Seed, seed)
		}
		all := []uint64{s.Test, s.Switch, s.Requester, s.Responder}
		for i := range all {
			for j := range i {
				if all[i] == all[j] {
					t.Errorf("seeds %+v: two are equal", s)
				}
			}
		}
		rc, err := config.Load(filepath.Join(dir, "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if rc.Seed != seed {
			t.Errorf("config.yaml seed %d, want %d", rc.Seed, seed)
		}
		return s
	}
	own := check(t, exampleRun(t, f), tc.Seed)
	a := check(t, runExample(t, f, "--seed", "42"), 42)
	b := check(t, runExample(t, f, "--seed", "42"), 42)
	if a != b {
		t.Errorf("seed 42 twice: seeds %+v then %+v", a, b)
	}
	if own.Switch == a.Switch || own.Requester == a.Requester || own.Responder == a.Responder {
		t.Errorf("seed %d gave seeds %+v, seed 42 %+v", tc.Seed, own, a)
	}
}

// TestRegressionSuites runs each regression suite (examples/regression/*/,
// a folder of YAML tests with several repeats each) on sim through the
// CLI: every repeat of every test is valid and passes every check, with
// every event applied, and each repeat derives its own seeds from the
// test's.
func TestRegressionSuites(t *testing.T) {
	dirs, _ := filepath.Glob("../examples/regression/*")
	ran := 0
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.yaml"))
		if st, err := os.Stat(d); err != nil || !st.IsDir() || len(files) == 0 {
			continue // README.md: not a suite
		}
		ran++
		t.Run(filepath.Base(d), func(t *testing.T) {
			out := t.TempDir()
			r := luminaExit(t, 0, "run", "-q", "-o", out, d)
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
			var want bytes.Buffer
			for _, f := range files {
				tc, err := config.Load(f)
				if err != nil {
					t.Fatal(err)
				}
				if tc.NumRepeats < 2 {
					t.Errorf("%s: %d repeats", f, tc.NumRepeats)
				}
				switchSeeds := map[uint64]int{}
				for rep := range tc.NumRepeats {
					dir := filepath.Join(out, tc.Name, fmt.Sprint(rep))
					fmt.Fprintf(&want, "%s repeat %d: valid, all checks pass → %s\n", tc.Name, rep, dir)
					rr := readReport(t, dir)
					if !rr.Valid || rr.Integrity.Verdict != "pass" || rr.Error != "" || rr.Test != tc.Name || rr.Repeat != rep || rr.Testbed != "sim" {
						t.Errorf("%s: valid %v integrity %+v error %q test %q repeat %d testbed %q",
							dir, rr.Valid, rr.Integrity, rr.Error, rr.Test, rr.Repeat, rr.Testbed)
					}
					for name, c := range rr.Checks {
						if c.Verdict != "pass" {
							t.Errorf("%s: check %s = %s (%s), want pass", dir, name, c.Verdict, c.Detail)
						}
					}
					if len(rr.Events) != len(tc.ExpandEvents()) {
						t.Errorf("%s: %d events, %d expanded", dir, len(rr.Events), len(tc.ExpandEvents()))
					}
					for _, e := range rr.Events {
						if !e.Applied {
							t.Errorf("%s: event %+v not applied", dir, e)
						}
					}
					if rr.Seeds == nil || rr.Seeds.Test != tc.Seed {
						t.Errorf("%s: seeds %+v, want test seed %d", dir, rr.Seeds, tc.Seed)
					} else {
						switchSeeds[rr.Seeds.Switch]++
					}
				}
				if len(switchSeeds) != tc.NumRepeats {
					t.Errorf("%s: switch seeds %v, want one per repeat", tc.Name, switchSeeds)
				}
			}
			if r.stdout != want.String() {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want.String())
			}
		})
	}
	if ran < 3 {
		t.Errorf("%d regression suites, want cx4, cx5 and cx6", ran)
	}
}
