package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// Remote testbed defaults.
const (
	DefaultAgentPort     = 7946
	DefaultP4RuntimePort = 9559
)

// RemoteOptions say how to reach the agents of a remote testbed.
type RemoteOptions struct {
	// TokenFile holds the token the agents were started with. Required.
	TokenFile string
	// CertDir holds each agent's certificate as <host>.pem (the host as
	// written in the config's control-ip, without a port), copied from the
	// agent's --tls-dir/cert.pem: the orchestrator trusts exactly those.
	// A <switch-host>.pem makes the P4Runtime connection TLS with the token
	// too (a `lumina injector`); without it P4Runtime is plaintext (a
	// Tofino's BF-SDE or Stratum server).
	CertDir string
	// IntakeListen is where the orchestrator serves the metadata intake
	// (default ":0"); IntakeAddr the address the requester's agent dials
	// (default: this machine's address towards the requester, same port).
	IntakeListen, IntakeAddr string
	// RNIC is the RNIC the agents drive: "verbs" (default: the hosts' real
	// NICs, configured with roce-parameters; agents built with -tags verbs)
	// or "softrnic" (lumina's software RNIC on nic.if-name).
	RNIC string
	// P4Info and DeviceConfig are files to push to a Tofino: bf-p4c's
	// P4Info for lumina.p4 and the packed device config (docs/tofino.md).
	// Default: lumina's P4Info and no device config (the software target).
	P4Info, DeviceConfig string
	// BfRt is the switch's BfRt gRPC server (bf_switchd, default port
	// bfrt.DefaultPort), plaintext: with it, pfc-events of type pause are
	// sent by the Tofino's packet generator and the switch's PFC counters
	// are read from $PORT_STAT (docs/tofino.md §8). Required for a test
	// with pauses. BfRtProgram is the program bound there (default
	// "lumina"), Tofino the chip (1, default, or 2). PktgenPort is the
	// pipe-local pktgen port, lumina.p4's LUMINA_PKTGEN_PORT (0: its
	// default, 68 on Tofino 1, 6 on Tofino 2; bfrt.Chip.CheckPktgenPort).
	BfRt, BfRtProgram string
	Tofino            int
	PktgenPort        int
	// Slowdown runs the testbed's software components K times slower
	// than the wall clock, as netns-slowdown does on netns: the agents'
	// software RNICs (RNIC "softrnic"; refused with "verbs": a real NIC
	// runs in real time) and the driver's waits; the switch must be a
	// `lumina injector --slowdown K` with the same K (it states its clock
	// on P4Runtime Capabilities, injector.SlowdownHeader; a Tofino, which
	// states none, runs in real time: refused above 1). 0 or 1: real time.
	// docs/run.md#remote-slowdown.
	Slowdown int
}

func splitHostPort(s string, def int) (host, addr string) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return h, net.JoinHostPort(h, p)
	}
	return s, net.JoinHostPort(s, strconv.Itoa(def))
}

// probe checks that an agent answers and accepts our token: a Fetch of
// nothing is refused with PERMISSION_DENIED by a healthy agent.
func probe(ctx context.Context, conn *grpc.ClientConn) error {
	st, err := luminav1.NewDumperClient(conn).Fetch(ctx, &luminav1.FetchRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	switch status.Code(err) {
	case codes.PermissionDenied, codes.FailedPrecondition, codes.OK:
		return nil
	case codes.Unauthenticated:
		return errors.New("the agent refused our token")
	}
	return err
}

// remoteBed is the remote testbed: agents already running on real hosts,
// reached over TCP with TLS (each agent's certificate pinned) and a token;
// the switch is any P4Runtime target.
type remoteBed struct {
	opt   RemoteOptions
	token string
	work  string
	conns []*grpc.ClientConn
}

func newRemoteBed(ro RemoteOptions) (testbed, error) {
	if ro.TokenFile == "" || ro.CertDir == "" {
		return nil, fmt.Errorf("%w: remote needs --agent-token-file and --agent-certs", ErrTestbed)
	}
	token, err := agent.ReadToken(ro.TokenFile) // the agents' rule: 16 characters or more
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTestbed, err)
	}
	if ro.RNIC == "" {
		ro.RNIC = "verbs"
	}
	if ro.RNIC != "verbs" && ro.RNIC != "softrnic" {
		return nil, fmt.Errorf("%w: remote: RNIC %q (verbs or softrnic)", ErrTestbed, ro.RNIC)
	}
	if ro.IntakeListen == "" {
		ro.IntakeListen = ":0"
	}
	if ro.Tofino == 0 {
		ro.Tofino = 1
	}
	if ro.Tofino != 1 && ro.Tofino != 2 {
		return nil, fmt.Errorf("%w: remote: Tofino %d (1 or 2)", ErrTestbed, ro.Tofino)
	}
	if ro.PktgenPort == 0 {
		ro.PktgenPort = int(bfrt.Chip(ro.Tofino).DefaultPktgenPort())
	}
	if ro.PktgenPort < 0 || bfrt.Chip(ro.Tofino).CheckPktgenPort(uint32(ro.PktgenPort)) != nil {
		return nil, fmt.Errorf("%w: remote: --pktgen-port %d is not a pktgen port of Tofino %d (68..71 on Tofino 1, 0..7 on Tofino 2; lumina.p4's LUMINA_PKTGEN_PORT)", ErrTestbed, ro.PktgenPort, ro.Tofino)
	}
	if ro.BfRtProgram == "" {
		ro.BfRtProgram = "lumina"
	}
	if err := remoteSlowdownProblem(ro); err != nil {
		return nil, err
	}
	return &remoteBed{opt: ro, token: token}, nil
}

func (b *remoteBed) close() {
	for _, c := range b.conns {
		c.Close()
	}
	if b.work != "" {
		os.RemoveAll(b.work)
	}
}

func (b *remoteBed) place(ctx context.Context, run *Run, progress func(string)) (*placement, error) {
	t, ro := run.Test, b.opt
	run.remoteSlowdown = int64(max(ro.Slowdown, 1))
	pl := &placement{realTime: true, rnic: ro.RNIC, token: b.token, hosts: make([]*grpc.ClientConn, len(t.Hosts)),
		bfrtProgram: ro.BfRtProgram, tofinoChip: bfrt.Chip(ro.Tofino), pktgenPort: uint32(ro.PktgenPort)}
	if ro.BfRt != "" {
		_, pl.bfrt = splitHostPort(ro.BfRt, bfrt.DefaultPort)
	}
	for _, ev := range t.PFCEvents {
		if ev.Type == config.PFCPause && pl.bfrt == "" {
			return nil, fmt.Errorf("%w: remote: pfc-events of type pause are sent by the Tofino's packet generator: give its BfRt server (--bfrt HOST[:PORT], docs/tofino.md §8)", ErrTestbed)
		}
	}
	for _, h := range t.Hosts {
		pl.hostIfaces = append(pl.hostIfaces, h.NIC.IfName)
		pl.hostPorts = append(pl.hostPorts, uint32(h.NIC.SwitchPort))
	}
	for _, f := range []struct {
		path string
		dst  *[]byte
	}{{ro.P4Info, &pl.p4info}, {ro.DeviceConfig, &pl.deviceConfig}} {
		if f.path != "" {
			data, err := os.ReadFile(f.path)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrTestbed, err)
			}
			*f.dst = data
		}
	}
	for _, h := range t.Hosts {
		if h.NIC.IfName == "" {
			return nil, fmt.Errorf("%w: remote: the %s's nic.if-name is required", ErrTestbed, h.Name)
		}
	}
	for _, d := range t.Dumpers {
		ws := d.Workspace
		if ws == "" {
			ws = os.TempDir()
		}
		pl.dumperPorts = append(pl.dumperPorts, uint32(d.NIC.SwitchPort))
		pl.dumperIfaces = append(pl.dumperIfaces, d.NIC.IfName)
		pl.dumperPaths = append(pl.dumperPaths, filepath.Join(ws, fmt.Sprintf("lumina-%s-%d-%s", t.Name, run.Repeat, d.DumpFilename)))
	}
	type target struct {
		role, controlIP string
		conn            **grpc.ClientConn
	}
	var targets []target
	for i, h := range t.Hosts {
		targets = append(targets, target{h.Name, h.ControlIP, &pl.hosts[i]})
	}
	pl.dumpers = make([]*grpc.ClientConn, len(t.Dumpers))
	for i, d := range t.Dumpers {
		targets = append(targets, target{"dumper " + d.Name, d.ControlIP, &pl.dumpers[i]})
	}
	progress(fmt.Sprintf("agents: connect to %d agents (TLS, pinned certificates, token)", len(targets)))
	for _, tg := range targets {
		if tg.controlIP == "" {
			return nil, fmt.Errorf("%w: remote: %s has no control-ip", ErrTestbed, tg.role)
		}
		host, addr := splitHostPort(tg.controlIP, DefaultAgentPort)
		pem, err := os.ReadFile(filepath.Join(ro.CertDir, host+".pem"))
		if err != nil {
			return nil, fmt.Errorf("%w: the certificate of the %s agent: %w", ErrTestbed, tg.role, err)
		}
		opts, err := agent.DialOptions(pem, b.token)
		if err != nil {
			return nil, err
		}
		conn, err := grpc.NewClient(addr, opts...)
		if err != nil {
			return nil, err
		}
		b.conns = append(b.conns, conn)
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = probe(pctx, conn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the %s agent at %s: %w", tg.role, addr, err)
		}
		*tg.conn = conn
	}
	// Each flow's responder: on its to host's control-ip.
	for _, fl := range t.Flows {
		host, _ := splitHostPort(t.Host(fl.To).ControlIP, DefaultAgentPort)
		listen := ":0"
		if _, err := netip.ParseAddr(host); err == nil {
			// Listen only where the requester will connect (the agent falls
			// back to every interface if that is not one of its addresses).
			listen = net.JoinHostPort(host, "0")
		}
		pl.responderHost = append(pl.responderHost, host)
		pl.responderListen = append(pl.responderListen, listen)
	}

	// The switch: a P4Runtime target of its own.
	swHost, swAddr := splitHostPort(t.Switch.ControlIP, DefaultP4RuntimePort)
	pl.p4rt = swAddr
	if pem, err := os.ReadFile(filepath.Join(ro.CertDir, swHost+".pem")); err == nil {
		if pl.p4rtDial, err = agent.DialOptions(pem, b.token); err != nil {
			return nil, err
		}
	} else {
		progress("injector: no certificate for " + swHost + ": P4Runtime in plaintext")
		pl.p4rtDial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}

	// The Intake service, on this machine.
	var err error
	if b.work, err = os.MkdirTemp("", "lumina-remote-"); err != nil {
		return nil, err
	}
	if err := intakeTLS(pl, filepath.Join(b.work, "tls-orchestrator")); err != nil {
		return nil, err
	}
	if pl.intake, err = (agent.Real{}).Listen(ro.IntakeListen); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(pl.intake.Addr().String())
	switch h, p, err := net.SplitHostPort(ro.IntakeAddr); {
	case ro.IntakeAddr == "":
		// This machine's address towards the first flow's requester.
		reqHost, reqAddr := splitHostPort(t.Host(t.Flows[0].From).ControlIP, DefaultAgentPort)
		c, err := net.Dial("udp", reqAddr)
		if err != nil {
			return nil, fmt.Errorf("finding our address towards %s: %w", reqHost, err)
		}
		local := c.LocalAddr().(*net.UDPAddr).IP.String()
		c.Close()
		pl.intakeAddr = net.JoinHostPort(local, port)
	case err == nil && (p == "" || p == "0"):
		pl.intakeAddr = net.JoinHostPort(h, port)
	default:
		pl.intakeAddr = ro.IntakeAddr
	}
	return pl, nil
}

// intakeTLS gives the Intake service of pl the orchestrator's certificate
// (made in dir on first use) and the token.
func intakeTLS(pl *placement, dir string) error {
	cert, err := agent.EnsureCert(dir)
	if err != nil {
		return err
	}
	if pl.intakeCert, err = agent.ReadCert(dir); err != nil {
		return err
	}
	pl.intakeServer = agent.ServerOptions(cert, pl.token)
	return nil
}
