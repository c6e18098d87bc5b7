package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testlab"
	"github.com/netlumina/lumina/orchestrator"
	"github.com/netlumina/lumina/roce"
)

// remotePauseSlowdown is TestRemotePause's slowdown: the example's 1000
// × 5. pfc passes when the requester's last frame after a pause is
// stamped within the reaction bound + the frame, and the cx5 model reacts
// 70–190 ns inside it (1.92–2.04 µs against 2.024 µs + 88 ns, measured
// at 1000): wall-clock lateness of the RNIC or the switch (writing the
// frame, handling the pause, stamping) eats that margin at 1/K ns per ns,
// so at 1000 a 70 µs hiccup at the wrong frame makes pfc inconclusive; at
// 5000 it takes 350 µs. The test then takes about 23 s.
const remotePauseSlowdown = 5000

// TestRemotePause runs examples/pause-reaction.yaml on the remote testbed
// with pauses by the packet generator through BfRt (issue #33,
// docs/tofino.md §8): the lab's switch machine runs `lumina injector
// --bfrt`, the software switch standing in for a Tofino's bf_switchd
// (p4src/tofino/bfrt/bfrtfake), and `lumina run --bfrt` enables PFC on
// the hosts' ports and writes the packet generator's plan, whose app
// drives the switch's pause injection. Every component is lumina's
// software, so the run is slowed as netns-slowdown slows netns, with the
// remote testbed's `--slowdown` (`lumina injector --slowdown`, the
// agents' software RNICs, the switch's timing read as on netns;
// docs/run.md#remote-slowdown), at remotePauseSlowdown. The same test on sim gives the
// reference: both runs are valid, send the same ten pauses to the
// requester (sent from its port, event pause) in one continuous episode,
// count them in switch_pfc (on remote from $PORT_STAT), and every check
// has the sim's verdict: pfc and counters pass.
func TestRemotePause(t *testing.T) {
	t.Logf("examples/pause-reaction.yaml on the remote testbed at slowdown %d", remotePauseSlowdown)
	lab := testlab.NewRemoteWith(t, luminaBin, testlab.SwitchLayout{BfRtPort: 50052, Slowdown: remotePauseSlowdown})
	src, err := os.ReadFile("../examples/pause-reaction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example, cabled to the lab: control-ips, interfaces, switch
	// ports; its netns-slowdown is refused on remote (the key is the
	// netns testbed's): --slowdown gives the lab's.
	yaml := string(src)
	m := regexp.MustCompile(`(?m)^netns-slowdown: (\d+)\n`).FindStringSubmatch(yaml)
	if m == nil {
		t.Fatal("examples/pause-reaction.yaml: no netns-slowdown")
	}
	for _, r := range [][2]string{
		{m[0], ""},
		{"requester:\n  nic:\n", "switch: {control-ip: " + lab.IPs["sw"] + "}\nrequester:\n  control-ip: " + lab.IPs["req"] + "\n  nic:\n    if-name: eth0\n    switch-port: 1\n"},
		{"responder:\n  nic:\n", "responder:\n  control-ip: " + lab.IPs["rsp"] + "\n  nic:\n    if-name: eth0\n    switch-port: 2\n"},
		{"  - {name: dumper-0, weight: 1}\n", "  - {name: dumper-0, weight: 1, control-ip: " + lab.IPs["d0"] + ", nic: {if-name: eth0, switch-port: 10}}\n"},
	} {
		if strings.Count(yaml, r[0]) != 1 {
			t.Fatalf("examples/pause-reaction.yaml: want %q once", r[0])
		}
		yaml = strings.Replace(yaml, r[0], r[1], 1)
	}
	cfg := filepath.Join(t.TempDir(), "pause-reaction.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	_, simDir := runRealTime(t, t.TempDir(), "pause-reaction", "--testbed", "sim", cfg)
	_, dir := runRealTime(t, t.TempDir(), "pause-reaction", "--testbed", "remote", "--agent-token-file", lab.TokenFile, "--agent-certs", lab.CertDir,
		"--rnic", "softrnic", "--slowdown", strconv.Itoa(remotePauseSlowdown), "--bfrt", lab.IPs["sw"]+":50052", cfg)
	sim, rep := readReport(t, simDir), readReport(t, dir)
	if rep.Testbed != "remote" || !rep.Valid || sim.Testbed != "sim" || !sim.Valid {
		t.Fatalf("remote: testbed %s valid %v (%q); sim: testbed %s valid %v", rep.Testbed, rep.Valid, rep.Error, sim.Testbed, sim.Valid)
	}
	// On the models' clock the remote run takes the software switch's
	// timing (its stamped frames, their uncertainty) as netns does.
	if rep.Timing == nil || rep.Timing.Slowdown != remotePauseSlowdown || rep.Timing.Frames == 0 || rep.Timing.Frames > uint64(rep.Packets) ||
		sim.Timing != nil && (sim.Timing.Slowdown != 0 || sim.Timing.Frames != 0) {
		t.Errorf("timing: remote %+v, sim %+v: want slowdown %d and the switch's stamped frames on remote only", rep.Timing, sim.Timing, remotePauseSlowdown)
	}
	for name, d := range map[string]string{"sim": simDir, "remote": dir} {
		frames, _ := pfcTrace(t, d)
		injected := 0
		for _, f := range frames {
			if f.sent && f.port == 1 && f.event == roce.EventPause && f.xoff {
				injected++
			}
		}
		if injected != 10 {
			t.Errorf("%s: %d injected pauses in the trace, want 10", name, injected)
		}
	}
	for name, rp := range map[string]*orchestrator.Report{"sim": sim, "remote": rep} {
		var tx uint64
		if rp.SwitchPFC == nil {
			t.Errorf("%s: no switch_pfc", name)
			continue
		}
		for _, p := range rp.SwitchPFC.Ports {
			if p.Port == 1 && p.Priority == 3 {
				tx = p.TxPause
			}
		}
		if tx != 10 {
			t.Errorf("%s: switch_pfc port 1 priority 3 tx_pause %d, want 10", name, tx)
		}
		// The refreshes 20 µs apart keep the requester paused in one
		// episode, as on sim.
		found := false
		if a := rp.Analysis; a != nil {
			for _, ps := range a.PFC.Ports {
				if ps.Port == 1 && ps.Priority == 3 {
					found = true
					if ps.Sent.Injected != 10 || ps.Sent.Episodes != 1 {
						t.Errorf("%s: port 1 priority 3: %d injected pauses in %d episodes, want 10 in 1", name, ps.Sent.Injected, ps.Sent.Episodes)
					}
					if r := ps.Sent.MaxReactionNs; r != nil {
						t.Logf("%s: the requester's reaction %d ns (bound %d ns + the frame), pause lateness %d ns, timestamp uncertainty %d ns",
							name, *r, a.PFC.ReactionBoundNs, a.PFC.LatenessNs, a.PFC.UncertaintyNs)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no pfc analysis of port 1 priority 3", name)
		}
	}
	for _, name := range []string{"pfc", "counters"} {
		if v := rep.Checks[name]; v.Verdict != "pass" {
			t.Errorf("remote: %s %s (%s), want pass", name, v.Verdict, v.Detail)
		}
	}
	if a := rep.Analysis; a != nil {
		for _, m := range a.Checks.Counters.Mismatches {
			t.Errorf("remote: counters: %s (timing %+v)", m.Detail, *rep.Timing)
		}
	}
	if len(rep.Checks) != len(sim.Checks) {
		t.Errorf("remote checks %v, sim %v", rep.Checks, sim.Checks)
	}
	for name, c := range sim.Checks {
		if got := rep.Checks[name]; got.Verdict != c.Verdict {
			t.Errorf("check %s: remote %s (%s), sim %s (%s)", name, got.Verdict, got.Detail, c.Verdict, c.Detail)
		}
	}
}
