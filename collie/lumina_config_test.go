package collie

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/roce"
)

// oldTestYAML is the lumina test file LuminaEngine used to print and parse
// back (the engine before it built config.Test values directly). It is the
// reference of TestLuminaTestMatchesParsedYAML.
func oldTestYAML(e *LuminaEngine, id int, w Workload) ([]byte, error) {
	if len(w.Traffics) == 0 {
		return nil, fmt.Errorf("%w: empty workload", ErrEngine)
	}
	t := w.Traffics[0]
	pers := e.Personality
	if pers == "" {
		pers = "cx4"
	}
	seed := e.Seed
	if seed == 0 {
		seed = 1
	}
	msgs := 1
	if e.Space != nil && e.Space.Events.Messages > 0 {
		msgs = e.Space.Events.Messages
	}
	depth := max(1, t.WQDepth)
	var b strings.Builder
	fmt.Fprintf(&b, "name: collie-%d\nseed: %d\ntestbed: sim\n", id, seed)
	if depth > 1 {
		b.WriteString("iter-scope: connection\n")
	}
	fmt.Fprintf(&b, "requester: {nic: {personality: %s, ip-list: [10.0.0.1/24]}, roce-parameters: {dcqcn-rp-enable: false}}\n", pers)
	fmt.Fprintf(&b, "responder: {nic: {personality: %s, ip-list: [10.0.0.2/24]}, roce-parameters: {dcqcn-rp-enable: false}}\n", pers)
	fmt.Fprintf(&b, "traffic:\n  num-qps: %d\n  rdma-verb: %s\n  num-msgs-per-qp: %d\n  mtu: %d\n  message-size: %d\n  tx-depth: %d\n",
		t.NumQPs, strings.ToLower(t.Opcode), msgs, t.MTU, t.MessageSizes[0], depth)
	seen := map[[3]int]bool{}
	var evs []string
	for _, ev := range t.Events {
		if ev.PSN < 0 {
			continue
		}
		k := [3]int{ev.Msg, ev.PSN, ev.Iter}
		if seen[k] {
			continue
		}
		seen[k] = true
		evs = append(evs, fmt.Sprintf("    - {qpn: 0, msg: %d, psn: %d, type: %s, iter: %d}\n", ev.Msg, ev.PSN, ev.Type, ev.Iter))
	}
	if len(evs) > 0 {
		sort.Strings(evs)
		b.WriteString("  data-pkt-events:\n")
		for _, s := range evs {
			b.WriteString(s)
		}
	}
	return []byte(b.String()), nil
}

type luminaCase struct {
	name string
	eng  LuminaEngine
	id   int
	tr   Traffic
}

func evSpace(messages int) *Space { return &Space{Events: EventSpace{Messages: messages}} }

func drop(msg, psn, iter int) Event { return Event{Msg: msg, PSN: psn, Iter: iter, Type: "drop"} }

var luminaCases = []luminaCase{
	{"write-dups-and-none", LuminaEngine{Space: evSpace(2)}, 3, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{8192},
		Events: []Event{drop(1, 4, 1), drop(0, 0, 1), {Msg: 0, PSN: -1, Iter: 1, Type: "drop"}, drop(0, 0, 1), drop(1, 4, 1), drop(0, 7, 1)}}},
	{"read-depth-iter-scope", LuminaEngine{Space: evSpace(3), Personality: "cx6", Seed: 9}, 17, Traffic{Opcode: "READ", NumQPs: 4, MTU: 4096, WQDepth: 8,
		MessageSizes: []int64{65536, 64}, Events: []Event{drop(2, 15, 2), {Msg: 2, PSN: 15, Iter: 1, Type: "ecn"}, drop(0, 3, 1), {Msg: 1, PSN: 0, Iter: 1, Type: "corrupt"},
			{Msg: 2, PSN: 15, Iter: 2, Type: "ecn"}, {Msg: 1, PSN: -1, Iter: 2, Type: "drop"}}}},
	{"send-defaults", LuminaEngine{Personality: "CX5"}, 0, Traffic{Opcode: "SEND", NumQPs: 2, MTU: 256, WQDepth: 0, MessageSizes: []int64{100}}},
	{"write-many-msgs", LuminaEngine{Space: evSpace(12), Personality: "spec", Seed: 42}, 1234, Traffic{Opcode: "write", NumQPs: 16, MTU: 2048, WQDepth: 2,
		MessageSizes: []int64{0, 8}, Events: []Event{drop(10, 0, 1), drop(2, 0, 1), drop(11, 0, 3), drop(2, 0, 12), {Msg: 10, PSN: 0, Iter: 2, Type: "bit-error"}}}},
	{"profile-path", LuminaEngine{Space: evSpace(1), Personality: "profiles/my-nic.yaml"}, 5, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 512, WQDepth: 1,
		MessageSizes: []int64{4 << 20}, Events: []Event{drop(0, 8191, 1)}}},
}

// workloads that config.Parse rejects: the builder must reject them too.
var luminaBadCases = []luminaCase{
	{"mtu", LuminaEngine{}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 300, WQDepth: 1, MessageSizes: []int64{1024}}},
	{"num-qps", LuminaEngine{}, 1, Traffic{Opcode: "WRITE", NumQPs: 20000, MTU: 1024, WQDepth: 1, MessageSizes: []int64{1024}}},
	{"psn-outside-message", LuminaEngine{Space: evSpace(2)}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{8192}, Events: []Event{drop(0, 8, 1)}}},
	{"msg-outside-qp", LuminaEngine{Space: evSpace(2)}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{8192}, Events: []Event{drop(2, 0, 1)}}},
	{"iter-0", LuminaEngine{Space: evSpace(2)}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{8192}, Events: []Event{drop(0, 0, 0)}}},
	{"event-type", LuminaEngine{Space: evSpace(2)}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{8192}, Events: []Event{{Msg: 0, PSN: 0, Iter: 1, Type: "flip"}}}},
	{"opcode", LuminaEngine{}, 1, Traffic{Opcode: "ATOMIC", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{1024}}},
	{"personality", LuminaEngine{Personality: "cx7"}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{1024}}},
	{"message-size", LuminaEngine{}, 1, Traffic{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{-1}}},
}

// TestLuminaTestMatchesParsedYAML: the Test built directly equals what
// config.Parse made of the test file the engine used to print, field by
// field, except for what is no part of the test's meaning: File (there is
// no file), Event.Pos (a position in that file) and the order of the
// events (ExpandEvents, which is what a run uses, sorts them; checked
// unnormalised below).
func TestLuminaTestMatchesParsedYAML(t *testing.T) {
	for _, c := range luminaCases {
		t.Run(c.name, func(t *testing.T) {
			w := Workload{Traffics: []Traffic{c.tr}}
			y, err := oldTestYAML(&c.eng, c.id, w)
			if err != nil {
				t.Fatal(err)
			}
			want, err := config.Parse(fmt.Sprintf("collie-%d.yaml", c.id), y)
			if err != nil {
				t.Fatalf("reference YAML does not parse: %v\n%s", err, y)
			}
			got, err := c.eng.Test(c.id, w)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := got.ExpandEvents(), want.ExpandEvents(); !reflect.DeepEqual(g, w) {
				t.Errorf("ExpandEvents:\n got %+v\nwant %+v", g, w)
			}
			want.File = ""
			for i := range want.Traffic.Events {
				want.Traffic.Events[i].Pos = config.Pos{}
			}
			byKey := func(a, b config.Event) int {
				return cmp.Or(cmp.Compare(a.QPN, b.QPN), cmp.Compare(a.Msg, b.Msg), cmp.Compare(a.PSN, b.PSN), cmp.Compare(a.Iter, b.Iter))
			}
			slices.SortStableFunc(want.Traffic.Events, byKey)
			if !slices.IsSortedFunc(got.Traffic.Events, byKey) {
				t.Errorf("events not in (msg, psn, iter) order: %+v", got.Traffic.Events)
			}
			gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
			for i := range gv.NumField() {
				if g, w := gv.Field(i).Interface(), wv.Field(i).Interface(); !reflect.DeepEqual(g, w) {
					t.Errorf("%s:\n got %+v\nwant %+v", gv.Type().Field(i).Name, g, w)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tests differ")
			}
			if c.tr.WQDepth > 1 && got.IterScope != config.IterScopeConnection {
				t.Errorf("iter scope %v with tx-depth %d", got.IterScope, got.Traffic.TxDepth)
			}
		})
	}
	for _, c := range luminaBadCases {
		t.Run("bad-"+c.name, func(t *testing.T) {
			w := Workload{Traffics: []Traffic{c.tr}}
			y, _ := oldTestYAML(&c.eng, c.id, w)
			if _, err := config.Parse("bad.yaml", y); err == nil {
				t.Fatalf("the reference accepts the workload:\n%s", y)
			}
			if _, err := c.eng.Test(c.id, w); !errors.Is(err, ErrEngine) {
				t.Errorf("Test: err = %v, want ErrEngine", err)
			}
		})
	}
	if _, err := (&LuminaEngine{}).Test(0, Workload{}); !errors.Is(err, ErrEngine) {
		t.Errorf("empty workload: err = %v, want ErrEngine", err)
	}
}

// wantDiag is what the diagnostics must be, computed here straight from the
// run's analysis and NIC counters.
func wantDiag(t *testing.T, rep orchestrator.RepeatResult) map[string]float64 {
	t.Helper()
	want := map[string]float64{}
	for side, m := range rep.Run.NICs {
		for k, v := range m {
			want[string(side)+"."+k] = float64(v)
		}
	}
	a := rep.Report.Analysis
	var nack, retrans int64
	for _, l := range a.Checks.Retransmission.Losses {
		if l.NACKReactionNs != nil && *l.NACKReactionNs > nack {
			nack = *l.NACKReactionNs
		}
		if l.Event == "drop" && l.RetransmissionNs != nil && *l.RetransmissionNs > retrans {
			retrans = *l.RetransmissionNs
		}
	}
	naks := 0
	for _, c := range a.Checks.GBN.Conns {
		naks += c.NAKs
	}
	want["nack_reaction_ns_max"] = float64(nack)
	want["retrans_latency_ns_max"] = float64(retrans)
	want["naks"] = float64(naks)
	var mct int64
	for _, q := range rep.Report.Generator.QPs {
		for _, x := range q.MCTNs {
			mct = max(mct, x)
		}
	}
	want["mct_ns_max"] = float64(mct)
	return want
}

// runLumina runs the engine's test of w once through the orchestrator, and
// the engine itself, on the deterministic sim testbed.
func runLumina(t *testing.T, eng *LuminaEngine, w Workload) (orchestrator.RepeatResult, *Metrics) {
	t.Helper()
	ctx := context.Background()
	test, err := eng.Test(1, w)
	if err != nil {
		t.Fatal(err)
	}
	res := orchestrator.RunTest(ctx, test, orchestrator.Options{OutDir: t.TempDir()})
	if res.Err != nil || len(res.Repeats) != 1 || res.Repeats[0].Report == nil || res.Repeats[0].Report.Analysis == nil {
		t.Fatalf("run: %+v", res)
	}
	rep := res.Repeats[0]
	m, err := luminaMetrics(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Diag, wantDiag(t, rep)) {
		t.Errorf("diag from the run:\n got %v\nwant %v", m.Diag, wantDiag(t, rep))
	}
	again, err := eng.Run(ctx, 1, w)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, m) {
		t.Errorf("LuminaEngine.Run:\n got %+v\nwant %+v (same test, deterministic testbed)", again, m)
	}
	return rep, m
}

// TestLuminaEngineDiagnostics: the diagnostics of a run with a NAK-driven
// drop and a timeout-driven one (the last packet) are the run's own
// analysis and counters.
func TestLuminaEngineDiagnostics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sim testbed")
	}
	eng := &LuminaEngine{Space: evSpace(2), Personality: "cx4"}
	w := Workload{Traffics: []Traffic{{Opcode: "WRITE", NumQPs: 1, MTU: 1024, WQDepth: 1, MessageSizes: []int64{8192},
		Events: []Event{drop(0, 2, 1), drop(1, 7, 1)}}}}
	rep, m := runLumina(t, eng, w)
	losses := rep.Report.Analysis.Checks.Retransmission.Losses
	if len(losses) != 2 {
		t.Fatalf("losses %+v, want the two drops", losses)
	}
	fast, slow := losses[0], losses[1]
	if fast.Kind != retransmission.KindFast || slow.Kind != retransmission.KindTimeout || fast.NACKReactionNs == nil || slow.NACKReactionNs != nil {
		t.Fatalf("losses %+v, want a NAK-driven and a timeout-driven one", losses)
	}
	d := m.Diag
	if d["nack_reaction_ns_max"] != float64(*fast.NACKReactionNs) {
		t.Errorf("nack_reaction_ns_max = %v, want the NAK-driven loss's %d", d["nack_reaction_ns_max"], *fast.NACKReactionNs)
	}
	if d["retrans_latency_ns_max"] != float64(*slow.RetransmissionNs) || *slow.RetransmissionNs <= *fast.RetransmissionNs {
		t.Errorf("retrans_latency_ns_max = %v, want the timeout-driven loss's %d (> %d)", d["retrans_latency_ns_max"], *slow.RetransmissionNs, *fast.RetransmissionNs)
	}
	// cx4: NACK reaction 150–200 µs.
	if v := d["nack_reaction_ns_max"]; v < 150000 || v > 200000 {
		t.Errorf("nack_reaction_ns_max = %v, want within cx4's 150–200 µs", v)
	}
	if d["naks"] != 1 || d["requester.packet_seq_err"] != 1 || d["responder.out_of_sequence"] != 1 || d["requester.local_ack_timeout_err"] != 1 {
		t.Errorf("naks %v, packet_seq_err %v, out_of_sequence %v, local_ack_timeout_err %v; want 1 each", d["naks"],
			d["requester.packet_seq_err"], d["responder.out_of_sequence"], d["requester.local_ack_timeout_err"])
	}
	t.Logf("diag %v", d)
}

// TestLuminaEngineTwoQPs: with two QPs and drops on QP 0 only, every loss
// and NAK is QP 0's and the diagnostics are QP 0's.
func TestLuminaEngineTwoQPs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sim testbed")
	}
	eng := &LuminaEngine{Space: evSpace(2), Personality: "cx5"}
	w := Workload{Traffics: []Traffic{{Opcode: "WRITE", NumQPs: 2, MTU: 1024, WQDepth: 1, MessageSizes: []int64{4096},
		Events: []Event{drop(0, 1, 1), drop(1, 0, 1)}}}}
	rep, m := runLumina(t, eng, w)
	a := rep.Report.Analysis
	var nack int64
	for _, l := range a.Checks.Retransmission.Losses {
		if l.Conn != 0 {
			t.Errorf("loss on connection %d: %+v", l.Conn, l)
		}
		if l.NACKReactionNs != nil {
			nack = max(nack, *l.NACKReactionNs)
		}
	}
	if len(a.Checks.Retransmission.Losses) != 2 || nack == 0 {
		t.Fatalf("losses %+v, want QP 0's two NAK-driven ones", a.Checks.Retransmission.Losses)
	}
	for _, c := range a.Checks.GBN.Conns {
		if want := map[int]int{0: 2, 1: 0}[c.Conn]; c.NAKs != want {
			t.Errorf("connection %d: %d NAKs, want %d", c.Conn, c.NAKs, want)
		}
	}
	if m.Diag["nack_reaction_ns_max"] != float64(nack) || m.Diag["naks"] != 2 {
		t.Errorf("diag %v, want QP 0's NACK reaction %d and 2 NAKs", m.Diag, nack)
	}
}

// TestLossLatenciesPerConnection feeds the retransmission analyzer two
// connections with the same initial PSN: connection 0 drops PSN 100 and
// recovers by timeout at 15 ns; connection 1 drops PSN 100 too, NAKs it at
// 10 ns and retransmits it at 100 ns. Matching on the PSN alone would pair
// connection 1's NAK with connection 0's retransmission (reaction 5 ns) and
// connection 0's drop with connection 1's drop (2 ns); per connection, the
// reaction is 90 ns and the longest retransmission 98 ns.
func TestLossLatenciesPerConnection(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	var conns []model.Connection
	for i := range 2 {
		conns = append(conns, model.Connection{ID: i, Verb: model.VerbWrite,
			Requester: model.Endpoint{IP: a, QPN: uint32(10 + i), IPSN: 100}, Responder: model.Endpoint{IP: b, QPN: uint32(20 + i), IPSN: 100}})
	}
	tr := retransmission.New(model.NewTable(conns), retransmission.Options{})
	data := func(conn int, psn roce.PSN, ns int64, delivered bool) model.Pkt {
		ev := roce.EventNone
		if !delivered {
			ev = roce.EventDrop
		}
		return model.Pkt{Conn: conn, Dir: model.ToResponder, Kind: model.KindData, PSN: psn, TimeNs: ns, Event: ev, Delivered: delivered, NPkts: 1}
	}
	fb := func(conn int, kind model.Kind, psn roce.PSN, ns int64) model.Pkt {
		return model.Pkt{Conn: conn, Dir: model.ToRequester, Kind: kind, PSN: psn, TimeNs: ns, Delivered: true, NPkts: 1}
	}
	pkts := []model.Pkt{
		data(0, 100, 0, false), data(0, 101, 1, true),
		data(1, 100, 2, false), data(1, 101, 3, true),
		fb(1, model.KindNak, 100, 10),
		data(0, 100, 15, true), data(0, 101, 16, true), fb(0, model.KindAck, 101, 17),
		data(1, 100, 100, true), data(1, 101, 101, true), fb(1, model.KindAck, 101, 102),
	}
	for i := range pkts {
		pkts[i].Index = i
		tr.Observe(&pkts[i])
	}
	losses := tr.Finish().Losses
	if len(losses) != 2 {
		t.Fatalf("losses %+v", losses)
	}
	nack, retrans := lossLatencies(losses)
	if nack != 90 || retrans != 98 {
		t.Errorf("lossLatencies = %d, %d; want 90, 98", nack, retrans)
	}
	// A gap (a loss not in the trace) has no dropped packet to time from.
	gap := int64(1 << 40)
	losses = append(losses, retransmission.Loss{Conn: 1, Event: "gap", RetransmissionNs: &gap})
	if _, retrans := lossLatencies(losses); retrans != 98 {
		t.Errorf("retrans_latency_ns_max counts a gap: %d", retrans)
	}
	if n, r := lossLatencies(nil); n != 0 || r != 0 {
		t.Errorf("no losses: %d, %d", n, r)
	}
}
