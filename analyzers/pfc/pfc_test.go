package pfc

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

var (
	reqIP = netip.MustParseAddr("10.0.0.11")
	rspIP = netip.MustParseAddr("10.0.0.1")
)

// scen feeds a crafted trace to an Analyzer: wrapped PFC copies and RoCE
// packets of connection 0 (requester on port 1, responder on port 2),
// priority 3 (DSCP 24).
type scen struct {
	t   *testing.T
	a   *Analyzer
	idx int
	seq uint64
}

func newScen(t *testing.T, opt Options) *scen {
	conns := []model.Connection{{ID: 0, Verb: model.VerbWrite, Requester: model.Endpoint{IP: reqIP, QPN: 0x100}, Responder: model.Endpoint{IP: rspIP, QPN: 0x200}}}
	opt.Hosts = []Host{{Name: "requester", Port: 1, IPs: []netip.Addr{reqIP}}, {Name: "responder", Port: 2, IPs: []netip.Addr{rspIP}}}
	return &scen{t: t, a: New(model.NewTable(conns), opt)}
}

// pfc feeds a PFC copy for priority 3 with quanta q.
func (s *scen) pfc(ts int64, sent bool, port uint16, q uint16, ev roce.Event) {
	s.seq++
	f := roce.BuildPFC(nil, [6]byte{2}, 1<<3, [8]uint16{3: q})
	s.a.MAC(roce.AppendMACMirror(nil, roce.MirrorMeta{TimestampNs: uint64(ts), Seq: s.seq, Event: ev}, sent, port, f), s.idx)
	s.idx++
}

// data feeds a RoCE packet of connection 0 (toRsp: requester → responder)
// of 100 bytes with DSCP 24.
func (s *scen) data(ts int64, toRsp bool) { s.dataDSCP(ts, toRsp, 24) }

// dataDSCP is data with DSCP dscp.
func (s *scen) dataDSCP(ts int64, toRsp bool, dscp byte) {
	frame := make([]byte, 100)
	frame[12], frame[13] = 0x08, 0x00
	frame[14], frame[15] = 0x45, dscp<<2
	p := model.Pkt{Index: s.idx, TimeNs: ts, Conn: 0, Dir: model.ToResponder, Kind: model.KindData, SrcIP: model.IPFrom(reqIP), DstIP: model.IPFrom(rspIP), Delivered: true}
	if !toRsp {
		p.Dir, p.Kind, p.SrcIP, p.DstIP = model.ToRequester, model.KindAck, model.IPFrom(rspIP), model.IPFrom(reqIP)
	}
	s.a.Observe(&p, frame, len(frame))
	s.idx++
}

// twoHop: the responder pauses the switch (port 2), the switch pauses the
// requester (port 1), the requester's data stalls. violate adds a data
// packet 10 µs after the pause.
func twoHop(s *scen, violate bool) {
	s.data(1000, true)
	s.data(2000, true)
	s.pfc(10000, false, 2, 0xFFFF, roce.EventNone) // responder → switch XOFF
	s.data(10500, true)                            // queued toward port 2
	s.pfc(20000, true, 1, 0xFFFF, roce.EventNone)  // switch → requester XOFF
	s.data(20500, true)
	s.data(21000, true) // reaction 1000 ns
	if violate {
		s.data(30000, true)
	}
	s.pfc(40000, false, 2, 0, roce.EventNone) // responder XON
	s.pfc(41000, true, 1, 0, roce.EventNone)  // switch XON
	s.data(42000, true)
	s.data(101000, false)
}

func TestTwoHop(t *testing.T) {
	s := newScen(t, Options{})
	twoHop(s, false)
	r := s.a.Finish()
	if r.Verdict != model.Pass || r.Frames != 4 || r.SpanNs != 100000 {
		t.Fatalf("Finish = %v %q, %d frames, span %d; want pass, 4, 100000", r.Verdict, r.Reason, r.Frames, r.SpanNs)
	}
	if r.ReactionBoundNs != 2017+7 {
		t.Errorf("ReactionBoundNs = %d, want %d", r.ReactionBoundNs, 2017+7)
	}
	p1, p2 := r.Port(1, 3), r.Port(2, 3)
	if p1 == nil || p2 == nil || len(r.Ports) != 2 {
		t.Fatalf("Ports = %+v", r.Ports)
	}
	want1 := DirStats{Frames: 2, XOFF: 1, XON: 1, Quanta: 0xFFFF, Episodes: 1, PausedNs: 21000, PausedUnclippedNs: 21000, PauseRatio: 0.21}
	got1 := p1.Sent
	if got1.MaxReactionNs == nil || *got1.MaxReactionNs != 1000 {
		t.Errorf("port 1 max reaction = %v, want 1000", got1.MaxReactionNs)
	}
	got1.MaxReactionNs = nil
	if got1 != want1 {
		t.Errorf("port 1 sent = %+v, want %+v", got1, want1)
	}
	want2 := DirStats{Frames: 2, XOFF: 1, XON: 1, Quanta: 0xFFFF, Episodes: 1, PausedNs: 30000, PausedUnclippedNs: 30000, PauseRatio: 0.3, SlowReceiver: 1}
	if p2.Received != want2 {
		t.Errorf("port 2 received = %+v, want %+v", p2.Received, want2)
	}
	if len(r.Warnings) != 2 {
		t.Errorf("Warnings = %q, want 2 (ratios 21%% and 30%%)", r.Warnings)
	}
	if len(r.Episodes) != 2 {
		t.Fatalf("Episodes = %+v", r.Episodes)
	}
	rx, tx := r.Episodes[0], r.Episodes[1]
	if rx.Direction != DirReceived || rx.Kind != KindSlowReceiver || rx.End != EndXON || rx.DurationNs != 30000 {
		t.Errorf("episode 0 = %+v", rx)
	}
	if tx.Direction != DirSent || tx.ReactionNs == nil || *tx.ReactionNs != 1000 || *tx.LastFrameIndex != 6 || tx.DurationNs != 21000 {
		t.Errorf("episode 1 = %+v", tx)
	}
	if len(r.Causality) != 1 {
		t.Fatalf("Causality = %+v", r.Causality)
	}
	c := r.Causality[0]
	if len(c.Chain) != 2 || c.Chain[0].Port != 1 || c.Chain[1].Port != 2 || c.Chain[1].Direction != DirReceived ||
		c.Origin.Kind != KindSlowReceiver || c.Origin.Host != "responder" {
		t.Fatalf("causality = %+v", c)
	}
	st := c.Chain[0].Flows
	if len(st) != 1 || *st[0].LastBeforeNs != 10500 || st[0].During != 2 || st[0].FirstAfterNs == nil || *st[0].FirstAfterNs != 42000 {
		t.Errorf("stalled flows = %+v", st)
	}
	if q := c.Chain[1].Flows; len(q) != 1 || q[0].During != 3 || q[0].Direction != "to-responder" {
		t.Errorf("queued flows = %+v", q)
	}
	if len(r.SlowReceivers) != 1 || r.SlowReceivers[0].Episodes != 1 || r.SlowReceivers[0].Host != "responder" {
		t.Errorf("SlowReceivers = %+v", r.SlowReceivers)
	}
}

func TestViolation(t *testing.T) {
	s := newScen(t, Options{})
	twoHop(s, true)
	r := s.a.Finish()
	want := Violation{Port: 1, Host: "requester", Priority: 3, Episode: 1, PauseIndex: 4, PauseNs: 20000, Index: 7, TimeNs: 30000,
		AfterNs: 10000, BoundNs: 2024 + 10, Verdict: model.Fail}
	if r.Verdict != model.Fail || len(r.Violations) != 1 || r.Violations[0] != want {
		t.Fatalf("Finish = %v %q %+v, want fail with %+v", r.Verdict, r.Reason, r.Violations, want)
	}
	// Within U: inconclusive.
	s = newScen(t, Options{UncertaintyNs: 8000})
	twoHop(s, true)
	if r := s.a.Finish(); r.Verdict != model.Inconclusive || r.Violations[0].Verdict != model.Inconclusive {
		t.Errorf("with U = 8 µs: %v %+v, want inconclusive", r.Verdict, r.Violations)
	}
	// The frame is 7,966 ns beyond the bound: within U + the hosts' pause
	// lateness it is inconclusive, a nanosecond beyond it a failure.
	for _, c := range []struct {
		u, late int64
		want    model.Verdict
	}{{4000, 0, model.Fail}, {4000, 3965, model.Fail}, {4000, 3966, model.Inconclusive}, {0, 7966, model.Inconclusive}} {
		s = newScen(t, Options{UncertaintyNs: c.u, LatenessNs: c.late})
		twoHop(s, true)
		r := s.a.Finish()
		v := r.Violations[len(r.Violations)-1]
		if r.Verdict != c.want || v.Index != 7 || v.Verdict != c.want || r.LatenessNs != c.late {
			t.Errorf("U = %d, lateness = %d: %v %q %+v, want %v", c.u, c.late, r.Verdict, r.Reason, r.Violations, c.want)
		}
		if c.u == 0 && len(r.Violations) != 1 {
			t.Errorf("U = 0, lateness = %d: violations %+v, want only the late frame (lateness never makes an early one doubtful)", c.late, r.Violations)
		}
		if c.want == model.Inconclusive && c.late > 0 && !strings.Contains(r.Reason, "pause lateness") {
			t.Errorf("U = %d, lateness = %d: reason %q does not name the pause lateness", c.u, c.late, r.Reason)
		}
	}
	// The frames 500 and 1,000 ns after the XOFF are 1,534 and 1,034 ns
	// within the bound: certainly within it when the XOFF's stamp is at
	// most W = 1,034 ns after its departure, whatever U; at W = 1,035 the
	// second is doubtful. W defaults to U (-1: unset).
	for _, c := range []struct {
		u, w     int64
		listed   []int // indices of the listed violations
		wantSent int64
	}{{8000, 1034, []int{7}, 1034}, {8000, 1035, []int{6, 7}, 1035}, {8000, 0, []int{7}, 0}, {8000, -1, []int{5, 6, 7}, 8000},
		{0, 1035, []int{6, 7}, 1035}} {
		o := Options{UncertaintyNs: c.u}
		if c.w >= 0 {
			o.SentUncertaintyNs = &c.w
		}
		s = newScen(t, o)
		twoHop(s, true)
		r := s.a.Finish()
		var listed []int
		for _, v := range r.Violations {
			listed = append(listed, v.Index)
		}
		want := model.Inconclusive
		if c.u == 0 {
			want = model.Fail // 7,966 ns beyond the bound, U = 0
		}
		if fmt.Sprint(listed) != fmt.Sprint(c.listed) || r.Verdict != want || r.SentUncertaintyNs != c.wantSent {
			t.Errorf("U = %d, W = %d: %v, violations at %v, W %d; want %v at %v, W %d", c.u, c.w, r.Verdict, listed, r.SentUncertaintyNs,
				want, c.listed, c.wantSent)
		}
	}
}

// TestViolationsBeyondTheList: past MaxViolations listed violations, the
// unlisted ones keep their own verdicts (inconclusive ones are not failures),
// and a failure after the list is still a failure.
func TestViolationsBeyondTheList(t *testing.T) {
	for _, failLast := range []bool{false, true} {
		s := newScen(t, Options{LatenessNs: 50_000})
		s.data(1000, true)
		s.pfc(10000, true, 1, 0xFFFF, roce.EventNone) // switch → requester XOFF: 335.5 µs
		ts := int64(20000)
		for range MaxViolations + 50 {
			s.data(ts, true) // 10..20 µs after the XOFF: beyond the bound, within the lateness
			ts += 10
		}
		if failLast {
			s.data(ts+100_000, true) // ≈ 120 µs after the XOFF: beyond bound + lateness
		}
		r := s.a.Finish()
		want := model.Inconclusive
		if failLast {
			want = model.Fail
		}
		if r.Verdict != want || len(r.Violations) != MaxViolations {
			t.Errorf("fail after the list %v: %v %q with %d listed, want %v with %d", failLast, r.Verdict, r.Reason, len(r.Violations), want, MaxViolations)
		}
		if failLast && !strings.HasPrefix(r.Reason, "1 frames sent while paused") {
			t.Errorf("reason %q, want the one failure counted", r.Reason)
		}
	}
}

func TestStorm(t *testing.T) {
	const ms = 1_000_000
	s := newScen(t, Options{DetectionNs: ms, RestorationNs: 2 * ms})
	s.data(0, true)
	for ts := int64(0); ts <= 3*ms; ts += 150_000 {
		s.pfc(ts, false, 2, 0xFFFF, roce.EventNone)
	}
	s.data(10*ms, true)
	r := s.a.Finish()
	if len(r.Episodes) != 1 {
		t.Fatalf("Episodes = %+v", r.Episodes)
	}
	e := r.Episodes[0]
	end := int64(3*ms) + 335540
	if !e.Storm || e.Kind != KindStorm || e.End != EndExpiry || e.EndNs != end || e.Frames != 21 {
		t.Errorf("episode = %+v, want a storm ending by expiry at %d", e, end)
	}
	var got []string
	var at []int64
	for _, w := range r.Watchdogs {
		got = append(got, w.Kind)
		at = append(at, w.AtNs)
	}
	if len(got) != 3 || got[0] != WatchdogSwitchStorm || at[0] != ms || got[1] != WatchdogNIC || at[1] != 3*ms ||
		got[2] != WatchdogSwitchRestore || at[2] != 5*ms {
		t.Errorf("watchdogs = %v at %v, want switch-storm 1ms, nic 3ms, switch-restore 5ms", got, at)
	}
	if p := r.Port(2, 3); p.Received.Storms != 1 || p.Received.PausedNs != end {
		t.Errorf("port 2 = %+v", p.Received)
	}
}

func TestInjectedAndNoPFC(t *testing.T) {
	s := newScen(t, Options{})
	s.data(0, true)
	if r := s.a.Finish(); r.Verdict != "" || r.Frames != 0 {
		t.Errorf("without PFC copies: %+v, want the zero Result", r)
	}
	s.pfc(1000, true, 1, 100, roce.EventPause)
	s.data(5000, true)
	r := s.a.Finish()
	if len(r.Causality) != 1 || r.Causality[0].Origin.Kind != OriginInjected || r.Episodes[0].End != EndExpiry ||
		r.Episodes[0].DurationNs != 512 || r.Port(1, 3).Sent.Injected != 1 {
		t.Errorf("injected: %+v %+v", r.Causality, r.Episodes)
	}
}

func TestMalformed(t *testing.T) {
	s := newScen(t, Options{})
	f := roce.BuildPFC(nil, [6]byte{2}, 1<<3, [8]uint16{})
	s.a.MAC(roce.AppendMACMirror(nil, roce.MirrorMeta{TimestampNs: 5}, false, 1, f[:16]), 0)
	if r := s.a.Finish(); r.Verdict != model.Fail || len(r.Malformed) != 1 {
		t.Errorf("truncated copy: %v %+v, want fail", r.Verdict, r.Malformed)
	}
}

// TestNothingToCheck: the switch pauses a host on a priority none of its
// frames carries once paused; the reaction check has nothing to look at
// and says skip, with the reason, never pass (issue #35: pause-reaction
// without dscp-list ran its traffic on priority 0 while priority 3 was
// paused, and the check passed with "max reaction -").
func TestNothingToCheck(t *testing.T) {
	const skipOther = "nothing to check: the switch paused port 1 (requester) on priority 3, but no RoCE frame of priority 3 came from it once paused " +
		"(its RoCE frames were on priority 0; see traffic.dscp-list)"
	for _, tc := range []struct {
		name    string
		feed    func(s *scen)
		verdict model.Verdict
		reason  string
	}{
		{"flows on priority 0, pauses on 3", func(s *scen) {
			for i := range int64(20) {
				s.dataDSCP(1000+i*1000, true, 0)
			}
			s.pfc(5000, true, 1, 0xFFFF, roce.EventPause)
			s.pfc(6000, true, 1, 0xFFFF, roce.EventPause)
		}, model.Skip, skipOther},
		{"the flow on priority 3 ended before the pause", func(s *scen) {
			s.data(1000, true)
			s.data(2000, true)
			s.pfc(50000, true, 1, 0xFFFF, roce.EventPause)
			s.dataDSCP(60000, false, 0) // an ACK to the requester: not from it
		}, model.Skip, "nothing to check: the switch paused port 1 (requester) on priority 3, but no RoCE frame of priority 3 came from it once paused " +
			"(its RoCE frames were on priority 3; see traffic.dscp-list)"},
		{"the host sent nothing", func(s *scen) {
			s.dataDSCP(1000, false, 24)
			s.pfc(5000, true, 1, 0xFFFF, roce.EventPause)
		}, model.Skip, "nothing to check: the switch paused port 1 (requester) on priority 3, but no RoCE frame of priority 3 came from it once paused (it sent no RoCE frame; see traffic.dscp-list)"},
		{"a frame of priority 3 after the pause expired: checked", func(s *scen) {
			s.data(1000, true)
			s.pfc(5000, true, 1, 100, roce.EventPause) // 512 ns
			s.data(9000, true)
		}, model.Pass, ""},
		{"received pauses only: nothing paused by the switch", func(s *scen) {
			s.dataDSCP(1000, true, 0)
			s.pfc(5000, false, 2, 0xFFFF, roce.EventNone)
		}, model.Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScen(t, Options{})
			tc.feed(s)
			r := s.a.Finish()
			if r.Verdict != tc.verdict || r.Reason != tc.reason {
				t.Errorf("Finish = %v %q, want %v %q", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
		})
	}
}

// TestRefreshedEpisode: the switch refreshes its pause to the requester
// every 170 µs (65535 quanta: 335.5 µs at 100 Gb/s) for 4 ms; a frame
// sent 215 µs after the last refresh, once the one before it ran out, is
// measured from the oldest pause still in force (the last refresh), not
// from the episode's first pause 3.9 ms earlier: with 400 µs of pause
// lateness it is inconclusive (it was a failure, 3.9 ms "after the
// pause": netns under load). Without the lateness it is still a failure,
// 215 µs after a pause in force.
func TestRefreshedEpisode(t *testing.T) {
	for _, c := range []struct {
		late       int64
		want       model.Verdict
		pauseIndex int
		after      int64
	}{{400_000, model.Inconclusive, 23, 215_000}, {0, model.Fail, 23, 215_000}} {
		s := newScen(t, Options{LatenessNs: c.late})
		s.data(1000, true)
		for i := range 24 { // 0.01 ms .. 3.92 ms, indices 1..24
			s.pfc(10_000+int64(i)*170_000, true, 1, 0xFFFF, roce.EventNone)
		}
		last := int64(10_000 + 23*170_000)
		s.data(last+215_000, true) // index 25
		r := s.a.Finish()
		if len(r.Violations) != 1 {
			t.Fatalf("lateness %d: violations %+v, want 1", c.late, r.Violations)
		}
		v := r.Violations[0]
		if r.Verdict != c.want || v.Verdict != c.want || v.PauseNs != last || v.PauseIndex != c.pauseIndex+1 || v.AfterNs != c.after || v.Index != 25 {
			t.Errorf("lateness %d: %v %+v, want %v from the pause at %d (index %d), after %d", c.late, r.Verdict, v, c.want, last, c.pauseIndex+1, c.after)
		}
	}
}
