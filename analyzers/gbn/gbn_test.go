package gbn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// run checks script on n connections and returns the violations as
// "side rule rel" strings.
func run(t *testing.T, verb model.Verb, ipsn uint32, n int, script string, opt Options) ([]string, Result) {
	t.Helper()
	conns := tracetest.Conns(n, ipsn, verb)
	tab, pkts := tracetest.Script(t, conns, script)
	c := New(tab, opt)
	for i := range pkts {
		c.Observe(&pkts[i])
	}
	res := c.Finish()
	var got []string
	for _, v := range res.Violations {
		got = append(got, fmt.Sprintf("%s %s %d", v.Side, v.Rule, v.RelPSN))
	}
	return got, res
}

func TestGBN(t *testing.T) {
	tests := []struct {
		name   string
		verb   model.Verb
		ipsn   uint32
		conns  int
		script string
		want   []string
	}{
		{name: "clean", script: "0 1 2 3 A3"},
		{name: "drop middle, NAK, go back", script: "0 1 2x 3 N2 2 3 A3"},
		{name: "coalesced ACKs and duplicates", script: "0 1 A0 2 3 A3 @9000 2 3 A3"},
		{name: "send", verb: model.VerbSend, script: "s0 s1x s2 N1 s1 s2 A2"},
		{name: "tail drop, timeout from the message start", script: "0 1 2 3x @9000 0 1 2 3 A3"},
		{name: "second loss of the retransmission: timeout", script: "0 1 2x 3 N2 2x 3 @9000 2 3 A3"},
		{name: "PSN wrap", ipsn: 0xFFFFFE, script: "0 1 2x 3 4 N2 2 3 4 A4"},
		{name: "two QPs", conns: 2, script: "0/0 1/0 1/1x 0/1 1/2 0/2 1/N1 0/A2 1/1 1/2 1/A2"},
		{name: "gave up after retry_cnt timeouts", script: "0x 0x 0x 0x 0x 0x 0x 0x"},
		{name: "fatal NAK ends the connection", script: "0 1 F1"},
		{name: "RNR NAK, retry from its PSN", verb: model.VerbSend, script: "s0 R0 @9000 s0 A0"},

		{name: "missing NAK", script: "0 1 2x 3 @9000 0 1 2 3 A3",
			want: []string{"responder missing-nak 2"}},
		{name: "missing NAK at the end", script: "0 1 2x 3",
			want: []string{"responder missing-nak 2", "responder incomplete 2"}},
		{name: "duplicate NAK", script: "0 1x 2 N1 3 N1 1 2 3 A3",
			want: []string{"responder duplicate-nak 1"}},
		{name: "duplicate NAK across the PSN wrap", ipsn: 0xFFFFFF, script: "0 1x 2 N1 3 N1 1 2 3 A3",
			want: []string{"responder duplicate-nak 1"}},
		{name: "NAK with the wrong PSN", script: "0 1x 2 N2 1 2 A2",
			want: []string{"responder nak-wrong-psn 2", "requester retransmit-wrong-psn 1"}},
		{name: "NAK without a loss", script: "0 1 N2 2 A2",
			want: []string{"responder unexpected-nak 2"}},
		{name: "retransmission from the wrong PSN", script: "0 1x 2 3 N1 2 3 @9000 1 2 3 A3",
			want: []string{"requester retransmit-wrong-psn 2"}},
		{name: "timeout retransmission skips unacknowledged PSNs", script: "0 1 2x @9000 2 A2",
			want: []string{"requester retransmit-wrong-psn 2"}},
		{name: "skipped retransmission", script: "0 1x 2 3 N1 1 3 N2 2 3 A3",
			want: []string{"requester skipped-retransmission 3"}},
		{name: "skipped retransmission across the wrap", ipsn: 0xFFFFFE, script: "0 1x 2 3 N1 1 3 N2 2 3 A3",
			want: []string{"requester skipped-retransmission 3"}},
		{name: "missing retransmission", script: "0 1x 2 N1",
			want: []string{"requester missing-retransmission 1", "responder incomplete 1"}},
		{name: "ACK going backwards", script: "0 1 A1 2 A0 3 A3",
			want: []string{"responder ack-backwards 0"}},
		{name: "ACK going backwards across the wrap", ipsn: 0xFFFFFE, script: "0 1 2 A2 3 A1 A3",
			want: []string{"responder ack-backwards 1"}},
		{name: "ACK for a PSN not received", script: "0 1 A3 2 3 A3",
			want: []string{"responder ack-unreceived 3"}},
		{name: "new data skips PSNs", script: "0 1 3 A1 @9000 2 3 A3",
			want: []string{"requester psn-gap 3", "responder missing-nak 2"}},
		{name: "never acknowledged", script: "0 1 2",
			want: []string{"requester incomplete 0"}},

		{name: "read clean", verb: model.VerbRead, script: "Q0:3 r0 r1 r2 Q3:1 r3"},
		{name: "read implied NAK", verb: model.VerbRead, script: "Q0:5 r0 r1 r2x r3 r4 Q2:3 r2 r3 r4"},
		{name: "read tail loss, timeout", verb: model.VerbRead, script: "Q0:3 r0 r1 r2x @9000 Q2:1 r2"},
		{name: "read implied NAK across the wrap", verb: model.VerbRead, ipsn: 0xFFFFFD, script: "Q0:5 r0 r1 r2x r3 r4 Q2:3 r2 r3 r4"},
		{name: "read gap repaired without re-issue", verb: model.VerbRead, script: "Q0:3 r0x r1 r2 r0 r1 r2",
			want: []string{"responder unsolicited-retransmission 0", "requester missing-nak 0"}},
		{name: "read re-issued from the wrong PSN", verb: model.VerbRead, script: "Q0:5 r0 r1 r2x r3 r4 Q3:2 r3 r4 @9000 Q2:3 r2 r3 r4",
			want: []string{"requester nak-wrong-psn 3"}},
		{name: "read re-issue with the wrong range", verb: model.VerbRead, script: "Q0:5 r0 r1 r2x r3 r4 Q2:1 r2 @9000 Q3:2 r3 r4",
			want: []string{"requester reissue-wrong-range 2"}},
		{name: "read replay from the wrong PSN", verb: model.VerbRead, script: "Q0:5 r0 r1 r2x r3 r4 Q2:3 r3 r4 @9000 Q2:3 r2 r3 r4",
			want: []string{"responder retransmit-wrong-psn 3"}},
		{name: "read response not requested", verb: model.VerbRead, script: "Q0:2 r0 r1 r2",
			want: []string{"responder response-unrequested 2"}},
		{name: "read re-issue never answered", verb: model.VerbRead, script: "Q0:3 r0 r1x r2 Q1:2",
			want: []string{"responder missing-retransmission 1", "requester incomplete 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verb := tt.verb
			if verb == "" {
				verb = model.VerbWrite
			}
			ipsn := tt.ipsn
			if ipsn == 0 {
				ipsn = 1000
			}
			got, res := run(t, verb, ipsn, max(1, tt.conns), tt.script, Options{})
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("violations of %q =\n  %s\nwant\n  %s", tt.script, strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
				for _, v := range res.Violations {
					t.Logf("%+v", v)
				}
			}
			wantVerdict := model.Pass
			if len(tt.want) > 0 {
				wantVerdict = model.Fail
			}
			if res.Verdict != wantVerdict {
				t.Errorf("Verdict = %v, want %v", res.Verdict, wantVerdict)
			}
		})
	}
}

// TestViolationFields checks that a violation names the connection, side,
// PSN and frame index.
func TestViolationFields(t *testing.T) {
	_, res := run(t, model.VerbWrite, 0xFFFFFF, 1, "0 1x 2 N1 3 N1 1 2 3 A3", Options{})
	if len(res.Violations) != 1 {
		t.Fatalf("violations = %+v, want 1", res.Violations)
	}
	v := res.Violations[0]
	want := Violation{Conn: 0, Side: SideResponder, Rule: RuleDuplicateNAK, PSN: 0, RelPSN: 1, Index: 5, TimeNs: 1_000_600}
	v.Detail = ""
	if v != want {
		t.Errorf("violation = %+v, want %+v", v, want)
	}
}

func TestStats(t *testing.T) {
	_, res := run(t, model.VerbWrite, 5, 1, "0 1x 2 N1 1 2 A2 @9000 1 2 A2", Options{})
	want := ConnStats{Conn: 0, NAKs: 1, NAKsDelivered: 1, Duplicates: 2, Completed: true}
	if len(res.Conns) != 1 || res.Conns[0] != want {
		t.Errorf("Conns = %+v, want %+v", res.Conns, want)
	}
}
