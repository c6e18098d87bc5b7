package analyzers

import (
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/roce"
)

// The fabric of these tests: h1 on tor1 (switch 0), h2 on tor2 (switch
// 2), both ToRs on spine (switch 1); flow a, one WRITE QP from h1 to h2,
// observed at tor1. Data take 600..700 ns from tor1 to the spine (dataLat)
// and 500 ns on to tor2; responses 550 ns per hop.
const (
	tor1, spine, tor2 = 0, 1, 2
	spineToTor2Ns     = 500
	respHopNs         = 550
)

var obsHosts = []tracetest.Host{{Name: "h1", IP: netip.MustParseAddr("10.0.0.1"), Port: 1}, {Name: "h2", IP: netip.MustParseAddr("10.0.0.2"), Port: 2}}

func fabricMeta(conns []model.Connection) model.Meta {
	us := 4.0
	m := model.Meta{Connections: conns, Params: model.Params{MTU: 1024, MinTimeBetweenCNPsUs: &us}}
	for _, h := range obsHosts {
		m.Hosts = append(m.Hosts, model.HostParams{Name: h.Name, IPs: []netip.Addr{h.IP}, MinTimeBetweenCNPsUs: &us})
	}
	m.Fabric = &model.Fabric{
		Switches: []string{"tor1", "spine", "tor2"},
		Routes: []model.Route{
			{From: "h1", To: "h2", Hops: []model.Hop{{Switch: "tor1", In: 1, Out: 200}, {Switch: "spine", In: 201, Out: 202}, {Switch: "tor2", In: 203, Out: 2}}},
			{From: "h2", To: "h1", Hops: []model.Hop{{Switch: "tor2", In: 2, Out: 203}, {Switch: "spine", In: 202, Out: 201}, {Switch: "tor1", In: 200, Out: 1}}},
		},
		Observe: map[string]string{"a": "tor1"},
	}
	return m
}

// fabricTrace builds the trace of script as tor1 sees it (tracetest
// syntax) and every switch's copies: a packet to h2 enters the spine
// dataLat[i] ns after tor1 (600 if absent) and tor2 500 ns later; a
// response left tor2 1100 ns and the spine 550 ns before tor1. edit may
// change the copies of frame i (in route order: tor1, spine, tor2 for
// data, tor2, spine, tor1 for responses; nil entries are left out). It
// returns the merged trace (by stamp, then switch) and tor1's copies
// alone, the one-switch trace of the same run.
func fabricTrace(t *testing.T, conns []model.Connection, script string, dataLat map[int]int64,
	edit func(i int, cs []*tracetest.Frame)) (fabric, alone []byte, frames []tracetest.Frame) {
	t.Helper()
	obs, err := tracetest.Frames(conns, script, tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := conns[0].Requester.IP.As4()
	for i, f := range obs {
		toRsp := [4]byte(f.Data[26:30]) == req
		var cs []*tracetest.Frame
		at := func(sw uint8, ts int64) *tracetest.Frame {
			c := f
			c.Data, c.Switch, c.TimeNs = append([]byte(nil), f.Data...), sw, ts
			if sw != tor1 {
				c.Event = roce.EventNone
			}
			return &c
		}
		if toRsp {
			lat, ok := dataLat[i]
			if !ok {
				lat = 600
			}
			cs = []*tracetest.Frame{at(tor1, f.TimeNs), at(spine, f.TimeNs+lat), at(tor2, f.TimeNs+lat+spineToTor2Ns)}
		} else {
			cs = []*tracetest.Frame{at(tor2, f.TimeNs-2*respHopNs), at(spine, f.TimeNs-respHopNs), at(tor1, f.TimeNs)}
		}
		if edit != nil {
			edit(i, cs)
		}
		for _, c := range cs {
			if c != nil {
				frames = append(frames, *c)
			}
		}
	}
	sort.SliceStable(frames, func(a, b int) bool {
		if frames[a].TimeNs != frames[b].TimeNs {
			return frames[a].TimeNs < frames[b].TimeNs
		}
		return frames[a].Switch < frames[b].Switch
	})
	var only []tracetest.Frame
	for _, f := range frames {
		if f.Switch == tor1 {
			only = append(only, f)
		}
	}
	if fabric, err = tracetest.Pcap(frames, tracetest.Options{}); err != nil {
		t.Fatal(err)
	}
	if alone, err = tracetest.Pcap(only, tracetest.Options{}); err != nil {
		t.Fatal(err)
	}
	return fabric, alone, frames
}

// analyzeFabric analyzes the fabric trace with the fabric's record and
// tor1's copies without it.
func analyzeFabric(t *testing.T, conns []model.Connection, fabric, alone []byte) (fab, one *Report) {
	t.Helper()
	var err error
	if fab, err = Analyze(context.Background(), Bytes("fabric", fabric), fabricMeta(conns), Options{}); err != nil {
		t.Fatal(err)
	}
	m := fabricMeta(conns)
	m.Fabric = nil
	if one, err = Analyze(context.Background(), Bytes("tor1", alone), m, Options{}); err != nil {
		t.Fatal(err)
	}
	if fab.Integrity.Verdict != model.Pass || one.Integrity.Verdict != model.Pass {
		t.Fatalf("integrity = %v %q / %v %q, want pass (each switch's sequence complete)", fab.Integrity.Verdict, fab.Integrity.Reason,
			one.Integrity.Verdict, one.Integrity.Reason)
	}
	return fab, one
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hop(dir, from, to string, n, minNs, med, p99, maxNs int64) flows.HopLatency {
	return flows.HopLatency{Flow: "a", Direction: dir, From: from, To: to, Samples: n, MinNs: minNs, MedianNs: med, P99Ns: p99, MaxNs: maxNs}
}

// TestFabricObservedSwitch: in a clean 3-switch run the per-connection
// checks read tor1's copies only, and decide exactly as on the one-switch
// trace of those copies; the flows analysis reports each hop's latency.
func TestFabricObservedSwitch(t *testing.T) {
	conns := tracetest.FlowConns(obsHosts, []tracetest.Flow{{Name: "a", From: "h1", To: "h2", QPs: 1}})
	fabric, alone, _ := fabricTrace(t, conns, "0 1 2 3a @3000 A3", map[int]int64{0: 600, 1: 610, 2: 620, 3: 700}, nil)
	fab, one := analyzeFabric(t, conns, fabric, alone)
	if g, w := jsonOf(t, fab.Checks), jsonOf(t, one.Checks); g != w {
		t.Errorf("checks with the fabric = %s\nwant (tor1's copies alone) %s", g, w)
	}
	if g, w := jsonOf(t, fab.Flows.Flows), jsonOf(t, one.Flows.Flows); g != w || fab.Flows.Flows[0].Packets != 4 {
		t.Errorf("flows = %s, want %s (4 packets)", g, w)
	}
	want := []flows.HopLatency{
		hop("to-responder", "tor1", "spine", 4, 600, 610, 700, 700),
		hop("to-responder", "spine", "tor2", 4, 500, 500, 500, 500),
		hop("to-requester", "tor2", "spine", 1, 550, 550, 550, 550),
		hop("to-requester", "spine", "tor1", 1, 550, 550, 550, 550),
	}
	if !reflect.DeepEqual(fab.Flows.Hops, want) || fab.Flows.HopStops != nil {
		t.Errorf("hops = %+v, stops %+v\nwant %+v, none", fab.Flows.Hops, fab.Flows.HopStops, want)
	}
	if one.Flows.Hops != nil {
		t.Errorf("hops without a fabric = %+v, want none", one.Flows.Hops)
	}
	txt := report.Text(fab)
	for _, line := range []string{
		"  hop a to-responder tor1 -> spine: 4 samples, min 600 ns, median 610 ns, p99 700 ns, max 700 ns\n",
		"  hop a to-requester spine -> tor1: 1 samples, min 550 ns, median 550 ns, p99 550 ns, max 550 ns\n",
	} {
		if !strings.Contains(txt, line) {
			t.Errorf("report.txt lacks %q:\n%s", line, txt)
		}
	}
}

// dropScript: PSN 2 lost after tor1, the responder's NAK, go-back-N from
// 2, the final ACK.
const dropScript = "0 1 2 3a @3000 N2 @3000 2 3a @3000 A3"

// TestFabricLossElsewhere: a packet dropped at the spine (a drop event,
// or a buffer drop the copies show only by stopping to match) is a loss
// tor1 cannot see: the loss-dependent checks are inconclusive, naming the
// switch and the count.
func TestFabricLossElsewhere(t *testing.T) {
	conns := tracetest.FlowConns(obsHosts, []tracetest.Flow{{Name: "a", From: "h1", To: "h2", QPs: 1}})
	lat := map[int]int64{0: 600, 1: 610, 2: 620, 3: 700, 5: 600, 6: 600}
	for _, tt := range []struct {
		name  string
		edit  func(i int, cs []*tracetest.Frame)
		why   string
		hops  []flows.HopLatency
		stops func(frames []tracetest.Frame) []flows.HopStop
	}{
		{
			name: "drop-event-at-spine",
			edit: func(i int, cs []*tracetest.Frame) {
				if i == 2 {
					cs[1].Event, cs[2] = roce.EventDrop, nil
				}
			},
			why: "connection 0 (flow a): 1 packet dropped at spine, which the observed switch tor1 does not see",
			hops: []flows.HopLatency{
				hop("to-responder", "tor1", "spine", 6, 600, 600, 700, 700),
				hop("to-responder", "spine", "tor2", 5, 500, 500, 500, 500),
				hop("to-requester", "tor2", "spine", 2, 550, 550, 550, 550),
				hop("to-requester", "spine", "tor1", 2, 550, 550, 550, 550),
			},
		},
		{
			name: "buffer-drop-at-spine",
			edit: func(i int, cs []*tracetest.Frame) {
				if i == 2 {
					cs[2] = nil // left the spine's buffer unmirrored: no tag, no copy at tor2
				}
			},
			why: "connection 0 (flow a): copies stop matching between spine and tor2 (PSN 3 (RC_RDMA_WRITE_MIDDLE) at tor2, want PSN 2 (RC_RDMA_WRITE_MIDDLE), the next copy at spine): a packet lost between them",
			hops: []flows.HopLatency{
				// Matching stops at tor2's copy of PSN 3, after the spine's.
				hop("to-responder", "tor1", "spine", 4, 600, 610, 700, 700),
				hop("to-responder", "spine", "tor2", 2, 500, 500, 500, 500),
				hop("to-requester", "tor2", "spine", 2, 550, 550, 550, 550),
				hop("to-requester", "spine", "tor1", 2, 550, 550, 550, 550),
			},
			stops: func(frames []tracetest.Frame) []flows.HopStop {
				idx := -1
				for i, f := range frames {
					if f.Switch == tor2 && roce.PSN(f.Data[14+20+8+9])<<16|roce.PSN(f.Data[14+20+8+10])<<8|roce.PSN(f.Data[14+20+8+11]) == 3 && idx < 0 {
						idx = i
					}
				}
				return []flows.HopStop{{Conn: 0, Flow: "a", Direction: "to-responder", From: "spine", To: "tor2", Index: idx,
					Detail: "PSN 3 (RC_RDMA_WRITE_MIDDLE) at tor2, want PSN 2 (RC_RDMA_WRITE_MIDDLE), the next copy at spine"}}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fabric, alone, frames := fabricTrace(t, conns, dropScript, lat, tt.edit)
			fab, one := analyzeFabric(t, conns, fabric, alone)
			for _, c := range []string{report.CheckGBN, report.CheckRetransmission, report.CheckTimeout, report.CheckCNP} {
				v1, r1 := verdictReason(one, c)
				if v1 != model.Pass && v1 != model.Fail {
					t.Fatalf("%s on tor1's copies = %s %q, want a verdict to make inconclusive", c, v1, r1)
				}
				want := tt.why
				if r1 != "" {
					want += "; " + r1
				}
				if v, r := verdictReason(fab, c); v != model.Inconclusive || r != want {
					t.Errorf("%s = %s %q\nwant inconclusive %q", c, v, r, want)
				}
			}
			if v, r := verdictReason(fab, report.CheckCounters); v != model.Skip {
				t.Errorf("counters = %s %q, want skip (no NIC counters): a skip stays a skip", v, r)
			}
			if !reflect.DeepEqual(fab.Flows.Hops, tt.hops) {
				t.Errorf("hops = %+v\nwant %+v", fab.Flows.Hops, tt.hops)
			}
			var stops []flows.HopStop
			if tt.stops != nil {
				stops = tt.stops(frames)
			}
			if !reflect.DeepEqual(fab.Flows.HopStops, stops) {
				t.Errorf("hop stops = %+v\nwant %+v", fab.Flows.HopStops, stops)
			}
		})
	}
}

// TestFabricMarkElsewhere: a data packet CE-marked at the spine, which
// tor1 forwarded unmarked: the cnp check cannot tell whether a CNP was
// due, and says so; the loss checks keep their verdicts.
func TestFabricMarkElsewhere(t *testing.T) {
	conns := tracetest.FlowConns(obsHosts, []tracetest.Flow{{Name: "a", From: "h1", To: "h2", QPs: 1}})
	fabric, alone, _ := fabricTrace(t, conns, "0 1 2 3a @3000 A3", nil, func(i int, cs []*tracetest.Frame) {
		if i == 1 {
			cs[1].Event = roce.EventECN // the spine marks it
			cs[2].Data[15] |= 3         // tor2 receives it CE
		}
	})
	fab, one := analyzeFabric(t, conns, fabric, alone)
	why := "connection 0 (flow a): 1 packet CE-marked at spine (1 there, 0 at the observed switch tor1)"
	v1, r1 := verdictReason(one, report.CheckCNP)
	want := why
	if r1 != "" {
		want += "; " + r1
	}
	if v, r := verdictReason(fab, report.CheckCNP); v1 == model.Skip || v != model.Inconclusive || r != want {
		t.Errorf("cnp = %s %q (tor1 alone: %s)\nwant inconclusive %q", v, r, v1, want)
	}
	for _, c := range []string{report.CheckGBN, report.CheckRetransmission, report.CheckTimeout} {
		if v, r := verdictReason(fab, c); v != model.Pass {
			t.Errorf("%s = %s %q, want pass: a mark is no loss", c, v, r)
		}
	}
}

func verdictReason(r *Report, check string) (model.Verdict, string) {
	c := &r.Checks
	switch check {
	case report.CheckGBN:
		return c.GBN.Verdict, c.GBN.Reason
	case report.CheckRetransmission:
		return c.Retransmission.Verdict, c.Retransmission.Reason
	case report.CheckTimeout:
		return c.Timeout.Verdict, c.Timeout.Reason
	case report.CheckCNP:
		return c.CNP.Verdict, c.CNP.Reason
	case report.CheckCounters:
		return c.Counters.Verdict, c.Counters.Reason
	}
	return "", ""
}

// TestFabricStuckAtEnd: copies that never reach the next switch by the
// end of the trace (held in a queue, as in a PFC deadlock, or lost) make
// the loss checks inconclusive too.
func TestFabricStuckAtEnd(t *testing.T) {
	conns := tracetest.FlowConns(obsHosts, []tracetest.Flow{{Name: "a", From: "h1", To: "h2", QPs: 1}})
	fabric, alone, _ := fabricTrace(t, conns, "0 1 2 3a", nil, func(i int, cs []*tracetest.Frame) {
		if i >= 2 {
			cs[2] = nil // PSN 2 and 3 stay at the spine
		}
	})
	fab, one := analyzeFabric(t, conns, fabric, alone)
	why := "connection 0 (flow a): copies stop matching between spine and tor2 (2 copies at spine never reached tor2, from PSN 2 (RC_RDMA_WRITE_MIDDLE)): packets lost or still queued between them"
	for _, c := range []string{report.CheckGBN, report.CheckRetransmission, report.CheckTimeout} {
		v1, r1 := verdictReason(one, c)
		want := why
		if r1 != "" {
			want += "; " + r1
		}
		if v, r := verdictReason(fab, c); v1 == model.Skip || v != model.Inconclusive || r != want {
			t.Errorf("%s = %s %q (tor1 alone: %s)\nwant inconclusive %q", c, v, r, v1, want)
		}
	}
	stops := []flows.HopStop{{Conn: 0, Flow: "a", Direction: "to-responder", From: "spine", To: "tor2", Index: -1,
		Detail: "2 copies at spine never reached tor2, from PSN 2 (RC_RDMA_WRITE_MIDDLE)"}}
	if !reflect.DeepEqual(fab.Flows.HopStops, stops) {
		t.Errorf("hop stops = %+v\nwant %+v", fab.Flows.HopStops, stops)
	}
}
