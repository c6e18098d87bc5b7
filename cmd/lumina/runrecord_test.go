package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// luminaRun runs test (a YAML file) on sim into tmp/out with lumina run and
// returns its repeat 0 directory.
func luminaRun(t *testing.T, tmp, test, name string, wantCode int) string {
	t.Helper()
	code, stdout, stderr := runCLI("run", "-q", "--testbed", "sim", "-o", filepath.Join(tmp, "out"), test)
	if code != wantCode {
		t.Fatalf("lumina run %s: exit %d, want %d\n%s%s", test, code, wantCode, stdout, stderr)
	}
	return filepath.Join(tmp, "out", name, "0")
}

// TestAnalyzeRunRecord: lumina analyze of a run directory, or of the
// run's trace in it, gives every verdict the run had, from the run's
// record (report.json), with the run's exit code: a run that failed
// events_applied re-analyzes as FAIL (events_applied), exit 1, and says
// where the metadata and verdicts came from. A trace in a run directory
// that is not the run's is analyzed alone, saying the run's files were
// ignored. Golden files testdata/golden/analyze-record-*.golden.
func TestAnalyzeRunRecord(t *testing.T) {
	test, err := filepath.Abs(filepath.Join("testdata", "runs", "events-not-applied.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	setup := func(t *testing.T, tmp string) {
		dir := luminaRun(t, tmp, test, "events-not-applied", 1)
		b, err := os.ReadFile(filepath.Join(dir, "trace.pcap"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "copy.pcap", b) // a trace in the run directory that is not the run's
	}
	const dir = "$TMP/out/events-not-applied/0"
	runGolden(t, []cliCase{
		{name: "analyze-record-dir", args: []string{"analyze", dir}, setup: setup},
		{name: "analyze-record-trace", args: []string{"analyze", dir + "/trace.pcap"}, setup: setup},
		{name: "analyze-record-other-trace", args: []string{"analyze", dir + "/copy.pcap"}, setup: setup},
	})
}

// TestRunReportText: report.txt of lumina run is the text report lumina
// analyze prints (areport.TextRun), with every check's numbers: the
// timeouts measured against the bound (examples/timeout-adaptive.yaml
// fails timeout by design), the pfc detail (examples/pause-reaction.yaml)
// and the result line. Golden files testdata/golden/report-txt-*.golden.
func TestRunReportText(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
	}{{"timeout-adaptive", 1}, {"pause-reaction", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			test, err := filepath.Abs(filepath.Join("..", "..", "examples", tc.name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			dir := luminaRun(t, t.TempDir(), test, tc.name, tc.code)
			b, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			golden := filepath.Join("testdata", "golden", "report-txt-"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("report.txt differs from %s (-want +got):\n%s", golden, lineDiff(string(want), got))
			}
			// lumina analyze prints the same checks and result (its heading
			// names the inputs instead of the run).
			code, stdout, stderr := runCLI("analyze", dir)
			if code != tc.code {
				t.Errorf("lumina analyze: exit %d, want %d\n%s", code, tc.code, stderr)
			}
			_, body, _ := strings.Cut(got, "\ntrace: ")
			if !strings.HasSuffix(stdout, body) {
				t.Errorf("lumina analyze %s does not end as report.txt does (-report.txt +analyze):\n%s", dir, lineDiff(body, stdout))
			}
		})
	}
}
