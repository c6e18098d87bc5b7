package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/model"
)

// TestHTMLHops: a fabric run's flows section has the per-hop latency
// table (flow, direction, hop, matched copies, min / median / p99 / max
// as the page formats times) and the hop stops (the frame, or the end of
// the trace, and the reason); a page whose flows have no hops (one
// switch) has neither.
func TestHTMLHops(t *testing.T) {
	r := sample()
	r.Flows = flows.Result{Verdict: model.Pass, Reason: "all 2 flows made progress", Bins: 1, BinNs: 1000,
		Flows: []flows.Flow{{Name: "a", From: "h1", To: "r3"}, {Name: "b", From: "h2", To: "r4"}},
		Hops: []flows.HopLatency{
			{Flow: "a", Direction: "to-responder", From: "s1", To: "s2", Samples: 2048, MinNs: 587, MedianNs: 7595, P99Ns: 29568, MaxNs: 31326},
			{Flow: "a", Direction: "to-requester", From: "s2", To: "s1", Samples: 2, MinNs: 505, MedianNs: 505, P99Ns: 587, MaxNs: 587},
			{Flow: "b", Direction: "to-responder", From: "tor 2", To: "spine<1>", Samples: 1, MinNs: 1_250_000, MedianNs: 1_250_000, P99Ns: 1_250_000, MaxNs: 1_250_000},
		},
		HopStops: []flows.HopStop{
			{Conn: 1, Flow: "b", Direction: "to-responder", From: "tor 2", To: "spine<1>", Index: 4711,
				Detail: "PSN 12 (RC_RDMA_WRITE_MIDDLE) at spine<1>, want PSN 11 (RC_RDMA_WRITE_MIDDLE), the next copy at tor 2"},
			{Conn: 0, Flow: "a", Direction: "to-requester", From: "s2", To: "s1", Index: -1,
				Detail: "1 copy at s2 never reached s1, from PSN 7 (RC_ACK)"},
		}}
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	wantHops := [][]string{
		{"a", "to-responder", "s1 → s2", "2048", "587ns", "7.595µs", "29.568µs", "31.326µs"},
		{"a", "to-requester", "s2 → s1", "2", "505ns", "505ns", "587ns", "587ns"},
		{"b", "to-responder", "tor 2 → spine<1>", "1", "1.25ms", "1.25ms", "1.25ms", "1.25ms"},
	}
	if got := tableRows(t, s, `<table id="hops">`); !reflect.DeepEqual(got, wantHops) {
		t.Errorf("hops table:\n%s", rowsDiff(wantHops, got))
	}
	wantStops := [][]string{
		{"1", "b", "to-responder", "tor 2 → spine<1>", "4711", "PSN 12 (RC_RDMA_WRITE_MIDDLE) at spine<1>, want PSN 11 (RC_RDMA_WRITE_MIDDLE), the next copy at tor 2"},
		{"0", "a", "to-requester", "s2 → s1", "end of trace", "1 copy at s2 never reached s1, from PSN 7 (RC_ACK)"},
	}
	if got := tableRows(t, s, `<table id="hop-stops">`); !reflect.DeepEqual(got, wantStops) {
		t.Errorf("hop stops table:\n%s", rowsDiff(wantStops, got))
	}
	if want := "Median and p99 are exact up to 8.191µs"; !strings.Contains(s, want) {
		t.Errorf("report.html lacks %q", want)
	}
	// Both tables are in the flows section, after the flows table.
	if f, h, st := strings.Index(s, `<table id="flows">`), strings.Index(s, `<table id="hops">`), strings.Index(s, `<table id="hop-stops">`); f < 0 || !(f < h && h < st) {
		t.Errorf("flows, hops, hop stops tables at %d, %d, %d; want in that order", f, h, st)
	}

	r.Flows.Hops, r.Flows.HopStops = nil, nil
	page, err = HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, no := range []string{"Per-hop latency", `id="hops"`, "Hop stops", `id="hop-stops"`} {
		if strings.Contains(string(page), no) {
			t.Errorf("a page without hops has %q", no)
		}
	}
}
