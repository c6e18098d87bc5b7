package collie

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// LuminaEngine runs each workload through the lumina harness on the sim
// testbed (software RNICs, virtual clock, deterministic). It maps the first
// traffic onto a lumina test: opcode → rdma-verb, num_qps → num-qps, mtu,
// message_sizes[0] → message-size (lumina sends one size), wq_depth →
// tx-depth, Space.Events.Messages → num-msgs-per-qp, and the event slots →
// data-pkt-events on QP 0 (slots with psn -1 and duplicates are dropped).
// The other dimensions have no meaning for the software RNIC and are
// ignored. It is safe for concurrent use.
//
// Diagnostic counters (maximised by the search):
//   - nack_reaction_ns_max: the longest time from a NAK to the
//     retransmission of the PSN it names (mirror timestamps);
//   - retrans_latency_ns_max: the longest time from a dropped packet to
//     its retransmission (NAK- or timeout-driven);
//   - mct_ns_max: the longest message completion time;
//   - requester.<counter>, responder.<counter>: the NIC counters
//     (packet_seq_err, out_of_sequence, local_ack_timeout_err, ...).
//
// A failed lumina check (FSM or counter violations) becomes the symptom
// "check:<name>" (except the set-up checks events_applied, integrity and
// generator). An invalid run (integrity check failed twice) is an
// ErrEngine.
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

// TestYAML returns the lumina test file for a workload.
func (e *LuminaEngine) TestYAML(id int, w Workload) ([]byte, error) {
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

// Run implements Engine.
func (e *LuminaEngine) Run(ctx context.Context, id int, w Workload) (*Metrics, error) {
	y, err := e.TestYAML(id, w)
	if err != nil {
		return nil, err
	}
	test, err := config.Parse(fmt.Sprintf("collie-%d.yaml", id), y)
	if err != nil {
		return nil, fmt.Errorf("%w: lumina test: %v", ErrEngine, err)
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
	if len(res.Repeats) == 0 || res.Repeats[0].Report == nil {
		return nil, fmt.Errorf("%w: lumina: no report", ErrEngine)
	}
	rep := res.Repeats[0]
	r := rep.Report
	if !r.Valid {
		return nil, fmt.Errorf("%w: lumina: invalid run: %s", ErrEngine, r.Error)
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
		if c.Verdict == "fail" && !setupChecks[n] {
			names = append(names, "check:"+n)
		}
	}
	sort.Strings(names)
	met.Symptoms = names
	if err := nicCounters(filepath.Join(rep.Dir, "counters.json"), met.Diag); err != nil {
		return nil, fmt.Errorf("%w: lumina: %v", ErrEngine, err)
	}
	var drops []dropAt
	for _, ev := range r.Events {
		if ev.Applied && ev.Type == "drop" {
			drops = append(drops, dropAt{psn: ev.AbsPSN, ns: int64(ev.TimeNs)})
		}
	}
	tl, err := traceLatencies(filepath.Join(rep.Dir, test.AggregatePcapFilename), drops)
	if err != nil {
		return nil, fmt.Errorf("%w: lumina: %v", ErrEngine, err)
	}
	met.Diag["nack_reaction_ns_max"] = float64(tl.nackMax)
	met.Diag["retrans_latency_ns_max"] = float64(tl.retransMax)
	met.Diag["naks"] = float64(tl.naks)
	return met, nil
}

// setupChecks judge the experiment, not the NIC: an event that never
// applied (an iter-2 drop of a packet that was not retransmitted) or a
// failed integrity check are not anomalies.
var setupChecks = map[string]bool{"events_applied": true, "integrity": true, "generator": true}

func nicCounters(path string, out map[string]float64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var c struct {
		NICs map[string]map[string]float64 `json:"nics"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	for host, m := range c.NICs {
		for k, v := range m {
			out[host+"."+k] = v
		}
	}
	return nil
}

type dropAt struct {
	psn uint32
	ns  int64
}

type latencies struct {
	nackMax, retransMax int64
	naks                int
}

// traceLatencies reads the merged trace: NACK reaction latency is the time
// from a NAK to the first later data packet carrying the PSN it names;
// retransmission latency the time from a dropped packet to the next data
// packet with its PSN.
func traceLatencies(path string, drops []dropAt) (latencies, error) {
	var out latencies
	var pr roce.Parser
	var pkt roce.Packet
	type pending struct {
		psn uint32
		ns  int64
	}
	var naks []pending
	waiting := append([]dropAt(nil), drops...)
	err := trace.ReadFile(path, func(p trace.Packet) error {
		if pr.Parse(p.Data, p.OrigLen, &pkt) != nil || pkt.BTH == nil {
			return nil
		}
		ns := int64(pkt.Mirror().TimestampNs)
		psn := uint32(pkt.BTH.PSN())
		switch {
		case pkt.Opcode == roce.RCAcknowledge && pkt.AETH != nil && pkt.AETH.Syndrome().IsNAK():
			out.naks++
			naks = append(naks, pending{psn, ns})
		case pkt.Opcode.IsData():
			kept := naks[:0]
			for _, n := range naks {
				if n.psn == psn && ns > n.ns {
					out.nackMax = max(out.nackMax, ns-n.ns)
				} else {
					kept = append(kept, n)
				}
			}
			naks = kept
			w := waiting[:0]
			for _, d := range waiting {
				if d.psn == psn && ns > d.ns {
					out.retransMax = max(out.retransMax, ns-d.ns)
				} else {
					w = append(w, d)
				}
			}
			waiting = w
		}
		return nil
	})
	return out, err
}
