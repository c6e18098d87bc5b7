package tests

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fidelityDoc rewrites docs/fidelity.md from the measured table.
var fidelityDoc = flag.Bool("fidelity-doc", false, "rewrite ../docs/fidelity.md from TestFidelity's measurements")

// A fidelityRow is one quantity of the Lumina paper (§6), or of Fukuoka et
// al.'s ODP paper (odpFidelityRows), measured through the whole chain: a
// sim run of an example or variant, the switch's mirror timestamps, the
// analyzers' report.json or the trace.
type fidelityRow struct {
	quantity string // what is measured
	source   string // the paper's section, figure or table
	variant  string // the example(s) that measure it, relative to examples/
	paper    string // the paper's value, as the paper gives it
	lo, hi   float64
	unit     string // µs, ms, s, or "" for counts and lists
	kind     string // circular (a sourced constant read back), emergent (from a mechanism), model (an assumption, no paper value)
	note     string
	// measure returns the measured value; a non-empty string is compared
	// with want instead of the [lo, hi] range.
	measure func(t *testing.T) (float64, string)
	want    string
}

var unitNs = map[string]float64{"µs": 1e3, "ms": 1e6, "s": 1e9, "KB": 1, "": 1}

// fidelityRun runs a variant once per test binary (any exit code: the
// timeout variants fail the IB bound check, as the paper's NICs do) and
// returns its repeat 0 directory; the run must be valid.
var fidelityRuns = struct {
	sync.Mutex
	dirs map[string]string
}{dirs: map[string]string{}}

func fidelityRun(t *testing.T, file string) string {
	t.Helper()
	fidelityRuns.Lock()
	defer fidelityRuns.Unlock()
	if d, ok := fidelityRuns.dirs[file]; ok {
		return d
	}
	out := filepath.Join(workDir, "fidelity")
	r, err := invoke("run", "-q", "-o", out, file)
	if err != nil {
		t.Fatal(err)
	}
	name := exampleName(file)
	dir := filepath.Join(out, name, "0")
	if !strings.HasPrefix(r.stdout, name+" repeat 0: valid,") {
		t.Fatalf("lumina run %s: exit %d, stdout %q stderr %q; want a valid run", file, r.code, r.stdout, r.stderr)
	}
	fidelityRuns.dirs[file] = dir
	return dir
}

// fidReport is the part of report.json the fidelity table reads.
type fidReport struct {
	Events []struct {
		QP     int    `json:"qp"`
		Type   string `json:"type"`
		TimeNs int64  `json:"time_ns"`
	} `json:"events"`
	Analysis struct {
		Checks struct {
			Retransmission struct {
				Losses []struct {
					RelPSN           int    `json:"rel_psn"`
					Iter             int    `json:"iter"`
					Kind             string `json:"kind"`
					NACKGenerationNs *int64 `json:"nack_generation_ns"`
					NACKReactionNs   *int64 `json:"nack_reaction_ns"`
					RetransmissionNs *int64 `json:"retransmission_ns"`
				} `json:"losses"`
			} `json:"retransmission"`
			Timeout struct {
				Timeouts []struct {
					IntervalsNs []int64 `json:"intervals_ns"`
					Retries     int     `json:"retries"`
					Outcome     string  `json:"outcome"`
				} `json:"timeouts"`
			} `json:"timeout"`
		} `json:"checks"`
	} `json:"analysis"`
}

func fidRead(t *testing.T, file string) *fidReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fidelityRun(t, "../examples/"+file), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r fidReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// meanLoss averages field over the fast losses of file whose packet index
// in its message (of pkts packets) is in [from, to).
func meanLoss(file string, pkts, from, to int, field func(gen, react, retx *int64) *int64) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		var sum float64
		n := 0
		for _, l := range fidRead(t, file).Analysis.Checks.Retransmission.Losses {
			if k := l.RelPSN % pkts; l.Kind != "fast" || l.Iter != 1 || k < from || k >= to {
				continue
			}
			v := field(l.NACKGenerationNs, l.NACKReactionNs, l.RetransmissionNs)
			if v == nil {
				t.Fatalf("%s: loss at %d has no value", file, l.RelPSN)
			}
			sum += float64(*v)
			n++
		}
		if n == 0 {
			t.Fatalf("%s: no fast loss in [%d, %d)", file, from, to)
		}
		return sum / float64(n), ""
	}
}

func gen(g, _, _ *int64) *int64   { return g }
func react(_, r, _ *int64) *int64 { return r }
func retx(_, _, x *int64) *int64  { return x }

// extremeLoss is the smallest (or largest) field over the fast losses.
func extremeLoss(file string, largest bool, field func(gen, react, retx *int64) *int64) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		v := math.Inf(1)
		if largest {
			v = math.Inf(-1)
		}
		for _, l := range fidRead(t, file).Analysis.Checks.Retransmission.Losses {
			if x := field(l.NACKGenerationNs, l.NACKReactionNs, l.RetransmissionNs); l.Kind == "fast" && x != nil {
				if largest {
					v = max(v, float64(*x))
				} else {
					v = min(v, float64(*x))
				}
			}
		}
		return v, ""
	}
}

// interval is timeout interval i of episode ep.
func interval(file string, ep, i int) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		eps := fidRead(t, file).Analysis.Checks.Timeout.Timeouts
		if ep >= len(eps) || i >= len(eps[ep].IntervalsNs) {
			t.Fatalf("%s: no interval %d of episode %d in %d episodes", file, i, ep, len(eps))
		}
		return float64(eps[ep].IntervalsNs[i]), ""
	}
}

// firstIntervals is the smallest (or largest) first interval over the
// episodes.
func firstIntervals(file string, largest bool) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		v := math.Inf(1)
		if largest {
			v = math.Inf(-1)
		}
		for _, e := range fidRead(t, file).Analysis.Checks.Timeout.Timeouts {
			if largest {
				v = max(v, float64(e.IntervalsNs[0]))
			} else {
				v = min(v, float64(e.IntervalsNs[0]))
			}
		}
		return v, ""
	}
}

// ecnGap is the mean time between the first and the second CE mark of each
// QP (Table 3: 2nd ECN − 1st ECN).
func ecnGap(file string) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		first, second := map[int]int64{}, map[int]int64{}
		for _, e := range fidRead(t, file).Events {
			if e.Type != "ecn" {
				continue
			}
			if _, ok := first[e.QP]; !ok {
				first[e.QP] = e.TimeNs
			} else {
				second[e.QP] = e.TimeNs
			}
		}
		var sum float64
		for qp, f := range first {
			sum += float64(second[qp] - f)
		}
		return sum / float64(len(first)), ""
	}
}

// ecnSpread is the time between the earliest and the latest first CE
// mark of the QPs (Table 3, 1st ECN column).
func ecnSpread(file string) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		first := map[int]int64{}
		for _, e := range fidRead(t, file).Events {
			if f, ok := first[e.QP]; e.Type == "ecn" && (!ok || e.TimeNs < f) {
				first[e.QP] = e.TimeNs
			}
		}
		lo, hi := int64(math.MaxInt64), int64(0)
		for _, f := range first {
			lo, hi = min(lo, f), max(hi, f)
		}
		return float64(hi - lo), ""
	}
}

// cnps is Table 4: CNPs per QP.
func cnps(file string) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		dir := fidelityRun(t, "../examples/"+file)
		return 0, fmt.Sprint(cnpsPerQP(t, dir, readReport(t, dir)))
	}
}

// table2Variant writes a variant of timeout-adaptive.yaml for Table 2: one
// QP, messages 1..msg+1 of 10 KB; each earlier message loses its tail 7
// times (Fig. 12), message msg+1 loses it drops times, so that the QP gives
// up if it retries drops−1 times at most.
func table2Variant(t *testing.T, pers string, adaptive bool, msg, drops int) string {
	var ev strings.Builder
	for m := 0; m <= msg; m++ {
		n := 7
		if m == msg {
			n = drops
		}
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&ev, "    - {qpn: 0, msg: %d, psn: 9, type: drop, iter: %d}\n", m, i)
		}
	}
	name := fmt.Sprintf("table2-%s-%v-msg%d", pers, adaptive, msg+1)
	y := fmt.Sprintf(`name: %s
seed: 3
requester:
  nic: {personality: %s, ip-list: [10.0.0.1/24]}
  roce-parameters: {dcqcn-rp-enable: false, adaptive-retrans: %v}
responder:
  nic: {personality: %s, ip-list: [10.0.0.2/24]}
traffic:
  num-qps: 1
  rdma-verb: write
  num-msgs-per-qp: %d
  mtu: 1024
  message-size: 10240
  tx-depth: 1
  min-retransmit-timeout: 14
  max-retransmit-retry: 7
  data-pkt-events:
%s`, name, pers, adaptive, pers, msg+1, ev.String())
	dir := filepath.Join(workDir, "fidelity-variants")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// table2 measures the maximum retries of messages 1..5: for message k the
// variant drops its tail paper[k]+1 times; the QP must give up after
// exactly the retries the analyzers count.
func table2(pers string, adaptive bool, paper []int) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		var got []string
		for k, want := range paper {
			dir := fidelityRun(t, table2Variant(t, pers, adaptive, k, want+1))
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r fidReport
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			eps := r.Analysis.Checks.Timeout.Timeouts
			last := eps[len(eps)-1]
			s := fmt.Sprint(last.Retries)
			if last.Outcome != "gave-up" || len(eps) != k+1 {
				s += "(" + last.Outcome + ")"
			}
			got = append(got, s)
		}
		return 0, strings.Join(got, " ")
	}
}

// fig10Variant writes a variant of Fig. 10: one CX6 WRITE of kb KB,
// its 5th packet dropped once.
func fig10Variant(t *testing.T, kb int) string {
	name := fmt.Sprintf("fig10-cx6-%dk", kb)
	y := fmt.Sprintf(`name: %s
seed: 2
requester:
  nic: {personality: cx6, ip-list: [10.0.0.1/24]}
  roce-parameters: {dcqcn-rp-enable: false}
responder:
  nic: {personality: cx6, ip-list: [10.0.0.2/24]}
traffic:
  num-qps: 1
  rdma-verb: write
  num-msgs-per-qp: 1
  mtu: 1024
  message-size: %d
  data-pkt-events:
    - {qpn: 0, msg: 0, psn: 4, type: drop, iter: 1}
`, name, kb*1024)
	dir := filepath.Join(workDir, "fidelity-variants")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// fig10 sweeps the message size from 10 to 200 KB in steps of 5 KB and
// returns the size (in bytes) where the retransmission latency of the
// dropped 5th packet starts growing (onset: the first size above the
// 10 KB latency) or stops (plateau: the first size at the 200 KB latency).
func fig10(plateau bool) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		var sizes []int
		var lat []int64
		for kb := 10; kb <= 200; kb += 5 {
			dir := fidelityRun(t, fig10Variant(t, kb))
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r fidReport
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			ls := r.Analysis.Checks.Retransmission.Losses
			if len(ls) != 1 || ls[0].RetransmissionNs == nil {
				t.Fatalf("%d KB: losses %+v, want one", kb, ls)
			}
			sizes, lat = append(sizes, kb), append(lat, *ls[0].RetransmissionNs)
		}
		for i, v := range lat {
			if !plateau && v > lat[0] || plateau && v == lat[len(lat)-1] {
				return float64(sizes[i]), ""
			}
		}
		t.Fatalf("no onset/plateau in %v", lat)
		return 0, ""
	}
}

func fidelityRows() []fidelityRow {
	const r20, r100 = "fast-retransmission-20k.yaml", "fast-retransmission-100k.yaml"
	const c4, c6 = "fidelity/fast-retx-20k-cx4.yaml", "fidelity/fast-retx-20k-cx6.yaml"
	const ta, tn = "timeout-adaptive.yaml", "timeout-non-adaptive.yaml"
	rows := []fidelityRow{
		{quantity: "CX5 NACK generation (drops #1-#19 of 20)", source: "§6.2, Fig. 8(b)", variant: r20, paper: "≈1.1 µs",
			lo: 0.9, hi: 1.3, unit: "µs", kind: "circular", note: "nak-generation-delay 1.1 µs; the NIC subtracts the modelled link path",
			measure: meanLoss(r20, 20, 0, 19, gen)},
		{quantity: "CX6 NACK generation (drops #1-#19 of 20)", source: "§6.2, Fig. 8(c)", variant: c6, paper: "≈1.1 µs",
			lo: 0.9, hi: 1.3, unit: "µs", kind: "circular", note: "as CX5",
			measure: meanLoss(c6, 20, 0, 19, gen)},
		{quantity: "CX4 NACK generation (drops #1-#16 of 20)", source: "§6.2, Fig. 8(a)", variant: c4, paper: "≈1.1 µs",
			lo: 0.9, hi: 1.3, unit: "µs", kind: "circular", note: "floored by the sim path: 2×500 ns propagation + serialization at 40 Gb/s = 1.23 µs > 1.1 µs",
			measure: meanLoss(c4, 20, 0, 16, gen)},
		{quantity: "CX4 NACK generation, one of the last several packets dropped (#17-#19 of 20)", source: "§6.2, Fig. 8(a)", variant: c4, paper: "≈13 µs (\"e.g., the 19-th\")",
			lo: 12, hi: 14, unit: "µs", kind: "circular", note: "nak-generation-delay-last-packet 13 µs when the out-of-order packet is one of the message's last 3 (position from the RETH DMA length); \"several\" = 3 is an assumption",
			measure: meanLoss(c4, 20, 16, 19, gen)},
		{quantity: "CX4 NACK generation, drop #16 of 20 (not one of the last several)", source: "§6.2, Fig. 8(a)", variant: c4, paper: "≈1.1 µs",
			lo: 0.9, hi: 1.3, unit: "µs", kind: "circular", note: "the slow NACK is positional: it must not leak to earlier drops",
			measure: meanLoss(c4, 20, 15, 16, gen)},
		{quantity: "CX5 NACK reaction, late drops (#11-#20 of 20)", source: "§6.2, Fig. 9(b)", variant: r20, paper: "≈3 µs",
			lo: 2.7, hi: 3.3, unit: "µs", kind: "circular", note: "nak-reaction-delay 3 µs minus the modelled link path",
			measure: meanLoss(r20, 20, 10, 20, react)},
		{quantity: "CX6 NACK reaction, late drops (#11-#20 of 20)", source: "§6.2, Fig. 9(c)", variant: c6, paper: "≈3 µs",
			lo: 2.7, hi: 3.3, unit: "µs", kind: "circular", note: "as CX5",
			measure: meanLoss(c6, 20, 10, 20, react)},
		{quantity: "CX4 NACK reaction, smallest", source: "§6.2, Fig. 9(a)", variant: c4, paper: "150-200 µs",
			lo: 150, hi: 200, unit: "µs", kind: "circular", note: "nak-reaction-delay 150 µs + seeded uniform jitter [0, 50 µs)",
			measure: extremeLoss(c4, false, react)},
		{quantity: "CX4 NACK reaction, largest", source: "§6.2, Fig. 9(a)", variant: c4, paper: "150-200 µs",
			lo: 150, hi: 200, unit: "µs", kind: "circular", note: "as above",
			measure: extremeLoss(c4, true, react)},
		{quantity: "CX5 retransmission latency (loss to retransmission, 20 KB)", source: "§6.2 (\"~4.5 µs\")", variant: r20, paper: "≈4.5 µs",
			lo: 4.0, hi: 5.0, unit: "µs", kind: "circular", note: "the two constants above plus the gap to the next delivered packet (one frame time, emergent)",
			measure: meanLoss(r20, 20, 0, 19, retx)},
		{quantity: "CX5 NACK reaction, early drops (#1-#20 of 100 KB)", source: "§6.2, Fig. 9(b)", variant: r100, paper: "≈6 µs",
			lo: 5, hi: 7, unit: "µs", kind: "emergent", note: "the retransmission waits behind up to 70 committed frames of the transmit pipeline (Fig. 11); the depth is fitted to Fig. 10",
			measure: meanLoss(r100, 100, 0, 20, react)},
		{quantity: "CX5 NACK reaction, late drops (#81-#100 of 100 KB)", source: "§6.2, Fig. 9(b)", variant: r100, paper: "≈3 µs",
			lo: 2.7, hi: 3.3, unit: "µs", kind: "circular", note: "pipeline empty",
			measure: meanLoss(r100, 100, 80, 100, react)},
		{quantity: "Fig. 10: message size where the retransmission latency starts growing (CX6, 5th packet dropped)", source: "§6.2, Fig. 10(a)", variant: "generated: 10-200 KB, step 5 KB", paper: "≈50 KB",
			lo: 40, hi: 60, unit: "KB", kind: "emergent", note: "the data sent before the NAK reaction ends (line rate × switch-measured NACK round trip): from the calibration, not from a constant",
			measure: fig10(false)},
		{quantity: "Fig. 10: message size beyond which the retransmission latency is constant", source: "§6.2, Fig. 10(a)", variant: "generated: 10-200 KB, step 5 KB", paper: "≈120 KB",
			lo: 110, hi: 130, unit: "KB", kind: "circular", note: "onset + the pipeline depth, 70 frames fitted to this row",
			measure: fig10(true)},
		{quantity: "Adaptive: first timeout of message 1", source: "§6.3, Fig. 12(a)", variant: ta, paper: "5.6 ms",
			lo: 5.5, hi: 5.7, unit: "ms", kind: "circular", note: "stage 1 factors × T_tr(14)",
			measure: interval(ta, 0, 0)},
		{quantity: "Adaptive: message 1 timeout 7", source: "§6.3, Fig. 12(a)", variant: ta, paper: "134.2 ms",
			lo: 134, hi: 134.4, unit: "ms", kind: "circular",
			measure: interval(ta, 0, 6)},
		{quantity: "Adaptive: first timeout of message 2", source: "§6.3, Fig. 12(a)", variant: ta, paper: "0.267 s",
			lo: 0.262, hi: 0.272, unit: "s", kind: "circular", note: "stage 2, reached through the loss history (one earlier episode)",
			measure: interval(ta, 1, 0)},
		{quantity: "Adaptive: first timeout of message 3", source: "§6.3, Fig. 12(a)", variant: ta, paper: "0.671 s",
			lo: 0.66, hi: 0.68, unit: "s", kind: "circular", note: "stage 3 (two or more earlier episodes)",
			measure: interval(ta, 2, 0)},
		{quantity: "Adaptive: later timeouts", source: "§6.3, Fig. 12(a)", variant: ta, paper: "≈0.537 s",
			lo: 0.53, hi: 0.545, unit: "s", kind: "circular",
			measure: interval(ta, 4, 3)},
		{quantity: "Adaptive: first loss at message 4, no earlier loss: first timeout", source: "§6.3 (\"changes according to the packet loss frequency\")", variant: "fidelity/adaptive-history.yaml", paper: "not measured; 5.6 ms by the loss-history model (0.671 s if replayed by message index)",
			lo: 5.5, hi: 5.7, unit: "ms", kind: "emergent", note: "the stage follows the QP's timeout episodes, not the message index",
			measure: interval("fidelity/adaptive-history.yaml", 0, 0)},
		{quantity: "Adaptive, timeout 10: first timeout of message 1", source: "§6.3 (timeout 14 only)", variant: "fidelity/adaptive-timeout-10.yaml", paper: "not measured; 5.6 ms × 2^(10−14) = 0.35 ms by the model",
			lo: 0.345, hi: 0.355, unit: "ms", kind: "model", note: "assumption: the adaptive intervals are multiples of T_tr",
			measure: interval("fidelity/adaptive-timeout-10.yaml", 0, 0)},
		{quantity: "Non-adaptive: first timeout, smallest of 5 episodes", source: "§6.3, Fig. 12(b)", variant: tn, paper: "0.2-0.4 s",
			lo: 0.2, hi: 0.4, unit: "s", kind: "circular", note: "seeded uniform draw in [3, 4]·T_tr (the part of 0.2-0.4 s within the IB bound, as §6.3 says it obeys the spec)",
			measure: firstIntervals(tn, false)},
		{quantity: "Non-adaptive: first timeout, largest of 5 episodes", source: "§6.3, Fig. 12(b)", variant: tn, paper: "0.2-0.4 s",
			lo: 0.2, hi: 0.4, unit: "s", kind: "circular", note: "as above",
			measure: firstIntervals(tn, true)},
		{quantity: "Non-adaptive: later timeouts", source: "§6.3, Fig. 12(b)", variant: tn, paper: "≈0.537 s",
			lo: 0.53, hi: 0.545, unit: "s", kind: "circular", note: "timeout-next-factor 8 × T_tr(14)",
			measure: interval(tn, 0, 3)},
		{quantity: "Non-adaptive, timeout 12: later timeouts", source: "§6.3 (timeout 14 only); IBA T_tr", variant: "fidelity/non-adaptive-timeout-12.yaml", paper: "not measured; 8 × T_tr(12) = 134.2 ms by the model",
			lo: 133.5, hi: 135, unit: "ms", kind: "model", note: "the factors 3-4 and 8 apply to T_tr of the configured exponent",
			measure: interval("fidelity/non-adaptive-timeout-12.yaml", 0, 3)},
		{quantity: "Non-adaptive, timeout 12: first timeout, largest of 5 episodes", source: "§6.3 (timeout 14 only); IBA T_tr", variant: "fidelity/non-adaptive-timeout-12.yaml", paper: "not measured; [3, 4] × T_tr(12) = 50.3-67.1 ms by the model",
			lo: 50.3, hi: 67.2, unit: "ms", kind: "model",
			measure: firstIntervals("fidelity/non-adaptive-timeout-12.yaml", true)},
		{quantity: "Table 2: CX4 adaptive, max retries of messages 1-5", source: "§6.3, Table 2", variant: "generated from timeout-adaptive.yaml", paper: "13 8 7 7 7",
			kind: "circular", note: "max-retries per stage; the stage follows the loss history", measure: table2("cx4", true, []int{13, 8, 7, 7, 7}), want: "13 8 7 7 7"},
		{quantity: "Table 2: CX5 adaptive, max retries of messages 1-5", source: "§6.3, Table 2", variant: "generated from timeout-adaptive.yaml", paper: "13 8 8 8 8",
			kind: "circular", measure: table2("cx5", true, []int{13, 8, 8, 8, 8}), want: "13 8 8 8 8"},
		{quantity: "Table 2: CX6 adaptive, max retries of messages 1-5", source: "§6.3, Table 2", variant: "generated from timeout-adaptive.yaml", paper: "13 8 8 8 8",
			kind: "circular", measure: table2("cx6", true, []int{13, 8, 8, 8, 8}), want: "13 8 8 8 8"},
		{quantity: "Table 2: non-adaptive (CX5), max retries of messages 1-5", source: "§6.3, Table 2", variant: "generated from timeout-non-adaptive.yaml", paper: "7 7 7 7 7",
			kind: "circular", note: "retry_cnt", measure: table2("cx5", false, []int{7, 7, 7, 7, 7}), want: "7 7 7 7 7"},
		{quantity: "Table 3: CX4 time from 1st to 2nd ECN mark", source: "§6.4, Table 3", variant: "cnp-cx4.yaml", paper: "606, 599, 598 µs (mean 601)",
			lo: 570, hi: 630, unit: "µs", kind: "emergent", note: "900 packets at 40 Gb/s line rate",
			measure: ecnGap("cnp-cx4.yaml")},
		{quantity: "Table 3: CX5 time from 1st to 2nd ECN mark", source: "§6.4, Table 3", variant: "cnp-cx5.yaml", paper: "238, 238, 240 µs (mean 239)",
			lo: 227, hi: 251, unit: "µs", kind: "emergent", note: "900 packets at 100 Gb/s",
			measure: ecnGap("cnp-cx5.yaml")},
		{quantity: "Table 3: CX6 time from 1st to 2nd ECN mark", source: "§6.4, Table 3", variant: "cnp-cx6.yaml", paper: "237, 238, 242 µs (mean 239)",
			lo: 227, hi: 251, unit: "µs", kind: "emergent", note: "as CX5",
			measure: ecnGap("cnp-cx6.yaml")},
		{quantity: "Table 3: CX4 spread of the first ECN mark over the 3 QPs", source: "§6.4, Table 3", variant: "cnp-cx4.yaml", paper: "10, 31, 45 µs: 35 µs (\"within 50 µs\")",
			lo: 2, hi: 50, unit: "µs", kind: "circular", note: "qp-start-jitter 35 µs (the paper's spread) widened by bandwidth sharing; lock-step QPs gave ≤0.44 µs",
			measure: ecnSpread("cnp-cx4.yaml")},
		{quantity: "Table 3: CX5 spread of the first ECN mark over the 3 QPs", source: "§6.4, Table 3", variant: "cnp-cx5.yaml", paper: "8, 17, 18 µs: 10 µs (\"within 50 µs\")",
			lo: 2, hi: 50, unit: "µs", kind: "circular", note: "qp-start-jitter 10 µs, as above",
			measure: ecnSpread("cnp-cx5.yaml")},
		{quantity: "Table 3: CX6 spread of the first ECN mark over the 3 QPs", source: "§6.4, Table 3", variant: "cnp-cx6.yaml", paper: "9, 16, 17 µs: 8 µs (\"within 50 µs\")",
			lo: 2, hi: 50, unit: "µs", kind: "circular", note: "qp-start-jitter 8 µs, as above",
			measure: ecnSpread("cnp-cx6.yaml")},
		{quantity: "Table 4: CX4 CNPs per QP", source: "§6.4, Table 4", variant: "cnp-cx4.yaml", paper: "2 2 2",
			kind: "circular", note: "cnp-scope per-dest-ip (sourced); the counts follow from the pacing", measure: cnps("cnp-cx4.yaml"), want: "[2 2 2]"},
		{quantity: "Table 4: CX5 CNPs per QP", source: "§6.4, Table 4", variant: "cnp-cx5.yaml", paper: "2 2 2",
			kind: "circular", note: "per-dest-ip", measure: cnps("cnp-cx5.yaml"), want: "[2 2 2]"},
		{quantity: "Table 4: CX6 CNPs per QP", source: "§6.4, Table 4", variant: "cnp-cx6.yaml", paper: "2 0 0",
			kind: "circular", note: "per-port", measure: cnps("cnp-cx6.yaml"), want: "[2 0 0]"},
	}
	return append(rows, odpFidelityRows()...)
}

// TestFidelity measures each row of the fidelity table through the whole
// chain and fails when a value leaves the paper's range. With
// -fidelity-doc it rewrites docs/fidelity.md with the measured values.
func TestFidelity(t *testing.T) {
	rows := fidelityRows()
	measured := make([]string, len(rows))
	for i, r := range rows {
		t.Run(r.quantity, func(t *testing.T) {
			v, s := r.measure(t)
			if r.want != "" {
				measured[i] = s
				if s != r.want {
					t.Errorf("%s (%s, %s) = %s, want %s", r.quantity, r.source, r.variant, s, r.want)
				}
				return
			}
			x := v / unitNs[r.unit]
			measured[i] = fmt.Sprintf("%.4g %s", x, r.unit)
			if !(x >= r.lo && x <= r.hi) {
				t.Errorf("%s (%s, %s) = %.4g %s, want in [%v, %v] (paper %s)", r.quantity, r.source, r.variant, x, r.unit, r.lo, r.hi, r.paper)
			}
		})
	}
	if !*fidelityDoc || t.Failed() {
		return
	}
	var b strings.Builder
	b.WriteString(fidelityHeader)
	b.WriteString("| # | quantity | paper (source) | accepted | measured | variant | kind | how |\n|---|---|---|---|---|---|---|---|\n")
	for i, r := range rows {
		acc := r.want
		if acc == "" {
			acc = fmt.Sprintf("%v-%v %s", r.lo, r.hi, r.unit)
		}
		v := r.variant
		if strings.HasSuffix(v, ".yaml") && !strings.Contains(v, " ") {
			v = "`examples/" + v + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s (%s) | %s | %s | %s | %s | %s |\n", i+1, r.quantity, r.paper, r.source, acc, measured[i], v, r.kind, r.note)
	}
	b.WriteString(fidelityFooter)
	if err := os.WriteFile("../docs/fidelity.md", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

const fidelityHeader = `# Fidelity: the Lumina paper's §6 numbers through lumina's chain

Generated by ` + "`go test -run TestFidelity ./tests/ -fidelity-doc`" + `; do not edit the table by hand.
Each row is one quantity of the Lumina paper (SIGCOMM'23, §6), measured through the whole chain:
a sim run of the example or variant (softrnic personalities, software switch, mirror copies),
the switch's timestamps, the analyzers' report.json. TestFidelity fails when a value leaves the
accepted range.

The rows marked "Fukuoka et al." are the numbers of the On-Demand Paging paper (Fukuoka et al.,
*Analyzing Performance Pitfalls of On-Demand Paging of InfiniBand*: a ConnectX-4 on InfiniBand,
ibdump at the client, min_rnr_timer 1.28 ms; docs/odp.md), read from the examples' traces
(times from the switch's timestamps, the paper's relative to its first request) and from the
post-interval sweeps of ` + "`tests/odp_test.go`" + ` (Fig. 8: one sim run per interval).

Kind: **circular** — a constant set from the paper's number and read back (the row checks that the
chain, and the calibration below, preserve it); **emergent** — the value follows from a modelled
mechanism, not from a constant holding it; **model** — the paper has no number; the row pins
lumina's model (an assumption, named in the note).

Calibration: the paper measured every NIC latency at the switch. The personalities hold those
switch-measured values; the software RNIC subtracts the time its two frames spend on its link
(serialization at the link's speed plus propagation, from the sim link model, ` + "`sim.PathModel`" + `),
so the analyzers read the paper's value at every link speed, MTU and frame size. Where the
modelled path alone exceeds the paper's value (CX4 at 40 Gb/s with the sim's 500 ns of
propagation per link) the NIC adds nothing and the path is what is measured.

`

const fidelityFooter = `
Reproduce one row by hand: ` + "`" + `lumina run -o /tmp/fid examples/fast-retransmission-20k.yaml` + "`" + ` and read
` + "`" + `analysis.checks.retransmission.losses` + "`" + ` (nack_generation_ns, nack_reaction_ns) or
` + "`" + `analysis.checks.timeout.timeouts` + "`" + ` (intervals_ns, retries) in report.json; the generated variants
(Table 2, Fig. 10) are written by the test into its work directory.

## Limits and assumptions

- **CX4 "last several packets"** (§6.2, Fig. 8(a)): the paper shows a slow NACK (≈13 µs) when
  one of the last several packets is dropped, without saying how many or why. lumina applies it
  when the out-of-order packet is one of the message's last 3 (its position follows from the
  RETH DMA length): the number 3 and the mechanism are assumptions; the 13 µs is the paper's.
- **QP start skew** (§6.4, Table 3): no mechanism in the paper. Each QP's first transmission waits
  a seeded uniform delay below the paper's first-mark spread (35/10/8 µs); the spread measured
  through the chain is wider for CX5/CX6 (a QP that starts alone runs at line rate while the later
  ones share it and wait behind the transmit pipeline), inside the paper's "within 50 µs".
- **Fig. 9(b) vs Fig. 10**: one fixed-depth transmit pipeline cannot meet both: depth 36 gives
  Fig. 9(b)'s ≈6 µs for early drops in 100 KB but a Fig. 10 plateau at ≈90 KB; depth 70 (used)
  gives Fig. 10's 50/120 KB and early drops of 5.9–7.6 µs (mean ≈6.8 µs, the Fig. 9(b) early-drop row).
- **Adaptive history decay**: §6.3 says the adaptive timeout "changes according to the packet
  loss frequency"; lumina's stage counts the QP's timeout episodes and never forgets them (the paper
  has no data on how the NIC forgets). The values of each stage are the paper's (timeout 14),
  scaled by T_tr for other exponents (an assumption: the "model" rows are its own numbers).
- **E810**: no personality; a sim or netns run with ` + "`" + `nic.type: e810` + "`" + ` and a builtin personality is
  refused (softrnic.ErrNoPersonality): the paper has no E810 measurement.
- **ECN by queue depth** (` + "`" + `switch.ecn` + "`" + `): RED on the *instantaneous* depth of the egress queue
  (egress port, priority) a packet joins, measured before it joins, as Tofino's ` + "`" + `enq_qdepth` + "`" + `
  reports it; no averaging (DCQCN's switch marking, Zhu et al. SIGCOMM 2015 §3.1, uses the
  instantaneous queue as well). Both the software switch and ` + "`" + `lumina.p4` + "`" + ` mark from the same
  ` + "`" + `Egress.ecn_red` + "`" + ` entries the control plane writes (docs/tofino.md): thresholds in 80-byte cells
  (Tofino 1; 176 assumed for Tofino 2, not selected automatically) and a random mask of 2^k − 1,
  so the probability reached at kmax is ` + "`" + `pmax' = (kmax_cells − kmin_cells)/2^k` + "`" + `, ` + "`" + `2^k` + "`" + ` the power
  of two nearest ` + "`" + `(kmax_cells − kmin_cells)/pmax` + "`" + `: within −29 % … +41 % of the configured ` + "`" + `pmax` + "`" + `,
  on sim as on hardware (an exact ` + "`" + `pmax` + "`" + ` such as 0.1 cannot be had without a division at line
  rate). The software switch counts a queue's cells as ⌈len/80⌉ per frame; Tofino's traffic
  manager may charge per-packet overhead the model does not (unmeasured), and its depth is its
  own, not the software queue model's. The mirror copy's depth field is in bytes, rounded down
  to its 11-bit code (exact below 256 bytes, then within 1/32).
- **A fabric** ([fabric.md](fabric.md)): every testbed runs it as one switch partitioned into
  logical switches (Hawkeye's method on one Tofino), so all switches share one clock and one
  software PFC model per port and priority; a real multi-switch fabric has a clock per switch
  (timestamps comparable only within their skew) and its own buffer sharing and thresholds,
  which lumina does not model per vendor. Routes are lumina's choice, not a switch's: symmetric,
  per host pair (a seeded hash among equal-cost shortest paths), where a switch's ECMP hashes
  each packet's 5-tuple, so all QPs between two hosts share one path. On netns a switch-to-switch
  link has no propagation delay (` + "`" + `delay-ns` + "`" + ` applies on sim only).
- **Retransmission timer of a paused QP** (softrnic): the timer runs from the go-back whether or
  not the retransmission can leave a port paused by PFC, so a QP stuck behind a deadlock ends by
  its retry limit (RETRY_EXC_ERR), as rxe (Linux ` + "`" + `rxe_comp.c` + "`" + `) re-arms its timer while PSNs are outstanding. The local ACK timeout counts from the
  transmission it guards; how a ConnectX counts it while its port is paused is unmeasured.
- **DCQCN reaction point** (softrnic ` + "`" + `dcqcn.go` + "`" + `): the equations are the DCQCN paper's (Zhu et
  al., SIGCOMM 2015, §3.1: cut ` + "`" + `R_C·(1 − α/2)` + "`" + `, ` + "`" + `α ← (1 − g)α + g` + "`" + ` with a CNP in the α period,
  fast recovery, additive and hyper increase on the timer and byte counter) with the ConnectX
  defaults NVIDIA documents for them ("DCQCN CC Parameters": ` + "`" + `rpg_gd` + "`" + ` 11, ` + "`" + `rpg_min_dec_fac` + "`" + ` 50 %,
  ` + "`" + `rpg_ai_rate` + "`" + ` 5 Mb/s, ` + "`" + `rpg_hai_rate` + "`" + ` 50 Mb/s, ` + "`" + `rpg_time_reset` + "`" + ` 300 µs, ` + "`" + `rpg_threshold` + "`" + ` 1,
  ` + "`" + `rate_reduce_monitor_period` + "`" + ` 4 µs, ` + "`" + `dce_tcp_g` + "`" + ` 1019, ` + "`" + `initial_alpha_value` + "`" + ` 1023,
  ` + "`" + `dce_tcp_rtt` + "`" + ` 1 µs). The α update period was the paper's K = 55 µs (the DCQCN authors'
  simulator value) until issue #30; with 1 µs no two-host example's sim trace changes (compared
  byte for byte), nor pairs' or bidirectional's, and incast-ecn goes from 14.9 to 46.5 Gb/s of goodput (α
  decays between CNPs instead of staying near 1, so cuts shrink from 50 %). How the firmware
  applies these parameters beyond the paper's equations (rounding, timers' phase) is unmeasured.
- **On-Demand Paging** (softrnic ` + "`" + `odp.go` + "`" + `; Fukuoka et al., *Analyzing Performance Pitfalls of
  On-Demand Paging of InfiniBand*, Figs. 2, 6, 11: a ConnectX-4 on InfiniBand, ibdump at the
  client, min_rnr_timer 1.28 ms). Sourced (cx4): a page fault resolves in ≈500 µs
  (` + "`" + `odp-page-fault` + "`" + `), the RNR NAK leaves 140 µs after the faulting request (` + "`" + `odp-rnr-nak-delay` + "`" + `),
  the requester re-sends ≈3× the encoded timer after the NAK (` + "`" + `rnr-wait-factor` + "`" + `), a duplicate
  READ is answered after ≈80 µs (` + "`" + `odp-dup-read-delay` + "`" + `). Assumed: cx5 and cx6 take cx4's values
  (no ODP measurement of them is public); spec waits exactly the encoded time and answers at once
  (cx4's page-fault time, a host property); the lost second READ is modelled as a new request
  dropped while a duplicate READ is being served (lumina's reading of Figs. 6, 7, 11); a WRITE or
  SEND that faults at the responder is discarded; while a responder fault is pending, the faulting
  request re-sent (an RNR wait shorter than the fault) gets another RNR NAK and any other request is
  dropped silently (so a short min_rnr_timer costs RNR waits, not a transport timeout); a WRITE or
  SEND whose source faults leaves when the fault resolves (the paper has no trace of these); pages are never evicted (` + "`" + `page_invalidations` + "`" + ` stays 0). Known
  difference: cx4's slow NACK for a message's last packets (13 µs, Lumina Fig. 8(a)) also
  applies to an out-of-order READ request, where Fukuoka et al.'s Fig. 11 shows the NAK 1 µs
  after it. Known differences in the ODP rows: the lost second READ waits for lumina's cx4 first
  transport timeout (3–4 × T_tr(14) = 201–268 ms, the Lumina paper's §6.3), where Fukuoka et
  al.'s card waited ≈0.5 s (its minimum timeout); Fig. 8 left's window ends at 4.0 ms, not
  ≈4.5 ms, because lumina's RNR wait (3.84 ms) is the short end of the paper's 3.77–4.42 ms; at
  min_rnr_timer 0.01 ms Fig. 8 right shows two waves where lumina gives one window (its
  requester holds new requests from the first RNR NAK to the re-send after its own page fault
  without a break; what let the paper's second READ through between the waves is not in the
  paper's traces). The sweeps are ` + "`TestODPSweep`" + ` (` + "`tests/odp_test.go`" + `): one sim run per
  interval, ` + "`lumina run --set traffic.post-interval-us=N`" + ` by hand.
`

// TestE810Refused: a sim run of a host with nic type e810 and a builtin
// personality is refused with a clear error, at the key, by validate and
// by run before anything runs, instead of silently running the spec
// personality (the paper has no E810 measurement).
func TestE810Refused(t *testing.T) {
	f := filepath.Join(t.TempDir(), "e810.yaml")
	if err := os.WriteFile(f, []byte("name: e810\nresponder: {nic: {type: e810}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := f + ":2:25: nic type e810: no software personality"
	r := luminaExit(t, 2, "run", "-q", "-o", t.TempDir(), f)
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "nothing was run") {
		t.Errorf("lumina run (e810): stdout %q stderr %q; want the e810 refusal at the key", r.stdout, r.stderr)
	}
	r = luminaExit(t, 1, "validate", f)
	if !strings.Contains(r.stdout, want) {
		t.Errorf("lumina validate (e810): stdout %q stderr %q; want the e810 refusal at the key", r.stdout, r.stderr)
	}
}
