package gbn

import (
	"slices"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
)

// TestEvents checks traces with packets the switch delayed (d), reordered
// (o) or duplicated (+), on requests and on ACKs.
func TestEvents(t *testing.T) {
	tests := []struct {
		name   string
		verb   model.Verb
		script string
		want   []string
		dups   int
		naks   int
	}{
		{name: "reorder by one: one NAK, go-back, duplicate re-ACKed",
			script: "0 1 3 4 2o N2#0 2a 3 4a A2#0 A4#0", dups: 1, naks: 1},
		{name: "reorder, NAK before the held packet",
			script: "0 1 3 N2 4 2o 2a 3 4a A2 A4", dups: 1, naks: 1},
		{name: "two NAKs for one reorder",
			script: "0 1 3 4 2o N2 N2 2a 3 4a A2 A4", dups: 1, naks: 2,
			want: []string{"responder duplicate-nak 2"}},
		{name: "reorder without any NAK",
			script: "0 1 3 4 2o @9000 0 1 2 3 4a A4", dups: 3,
			want: []string{"responder missing-nak 2"}},
		{name: "duplicate WRITE re-ACKed",
			script: "0 1a A1#1 1a+ A1#1", dups: 1},
		{name: "duplicate without AckReq need not be re-ACKed",
			script: "0 1 1+ 2a A2", dups: 1},
		{name: "duplicate with AckReq never re-ACKed",
			script: "0 1a A1 1a+ 2a A2", dups: 1,
			want: []string{"responder duplicate-unanswered 1"}},
		{name: "duplicate re-ACKed with its own PSN",
			script: "0 1 2a A2 1a+ A1 3a A3", dups: 1,
			want: []string{"responder ack-backwards 1", "responder duplicate-ack-wrong-psn 1"}},
		{name: "stale ACK after the duplicate, then the re-ACK",
			script: "0a 1a 1a+ A0 A1 A1", dups: 1},
		{name: "duplicate executed twice: MSN jumps",
			script: "0a A0#1 0a+ A0#2", dups: 1,
			want: []string{"responder msn-jump 0"}},
		{name: "timeout after a dropped ACK, duplicates re-ACKed",
			script: "0 1a A1#1x @9000 0 1a A1#1", dups: 2},
		{name: "delay past the timeout: spurious retransmission",
			script: "0 1 2a @9000 3a A3 @100 3ad A3", dups: 1},
		{name: "delayed ACK behind a later one",
			script: "0a 1a A1 A0d", want: nil},
		{name: "duplicated ACK",
			script: "0a A0 A0+ A0+ 1a A1"},
		{name: "reordered ACK",
			script: "0a 1a 2a A0 A2 A1o"},
		{name: "duplicated NAK",
			script: "0 1x 2 N1 N1+ 1 2a A2", naks: 1},
		{name: "ACK backwards without a tag is still a violation",
			script: "0a 1a A1 A0",
			want:   []string{"responder ack-backwards 0"}},
		{name: "duplicate READ request answered again",
			verb: model.VerbRead, script: "Q0:2 r0 r1 Q0:2+ r0 r1", dups: 1},
		{name: "reordered packet, the go-back starts at the first NAK (the second reached the requester too late)",
			verb: model.VerbWrite, script: "0 1 3 2o 4 N2 N3 2 3 4 A4", dups: 1, naks: 2},
		{name: "duplicate READ request before the responses, answered twice",
			verb: model.VerbRead, script: "Q0:2 Q0:2+ r0 r1 r0 r1", dups: 1},
		{name: "duplicate READ request before the responses, merged with the original",
			verb: model.VerbRead, script: "Q0:2 Q0:2+ r0 r1", dups: 1},
		{name: "duplicate READ request not answered",
			verb: model.VerbRead, script: "Q0:2 r0 r1 Q0:2+", dups: 1,
			want: []string{"responder duplicate-unanswered 0"}},
		{name: "second NAK of a reorder after its repair (the responder's NAK timer posted late)",
			script: "0 1 3 2o 4 N2 2 3 @5000 N3 4a A4", dups: 1, naks: 2},
		{name: "second NAK of a reorder after the ACK that covered it: stale, no retransmission owed (netns, the NAK timer ran late)",
			script: "0 1 3 2o 4 N2 2 3 4a A4 @5000 N3", dups: 1, naks: 2},
		{name: "reordered READ response, implied NAK after it",
			verb: model.VerbRead, script: "Q0:3 r0 r2 r1o Q1:2 r1 r2", dups: 1, naks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verb := tt.verb
			if verb == "" {
				verb = model.VerbWrite
			}
			got, res := run(t, verb, 0, 1, tt.script, Options{CheckStartPSN: true})
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations = %q, want %q\n%+v", got, tt.want, res.Violations)
			}
			if c := res.Conns[0]; c.Duplicates != tt.dups || c.NAKs != tt.naks {
				t.Errorf("duplicates, NAKs = %d, %d, want %d, %d", c.Duplicates, c.NAKs, tt.dups, tt.naks)
			}
		})
	}
}
