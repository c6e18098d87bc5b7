package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
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
		// A timeout 1 µs short of the bound (T_tr − 1 µs tolerance) fails
		// with exact timestamps and is inconclusive within ±2 µs.
		{name: "analyze-timeout-short", args: []string{"analyze", "--timeout", "14", "$TMP/timeout.pcap"}, setup: timeoutTrace},
		{name: "analyze-uncertainty", args: []string{"analyze", "--timeout", "14", "--timestamp-uncertainty", "2000", "$TMP/timeout.pcap"},
			setup: timeoutTrace},
		{name: "analyze-uncertainty-meta", args: []string{"analyze", "--meta", "$TMP/meta.json", "--timeout", "14", "$TMP/timeout.pcap"},
			setup: func(t *testing.T, tmp string) {
				timeoutTrace(t, tmp)
				meta(`{"timestamp_uncertainty_ns": 2000}`)(t, tmp)
			}},
		{name: "analyze-uncertainty-override", args: []string{"analyze", "--meta", "$TMP/meta.json", "--timeout", "14", "--timestamp-uncertainty", "0", "$TMP/timeout.pcap"},
			setup: func(t *testing.T, tmp string) {
				timeoutTrace(t, tmp)
				meta(`{"timestamp_uncertainty_ns": 2000}`)(t, tmp)
			}},
		{name: "analyze-bad-uncertainty", args: []string{"analyze", "--timestamp-uncertainty", "-5", sample}},
		{name: "analyze-help", args: []string{"help", "analyze"}},
		{name: "analyze-bad-workers", args: []string{"analyze", "--workers", "-1", sample}},
		// The report of any number of workers is the one-worker report
		// (analyzers.Options.Workers): the golden files differ only in
		// their first line (TestAnalyzeWorkersGolden).
		{name: "analyze-uncertainty-workers-1", args: []string{"analyze", "--workers", "1", "--timeout", "14", "--timestamp-uncertainty", "2000", "$TMP/timeout.pcap"},
			setup: timeoutTrace},
		{name: "analyze-uncertainty-workers-3", args: []string{"analyze", "--workers", "3", "--timeout", "14", "--timestamp-uncertainty", "2000", "$TMP/timeout.pcap"},
			setup: timeoutTrace},
	}
	runGolden(t, cases)
}

// timeoutTrace writes $TMP/timeout.pcap: a mirror trace of one WRITE
// whose only packet the switch drops; the requester retransmits it after
// T_tr(14) − 2 µs, 1 µs short of the timeout bound's lower end (T_tr less
// the 1 µs tolerance), and the responder ACKs.
func timeoutTrace(t *testing.T, tmp string) {
	t.Helper()
	data := roce.FrameSpec{SrcMAC: reqMAC, DstMAC: rspMAC, SrcIP: reqIP, DstIP: rspIP, TOS: 0x02, TTL: 64,
		UDPSrc: roce.UDPSourcePort(reqQPN, rspQPN), Opcode: roce.RCWriteOnly, DestQP: rspQPN, PSN: 100, AckReq: true,
		RETH: roce.RETHFields{VA: 0x7f3a_0000_0000, RKey: 0x2a2a, Length: 1024}, Payload: bytes.Repeat([]byte{1}, 1024)}
	ack := roce.FrameSpec{SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, TOS: 0x02, TTL: 64,
		UDPSrc: roce.UDPSourcePort(rspQPN, reqQPN), Opcode: roce.RCAcknowledge, DestQP: reqQPN, PSN: 100,
		AETH: roce.AETHFields{Syndrome: roce.ACKSyndrome(roce.CreditCountInvalid), MSN: 1}}
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, 128, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(5_000_000_000)
	for i, f := range []struct {
		spec  roce.FrameSpec
		event roce.Event
		delay int64
	}{{data, roce.EventDrop, 0}, {data, roce.EventNone, int64(roce.TransportTimeout(14)) - 2000}, {ack, roce.EventNone, 1900}} {
		ts += f.delay
		frame, err := f.spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		m := roce.MirrorMeta{Seq: uint64(i + 1), TimestampNs: uint64(ts), Event: f.event}
		if !roce.ApplyMirror(frame, m, roce.DefaultMirrorPort, uint16(0x1000+i)) || !roce.RestoreMirror(frame, roce.DefaultMirrorPort) {
			t.Fatal("mirror codec failed")
		}
		if err := w.WritePacket(ts, frame, len(frame)); err != nil {
			t.Fatal(err)
		}
	}
	write(t, tmp, "timeout.pcap", buf.Bytes())
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
	// Self-contained (no external resources), the bar chart and the
	// interactive graphs' data and script inline (TestReportBrowser opens
	// it).
	s := string(page)
	if strings.Contains(s, "src=\"") || strings.Contains(s, "href=\"") || strings.Contains(s, "@import") || strings.Count(s, "<svg") < 1 ||
		!strings.Contains(s, `<script type="application/json" id="lumina-data">{"t0":`) || !strings.Contains(s, "window.lumina") {
		t.Errorf("report.html is not a self-contained page with graphs (%d bytes, %d svg)", len(page), strings.Count(s, "<svg"))
	}
}

// TestAnalyzeHTMLFlag: --html on a bare trace writes the report page, with
// a graph of every packet of its connection; on a test directory, one page
// per repeat (FILE-0.html, ...).
func TestAnalyzeHTMLFlag(t *testing.T) {
	sample := filepath.Join("..", "..", "examples", "traces", "write-drop.pcap")
	page := filepath.Join(t.TempDir(), "out.html")
	code, stdout, stderr := runCLI("analyze", "--html", page, sample)
	if code != 0 || !strings.Contains(stdout, "result: PASS") {
		t.Fatalf("lumina analyze --html: exit %d\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	const open = `<script type="application/json" id="lumina-data">`
	i := strings.Index(h, open)
	j := strings.Index(h[max(i, 0):], "</script>")
	if i < 0 || j < 0 {
		t.Fatalf("%s has no graph data", page)
	}
	var d struct {
		Conns []struct {
			N int `json:"n"`
		} `json:"conns"`
	}
	if err := json.Unmarshal([]byte(h[i+len(open):i+j]), &d); err != nil {
		t.Fatal(err)
	}
	var pkts int
	for _, c := range d.Conns {
		pkts += c.N
	}
	if len(d.Conns) != 1 || pkts != len(decodeLines(t, sample)) {
		t.Errorf("graph data: %d connections, %d packets; want 1 with every packet of the trace (%d)", len(d.Conns), pkts, len(decodeLines(t, sample)))
	}
}

// TestAnalyzeWorkersGolden checks that the golden outputs of lumina
// analyze on 1 and 3 workers are the same but for the command line.
func TestAnalyzeWorkersGolden(t *testing.T) {
	var rest []string
	for _, n := range []string{"1", "3"} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", "analyze-uncertainty-workers-"+n+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		_, r, _ := strings.Cut(string(b), "\n")
		rest = append(rest, r)
	}
	if rest[0] != rest[1] || !strings.Contains(rest[0], "timeout") {
		t.Errorf("outputs on 1 and 3 workers differ:\n%s\n---\n%s", rest[0], rest[1])
	}
}
