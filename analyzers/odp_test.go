package analyzers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/trace"
)

// analyzeODP analyzes script on one READ connection (IPSN 0) with the
// QP timeout 16 (T_tr 268.4 ms) and params p.
func analyzeODP(t *testing.T, script string, p model.Params, opt analyzers.Options) *report.Report {
	t.Helper()
	conns := tracetest.Conns(1, 0, model.VerbRead)
	to := uint8(16)
	p.Timeout = &to
	b := tracetest.Build(t, conns, script, tracetest.Options{})
	r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("odp", b), model.Meta{Connections: conns, Params: p}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestODPReports: every check's verdict on the sequences of Fukuoka et
// al., Analyzing Performance Pitfalls of On-Demand Paging of InfiniBand
// (Figs. 2, 6, 11), and the run's result: an RNR wait passes, a silent
// timeout fails rnr only.
func TestODPReports(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		odp          bool
		verdicts     map[string]model.Verdict
		result       string
	}{
		{"fig2-left", tracetest.ODPRemote, false, map[string]model.Verdict{"gbn": model.Pass, "retransmission": model.Pass,
			"timeout": model.Pass, "rnr": model.Pass}, "result: PASS"},
		// The requester re-sent 527 µs after the response it dropped,
		// sooner than T_tr: a silent restart, reported, not a failure.
		{"fig2-middle", tracetest.ODPLocal, true, map[string]model.Verdict{"gbn": model.Pass, "retransmission": model.Pass,
			"timeout": model.Pass, "rnr": model.Pass}, "result: PASS"},
		{"fig6-left", tracetest.ODPTwoReads, true, map[string]model.Verdict{"gbn": model.Pass, "retransmission": model.Pass,
			"timeout": model.Pass, "rnr": model.Fail}, "result: FAIL (rnr)"},
		{"fig6-middle", tracetest.ODPTwoReadsLocal, true, map[string]model.Verdict{"gbn": model.Pass, "retransmission": model.Pass,
			"timeout": model.Pass, "rnr": model.Fail}, "result: FAIL (rnr)"},
		{"fig11", tracetest.ODPThreeReads, true, map[string]model.Verdict{"gbn": model.Pass, "retransmission": model.Pass,
			"timeout": model.Pass, "rnr": model.Pass}, "result: PASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyzeODP(t, tc.script, model.Params{ODP: tc.odp}, analyzers.Options{})
			for name, want := range tc.verdicts {
				if got := r.Verdict(name); got != want {
					t.Errorf("%s = %s (%s), want %s", name, got, reasonOf(r, name), want)
				}
			}
			text := report.Text(r)
			if !strings.HasSuffix(text, tc.result+"\n") {
				t.Errorf("text report ends %q, want %q", text[strings.LastIndex(strings.TrimSuffix(text, "\n"), "\n")+1:], tc.result)
			}
		})
	}
}

// TestODPGoBackOvertaken: Fig. 11 with ODP at the responder only, as
// examples/odp/odp-three-reads.yaml runs it, and the response to the
// go-back's first request arriving before its second request leaves (7 µs
// later: a busy requester, seen on the netns testbed under load). The
// second request is still that go-back's, not a timeout: every check
// passes, and the requester's local_ack_timeout_err of 0 agrees.
func TestODPGoBackOvertaken(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbRead)
	p := model.Params{ODP: true, ODPIPs: []netip.Addr{conns[0].Responder.IP}}
	r := analyzeODP(t, tracetest.ODPThreeReadsOvertaken, p, analyzers.Options{})
	for _, name := range []string{"gbn", "retransmission", "timeout", "rnr"} {
		if got := r.Verdict(name); got != model.Pass {
			t.Errorf("%s = %s (%s), want pass", name, got, reasonOf(r, name))
		}
	}
	if st := r.Checks.Retransmission.Conns[0]; st.Timeouts != 0 || st.Fast != 1 || st.RNR != 1 {
		t.Errorf("go-backs %+v, want 1 rnr, 1 fast, no timeout", st)
	}
}

func reasonOf(r *report.Report, name string) string {
	switch name {
	case "gbn":
		return r.Checks.GBN.Reason
	case "timeout":
		return r.Checks.Timeout.Reason
	case "retransmission":
		return r.Checks.Retransmission.Reason
	case "rnr":
		return r.Checks.RNR.Reason
	}
	return ""
}

// TestODPText: the text report's rnr line and section for Fig. 6 left.
func TestODPText(t *testing.T) {
	r := analyzeODP(t, tracetest.ODPTwoReads, model.Params{ODP: true}, analyzers.Options{})
	text := report.Text(r)
	for _, want := range []string{
		"  rnr             fail  1 RNR NAK, 1 wait (3.456–3.456× the timer), 2 stalls (1 rnr, 1 silent-timeout) (1 silent timeouts (no loss, NAK or RNR NAK in the trace: a NIC dropped a packet silently): conn 0 psn 1 (rel 1) stalled 499.923ms)\n",
		"rnr waits (rnr_retry 7 (infinite)):\n  conn 0 psn 0 (rel 0) index 1: rnr timer=14 (1.28ms), #1 in a row: retry index 3 after 4.424ms (3.456× the timer) pass\n",
		"rnr stalls:\n  conn 0 psn 0 (rel 0) index 3: rnr after 4.565ms (rnr)\n  conn 0 psn 1 (rel 1) index 6: silent-timeout after 499.923ms (timeout): no loss, NAK or RNR NAK in the trace since the connection's previous go-back\n",
		"  rnr counters not compared: no NIC counters\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

// TestODPRestartText: the timeouts section of the text report says what
// happened on Fig. 2 middle: the READ re-issued from rel 0 (the response
// the requester's page fault dropped), no timer, answered (was "rel 1: 1
// retries, unresolved", the PSN after the delivered response).
func TestODPRestartText(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"fig2-middle", tracetest.ODPLocal, "  conn 0 rel 0: 1 READ restart (the requester's page fault, no timer), recovered: 522µs\n"},
		// The re-issued READ is not answered in the trace.
		{"fig2-middle-cut", "Q0:1 @5000 r0 @522000 Q0:1", "  conn 0 rel 0: 1 READ restart (the requester's page fault, no timer), unresolved: 522µs\n"},
		// A restart, then the timer (268 ms after the restart): the
		// episode is both, and is reported as the timeouts were.
		{"restart-then-timeout", "Q0:1 @5000 r0 @522000 Q0:1 @300000000 Q0:1 r0",
			"  conn 0 rel 0: 2 retries (1 a READ restart after the requester's page fault), recovered: 522µs 300ms\n"},
		{"restart-then-timeout-cut", "Q0:1 @5000 r0 @522000 Q0:1 @300000000 Q0:1",
			"  conn 0 rel 0: 2 retries (1 a READ restart after the requester's page fault), unresolved: 522µs 300ms\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := report.Text(analyzeODP(t, tc.script, model.Params{ODP: true}, analyzers.Options{}))
			if !strings.Contains(text, tc.want) {
				t.Errorf("text report lacks %q:\n%s", tc.want, text)
			}
		})
	}
}

// TestODPWhoseHost: the requester's page-fault excuses (gbn's restart,
// timeout's restart interval, rnr's silent-restart) hold only on a
// connection whose requester has ODP (Params.ODPIPs), not on every
// connection of a run with ODP somewhere: with ODP at the responder only,
// Fig. 2 middle's re-issue 522 µs after a delivered response is a
// Go-back-N violation, a timeout below the bound and a silent timeout.
func TestODPWhoseHost(t *testing.T) {
	req, rsp := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.1")
	for _, tc := range []struct {
		name     string
		ips      []netip.Addr
		verdicts map[string]model.Verdict
		class    string
	}{
		{"requester", []netip.Addr{req}, map[string]model.Verdict{"gbn": model.Pass, "timeout": model.Pass, "rnr": model.Pass}, "silent-restart"},
		{"both", []netip.Addr{rsp, req}, map[string]model.Verdict{"gbn": model.Pass, "timeout": model.Pass, "rnr": model.Pass}, "silent-restart"},
		{"responder", []netip.Addr{rsp}, map[string]model.Verdict{"gbn": model.Fail, "timeout": model.Fail, "rnr": model.Fail}, "silent-timeout"},
		{"unrecorded", nil, map[string]model.Verdict{"gbn": model.Pass, "timeout": model.Pass, "rnr": model.Pass}, "silent-restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyzeODP(t, tracetest.ODPLocal, model.Params{ODP: true, ODPIPs: tc.ips}, analyzers.Options{})
			for name, want := range tc.verdicts {
				if got := r.Verdict(name); got != want {
					t.Errorf("%s = %s (%s), want %s", name, got, reasonOf(r, name), want)
				}
			}
			if st := r.Checks.RNR.Stalls; len(st) != 1 || st[0].Class != tc.class {
				t.Errorf("rnr stalls %+v, want one %s", st, tc.class)
			}
		})
	}
}

// TestNoRNRNoODP: a trace without an RNR NAK of a run without ODP has no
// rnr check: not in report.json, the text report or the checks, whatever
// the selection, and an invalid run's neither (the reports of such runs
// are as they were before the rnr check).
func TestNoRNRNoODP(t *testing.T) {
	for _, checks := range [][]string{nil, {"gbn"}, report.AllChecks, {"rnr"}} {
		r := analyzeODP(t, "Q0:1 r0 Q1:2 r1x r2 Q1:2 r1 r2", model.Params{}, analyzers.Options{Checks: checks})
		j, err := r.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Checks map[string]json.RawMessage `json:"checks"`
		}
		if err := json.Unmarshal(j, &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw.Checks["rnr"]; ok || r.Checks.RNR.Verdict != "" || len(raw.Checks) == 0 {
			t.Errorf("checks %v: report.json has checks.rnr (or no checks):\n%s", checks, j)
		}
		if text := report.Text(r); strings.Contains(text, "rnr ") {
			t.Errorf("checks %v: text report has rnr:\n%s", checks, text)
		}
		if slices := r.Failed(); len(slices) != 0 {
			t.Errorf("checks %v: failed %v", checks, slices)
		}
	}
}

// TestRNRSelection: rnr is selected by its name, by the default (nil) and
// by a list of every check of report.AllChecks (lumina analyze's default);
// another list leaves it skipped (not selected); unknown names are
// refused with rnr among the checks named.
func TestRNRSelection(t *testing.T) {
	for _, tc := range []struct {
		checks []string
		want   model.Verdict
		gbn    model.Verdict
	}{
		{nil, model.Pass, model.Pass},
		{report.AllChecks, model.Pass, model.Pass},
		{[]string{"rnr"}, model.Pass, model.Skip},
		{[]string{"gbn", "timeout"}, model.Skip, model.Pass},
	} {
		r := analyzeODP(t, tracetest.ODPRemote, model.Params{}, analyzers.Options{Checks: tc.checks})
		if r.Checks.RNR.Verdict != tc.want || r.Checks.GBN.Verdict != tc.gbn {
			t.Errorf("checks %v: rnr %s (%s), gbn %s; want %s, %s", tc.checks, r.Checks.RNR.Verdict, r.Checks.RNR.Reason, r.Checks.GBN.Verdict, tc.want, tc.gbn)
		}
		if tc.want == model.Skip && r.Checks.RNR.Reason != report.NotSelected {
			t.Errorf("checks %v: rnr reason %q, want %q", tc.checks, r.Checks.RNR.Reason, report.NotSelected)
		}
	}
	_, err := analyzers.Analyze(context.Background(), analyzers.Bytes("x", nil), model.Meta{}, analyzers.Options{Checks: []string{"rnrx"}})
	if !errors.Is(err, analyzers.ErrChecks) || !strings.Contains(err.Error(), "counters, rnr)") {
		t.Errorf("Analyze with check rnrx: %v, want ErrChecks naming rnr", err)
	}
}

// TestRNRJSON: checks.rnr of report.json reads back into the report.
func TestRNRJSON(t *testing.T) {
	r := analyzeODP(t, tracetest.ODPTwoReads, model.Params{ODP: true}, analyzers.Options{})
	j, err := r.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if back.Checks.RNR.Verdict != model.Fail || len(back.Checks.RNR.Stalls) != 2 || back.Checks.RNR.Stalls[1].Class != "silent-timeout" ||
		len(back.Checks.RNR.Waits) != 1 || *back.Checks.RNR.Waits[0].WaitNs != 4_424_000 || !back.Params.ODP {
		t.Errorf("report.json read back: rnr %+v, params %+v", back.Checks.RNR, back.Params)
	}
	var raw struct {
		Checks map[string]json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal(j, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Checks["rnr"]; !ok {
		t.Errorf("report.json has no checks.rnr:\n%s", j)
	}
}

// TestRNRInvalid: an invalid trace with an RNR NAK (a mirror copy
// missing: a hole in the sequence numbers) has rnr skipped, as every
// check.
func TestRNRInvalid(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbRead)
	rd, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, tracetest.ODPRemote, tracetest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := trace.NewPcapWriter(&buf, 128, trace.LinkTypeEthernet)
	for i := 0; ; i++ {
		p, err := rd.Next()
		if err != nil {
			break
		}
		if i != 2 {
			w.WritePacket(p.TimeNs, p.Data, p.OrigLen)
		}
	}
	r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("holes", buf.Bytes()), model.Meta{Connections: conns}, analyzers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid || r.Checks.RNR.Verdict != model.Skip || r.Checks.RNR.Reason != "integrity check failed: the run is invalid" {
		t.Errorf("valid %v, rnr %s (%s); want invalid, skip", r.Valid, r.Checks.RNR.Verdict, r.Checks.RNR.Reason)
	}
}

// TestRNRHTML: report.html marks the RNR wait and the silent timeout of
// Fig. 6 left on the connection's graph (the graph data's rnr marks, ns
// after the trace's first packet, drawn by its rnr script) and lists them;
// a report without the rnr check has neither the marks nor the script.
func TestRNRHTML(t *testing.T) {
	r := analyzeODP(t, tracetest.ODPTwoReads, model.Params{ODP: true}, analyzers.Options{})
	page, err := report.HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	var d struct {
		RNR []struct {
			Conn  int    `json:"conn"`
			Kind  string `json:"kind"`
			S     int64  `json:"s"`
			E     int64  `json:"e"`
			Label string `json:"label"`
		} `json:"rnr"`
	}
	if err := json.Unmarshal([]byte(pageData(t, s)), &d); err != nil {
		t.Fatal(err)
	}
	want := []string{"0 wait 141000 4565000 RNR wait psn 0: 4.424ms (3.456× timer 1.28ms) pass",
		"0 silent 4645000 504568000 silent timeout psn 1: 499.923ms"}
	var got []string
	for _, m := range d.RNR {
		got = append(got, strings.Join([]string{itoa(m.Conn), m.Kind, itoa64(m.S), itoa64(m.E), m.Label}, " "))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("graph data's rnr marks:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"<h2>RNR waits and stalls</h2>", `<table id="rnr-waits">`, `<table id="rnr-stalls">`,
		`<td class="fail">silent-timeout</td>`, "report.html&#39;s rnr marks", "<td>rnr</td><td class=\"fail\">fail</td>"} {
		if !strings.Contains(s, w) && !strings.Contains(s, strings.ReplaceAll(w, "&#39;", "'")) {
			t.Errorf("report.html lacks %s", w)
		}
	}
	plain := analyzeODP(t, "Q0:1 r0", model.Params{}, analyzers.Options{})
	page, err = report.HTML(plain)
	if err != nil {
		t.Fatal(err)
	}
	if p := string(page); strings.Contains(pageData(t, p), `"rnr":`) || strings.Contains(p, "rnr marks") || strings.Contains(p, "RNR waits and stalls") {
		t.Error("report.html without the rnr check has rnr marks, its script or its section")
	}
}

// pageData returns report.html's graph data (#lumina-data).
func pageData(t *testing.T, page string) string {
	t.Helper()
	const open = `<script type="application/json" id="lumina-data">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("report.html has no #lumina-data")
	}
	rest := page[i+len(open):]
	return rest[:strings.Index(rest, "</script>")]
}

func itoa(v int) string     { return strconv.Itoa(v) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

// TestODPCounters: the NIC counters of the paper's sequences as a software
// RNIC with ODP counts them agree with the trace: the requester's restart
// after its page fault (Fig. 2 middle) is no local_ack_timeout_err; the
// READ the responder dropped silently, then executed when re-sent (Fig.
// 6), is no duplicate_request; RNR NAKs match the requester's
// rnr_nak_retry_err and the responder's page_faults.
func TestODPCounters(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbRead)
	for _, tc := range []struct {
		name, script string
		req, rsp     model.Counters
	}{
		{"fig2-middle", tracetest.ODPLocal,
			model.Counters{"local_ack_timeout_err": 0, "implied_nak_seq_err": 0, "rnr_nak_retry_err": 0, "page_faults": 1},
			model.Counters{"duplicate_request": 1, "out_of_buffer": 0}},
		{"fig6-left", tracetest.ODPTwoReads,
			model.Counters{"local_ack_timeout_err": 1, "implied_nak_seq_err": 0, "rnr_nak_retry_err": 1, "page_faults": 0},
			model.Counters{"duplicate_request": 1, "out_of_buffer": 0, "page_faults": 1}},
		{"fig11", tracetest.ODPThreeReads,
			model.Counters{"local_ack_timeout_err": 0, "implied_nak_seq_err": 0, "rnr_nak_retry_err": 1, "page_faults": 0},
			model.Counters{"duplicate_request": 1, "out_of_buffer": 0, "page_faults": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nics := []model.NIC{{Name: "requester", IPs: []netip.Addr{conns[0].Requester.IP}, Before: model.Counters{}, After: tc.req},
				{Name: "responder", IPs: []netip.Addr{conns[0].Responder.IP}, Before: model.Counters{}, After: tc.rsp}}
			to := uint8(16)
			b := tracetest.Build(t, conns, tc.script, tracetest.Options{})
			r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("odp", b),
				model.Meta{Connections: conns, NICs: nics, Params: model.Params{Timeout: &to, ODP: true}}, analyzers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c := r.Checks.Counters; c.Verdict != model.Pass {
				t.Errorf("counters %s (%s): %+v", c.Verdict, c.Reason, c.Mismatches)
			}
			for _, c := range r.Checks.RNR.Counters {
				if !c.OK {
					t.Errorf("rnr counters: %+v", c)
				}
			}
		})
	}
}
