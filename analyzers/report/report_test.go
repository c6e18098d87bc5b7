package report

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/netlumina/lumina/analyzers/cnp"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/timeout"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// plotsOf collects the graph data of script's trace as the analysis does.
func plotsOf(t *testing.T, conns []model.Connection, script string) *Plots {
	t.Helper()
	tr, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, script, tracetest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	table := model.NewTable(conns)
	dec := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: tracetest.MTU, Mirror: true, Table: table}
	c := NewSeqCollector(table, roce.DefaultMirrorPort)
	for {
		tp, err := tr.Next()
		if err == io.EOF {
			return c.Plots()
		}
		if err != nil {
			t.Fatal(err)
		}
		var p model.Pkt
		if dec.Decode(&tp, &p) {
			c.Add(&tp, &p, true)
		}
	}
}

func sample() *Report {
	g := int64(1100)
	r := &Report{Valid: true, Integrity: Integrity{Verdict: model.Pass},
		Connections: []model.Connection{{ID: 0, Verb: model.VerbWrite}}}
	for _, c := range AllChecks {
		r.Checks.Skip(c, NotSelected)
	}
	r.Checks.Retransmission = retransmission.Result{Verdict: model.Pass, Losses: []retransmission.Loss{
		{Kind: retransmission.KindFast, NACKGenerationNs: &g, NACKReactionNs: &g, RetransmissionNs: &g}}}
	r.Checks.Timeout = timeout.Result{Verdict: model.Fail, TransportTimeoutNs: 1000, LowerNs: 1000, UpperNs: 4000,
		Timeouts: []timeout.Timeout{{IntervalsNs: []int64{500, 8000}, Retries: 2, OutOfBound: true}}}
	return r
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	conns := tracetest.Conns(1, 10, model.VerbWrite)
	r.Connections = conns
	r.Plots = plotsOf(t, conns, kindsWrite)
	if err := WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	b, err := os.ReadFile(filepath.Join(dir, FileJSON))
	if err != nil || json.Unmarshal(b, &back) != nil {
		t.Fatalf("report.json: %v", err)
	}
	for _, k := range []string{"valid", "integrity", "connections", "checks"} {
		if _, ok := back[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	checks := back["checks"].(map[string]any)
	for _, c := range AllChecks {
		if v := checks[c].(map[string]any)["verdict"]; v == nil {
			t.Errorf("checks.%s has no verdict", c)
		}
	}
	txt, _ := os.ReadFile(filepath.Join(dir, FileText))
	if !strings.Contains(string(txt), "result: FAIL") {
		t.Errorf("report.txt:\n%s", txt)
	}
	page, _ := os.ReadFile(filepath.Join(dir, FileHTML))
	s := string(page)
	if n := strings.Count(s, "<svg"); n != 2 {
		t.Errorf("report.html has %d SVG plots, want 2 (losses, timeouts)", n)
	}
	if strings.Contains(s, "<?xml") || strings.Contains(s, `src="`) || strings.Contains(s, `href="`) || strings.Contains(s, "@import") {
		t.Error("report.html is not self-contained inline HTML")
	}
	if !strings.Contains(s, uplotJS) || !strings.Contains(s, pageJS) {
		t.Error("report.html lacks the embedded uPlot or its script")
	}
	d := pageDataOf(t, s)
	if len(d.Conns) != 1 || d.Conns[0].N != kindsWriteN || d.Conns[0].Counts[ClassDrop] != 1 || d.Conns[0].Counts[ClassCNP] != 1 {
		t.Errorf("graph data: %d connections, first %+v; want 1 of %d packets, 1 drop, 1 CNP", len(d.Conns), d.Conns[0], kindsWriteN)
	}
}

// kindsWrite is a WRITE connection's script of kindsWriteN packets.
const (
	kindsWrite  = "0 1a A1#1 2x 3 N2#1 2 3e C A3#2 4d 5c R5#2 5 A5#3"
	kindsWriteN = 15
)

// pageDataOf returns the graph data of page.
func pageDataOf(t *testing.T, page string) pageData {
	t.Helper()
	const open = `<script type="application/json" id="lumina-data">`
	i := strings.Index(page, open)
	j := strings.Index(page[i+1:], "</script>")
	if i < 0 || j < 0 {
		t.Fatal("report.html has no graph data")
	}
	var d pageData
	if err := json.Unmarshal([]byte(page[i+len(open):i+1+j]), &d); err != nil {
		t.Fatalf("graph data: %v", err)
	}
	return d
}

// TestInconclusive: an inconclusive check does not fail the run; the text
// and the page say INCONCLUSIVE, with the check and its reason.
func TestInconclusive(t *testing.T) {
	r := sample()
	r.Params.TimestampUncertaintyNs = 12_000
	reason := "1 of 1 timeout episodes within the timestamp uncertainty (±12 µs) of the bound: conn 0 rel 0: interval 995 ns vs lower 1,000 ns"
	r.Checks.Timeout = timeout.Result{Verdict: model.Inconclusive, Reason: reason, TransportTimeoutNs: 1000, LowerNs: 1000, UpperNs: 4000,
		TimestampUncertaintyNs: 12_000, Timeouts: []timeout.Timeout{{IntervalsNs: []int64{995}, Retries: 1, Inconclusive: true, InconclusiveIntervals: []int{0}}}}
	if !r.Passed() || r.Result() != ResultInconclusive || !slices.Equal(r.Inconclusive(), []string{CheckTimeout}) {
		t.Errorf("Passed() = %v, Result() = %s, Inconclusive() = %v; want true, INCONCLUSIVE, [timeout]", r.Passed(), r.Result(), r.Inconclusive())
	}
	if v := r.Checks.Verdicts()[CheckTimeout]; v != model.Inconclusive {
		t.Errorf("Verdicts()[timeout] = %s", v)
	}
	txt := Text(r)
	for _, want := range []string{"  timeout         inconclusive  1 timeout episodes (" + reason + ")\n",
		"timeouts (T_tr 1µs, bound 1µs .. 4µs, timestamp uncertainty ±12 µs; * outside the bound):\n", "995ns INCONCLUSIVE\n",
		"result: INCONCLUSIVE (valid, no check failed; inconclusive: timeout)\n"} {
		if !strings.Contains(txt, want) {
			t.Errorf("Text lacks %q:\n%s", want, txt)
		}
	}
	h, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<span class="inconclusive">INCONCLUSIVE</span>`, `<td class="inconclusive">inconclusive</td>`, "(±12 µs): timeout."} {
		if !strings.Contains(string(h), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	r.Checks.CNP = cnp.Result{Verdict: model.Inconclusive, Reason: "possibly per-port", Observed: 2, ConsistentScopes: []string{},
		PossibleScopes: []string{"per-port"}, TimestampUncertaintyNs: 12_000}
	if txt := Text(r); !strings.Contains(txt, "  cnp             inconclusive  2 CNPs; consistent scopes: none; possibly: per-port (possibly per-port)\n") ||
		!strings.Contains(txt, "inconclusive: timeout, cnp)\n") {
		t.Errorf("Text:\n%s", txt)
	}
	if h, _ := HTML(r); !strings.Contains(string(h), "none; possibly consistent (within the timestamp uncertainty, ±12 µs): per-port </p>") {
		t.Errorf("HTML lacks the possible CNP scopes")
	}
	r.Checks.Counters.Verdict = model.Fail
	if r.Passed() || r.Result() != ResultFail {
		t.Errorf("with a failed check: Passed() = %v, Result() = %s", r.Passed(), r.Result())
	}
	r = sample()
	r.Checks.Timeout.Verdict = model.Pass
	if r.Result() != ResultPass || !strings.HasSuffix(Text(r), "result: PASS\n") {
		t.Errorf("Result() = %s, text %q", r.Result(), Text(r))
	}
}

// TestUPlotEmbedded: the embedded uPlot is the one scripts/fetch-uplot.sh
// fetched (uplot/SHA256SUMS), not an edited copy.
func TestUPlotEmbedded(t *testing.T) {
	sums, err := os.ReadFile(filepath.Join("uplot", "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"uPlot.iife.min.js": uplotJS, "uPlot.min.css": uplotCSS}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		data, ok := files[name]
		if !ok {
			continue
		}
		delete(files, name)
		if got := fmt.Sprintf("%x", sha256.Sum256([]byte(data))); got != sum {
			t.Errorf("embedded %s: sha256 %s, SHA256SUMS says %s (run scripts/fetch-uplot.sh)", name, got, sum)
		}
	}
	if len(files) > 0 {
		t.Errorf("SHA256SUMS lacks %v", files)
	}
}

// TestSeqCollectorAllocs: adding a packet allocates nothing once the
// buffers have grown (growth is amortized).
func TestSeqCollectorAllocs(t *testing.T) {
	conns := tracetest.Conns(1, 10, model.VerbWrite)
	tr, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, "0 1 A1#1", tracetest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	table := model.NewTable(conns)
	dec := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: tracetest.MTU, Mirror: true, Table: table}
	var tps []trace.Packet
	var ps []model.Pkt
	for {
		tp, err := tr.Next()
		if err != nil {
			break
		}
		var p model.Pkt
		if dec.Decode(&tp, &p) {
			tps, ps = append(tps, tp), append(ps, p)
		}
	}
	c := NewSeqCollector(table, roce.DefaultMirrorPort)
	i := 0
	add := func() {
		c.Add(&tps[i%len(tps)], &ps[i%len(ps)], true)
		i++
	}
	for range 1 << 16 {
		add()
	}
	if got := testing.AllocsPerRun(10_000, add); got != 0 {
		t.Errorf("Add allocates %v times per packet", got)
	}
}

// TestSeqCollectorBound: the graphs keep the trace's first packets within
// MaxPlotBytes of buffers and count the others; a page of the kept ones
// is the same whether their buffers are in time order or not.
func TestSeqCollectorBound(t *testing.T) {
	if RecordBytes != 64 {
		t.Errorf("RecordBytes = %d, docs/run.md says 64", RecordBytes)
	}
	conns := tracetest.Conns(2, 10, model.VerbWrite)
	tr, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, "0 1 A1#1 1/0 1/1 1/A1#1", tracetest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	table := model.NewTable(conns)
	dec := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: tracetest.MTU, Mirror: true, Table: table}
	var tps []trace.Packet
	var ps []model.Pkt
	for {
		tp, err := tr.Next()
		if err != nil {
			break
		}
		var p model.Pkt
		if dec.Decode(&tp, &p) && p.Conn >= 0 {
			tps, ps = append(tps, tp), append(ps, p)
		}
	}
	c := NewSeqCollector(table, roce.DefaultMirrorPort)
	total := MaxPlotPackets + 5000
	for i := range total {
		tp, p := tps[i%len(tps)], ps[i%len(ps)]
		tp.Index = i
		p.TimeNs = int64(i) * 100 // distinct times: one sorted order
		c.Add(&tp, &p, true)
	}
	pl := c.Plots()
	kept, bytes := 0, 0
	for i := range pl.Conns {
		cp := &pl.Conns[i]
		kept += cp.Len()
		for _, ch := range cp.chunks {
			bytes += cap(ch) * RecordBytes
		}
		bytes += cap(cp.reth) * int(unsafe.Sizeof(rethRec{}))
	}
	if bytes > MaxPlotBytes || kept < MaxPlotPackets*99/100 {
		t.Errorf("kept %d packets in %d bytes, want at most %d bytes and at least %d packets", kept, bytes, MaxPlotBytes, MaxPlotPackets*99/100)
	}
	if kept+pl.Dropped != total {
		t.Errorf("kept %d + dropped %d != %d", kept, pl.Dropped, total)
	}
	for i := range pl.Conns {
		pl.Conns[i].all(func(r *pktRec) {
			if int(r.idx) >= kept {
				t.Fatalf("packet %d kept, not a prefix of the trace", r.idx)
			}
		})
	}
	// The same packets in one buffer, reversed: the page sorts them.
	cp := pl.Conns[0]
	var recs []pktRec
	cp.all(func(r *pktRec) { recs = append(recs, *r) })
	slices.Reverse(recs)
	rev := cp
	rev.chunks = [][]pktRec{recs}
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	a, err := encodeConn(&cp, pl.T0, "x", zw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeConn(&rev, pl.T0, "x", zw)
	if err != nil {
		t.Fatal(err)
	}
	if a.Data != b.Data || a.C0 != b.C0 || !slices.Equal(a.Reth, b.Reth) || a.N != cp.Len() {
		t.Error("the page of packets out of time order differs from the sorted one's")
	}
}

// TestPageTwice: a report renders the same page twice, though its graphs'
// records are released once encoded.
func TestPageTwice(t *testing.T) {
	r := sample()
	conns := tracetest.Conns(2, 10, model.VerbWrite)
	r.Connections = conns
	r.Plots = plotsOf(t, conns, "0 1 A1#1 1/0 1/1 1/A1#1")
	n := r.Plots.Conns[0].Len()
	a, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Plots.Conns[0].chunks != nil || r.Plots.Conns[0].Len() != n {
		t.Errorf("records kept after the page was built (or their count lost: %d, want %d)", r.Plots.Conns[0].Len(), n)
	}
	b, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the second page differs from the first")
	}
}

// TestSeqCollectorAddParsed: AddParsed of the frames the decoder parsed
// (without ICRC verification) collects what Add, which parses them again
// and verifies the ICRC, collects; without allocating.
func TestSeqCollectorAddParsed(t *testing.T) {
	conns := tracetest.Conns(2, 10, model.VerbWrite)
	script := kindsWrite + " 1/0 1/1 1/A1 1/2c 1/2 1/A2 1/Ce 3 A5#4"
	want := plotsOf(t, conns, script)
	tr, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, script, tracetest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	table := model.NewTable(conns)
	dec := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: tracetest.MTU, Mirror: true, Table: table}
	c := NewSeqCollector(table, roce.DefaultMirrorPort)
	for {
		tp, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var p model.Pkt
		if dec.Decode(&tp, &p) {
			c.AddParsed(&tp, &p, dec.Packet(), true)
		}
	}
	got := c.Plots()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AddParsed plots differ from Add's:\n%+v\n%+v", got, want)
	}
	var icrc [4]int
	for _, cp := range got.Conns {
		cp.all(func(r *pktRec) { icrc[r.flags>>flagICRCSh&3]++ })
	}
	if icrc[roce.ICRCOK] == 0 || icrc[roce.ICRCUnchecked] != 0 || len(got.Conns) != 2 || len(got.Tuples) != 6 {
		t.Errorf("ICRC statuses %v, %d graphs, %d tuples: want verified ones, 2 graphs, 6 tuples", icrc, len(got.Conns), len(got.Tuples))
	}

	// Allocations, once the buffers have grown.
	var tps []trace.Packet
	tr, _ = trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, script, tracetest.Options{})))
	for {
		tp, err := tr.Next()
		if err != nil {
			break
		}
		tp.Data = bytes.Clone(tp.Data)
		tps = append(tps, tp)
	}
	i := 0
	var p model.Pkt
	add := func() {
		tp := &tps[i%len(tps)]
		if dec.Decode(tp, &p) {
			c.AddParsed(tp, &p, dec.Packet(), true)
		}
		i++
	}
	for range 1 << 16 {
		add()
	}
	if n := testing.AllocsPerRun(10_000, add); n != 0 {
		t.Errorf("Decode and AddParsed allocate %v times per packet", n)
	}
}
