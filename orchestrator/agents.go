package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/nic"
	"github.com/netlumina/lumina/orchestrator/agent"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

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

// agentEnv is a provisioned testbed of lumina agents (netns: namespaces
// on this machine; remote: real hosts): how to reach each component and
// where things live on its side.
type agentEnv struct {
	conns   map[string]*grpc.ClientConn // roles: req, rsp, sw, d0, d1, ...
	token   string
	work    string // orchestrator-local scratch (certificates, sockets)
	swPorts map[uint32]string
	// p4rtListen is where the switch agent serves P4Runtime; p4rtDial, if
	// set, is used instead of starting the software switch (a Tofino or a
	// separately run target).
	p4rtListen string
	p4rtDial   string
	p4rtOpts   []grpc.DialOption
	p4rtCert   func() ([]byte, error)
	// iface is each traffic host's data interface; dumperIface and
	// dumperPath the dumpers'.
	iface       map[string]string
	dumperIface func(i int) string
	dumperPath  func(i int) string
	// responderListen is the responder's generator control address;
	// responderHost, if set, replaces the host of the bound address.
	responderListen string
	responderHost   string
	// The intake server: where it listens and the address the requester
	// dials (default: the listener's).
	intakeNetwork, intakeListen, intakeAdvertise string
	addServer                                    func(*grpc.Server)
	hook                                         func()
	// Switch ports of the requester, responder and each dumper.
	reqPort, rspPort uint32
	dumperPort       func(i int) uint32
	// rnic is the RNIC backend the agents use: "softrnic" or "verbs" (real
	// NICs, configured with the hosts' roce-parameters).
	rnic string
	// p4info and p4DeviceConfig, when set, are pushed instead of lumina's
	// P4Info and an empty device config (a Tofino: bf-p4c's output).
	p4info, p4DeviceConfig []byte
}

// driveAgents runs one repeat on provisioned agents.
func driveAgents(ctx context.Context, t *config.Test, repeat int, dir string, env *agentEnv, progress func(string)) (*collected, error) {
	out := &collected{NICs: map[string]map[string]uint64{}, Personas: map[string]string{}, ReqPort: env.reqPort, RspPort: env.rspPort,
		Versions: map[string]json.RawMessage{}}
	reqP, err := personality(t, t.Requester)
	if err != nil {
		return nil, errorf("requester personality: %w", err)
	}
	rspP, err := personality(t, t.Responder)
	if err != nil {
		return nil, errorf("responder personality: %w", err)
	}
	out.Personas["requester"], out.Personas["responder"] = reqP.Name, rspP.Name
	conns := env.conns
	p4addr, p4opts := env.p4rtDial, env.p4rtOpts
	if p4addr == "" {
		progress("injector: software switch on AF_PACKET ports, P4Runtime over TLS")
		inj := luminav1.NewInjectorClient(conns["sw"])
		ir, err := inj.Start(ctx, &luminav1.InjectorStartRequest{Ports: env.swPorts, P4RuntimeAddr: env.p4rtListen})
		if err != nil {
			return nil, fmt.Errorf("injector: %w", err)
		}
		pem, err := env.p4rtCert()
		if err != nil {
			return nil, err
		}
		if p4opts, err = agent.DialOptions(pem, env.token); err != nil {
			return nil, err
		}
		p4addr = ir.GetP4RuntimeAddr()
	} else {
		progress("injector: P4Runtime target at " + p4addr)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cp, err := controlplane.Dial(cctx, p4addr, controlplane.DialOptions{GRPC: p4opts})
	if err != nil {
		return nil, err
	}
	defer cp.Close()
	if env.p4info != nil {
		err = cp.SetPipelineWith(cctx, env.p4info, env.p4DeviceConfig, uint64(repeat+1))
	} else {
		err = cp.SetPipeline(cctx, env.p4DeviceConfig, uint64(repeat+1))
	}
	if err != nil {
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
		remotePaths[i] = env.dumperPath(i)
		cfg, _ := json.Marshal(dumper.Config{Name: d.Name, Backend: backend, Interface: env.dumperIface(i), Workers: d.Workers, SnapLen: d.SnapLen,
			Capacity: d.NumPkts, MirrorPort: uint16(t.RewriteUDPDstPort), EALArgs: d.EALArgs, OutPath: remotePaths[i]})
		dclients[i] = luminav1.NewDumperClient(conns["d"+strconv.Itoa(i)])
		if _, err := dclients[i].Start(ctx, &luminav1.DumperStartRequest{ConfigJson: cfg}); err != nil {
			return nil, fmt.Errorf("dumper %s: %w", d.Name, err)
		}
		dports = append(dports, controlplane.Dumper{Name: d.Name, Port: env.dumperPort(i), MAC: macDumper(i), Weight: d.Weight})
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
	nicMAC := map[string][6]byte{}
	gens := map[string]luminav1.GeneratorClient{"req": luminav1.NewGeneratorClient(conns["req"]), "rsp": luminav1.NewGeneratorClient(conns["rsp"])}
	for role, h := range map[string]struct {
		cfg  config.Host
		mac  [6]byte
		ips  []netip.Addr
		pers softrnic.Personality
	}{"req": {t.Requester, macRequester, reqIPs, reqP}, "rsp": {t.Responder, macResponder, rspIPs, rspP}} {
		ns := agent.NICSpec{Backend: env.rnic, Interface: env.iface[role],
			RNIC: nicConfig(role, h.mac, h.ips, h.pers, h.cfg, seedFor(t, repeat, role))}
		if env.rnic == "verbs" {
			dev, params := nic.FromConfig(h.cfg)
			ns.Device, ns.Configure = dev, &params
		}
		spec, _ := json.Marshal(ns)
		sn, err := gens[role].StartNIC(ctx, &luminav1.StartNICRequest{NicJson: spec})
		if err != nil {
			return nil, fmt.Errorf("%s RNIC: %w", role, err)
		}
		hw, err := net.ParseMAC(sn.GetMac())
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("%s RNIC reported MAC %q", role, sn.GetMac())
		}
		nicMAC[role] = [6]byte(hw)
		if v := sn.GetVersionsJson(); len(v) > 0 {
			out.Versions[map[string]string{"req": "requester", "rsp": "responder"}[role]] = json.RawMessage(v)
		}
	}
	sr, err := gens["rsp"].Serve(ctx, &luminav1.ServeRequest{ListenAddr: env.responderListen})
	if err != nil {
		return nil, fmt.Errorf("responder: %w", err)
	}
	rspAddr := sr.GetAddr()
	if env.responderHost != "" {
		_, port, _ := net.SplitHostPort(rspAddr)
		rspAddr = net.JoinHostPort(env.responderHost, port)
	}

	// The intake service, here in the orchestrator.
	ports := controlplane.Ports{
		Requester: controlplane.Host{Port: env.reqPort, MAC: nicMAC["req"], IPs: reqIPs},
		Responder: controlplane.Host{Port: env.rspPort, MAC: nicMAC["rsp"], IPs: rspIPs},
		Dumpers:   dports,
	}
	intent := controlplane.Intent{Events: t.ExpandEvents(), IterScope: t.IterScope, MirrorPort: uint16(t.RewriteUDPDstPort)}
	icert, err := agent.EnsureCert(filepath.Join(env.work, "tls-orchestrator"))
	if err != nil {
		return nil, err
	}
	ipem, _ := agent.ReadCert(filepath.Join(env.work, "tls-orchestrator"))
	iln, err := net.Listen(env.intakeNetwork, env.intakeListen)
	if err != nil {
		return nil, err
	}
	intakeAddr := env.intakeAdvertise
	if intakeAddr == "" {
		intakeAddr = iln.Addr().String()
		if env.intakeNetwork == "unix" {
			intakeAddr = "unix://" + intakeAddr
		}
	} else if _, port, err := net.SplitHostPort(iln.Addr().String()); err == nil && env.intakeNetwork == "tcp" {
		if h, p, err := net.SplitHostPort(intakeAddr); err == nil && (p == "" || p == "0") {
			intakeAddr = net.JoinHostPort(h, port)
		}
	}
	ig := grpc.NewServer(agent.ServerOptions(icert, env.token)...)
	luminav1.RegisterIntakeServer(ig, &intakeServer{fn: controlplane.Intake(cp, intent, ports, func(p *controlplane.Plan) { out.Plan = p })})
	go ig.Serve(iln)
	defer ig.Stop()
	if env.addServer != nil {
		env.addServer(ig)
	}

	limit := trafficDeadline(t)
	progress(fmt.Sprintf("traffic: run in real time (limit %v)", limit))
	tr, _ := json.Marshal(traffic(t))
	rctx, rcancel := context.WithTimeout(ctx, limit+time.Minute)
	defer rcancel()
	start := time.Now()
	if env.hook != nil {
		env.hook()
	}
	rr, err := gens["req"].Run(rctx, &luminav1.RunRequest{TrafficJson: tr, ResponderAddr: rspAddr, IntakeAddr: intakeAddr,
		DeadlineNs: int64(limit), IntakeCertPem: ipem, IntakeToken: env.token})
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
