package flows

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// TestHopBucket: latencies up to HopExactNs are exact; above, a bucket's
// least value keeps 7 significant bits (less than 1/128 below).
func TestHopBucket(t *testing.T) {
	for _, tt := range []struct{ v, lower int64 }{
		{0, 0}, {1, 1}, {8191, 8191}, {8192, 8192}, {8255, 8192}, {8256, 8256}, {10000, 9984},
		{1_000_000, 999424}, {1 << 40, 1 << 40}, {-5, 0},
	} {
		if got := hopLower(hopBucket(tt.v)); got != tt.lower {
			t.Errorf("hopLower(hopBucket(%d)) = %d, want %d", tt.v, got, tt.lower)
		}
	}
}

// TestHopTracker: copies match 1:1 in order per hop; drop-tagged copies
// have no successor; percentiles are nearest-rank; copies left at the end
// are reported.
func TestHopTracker(t *testing.T) {
	h := NewHopTracker([]string{"a", "b", "c"})
	h.SetRoute(0, "f", model.ToResponder, []uint8{0, 1, 2})
	pk := func(sw uint8, ts int64, psn roce.PSN, ev roce.Event) *model.Pkt {
		return &model.Pkt{Conn: 0, Dir: model.ToResponder, Switch: sw, TimeNs: ts, PSN: psn, Op: roce.RCWriteMiddle, Event: ev}
	}
	// PSN 0..99 at a at 1000·i, at b 100+i ns later; b drops PSN 50;
	// the rest reach c 1000 ns after b, but for PSN 99, still in flight.
	for i := range int64(100) {
		h.Observe(pk(0, 1000*i, roce.PSN(i), roce.EventNone))
		ev := roce.EventNone
		if i == 50 {
			ev = roce.EventDrop
		}
		h.Observe(pk(1, 1000*i+100+i, roce.PSN(i), ev))
		if i != 50 && i != 99 {
			h.Observe(pk(2, 1000*i+1100+i, roce.PSN(i), roce.EventNone))
		}
	}
	hops, stops := h.Finish()
	want := []HopLatency{
		{Flow: "f", Direction: "to-responder", From: "a", To: "b", Samples: 100, MinNs: 100, MedianNs: 149, P99Ns: 198, MaxNs: 199},
		{Flow: "f", Direction: "to-responder", From: "b", To: "c", Samples: 98, MinNs: 1000, MedianNs: 1000, P99Ns: 1000, MaxNs: 1000},
	}
	if len(hops) != 2 || hops[0] != want[0] || hops[1] != want[1] {
		t.Errorf("Finish() hops = %+v\nwant %+v", hops, want)
	}
	if len(stops) != 1 || stops[0].Detail != "1 copy at b never reached c, from PSN 99 (RC_RDMA_WRITE_MIDDLE)" || stops[0].Index != -1 {
		t.Errorf("Finish() stops = %+v, want PSN 99 left at b", stops)
	}
	if s, ok := h.Lost(0); !ok || s.From != "b" || s.To != "c" {
		t.Errorf("Lost(0) = %+v, %v; want b -> c", s, ok)
	}
}

// TestHopTrackerCNPAndBound: CNPs are not matched (another priority may
// pass the connection's packets); copies that never reach the next switch
// stop the connection at MaxHopPending.
func TestHopTrackerCNPAndBound(t *testing.T) {
	h := NewHopTracker([]string{"a", "b"})
	h.SetRoute(0, "f", model.ToRequester, []uint8{0, 1})
	ack := func(sw uint8, ts int64, psn roce.PSN) *model.Pkt {
		return &model.Pkt{Conn: 0, Dir: model.ToRequester, Switch: sw, TimeNs: ts, PSN: psn, Op: roce.RCAcknowledge, Kind: model.KindAck}
	}
	cnp := &model.Pkt{Conn: 0, Dir: model.ToRequester, Switch: 0, TimeNs: 5, Op: roce.CNP, Kind: model.KindCNP}
	h.Observe(ack(0, 0, 1))
	h.Observe(cnp)
	cnp2 := *cnp
	cnp2.Switch, cnp2.TimeNs = 1, 100 // overtakes the ACK at b
	h.Observe(&cnp2)
	h.Observe(ack(1, 500, 1))
	hops, stops := h.Finish()
	if len(hops) != 1 || hops[0].Samples != 1 || hops[0].MinNs != 500 || stops != nil {
		t.Errorf("Finish() = %+v, %+v; want one ACK sample of 500 ns, no stop", hops, stops)
	}

	h = NewHopTracker([]string{"a", "b"})
	h.SetRoute(0, "f", model.ToRequester, []uint8{0, 1})
	for i := range MaxHopPending + 1 {
		h.Observe(ack(0, int64(i), roce.PSN(i)))
	}
	_, stops = h.Finish()
	if len(stops) != 1 || stops[0].Detail != "over 65536 copies at a with none at b" || stops[0].Index != 0 {
		t.Errorf("Finish() stops = %+v, want the bound", stops)
	}
}
