package config

import (
	"reflect"
	"testing"
)

// The event keys of issue #20, exactly as tests written elsewhere spell them.
const eventsYAML = `traffic:
  num-qps: 2
  message-size: 10240
  data-pkt-events:
    - {qpn: 0, psn: 5, iter: 1, type: delay, delay-us: 20}
    - {qpn: 0, psn: 6, iter: 1, type: reorder, overtakers: 2}
    - {qpn: 0, psn: 7, iter: 1, type: duplicate, copies: 1}
    - {qpn: 1, psn: 2, type: reorder, overtakers: 3, max-hold-us: 50, msg: 0}
    - {qpn: 1, psn: 2, type: drop, direction: response, msg: 0}
`

func TestParseEventsBeyondLoss(t *testing.T) {
	tt, err := Parse("t.yaml", []byte(eventsYAML))
	if err != nil {
		t.Fatal(err)
	}
	got := tt.ExpandEvents()
	want := []ExpandedEvent{
		{QP: 0, Msg: 0, PSN: 5, RelPSN: 5, Iter: 1, Type: EventDelay, EventParams: EventParams{DelayNs: 20000}},
		{QP: 0, Msg: 0, PSN: 6, RelPSN: 6, Iter: 1, Type: EventReorder, EventParams: EventParams{Overtakers: 2, MaxHoldNs: 1000000}},
		{QP: 0, Msg: 0, PSN: 7, RelPSN: 7, Iter: 1, Type: EventDuplicate, EventParams: EventParams{Copies: 1}},
		{QP: 1, Msg: 0, PSN: 2, RelPSN: 2, Iter: 1, Type: EventReorder, EventParams: EventParams{Overtakers: 3, MaxHoldNs: 50000}},
		{QP: 1, Msg: 0, PSN: 2, RelPSN: 2, Iter: 1, Type: EventDrop, EventParams: EventParams{Direction: DirResponse}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExpandEvents =\n%+v\nwant\n%+v", got, want)
	}
	// Marshal keeps every key: parsing the output again gives the same events.
	out, err := tt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("m.yaml", out)
	if err != nil {
		t.Fatalf("Parse(Marshal()) = %v\n%s", err, out)
	}
	if g := again.ExpandEvents(); !reflect.DeepEqual(g, want) {
		t.Errorf("after a Marshal round trip: %+v", g)
	}
}

func TestParseEventErrors(t *testing.T) {
	for _, tc := range []struct{ name, events, want string }{
		{"delay without delay-us", "{qpn: 0, psn: 1, type: delay}",
			"t.yaml:4:7: type delay needs delay-us: the hold in µs, e.g. delay-us: 20"},
		{"reorder without overtakers", "{qpn: 0, psn: 1, type: reorder, max-hold-us: 10}",
			"t.yaml:4:7: type reorder needs overtakers: how many later packets pass it, e.g. overtakers: 2"},
		{"duplicate without copies", "{qpn: 0, psn: 1, type: duplicate}",
			"t.yaml:4:7: type duplicate needs copies: how many copies follow it, e.g. copies: 1"},
		{"copies on drop", "{qpn: 0, psn: 1, type: drop, copies: 2}",
			"t.yaml:4:44: copies applies to type duplicate only (this event is drop)"},
		{"max-hold on delay", "{qpn: 0, psn: 1, type: delay, delay-us: 5, max-hold-us: 9}",
			"t.yaml:4:63: max-hold-us applies to type reorder only (this event is delay)"},
		{"copies range", "{qpn: 0, psn: 1, type: duplicate, copies: 256}",
			"t.yaml:4:49: copies: want 1..255, got 256 (copies: identical copies after the packet)"},
		{"delay range", "{qpn: 0, psn: 1, type: delay, delay-us: 4294968}",
			"t.yaml:4:47: delay-us: want 1..4294967, got 4294968 (delay-us is the hold in µs; the switch counts 32-bit ns)"},
		{"direction spelling", "{qpn: 0, psn: 1, type: drop, direction: reponse}",
			`t.yaml:4:47: direction: want data, response or request, got "reponse"; did you mean "response"?`},
		{"response on READ", "{qpn: 0, psn: 1, type: drop, direction: response}",
			"t.yaml:4:47: direction: response on QP 0, a READ QP: its responder's packets are the READ responses, which are its data packets; omit direction (direction: request addresses its READ requests)"},
		{"request on WRITE", "{qpn: 0, psn: 1, type: drop, direction: request}",
			"t.yaml:4:47: direction: request on QP 0, a write QP: its requests are its data packets; omit direction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verb := "write"
			if tc.name == "response on READ" {
				verb = "read"
			}
			in := "traffic:\n  rdma-verb: " + verb + "\n  data-pkt-events:\n    - " + tc.events + "\n"
			_, err := Parse("t.yaml", []byte(in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse(%q) = %v\nwant %s", in, err, tc.want)
			}
		})
	}
}

// A data event and a response event on the same packet do not overlap;
// two response events on it do.
func TestResponseEventsOverlap(t *testing.T) {
	ok := "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop}\n    - {qpn: 0, psn: 1, type: delay, delay-us: 3, direction: response}\n"
	if _, err := Parse("t.yaml", []byte(ok)); err != nil {
		t.Errorf("data and response event on one PSN: %v", err)
	}
	bad := "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: drop, direction: response}\n    - {qpn: 0, psn: 1, type: delay, delay-us: 3, direction: response}\n"
	want := "t.yaml:4:7: conflicting events: this delay and the drop event at 3:7 both match qpn 0, psn 1, iter 1 in every message"
	if _, err := Parse("t.yaml", []byte(bad)); err == nil || err.Error() != want {
		t.Errorf("two response events on one PSN: %v\nwant %s", err, want)
	}
}
