package rnr_test

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/rnr"
)

// t0 is the trace time of a Timed script's first packet.
const t0 = 1_000_100

// check runs the retransmission tracker and the rnr analyzer over script
// on one connection of verb (IPSN 0), as the pipeline does.
func check(t *testing.T, verb model.Verb, script string, opt rnr.Options, nics []model.NIC) rnr.Result {
	t.Helper()
	conns := tracetest.Conns(1, 0, verb)
	tab, pkts := tracetest.Script(t, conns, script)
	tr := retransmission.New(tab, retransmission.Options{})
	a := rnr.New(tab, opt)
	for i := range pkts {
		tr.Observe(&pkts[i])
		a.Observe(&pkts[i])
	}
	rt := tr.Finish()
	return a.Finish(rnr.Inputs{Retrans: &rt, NICs: nics})
}

func ns(v int64) *int64 { return &v }

// TestPaperSequences checks the waits, stalls and verdicts of the paper's
// sequences (Fukuoka et al., Analyzing Performance Pitfalls of On-Demand
// Paging of InfiniBand, Figs. 2, 6, 11; tracetest.ODP*).
func TestPaperSequences(t *testing.T) {
	fig2Wait := rnr.Wait{Conn: 0, PSN: 0, RelPSN: 0, Index: 1, TimeNs: t0 + 141_000, TimerCode: 14, TimerNs: 1_280_000, InRow: 1,
		RetryIndex: 3, WaitNs: ns(4_424_000), Ratio: 3.456, Verdict: model.Pass}
	fig2Stall := rnr.Stall{Conn: 0, PSN: 0, RelPSN: 0, Index: 3, TimeNs: t0 + 4_565_000, StallNs: 4_565_000, Trigger: "rnr", Class: rnr.ClassRNR}
	for _, tc := range []struct {
		name, script string
		want         rnr.Result
		reason       string
	}{
		{"fig2-left", tracetest.ODPRemote, rnr.Result{Verdict: model.Pass, RNRRetry: 7, NAKs: 1, Waits: []rnr.Wait{fig2Wait},
			MinRatio: 3.456, MaxRatio: 3.456, Stalls: []rnr.Stall{fig2Stall}}, ""},
		{"fig2-middle", tracetest.ODPLocal, rnr.Result{Verdict: model.Fail, RNRRetry: 7, Waits: []rnr.Wait{},
			Stalls: []rnr.Stall{{Conn: 0, PSN: 0, RelPSN: 0, Index: 2, TimeNs: t0 + 527_000, StallNs: 522_000, Trigger: "timeout",
				Class: rnr.ClassSilentTimeout, Detail: "no loss, NAK or RNR NAK in the trace since the connection's previous go-back"}}},
			"1 silent timeouts (no loss, NAK or RNR NAK in the trace: a NIC dropped a packet silently): conn 0 psn 0 (rel 0) stalled 522µs"},
		{"fig6-left", tracetest.ODPTwoReads, rnr.Result{Verdict: model.Fail, RNRRetry: 7, NAKs: 1, Waits: []rnr.Wait{fig2Wait},
			MinRatio: 3.456, MaxRatio: 3.456, Stalls: []rnr.Stall{fig2Stall,
				{Conn: 0, PSN: 1, RelPSN: 1, Index: 6, TimeNs: t0 + 504_568_000, StallNs: 499_923_000, Trigger: "timeout",
					Class: rnr.ClassSilentTimeout, Detail: "no loss, NAK or RNR NAK in the trace since the connection's previous go-back"}}},
			"1 silent timeouts (no loss, NAK or RNR NAK in the trace: a NIC dropped a packet silently): conn 0 psn 1 (rel 1) stalled 499.923ms"},
		{"fig6-middle", tracetest.ODPTwoReadsLocal, rnr.Result{Verdict: model.Fail, RNRRetry: 7, Waits: []rnr.Wait{},
			Stalls: []rnr.Stall{{Conn: 0, PSN: 0, RelPSN: 0, Index: 2, TimeNs: t0 + 527_000, StallNs: 522_000, Trigger: "timeout",
				Class: rnr.ClassSilentTimeout, Detail: "no loss, NAK or RNR NAK in the trace since the connection's previous go-back"},
				{Conn: 0, PSN: 1, RelPSN: 1, Index: 5, TimeNs: t0 + 500_530_000, StallNs: 500_000_000, Trigger: "timeout",
					Class: rnr.ClassSilentTimeout, Detail: "no loss, NAK or RNR NAK in the trace since the connection's previous go-back"}}},
			"2 silent timeouts (no loss, NAK or RNR NAK in the trace: a NIC dropped a packet silently): conn 0 psn 0 (rel 0) stalled 522µs; conn 0 psn 1 (rel 1) stalled 500ms"},
		{"fig11", tracetest.ODPThreeReads, rnr.Result{Verdict: model.Pass, RNRRetry: 7, NAKs: 1, Waits: []rnr.Wait{fig2Wait},
			MinRatio: 3.456, MaxRatio: 3.456, Stalls: []rnr.Stall{fig2Stall,
				{Conn: 0, PSN: 1, RelPSN: 1, Index: 8, TimeNs: t0 + 6_010_000, StallNs: 10_000, Trigger: "fast", Class: rnr.ClassNAK}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, model.VerbRead, tc.script, rnr.Options{RNRRetry: 7, ODP: true}, nil)
			tc.want.Reason = tc.reason
			tc.want.CountersSkipped = "no NIC counters"
			if !reflect.DeepEqual(got, tc.want) {
				w, _ := json.MarshalIndent(tc.want, "", " ")
				g, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("rnr result = %s\nwant %s", g, w)
			}
		})
	}
}

// TestWaitVsTimer: a wait shorter than the encoded timer fails, one within
// the timestamp uncertainty of it is inconclusive, one as long passes.
func TestWaitVsTimer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waitNs int64
		u      int64
		want   model.Verdict
	}{
		{"equal", 1_280_000, 0, model.Pass},
		{"1ns-short", 1_279_999, 0, model.Fail},
		{"short", 859_000, 0, model.Fail},
		{"short-within-U", 859_000, 500_000, model.Inconclusive},
		{"short-beyond-U", 700_000, 500_000, model.Fail},
		{"long-within-U", 1_500_000, 500_000, model.Inconclusive},
		{"long-beyond-U", 1_780_000, 500_000, model.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tracetest.Timed(tracetest.At{Ns: 0, Tok: "Q0:1"}, tracetest.At{Ns: 141_000, Tok: "R0:14"},
				tracetest.At{Ns: 141_000 + tc.waitNs, Tok: "Q0:1"}, tracetest.At{Ns: 141_000 + tc.waitNs + 5_000, Tok: "r0"})
			got := check(t, model.VerbRead, s, rnr.Options{RNRRetry: 7, UncertaintyNs: tc.u}, nil)
			if len(got.Waits) != 1 || got.Waits[0].WaitNs == nil || *got.Waits[0].WaitNs != tc.waitNs {
				t.Fatalf("waits = %+v, want one of %d ns", got.Waits, tc.waitNs)
			}
			if w := got.Waits[0]; w.Verdict != tc.want || got.Verdict != tc.want {
				t.Errorf("wait %d ns, U %d: verdict %s (check %s: %s), want %s", tc.waitNs, tc.u, w.Verdict, got.Verdict, got.Reason, tc.want)
			}
			if tc.want == model.Fail && !strings.Contains(got.Reason, "RNR waits shorter than the timer") {
				t.Errorf("reason %q does not name the short wait", got.Reason)
			}
		})
	}
}

// TestRNRRetry: RNR NAKs in a row for one WRITE PSN, each followed by a
// retry after the timer: more retries than rnr_retry fail; 7 is infinite.
func TestRNRRetry(t *testing.T) {
	const script = "0 R0:14#0 @1300000 0 R0:14#0 @1300000 0 R0:14#0 @1300000 0 A0"
	for _, tc := range []struct {
		retry    int
		want     model.Verdict
		exceeded []bool
	}{
		{0, model.Fail, []bool{true, true, true}},
		{1, model.Fail, []bool{false, true, true}},
		{2, model.Fail, []bool{false, false, true}},
		{3, model.Pass, []bool{false, false, false}},
		{7, model.Pass, []bool{false, false, false}},
	} {
		got := check(t, model.VerbWrite, script, rnr.Options{RNRRetry: tc.retry}, nil)
		var ex []bool
		var row []int
		for _, w := range got.Waits {
			ex, row = append(ex, w.RetryExceeded), append(row, w.InRow)
		}
		if got.Verdict != tc.want || !reflect.DeepEqual(ex, tc.exceeded) || !reflect.DeepEqual(row, []int{1, 2, 3}) {
			t.Errorf("rnr_retry %d: verdict %s (%s), exceeded %v, in a row %v; want %s, %v, [1 2 3]", tc.retry, got.Verdict, got.Reason, ex, row, tc.want, tc.exceeded)
		}
	}
	// Progress between the NAKs (the ACK of PSN 0) starts a new row.
	got := check(t, model.VerbWrite, "0 R0:14 @1300000 0 A0 1 R1:14 @1300000 1 A1", rnr.Options{RNRRetry: 1}, nil)
	if got.Verdict != model.Pass || len(got.Waits) != 2 || got.Waits[1].InRow != 1 {
		t.Errorf("two PSNs: %s (%s), waits %+v; want pass, the second 1st in its row", got.Verdict, got.Reason, got.Waits)
	}
}

// TestStallClasses: a timeout after a drop is a loss, a go-back after a
// NAK a nak, a READ re-issued after a response gap implied; without an RNR
// NAK or ODP the check does not apply.
func TestStallClasses(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		verb         model.Verb
		class        string
		detail       string
		timeoutNs    int64 // Options.TimeoutNs
		reqODP       bool  // Options.RequesterODP (the run uses ODP on some host in every case)
	}{
		{"loss", "0 1 2x @70000000 2 A2", model.VerbWrite, rnr.ClassLoss, "drop of data psn 2 (index 2)", 0, true},
		{"nak", "0 1x 2 N1 1 2 A2", model.VerbWrite, rnr.ClassNAK, "", 0, true},
		{"implied", "Q0:2 r0x r1 Q0:2 r0 r1", model.VerbRead, rnr.ClassImplied, "", 0, true},
		{"ack-lost", "0 1 A1x @70000000 0 1 A1", model.VerbWrite, rnr.ClassLoss, "drop of ack psn 1 (index 2)", 0, true},
		{"silent", "0 1 @70000000 0 1 A1", model.VerbWrite, rnr.ClassSilentTimeout, "no loss, NAK or RNR NAK in the trace since the connection's previous go-back", 0, true},
		// 70 ms idle against T_tr(14) = 67.1 ms: a timeout could have
		// expired.
		{"silent-over-ttr", "0 1 @70000000 0 1 A1", model.VerbWrite, rnr.ClassSilentTimeout,
			"no loss, NAK or RNR NAK in the trace since the connection's previous go-back", 67_108_864, true},
		// Against T_tr(16) = 268 ms: no timeout can have expired.
		{"silent-restart", "0 1 @70000000 0 1 A1", model.VerbWrite, rnr.ClassSilentRestart,
			"no loss, NAK or RNR NAK in the trace, and re-sent after 70ms, sooner than any transport timeout (T_tr 268.435456ms): " +
				"a NIC dropped a packet and the requester recovered by itself (an ODP requester after its page fault)", 268_435_456, true},
		// The same with ODP at the responder only: a requester with
		// pinned memory has no page fault to recover from by itself, so
		// its re-send sooner than T_tr is a silent timeout (one that
		// fired early: the timeout check fails it).
		{"silent-pinned-requester", "0 1 @70000000 0 1 A1", model.VerbWrite, rnr.ClassSilentTimeout,
			"no loss, NAK or RNR NAK in the trace since the connection's previous go-back", 268_435_456, false},
		{"silent-pinned-requester-read", "Q0:1 r0 Q1:1 @70000000 Q1:1 r1", model.VerbRead, rnr.ClassSilentTimeout,
			"no loss, NAK or RNR NAK in the trace since the connection's previous go-back", 268_435_456, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, tc.verb, tc.script, rnr.Options{RNRRetry: 7, ODP: true, TimeoutNs: tc.timeoutNs,
				RequesterODP: func(model.Conn) bool { return tc.reqODP }}, nil)
			if len(got.Stalls) != 1 || got.Stalls[0].Class != tc.class || got.Stalls[0].Detail != tc.detail {
				t.Fatalf("stalls = %+v, want one %s (%q)", got.Stalls, tc.class, tc.detail)
			}
			want := model.Pass
			if tc.class == rnr.ClassSilentTimeout {
				want = model.Fail
			}
			if got.Verdict != want {
				t.Errorf("verdict %s (%s), want %s", got.Verdict, got.Reason, want)
			}
			if off := check(t, tc.verb, tc.script, rnr.Options{RNRRetry: 7}, nil); off.Verdict != "" || off.Stalls != nil {
				t.Errorf("without RNR NAK or ODP: %+v, want the zero Result", off)
			}
		})
	}
	if got := check(t, model.VerbWrite, "0 1 A1", rnr.Options{ODP: true}, nil); got.Verdict != model.Skip {
		t.Errorf("ODP run without a stall or RNR NAK: %s (%s), want skip", got.Verdict, got.Reason)
	}
}

// TestCounters: the requests the responder RNR NAK'd (NAKs in a row for
// one PSN counted once) ≤ page_faults + out_of_buffer; the requester's
// rnr_nak_retry_err + req_rnr_retries_exceeded = RNR NAKs it received; a
// NIC without the counters is not compared, and the result says so.
func TestCounters(t *testing.T) {
	req := netip.MustParseAddr("10.0.0.11")
	rsp := netip.MustParseAddr("10.0.0.1")
	nic := func(name string, ip netip.Addr, after model.Counters) model.NIC {
		return model.NIC{Name: name, IPs: []netip.Addr{ip}, Before: model.Counters{}, After: after}
	}
	// One READ NAK'd three times in a row (min RNR timer 1, 10 µs: each
	// retry meets the pending fault), executed when the fault resolves
	// (its response discarded in the wait), answered again as a duplicate.
	const again = "Q0:1 @140000 R0:1 @20000 Q0:1 @140000 R0:1 @20000 Q0:1 @140000 R0:1 @100000 r0 @20000 Q0:1 @80000 r0"
	// Two READs NAK'd once each, the second after progress past the first.
	const two = "Q0:1 @140000 R0:1 @20000 Q0:1 @80000 r0 Q1:1 @140000 R1:1 @20000 Q1:1 @80000 r1"
	// The RNR NAK that exhausts rnr_retry 0: the requester gives up.
	const exhausted = "Q0:1 @140000 R0:14"
	for _, tc := range []struct {
		name     string
		script   string // default tracetest.ODPRemote
		nics     []model.NIC
		want     model.Verdict
		counters []rnr.CounterCheck
		skipped  string
	}{
		{"match", "", []model.NIC{nic("requester", req, model.Counters{"rnr_nak_retry_err": 1}),
			nic("responder", rsp, model.Counters{"page_faults": 1, "out_of_buffer": 0})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 1, NICValue: 1, OK: true},
				{NIC: "responder", Relation: rnr.RelationResponder, Trace: 1, NICValue: 1, OK: true}}, ""},
		{"too-few-faults", "", []model.NIC{nic("requester", req, model.Counters{"rnr_nak_retry_err": 2}),
			nic("responder", rsp, model.Counters{"page_faults": 0, "out_of_buffer": 0})}, model.Fail,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 1, NICValue: 2, OK: false},
				{NIC: "responder", Relation: rnr.RelationResponder, Trace: 1, NICValue: 0, OK: false}}, ""},
		{"no-odp-counters", "", []model.NIC{nic("requester", req, model.Counters{"local_ack_timeout_err": 0}),
			nic("responder", rsp, model.Counters{"out_of_buffer": 3})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "responder", Relation: rnr.RelationResponderNoODP, Trace: 1, NICValue: 3, OK: true}},
			"requester has no rnr_nak_retry_err or req_rnr_retries_exceeded counter"},
		{"no-odp-counters-too-few", "", []model.NIC{nic("responder", rsp, model.Counters{"out_of_buffer": 0})}, model.Pass, nil,
			"responder has no page_faults counter and RNR NAK'd 1 requests, out_of_buffer 0"},
		{"nakd-again", again, []model.NIC{nic("requester", req, model.Counters{"rnr_nak_retry_err": 3, "req_rnr_retries_exceeded": 0}),
			nic("responder", rsp, model.Counters{"page_faults": 1, "out_of_buffer": 0})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 3, NICValue: 3, OK: true},
				{NIC: "responder", Relation: rnr.RelationResponder, Trace: 1, NICValue: 1, OK: true}}, ""},
		{"two-requests", two, []model.NIC{nic("responder", rsp, model.Counters{"page_faults": 2, "out_of_buffer": 0})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "responder", Relation: rnr.RelationResponder, Trace: 2, NICValue: 2, OK: true}}, ""},
		{"two-requests-one-fault", two, []model.NIC{nic("responder", rsp, model.Counters{"page_faults": 1, "out_of_buffer": 0})}, model.Fail,
			[]rnr.CounterCheck{{NIC: "responder", Relation: rnr.RelationResponder, Trace: 2, NICValue: 1, OK: false}}, ""},
		{"retries-exceeded", exhausted, []model.NIC{nic("requester", req, model.Counters{"rnr_nak_retry_err": 0, "req_rnr_retries_exceeded": 1})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 1, NICValue: 1, OK: true}}, ""},
		{"retries-exceeded-only", exhausted, []model.NIC{nic("requester", req, model.Counters{"req_rnr_retries_exceeded": 1})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 1, NICValue: 1, OK: true}}, ""},
		{"retry-err-only", "", []model.NIC{nic("requester", req, model.Counters{"rnr_nak_retry_err": 1})}, model.Pass,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 1, NICValue: 1, OK: true}}, ""},
		{"retries-exceeded-uncounted", exhausted, []model.NIC{nic("requester", req, model.Counters{"rnr_nak_retry_err": 0, "req_rnr_retries_exceeded": 0})}, model.Fail,
			[]rnr.CounterCheck{{NIC: "requester", Relation: rnr.RelationRequester, Trace: 1, NICValue: 0, OK: false}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := tc.script
			if script == "" {
				script = tracetest.ODPRemote
			}
			got := check(t, model.VerbRead, script, rnr.Options{RNRRetry: 7, ODP: true}, tc.nics)
			if got.Verdict != tc.want || !reflect.DeepEqual(got.Counters, tc.counters) || got.CountersSkipped != tc.skipped {
				t.Errorf("verdict %s (%s), counters %+v, skipped %q; want %s, %+v, %q", got.Verdict, got.Reason, got.Counters, got.CountersSkipped,
					tc.want, tc.counters, tc.skipped)
			}
		})
	}
}
