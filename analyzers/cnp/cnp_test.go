package cnp

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// table4 builds the Lumina §6.4 experiment at small scale: three requesters
// 10.0.0.11-13 write to 10.0.0.1; packets are CE-marked at the times of
// Table 3 (CX6: 9/16/17 µs, then 246/254/259 µs); cnps lists, per
// connection, after which marks a CNP follows.
func table4(cnps [3][2]bool) string {
	marks := []struct {
		conn int
		us   int
	}{{0, 9}, {1, 16}, {2, 17}, {0, 246}, {1, 254}, {2, 259}}
	var b strings.Builder
	prev, n := 0, [3]int{}
	for _, m := range marks {
		fmt.Fprintf(&b, "@%d %d/%de ", (m.us-prev)*1000-100, m.conn, n[m.conn])
		prev = m.us
		if cnps[m.conn][n[m.conn]] {
			fmt.Fprintf(&b, "%d/C ", m.conn)
			prev = m.us
		}
		n[m.conn]++
	}
	return b.String()
}

func analyze(t *testing.T, script string, opt Options) Result {
	t.Helper()
	conns := tracetest.Conns(3, 0, model.VerbWrite)
	tab, pkts := tracetest.Script(t, conns, script)
	a := New(tab, opt)
	for i := range pkts {
		a.Observe(&pkts[i])
	}
	return a.Finish()
}

func TestScopes(t *testing.T) {
	all := [3][2]bool{{true, true}, {true, true}, {true, true}}
	perPort := [3][2]bool{{true, true}}
	opt := Options{MinTimeBetweenCNPsNs: 50_000, Known: true}
	tests := []struct {
		name     string
		script   string
		opt      Options
		observed [3]int
		want     []string
		expected Expected
		verdict  model.Verdict
	}{
		{name: "CX6: per-port", script: table4(perPort), opt: opt, observed: [3]int{2, 0, 0},
			want: []string{"per-port"}, expected: Expected{6, 2, 6, 6}, verdict: model.Pass},
		{name: "CX4/CX5: per-destination IP", script: table4(all), opt: opt, observed: [3]int{2, 2, 2},
			want: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, expected: Expected{6, 2, 6, 6}, verdict: model.Pass},
		{name: "expected scope inconsistent", script: table4(all), opt: Options{MinTimeBetweenCNPsNs: 50_000, Known: true, ExpectScope: "per-port"},
			observed: [3]int{2, 2, 2}, want: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, expected: Expected{6, 2, 6, 6}, verdict: model.Fail},
		{name: "no scope", script: table4([3][2]bool{{true, false}}), opt: opt, observed: [3]int{1, 0, 0},
			want: []string{}, expected: Expected{6, 2, 6, 6}, verdict: model.Fail},
		{name: "pacing within one QP", script: "0e C @10000 1e @50000 2e C", opt: opt, observed: [3]int{2, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{2, 2, 2, 2}, verdict: model.Pass},
		{name: "exactly min_time apart: no CNP (strictly greater)", script: "0e @50000 1e C", opt: opt, observed: [3]int{1, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{1, 1, 1, 1}, verdict: model.Pass},
		{name: "NAK triggers", script: "0 1x 2 N1 C 1 2 A2", opt: Options{Known: true, NAKTriggers: true}, observed: [3]int{1, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{1, 1, 1, 1}, verdict: model.Pass},
		{name: "unknown min_time", script: "0e C", observed: [3]int{1, 0, 0},
			want: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, expected: Expected{1, 1, 1, 1}, verdict: model.Skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyze(t, tt.script, tt.opt)
			var obs [3]int
			for i, c := range res.Conns {
				obs[i] = c.Observed
			}
			if obs != tt.observed {
				t.Errorf("observed = %v, want %v", obs, tt.observed)
			}
			if !reflect.DeepEqual(res.ConsistentScopes, tt.want) {
				t.Errorf("ConsistentScopes = %v, want %v", res.ConsistentScopes, tt.want)
			}
			if res.Expected != tt.expected {
				t.Errorf("Expected = %+v, want %+v", res.Expected, tt.expected)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("Verdict = %v, want %v (%s)", res.Verdict, tt.verdict, res.Reason)
			}
		})
	}
}

// TestUncertainty: with a timestamp uncertainty U, a pacing decision
// whose gap t − last is within U of min_time (min_time − U < gap ≤
// min_time + U) is ambiguous; a scope whose counts only match within the
// resulting range is possibly, not surely, consistent, and the check is
// inconclusive when no scope (or not the expected one) is surely
// consistent. With U = 0 the bound is exact. (A CNP comes 100 ns after
// its trigger: "0e C @48900 1e" puts the triggers 49,000 ns apart.)
func TestUncertainty(t *testing.T) {
	const m, u = 50_000, 2_000
	opt := Options{MinTimeBetweenCNPsNs: m, Known: true, UncertaintyNs: u}
	exact := Options{MinTimeBetweenCNPsNs: m, Known: true}
	all := []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}
	tests := []struct {
		name           string
		script         string
		opt            Options
		sure, possible []string
		min, max       int // expected per-qp totals under U
		verdict        model.Verdict
	}{
		{name: "sim: 1 µs short of min_time, a CNP anyway: fail", script: "0e C @48900 1e C", opt: exact,
			sure: []string{}, verdict: model.Fail},
		{name: "sim: exactly min_time apart, no CNP: pass", script: "0e @50000 1e C", opt: exact,
			sure: all, verdict: model.Pass},
		{name: "1 µs short, a CNP anyway: inconclusive", script: "0e C @48900 1e C", opt: opt,
			sure: []string{}, possible: all, min: 1, max: 2, verdict: model.Inconclusive},
		{name: "exactly min_time apart, no CNP: inconclusive", script: "0e @50000 1e C", opt: opt,
			sure: []string{}, possible: all, min: 1, max: 2, verdict: model.Inconclusive},
		{name: "min_time + U apart, no CNP: inconclusive", script: "0e @52000 1e C", opt: opt,
			sure: []string{}, possible: all, min: 1, max: 2, verdict: model.Inconclusive},
		{name: "beyond min_time + U, a CNP: pass", script: "0e C @51901 1e C", opt: opt,
			sure: all, min: 2, max: 2, verdict: model.Pass},
		{name: "beyond min_time + U, no CNP: fail", script: "0e C @51901 1e", opt: opt,
			sure: []string{}, min: 2, max: 2, verdict: model.Fail},
		{name: "min_time − U apart, a CNP: fail", script: "0e C @47900 1e C", opt: opt,
			sure: []string{}, min: 1, max: 1, verdict: model.Fail},
		{name: "just over min_time − U apart, a CNP: inconclusive", script: "0e C @47901 1e C", opt: opt,
			sure: []string{}, possible: all, min: 1, max: 2, verdict: model.Inconclusive},
		{name: "a surely consistent scope passes", script: "0/0e 0/C @50000 1/0e 1/C", opt: opt,
			sure: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, possible: []string{"per-port"}, min: 2, max: 2, verdict: model.Pass},
		{name: "the expected scope possibly consistent: inconclusive", script: "0/0e 0/C @50000 1/0e 1/C",
			opt:  Options{MinTimeBetweenCNPsNs: m, Known: true, UncertaintyNs: u, ExpectScope: "per-port"},
			sure: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, possible: []string{"per-port"}, min: 2, max: 2, verdict: model.Inconclusive},
		{name: "the expected scope surely consistent: pass", script: "0/0e 0/C @50000 1/0e 1/C",
			opt:  Options{MinTimeBetweenCNPsNs: m, Known: true, UncertaintyNs: u, ExpectScope: "per-qp"},
			sure: []string{"per-qp", "per-dest-ip", "per-ip-pair"}, possible: []string{"per-port"}, min: 2, max: 2, verdict: model.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyze(t, tt.script, tt.opt)
			if !reflect.DeepEqual(res.ConsistentScopes, tt.sure) {
				t.Errorf("ConsistentScopes = %v, want %v", res.ConsistentScopes, tt.sure)
			}
			if !reflect.DeepEqual(res.PossibleScopes, tt.possible) {
				t.Errorf("PossibleScopes = %v, want %v", res.PossibleScopes, tt.possible)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("Verdict = %v, want %v (%s)", res.Verdict, tt.verdict, res.Reason)
			}
			if tt.opt.UncertaintyNs == 0 {
				if res.ExpectedMin != nil || res.ExpectedMax != nil || res.AmbiguousDecisions != nil || res.TimestampUncertaintyNs != 0 {
					t.Errorf("U = 0: uncertainty fields set: %+v", res)
				}
				return
			}
			if res.ExpectedMin == nil || res.ExpectedMin.PerQP != tt.min || res.ExpectedMax.PerQP != tt.max {
				t.Errorf("per-qp expected range = %+v..%+v, want %d..%d", res.ExpectedMin, res.ExpectedMax, tt.min, tt.max)
			}
			if res.TimestampUncertaintyNs != u || res.Conns[0].ExpectedMin == nil {
				t.Errorf("TimestampUncertaintyNs = %d, conn 0 range %v..%v", res.TimestampUncertaintyNs, res.Conns[0].ExpectedMin, res.Conns[0].ExpectedMax)
			}
		})
	}
}

// TestUncertaintyReason: the reason of an inconclusive verdict gives the
// numbers.
func TestUncertaintyReason(t *testing.T) {
	res := analyze(t, "0/0e 0/C @50000 1/0e 1/C", Options{MinTimeBetweenCNPsNs: 50_000, Known: true, UncertaintyNs: 2000, ExpectScope: "per-port"})
	want := "the expected per-port pacing is consistent with the CNPs only within the timestamp uncertainty (±2 µs): " +
		"observed 2, expected 1..2 (2 at the timestamps as they are), 1 pacing decision within ±2 µs of min_time_between_cnps 50 µs"
	if res.Reason != want {
		t.Errorf("Reason = %q, want %q", res.Reason, want)
	}
	res = analyze(t, "0e C @48900 1e C", Options{MinTimeBetweenCNPsNs: 50_000, Known: true, UncertaintyNs: 2000})
	if !strings.HasPrefix(res.Reason, "no pacing scope is consistent beyond the timestamp uncertainty (±2 µs); possibly consistent: per-qp (observed 2, expected 1..2 (1 at the timestamps as they are), 1 pacing decision within ±2 µs of min_time_between_cnps 50 µs); per-port (") {
		t.Errorf("Reason = %q", res.Reason)
	}
	if res := analyze(t, "0e C @100 1e C", Options{UncertaintyNs: 2000}); res.Verdict != model.Skip || len(res.ConsistentScopes) != 4 || res.ExpectedMin != nil {
		t.Errorf("unknown min_time with U: verdict %v, consistent %v, range %v; want skip, all, none", res.Verdict, res.ConsistentScopes, res.ExpectedMin)
	}
	b, _ := json.Marshal(analyze(t, "0e C @48900 1e C", Options{MinTimeBetweenCNPsNs: 50_000, Known: true}))
	for _, k := range []string{"possible_scopes", "expected_min", "expected_max", "ambiguous_decisions", "timestamp_uncertainty_ns"} {
		if strings.Contains(string(b), k) {
			t.Errorf("JSON with U = 0 has %q: %s", k, b)
		}
	}
}

// TestLateness replays the triggers and CNPs of a netns run of
// examples/cnp-cx6.yaml (per-port pacing, min_time 50 µs) whose switch
// pipeline ran up to 23,969,091 ns after the arrivals: the switch stamped
// the first three triggers 122 and 182 µs apart, the responder got them
// together and sent one CNP, then one for the next three (2.9 µs apart).
// The stamps say 4 CNPs per port; the NP, late by up to the lateness L,
// saw gaps off by up to ±L. With L = 0 (what the run recorded before: its
// timestamp uncertainty was 0) a correct NIC fails; with the lateness the
// run measured the per-port count is possible, not sure: inconclusive. A
// lateness never hides a decision far from min_time: triggers 300 µs
// apart with 20 µs of lateness still pass, and still fail without their
// CNP.
func TestLateness(t *testing.T) {
	const netns = "0/0e @122225 1/0e @182151 2/0e @701162 0/C " +
		"@35458014 0/0e @2910 1/0e @2880 2/0e @22609056 0/C"
	const far = "0/0e 0/C @300000 1/0e 1/C"
	// Another run (slowdown 1), U 172,665 ns, L 38,462,481 ns: the
	// responder sent both CNPs to connection 0. The replays give the
	// second to connection 1 (its trigger is the first 50 µs + W after
	// the first CNP), so connection 1's range alone said 1..2 and the
	// check failed; per connection only the interval analysis is sound.
	const shared = "0/0e @25128 1/0e @5707 2/0e @1463298 0/C " +
		"@25107439 0/0e @15555569 1/0e @10694 2/0e @15972426 0/C"
	tests := []struct {
		name     string
		script   string
		u, l     int64
		verdict  model.Verdict
		possible []string
		min, max int // per-port totals under U + L
		reason   string
	}{
		{name: "netns run, lateness not counted: wrong fail", script: netns, verdict: model.Fail,
			reason: "CNPs are consistent with no pacing scope"},
		{name: "netns run, lateness counted: inconclusive", script: netns, l: 23_969_091, verdict: model.Inconclusive,
			possible: []string{"per-port"}, min: 2, max: 6,
			reason: "no pacing scope is consistent beyond the timing uncertainty (±23969.091 µs: timestamps 0 µs, notification point's lateness 23969.091 µs); " +
				"possibly consistent: per-port (observed 2, expected 2..6 (4 at the timestamps as they are), 4 pacing decisions within ±23969.091 µs of min_time_between_cnps 50 µs)"},
		{name: "shared domain, lateness counted: inconclusive", script: shared, u: 172_665, l: 38_462_481, verdict: model.Inconclusive,
			possible: []string{"per-port"}, min: 2, max: 6},
		{name: "timestamps alone: pass", script: "0e C @51500 1e C", u: 1000, verdict: model.Pass, min: 2, max: 2},
		{name: "timestamps and lateness add up", script: "0e C @51500 1e C", u: 1000, l: 1000, verdict: model.Inconclusive,
			possible: []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, min: 1, max: 2},
		{name: "far from min_time: pass", script: far, u: 1000, l: 20_000, verdict: model.Pass, min: 2, max: 2},
		{name: "far from min_time, a CNP missing: fail", script: "0/0e 0/C @300000 1/0e", u: 1000, l: 20_000, verdict: model.Fail, min: 2, max: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyze(t, tt.script, Options{MinTimeBetweenCNPsNs: 50_000, Known: true, ExpectScope: "", UncertaintyNs: tt.u, LatenessNs: tt.l})
			if res.Verdict != tt.verdict {
				t.Errorf("Verdict = %v, want %v (%s)", res.Verdict, tt.verdict, res.Reason)
			}
			if tt.reason != "" && res.Reason != tt.reason {
				t.Errorf("Reason = %q, want %q", res.Reason, tt.reason)
			}
			if !reflect.DeepEqual(res.PossibleScopes, tt.possible) {
				t.Errorf("PossibleScopes = %v, want %v", res.PossibleScopes, tt.possible)
			}
			if tt.u+tt.l == 0 {
				return
			}
			if res.TimestampUncertaintyNs != tt.u || res.LatenessNs != tt.l {
				t.Errorf("TimestampUncertaintyNs, LatenessNs = %d, %d, want %d, %d", res.TimestampUncertaintyNs, res.LatenessNs, tt.u, tt.l)
			}
			if res.ExpectedMin == nil || res.ExpectedMin.PerPort != tt.min || res.ExpectedMax.PerPort != tt.max {
				t.Errorf("per-port expected range = %+v..%+v, want %d..%d", res.ExpectedMin, res.ExpectedMax, tt.min, tt.max)
			}
		})
	}
}

// TestManyHosts: the notification points of a many-host test pace with
// their own settings, in their own domains.
func TestManyHosts(t *testing.T) {
	ip := func(b byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, b}) }
	conn := func(id int, from, to byte) model.Connection {
		return model.Connection{ID: id, Verb: model.VerbWrite, Requester: model.Endpoint{IP: ip(from), QPN: uint32(0x100 + id)},
			Responder: model.Endpoint{IP: ip(to), QPN: uint32(0x200 + id)}}
	}
	host := func(name string, b byte, us int64) Host {
		return Host{Name: name, IPs: []netip.Addr{ip(b)}, MinTimeBetweenCNPsNs: us * 1000, Known: true}
	}
	all := []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}
	tests := []struct {
		name     string
		conns    []model.Connection
		script   string
		hosts    []Host
		want     []string
		expected Expected
	}{
		// h1 writes to r1 and r2, both mark it 10 µs apart and each sends
		// it a CNP: two NPs, two per-dest-ip domains.
		{name: "one sender, two receivers", conns: []model.Connection{conn(0, 11, 1), conn(1, 11, 2)},
			script: "0/0e 0/C @10000 1/0e 1/C", hosts: []Host{host("r1", 1, 50), host("r2", 2, 50), host("h1", 11, 50)},
			want: all, expected: Expected{2, 2, 2, 2}},
		// Without hosts the destination alone keys per-dest-ip (the
		// two-host form): the second CNP is not expected there.
		{name: "one sender, two receivers, no hosts", conns: []model.Connection{conn(0, 11, 1), conn(1, 11, 2)},
			script: "0/0e 0/C @10000 1/0e 1/C", want: []string{"per-qp", "per-port", "per-ip-pair"}, expected: Expected{2, 2, 1, 2}},
		// r2 paces every 5 µs, r1 every 50: each NP with its own interval.
		{name: "own intervals", conns: []model.Connection{conn(0, 11, 1), conn(1, 12, 2)},
			script: "0/0e 0/C @10000 0/1e 1/0e 1/C @10000 1/1e 1/C", hosts: []Host{host("r1", 1, 50), host("r2", 2, 5)},
			want: all, expected: Expected{3, 3, 3, 3}},
		{name: "own intervals, no hosts", conns: []model.Connection{conn(0, 11, 1), conn(1, 12, 2)},
			script: "0/0e 0/C @10000 0/1e 1/0e 1/C @10000 1/1e 1/C", want: []string{}, expected: Expected{2, 2, 2, 2}},
		// Three senders to one receiver (incast) whose NIC paces per
		// port: one CNP for three marks within 50 µs, the per-port domain
		// being the receiver host, whatever address each sender used.
		{name: "incast, per port", conns: []model.Connection{conn(0, 11, 1), conn(1, 12, 3), conn(2, 13, 1)},
			script: "0/0e 0/C @10000 1/0e @10000 2/0e", hosts: []Host{{Name: "r", IPs: []netip.Addr{ip(1), ip(3)}, MinTimeBetweenCNPsNs: 50_000, Known: true}},
			want: []string{"per-port"}, expected: Expected{3, 1, 3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, pkts := tracetest.Script(t, tt.conns, tt.script)
			a := New(tab, Options{MinTimeBetweenCNPsNs: 50_000, Known: true, Hosts: tt.hosts})
			for i := range pkts {
				a.Observe(&pkts[i])
			}
			res := a.Finish()
			if !reflect.DeepEqual(res.ConsistentScopes, tt.want) || res.Expected != tt.expected {
				t.Errorf("consistent = %v, expected %+v; want %v, %+v", res.ConsistentScopes, res.Expected, tt.want, tt.expected)
			}
		})
	}
}

// TestEgressQueue: with a queue at the notification point's switch port
// the NP sees a trigger when it leaves the queue, not at its stamp (the
// switch's arrival). 60 frames of connection 1 arrive at 0 and fill the
// port (87 ns each at 100 Gb/s); connection 0's CE frame behind them
// leaves at 5307 ns, connection 1's CE frame stamped 4500 ns leaves 87 ns
// later, so a per-port NP (4 µs) sends one CNP. Paced on the stamps (4.5
// µs apart) a per-port NP would have sent two: the check failed a correct
// NIC (incast-ecn on sim before the replay).
func TestEgressQueue(t *testing.T) {
	conns := tracetest.Conns(2, 0, model.VerbWrite)
	frames := func(ce1Depth int64, cnp1 bool) []tracetest.Frame {
		var fr []tracetest.Frame
		for k := range 60 {
			fr = append(fr, tracetest.Data(conns[1], 0, k, 1024, 3, int64(max(k-1, 0))*1082, false))
		}
		fr = append(fr, tracetest.Data(conns[0], 0, 0, 1024, 3, 59*1082, true),
			tracetest.Data(conns[1], 4500, 60, 1024, 3, ce1Depth, true), tracetest.CNP(conns[0], 6300))
		if cnp1 {
			fr = append(fr, tracetest.CNP(conns[1], 6400))
		}
		return fr
	}
	tests := []struct {
		name      string
		queues    bool
		ce1Depth  int64 // 9 frames ahead at 4500 ns
		cnp1      bool
		verdict   model.Verdict
		scopes    []string
		perPort   [2]int
		inexact   int
		reasonHas string
		hostBps   int64 // the NP's own link (Options.Hosts); 0: none
	}{
		{"departures", true, 9 * 1082, false, model.Pass, []string{"per-port"}, [2]int{1, 0}, 0, "", 0},
		{"stamps", false, 9 * 1082, false, model.Fail, []string{}, [2]int{1, 1}, 0, "not consistent with the expected per-port pacing", 0},
		// A copy that says 200000 B were ahead (a paused port): the wait
		// is the depth's, the second trigger leaves after 16 µs and its
		// CNP is expected, but only to a depth unit: inconclusive.
		{"deeper than the replay", true, 200_000, true, model.Inconclusive, []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}, [2]int{1, 1}, 1, "1 ECN triggers waited", 0},
		// The NP's port at 40 Gb/s (a CX4): 217 ns a frame, 40 frames
		// ahead of the 4500 ns trigger; replayed at 100 Gb/s that
		// depth would be inexact.
		{"host link 40G", true, 40 * 1082, false, model.Pass, []string{"per-port"}, [2]int{1, 0}, 0, "", 40e9},
		{"host link unknown", true, 40 * 1082, false, model.Inconclusive, []string{"per-port"}, [2]int{1, 0}, 1, "1 ECN triggers waited", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fr := frames(tc.ce1Depth, tc.cnp1)
			pcap, err := tracetest.Pcap(fr, tracetest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tab, pkts := tracetest.Pkts(t, conns, pcap, true)
			opt := Options{MinTimeBetweenCNPsNs: 4000, Known: true, ExpectScope: "per-port", EgressQueues: tc.queues, LinkBps: 100e9}
			if tc.hostBps > 0 {
				opt.Hosts = []Host{{Name: "r", IPs: []netip.Addr{conns[0].Responder.IP}, MinTimeBetweenCNPsNs: 4000, Known: true, LinkBps: tc.hostBps}}
			}
			a := New(tab, opt)
			for i := range pkts {
				a.Observe(&pkts[i])
			}
			r := a.Finish()
			if !reflect.DeepEqual(r.ConsistentScopes, tc.scopes) {
				t.Errorf("ConsistentScopes = %v, want %v", r.ConsistentScopes, tc.scopes)
			}
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reasonHas) {
				t.Errorf("verdict = %s (%s), want %s (%q)", r.Verdict, r.Reason, tc.verdict, tc.reasonHas)
			}
			if got := [2]int{r.Conns[0].Expected.PerPort, r.Conns[1].Expected.PerPort}; got != tc.perPort {
				t.Errorf("expected per-port = %v, want %v", got, tc.perPort)
			}
			if r.InexactWaits != tc.inexact {
				t.Errorf("InexactWaits = %d, want %d", r.InexactWaits, tc.inexact)
			}
		})
	}
}
