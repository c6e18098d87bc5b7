package tests

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// The many-host examples on sim, seed 1 (docs/topology.md): exact facts of
// their traces and reports.

// copyInfo is one mirror copy of a forwarded RoCE packet.
type copyInfo struct {
	ts          int64
	src, dst    string
	cnp, ce     bool
	depth, unit int64 // the egress queue depth it joined: [depth, depth+unit)
}

// topoTrace returns a run's RoCE copies and its PFC copies.
func topoTrace(t *testing.T, dir string) (copies []copyInfo, pfcs []pfcFrame) {
	t.Helper()
	pfcs, _ = pfcTrace(t, dir)
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if tp.IsMACMirror() || (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) != nil {
			return nil
		}
		c := p.DepthCode()
		copies = append(copies, copyInfo{ts: int64(p.Mirror().TimestampNs), src: p.SrcIP.String(), dst: p.DstIP.String(),
			cnp: p.Opcode == roce.CNP, ce: p.ECN() == 3, depth: c.Bytes(), unit: c.Unit()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return copies, pfcs
}

// checkAllPass fails unless the run was valid and every check passed
// (events_applied: skip, no events).
func checkAllPass(t *testing.T, dir string) {
	t.Helper()
	rep := readReport(t, dir)
	if !rep.Valid {
		t.Error("valid = false")
	}
	for name, c := range rep.Checks {
		if want := passOrNoEvents(name); string(c.Verdict) != want {
			t.Errorf("check %s = %s (%s), want %s", name, c.Verdict, c.Detail, want)
		}
	}
}

// TestIncastPFC: incast-pfc.yaml (4→1 on lossless priority 3). The switch
// drops nothing (its PFC counters, the retransmission check: 0 losses),
// pauses exactly the four senders' ports and no other, first at the
// times below; r, a cx6 receiving at 37.65 Gb/s, pauses the switch; the
// four flows share r's port fairly.
func TestIncastPFC(t *testing.T) {
	dir := exampleRun(t, "../examples/incast-pfc.yaml")
	checkAllPass(t, dir)
	rep := readReport(t, dir)
	wantPorts := map[string]uint32{"h1": 1, "h2": 2, "h3": 32, "h4": 33, "r": 34}
	if !reflect.DeepEqual(rep.SwitchPorts, wantPorts) {
		t.Fatalf("switch_ports = %v, want %v", rep.SwitchPorts, wantPorts)
	}
	if rep.SwitchPFC == nil {
		t.Fatal("no switch_pfc in report.json")
	}
	var txPause []uint32
	for _, c := range rep.SwitchPFC.Ports {
		if c.LosslessDrops+c.LossyDrops+c.WatchdogDrops != 0 {
			t.Errorf("switch port %d prio %d: drops lossless %d lossy %d watchdog %d, want none", c.Port, c.Priority, c.LosslessDrops, c.LossyDrops, c.WatchdogDrops)
		}
		if c.TxPause > 0 {
			txPause = append(txPause, c.Port)
		}
		if c.Port == 34 && c.RxPause != 270 {
			t.Errorf("pause frames from r = %d, want 270", c.RxPause)
		}
	}
	if want := []uint32{1, 2, 32, 33}; !reflect.DeepEqual(txPause, want) {
		t.Errorf("ports the switch sent pauses to = %v, want %v (h1..h4, not r)", txPause, want)
	}
	if rt := rep.Analysis.Checks.Retransmission; len(rt.Losses) != 0 {
		t.Errorf("retransmission losses = %v, want none", rt.Losses)
	}
	_, pfcs := topoTrace(t, dir)
	first := map[uint16]int64{}
	for _, f := range pfcs {
		if f.sent && f.xoff {
			if _, ok := first[f.port]; !ok {
				first[f.port] = f.ts
			}
		}
	}
	// The trace's first XOFF to each sender, ns (seed 1): h4, h3 and h2
	// within 54 ns of each other, h1 3.2 µs later.
	if want := map[uint16]int64{1: 12116, 2: 8926, 32: 8883, 33: 8872}; !reflect.DeepEqual(first, want) {
		t.Errorf("first XOFF to each port = %v, want %v", first, want)
	}
	g := rep.Analysis.Flows.Groups
	if len(g) != 1 || g[0].To != "r" || !slices.Equal(g[0].Flows, []string{"a", "b", "c", "d"}) {
		t.Fatalf("flows groups = %+v, want one: a, b, c, d to r", g)
	}
	if g[0].Jain != 0.9999459743795813 || g[0].ConvergeNs == nil || *g[0].ConvergeNs != 1161159 || g[0].MaxDepth != 290816 {
		t.Errorf("to r: Jain %v, converged after %v ns, queue max %d B; want 0.9999459743795813, 1161159, 290816", g[0].Jain, g[0].ConvergeNs, g[0].MaxDepth)
	}
}

// TestIncastECN: incast-ecn.yaml (4→1 with RED on r's queue: kmin 100
// KiB, kmax 400 KiB, pmax 0.2). CE marks only on r's queue, none on a copy
// that joined at most kmin, every copy above kmax marked; 7 CNPs to each
// sender, each cut once per CNP; the queue peaks at 1769472 B (4.3 kmax)
// 118 µs into the burst, never exceeds kmax after 325 µs and stays below
// 2.2 KB after 400 µs; fair shares.
func TestIncastECN(t *testing.T) {
	dir := exampleRun(t, "../examples/incast-ecn.yaml")
	checkAllPass(t, dir)
	copies, _ := topoTrace(t, dir)
	const kmin, kmax = 100 << 10, 400 << 10
	var marks, between, betweenMarked, above int
	var maxDepth, maxAt, lastAbove, maxAfter int64 // maxAfter: after 400 µs
	cnps := map[string]int{}
	for _, c := range copies {
		if c.cnp {
			cnps[c.dst]++
			continue
		}
		if c.ce {
			marks++
			if c.dst != "10.0.0.9" {
				t.Errorf("CE copy at %d to %s: only r's queue marks", c.ts, c.dst)
			}
			if c.depth+c.unit-1 <= kmin {
				t.Errorf("CE copy at %d joined %d..%d B ≤ kmin", c.ts, c.depth, c.depth+c.unit-1)
			}
		}
		switch {
		case c.depth > kmax:
			above++
			lastAbove = c.ts
			if !c.ce {
				t.Errorf("copy at %d joined %d B > kmax unmarked", c.ts, c.depth)
			}
		case c.depth > kmin && c.depth+c.unit-1 <= kmax:
			between++
			if c.ce {
				betweenMarked++
			}
		}
		if c.depth > maxDepth {
			maxDepth, maxAt = c.depth, c.ts
		}
		if c.ts > 400_000 {
			maxAfter = max(maxAfter, c.depth)
		}
	}
	// Between kmin and kmax a copy is marked with probability (d −
	// kmin)/2^14 in 80-byte cells, at most pmax' = 3840/16384 = 0.234
	// (docs/tofino.md: the rand_mask nearest (kmax − kmin)/pmax): 63 of
	// 412 (seed 1).
	if marks != 3614 || above != 3544 || between != 412 || betweenMarked != 63 {
		t.Errorf("marks %d, copies above kmax %d, between kmin and kmax %d (%d marked); want 3614, 3544, 412 (63)", marks, above, between, betweenMarked)
	}
	if maxDepth != 1769472 || maxAt != 118052 || lastAbove != 324733 || maxAfter != 2112 {
		t.Errorf("queue max %d B at %d ns, last above kmax at %d ns, max after 400 µs %d B; want 1769472 at 118052, 324733, 2112", maxDepth, maxAt, lastAbove, maxAfter)
	}
	want := map[string]int{"10.0.0.1": 7, "10.0.0.2": 7, "10.0.0.3": 7, "10.0.0.4": 7}
	if !reflect.DeepEqual(cnps, want) {
		t.Errorf("CNPs per sender = %v, want %v", cnps, want)
	}
	rep := readReport(t, dir)
	for _, f := range rep.Analysis.Flows.Flows {
		if f.CNPs != 7 || f.SenderRateCuts == nil || *f.SenderRateCuts != 7 {
			t.Errorf("flow %s: %d CNPs, rate cuts %v; want 7, 7", f.Name, f.CNPs, f.SenderRateCuts)
		}
	}
	if got := rep.Analysis.Checks.CNP.ConsistentScopes; !slices.Equal(got, []string{"per-qp", "per-dest-ip", "per-ip-pair"}) {
		t.Errorf("cnp consistent scopes = %v, want per-qp, per-dest-ip, per-ip-pair (a cx5 paces per destination)", got)
	}
	g := rep.Analysis.Flows.Groups
	if len(g) != 1 || g[0].Jain != 0.9998454257716769 || g[0].ConvergeNs == nil || *g[0].ConvergeNs != 393159 || g[0].MaxDepth != 1769472 {
		t.Errorf("flows groups = %+v, want one to r: Jain 0.9998454257716769, converged after 393159 ns, queue max 1769472 B", g)
	}
}

// TestVictimFlow: victim-flow.yaml (Hawkeye Fig. 1 on one switch): the
// flows analysis names v (h1 → h4) the victim: h1 paused on port 1,
// priority 3, while h4's queue stayed empty, r congested by a, b, c.
func TestVictimFlow(t *testing.T) {
	dir := exampleRun(t, "../examples/victim-flow.yaml")
	checkAllPass(t, dir)
	f := readReport(t, dir).Analysis.Flows
	if len(f.Victims) != 1 {
		t.Fatalf("victims = %+v, want v", f.Victims)
	}
	v := f.Victims[0]
	if v.Flow != "v" || v.Host != "h1" || v.Port != 1 || v.Priority != 3 || v.Dest != "h4" || v.DestMaxDepth != 0 ||
		v.Congested != "r" || v.CongestedPort != 34 || !slices.Equal(v.CongestingFlows, []string{"a", "b", "c"}) ||
		v.Episode != 15 || v.Episodes != 59 || v.StartNs != 54657 || v.PausedNs != 958855 || v.CongestedMaxDepth != 208896 {
		t.Errorf("victim = %+v, want v: h1 port 1 prio 3, h4 at 0 B, r (port 34, 208896 B) by a, b, c, episode 15 of 59 from 54657 ns, paused 958855 ns", v)
	}
	for _, fl := range f.Flows {
		if fl.Victim != (fl.Name == "v") {
			t.Errorf("flow %s: victim = %v", fl.Name, fl.Victim)
		}
	}
	if g := f.Groups; len(g) != 1 || g[0].Jain != 0.9848996879501014 || g[0].ConvergeNs == nil || *g[0].ConvergeNs != 1218007 || g[0].MaxDepth != 208896 {
		t.Errorf("flows groups = %+v, want one to r: Jain 0.9848996879501014, converged after 1218007 ns, queue max 208896 B", g)
	}
}

// TestIncastECNPerPortCNP: incast-ecn with r a cx6 at its own pacing (per
// port, one CNP per 4 µs for all four senders; the first draft of the
// example). The cnp check replays r's queue and finds exactly the per-port
// scope consistent, with 58 CNPs; paced on the marks' stamps (their
// arrival at the switch, up to 140 µs before r sees them) it found no
// scope consistent and failed a correct NIC.
func TestIncastECNPerPortCNP(t *testing.T) {
	src, err := os.ReadFile("../examples/incast-ecn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const cx5 = "r:  {nic: {personality: cx5, ip-list: [10.0.0.9/24]}, roce-parameters: {min-time-between-cnps: 50}}"
	if !strings.Contains(string(src), cx5) {
		t.Fatalf("incast-ecn.yaml has no line %q", cx5)
	}
	file := filepath.Join(t.TempDir(), "incast-ecn.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), cx5, "r:  {nic: {personality: cx6, ip-list: [10.0.0.9/24]}}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := readReport(t, runExample(t, file)).Analysis.Checks.CNP
	var per []int
	for _, cc := range c.Conns {
		per = append(per, cc.Observed)
	}
	if c.Verdict != "pass" || !slices.Equal(c.ConsistentScopes, []string{"per-port"}) || c.Observed != 58 || !slices.Equal(per, []int{12, 18, 17, 11}) || c.InexactWaits != 0 {
		t.Errorf("cnp = %s (%s), scopes %v, %d CNPs %v, inexact %d; want pass, per-port, 58 [12 18 17 11], 0", c.Verdict, c.Reason, c.ConsistentScopes, c.Observed, per, c.InexactWaits)
	}
}
