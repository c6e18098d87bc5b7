package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/orchestrator/agent"
)

// remoteLab stands in for a remote testbed on this machine: one network
// namespace per "machine" (requester, responder, switch, two dumpers), a
// management LAN (a bridge in its own namespace, reachable from here), data
// links from each host to the switch, `lumina agent` on each host and
// `lumina injector` on the switch, all over TCP with TLS and a token.
type remoteLab struct {
	certs, tokenFile string
	cfg              string
	pids             map[string]int // by host: req, rsp, sw, d0, d1
}

func mustRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func newRemoteLab(t *testing.T) *remoteLab {
	buildAgent(t)
	pfx := fmt.Sprintf("lum%d-r", os.Getpid())
	work := t.TempDir()
	lab := &remoteLab{certs: filepath.Join(work, "certs"), tokenFile: filepath.Join(work, "token"), pids: map[string]int{}}
	os.MkdirAll(lab.certs, 0o755)
	os.WriteFile(lab.tokenFile, []byte("remote-lab-token-0123456789"), 0o600)
	var procs []*exec.Cmd
	var nss []string
	t.Cleanup(func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				p.Process.Kill()
				<-done
			}
		}
		for _, ns := range nss {
			exec.Command("ip", "netns", "delete", ns).Run()
		}
	})
	addNS := func(name string) {
		mustRun(t, "ip", "netns", "add", pfx+name)
		nss = append(nss, pfx+name)
		mustRun(t, "ip", "netns", "exec", pfx+name, "ip", "link", "set", "lo", "up")
		mustRun(t, "ip", "netns", "exec", pfx+name, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
	}
	in := func(ns string, args ...string) {
		mustRun(t, append([]string{"ip", "netns", "exec", pfx + ns}, args...)...)
	}
	addNS("mgmt")
	in("mgmt", "ip", "link", "add", "br0", "type", "bridge")
	in("mgmt", "ip", "link", "set", "br0", "up")
	// This machine (the orchestrator) on the management LAN.
	root := fmt.Sprintf("lr%d", os.Getpid()%100000)
	mustRun(t, "ip", "link", "add", root, "type", "veth", "peer", "name", "up0", "netns", pfx+"mgmt")
	t.Cleanup(func() { exec.Command("ip", "link", "delete", root).Run() })
	mustRun(t, "ip", "addr", "add", "10.254.0.254/24", "dev", root)
	mustRun(t, "ip", "link", "set", root, "up")
	in("mgmt", "ip", "link", "set", "up0", "master", "br0", "up")
	hosts := []string{"req", "rsp", "sw", "d0", "d1"}
	for i, h := range hosts {
		addNS(h)
		mustRun(t, "ip", "link", "add", "mgmt0", "netns", pfx+h, "type", "veth", "peer", "name", "up"+strconv.Itoa(i+1), "netns", pfx+"mgmt")
		in("mgmt", "ip", "link", "set", "up"+strconv.Itoa(i+1), "master", "br0", "up")
		in(h, "ip", "addr", "add", fmt.Sprintf("10.254.0.%d/24", i+1), "dev", "mgmt0")
		in(h, "ip", "link", "set", "mgmt0", "up")
	}
	data := func(h, hif, sif string) {
		mustRun(t, "ip", "link", "add", hif, "netns", pfx+h, "mtu", "9000", "type", "veth", "peer", "name", sif, "netns", pfx+"sw", "mtu", "9000")
		in(h, "ip", "link", "set", hif, "up")
		in("sw", "ip", "link", "set", sif, "up")
	}
	data("req", "eth0", "p1")
	data("rsp", "eth0", "p2")
	data("d0", "eth0", "pd0")
	data("d1", "eth0", "pd1")
	start := func(h string, args ...string) {
		logf, _ := os.Create(filepath.Join(work, h+".log"))
		cmd := exec.Command("ip", append([]string{"netns", "exec", pfx + h, AgentBinary}, args...)...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	for i, h := range hosts {
		ip := fmt.Sprintf("10.254.0.%d", i+1)
		tls := filepath.Join(work, "tls-"+h)
		if h == "sw" {
			start(h, "injector", "--listen", ip+":9559", "--port", "1=p1", "--port", "2=p2", "--port", "10=pd0", "--port", "11=pd1",
				"--token-file", lab.tokenFile, "--tls-dir", tls)
		} else {
			start(h, "agent", "--listen", ip+":7946", "--token-file", lab.tokenFile, "--tls-dir", tls)
		}
		lab.pids[h] = procs[len(procs)-1].Process.Pid
		// The operator copies each machine's certificate to the orchestrator.
		deadline := time.Now().Add(15 * time.Second)
		for {
			pem, err := agent.ReadCert(tls)
			if err == nil {
				os.WriteFile(filepath.Join(lab.certs, ip+".pem"), pem, 0o644)
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(work, h+".log"))
				t.Fatalf("%s did not write its certificate: %s", h, log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	lab.cfg = filepath.Join(work, "remote.yaml")
	os.WriteFile(lab.cfg, []byte(`name: remote-listing2
seed: 1
switch: {control-ip: 10.254.0.3}
requester:
  control-ip: 10.254.0.1
  nic: {personality: cx5, if-name: eth0, switch-port: 1, ip-list: [10.0.0.1/24]}
  roce-parameters: {dcqcn-rp-enable: false, min-time-between-cnps: 0}
responder:
  control-ip: 10.254.0.2
  nic: {personality: cx5, if-name: eth0, switch-port: 2, ip-list: [10.0.0.2/24]}
dumpers:
  - {name: dumper-0, control-ip: 10.254.0.4, nic: {if-name: eth0, switch-port: 10}}
  - {name: dumper-1, control-ip: 10.254.0.5, nic: {if-name: eth0, switch-port: 11}}
traffic:
  num-connections: 2
  rdma-verb: write
  num-msgs-per-qp: 10
  message-size: 10240
  data-pkt-events:
    - {qpn: 0, psn: 3, type: ecn, iter: 1}
    - {qpn: 1, psn: 4, type: drop, iter: 1}
    - {qpn: 1, psn: 4, type: drop, iter: 2}
`), 0o644)
	return lab
}

// TestRemoteTestbed drives agents on "machines" (namespaces) exactly as it
// would real hosts: TLS with pinned certificates, a token, TCP.
func TestRemoteTestbed(t *testing.T) {
	testutil.RequireNetns(t)
	lab := newRemoteLab(t)
	tc, err := config.Load(lab.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tc.Testbed != config.TestbedRemote {
		t.Fatalf("testbed %v, want remote", tc.Testbed)
	}
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Remote: RemoteOptions{TokenFile: lab.tokenFile, CertDir: lab.certs, RNIC: "softrnic"}})
	if !res.OK() {
		t.Fatalf("remote run: %v %+v", res.Err, res.Repeats)
	}
	applied := 0
	for _, e := range res.Repeats[0].Report.Events {
		if e.Applied {
			applied++
		}
	}
	if applied != 30 {
		t.Errorf("%d events applied, want 30", applied)
	}

	// A wrong token is refused.
	bad := filepath.Join(t.TempDir(), "token")
	os.WriteFile(bad, []byte("not-the-token-at-all-000"), 0o600)
	tc, _ = config.Load(lab.cfg)
	res = RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Retries: 0, RetriesSet: true,
		Remote: RemoteOptions{TokenFile: bad, CertDir: lab.certs, RNIC: "softrnic"}})
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), "refused our token") {
		t.Errorf("wrong token: %v", res.Err)
	}

	// An untrusted certificate (another agent's) is refused.
	untrusted := t.TempDir()
	other, _ := os.ReadFile(filepath.Join(lab.certs, "10.254.0.2.pem"))
	for _, f := range []string{"10.254.0.1", "10.254.0.2", "10.254.0.3", "10.254.0.4", "10.254.0.5"} {
		os.WriteFile(filepath.Join(untrusted, f+".pem"), other, 0o644)
	}
	tc, _ = config.Load(lab.cfg)
	res = RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Retries: 0, RetriesSet: true,
		Remote: RemoteOptions{TokenFile: lab.tokenFile, CertDir: untrusted, RNIC: "softrnic"}})
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), "requester agent") {
		t.Errorf("untrusted certificate: %v", res.Err)
	}
}

// TestRemoteAgentKilled kills the responder's agent during traffic: the run
// fails with a clear reason within its timeout and keeps partial results,
// marked invalid.
func TestRemoteAgentKilled(t *testing.T) {
	testutil.RequireNetns(t)
	lab := newRemoteLab(t)
	remoteHook = func() {
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(lab.pids["rsp"], syscall.SIGKILL)
	}
	defer func() { remoteHook = nil }()
	tc, _ := config.Load(lab.cfg)
	start := time.Now()
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir(), Retries: 0, RetriesSet: true,
		Remote: RemoteOptions{TokenFile: lab.tokenFile, CertDir: lab.certs, RNIC: "softrnic"}})
	if res.OK() || len(res.Repeats) != 1 || res.Repeats[0].Report.Valid {
		t.Fatalf("run with a killed responder agent: OK=%v err=%v", res.OK(), res.Err)
	}
	rep := res.Repeats[0].Report
	reason := rep.Error
	if reason == "" && rep.Generator != nil {
		reason = rep.Generator.Stopped
	}
	if reason == "" || time.Since(start) > 2*time.Minute {
		t.Errorf("failure after %v with reason %q", time.Since(start), reason)
	}
	if _, err := os.Stat(filepath.Join(res.Repeats[0].Dir, "report.json")); err != nil {
		t.Errorf("partial results not kept: %v", err)
	}
	t.Logf("failed in %v: %s", time.Since(start).Round(time.Millisecond), reason)
}
