package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// frameSeq renders a one-connection run's trace: data and READ responses
// as their PSN relative to the requester's IPSN, ACKs "A", NAKs "N", READ
// requests "Q", followed by the event a packet carries ("d" delay, "o"
// reorder, "+" a duplicate's copy, "x" drop) and, for a spurious or late
// packet, nothing more: the sequence is the wire order at the switch.
func frameSeq(t *testing.T, dir string) string {
	t.Helper()
	rep := readReport(t, dir)
	if len(rep.Connections) != 1 {
		t.Fatalf("%d connections, want 1", len(rep.Connections))
	}
	ipsn := roce.PSN(rep.Connections[0].Requester.IPSN)
	var out []string
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if err := (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p); err != nil {
			return err
		}
		s := fmt.Sprint(p.BTH.PSN().Sub(ipsn))
		switch {
		case p.Opcode == roce.RCAcknowledge && p.AETH.Syndrome().IsNAK():
			s = "N" + s
		case p.Opcode == roce.RCAcknowledge:
			s = "A" + s
		case p.Opcode.IsReadRequest():
			s = "Q" + s
		}
		s += map[roce.Event]string{roce.EventDelay: "d", roce.EventReorder: "o", roce.EventDuplicate: "+", roce.EventDrop: "x"}[p.Mirror().Event]
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestEventsBeyondLoss runs the examples of delay, reorder and duplicate
// events on sim and checks the exact frame sequence the switch saw (the
// report's checks are checked by TestExamples).
func TestEventsBeyondLoss(t *testing.T) {
	for _, tc := range []struct{ example, want string }{
		// The 4th packet of each message waits for the 5th: one NAK when
		// the 5th arrives out of order, a second when the 6th finds the
		// 5th missing (the 4th had closed the first episode), go-back-N
		// from the 5th, an ACK.
		{"reorder-cx5",
			"0 1 2 4 3o 5 6 7 8 9 N3 N4 4 5 6 7 8 9 A9 " +
				"10 11 12 14 13o 15 16 17 18 19 N13 N14 14 15 16 17 18 19 A19 " +
				"20 21 22 24 23o 25 26 27 28 29 N23 N24 24 25 26 27 28 29 A29"},
		// One copy of the 5th packet (not acknowledged: no AckReq), two of
		// the last (each acknowledged again with the last executed PSN).
		{"duplicate-write",
			"0 1 2 3 4 4+ 5 6 7 8 9 9+ 9+ A9 A9 A9 10 11 12 13 14 14+ 15 16 17 18 19 19+ 19+ A19 A19 A19"},
		// The READ request's copy is executed again: 4 responses twice.
		{"duplicate-read", "Q0 Q0+ 0 1 2 3 0 1 2 3 Q4 4 5 6 7"},
		// The last packet held 100 ms: the timeout (58.7 ms) resends the
		// message, which is acknowledged; the held original arrives last
		// and is acknowledged again.
		{"delay-timeout", "0 1 2 0 1 2 3 A3 4 5 6 7 A7 3d A7"},
		// The ACK held 100 ms: the timeout resends the message, the
		// duplicate's re-ACK and the late ACK follow.
		{"delayed-ack", "0 1 2 3 0 1 2 3 A3 4 5 6 7 A7 A3d"},
	} {
		t.Run(tc.example, func(t *testing.T) {
			dir := exampleRun(t, filepath.Join("..", "examples", tc.example+".yaml"))
			if got := frameSeq(t, dir); got != tc.want {
				t.Errorf("frames:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestNetnsEventsBeyondLoss runs the same examples on the netns testbed:
// each run is valid, every event is applied as often as asked, and no
// check fails (runRealTime). The frame sequences may differ from sim's
// where real-time races are legal (when a second NAK reaches the
// requester), so they are not compared.
func TestNetnsEventsBeyondLoss(t *testing.T) {
	testutil.RequireNetns(t)
	for _, ex := range []string{"reorder-cx5", "duplicate-write", "duplicate-read", "delay-timeout", "delayed-ack"} {
		t.Run(ex, func(t *testing.T) {
			_, dir := runRealTime(t, t.TempDir(), ex, "--testbed", "netns", filepath.Join("..", "examples", ex+".yaml"))
			rep := readReport(t, dir)
			for _, e := range rep.Events {
				if !e.Applied || e.Copies > 0 && e.SeenCopies != e.Copies {
					t.Errorf("event %+v not applied as asked", e)
				}
			}
			if rep.Checks["events"].Verdict != "pass" {
				t.Errorf("events check %+v", rep.Checks["events"])
			}
		})
	}
}
