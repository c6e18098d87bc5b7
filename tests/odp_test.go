package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// The On-Demand Paging examples (examples/odp/, docs/odp.md) on sim: the
// packet sequences of Fukuoka et al., Analyzing Performance Pitfalls of
// On-Demand Paging of InfiniBand, Figs. 2, 6, 11, and the post-interval
// sweep of its Fig. 8. The runs are in-process (orchestrator.RunTest on
// the test file loaded as lumina run loads it, --set through
// config.LoadOptions.Set), so that a sweep of dozens of runs stays cheap;
// the sim testbed is deterministic, so every timestamp is asserted exactly.

// odpTimeoutGap is the gap after which a re-sent READ request counts as a
// transport timeout in the sweeps: cx4's first timeout is at least
// 3 × T_tr(14) ≈ 201 ms (the Lumina paper, §6.3), while the longest wait
// that is not a timeout — the RNR wait, 3 × 1.28 ms, or a page fault of at
// most 1.5 ms in these examples — is under 4 ms: 100 ms is far from both.
const odpTimeoutGap = 100 * time.Millisecond

// odpRuns caches the in-process runs of this file, by file and settings,
// once per test binary (the directories are read-only for tests).
var odpRuns struct {
	sync.Mutex
	dirs map[string]string
}

// odpRun runs file on sim in-process with the --set settings sets, loaded
// as lumina run loads it (config.LoadOptions with Personalities and Set),
// and returns its repeat 0 directory. The run must be valid; its checks'
// verdicts are not asserted here (the traces are).
func odpRun(t *testing.T, file string, sets ...string) string {
	t.Helper()
	key := strings.Join(append([]string{file}, sets...), " ")
	odpRuns.Lock()
	defer odpRuns.Unlock()
	if d, ok := odpRuns.dirs[key]; ok {
		return d
	}
	tc := odpLoad(t, file, sets...)
	if odpRuns.dirs == nil {
		odpRuns.dirs = map[string]string{}
	}
	out := filepath.Join(workDir, "odp", fmt.Sprint(len(odpRuns.dirs)))
	res := orchestrator.RunTest(context.Background(), tc, orchestrator.Options{OutDir: out, Progress: io.Discard})
	if res.Err != nil || len(res.Repeats) != 1 || !res.Repeats[0].Report.Valid {
		t.Fatalf("run %s: error %v, %d repeats; want one valid repeat", key, res.Err, len(res.Repeats))
	}
	odpRuns.dirs[key] = res.Repeats[0].Dir
	return res.Repeats[0].Dir
}

// odpLoad loads file as lumina run --set S... loads it.
func odpLoad(t *testing.T, file string, sets ...string) *config.Test {
	t.Helper()
	o := config.LoadOptions{Personalities: true}
	for _, s := range sets {
		st, err := config.ParseSetting(s)
		if err != nil {
			t.Fatal(err)
		}
		o.Set = append(o.Set, st)
	}
	tc, err := config.LoadWith(file, o)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// odpFrame is one frame of an ODP trace: its opcode, its PSN relative to
// the requester's initial PSN, its AETH syndrome (if any) and the switch's
// timestamp.
type odpFrame struct {
	op       roce.Opcode
	psn      int
	syndrome string // "rnr(timer=14)", "nak(psn_sequence_error)", "ack(credit=31)"; "" without an AETH
	ns       int64
}

// String is the frame as the tests pin it: "READ_REQUEST +0 @30392",
// "ACKNOWLEDGE rnr(timer=14) +0 @170392".
func (f odpFrame) String() string {
	op := strings.TrimPrefix(strings.TrimPrefix(f.op.String(), "RC_"), "RDMA_")
	if f.op == roce.RCAcknowledge {
		op += " " + f.syndrome
	}
	return fmt.Sprintf("%s +%d @%d", op, f.psn, f.ns)
}

func (f odpFrame) request() bool { return f.op.IsReadRequest() }

// odpGenerator is the part of generator.json the ODP tests read.
type odpGenerator struct {
	QPs []struct {
		Completed           int     `json:"completed"`
		Errors              int     `json:"errors"`
		MessageCompletionNs []int64 `json:"message_completion_ns"`
	} `json:"qps"`
	Connections []struct {
		Requester struct {
			IPSN uint32 `json:"ipsn"`
		} `json:"requester"`
	} `json:"connections"`
}

func odpReadGenerator(t *testing.T, dir string) *odpGenerator {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "generator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g odpGenerator
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s/generator.json: %v", dir, err)
	}
	if len(g.Connections) != 1 || len(g.QPs) != 1 {
		t.Fatalf("%s/generator.json: %d connections, %d QPs; want one of each", dir, len(g.Connections), len(g.QPs))
	}
	return &g
}

// odpTrace reads a run's trace: every RoCE frame, PSNs relative to the
// requester's initial PSN (generator.json), timestamps the switch's.
func odpTrace(t *testing.T, dir string) []odpFrame {
	t.Helper()
	ipsn := roce.PSN(odpReadGenerator(t, dir).Connections[0].Requester.IPSN)
	var out []odpFrame
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if tp.IsMACMirror() {
			return nil
		}
		if err := (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p); err != nil {
			return err
		}
		f := odpFrame{op: p.Opcode, psn: int(p.BTH.PSN().Sub(ipsn)), ns: int64(p.Mirror().TimestampNs)}
		if p.Opcode.HasAETH() {
			f.syndrome = p.AETH.Syndrome().String()
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// odpFile is examples/odp/NAME.yaml from the tests folder.
func odpFile(name string) string { return filepath.Join("..", "examples", "odp", name+".yaml") }

// odpLongestGap is the longest time between two transmissions in a row
// of the READ request at psn (0 if it was sent once).
func odpLongestGap(frames []odpFrame, psn int) time.Duration {
	var longest time.Duration
	last := int64(-1)
	for _, f := range frames {
		if !f.request() || f.psn != psn {
			continue
		}
		if last >= 0 {
			longest = max(longest, time.Duration(f.ns-last))
		}
		last = f.ns
	}
	return longest
}

// odpTimedOut reports whether the run's second READ (PSN +1) timed out:
// its trace shows the request re-sent odpTimeoutGap or more after its
// previous transmission. generator.json must agree (the message's
// completion time at or above odpTimeoutGap exactly when the trace shows
// the timeout) and both READs must have completed without error.
func odpTimedOut(t *testing.T, dir string) bool {
	t.Helper()
	out := odpLongestGap(odpTrace(t, dir), 1) >= odpTimeoutGap
	qp := odpReadGenerator(t, dir).QPs[0]
	if qp.Completed != 2 || qp.Errors != 0 || len(qp.MessageCompletionNs) != 2 {
		t.Fatalf("%s: %d completed, %d errors, completions %v; want both READs completed", dir, qp.Completed, qp.Errors, qp.MessageCompletionNs)
	}
	if slow := qp.MessageCompletionNs[1] >= int64(odpTimeoutGap); slow != out {
		t.Errorf("%s: trace says timeout %v, generator.json's completion of the 2nd READ %d ns", dir, out, qp.MessageCompletionNs[1])
	}
	return out
}

// odpSweep runs file with traffic.post-interval-us over from..to (step),
// each with the settings sets too, and returns the intervals whose second
// READ timed out (odpTimedOut).
func odpSweep(t *testing.T, file string, from, to, step int, sets ...string) []int {
	t.Helper()
	var out []int
	for us := from; us <= to; us += step {
		dir := odpRun(t, file, append(slices.Clone(sets), fmt.Sprintf("traffic.post-interval-us=%d", us))...)
		if odpTimedOut(t, dir) {
			out = append(out, us)
		}
	}
	return out
}

// odpPageFault is the page-fault time of a host's NIC: its nic.odp
// page-fault-us, else its personality's odp-page-fault.
func odpPageFault(h config.Host, p softrnic.Personality) time.Duration {
	if h.NIC.ODP != nil && h.NIC.ODP.PageFaultUs > 0 {
		return time.Duration(h.NIC.ODP.PageFaultUs) * time.Microsecond
	}
	return time.Duration(p.ODPPageFault)
}

// odpPersonalities are the personalities of a test's requester and
// responder.
func odpPersonalities(t *testing.T, tc *config.Test) (req, resp softrnic.Personality) {
	t.Helper()
	req, err := softrnic.LoadPersonality(tc.Requester.NIC.Personality)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err = softrnic.LoadPersonality(tc.Responder.NIC.Personality); err != nil {
		t.Fatal(err)
	}
	return req, resp
}

// odpRNRDelay is the time from a request whose responder DMA faults to
// the requester's retry: the responder's odp-rnr-nak-delay, then
// RNRTimer(min-rnr-timer) × the requester's rnr-wait-factor (the link
// paths, about a µs, aside).
func odpRNRDelay(t *testing.T, tc *config.Test) time.Duration {
	req, resp := odpPersonalities(t, tc)
	wait := time.Duration(float64(roce.RNRTimer(uint8(tc.Traffic.MinRNRTimer))) * req.RNRWaitFactor)
	return time.Duration(resp.ODPRNRNakDelay) + wait
}

// An odpSweepCase is one panel of Fukuoka et al.'s Fig. 8 on sim: two
// READs, traffic.post-interval-us over a grid, and the waiting period
// that should end the window of intervals whose second READ times out.
type odpSweepCase struct {
	name, file     string
	sets           []string // --set settings besides the interval
	from, to, step int      // the grid of post-interval-us
	paper          string   // what Fig. 8 shows
	// wait is the waiting period from the first request on, from the
	// personalities and the test's keys; waitDoc names it.
	wait    func(t *testing.T, tc *config.Test) time.Duration
	waitDoc string
	// withinStep asks for the edge within one grid step of wait (the
	// issue's criterion for Fig. 8 left and middle).
	withinStep bool
}

var odpTwoREADs = []string{"traffic.num-msgs-per-qp=2", "traffic.tx-depth=2"}

// odpSweepCases are the sweeps: remote (Fig. 8 left) on odp-two-reads, local
// (Fig. 8 middle) on odp-local with two READs, remote-local (Fig. 8 right)
// on odp-remote-local with two READs at min-rnr-timer 14 and 1.
func odpSweepCases() []odpSweepCase {
	pageFault := func(t *testing.T, tc *config.Test) (req, resp time.Duration) {
		rq, rs := odpPersonalities(t, tc)
		return odpPageFault(tc.Requester, rq), odpPageFault(tc.Responder, rs)
	}
	return []odpSweepCase{
		{name: "remote", file: odpFile("odp-two-reads"), from: 250, to: 6000, step: 250, paper: "≈4500 µs", withinStep: true,
			waitDoc: "the RNR delay (odp-rnr-nak-delay + RNRTimer(14) × rnr-wait-factor)",
			wait:    odpRNRDelay},
		{name: "local", file: odpFile("odp-local"), sets: odpTwoREADs, from: 100, to: 1500, step: 100, paper: "≈500 µs", withinStep: true,
			waitDoc: "the requester's page-fault time",
			wait: func(t *testing.T, tc *config.Test) time.Duration {
				req, _ := pageFault(t, tc)
				return req
			}},
		// The RNR wait, the duplicate READ's service (its response is
		// the one that faults at the requester), the requester's fault:
		// Fig. 8 right's "remote ODP and local ODP joined together".
		{name: "remote-local", file: odpFile("odp-remote-local"), sets: odpTwoREADs, from: 250, to: 6000, step: 250, paper: "remote and local joined (≈4.5 ms at 1.28 ms)",
			waitDoc: "the RNR delay + odp-dup-read-delay + the requester's page-fault time",
			wait: func(t *testing.T, tc *config.Test) time.Duration {
				req, _ := pageFault(t, tc)
				_, resp := odpPersonalities(t, tc)
				return odpRNRDelay(t, tc) + time.Duration(resp.ODPDupReadDelay) + req
			}},
		// min-rnr-timer 1 (0.01 ms, an RNR wait of 30 µs on cx4): each
		// retry reaches the responder while its fault is pending and gets
		// another RNR NAK; the READ executes when the fault resolves, its
		// response faults at the requester, which re-sends the READ when
		// that fault resolves. The requester holds new requests from the
		// first RNR NAK to that re-send without a break (the retries' RNR
		// NAKs overlap the local fault), so lumina gives one window, up to
		// both page faults in a row (+ the duplicate READ's service),
		// where the paper's Fig. 8 right shows two waves, one per waiting
		// period: on the ConnectX-4 a second READ posted between the RNR
		// retries and the local fault got through. What let it through is
		// not in the paper (it has no trace of this case), and lumina does
		// not model it: a known difference (docs/fidelity.md). The grid
		// step, 50 µs, is below odp-dup-read-delay, so the edge is checked
		// against the end of the duplicate's service only.
		{name: "remote-local, min-rnr-timer 1", file: odpFile("odp-remote-local"), sets: append(slices.Clone(odpTwoREADs), "traffic.min-rnr-timer=1"),
			from: 50, to: 1500, step: 50, paper: "two waves: RNR delay, then the local page fault",
			waitDoc: "the responder's and the requester's page-fault times in a row",
			wait: func(t *testing.T, tc *config.Test) time.Duration {
				req, resp := pageFault(t, tc)
				return resp + req
			}},
	}
}

// odpPathSlack bounds the link paths in a window's edge: the requests
// and responses cross two 500 ns links a few times (about 1-3 µs).
const odpPathSlack = 10 * time.Microsecond

// edge runs the sweep and returns its window's upper edge (the largest
// interval whose second READ timed out) and the waiting period the model
// says it follows. It fails unless the intervals that time out are
// exactly the grid's values from its lowest up to the edge: one window,
// starting at the lowest interval.
func (c odpSweepCase) edge(t *testing.T) (edge int, wait time.Duration) {
	t.Helper()
	got := odpSweep(t, c.file, c.from, c.to, c.step, c.sets...)
	if len(got) == 0 {
		t.Fatalf("sweep %s: no interval timed out", c.name)
	}
	edge = got[len(got)-1]
	var want []int
	for us := c.from; us <= edge; us += c.step {
		want = append(want, us)
	}
	if !slices.Equal(got, want) {
		t.Errorf("sweep %s: intervals with a timeout = %v, want every interval from %d to %d µs", c.name, got, c.from, edge)
	}
	return edge, c.wait(t, odpLoad(t, c.file, c.sets...))
}

// TestODPSweep is Fukuoka et al.'s Fig. 8 on sim: one run per interval
// between the two READs, the second READ timing out (odpTimedOut) for
// every interval from the grid's lowest up to an edge and for none above.
// The model says where the edge is: the second READ is lost when it is
// posted while the requester waits (it is held, then leaves behind the
// re-sent READ) or while the responder serves that duplicate READ
// (odp-dup-read-delay), counted from the first request's departure, which
// the QP's start jitter (below the personality's qp-start-jitter) delays
// from time 0, where the intervals count from. So the first interval
// without a timeout is above wait + odp-dup-read-delay, and the edge at
// most that + qp-start-jitter + the link paths. For Fig. 8 left and
// middle the edge is also within one grid step of the waiting period (the
// RNR delay, the page-fault time), as the issue asks. wait comes from the
// personalities and the examples' keys.
func TestODPSweep(t *testing.T) {
	for _, c := range odpSweepCases() {
		t.Run(c.name, func(t *testing.T) {
			edge, wait := c.edge(t)
			req, resp := odpPersonalities(t, odpLoad(t, c.file, c.sets...))
			step := time.Duration(c.step) * time.Microsecond
			e, end := time.Duration(edge)*time.Microsecond, wait+time.Duration(resp.ODPDupReadDelay)
			t.Logf("%s: timeouts from %d to %d µs (step %d); %s = %v; paper: %s", c.name, c.from, edge, c.step, c.waitDoc, wait, c.paper)
			if d := e - wait; c.withinStep && (d < -step || d > step) {
				t.Errorf("window edge %v, want within %v of %s = %v", e, step, c.waitDoc, wait)
			}
			if late := end + time.Duration(req.QPStartJitter) + odpPathSlack; e+step <= end || e > late {
				t.Errorf("window edge %v, want the last grid value before %s + odp-dup-read-delay = %v (at most %v with qp-start-jitter and the link paths)", e, c.waitDoc, end, late)
			}
		})
	}
}

// odpCounters reads a run's NIC counters (counters.json) by role.
func odpCounters(t *testing.T, dir string) map[string]map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "counters.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		NICs map[string]map[string]uint64 `json:"nics"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s/counters.json: %v", dir, err)
	}
	return c.NICs
}

// TestODPSequences: each ODP example's trace on sim, frame by frame
// (opcode, PSN relative to the requester's initial PSN, AETH syndrome of
// an acknowledge, switch timestamp in ns), and the page faults of each
// side. The first request reaches the switch at 30.392 µs; the paper's
// times, relative to its first request, are in each example's header.
func TestODPSequences(t *testing.T) {
	tests := []struct {
		name   string
		want   []string
		faults [2]uint64 // page_faults of requester, responder
	}{
		// Fig. 2 left: the RNR NAK 140 µs after the request, the READ
		// executed when the fault resolved (400 µs) and its response
		// discarded, the retry 3 × 1.28 ms after the NAK, the duplicate
		// answered 80 µs later.
		{"odp-remote", []string{
			"READ_REQUEST +0 @30392",
			"ACKNOWLEDGE rnr(timer=14) +0 @170392",
			"READ_RESPONSE_ONLY +0 @431440",
			"READ_REQUEST +0 @4011420",
			"READ_RESPONSE_ONLY +0 @4091420",
		}, [2]uint64{0, 1}},
		// Fig. 2 middle: the response dropped at the requester (its
		// buffer faults), the READ re-sent when the fault resolved
		// (520 µs), the duplicate answered 80 µs later.
		{"odp-local", []string{
			"READ_REQUEST +0 @30392",
			"READ_RESPONSE_ONLY +0 @31440",
			"READ_REQUEST +0 @552488",
			"READ_RESPONSE_ONLY +0 @632488",
		}, [2]uint64{1, 0}},
		// Figs. 6/7 left: the second READ (posted at 3 ms, during the RNR
		// wait) leaves 19 ns behind the retry, reaches the responder while
		// it serves the duplicate, and is dropped: re-sent after cx4's
		// first transport timeout (231.8 ms later), answered at once.
		{"odp-two-reads", []string{
			"READ_REQUEST +0 @30392",
			"ACKNOWLEDGE rnr(timer=14) +0 @170392",
			"READ_RESPONSE_ONLY +0 @431440",
			"READ_REQUEST +0 @4011420",
			"READ_REQUEST +1 @4011439",
			"READ_RESPONSE_ONLY +0 @4091420",
			"READ_REQUEST +1 @235860402",
			"READ_RESPONSE_ONLY +1 @235861450",
		}, [2]uint64{0, 1}},
		// Fig. 11: as odp-two-reads until the third READ (posted at 6 ms):
		// the responder still expects the second, answers a PSN sequence
		// error NAK, and the requester re-sends the second and the third
		// (cx4's NAK reaction, 150-200 µs): both answered, no timeout.
		{"odp-three-reads", []string{
			"READ_REQUEST +0 @30392",
			"ACKNOWLEDGE rnr(timer=14) +0 @170392",
			"READ_RESPONSE_ONLY +0 @431440",
			"READ_REQUEST +0 @4011420",
			"READ_REQUEST +1 @4011439",
			"READ_RESPONSE_ONLY +0 @4091420",
			"READ_REQUEST +2 @6000515",
			"ACKNOWLEDGE nak(psn_sequence_error) +1 @6013515",
			"READ_REQUEST +1 @6187011",
			"READ_REQUEST +2 @6187030",
			"READ_RESPONSE_ONLY +1 @6188059",
			"READ_RESPONSE_ONLY +2 @6188095",
		}, [2]uint64{0, 1}},
		// Fig. 2 right: the remote fault as in odp-remote, then the
		// retry's response faults at the requester (580 µs), which
		// re-sends the READ: three round trips.
		{"odp-remote-local", []string{
			"READ_REQUEST +0 @30392",
			"ACKNOWLEDGE rnr(timer=14) +0 @170392",
			"READ_RESPONSE_ONLY +0 @431440",
			"READ_REQUEST +0 @4011420",
			"READ_RESPONSE_ONLY +0 @4091420",
			"READ_REQUEST +0 @4672468",
			"READ_RESPONSE_ONLY +0 @4752468",
		}, [2]uint64{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := odpRun(t, odpFile(tt.name))
			var got []string
			for _, f := range odpTrace(t, dir) {
				got = append(got, f.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("frames =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			nics := odpCounters(t, dir)
			for i, role := range []string{"requester", "responder"} {
				if n := nics[role]["page_faults"]; n != tt.faults[i] {
					t.Errorf("%s page_faults = %d, want %d", role, n, tt.faults[i])
				}
			}
			qp := odpReadGenerator(t, dir).QPs[0]
			if qp.Errors != 0 || qp.Completed != len(qp.MessageCompletionNs) || qp.Completed == 0 {
				t.Errorf("generator: %d completed, %d errors; want every READ completed", qp.Completed, qp.Errors)
			}
		})
	}
}

// odpFidFrames is the trace of examples/FILE's fidelity run (lumina run,
// as the other fidelity rows).
func odpFidFrames(t *testing.T, file string) []odpFrame {
	t.Helper()
	return odpTrace(t, fidelityRun(t, "../examples/"+file))
}

// odpDelta measures the time from frame i to frame j of examples/FILE's
// trace; each must start as its pinned form does (TestODPSequences), e.g.
// "READ_REQUEST +0".
func odpDelta(file string, i int, a string, j int, b string) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		fs := odpFidFrames(t, file)
		for _, f := range []struct {
			k    int
			want string
		}{{i, a}, {j, b}} {
			if f.k >= len(fs) || !strings.HasPrefix(fs[f.k].String(), f.want+" @") {
				t.Fatalf("%s: frame %d is not %s (frames %v)", file, f.k, f.want, fs)
			}
		}
		return float64(fs[j].ns - fs[i].ns), ""
	}
}

// odpEdge measures a sweep's window edge (odpSweepCase.edge), in ns.
func odpEdge(name string) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		for _, c := range odpSweepCases() {
			if c.name == name {
				edge, _ := c.edge(t)
				return float64(edge) * 1e3, ""
			}
		}
		t.Fatalf("no sweep %q", name)
		return 0, ""
	}
}

// odpWindow describes a sweep's timeouts as "one window, FROM-EDGE µs"
// (c.edge fails unless they are one window from the grid's lowest value).
func odpWindow(name string) func(*testing.T) (float64, string) {
	return func(t *testing.T) (float64, string) {
		for _, c := range odpSweepCases() {
			if c.name == name {
				edge, _ := c.edge(t)
				return 0, fmt.Sprintf("one window, %d-%d µs", c.from, edge)
			}
		}
		t.Fatalf("no sweep %q", name)
		return 0, ""
	}
}

// odpFig11 says how odp-three-reads recovers its second READ: "no
// timeout" when the responder NAKs the third READ's request with a PSN
// sequence error for the second, the requester re-sends the second and
// the third and both are answered, no request is re-sent after
// odpTimeoutGap or more, and generator.json has all three READs complete
// in less; otherwise what happened instead.
func odpFig11(t *testing.T) (float64, string) {
	const file = "odp/odp-three-reads.yaml"
	fs := odpFidFrames(t, file)
	nak := slices.IndexFunc(fs, func(f odpFrame) bool { return f.syndrome == "nak(psn_sequence_error)" && f.psn == 1 })
	if nak < 0 {
		return 0, "no PSN-sequence NAK for the 2nd READ"
	}
	seen := map[string]bool{}
	for _, f := range fs[nak+1:] {
		seen[fmt.Sprintf("%v%d", f.request(), f.psn)] = true
	}
	if !seen["true1"] || !seen["true2"] || !seen["false1"] || !seen["false2"] {
		return 0, fmt.Sprintf("after the NAK: %v", fs[nak+1:])
	}
	for psn := range 3 {
		if g := odpLongestGap(fs, psn); g >= odpTimeoutGap {
			return 0, fmt.Sprintf("READ +%d re-sent after %v: a timeout", psn, g)
		}
	}
	qp := odpReadGenerator(t, fidelityRun(t, "../examples/"+file)).QPs[0]
	if qp.Completed != 3 || qp.Errors != 0 || slices.Max(qp.MessageCompletionNs) >= int64(odpTimeoutGap) {
		return 0, fmt.Sprintf("generator: %d completed, %d errors, completions %v ns", qp.Completed, qp.Errors, qp.MessageCompletionNs)
	}
	return 0, "no timeout: sequence NAK, 2nd and 3rd re-sent and answered"
}

// odpFidelityRows are the fidelity rows of Fukuoka et al.'s ODP paper
// (docs/fidelity.md): the examples' traces (switch timestamps) and the
// Fig. 8 sweeps.
func odpFidelityRows() []fidelityRow {
	const remote, local, two = "odp/odp-remote.yaml", "odp/odp-local.yaml", "odp/odp-two-reads.yaml"
	const fk = "Fukuoka et al., "
	return []fidelityRow{
		{quantity: "ODP: RNR NAK after the faulting READ request (responder fault)", source: fk + "Figs. 2, 6, 11", variant: remote,
			paper: "141, 140, 143, 215 µs", lo: 140, hi: 215, unit: "µs", kind: "circular",
			note:    "odp-rnr-nak-delay 140 µs (cx4), switch-measured like the Lumina paper's delays",
			measure: odpDelta(remote, 0, "READ_REQUEST +0", 1, "ACKNOWLEDGE rnr(timer=14) +0")},
		{quantity: "ODP: RNR wait, the NAK to the re-sent request (min-rnr-timer 14, 1.28 ms)", source: fk + "Figs. 2, 6, 11", variant: remote,
			paper: "3.77-4.42 ms", lo: 3.77, hi: 4.42, unit: "ms", kind: "circular",
			note:    "rnr-wait-factor 3 × RNRTimer(14) from the NAK's arrival at the requester (the paper's ≈3×), + the NAK's and the request's link paths",
			measure: odpDelta(remote, 1, "ACKNOWLEDGE rnr(timer=14) +0", 3, "READ_REQUEST +0")},
		{quantity: "ODP: duplicate READ answered (re-sent request to its response)", source: fk + "Figs. 2, 6, 11", variant: remote,
			paper: "74, 83, 92, 93 µs", lo: 74, hi: 93, unit: "µs", kind: "circular",
			note:    "odp-dup-read-delay 80 µs (cx4; with ODP in the test only)",
			measure: odpDelta(remote, 3, "READ_REQUEST +0", 4, "READ_RESPONSE_ONLY +0")},
		{quantity: "ODP: requester fault, the READ request to its re-send", source: fk + "Fig. 2 middle", variant: local,
			paper: "527 µs", lo: 517, hi: 537, unit: "µs", kind: "circular",
			note:    "the example's page-fault-us 520 (the paper's faults take 450-780 µs, Figs. 2, 6) from the response's arrival, + the round trip; accepted: the paper's value ± 10 µs",
			measure: odpDelta(local, 0, "READ_REQUEST +0", 2, "READ_REQUEST +0")},
		{quantity: "ODP: the second READ's stall, its request to its re-send (two READs 3 ms apart)", source: fk + "Fig. 6", variant: two,
			paper: "537.8, 435.1, 446.8 ms", lo: 201.3, hi: 268.5, unit: "ms", kind: "model",
			note: "known difference: the stall is cx4's first transport timeout, 3-4 × T_tr(14) = 201-268 ms in lumina (seeded; the Lumina paper §6.3), " +
				"where Fukuoka et al.'s ConnectX-4 (another card, on InfiniBand) waited its ≈500 ms minimum timeout; accepted: lumina's [3, 4] × T_tr(14)",
			measure: odpDelta(two, 4, "READ_REQUEST +1", 6, "READ_REQUEST +1")},
		{quantity: "ODP Fig. 8 left: largest post interval whose 2nd READ times out (remote fault, two READs)", source: fk + "Fig. 8 left", variant: "generated: " + two + " at post-interval-us 250-6000, step 250",
			paper: "≈4500 µs", lo: 3730, hi: 4230, unit: "µs", kind: "emergent",
			note: "the window follows the RNR delay (140 µs + 3 × 1.28 ms = 3.98 ms; accepted: ± one step) and the duplicate's 80 µs; " +
				"below the paper's because lumina's RNR wait (3.84 ms) is the short end of the paper's 3.77-4.42 ms",
			measure: odpEdge("remote")},
		{quantity: "ODP Fig. 8 middle: largest post interval whose 2nd READ times out (requester fault, two READs)", source: fk + "Fig. 8 middle", variant: "generated: " + local + " with 2 READs at post-interval-us 100-1500, step 100",
			paper: "≈500 µs", lo: 420, hi: 620, unit: "µs", kind: "emergent",
			note:    "the window follows the page fault (520 µs; accepted: ± one step) and the duplicate's 80 µs",
			measure: odpEdge("local")},
		{quantity: "ODP Fig. 8 right / Fig. 5: largest post interval whose 2nd READ times out (both faults, two READs)", source: fk + "Figs. 5, 8 right", variant: "generated: odp/odp-remote-local.yaml with 2 READs at post-interval-us 250-6000, step 250",
			paper: "≈4500 µs (\"remote and local joined\")", lo: 4390, hi: 4890, unit: "µs", kind: "emergent",
			note:    "the RNR delay + the duplicate + the requester's fault (580 µs) = 4.64 ms (accepted: ± one step), + the second duplicate's 80 µs",
			measure: odpEdge("remote-local")},
		{quantity: "ODP Fig. 8 right at min-rnr-timer 1 (0.01 ms): post intervals whose 2nd READ times out", source: fk + "Fig. 8 right", variant: "generated: odp/odp-remote-local.yaml with 2 READs, min-rnr-timer 1, post-interval-us 50-1500, step 50",
			paper: "two waves: the RNR delay, then the local page fault", kind: "model",
			note: "known difference: lumina's requester holds new requests from the first RNR NAK to the re-send after its own fault without a break " +
				"(the retries' RNR NAKs overlap the local fault), so one window up to both faults in a row (400 + 580 µs) + the duplicate's 80 µs; what let the paper's second READ through between the waves is not in its traces",
			measure: odpWindow("remote-local, min-rnr-timer 1"), want: "one window, 50-1050 µs"},
		{quantity: "ODP Fig. 11: three READs 3 ms apart (responder fault)", source: fk + "Figs. 10, 11", variant: "odp/odp-three-reads.yaml",
			paper: "no timeout: the 3rd request meets a PSN-sequence NAK, 2nd and 3rd re-sent", kind: "emergent",
			note:    "the responder's expected PSN stays at the dropped 2nd READ's; the existing sequence-error NAK and go-back-N recover it",
			measure: odpFig11, want: "no timeout: sequence NAK, 2nd and 3rd re-sent and answered"},
	}
}
