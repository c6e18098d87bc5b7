package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator/agent"
)

// AgentBinary is the lumina executable the netns testbed starts as agents
// (default: this executable). Tests point it at a freshly built binary.
var AgentBinary = ""

var nsSeq atomic.Int64

// netnsBed is the netns testbed: one namespace per host (each traffic
// host, named as its sim agent: agentName; the switch; each dumper), veth
// links to the switch namespace, a control veth between the two hosts of
// each flow,
// each component a separate `lumina agent` process in its namespace,
// driven over gRPC (TLS + token) on unix sockets; real time, AF_PACKET.
type netnsBed struct {
	prefix string
	work   string
	token  string
	nss    []string
	procs  []*exec.Cmd
	conns  []*grpc.ClientConn
	log    func(string)
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %v: %s", args, err, out)
	}
	return nil
}

// close removes everything the testbed created: agents (by PID), gRPC
// servers and connections, namespaces (with their veths), the work dir.
func (b *netnsBed) close() {
	for _, c := range b.conns {
		c.Close()
	}
	for _, p := range b.procs {
		if p.Process == nil {
			continue
		}
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
	for _, ns := range b.nss {
		if err := run("ip", "netns", "delete", ns); err != nil {
			b.log("cleanup: " + err.Error())
		}
	}
	if b.work != "" {
		os.RemoveAll(b.work)
	}
}

func (b *netnsBed) ns(role string) string { return b.prefix + "-" + role }

// sweepDeadRuns removes what netns runs of dead orchestrators left behind
// (an orchestrator killed with SIGKILL cannot clean up): namespaces named
// lum<pid>-… and work directories lumina-netns-* in tmp (holding a run's
// token and TLS keys) whose owner.pid names a process that no longer
// exists. It returns what it removed.
func sweepDeadRuns(tmp string) []string {
	var swept []string
	dead := func(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH }
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			digits, ok := strings.CutPrefix(name, "lum")
			if !ok {
				continue
			}
			pidStr, _, ok := strings.Cut(digits, "-")
			if pid, err := strconv.Atoi(pidStr); ok && err == nil && dead(pid) {
				if run("ip", "netns", "delete", name) == nil {
					swept = append(swept, "namespace "+name)
				}
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "lumina-netns-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue // not ours to judge: a run of an older lumina, or one just starting
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && dead(pid) {
			if os.RemoveAll(d) == nil {
				swept = append(swept, d)
			}
		}
	}
	return swept
}

func (b *netnsBed) addNS(role string) error {
	name := b.ns(role)
	if err := run("ip", "netns", "add", name); err != nil {
		return err
	}
	b.nss = append(b.nss, name)
	for _, c := range [][]string{{"ip", "link", "set", "lo", "up"}, {"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"}} {
		if err := run(append([]string{"ip", "netns", "exec", name}, c...)...); err != nil {
			return err
		}
	}
	return nil
}

func (b *netnsBed) veth(nsA, ifA, nsB, ifB, addrA, addrB string) error {
	if err := run("ip", "link", "add", ifA, "netns", b.ns(nsA), "mtu", "9000", "type", "veth", "peer", "name", ifB, "netns", b.ns(nsB), "mtu", "9000"); err != nil {
		return err
	}
	for _, x := range [][3]string{{nsA, ifA, addrA}, {nsB, ifB, addrB}} {
		if x[2] != "" {
			if err := run("ip", "netns", "exec", b.ns(x[0]), "ip", "addr", "add", x[2], "dev", x[1]); err != nil {
				return err
			}
		}
		if err := run("ip", "netns", "exec", b.ns(x[0]), "ip", "link", "set", x[1], "up"); err != nil {
			return err
		}
	}
	return nil
}

// startAgent starts `lumina agent` in the role's namespace and connects to
// it once its certificate and socket are ready.
func (b *netnsBed) startAgent(ctx context.Context, role string) (*grpc.ClientConn, error) {
	bin := AgentBinary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	sock := filepath.Join(b.work, role+".sock")
	tlsDir := filepath.Join(b.work, "tls-"+role)
	logf, err := os.Create(filepath.Join(b.work, role+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("ip", "netns", "exec", b.ns(role), bin, "agent", "--listen", "unix://"+sock,
		"--token-file", filepath.Join(b.work, "token"), "--tls-dir", tlsDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s agent: %w", role, err)
	}
	b.procs = append(b.procs, cmd)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Readiness: the certificate exists and the socket accepts connections.
	deadline := time.Now().Add(15 * time.Second)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 100*time.Millisecond) {
		if pem, err := agent.ReadCert(tlsDir); err == nil {
			if c, err := net.Dial("unix", sock); err == nil {
				c.Close()
				opts, err := agent.DialOptions(pem, b.token)
				if err != nil {
					return nil, err
				}
				conn, err := grpc.NewClient("unix://"+sock, opts...)
				if err != nil {
					return nil, err
				}
				b.conns = append(b.conns, conn)
				// The process is reaped by close; forget the waiter's result.
				b.procs[len(b.procs)-1] = &exec.Cmd{Process: cmd.Process}
				go func() { <-exited }()
				return conn, nil
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(b.work, role+".log"))
			return nil, fmt.Errorf("the %s agent exited before it was ready (%v): %s", role, err, log)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %s agent was not ready within 15 s", role)
		}
	}
}

func newNetnsBed() (testbed, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: netns needs root (network namespaces, AF_PACKET)", ErrTestbed)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: netns needs the ip command (apt-get install iproute2)", ErrTestbed)
	}
	return &netnsBed{prefix: fmt.Sprintf("lum%d-%d", os.Getpid(), nsSeq.Add(1)), log: func(string) {}}, nil
}

func (b *netnsBed) place(ctx context.Context, run *Run, progress func(string)) (*placement, error) {
	t := run.Test
	b.log = progress
	tok := make([]byte, 24)
	rand.Read(tok)
	b.token = hex.EncodeToString(tok)
	if swept := sweepDeadRuns(os.TempDir()); len(swept) > 0 {
		progress("netns: removed what dead runs left: " + strings.Join(swept, ", "))
	}
	var err error
	if b.work, err = os.MkdirTemp("", "lumina-netns-"); err != nil {
		return nil, err
	}
	// The owner's pid tells a later run whether this one is dead.
	if err := os.WriteFile(filepath.Join(b.work, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(b.work, "token"), []byte(b.token), 0o600); err != nil {
		return nil, err
	}
	var roles []string
	for i := range t.Hosts {
		roles = append(roles, agentName(t, i))
	}
	roles = append(roles, "switch")
	for i := range t.Dumpers {
		roles = append(roles, "dumper"+strconv.Itoa(i))
	}
	progress(fmt.Sprintf("netns: create %d namespaces and veth links", len(roles)))
	for _, r := range roles {
		if err := b.addNS(r); err != nil {
			return nil, err
		}
	}
	pl := &placement{realTime: true, switchIfaces: map[uint32]string{}, rnic: "softrnic",
		p4rtListen: "unix://" + filepath.Join(b.work, "p4rt.sock"), token: b.token}
	for i := range t.Hosts {
		p := "p" + strconv.Itoa(i+1)
		if err := b.veth(roles[i], "eth0", "switch", p, "", ""); err != nil {
			return nil, err
		}
		pl.switchIfaces[hostPort(i)] = p
		pl.hostPorts = append(pl.hostPorts, hostPort(i))
		pl.hostIfaces = append(pl.hostIfaces, "eth0")
	}
	if fb := run.fabric; fb != nil {
		// Each switch-to-switch link is a veth pair with both ends in the
		// switch's namespace, two ports of the one software switch.
		for l, sl := range fb.links {
			if err := b.veth("switch", linkIface(l, 0), "switch", linkIface(l, 1), "", ""); err != nil {
				return nil, err
			}
			for end := range 2 {
				pl.switchIfaces[sl.ports[end]] = linkIface(l, end)
			}
		}
	}
	// The generators' control connections: a veth between the two hosts
	// of each flow (one per pair of hosts), pair k with 10.255.x.y/30
	// (the first pair's 10.255.0.1 on its first flow's from host, .2 on
	// its to host); each flow's responder listens on its to host's end.
	links := controlLinks(t)
	nctl := make([]int, len(t.Hosts)) // control interfaces per host so far
	for _, l := range links {
		a, b2 := l.hosts[0], l.hosts[1]
		if err := b.veth(roles[a], "ctl"+strconv.Itoa(nctl[a]), roles[b2], "ctl"+strconv.Itoa(nctl[b2]),
			l.addr[0].String()+"/30", l.addr[1].String()+"/30"); err != nil {
			return nil, err
		}
		nctl[a]++
		nctl[b2]++
	}
	for _, fl := range t.Flows {
		pl.responderListen = append(pl.responderListen, net.JoinHostPort(controlAddr(links, t.HostIndex(fl.From), t.HostIndex(fl.To)).String(), "0"))
	}
	for i, d := range t.Dumpers {
		p := "pd" + strconv.Itoa(i)
		if err := b.veth("dumper"+strconv.Itoa(i), "eth0", "switch", p, "", ""); err != nil {
			return nil, err
		}
		pl.switchIfaces[uint32(portDumper0+i)] = p
		pl.dumperPorts = append(pl.dumperPorts, uint32(portDumper0+i))
		pl.dumperIfaces = append(pl.dumperIfaces, "eth0")
		pl.dumperPaths = append(pl.dumperPaths, filepath.Join(b.work, "dumper"+strconv.Itoa(i)+"-"+d.DumpFilename))
	}

	progress(fmt.Sprintf("agents: start %d lumina agent processes", len(roles)))
	pl.pids = map[string]int{}
	for i, r := range roles {
		c, err := b.startAgent(ctx, r)
		if err != nil {
			return nil, err
		}
		if p := b.procs[len(b.procs)-1].Process; p != nil {
			pl.pids[r] = p.Pid
		}
		switch {
		case i < len(t.Hosts):
			pl.hosts = append(pl.hosts, c)
		case r == "switch":
			pl.injector = c
		default:
			pl.dumpers = append(pl.dumpers, c)
		}
	}
	// The switch agent serves P4Runtime with its own certificate.
	swPEM, err := agent.ReadCert(filepath.Join(b.work, "tls-switch"))
	if err != nil {
		return nil, err
	}
	if pl.p4rtDial, err = agent.DialOptions(swPEM, b.token); err != nil {
		return nil, err
	}
	if err := intakeTLS(pl, filepath.Join(b.work, "tls-orchestrator")); err != nil {
		return nil, err
	}
	if pl.intake, err = (agent.Real{}).Listen("unix://" + filepath.Join(b.work, "intake.sock")); err != nil {
		return nil, err
	}
	pl.intakeAddr = "unix://" + pl.intake.Addr().String()
	return pl, nil
}

// controlLink is a control veth between two hosts (indices in t.Hosts)
// and their addresses on it.
type controlLink struct {
	hosts [2]int
	addr  [2]netip.Addr
}

// controlLinks returns one control link per pair of hosts that some flow
// joins, in the order of their first flows: link k's addresses are
// 10.255.k/64.(k%64)*4+1 on its first flow's from host and +2 on its to
// host (/30 each; the two-host form's 10.255.0.1 and 10.255.0.2).
func controlLinks(t *config.Test) []controlLink {
	var out []controlLink
	seen := map[[2]int]bool{}
	for _, fl := range t.Flows {
		a, b := t.HostIndex(fl.From), t.HostIndex(fl.To)
		if seen[[2]int{a, b}] || seen[[2]int{b, a}] {
			continue
		}
		seen[[2]int{a, b}] = true
		k := len(out)
		base := [4]byte{10, 255, byte(k / 64), byte(k%64*4 + 1)}
		second := base
		second[3]++
		out = append(out, controlLink{hosts: [2]int{a, b}, addr: [2]netip.Addr{netip.AddrFrom4(base), netip.AddrFrom4(second)}})
	}
	return out
}

// controlAddr is host to's address on its control link with host from.
func controlAddr(links []controlLink, from, to int) netip.Addr {
	for _, l := range links {
		switch l.hosts {
		case [2]int{from, to}:
			return l.addr[1]
		case [2]int{to, from}:
			return l.addr[0]
		}
	}
	return netip.Addr{}
}
