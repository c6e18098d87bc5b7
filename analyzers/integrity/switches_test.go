package integrity_test

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/roce"
)

// fabricPkt is one copy of a merged fabric trace.
type fabricPkt struct {
	sw  uint8
	seq uint64
	src int
}

// fabricTrace is a merged trace of three switches (tor1 = 0, tor2 = 1,
// spine = 2) over two dumpers: switch 0 copies 1..4, switch 1 copies
// 1..3, switch 2 copies 1..3, in stamp order.
func fabricTrace() []fabricPkt {
	return []fabricPkt{
		{0, 1, 0}, {2, 1, 1}, {1, 1, 0}, {0, 2, 1}, {1, 2, 0},
		{2, 2, 1}, {2, 3, 0}, {0, 3, 1}, {0, 4, 0}, {1, 3, 1},
	}
}

func without(ps []fabricPkt, i int) []fabricPkt {
	return append(append([]fabricPkt(nil), ps[:i]...), ps[i+1:]...)
}

// TestFabricIntegrity checks each switch's sequence separately, reasons
// naming the switch, and each switch's copies against its last sequence
// number.
func TestFabricIntegrity(t *testing.T) {
	names := []integrity.SwitchCounters{{Name: "tor1"}, {Name: "tor2"}, {Name: "spine"}}
	lastSeq := func(a, b, c uint64) []integrity.SwitchCounters {
		return []integrity.SwitchCounters{
			{Name: "tor1", LastSeq: integrity.Known(a)},
			{Name: "tor2", LastSeq: integrity.Known(b)},
			{Name: "spine", LastSeq: integrity.Known(c)},
		}
	}
	dup := append(fabricTrace()[:7:7], fabricPkt{2, 3, 1})
	dup = append(dup, fabricTrace()[7:]...)
	late := fabricTrace()
	late[1].seq, late[5].seq = 2, 1 // spine's 2 before its 1 in dumper 1
	tests := []struct {
		name     string
		pkts     []fabricPkt
		sws      []integrity.SwitchCounters
		mirrored integrity.Count
		expect   bool
		want     string // Verdict.String()
		checks   []integrity.Status
	}{
		{
			name: "complete", pkts: fabricTrace(), sws: lastSeq(4, 3, 3), mirrored: integrity.Known(10), expect: true,
			want:   "pass (skipped: received, dumpers)",
			checks: []integrity.Status{integrity.Passed, integrity.Passed, integrity.Passed, integrity.Skipped, integrity.Skipped},
		},
		{
			name: "gap-named", pkts: without(fabricTrace(), 4), sws: names,
			want: "fail: seq: switch tor2: gap: seq 2 missing (between d0 #1 and d1 #4)",
		},
		{
			name: "gap-by-id", pkts: without(fabricTrace(), 4),
			want: "fail: seq: switch 1: gap: seq 2 missing (between d0 #1 and d1 #4)",
		},
		{
			name: "duplicate", pkts: dup, sws: names,
			want: "fail: seq: switch spine: duplicate: seq 3 appears twice (d0 #3 and d1 #3)",
		},
		{
			name: "out-of-order", pkts: late, sws: names,
			want: "fail: seq: switch spine: out of order: seq 1 after seq 2 at trace index 5 (d1 #2)",
		},
		{
			name: "start", pkts: without(fabricTrace(), 2), sws: names, expect: true,
			want: "fail: seq: switch tor2: start: first packet has seq 2 (d0 #1), want 1",
		},
		{
			// The spine's last copy lost after the last one captured:
			// its sequence looks complete, its counter does not.
			name: "tail-lost", pkts: without(fabricTrace(), 6), sws: lastSeq(4, 3, 3), expect: true,
			want: "fail: mirrored: count: trace has 2 copies of switch spine, its last seq is 3",
		},
		{
			name: "total-mirrored-first", pkts: without(fabricTrace(), 6), sws: lastSeq(4, 3, 3), mirrored: integrity.Known(10),
			want: "fail: mirrored: count: trace has 9 packets, switch mirrored 10",
		},
		{
			// A run record of two switches for a trace of three: the
			// spine's copies are of no switch the run lists.
			name: "switch-not-listed", pkts: fabricTrace(), sws: names[:2], expect: true,
			want: "fail: mirrored: trace has 3 copies of switch 2, the run lists 2 switches (ids 0..1)",
		},
		{
			name: "one-switch-reasons-unchanged", pkts: []fabricPkt{{0, 1, 0}, {0, 3, 1}},
			want: "fail: seq: gap: seq 2 missing (between d0 #0 and d1 #0)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chk, err := integrity.NewChecker(integrity.Options{ExpectFirstSeq: tt.expect}, "d0", "d1")
			if err != nil {
				t.Fatal(err)
			}
			idx := [2]int{}
			for i, p := range tt.pkts {
				chk.AddSwitch(p.sw, p.seq, 1000+uint64(i)*10, p.src, idx[p.src])
				idx[p.src]++
			}
			v := chk.Finish(integrity.Counters{SwitchMirrored: tt.mirrored, Switches: tt.sws})
			if got := v.String(); got != tt.want {
				t.Errorf("Finish() = %q, want %q", got, tt.want)
			}
			for i, st := range tt.checks {
				if v.Checks[i].Status != st {
					t.Errorf("Checks[%d] (%s) = %v, want %v (%s)", i, v.Checks[i].Name, v.Checks[i].Status, st, v.Checks[i].Reason)
				}
			}
		})
	}
}

// TestFabricAddFrame: AddFrame reads the switch from the sequence field of
// both copy formats.
func TestFabricAddFrame(t *testing.T) {
	pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 65535})
	chk, _ := integrity.NewChecker(integrity.Options{ExpectFirstSeq: true})
	for _, m := range []roce.MirrorMeta{{Switch: 0, Seq: 1, TimestampNs: 10}, {Switch: 3, Seq: 1, TimestampNs: 20}, {Switch: 3, Seq: 3, TimestampNs: 30}} {
		if !chk.AddFrame(roce.AppendMACMirror(nil, m, false, 1, pfc), -1, 0) {
			t.Fatal("AddFrame = false")
		}
	}
	if got, want := chk.Finish(integrity.Counters{}).Reason, "switch 3: gap: seq 2 missing (between index 1 and index 2)"; got != want {
		t.Errorf("Finish().Reason = %q, want %q", got, want)
	}
}
