package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeGolden runs lumina analyze on the sample traces and compares
// exit code and output with testdata/golden/analyze-*.golden. Update with
// go test ./cmd/lumina -run TestAnalyzeGolden -update.
func TestAnalyzeGolden(t *testing.T) {
	sample := filepath.Join("..", "..", "examples", "traces", "write-drop.pcap")
	meta := func(body string) func(t *testing.T, tmp string) {
		return func(t *testing.T, tmp string) { write(t, tmp, "meta.json", []byte(body)) }
	}
	conn := `"connections": [{"index": 0, "verb": "write", "requester": {"ip": "10.0.0.1", "qpn": 2748, "ipsn": 16777214},
		"responder": {"ip": "10.0.0.2", "qpn": 3567, "ipsn": 0}}]`
	cases := []cliCase{
		{name: "analyze-text", args: []string{"analyze", sample}},
		{name: "analyze-json", args: []string{"analyze", "--format", "json", sample}},
		{name: "analyze-meta", args: []string{"analyze", "--meta", "$TMP/meta.json", "--timeout", "14", "--min-time-between-cnps", "4", sample},
			setup: meta(`{` + conn + `, "mtu": 1024, "retry_cnt": 7,
				"nics": [{"name": "responder", "ips": ["10.0.0.2"], "before": {"out_of_sequence": 3}, "after": {"out_of_sequence": 4, "np_cnp_sent": 1, "np_ecn_marked_roce_packets": 1}},
				         {"name": "requester", "ips": ["10.0.0.1"], "after": {"packet_seq_err": 1, "local_ack_timeout_err": 0}}]}`)},
		{name: "analyze-counter-mismatch", args: []string{"analyze", "--meta", "$TMP/meta.json", "--checks", "counters,gbn", sample},
			setup: meta(`{"nics": [{"name": "responder", "ips": ["10.0.0.2"], "after": {"out_of_sequence": 2}}]}`)},
		{name: "analyze-bad-meta", args: []string{"analyze", "--meta", "$TMP/meta.json", sample}, setup: meta(`{"retry_cnt": 9}`)},
		{name: "analyze-garbage", args: []string{"analyze", "$TMP/garbage.pcap"}, setup: func(t *testing.T, tmp string) {
			write(t, tmp, "garbage.pcap", []byte("not a capture\n"))
		}},
		{name: "analyze-missing", args: []string{"analyze", "$TMP/nope.pcap"}},
		{name: "analyze-empty-dir", args: []string{"analyze", "$TMP"}},
		{name: "analyze-no-args", args: []string{"analyze"}},
		{name: "analyze-bad-format", args: []string{"analyze", "--format", "xml", sample}},
		{name: "analyze-bad-check", args: []string{"analyze", "--checks", "gbn,nope", sample}},
		{name: "analyze-bad-timeout", args: []string{"analyze", "--timeout", "40", sample}},
		{name: "analyze-help", args: []string{"help", "analyze"}},
	}
	runGolden(t, cases)
}

// TestAnalyzeRunDir runs a sim test with lumina run and analyzes its
// result directory with lumina analyze: the verdicts must agree with the
// run's report.json (validity, integrity, and every check both report),
// and -o must write a self-contained report.html.
func TestAnalyzeRunDir(t *testing.T) {
	out := t.TempDir()
	test := filepath.Join("..", "..", "examples", "fast-retransmission-20k.yaml")
	if _, err := os.Stat(test); err != nil {
		t.Skipf("example test missing: %v", err)
	}
	code, stdout, stderr := runCLI("run", "-q", "--testbed", "sim", "-o", out, test)
	if code != 0 {
		t.Fatalf("lumina run: exit %d\n%s%s", code, stdout, stderr)
	}
	dir := filepath.Join(out, "fast-retransmission-20k", "0")
	var run struct {
		Valid     bool `json:"valid"`
		Integrity struct {
			Verdict string `json:"verdict"`
		} `json:"integrity"`
		Checks map[string]struct {
			Verdict string `json:"verdict"`
		} `json:"checks"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	html := t.TempDir()
	code, stdout, stderr = runCLI("analyze", "--format", "json", "-o", html, dir)
	var got struct {
		Valid     bool `json:"valid"`
		Integrity struct {
			Verdict string `json:"verdict"`
		} `json:"integrity"`
		Checks map[string]struct {
			Verdict string `json:"verdict"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("lumina analyze: exit %d, %v\n%s", code, err, stderr)
	}
	if got.Valid != run.Valid || got.Integrity.Verdict != run.Integrity.Verdict {
		t.Errorf("analyze: valid %v integrity %s; run: valid %v integrity %s", got.Valid, got.Integrity.Verdict, run.Valid, run.Integrity.Verdict)
	}
	for name, c := range run.Checks {
		if g, ok := got.Checks[name]; ok && g.Verdict != c.Verdict {
			t.Errorf("check %s: analyze %s, run %s", name, g.Verdict, c.Verdict)
		}
	}
	for name, c := range got.Checks {
		if c.Verdict != "pass" {
			t.Errorf("check %s = %s, want pass for a fast-retransmission run", name, c.Verdict)
		}
	}
	if code != 0 {
		t.Errorf("lumina analyze: exit %d, want 0\n%s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(html, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	if strings.Contains(s, "<script") || strings.Contains(s, "src=\"http") || strings.Contains(s, "href=\"http") || strings.Count(s, "<svg") < 3 {
		t.Errorf("report.html is not a self-contained page with plots (%d bytes, %d svg)", len(page), strings.Count(s, "<svg"))
	}
}
