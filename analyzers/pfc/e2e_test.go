package pfc_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestAnalyze: a two-hop PFC episode in a pcap through analyzers.Analyze,
// with the PFC counters cross-checked, in JSON, text and HTML.
func TestAnalyze(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbWrite)
	fr, err := tracetest.Frames(conns, "0 1 2 3 A3", tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	times := []int64{1000, 10500, 20500, 42000, 50000}
	type ev struct {
		ts   int64
		sent bool
		port uint16
		q    uint16
	}
	pfcs := []ev{{10000, false, 2, 0xFFFF}, {20000, true, 1, 0xFFFF}, {40000, false, 2, 0}, {41000, true, 1, 0}}
	var buf bytes.Buffer
	w, _ := trace.NewPcapWriter(&buf, 256, trace.LinkTypeEthernet)
	seq := uint64(0)
	put := func(ts int64, b []byte) {
		if err := w.WritePacket(ts, b, len(b)); err != nil {
			t.Fatal(err)
		}
	}
	k := 0
	for i, f := range fr {
		for k < len(pfcs) && pfcs[k].ts < times[i] {
			seq++
			e := pfcs[k]
			put(e.ts, roce.AppendMACMirror(nil, roce.MirrorMeta{TimestampNs: uint64(e.ts), Seq: seq}, e.sent, e.port,
				roce.BuildPFC(nil, [6]byte{2}, 1<<3, [8]uint16{3: e.q})))
			k++
		}
		b := bytes.Clone(f.Data)
		b[15] = 24 << 2 // DSCP 24: priority 3
		seq++
		if !roce.ApplyMirror(b, roce.MirrorMeta{Seq: seq, TimestampNs: uint64(times[i])}, roce.DefaultMirrorPort, 1) ||
			!roce.RestoreMirror(b, roce.DefaultMirrorPort) {
			t.Fatal("mirror")
		}
		put(times[i], b)
	}
	mirror := true
	meta := model.Meta{Connections: conns, Mirror: &mirror, SwitchPorts: map[string]uint32{"requester": 1, "responder": 2},
		NICs: []model.NIC{
			{Name: "requester", After: model.Counters{"rx_prio3_pause": 2, "rx_prio3_pause_duration": 21, "tx_prio3_pause": 0}},
			{Name: "responder", After: model.Counters{"tx_prio3_pause": 2, "tx_prio3_pause_duration": 30, "rx_prio3_pause": 1}},
		}}
	r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("pfc", buf.Bytes()), meta, analyzers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pf := r.PFC
	if pf.Verdict != model.Pass || pf.Frames != 4 || len(pf.Causality) != 1 || pf.Causality[0].Origin.Kind != "slow-receiver" {
		t.Fatalf("pfc = %v %q, %d frames, causality %+v", pf.Verdict, pf.Reason, pf.Frames, pf.Causality)
	}
	if e := pf.Episodes[1]; e.ReactionNs == nil || *e.ReactionNs != 500 {
		t.Errorf("reaction = %v, want 500", e.ReactionNs)
	}
	var got []string
	for _, m := range r.Checks.Counters.Mismatches {
		got = append(got, m.Detail)
	}
	want := "responder: rx_prio3_pause = 1, the trace shows 0"
	if r.Checks.Counters.Verdict != model.Fail || strings.Join(got, "; ") != want || len(r.Checks.Counters.Checked) != 6 {
		t.Errorf("counters = %v %q (%d checked), want fail %q", r.Checks.Counters.Verdict, got, len(r.Checks.Counters.Checked), want)
	}
	j, _ := r.MarshalIndent()
	txt := report.Text(r)
	h, err := report.HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ name, doc, want string }{{"json", string(j), `"pfc": {`}, {"text", txt, "origin: slow-receiver"},
		{"html", string(h), "<h2>PFC</h2>"}} {
		if !strings.Contains(s.doc, s.want) {
			t.Errorf("%s lacks %q", s.name, s.want)
		}
	}

	// Without PFC copies: no section.
	r, err = analyzers.Analyze(context.Background(), analyzers.Bytes("plain", tracetest.Build(t, conns, "0 1 A1", tracetest.Options{})), model.Meta{Connections: conns}, analyzers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := r.MarshalIndent(); bytes.Contains(j, []byte(`"pfc"`)) || strings.Contains(report.Text(r), "pfc") {
		t.Errorf("a trace without PFC copies has a pfc section:\n%s", j)
	}
}
