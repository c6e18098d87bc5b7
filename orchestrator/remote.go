package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator/agent"
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

func runRemote(ctx context.Context, t *config.Test, repeat int, dir string, ro RemoteOptions, progress func(string)) (*collected, error) {
	if ro.TokenFile == "" || ro.CertDir == "" {
		return nil, fmt.Errorf("%w: remote needs --agent-token-file and --agent-certs", ErrTestbed)
	}
	tok, err := os.ReadFile(ro.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTestbed, err)
	}
	token := strings.TrimSpace(string(tok))
	work, err := os.MkdirTemp("", "lumina-remote-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	env := &agentEnv{conns: map[string]*grpc.ClientConn{}, token: token, work: work,
		iface:   map[string]string{"req": t.Requester.NIC.IfName, "rsp": t.Responder.NIC.IfName},
		reqPort: uint32(t.Requester.NIC.SwitchPort), rspPort: uint32(t.Responder.NIC.SwitchPort),
		dumperPort:  func(i int) uint32 { return uint32(t.Dumpers[i].NIC.SwitchPort) },
		dumperIface: func(i int) string { return t.Dumpers[i].NIC.IfName },
		dumperPath: func(i int) string {
			ws := t.Dumpers[i].Workspace
			if ws == "" {
				ws = os.TempDir()
			}
			return filepath.Join(ws, fmt.Sprintf("lumina-%s-%d-%s", t.Name, repeat, t.Dumpers[i].DumpFilename))
		},
		responderListen: ":0", intakeNetwork: "tcp", intakeListen: ro.IntakeListen, intakeAdvertise: ro.IntakeAddr,
		rnic: ro.RNIC,
	}
	if env.rnic == "" {
		env.rnic = "verbs"
	}
	if env.rnic != "verbs" && env.rnic != "softrnic" {
		return nil, fmt.Errorf("%w: remote: RNIC %q (verbs or softrnic)", ErrTestbed, env.rnic)
	}
	for _, f := range []struct {
		path string
		dst  *[]byte
	}{{ro.P4Info, &env.p4info}, {ro.DeviceConfig, &env.p4DeviceConfig}} {
		if f.path != "" {
			b, err := os.ReadFile(f.path)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrTestbed, err)
			}
			*f.dst = b
		}
	}
	if env.intakeListen == "" {
		env.intakeListen = ":0"
	}
	for role, name := range map[string]string{"req": t.Requester.NIC.IfName, "rsp": t.Responder.NIC.IfName} {
		if name == "" {
			return nil, fmt.Errorf("%w: remote: the %s's nic.if-name is required", ErrTestbed, role)
		}
	}
	type target struct{ role, controlIP string }
	targets := []target{{"req", t.Requester.ControlIP}, {"rsp", t.Responder.ControlIP}}
	for i, d := range t.Dumpers {
		targets = append(targets, target{"d" + strconv.Itoa(i), d.ControlIP})
	}
	progress(fmt.Sprintf("agents: connect to %d agents (TLS, pinned certificates, token)", len(targets)))
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, tg := range targets {
		if tg.controlIP == "" {
			return nil, fmt.Errorf("%w: remote: %s has no control-ip", ErrTestbed, tg.role)
		}
		host, addr := splitHostPort(tg.controlIP, DefaultAgentPort)
		pem, err := os.ReadFile(filepath.Join(ro.CertDir, host+".pem"))
		if err != nil {
			return nil, fmt.Errorf("%w: the certificate of the %s agent: %v", ErrTestbed, tg.role, err)
		}
		opts, err := agent.DialOptions(pem, token)
		if err != nil {
			return nil, err
		}
		conn, err := grpc.NewClient(addr, opts...)
		if err != nil {
			return nil, err
		}
		conns = append(conns, conn)
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = probe(pctx, conn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the %s agent at %s: %w", tg.role, addr, err)
		}
		env.conns[tg.role] = conn
	}
	env.responderHost, _ = splitHostPort(t.Responder.ControlIP, DefaultAgentPort)
	if env.intakeAdvertise == "" {
		// This machine's address towards the requester.
		reqHost, reqAddr := splitHostPort(t.Requester.ControlIP, DefaultAgentPort)
		c, err := net.Dial("udp", reqAddr)
		if err != nil {
			return nil, fmt.Errorf("finding our address towards %s: %w", reqHost, err)
		}
		local := c.LocalAddr().(*net.UDPAddr).IP.String()
		c.Close()
		env.intakeAdvertise = net.JoinHostPort(local, "0")
	}
	swHost, swAddr := splitHostPort(t.Switch.ControlIP, DefaultP4RuntimePort)
	env.p4rtDial = swAddr
	if pem, err := os.ReadFile(filepath.Join(ro.CertDir, swHost+".pem")); err == nil {
		if env.p4rtOpts, err = agent.DialOptions(pem, token); err != nil {
			return nil, err
		}
	} else {
		progress("injector: no certificate for " + swHost + ": P4Runtime in plaintext")
		env.p4rtOpts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	env.hook = func() {
		if remoteHook != nil {
			go remoteHook()
		}
	}
	return driveAgents(ctx, t, repeat, dir, env, progress)
}

// remoteHook, when set (tests), runs in its own goroutine when traffic starts.
var remoteHook func()
