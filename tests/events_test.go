package tests

import (
	"fmt"
	"os"
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

// TestHeldFirstAndNeighbours holds the first packet of a connection, and
// neighbours of one message, on sim: every run is valid and passes, the
// holds are measured from each packet's own arrival (the hold its mirror
// copy carries), exactly as configured, and a reorder's overtakers are the
// packets that left while it was held. Measured from a predecessor's
// departure, these runs failed events (and gbn start-psn for PSN 0).
func TestHeldFirstAndNeighbours(t *testing.T) {
	const head = `name: NAME
seed: 1
requester: {nic: {personality: cx5, ip-list: [10.0.0.1/24]}}
responder: {nic: {personality: cx5, ip-list: [10.0.0.2/24]}}
dumpers: [{name: dumper-0, weight: 1}]
traffic:
  num-connections: 1
  rdma-verb: write
  num-msgs-per-qp: 2
  mtu: 1024
  message-size: SIZE
  data-pkt-events:
`
	type held struct {
		rel   int   // PSN relative to the IPSN
		hold  int64 // hold_ns
		depth int   // reorder: depth, -1 for a delay
	}
	for _, tc := range []struct {
		name, size, events, frames string
		held                       []held
	}{
		// PSN 0 waits 5 µs: 1..3 arrive first (one NAK), the go-back
		// resends 0..3 before the held 0 leaves as a duplicate.
		{"delay-first", "4096", "    - {qpn: 0, psn: 0, msg: 0, type: delay, delay-us: 5}\n",
			"1 2 3 N0 0 1 2 3 0d A3 4 5 6 7 A7", []held{{0, 5000, -1}}},
		{"reorder-first", "4096", "    - {qpn: 0, psn: 0, msg: 0, type: reorder, overtakers: 1}\n",
			"1 0o 2 3 N0 N1 1 2 3 A3 4 5 6 7 A7", []held{{0, 88, 1}}},
		// Both held 20 µs: PSN 4's hold counts from its own arrival, not
		// from PSN 3's departure (which was 4.2 µs short of it).
		{"delay-neighbours", "8192", "    - {qpn: 0, psn: 3, type: delay, delay-us: 20}\n    - {qpn: 0, psn: 4, type: delay, delay-us: 20}\n",
			"", []held{{3, 20000, -1}, {4, 20000, -1}, {11, 20000, -1}, {12, 20000, -1}}},
		// Every packet held 20 µs: each hold is its own, none has a
		// predecessor's departure to be measured from.
		{"delay-all", "4096", "    - {qpn: 0, psn: all, type: delay, delay-us: 20}\n",
			"0d 1d 2d 3d A3 4d 5d 6d 7d A7", []held{{0, 20000, -1}, {1, 20000, -1}, {2, 20000, -1}, {3, 20000, -1},
				{4, 20000, -1}, {5, 20000, -1}, {6, 20000, -1}, {7, 20000, -1}}},
		// PSN 2 and 3 each wait for one overtaker: PSN 4 leaves first,
		// then both; the second of them is overtaken by PSN 4 only.
		{"reorder-neighbours", "8192", "    - {qpn: 0, psn: 2, type: reorder, overtakers: 1}\n    - {qpn: 0, psn: 3, type: reorder, overtakers: 1}\n",
			"", []held{{2, 176, 1}, {3, 88, 1}, {10, 176, 1}, {11, 88, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, tc.name+".yaml")
			y := strings.NewReplacer("NAME", tc.name, "SIZE", tc.size).Replace(head) + tc.events
			if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
			run := runExample(t, file)
			if tc.frames != "" {
				if got := frameSeq(t, run); got != tc.frames {
					t.Errorf("frames:\n got %s\nwant %s", got, tc.frames)
				}
			}
			rep := readReport(t, run)
			ev := rep.Analysis.Checks.Events
			if ev.Verdict != "pass" || len(ev.Events) != len(tc.held) {
				t.Fatalf("events check %s (%s), %d entries; want pass, %d entries", ev.Verdict, ev.Reason, len(ev.Events), len(tc.held))
			}
			for i, e := range ev.Events {
				w := tc.held[i]
				depth := -1
				if e.Depth != nil {
					depth = *e.Depth
				}
				if e.RelPSN != w.rel || e.HoldNs == nil || *e.HoldNs != w.hold || depth != w.depth || e.Verdict != "pass" {
					t.Errorf("entry %d: rel PSN %d hold %v depth %d verdict %s (%s); want rel PSN %d hold %d depth %d pass",
						i, e.RelPSN, e.HoldNs, depth, e.Verdict, e.Detail, w.rel, w.hold, w.depth)
				}
			}
		})
	}
}
