package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
)

// TestChecksJSON: report.json has every check under "checks" (integrity
// and pfc too, no top-level pfc), in report order; a report written
// before, with a top-level "pfc", reads back with its pfc section.
func TestChecksJSON(t *testing.T) {
	r := sample()
	r.PFC = pfc.Result{Verdict: model.Fail, Reason: "1 violation", Frames: 3}
	r.Checks.Integrity = &Integrity{Verdict: model.Pass}
	r.Checks.SwitchState = &SwitchState{Verdict: model.Pass}
	r.Checks.EventsApplied = &EventsApplied{Verdict: model.Fail, Reason: "0 of 1 events applied", Total: 1, Missing: []string{"qp 0 msg 0 psn 1 (abs 0x1) iter 2 ecn"}}
	r.Checks.Generator = &Generator{Verdict: model.Pass, Bytes: 8192, Verified: true}
	b, err := r.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	bv, _ := json.Marshal(*r)
	if bp, _ := json.Marshal(r); string(bv) != string(bp) {
		t.Errorf("a Report value marshals as\n%s\na *Report as\n%s", bv, bp)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if _, ok := top["pfc"]; ok {
		t.Errorf("report.json has a top-level pfc: want it in checks")
	}
	var names []string
	dec := json.NewDecoder(strings.NewReader(string(top["checks"])))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		names = append(names, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{CheckIntegrity, CheckSwitchState, CheckEventsApplied, CheckGenerator, CheckGBN, CheckRetransmission, CheckTimeout,
		CheckCNP, CheckCounters, CheckPFC}
	if !slices.Equal(names, want) {
		t.Errorf("checks = %v, want %v", names, want)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.PFC.Frames != 3 || back.Checks.EventsApplied == nil || back.Checks.EventsApplied.Reason != r.Checks.EventsApplied.Reason ||
		back.Integrity != r.Integrity || !slices.Equal(back.Failed(), []string{CheckEventsApplied, CheckTimeout, CheckPFC}) {
		t.Errorf("read back: pfc %+v, events_applied %+v, integrity %+v, failed %v", back.PFC, back.Checks.EventsApplied, back.Integrity, back.Failed())
	}
	var old Report
	if err := json.Unmarshal([]byte(`{"valid": true, "checks": {"gbn": {"verdict": "pass"}}, "pfc": {"verdict": "fail", "frames": 2}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.PFC.Verdict != model.Fail || old.PFC.Frames != 2 || old.Checks.GBN.Verdict != model.Pass {
		t.Errorf("old report read back: pfc %+v, gbn %s; want pfc fail with 2 frames, gbn pass", old.PFC, old.Checks.GBN.Verdict)
	}
}

// TestTextRun: the text report of a run, exactly: its heading, every
// check with its reason and numbers (events not applied, the timeouts
// against the bound) and the result line naming the failed checks.
func TestTextRun(t *testing.T) {
	r := sample()
	r.Trace = TraceInfo{Path: "trace.pcap", Packets: 10, RoCEPackets: 10, Mirrored: true}
	r.Checks.Timeout.RetryCnt = 7
	r.Checks.Timeout.Reason = "1 of 1 timeout episodes outside the bound or over retry_cnt"
	r.Checks.Timeout.Timeouts[0].OutOfBoundIntervals = []int{0, 1}
	r.Checks.SwitchState = &SwitchState{Verdict: model.Pass}
	r.Checks.EventsApplied = &EventsApplied{Verdict: model.Fail, Reason: "0 of 1 events applied", Total: 1,
		Missing: []string{"qp 0 msg 0 psn 1 (abs 0x1) iter 2 ecn"}}
	r.Checks.Generator = &Generator{Verdict: model.Pass, Bytes: 8192, DurationNs: 13434, GoodputGbps: 4.878, Verified: true}
	run := &RunInfo{Test: "t1", Repeat: 0, Seed: 1, Testbed: "sim", NICs: []string{"requester: cx5", "responder: cx5"},
		Notes: []string{"timestamps: uncertainty 0 ns"}}
	want := `lumina run: t1 repeat 0 (testbed sim, seed 1)
nic requester: cx5
nic responder: cx5
timestamps: uncertainty 0 ns
trace: trace.pcap: 10 packets, 10 RoCE, mirror metadata
integrity: pass
connections: 1
  #0 write  qpn 0x0 ipsn 0 ->  qpn 0x0
checks:
  switch_state    pass  0 unexpected event copies, 0 table differences, primary lost 0 times
  events_applied  fail  0 of 1 events applied
  generator       pass  8192 bytes in 13.434µs, 4.878 Gb/s goodput, responder memory verified
  gbn             skip   (not selected)
  retransmission  pass  1 losses (1 fast, 0 timeout, 0 rnr, 0 not retransmitted)
  timeout         fail  1 timeout episodes (1 of 1 timeout episodes outside the bound or over retry_cnt)
  cnp             skip   (not selected)
  counters        skip   (not selected)
events not applied:
  qp 0 msg 0 psn 1 (abs 0x1) iter 2 ecn
losses:
  conn 0 rel 0 iter 0  fast: nack generation 1.1µs, reaction 1.1µs, retransmission 1.1µs
timeouts (T_tr 1µs, bound 1µs .. 4µs, retry_cnt 7; * outside the bound):
  conn 0 rel 0: 2 retries, : 500ns* 8µs* OUT-OF-BOUND
result: FAIL (events_applied, timeout)
`
	if got := TextRun(r, run); got != want {
		t.Errorf("TextRun differs (-want +got):\n-%s\n+%s", strings.ReplaceAll(want, "\n", "\n-"), strings.ReplaceAll(got, "\n", "\n+"))
	}
	r.Valid = false
	r.Checks.Integrity = &Integrity{Verdict: model.Fail, Reason: "seq: gap"}
	if got := TextRun(r, run); !strings.HasSuffix(got, "\nresult: INVALID (integrity)\n") {
		t.Errorf("TextRun of an invalid run ends %q", got[strings.LastIndex(strings.TrimSuffix(got, "\n"), "\n"):])
	}
	run.Error = "traffic: timed out"
	if got := TextRun(r, run); !strings.HasSuffix(got, "\nresult: INVALID (integrity; error: traffic: timed out)\n") ||
		!strings.Contains(got, "\nerror: traffic: timed out\n") {
		t.Errorf("TextRun of a failed run:\n%s", got)
	}
}
