package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// The fabric examples on sim (docs/fabric.md): exact facts of their
// traces and reports that the run driver and the software switch decide:
// the switch ports, the copies each switch mirrors, the integrity of each
// switch's sequence, the traffic's end and the deadlock window, where
// pauses go.

// fabricRuns holds the fabric examples' runs on sim, made once per test
// binary (read-only for tests).
var fabricRuns struct {
	sync.Mutex
	dirs map[string]string
	errs map[string]error
}

// fabricVerdicts are the fabric examples' verdicts on sim, as lumina run
// prints them: a deadlock is the deadlock check's fail (and the QPs' retry
// limit the generator's), its copies queued for good at a switch make the
// loss-dependent per-connection checks inconclusive; without a watchdog
// the stalled h5's NIC discards frames in its receive buffer, which makes
// the checks of its connections inconclusive; the others pass.
var fabricVerdicts = map[string]string{
	"hawkeye-fig1":              "all checks pass",
	"pfc-storm-clos":            "all checks pass",
	"pfc-storm-clos-nowatchdog": "all checks pass (inconclusive: counters, gbn, retransmission, timeout)",
	"pfc-deadlock":              "FAILED: deadlock, generator (inconclusive: cnp, counters, gbn, retransmission, timeout)",
	"pfc-deadlock-fixed":        "all checks pass",
}

// fabricRun returns the repeat 0 directory of examples/fabric/NAME.yaml's
// run on sim with its own seed, running it on first use. The run must be
// valid with fabricVerdicts[name] (exit 1 with a failed check).
func fabricRun(t *testing.T, name string) string {
	t.Helper()
	fabricRuns.Lock()
	defer fabricRuns.Unlock()
	if fabricRuns.dirs == nil {
		fabricRuns.dirs, fabricRuns.errs = map[string]string{}, map[string]error{}
	}
	dir, ok := fabricRuns.dirs[name]
	err := fabricRuns.errs[name]
	if !ok {
		out := filepath.Join(workDir, "fabric")
		var r cliResult
		r, err = invoke("run", "-q", "-o", out, filepath.Join("..", "examples", "fabric", name+".yaml"))
		dir = filepath.Join(out, name, "0")
		want, code := fmt.Sprintf("%s repeat 0: valid, %s → %s\n", name, fabricVerdicts[name], dir), 0
		if strings.HasPrefix(fabricVerdicts[name], "FAILED") {
			code = 1
		}
		if err == nil && (r.code != code || r.stdout != want || r.stderr != "") {
			err = fmt.Errorf("lumina run %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", name, r.code, r.stdout, r.stderr, code, want)
		}
		fabricRuns.dirs[name], fabricRuns.errs[name] = dir, err
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fabricWrites counts, per switch id, the mirror copies of WRITE packets
// in a run's trace.
func fabricWrites(t *testing.T, dir string) map[uint8]int {
	t.Helper()
	n := map[uint8]int{}
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if tp.IsMACMirror() || (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) != nil || !p.Opcode.IsWrite() {
			return nil
		}
		n[p.Mirror().Switch]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkVerdict fails unless report.json's check name has verdict want
// and, if detail is not empty, exactly that detail.
func checkVerdict(t *testing.T, rep *orchestrator.Report, name string, want model.Verdict, detail string) {
	t.Helper()
	c, ok := rep.Checks[name]
	if !ok || c.Verdict != want || detail != "" && c.Detail != detail {
		t.Errorf("checks.%s = %q (%s), want %s %s", name, c.Verdict, c.Detail, want, detail)
	}
}

// integrityAll is the integrity verdict of a complete trace: every switch's
// sequence from 1 without a gap, each switch's copies as many as its last
// sequence number, every RoCE packet that entered a switch mirrored.
var integrityAll = []string{"seq: pass", "timestamp: pass", "mirrored: pass", "received: pass", "dumpers: pass"}

// TestFabricDeadlock: pfc-deadlock.yaml's four flows, each over two links
// of the ring s1→s2→s3→s4→s1, fill each other's buffers: the switches
// keep pausing round the cycle of the ring's ports. The QPs, paused for
// good, end by their retry limit (RETRY_EXC_ERR), the switches run on for
// deadlock-ms (20 ms) and the deadlock check fails naming the cycle; the
// run is valid (a deadlock is a verdict): every switch's copies are
// complete.
func TestFabricDeadlock(t *testing.T) {
	dir := fabricRun(t, "pfc-deadlock")
	rep := readReport(t, dir)
	if !rep.Valid || rep.Integrity.Verdict != model.Pass || !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
		t.Errorf("valid %v, integrity %+v; want valid, %v", rep.Valid, rep.Integrity, integrityAll)
	}
	checkVerdict(t, rep, "deadlock", model.Fail, "s2:201 → s3:203 → s4:205 → s1:207 → s2 kept pausing each other through 26.323 µs .. 20026.323 µs "+
		"(frames in the window: s2:201 119, s3:203 119, s4:205 119, s1:207 119)")
	checkVerdict(t, rep, "generator", model.Fail, "flow a: QP 0: completion RETRY_EXC_ERR; flow b: QP 0: completion RETRY_EXC_ERR; "+
		"flow c: QP 0: completion RETRY_EXC_ERR; flow d: QP 0: completion RETRY_EXC_ERR")
	// The switches ran on for the window after the last flow ended (the
	// virtual clock started traffic at 0), its pause refreshes (every
	// 168 µs) the trace's last copies.
	var last uint64
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		var mm roce.MACMirror
		if roce.ParseMACMirror(tp.Data, &mm) == nil {
			last = max(last, mm.TimestampNs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if end := uint64(rep.Generator.DurationNs) + 20e6; rep.Generator.DurationNs != 29126189 || last > end || last+200e3 < end {
		t.Errorf("traffic %d ns, last PFC copy at %d ns; want traffic 29126189 ns and the last copy within 200 µs before it + 20 ms", rep.Generator.DurationNs, last)
	}
	// The ring's ports and the hosts', each with its peer.
	var got []string
	for _, p := range rep.Fabric.Ports {
		got = append(got, fmt.Sprintf("%d %s %s%s:%d %.0f %d", p.Port, p.Switch, p.Host, p.PeerSwitch, p.PeerPort, p.Gbps, p.DelayNs))
	}
	want := []string{"1 s1 h1:0 100 500", "2 s2 h2:0 100 500", "32 s3 h3:0 100 500", "33 s4 h4:0 100 500",
		"34 s1 r1:0 100 500", "35 s2 r2:0 100 500", "36 s3 r3:0 100 500", "37 s4 r4:0 100 500",
		"200 s1 s2:201 100 500", "201 s2 s1:200 100 500", "202 s2 s3:203 100 500", "203 s3 s2:202 100 500",
		"204 s3 s4:205 100 500", "205 s4 s3:204 100 500", "206 s4 s1:207 100 500", "207 s1 s4:206 100 500"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fabric ports = %q, want %q", got, want)
	}
	// lumina analyze of the run directory reads the fabric and each
	// switch's last sequence from the run record: the same verdicts.
	a, err := invokeExit(1, "analyze", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.stdout, "\nintegrity: pass\n") || !strings.Contains(a.stdout, "\nresult: FAIL (generator, deadlock)\n") {
		t.Errorf("lumina analyze %s:\n%s\nwant integrity: pass and result: FAIL (generator, deadlock)", dir, a.stdout)
	}
	// Every ring port the cycle names kept sending pauses to its peer.
	sent := map[uint32]uint64{}
	for _, c := range rep.SwitchPFC.Ports {
		sent[c.Port] += c.TxPause
	}
	for _, p := range []uint32{201, 203, 205, 207} {
		if sent[p] == 0 {
			t.Errorf("switch port %d sent no pause, want the cycle's pauses", p)
		}
	}
}

// TestFabricDeadlockFixed: pfc-deadlock-fixed.yaml routes c and d the
// other way round: no cycle, every flow completes, the deadlock check
// passes over the 20 ms window; each switch mirrors each WRITE of the
// flows that cross it (2,048 per flow: s1 a and c, s2 and s3 all four, s4
// b and d), its sequence complete.
func TestFabricDeadlockFixed(t *testing.T) {
	dir := fabricRun(t, "pfc-deadlock-fixed")
	rep := readReport(t, dir)
	if !rep.Valid || !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
		t.Errorf("valid %v, integrity %+v; want valid, %v", rep.Valid, rep.Integrity, integrityAll)
	}
	checkVerdict(t, rep, "deadlock", model.Pass, "no cycle of switch ports pausing each other through 517.394 µs .. 20517.394 µs")
	checkVerdict(t, rep, "generator", model.Pass, "")
	if got, want := fabricWrites(t, dir), map[uint8]int{0: 4096, 1: 8192, 2: 8192, 3: 4096}; !reflect.DeepEqual(got, want) {
		t.Errorf("WRITE copies by switch = %v, want %v", got, want)
	}
	want := []model.Route{
		{From: "h1", To: "r3", Hops: []model.Hop{{Switch: "s1", In: 1, Out: 200}, {Switch: "s2", In: 201, Out: 202}, {Switch: "s3", In: 203, Out: 36}}},
		{From: "r3", To: "h1", Hops: []model.Hop{{Switch: "s3", In: 36, Out: 203}, {Switch: "s2", In: 202, Out: 201}, {Switch: "s1", In: 200, Out: 1}}},
	}
	if rep.Fabric == nil || len(rep.Fabric.Routes) != 8 || !reflect.DeepEqual(rep.Fabric.Routes[:2], want) {
		t.Errorf("fabric routes = %+v, want 8 starting with %+v", rep.Fabric, want)
	}
	if want := map[string]string{"a": "s1", "b": "s2", "c": "s3", "d": "s4"}; !reflect.DeepEqual(rep.Fabric.Observe, want) {
		t.Errorf("fabric observe = %v, want %v", rep.Fabric.Observe, want)
	}
}

// txPauses returns the switch ports that sent pauses, from report.json's
// switch_pfc.
func txPauses(rep *orchestrator.Report) map[uint32]bool {
	out := map[uint32]bool{}
	for _, c := range rep.SwitchPFC.Ports {
		if c.TxPause > 0 {
			out[c.Port] = true
		}
	}
	return out
}

// TestFabricStormClos: pfc-storm-clos.yaml (RDMA at scale, Fig. 5): h5's
// stalled NIC pauses tor2 for 150 ms. With the ToRs' watchdogs, tor2's
// fires on h5's port (34) after 50 ms, before the flows between the ToRs
// start, and no pause leaves tor2: its link ports (204, 206) send none,
// and neither do the leaves or the spine. Without them
// (pfc-storm-clos-nowatchdog.yaml) tor2 pauses leaf1 (204), leaf1 pauses
// tor1 (201) and every host but h5 is paused.
func TestFabricStormClos(t *testing.T) {
	hostPorts := []uint32{1, 2, 32, 33, 35, 36, 37}
	t.Run("watchdogs", func(t *testing.T) {
		rep := readReport(t, fabricRun(t, "pfc-storm-clos"))
		if !rep.Valid || !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
			t.Errorf("valid %v, integrity %+v; want valid, %v", rep.Valid, rep.Integrity, integrityAll)
		}
		checkVerdict(t, rep, "generator", model.Pass, "")
		tx := txPauses(rep)
		for p := range tx {
			if p >= 200 {
				t.Errorf("switch port %d sent pauses; want none from a link port", p)
			}
		}
		var log []string
		for _, e := range rep.SwitchPFC.Watchdog {
			log = append(log, fmt.Sprintf("%s port %d prio %d", e.Kind, e.Port, e.Priority))
		}
		if want := []string{"storm port 34 prio 3", "restore port 34 prio 3"}; !reflect.DeepEqual(log, want) {
			t.Errorf("watchdog log = %q, want %q", log, want)
		}
	})
	t.Run("no watchdog", func(t *testing.T) {
		rep := readReport(t, fabricRun(t, "pfc-storm-clos-nowatchdog"))
		checkVerdict(t, rep, "gbn", model.Inconclusive, "h5's NIC discarded 391 frames in its receive buffer (rx_discards_phy) that the trace shows delivered: what it received is unknown (connections 0, 1)")
		if !rep.Valid || !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
			t.Errorf("valid %v, integrity %+v; want valid, %v", rep.Valid, rep.Integrity, integrityAll)
		}
		checkVerdict(t, rep, "generator", model.Pass, "")
		tx := txPauses(rep)
		for _, p := range append(hostPorts, 201, 204) {
			if !tx[p] {
				t.Errorf("switch port %d sent no pause, want the storm's spread", p)
			}
		}
		if len(rep.SwitchPFC.Watchdog) != 0 {
			t.Errorf("watchdog log %+v, want none", rep.SwitchPFC.Watchdog)
		}
	})
}

// TestFabricHawkeye: hawkeye-fig1.yaml's four switches each mirror the
// WRITEs that cross them, their sequences complete; without deadlock-ms
// the deadlock check is skip, saying why.
func TestFabricHawkeye(t *testing.T) {
	dir := fabricRun(t, "hawkeye-fig1")
	rep := readReport(t, dir)
	if !rep.Valid || !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
		t.Errorf("valid %v, integrity %+v; want valid, %v", rep.Valid, rep.Integrity, integrityAll)
	}
	checkVerdict(t, rep, "deadlock", model.Skip, "the test sets no deadlock-ms")
	checkVerdict(t, rep, "generator", model.Pass, "")
	if got, want := fabricWrites(t, dir), map[uint8]int{0: 2048, 1: 2048, 2: 1024, 3: 5120}; !reflect.DeepEqual(got, want) {
		t.Errorf("WRITE copies by switch = %v, want %v", got, want)
	}
}

// fabricPauses is a two-switch fabric (h1 on tor1, h2 on tor2) with a
// pause injected to h2 at 5 µs, one to h1 triggered by flow f's PSN 10 as
// tor2 sees it, and h2's NIC stalled 20..40 µs.
const fabricPauses = `name: fabric-pauses
seed: 1
switches: {tor1: {}, tor2: {}}
links: [{a: h1, b: tor1}, {a: h2, b: tor2}, {a: tor1, b: tor2}]
hosts:
  h1: {nic: {personality: cx5, ip-list: [10.0.0.1/24], pfc: {priorities: [3]}}}
  h2: {nic: {personality: cx5, ip-list: [10.0.0.2/24], pfc: {priorities: [3]}}}
flows:
  - {name: f, from: h1, to: h2, rdma-verb: write, num-qps: 1, message-size: 262144, num-msgs-per-qp: 2, mtu: 1024, dscp-list: [26]}
pfc-events:
  - {type: pause, to: h2, priority: 3, quanta: 100, start-us: 5}
  - {type: pause, to: h1, priority: 3, quanta: 100, start: {flow: f, qpn: 0, psn: 10}, at: tor2}
  - {type: rx-stall, host: h2, start-us: 20, duration-us: 20}
`

// TestFabricPauses: pfc-events on a fabric. The pause to h2 leaves by h2's
// port (2) on tor2 at 5 µs; the pause triggered at tor2 leaves by h1's
// port (1) on tor1 the instant tor2 stamps PSN 10 (its copy at tor2, not
// tor1's earlier one); h2's stalled NIC pauses tor2, which pauses tor1 by
// the link (201 → 200), which pauses h1.
func TestFabricPauses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fabric-pauses.yaml")
	writeFile(t, file, fabricPauses)
	if _, err := invoke("run", "-q", "-o", dir, file); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "fabric-pauses", "0")
	if rep := readReport(t, run); !rep.Valid || !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
		t.Fatalf("valid %v, integrity %+v; want valid, %v", rep.Valid, rep.Integrity, integrityAll)
	}
	var got []string
	var psn10 [2]uint64 // PSN 10's stamps at tor1, tor2
	var first roce.PSN
	var mm roce.MACMirror
	var mc roce.MACControlFrame
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(run, "trace.pcap"), func(tp trace.Packet) error {
		if roce.ParseMACMirror(tp.Data, &mm) == nil {
			if roce.ParseMACControl(mm.Frame, &mc) == nil && len(got) < 6 {
				dir := "recv"
				if mm.Sent {
					dir = "sent"
				}
				got = append(got, fmt.Sprintf("sw %d %s port %d at %d ns: %s p3=%d", mm.Switch, dir, mm.Port, mm.TimestampNs, mm.Event, mc.Time[3]))
			}
			return nil
		}
		if (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) == nil && p.Opcode.IsWrite() {
			if p.Opcode == roce.RCWriteFirst && first == 0 {
				first = p.BTH.PSN()
			}
			if m := p.Mirror(); p.BTH.PSN() == first.Add(10) && psn10[m.Switch] == 0 {
				psn10[m.Switch] = m.TimestampNs
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"sw 1 sent port 2 at 5000 ns: pause p3=100",
		fmt.Sprintf("sw 0 sent port 1 at %d ns: pause p3=100", psn10[1]),
		"sw 1 recv port 2 at 21523 ns: none p3=65535",
		"sw 1 sent port 201 at 24567 ns: none p3=65535",
		"sw 0 recv port 200 at 25072 ns: none p3=65535",
		"sw 0 sent port 1 at 28116 ns: none p3=65535",
	}
	if !reflect.DeepEqual(got, want) || psn10[1] != 10591 || psn10[0] >= psn10[1] {
		t.Errorf("PFC copies:\n%s\nwant\n%s\n(PSN 10 at tor1 %d ns, at tor2 %d ns; want tor2's at 10591 ns, after tor1's)", strings.Join(got, "\n"), strings.Join(want, "\n"), psn10[0], psn10[1])
	}
}

// fabricECN is two flows h2 → h1 and h3 → h1 from tor2 into tor1 over
// one link: tor2's egress toward tor1 is where their queue grows. The
// switch named marks by queue depth (switch.ecn), the other does not.
func fabricECN(marking string) string {
	sw := map[string]string{"tor1": "{}", "tor2": "{}"}
	sw[marking] = "{ecn: {priorities: [3], kmin-kb: 10, kmax-kb: 100, pmax: 0.2}}"
	return fmt.Sprintf(`name: fabric-ecn-%s
seed: 1
switches:
  tor1: %s
  tor2: %s
links: [{a: h1, b: tor1}, {a: h2, b: tor2}, {a: h3, b: tor2}, {a: tor1, b: tor2}]
hosts:
  h1: {nic: {personality: cx5, ip-list: [10.0.0.1/24]}}
  h2: {nic: {personality: cx5, ip-list: [10.0.0.2/24]}}
  h3: {nic: {personality: cx5, ip-list: [10.0.0.3/24]}}
flows:
  - {name: a, from: h2, to: h1, rdma-verb: write, num-qps: 1, message-size: 262144, num-msgs-per-qp: 2, mtu: 1024, dscp-list: [26]}
  - {name: b, from: h3, to: h1, rdma-verb: write, num-qps: 1, message-size: 262144, num-msgs-per-qp: 2, mtu: 1024, dscp-list: [26]}
`, marking, sw["tor1"], sw["tor2"])
}

// TestFabricECN: ECN is per switch. With tor2's ecn, tor2 marks 280 of
// the WRITEs at its congested egress toward tor1 (its copies carry the
// mark), and tor1's copies of the same packets arrive marked; with
// tor1's ecn only, nothing is marked: tor1's egress toward h1 never
// queues (the link already paces the flows to its rate).
func TestFabricECN(t *testing.T) {
	for _, tc := range []struct {
		marking string
		want    map[uint8]int
	}{
		{"tor2", map[uint8]int{0: 280, 1: 280}},
		{"tor1", map[uint8]int{}},
	} {
		t.Run(tc.marking, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "fabric-ecn.yaml")
			writeFile(t, file, fabricECN(tc.marking))
			if _, err := invoke("run", "-q", "-o", dir, file); err != nil {
				t.Fatal(err)
			}
			run := filepath.Join(dir, "fabric-ecn-"+tc.marking, "0")
			if rep := readReport(t, run); !rep.Valid {
				t.Fatalf("valid = false (%s)", rep.Error)
			}
			ce := map[uint8]int{}
			var p roce.Packet
			err := trace.ReadFile(filepath.Join(run, "trace.pcap"), func(tp trace.Packet) error {
				if !tp.IsMACMirror() && (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) == nil && p.Opcode.IsWrite() && p.ECN() == 3 {
					ce[p.Mirror().Switch]++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ce, tc.want) {
				t.Errorf("CE-marked WRITE copies by switch = %v, want %v", ce, tc.want)
			}
		})
	}
}

// fabricTwoHost is the two-host form on two switches, a drop applied at
// tor2 (the responder's switch).
const fabricTwoHost = `name: twohost-fabric
seed: 1
switches: {tor1: {}, tor2: {}}
links: [{a: requester, b: tor1}, {a: responder, b: tor2}, {a: tor1, b: tor2}]
requester: {nic: {ip-list: [10.0.0.1/24]}}
responder: {nic: {ip-list: [10.0.0.2/24]}}
traffic:
  num-qps: 1
  rdma-verb: write
  num-msgs-per-qp: 4
  message-size: 65536
  mtu: 1024
  data-pkt-events:
    - {qpn: 0, psn: 3, type: drop, at: tor2}
`

// TestFabricTwoHostAt: the two-host form's one flow is observed at its
// events' switch: the drop of each message's PSN 3 happens at tor2 (the
// copies tagged drop are tor2's, tor1 forwarded them untagged), every
// event is applied, and the per-connection checks read tor2's copies, so
// they pass (the run record's observe names the flow as its connection
// does: "").
func TestFabricTwoHostAt(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "twohost-fabric.yaml")
	writeFile(t, file, fabricTwoHost)
	run := filepath.Join(dir, "twohost-fabric", "0")
	r, err := invokeExit(0, "run", "-q", "-o", dir, file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "twohost-fabric repeat 0: valid, all checks pass → " + run + "\n"; r.stdout != want {
		t.Errorf("lumina run: %q, want %q", r.stdout, want)
	}
	rep := readReport(t, run)
	if want := map[string]string{"": "tor2"}; rep.Fabric == nil || !reflect.DeepEqual(rep.Fabric.Observe, want) {
		t.Errorf("fabric observe = %+v, want %v", rep.Fabric, want)
	}
	checkVerdict(t, rep, "events_applied", model.Pass, "4 of 4 events applied")
	drops := map[uint8]int{}
	var p roce.Packet
	err = trace.ReadFile(filepath.Join(run, "trace.pcap"), func(tp trace.Packet) error {
		if !tp.IsMACMirror() && (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) == nil && p.Mirror().Event == roce.EventDrop {
			drops[p.Mirror().Switch]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[uint8]int{1: 4}; !reflect.DeepEqual(drops, want) {
		t.Errorf("drop-tagged copies by switch = %v, want %v", drops, want)
	}
}

// fabricPFC reads report.json's fabric-wide pfc analysis
// (analysis.checks.pfc.fabric) of a fabric run.
func fabricPFC(t *testing.T, dir string) *pfc.FabricResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Analysis struct {
			Checks struct {
				PFC struct {
					Fabric *pfc.FabricResult `json:"fabric"`
				} `json:"pfc"`
			} `json:"checks"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Analysis.Checks.PFC.Fabric == nil {
		t.Fatalf("%s: report.json has no analysis.checks.pfc.fabric", dir)
	}
	return doc.Analysis.Checks.PFC.Fabric
}

// reachedList is a storm's spread as "switch:port→paused@hops" in the
// order the pauses reached them.
func reachedList(s pfc.FabricStorm) []string {
	var out []string
	for _, r := range s.Reached {
		out = append(out, fmt.Sprintf("%s:%d→%s@%d", r.Switch, r.Port, r.Paused, r.Hops))
	}
	return out
}

// TestFabricStormAnalysis: the pfc analysis of pfc-storm-clos(-nowatchdog)
// names h5's stalled NIC as the storm's root and says how far it spread,
// in order: with tor2's watchdog only to h6 on the same ToR (the cross-ToR
// flows start after the watchdog fired), stopped at tor2 by the watchdog
// on h5's port; without, from tor2 to leaf1, from leaf1 to tor1 and from
// tor1 to h1, two links from the root, and not stopped.
func TestFabricStormAnalysis(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reached  []string
		switches []string
		hops     int
		stopped  string
	}{
		{"pfc-storm-clos", []string{"tor2:35→h6@0"}, []string{"tor2"}, 0, "stopped at tor2: watchdog fired on port 34 "},
		{"pfc-storm-clos-nowatchdog", []string{"tor2:35→h6@0", "tor2:204→leaf1:205@0", "leaf1:201→tor1:200@1", "tor1:1→h1@2"},
			[]string{"leaf1", "tor1", "tor2"}, 2, "not stopped by a watchdog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fabricPFC(t, fabricRun(t, tc.name))
			if len(f.Storms) != 1 {
				t.Fatalf("%d storms, want 1 (h5's stalled NIC): %+v", len(f.Storms), f.Storms)
			}
			s := f.Storms[0]
			if s.Root.Kind != "stalled-nic" || s.Root.Host != "h5" || s.Root.Switch != "tor2" || s.Root.Port != 34 {
				t.Errorf("storm root = %s %s at %s port %d, want stalled-nic h5 at tor2 port 34", s.Root.Kind, s.Root.Host, s.Root.Switch, s.Root.Port)
			}
			if got := reachedList(s); !reflect.DeepEqual(got, tc.reached) {
				t.Errorf("storm reached %q, want %q", got, tc.reached)
			}
			if !reflect.DeepEqual(s.Switches, tc.switches) || s.Hops != tc.hops {
				t.Errorf("storm spread over %v, %d hops; want %v, %d", s.Switches, s.Hops, tc.switches, tc.hops)
			}
			if !strings.HasPrefix(s.Stopped, tc.stopped) {
				t.Errorf("storm stopped = %q, want it to start %q", s.Stopped, tc.stopped)
			}
		})
	}
}

// TestFabricHawkeyeChain: hawkeye-fig1's pfc analysis traces SW1's pause of
// h1 back hop by hop (Hawkeye's provenance) to the congestion at SW4's
// port toward r (33), and names F1, which never crosses that port, the
// victim two links away at SW1's port toward SW2 (200).
func TestFabricHawkeyeChain(t *testing.T) {
	f := fabricPFC(t, fabricRun(t, "hawkeye-fig1"))
	const want = "SW1 paused h1 (port 1) ← SW1 port 200 paused by SW2 ← SW2 port 204 paused by SW4 ← congestion at SW4 port 33"
	var chain *pfc.FabricChain
	for i, c := range f.Chains {
		if c.Path == want {
			chain = &f.Chains[i]
			break
		}
	}
	if chain == nil {
		var paths []string
		for _, c := range f.Chains {
			paths = append(paths, c.Path)
		}
		t.Fatalf("no chain %q among %q", want, paths)
	}
	if r := chain.Root; r.Kind != "congestion" || r.Switch != "SW4" || r.Port != 33 || r.Host != "r" {
		t.Errorf("root = %s at %s port %d (host %s), want congestion at SW4 port 33 (host r)", r.Kind, r.Switch, r.Port, r.Host)
	}
	var victims []string
	for _, v := range chain.Victims {
		victims = append(victims, fmt.Sprintf("%s@%s:%d/%d hops", v.Flow, v.Switch, v.Egress, v.Hops))
	}
	if w := []string{"F1@SW1:200/2 hops"}; !reflect.DeepEqual(victims, w) {
		t.Errorf("victims = %q, want %q", victims, w)
	}
}
