package testlab

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/orchestrator/agent"
)

// Hosts are a remote lab's machines: requester, responder, switch and two
// dumpers. Remote.PIDs and Remote.IPs are keyed by these names.
var Hosts = []string{"req", "rsp", "sw", "d0", "d1"}

// Token is the agents' token; Remote.TokenFile holds it.
const Token = "remote-lab-token-0123456789"

// Remote is a remote testbed on this machine: one network namespace per
// machine (Hosts), a management LAN (a bridge in its own namespace,
// reachable from this machine at 10.254.N.254), data links from each host
// to the switch, `lumina agent` on each host and `lumina injector` on the
// switch, all over TCP with TLS and a token; optionally loopback cables on
// the switch (SwitchLayout), for a fabric of logical switches.
//
// Run Config on it with the remote testbed: `lumina run --agent-token-file
// TokenFile --agent-certs CertDir --rnic softrnic Config`, or
// orchestrator.RunTest with the same RemoteOptions.
type Remote struct {
	// CertDir holds each machine's certificate as <control-ip>.pem, as an
	// operator copies them to the orchestrator.
	CertDir string
	// TokenFile holds Token.
	TokenFile string
	// Config is a test YAML for the lab (test remote-listing2, seed 1: two
	// WRITE connections, 10 messages each, one ECN mark and two drops that
	// expand to 30 events), with each host's control-ip.
	Config string
	// PIDs are the agent (injector on "sw") processes by host.
	PIDs map[string]int
	// IPs are the hosts' management addresses (their control-ip) by host.
	IPs map[string]string
	// Dir is the lab's work directory: <host>.log (each process's output)
	// and tls-<host> (each process's TLS directory).
	Dir string
}

var labSeq atomic.Int64

// SwitchLayout shapes a lab's switch machine.
type SwitchLayout struct {
	// HostPorts are the switch ports of the requester's and the
	// responder's cables (their nic.switch-port); default 1 and 2.
	HostPorts [2]uint32
	// Loopbacks are loopback cables on the switch, as between a Tofino's
	// logical switches (docs/tofino.md §10): for each, a veth pair with
	// both ends in the switch's namespace (lb<k>a, lb<k>b), given to the
	// injector as its two ports, Loopbacks[k][0] and Loopbacks[k][1].
	Loopbacks [][2]uint32
	// BfRtPort, if set, makes the injector also serve BfRt on the
	// switch's management address at that port (`lumina injector
	// --bfrt`: the packet generator's pauses, docs/tofino.md §8).
	BfRtPort int
	// Slowdown, if above 1, runs the switch's clock that many times
	// slower than the wall clock (`lumina injector --slowdown`), for runs
	// with `lumina run --rnic softrnic --slowdown` of the same value
	// (docs/run.md#remote-slowdown).
	Slowdown int
}

// NewRemote builds a remote lab running luminaBinary (a built
// cmd/lumina) on each machine and returns once every agent has written its
// certificate and accepts connections. Everything is removed when the test ends. It skips the test
// unless it can create network namespaces.
func NewRemote(t testing.TB, luminaBinary string) *Remote {
	t.Helper()
	return NewRemoteWith(t, luminaBinary, SwitchLayout{})
}

// NewRemoteWith is NewRemote with the switch machine's ports and loopback
// cables as o says. Config cables the requester and the responder to
// o.HostPorts.
func NewRemoteWith(t testing.TB, luminaBinary string, o SwitchLayout) *Remote {
	t.Helper()
	if o.HostPorts == [2]uint32{} {
		o.HostPorts = [2]uint32{1, 2}
	}
	testutil.RequireNetns(t)
	if luminaBinary == "" {
		t.Fatal("testlab: no lumina binary")
	}
	seq := labSeq.Add(1)
	pfx := fmt.Sprintf("lum%d-r%d-", os.Getpid(), seq)
	work := t.TempDir()
	lab := &Remote{CertDir: filepath.Join(work, "certs"), TokenFile: filepath.Join(work, "token"), Dir: work,
		PIDs: map[string]int{}, IPs: map[string]string{}}
	if err := os.MkdirAll(lab.CertDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lab.TokenFile, []byte(Token), 0o600); err != nil {
		t.Fatal(err)
	}
	subnet := claimSubnet(t)
	ip := func(host int) string { return fmt.Sprintf("10.254.%d.%d", subnet, host) }

	var procs []*exec.Cmd
	var nss []string
	// Registered before anything is created: cleanups run last-in first-out,
	// so the processes stop before their namespaces go.
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
		testutil.MustRun(t, "ip", "netns", "add", pfx+name)
		nss = append(nss, pfx+name)
		testutil.MustRun(t, "ip", "netns", "exec", pfx+name, "ip", "link", "set", "lo", "up")
		testutil.MustRun(t, "ip", "netns", "exec", pfx+name, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
	}
	in := func(ns string, args ...string) {
		testutil.MustRun(t, append([]string{"ip", "netns", "exec", pfx + ns}, args...)...)
	}
	addNS("mgmt")
	in("mgmt", "ip", "link", "add", "br0", "type", "bridge")
	in("mgmt", "ip", "link", "set", "br0", "up")
	// This machine (the orchestrator) on the management LAN.
	root := fmt.Sprintf("lr%d-%d", os.Getpid()%100000, seq)
	testutil.MustRun(t, "ip", "link", "add", root, "type", "veth", "peer", "name", "up0", "netns", pfx+"mgmt")
	t.Cleanup(func() { exec.Command("ip", "link", "delete", root).Run() })
	testutil.MustRun(t, "ip", "addr", "add", ip(254)+"/24", "dev", root)
	testutil.MustRun(t, "ip", "link", "set", root, "up")
	in("mgmt", "ip", "link", "set", "up0", "master", "br0", "up")
	for i, h := range Hosts {
		addNS(h)
		lab.IPs[h] = ip(i + 1)
		testutil.MustRun(t, "ip", "link", "add", "mgmt0", "netns", pfx+h, "type", "veth", "peer", "name", "up"+strconv.Itoa(i+1), "netns", pfx+"mgmt")
		in("mgmt", "ip", "link", "set", "up"+strconv.Itoa(i+1), "master", "br0", "up")
		in(h, "ip", "addr", "add", lab.IPs[h]+"/24", "dev", "mgmt0")
		in(h, "ip", "link", "set", "mgmt0", "up")
	}
	data := func(h, hif, sif string) {
		testutil.MustRun(t, "ip", "link", "add", hif, "netns", pfx+h, "mtu", "9000", "type", "veth", "peer", "name", sif, "netns", pfx+"sw", "mtu", "9000")
		in(h, "ip", "link", "set", hif, "up")
		in("sw", "ip", "link", "set", sif, "up")
	}
	data("req", "eth0", "p1")
	data("rsp", "eth0", "p2")
	data("d0", "eth0", "pd0")
	data("d1", "eth0", "pd1")
	swPorts := []string{"--port", fmt.Sprintf("%d=p1", o.HostPorts[0]), "--port", fmt.Sprintf("%d=p2", o.HostPorts[1]), "--port", "10=pd0", "--port", "11=pd1"}
	for k, lb := range o.Loopbacks {
		a, b := fmt.Sprintf("lb%da", k), fmt.Sprintf("lb%db", k)
		in("sw", "ip", "link", "add", a, "mtu", "9000", "type", "veth", "peer", "name", b, "mtu", "9000")
		in("sw", "ip", "link", "set", a, "up")
		in("sw", "ip", "link", "set", b, "up")
		swPorts = append(swPorts, "--port", fmt.Sprintf("%d=%s", lb[0], a), "--port", fmt.Sprintf("%d=%s", lb[1], b))
	}
	start := func(h string, args ...string) {
		logf, err := os.Create(filepath.Join(work, h+".log"))
		if err != nil {
			t.Fatal(err)
		}
		defer logf.Close() // the child has its own descriptor
		cmd := exec.Command("ip", append([]string{"netns", "exec", pfx + h, luminaBinary}, args...)...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		// ip netns exec execs the program: this is the agent's PID.
		lab.PIDs[h] = cmd.Process.Pid
	}
	for _, h := range Hosts {
		addr := lab.IPs[h]
		tls := filepath.Join(work, "tls-"+h)
		if h == "sw" {
			addr += ":9559"
			args := append(append([]string{"injector", "--listen", addr}, swPorts...), "--token-file", lab.TokenFile, "--tls-dir", tls)
			if o.BfRtPort != 0 {
				args = append(args, "--bfrt", net.JoinHostPort(lab.IPs[h], strconv.Itoa(o.BfRtPort)))
			}
			if o.Slowdown > 1 {
				args = append(args, "--slowdown", strconv.Itoa(o.Slowdown))
			}
			start(h, args...)
		} else {
			addr += ":7946"
			start(h, "agent", "--listen", addr, "--token-file", lab.TokenFile, "--tls-dir", tls)
		}
		// Ready: the certificate is written (the operator copies it to the
		// orchestrator) and the port accepts connections.
		deadline := time.Now().Add(15 * time.Second)
		var pem []byte
		for {
			var err error
			if pem == nil {
				pem, _ = agent.ReadCert(tls)
			}
			if pem != nil {
				var c net.Conn
				if c, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					break
				}
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(work, h+".log"))
				t.Fatalf("%s not ready within 15 s (certificate written: %v, dial: %v): %s", h, pem != nil, err, log)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := os.WriteFile(filepath.Join(lab.CertDir, lab.IPs[h]+".pem"), pem, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lab.Config = filepath.Join(work, "remote.yaml")
	cfg := fmt.Sprintf(`name: remote-listing2
seed: 1
switch: {control-ip: %s}
requester:
  control-ip: %s
  nic: {personality: cx5, if-name: eth0, switch-port: %d, ip-list: [10.0.0.1/24]}
  roce-parameters: {dcqcn-rp-enable: false, min-time-between-cnps: 0}
responder:
  control-ip: %s
  nic: {personality: cx5, if-name: eth0, switch-port: %d, ip-list: [10.0.0.2/24]}
dumpers:
  - {name: dumper-0, control-ip: %s, nic: {if-name: eth0, switch-port: 10}}
  - {name: dumper-1, control-ip: %s, nic: {if-name: eth0, switch-port: 11}}
traffic:
  num-connections: 2
  rdma-verb: write
  num-msgs-per-qp: 10
  message-size: 10240
  data-pkt-events:
    - {qpn: 0, psn: 3, type: ecn, iter: 1}
    - {qpn: 1, psn: 4, type: drop, iter: 1}
    - {qpn: 1, psn: 4, type: drop, iter: 2}
`, lab.IPs["sw"], lab.IPs["req"], o.HostPorts[0], lab.IPs["rsp"], o.HostPorts[1], lab.IPs["d0"], lab.IPs["d1"])
	if err := os.WriteFile(lab.Config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return lab
}

// claimSubnet returns N such that this lab alone uses 10.254.N.0/24: no
// interface here has an address in it, and a lock file (flock, released
// when the test ends or the process dies) keeps other labs — in this test
// process or another — off it.
func claimSubnet(t testing.TB) int {
	t.Helper()
	used := map[int]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			b := p.Addr().As4()
			if b[0] == 10 && b[1] == 254 {
				used[int(b[2])] = true
			}
		}
	}
	for n := 0; n < 255; n++ {
		if used[n] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("lumina-testlab-10.254.%d.lock", n)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		// Closing the file releases the lock; the cleanup registered first
		// runs last, after the lab's interfaces are gone.
		t.Cleanup(func() { f.Close() })
		return n
	}
	t.Fatal("testlab: no free management subnet in 10.254.0.0/16")
	return 0
}
