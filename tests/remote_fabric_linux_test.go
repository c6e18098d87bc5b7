package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/internal/testlab"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestRemoteFabric runs a fabric on the remote testbed as on one Tofino
// partitioned into logical switches (docs/tofino.md §10): the lab's switch
// machine runs `lumina injector` with h1's cable on port 5, h2's on port
// 6 and one loopback cable (a veth pair with both ends in its namespace)
// on ports 40 and 41, which the test declares as the link tor1–tor2's
// a-port and b-port. The ports are not the ones sim and netns would give
// (1, 2, 200, 201), so the run only works if the control plane installs
// the test's own. Each of flow f's 10 messages loses its PSN 3 at tor2
// (iter 1, message scope): the run is valid, each switch's sequence
// complete, both switches mirror every WRITE packet (tor1 before the
// cable, tor2 after it: as many copies at each), the 10 drop-tagged
// copies are tor2's, and the checks read tor2's copies: every one passes
// but deadlock and flows (skip: no deadlock-ms, one flow).
func TestRemoteFabric(t *testing.T) {
	lab := testlab.NewRemoteWith(t, luminaBin, testlab.SwitchLayout{HostPorts: [2]uint32{5, 6}, Loopbacks: [][2]uint32{{40, 41}}})
	cfg := filepath.Join(t.TempDir(), "remote-fabric.yaml")
	yaml := fmt.Sprintf(`name: remote-fabric
seed: 1
testbed: remote
switches:
  tor1: {control-ip: %s}
  tor2: {}
links:
  - {a: h1, b: tor1}
  - {a: h2, b: tor2}
  - {a: tor1, b: tor2, a-port: 40, b-port: 41}
hosts:
  h1: {control-ip: %s, nic: {personality: cx5, if-name: eth0, switch-port: 5, ip-list: [10.0.0.1/24]}}
  h2: {control-ip: %s, nic: {personality: cx5, if-name: eth0, switch-port: 6, ip-list: [10.0.0.2/24]}}
dumpers:
  - {name: dumper-0, control-ip: %s, nic: {if-name: eth0, switch-port: 10}}
  - {name: dumper-1, control-ip: %s, nic: {if-name: eth0, switch-port: 11}}
flows:
  - name: f
    from: h1
    to: h2
    rdma-verb: write
    num-msgs-per-qp: 10
    message-size: 10240
    data-pkt-events:
      - {qpn: 0, psn: 3, type: drop, iter: 1, at: tor2}
`, lab.IPs["sw"], lab.IPs["req"], lab.IPs["rsp"], lab.IPs["d0"], lab.IPs["d1"])
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	_, dir := runRealTime(t, t.TempDir(), "remote-fabric",
		"--agent-token-file", lab.TokenFile, "--agent-certs", lab.CertDir, "--rnic", "softrnic", cfg)
	rep := readReport(t, dir)
	if rep.Testbed != "remote" || !rep.Valid {
		t.Fatalf("report: testbed %s, valid %v (error %q); want a valid remote run", rep.Testbed, rep.Valid, rep.Error)
	}
	if !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
		t.Errorf("integrity %+v, want %v", rep.Integrity, integrityAll)
	}
	if want := map[string]string{"f": "tor2"}; rep.Fabric == nil || !reflect.DeepEqual(rep.Fabric.Observe, want) {
		t.Errorf("fabric observe = %+v, want %v", rep.Fabric, want)
	}
	var cable []string
	for _, p := range rep.Fabric.Ports {
		if p.DelayNs != 0 {
			t.Errorf("fabric port %d: delay %d ns, want none recorded (the remote cable's delay is its own)", p.Port, p.DelayNs)
		}
		if p.PeerSwitch != "" {
			cable = append(cable, fmt.Sprintf("%s:%d-%s:%d", p.Switch, p.Port, p.PeerSwitch, p.PeerPort))
		}
	}
	if want := []string{"tor1:40-tor2:41", "tor2:41-tor1:40"}; !reflect.DeepEqual(cable, want) {
		t.Errorf("fabric cable ends %q, want %q", cable, want)
	}
	verdicts := map[string]model.Verdict{}
	for name, c := range rep.Checks {
		verdicts[name] = c.Verdict
	}
	want := map[string]model.Verdict{"cnp": model.Pass, "counters": model.Pass, "deadlock": model.Skip, "events_applied": model.Pass,
		"flows": model.Skip, "gbn": model.Pass, "generator": model.Pass, "integrity": model.Pass, "retransmission": model.Pass,
		"switch_state": model.Pass, "timeout": model.Pass}
	if !reflect.DeepEqual(verdicts, want) {
		t.Errorf("verdicts %v, want %v", verdicts, want)
	}
	checkVerdict(t, rep, "events_applied", model.Pass, "10 of 10 events applied")

	writes := fabricWrites(t, dir)
	// 10 messages of 10 packets, plus go-back-N's retransmissions from
	// each message's PSN 3 (how many depends on what was in flight): at
	// least 110, the same at both switches.
	if len(writes) != 2 || writes[0] < 110 || writes[1] != writes[0] {
		t.Errorf("WRITE copies by switch = %v, want the same number (≥ 110) at tor1 (0) and tor2 (1)", writes)
	}
	drops := map[uint8]int{}
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if !tp.IsMACMirror() && (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) == nil && p.Mirror().Event == roce.EventDrop {
			drops[p.Mirror().Switch]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[uint8]int{1: 10}; !reflect.DeepEqual(drops, want) {
		t.Errorf("drop-tagged copies by switch = %v, want %v (tor2's only)", drops, want)
	}
	t.Logf("WRITE copies by switch %v; checks %v", writes, rep.Checks)
}
