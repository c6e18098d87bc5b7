package collie

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
)

// LuminaEngine runs each workload through the lumina harness on the sim
// testbed (software RNICs, virtual clock, deterministic). It maps the first
// traffic onto a lumina test (see Test): opcode → rdma-verb, num_qps →
// num-qps, mtu, message_sizes[0] → message-size (lumina sends one size),
// wq_depth → tx-depth, Space.Events.Messages → num-msgs-per-qp, and the
// event slots → data-pkt-events on QP 0 (slots with psn -1 and duplicates
// are dropped). The other dimensions have no meaning for the software RNIC
// and are ignored. It is safe for concurrent use.
//
// Diagnostic counters (maximised by the search) come from the run itself:
// the analyzers' report of the merged trace (latencies on the switch's
// mirror timestamps, every packet attributed to its connection, so a NAK
// is only ever paired with a retransmission of the same QP) and the NIC
// counters the driver read:
//   - nack_reaction_ns_max: the largest NACKReactionNs of the
//     retransmission analyzer's losses: the time from the NAK naming the
//     lost PSN (READ: the re-issued request) to that PSN's retransmission;
//   - retrans_latency_ns_max: the largest RetransmissionNs of the losses
//     whose event is "drop": the time from the dropped packet to its
//     retransmission on the same connection (NAK- or timeout-driven);
//   - naks: the NAKs of all connections as the go-back-N analyzer counts
//     them (PSN-sequence-error NAKs; READ: re-issued requests);
//   - mct_ns_max: the longest message completion time;
//   - requester.<counter>, responder.<counter>: the NIC counters
//     (packet_seq_err, out_of_sequence, local_ack_timeout_err, ...).
//
// A failed lumina check (FSM or counter violations) becomes the symptom
// "check:<name>" (except the set-up checks events_applied, integrity and
// generator). An invalid run (integrity check failed twice), a run the
// analyzers could not analyze and a workload that makes no valid lumina
// test are ErrEngine.
type LuminaEngine struct {
	// Space provides the number of messages per QP. Required.
	Space *Space
	// Personality of both NICs: spec, cx4, cx5, cx6 or a profile path.
	// Default cx4.
	Personality string
	// Seed of every lumina test. Default 1.
	Seed uint64
	// Dir keeps each experiment's results under Dir/exp-<id>. Default: a
	// temporary directory removed after the experiment.
	Dir string
}

var _ Engine = (*LuminaEngine)(nil)

// Test returns the lumina test of a workload, named collie-<id>:
// config.New with the workload's settings (Marshal prints it as a test
// file). A workload that config.Parse would reject as a test (an MTU
// lumina does not support, an event outside the message, ...) is an
// ErrEngine.
func (e *LuminaEngine) Test(id int, w Workload) (*config.Test, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: lumina test: %s", ErrEngine, fmt.Sprintf(format, a...))
	}
	if len(w.Traffics) == 0 {
		return nil, fmt.Errorf("%w: empty workload", ErrEngine)
	}
	t := w.Traffics[0]
	if len(t.MessageSizes) == 0 {
		return nil, bad("no message size")
	}
	pers := e.Personality
	if pers == "" {
		pers = "cx4"
	}
	switch low := strings.ToLower(pers); {
	case slices.Contains([]string{"spec", "cx4", "cx5", "cx6"}, low):
		pers = low
	case !strings.HasSuffix(low, ".yaml") && !strings.HasSuffix(low, ".yml"):
		return nil, bad("personality %q: want spec, cx4, cx5, cx6 or a .yaml/.yml profile", pers)
	}
	seed := e.Seed
	if seed == 0 {
		seed = 1
	}
	msgs := 1
	if e.Space != nil && e.Space.Events.Messages > 0 {
		msgs = e.Space.Events.Messages
	}
	verb, ok := map[string]config.Verb{"WRITE": config.VerbWrite, "READ": config.VerbRead, "SEND": config.VerbSend}[strings.ToUpper(t.Opcode)]
	if !ok {
		return nil, bad("opcode %q: want WRITE, READ or SEND", t.Opcode)
	}
	// Beyond int's range the conversions below would wrap before Validate
	// could see the values.
	if t.NumQPs < math.MinInt32 || t.NumQPs > math.MaxInt32 || t.MTU < 0 || t.MTU > math.MaxInt32 ||
		t.MessageSizes[0] < math.MinInt32 || t.MessageSizes[0] > math.MaxInt32 {
		return nil, bad("num_qps %d, mtu %d or message size %d out of range", t.NumQPs, t.MTU, t.MessageSizes[0])
	}
	test := config.New(fmt.Sprintf("collie-%d", id))
	test.Seed = seed
	tr := &test.Traffic
	tr.NumQPs, tr.Verb, tr.NumMsgsPerQP, tr.MTU = int(t.NumQPs), verb, msgs, int(t.MTU)
	tr.MessageSize, tr.TxDepth = int(t.MessageSizes[0]), int(max(1, t.WQDepth))
	types := map[string]config.EventType{"drop": config.EventDrop, "ecn": config.EventECN, "corrupt": config.EventCorrupt, "bit-error": config.EventCorrupt}
	seen := map[[3]int]bool{}
	for _, ev := range t.Events {
		if ev.PSN < 0 {
			continue
		}
		k := [3]int{ev.Msg, ev.PSN, ev.Iter}
		if seen[k] {
			continue
		}
		seen[k] = true
		typ, ok := types[strings.ToLower(ev.Type)]
		if !ok {
			return nil, bad("event type %q: want drop, ecn or corrupt", ev.Type)
		}
		tr.Events = append(tr.Events, config.Event{QPN: 0, Msg: ev.Msg, PSN: ev.PSN, Type: typ, Iter: ev.Iter})
	}
	// The order is immaterial (ExpandEvents sorts); this one is stable.
	slices.SortFunc(tr.Events, func(a, b config.Event) int {
		if a.Msg != b.Msg {
			return a.Msg - b.Msg
		}
		if a.PSN != b.PSN {
			return a.PSN - b.PSN
		}
		return a.Iter - b.Iter
	})
	// Both NICs run personality pers at their addresses, with the DCQCN
	// reaction point off.
	for h, ip := range map[*config.Host]string{&test.Requester: "10.0.0.1/24", &test.Responder: "10.0.0.2/24"} {
		h.NIC.Personality, h.NIC.IPList = pers, []netip.Prefix{netip.MustParsePrefix(ip)}
		h.RoCE.DCQCNRPEnable = false
	}
	// With several messages in flight, ITER per message is ambiguous:
	// count it over the connection.
	if tr.TxDepth > 1 {
		test.IterScope = config.IterScopeConnection
	}
	// config's own rules (ranges, events within the message, ...), as
	// Parse applies them to a file.
	if err := test.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	test.Normalize() // Hosts and Flows from the fields set above
	return test, nil
}

// Run implements Engine.
func (e *LuminaEngine) Run(ctx context.Context, id int, w Workload) (*Metrics, error) {
	test, err := e.Test(id, w)
	if err != nil {
		return nil, err
	}
	dir := e.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "collie-lumina-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("exp-%d", id))
	}
	res := orchestrator.RunTest(ctx, test, orchestrator.Options{OutDir: dir})
	if res.Err != nil {
		return nil, fmt.Errorf("%w: lumina: %v", ErrEngine, res.Err)
	}
	if len(res.Repeats) == 0 {
		return nil, fmt.Errorf("%w: lumina: no report", ErrEngine)
	}
	return luminaMetrics(res.Repeats[0])
}

// luminaMetrics returns the metrics of one repeat of a lumina test.
func luminaMetrics(rep orchestrator.RepeatResult) (*Metrics, error) {
	r := rep.Report
	if r == nil || rep.Run == nil {
		return nil, fmt.Errorf("%w: lumina: no report", ErrEngine)
	}
	if !r.Valid {
		return nil, fmt.Errorf("%w: lumina: invalid run: %s", ErrEngine, r.Error)
	}
	a := r.Analysis
	if a == nil {
		return nil, fmt.Errorf("%w: lumina: no analysis: %s", ErrEngine, r.Checks[areport.CheckAnalyzers].Detail)
	}
	met := &Metrics{Diag: map[string]float64{}}
	if g := r.Generator; g != nil {
		met.RxGbps = g.GoodputGbps
		var mct int64
		for _, q := range g.QPs {
			for _, x := range q.MCTNs {
				mct = max(mct, x)
			}
		}
		met.Diag["mct_ns_max"] = float64(mct)
	}
	var names []string
	for n, c := range r.Checks {
		if c.Verdict == model.Fail && !setupChecks[n] {
			names = append(names, "check:"+n)
		}
	}
	slices.Sort(names)
	met.Symptoms = names
	for side, m := range rep.Run.NICs {
		for k, v := range m {
			met.Diag[string(side)+"."+k] = float64(v)
		}
	}
	nack, retrans := lossLatencies(a.Checks.Retransmission.Losses)
	met.Diag["nack_reaction_ns_max"] = float64(nack)
	met.Diag["retrans_latency_ns_max"] = float64(retrans)
	met.Diag["naks"] = float64(nakCount(a.Checks.GBN.Conns))
	return met, nil
}

// setupChecks judge the experiment, not the NIC: an event that never
// applied (an iter-2 drop of a packet that was not retransmitted) or a
// failed integrity check are not anomalies.
var setupChecks = map[string]bool{areport.CheckEventsApplied: true, areport.CheckIntegrity: true, areport.CheckGenerator: true}

// lossLatencies returns the largest NACK reaction latency of the losses and
// the largest retransmission latency of the dropped packets among them (0
// when there is none). Each loss carries its own connection's latencies.
func lossLatencies(losses []retransmission.Loss) (nackMax, retransMax int64) {
	for _, l := range losses {
		if l.NACKReactionNs != nil {
			nackMax = max(nackMax, *l.NACKReactionNs)
		}
		if l.Event == "drop" && l.RetransmissionNs != nil {
			retransMax = max(retransMax, *l.RetransmissionNs)
		}
	}
	return nackMax, retransMax
}

// nakCount sums the connections' NAKs.
func nakCount(conns []gbn.ConnStats) int {
	n := 0
	for _, c := range conns {
		n += c.NAKs
	}
	return n
}
