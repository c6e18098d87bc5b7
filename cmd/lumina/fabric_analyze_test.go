package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/flows"
)

// fabricAnalysis is the part of an analysis (report.json's analysis,
// lumina analyze --format json) TestAnalyzeFabricRun compares.
type fabricAnalysis struct {
	Checks map[string]struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	} `json:"checks"`
	Flows struct {
		Hops     []flows.HopLatency `json:"hops"`
		HopStops []flows.HopStop    `json:"hop_stops"`
	} `json:"flows"`
}

// TestAnalyzeFabricRun: lumina analyze of a fabric run's directory
// (examples/fabric/pfc-deadlock-fixed.yaml on sim) gives every check the
// run gave, with its reason (deadlock too: the run record's fabric and
// deadlock-ms), and the same per-hop latencies; lumina decode of its
// trace names every switch of every copy (s1, switch 0, too).
func TestAnalyzeFabricRun(t *testing.T) {
	test, err := filepath.Abs(filepath.Join("..", "..", "examples", "fabric", "pfc-deadlock-fixed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := luminaRun(t, t.TempDir(), test, "pfc-deadlock-fixed", 0)
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Analysis fabricAnalysis `json:"analysis"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	run := rec.Analysis
	code, stdout, stderr := runCLI("analyze", "--format", "json", dir)
	if code != 0 {
		t.Fatalf("lumina analyze --format json %s: exit %d\n%s", dir, code, stderr)
	}
	var ana fabricAnalysis
	if err := json.Unmarshal([]byte(stdout), &ana); err != nil {
		t.Fatalf("lumina analyze --format json: %v\n%s", err, stdout)
	}

	// The run's own verdicts, so that the comparison cannot pass on two
	// empty analyses.
	if d := run.Checks["deadlock"]; d.Verdict != "pass" || !strings.HasPrefix(d.Reason, "no cycle of switch ports pausing each other through ") {
		t.Errorf("run's checks.deadlock = %+v, want pass, no cycle", d)
	}
	for _, c := range []string{"integrity", "gbn", "retransmission", "timeout", "pfc", "flows"} {
		if v := run.Checks[c].Verdict; v != "pass" {
			t.Errorf("run's checks.%s verdict = %q, want pass", c, v)
		}
	}
	if !reflect.DeepEqual(ana.Checks, run.Checks) {
		t.Errorf("lumina analyze's checks = %+v,\nthe run's %+v", ana.Checks, run.Checks)
	}

	// Every data hop of every flow's path (the test's path: keys), 2
	// messages of 1 MiB at MTU 1024 each: 2048 copies matched per hop.
	type hopKey struct {
		flow, from, to string
		samples        int64
	}
	var data []hopKey
	for _, h := range run.Flows.Hops {
		if h.Direction == "to-responder" {
			data = append(data, hopKey{h.Flow, h.From, h.To, h.Samples})
		}
	}
	wantData := []hopKey{{"a", "s1", "s2", 2048}, {"a", "s2", "s3", 2048}, {"b", "s2", "s3", 2048}, {"b", "s3", "s4", 2048},
		{"c", "s3", "s2", 2048}, {"c", "s2", "s1", 2048}, {"d", "s4", "s3", 2048}, {"d", "s3", "s2", 2048}}
	if !reflect.DeepEqual(data, wantData) {
		t.Errorf("run's to-responder hops = %v, want %v", data, wantData)
	}
	if len(run.Flows.Hops) != 2*len(wantData) || run.Flows.HopStops != nil {
		t.Errorf("run's hops = %d, hop stops %+v; want %d (both directions), none", len(run.Flows.Hops), run.Flows.HopStops, 2*len(wantData))
	}
	if !reflect.DeepEqual(ana.Flows, run.Flows) {
		t.Errorf("lumina analyze's hops = %+v, stops %+v,\nthe run's %+v, stops %+v", ana.Flows.Hops, ana.Flows.HopStops, run.Flows.Hops, run.Flows.HopStops)
	}
	sameAnalysis(t, b, []byte(stdout))

	// lumina decode names the switch of every mirror copy.
	code, stdout, stderr = runCLI("decode", filepath.Join(dir, "trace.pcap"))
	if code != 0 || stderr != "" {
		t.Fatalf("lumina decode: exit %d, stderr %q", code, stderr)
	}
	sw := regexp.MustCompile(`\[mirror sw=(\w+) `)
	count := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for _, l := range lines {
		m := sw.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("lumina decode line names no switch: %s", l)
		}
		count[m[1]]++
	}
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		if count[s] == 0 {
			t.Errorf("lumina decode: no copy of %s in %d lines (%v)", s, len(lines), count)
		}
	}
	if len(count) != 4 {
		t.Errorf("lumina decode: switches %v, want s1..s4", count)
	}
}

// sameAnalysis compares report.json's analysis (rec) with lumina analyze
// --format json's (ana): every key but those only lumina analyze has
// (inputs, integrity: the run's is report.json's own) and the trace (its
// path).
func sameAnalysis(t *testing.T, rec, ana []byte) {
	t.Helper()
	var r struct {
		Analysis map[string]json.RawMessage `json:"analysis"`
	}
	var a map[string]json.RawMessage
	if err := json.Unmarshal(rec, &r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ana, &a); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"inputs", "integrity", "trace"} {
		delete(r.Analysis, k)
		delete(a, k)
	}
	if len(r.Analysis) == 0 {
		t.Fatal("report.json has no analysis")
	}
	keys := map[string]bool{}
	for k := range r.Analysis {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	for k := range keys {
		var x, y any
		if raw, ok := r.Analysis[k]; ok {
			if err := json.Unmarshal(raw, &x); err != nil {
				t.Fatal(err)
			}
		}
		if raw, ok := a[k]; ok {
			if err := json.Unmarshal(raw, &y); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(x, y) {
			t.Errorf("lumina analyze's %s = %.600s,\nthe run's %.600s", k, a[k], r.Analysis[k])
		}
	}
}

// TestAnalyzeFabricRunRecord: lumina analyze of the run directory of
// every fabric example but pfc-deadlock-fixed (TestAnalyzeFabricRun) gives
// the run's analysis: every check with all its numbers, the flows and per-hop
// latencies, the fabric's chains, storms and deadlock, the parameters
// (mirror_holds too), the counters in the order of the test's hosts.
func TestAnalyzeFabricRunRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
	}{{"hawkeye-fig1", 0}, {"pfc-storm-clos", 0}, {"pfc-deadlock", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			test, err := filepath.Abs(filepath.Join("..", "..", "examples", "fabric", tc.name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			dir := luminaRun(t, t.TempDir(), test, tc.name, tc.code)
			rec, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI("analyze", "--format", "json", dir)
			if code != tc.code {
				t.Fatalf("lumina analyze --format json %s: exit %d, want %d\n%s", dir, code, tc.code, stderr)
			}
			sameAnalysis(t, rec, []byte(stdout))
		})
	}
}
