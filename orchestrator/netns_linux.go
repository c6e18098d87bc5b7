package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/orchestrator/agent"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// AgentBinary is the lumina executable the netns testbed starts as agents
// (default: this executable). Tests point it at a freshly built binary.
var AgentBinary = ""

var nsSeq atomic.Int64

// netnsHook, when set (tests), is called in its own goroutine when traffic
// starts, with the PIDs of the agents by role.
var netnsHook func(pids map[string]int)

// netnsBed is the netns testbed: one namespace per host (requester,
// responder, switch, each dumper), veth links to the switch namespace,
// each component a separate `lumina agent` process in its namespace,
// driven over gRPC (TLS + token) on unix sockets; real time, AF_PACKET.
type netnsBed struct {
	prefix  string
	work    string
	token   string
	nss     []string
	procs   []*exec.Cmd
	conns   []*grpc.ClientConn
	servers []*grpc.Server
	log     func(string)
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
	for _, s := range b.servers {
		s.Stop()
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
	os.RemoveAll(b.work)
}

func (b *netnsBed) ns(role string) string { return b.prefix + "-" + role }

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

// intakeServer serves the Intake service to the requester agent.
type intakeServer struct {
	luminav1.UnimplementedIntakeServer
	fn func(context.Context, []generator.Connection) error
}

func (s *intakeServer) Install(ctx context.Context, req *luminav1.InstallRequest) (*luminav1.InstallResponse, error) {
	var conns []generator.Connection
	if err := json.Unmarshal(req.GetConnectionsJson(), &conns); err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	if err := s.fn(ctx, conns); err != nil {
		return nil, err
	}
	return &luminav1.InstallResponse{}, nil
}

func runNetns(ctx context.Context, t *config.Test, repeat int, dir string, progress func(string)) (out *collected, err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: netns needs root (network namespaces, AF_PACKET)", ErrTestbed)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: netns needs the ip command (apt-get install iproute2)", ErrTestbed)
	}
	tok := make([]byte, 24)
	rand.Read(tok)
	b := &netnsBed{prefix: fmt.Sprintf("lum%d-%d", os.Getpid(), nsSeq.Add(1)), token: hex.EncodeToString(tok), log: progress}
	defer b.close()
	if b.work, err = os.MkdirTemp("", "lumina-netns-"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(b.work, "token"), []byte(b.token), 0o600); err != nil {
		return nil, err
	}
	out = &collected{NICs: map[string]map[string]uint64{}, Personas: map[string]string{}}
	reqP, err := personality(t, t.Requester)
	if err != nil {
		return nil, errorf("requester personality: %w", err)
	}
	rspP, err := personality(t, t.Responder)
	if err != nil {
		return nil, errorf("responder personality: %w", err)
	}
	out.Personas["requester"], out.Personas["responder"] = reqP.Name, rspP.Name

	progress(fmt.Sprintf("netns: create %d namespaces and veth links", 3+len(t.Dumpers)))
	roles := []string{"req", "rsp", "sw"}
	for i := range t.Dumpers {
		roles = append(roles, "d"+strconv.Itoa(i))
	}
	for _, r := range roles {
		if err := b.addNS(r); err != nil {
			return nil, err
		}
	}
	swPorts := map[uint32]string{portRequester: "p1", portResponder: "p2"}
	if err := b.veth("req", "eth0", "sw", "p1", "", ""); err != nil {
		return nil, err
	}
	if err := b.veth("rsp", "eth0", "sw", "p2", "", ""); err != nil {
		return nil, err
	}
	if err := b.veth("req", "ctl0", "rsp", "ctl0", "10.255.0.1/30", "10.255.0.2/30"); err != nil {
		return nil, err
	}
	for i := range t.Dumpers {
		p := "pd" + strconv.Itoa(i)
		if err := b.veth("d"+strconv.Itoa(i), "eth0", "sw", p, "", ""); err != nil {
			return nil, err
		}
		swPorts[uint32(portDumper0+i)] = p
	}

	progress(fmt.Sprintf("agents: start %d lumina agent processes", len(roles)))
	conns := map[string]*grpc.ClientConn{}
	for _, r := range roles {
		c, err := b.startAgent(ctx, r)
		if err != nil {
			return nil, err
		}
		conns[r] = c
	}

	progress("injector: software switch on AF_PACKET ports, P4Runtime over TLS")
	inj := luminav1.NewInjectorClient(conns["sw"])
	ir, err := inj.Start(ctx, &luminav1.InjectorStartRequest{Ports: swPorts, P4RuntimeAddr: "unix://" + filepath.Join(b.work, "p4rt.sock")})
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	pem, _ := agent.ReadCert(filepath.Join(b.work, "tls-sw"))
	p4opts, err := agent.DialOptions(pem, b.token)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cp, err := controlplane.Dial(cctx, ir.GetP4RuntimeAddr(), controlplane.DialOptions{GRPC: p4opts})
	if err != nil {
		return nil, err
	}
	defer cp.Close()
	if err := cp.SetPipeline(cctx, nil, uint64(repeat+1)); err != nil {
		return nil, err
	}

	progress(fmt.Sprintf("dumpers: start %d (afpacket)", len(t.Dumpers)))
	var dports []controlplane.Dumper
	dclients := make([]luminav1.DumperClient, len(t.Dumpers))
	remotePaths := make([]string, len(t.Dumpers))
	for i, d := range t.Dumpers {
		backend := "afpacket"
		if d.Backend == config.BackendDPDK {
			backend = "dpdk"
		}
		remotePaths[i] = filepath.Join(b.work, "d"+strconv.Itoa(i)+"-"+d.DumpFilename)
		cfg, _ := json.Marshal(dumper.Config{Name: d.Name, Backend: backend, Interface: "eth0", Workers: d.Workers, SnapLen: d.SnapLen,
			Capacity: d.NumPkts, MirrorPort: uint16(t.RewriteUDPDstPort), EALArgs: d.EALArgs, OutPath: remotePaths[i]})
		dclients[i] = luminav1.NewDumperClient(conns["d"+strconv.Itoa(i)])
		if _, err := dclients[i].Start(ctx, &luminav1.DumperStartRequest{ConfigJson: cfg}); err != nil {
			return nil, fmt.Errorf("dumper %s: %w", d.Name, err)
		}
		dports = append(dports, controlplane.Dumper{Name: d.Name, Port: uint32(portDumper0 + i), MAC: macDumper(i), Weight: d.Weight})
	}
	stopDumpers := func() {
		for i, dc := range dclients {
			sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			r, err := dc.Stop(sctx, &luminav1.DumperStopRequest{})
			var rep dumper.Report
			if err == nil {
				json.Unmarshal(r.GetReportJson(), &rep)
				err = fetch(sctx, dc, remotePaths[i], filepath.Join(dir, "dumpers", t.Dumpers[i].DumpFilename))
			}
			cancel()
			if err != nil {
				rep.Name = t.Dumpers[i].Name
				progress(fmt.Sprintf("dumper %s: %v", t.Dumpers[i].Name, err))
			}
			out.Dumpers = append(out.Dumpers, rep)
			out.DumperPcap = append(out.DumperPcap, filepath.Join(dir, "dumpers", t.Dumpers[i].DumpFilename))
		}
		dclients = nil
	}
	defer func() {
		if dclients != nil {
			stopDumpers()
		}
	}()

	progress("generator: RNICs on eth0, responder, requester")
	reqIPs, rspIPs := hostIPs(t.Requester, "10.0.0.1"), hostIPs(t.Responder, "10.0.0.2")
	gens := map[string]luminav1.GeneratorClient{"req": luminav1.NewGeneratorClient(conns["req"]), "rsp": luminav1.NewGeneratorClient(conns["rsp"])}
	for role, h := range map[string]struct {
		cfg config.Host
		mac [6]byte
		ips any
	}{"req": {t.Requester, macRequester, reqIPs}, "rsp": {t.Responder, macResponder, rspIPs}} {
		p := reqP
		ips := reqIPs
		if role == "rsp" {
			p, ips = rspP, rspIPs
		}
		spec, _ := json.Marshal(agent.NICSpec{Interface: "eth0", Name: role, MAC: macString(h.mac), IPs: ips, Personality: p,
			Seed: seedFor(t, repeat, role), DisableRP: !h.cfg.RoCE.DCQCNRPEnable, DisableNP: !h.cfg.RoCE.DCQCNNPEnable,
			MinCNPns: int64(time.Duration(h.cfg.RoCE.MinTimeBetweenCNPs) * time.Microsecond), Adaptive: h.cfg.RoCE.AdaptiveRetrans,
			SlowRestart: h.cfg.RoCE.SlowRestart})
		if _, err := gens[role].StartNIC(ctx, &luminav1.StartNICRequest{NicJson: spec}); err != nil {
			return nil, fmt.Errorf("%s RNIC: %w", role, err)
		}
	}
	sr, err := gens["rsp"].Serve(ctx, &luminav1.ServeRequest{ListenAddr: "10.255.0.2:0"})
	if err != nil {
		return nil, fmt.Errorf("responder: %w", err)
	}

	// The intake service, here in the orchestrator.
	ports := controlplane.Ports{
		Requester: controlplane.Host{Port: portRequester, MAC: macRequester, IPs: reqIPs},
		Responder: controlplane.Host{Port: portResponder, MAC: macResponder, IPs: rspIPs},
		Dumpers:   dports,
	}
	intent := controlplane.Intent{Events: t.ExpandEvents(), IterScope: t.IterScope, MirrorPort: uint16(t.RewriteUDPDstPort)}
	icert, err := agent.EnsureCert(filepath.Join(b.work, "tls-orchestrator"))
	if err != nil {
		return nil, err
	}
	ipem, _ := agent.ReadCert(filepath.Join(b.work, "tls-orchestrator"))
	isock := filepath.Join(b.work, "intake.sock")
	iln, err := net.Listen("unix", isock)
	if err != nil {
		return nil, err
	}
	ig := grpc.NewServer(agent.ServerOptions(icert, b.token)...)
	luminav1.RegisterIntakeServer(ig, &intakeServer{fn: controlplane.Intake(cp, intent, ports, func(p *controlplane.Plan) { out.Plan = p })})
	go ig.Serve(iln)
	b.servers = append(b.servers, ig)

	limit := trafficDeadline(t)
	progress(fmt.Sprintf("traffic: run in real time (limit %v)", limit))
	tr, _ := json.Marshal(traffic(t))
	rctx, rcancel := context.WithTimeout(ctx, limit+time.Minute)
	defer rcancel()
	start := time.Now()
	if netnsHook != nil {
		pids := map[string]int{}
		for i, r := range roles {
			if i < len(b.procs) && b.procs[i].Process != nil {
				pids[r] = b.procs[i].Process.Pid
			}
		}
		go netnsHook(pids)
	}
	rr, err := gens["req"].Run(rctx, &luminav1.RunRequest{TrafficJson: tr, ResponderAddr: sr.GetAddr(), IntakeAddr: "unix://" + isock,
		DeadlineNs: int64(limit), IntakeCertPem: ipem, IntakeToken: b.token})
	if err != nil {
		return out, fmt.Errorf("requester: %w", err)
	}
	out.Stopped = rr.GetStopped()
	var res generator.Result
	if err := json.Unmarshal(rr.GetResultJson(), &res); err == nil {
		out.Generator = &res
		out.Conns = res.Connections
	}
	progress(fmt.Sprintf("traffic: done in %v", time.Since(start).Round(time.Millisecond)))

	progress("collect: switch and NIC counters, stop dumpers, fetch their files")
	if out.Switch, err = cp.ReadCounters(cctx); err != nil {
		return out, err
	}
	for role, g := range gens {
		c, err := g.Counters(ctx, &luminav1.CountersRequest{})
		if err != nil {
			return out, fmt.Errorf("%s counters: %w", role, err)
		}
		out.NICs[map[string]string{"req": "requester", "rsp": "responder"}[role]] = c.GetCounters()
	}
	stopDumpers()
	return out, nil
}

// fetch copies a file from a dumper agent.
func fetch(ctx context.Context, dc luminav1.DumperClient, remote, local string) error {
	st, err := dc.Fetch(ctx, &luminav1.FetchRequest{Path: remote})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	f, err := os.Create(local)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		c, err := st.Recv()
		if err == io.EOF {
			return f.Sync()
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(c.GetData()); err != nil {
			return err
		}
	}
}
