package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/generator/verbs"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/nic"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/sim"
)

// Agent hosts lumina components for an orchestrator: a dumper, a software
// RNIC with a generator role, and the software switch. One agent runs per
// machine (or per network namespace in the netns testbed).
type Agent struct {
	// ServerOpts are the options of the injector's P4Runtime server (the
	// agent's own TLS and token check).
	ServerOpts []grpc.ServerOption
	// Env is where the components live. Default Real{}.
	Env Env
	// Log receives what the agent cannot return to a caller (a server
	// that stopped on an error). Default os.Stderr.
	Log io.Writer

	// mu guards the fields below: the components the services started
	// (dumper and its output path, the RNIC's loop, device and Exec, the
	// software RNIC, the switch), the traffic lateness bookkeeping and
	// the closers. It is held only to read or set them, never across a
	// component's own work (nic.Configure, opening a device, a dumper's
	// Stop): starting marks a component being started in between, so a
	// second Start is refused without waiting.
	mu       sync.Mutex
	starting map[string]bool // "dumper", "rnic", "injector": a Start in progress
	dumper   *dumper.Dumper
	dpath    string
	loop     sim.Loop
	dev      generator.Device
	exec     generator.Exec
	softNIC  *softrnic.NIC    // the software RNIC, for StallRx; nil for verbs
	sw       *injector.Switch // the switch Injector.Start started, for Timing and PFC
	// inTraffic counts the Run calls in traffic; lateMax is the loop's
	// largest timer lateness since the first of them started.
	inTraffic int
	lateMax   time.Duration
	closers   []func()
}

// logf writes a line to a.Log.
func (a *Agent) logf(format string, args ...any) {
	w := a.Log
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "lumina: agent: "+format+"\n", args...)
}

// begin marks component (see starting) as being started, or returns false
// if it is running (running reports it) or being started; end clears the
// mark.
func (a *Agent) begin(component string, running func() bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.starting[component] || running() {
		return false
	}
	if a.starting == nil {
		a.starting = map[string]bool{}
	}
	a.starting[component] = true
	return true
}

func (a *Agent) end(component string) {
	a.mu.Lock()
	delete(a.starting, component)
	a.mu.Unlock()
}

func (a *Agent) env() Env {
	if a.Env == nil {
		return Real{}
	}
	return a.Env
}

// Register adds the agent's services to g.
func (a *Agent) Register(g *grpc.Server) {
	luminav1.RegisterDumperServer(g, dumperSvc{Agent: a})
	luminav1.RegisterGeneratorServer(g, generatorSvc{Agent: a})
	luminav1.RegisterInjectorServer(g, injectorSvc{Agent: a})
}

type dumperSvc struct {
	luminav1.UnimplementedDumperServer
	*Agent
}

type generatorSvc struct {
	luminav1.UnimplementedGeneratorServer
	*Agent
}

type injectorSvc struct {
	luminav1.UnimplementedInjectorServer
	*Agent
}

// Start (Injector) attaches interfaces as switch ports and serves P4Runtime.
func (s injectorSvc) Start(_ context.Context, req *luminav1.InjectorStartRequest) (*luminav1.InjectorStartResponse, error) {
	return s.injectorStart(req)
}

// Timing (Injector) returns the timing statistics of the switch's mirror
// timestamps.
func (s injectorSvc) Timing(context.Context, *luminav1.InjectorTimingRequest) (*luminav1.InjectorTimingResponse, error) {
	s.mu.Lock()
	sw := s.sw
	s.mu.Unlock()
	if sw == nil {
		return nil, status.Error(codes.FailedPrecondition, "no switch running: call Injector.Start first")
	}
	return InjectorTimingToProto(sw.Timing()), nil
}

// SchedulePauses (Injector) makes the switch send PFC frames.
func (s injectorSvc) SchedulePauses(_ context.Context, req *luminav1.SchedulePausesRequest) (*luminav1.SchedulePausesResponse, error) {
	s.mu.Lock()
	sw := s.sw
	s.mu.Unlock()
	if sw == nil {
		return nil, status.Error(codes.FailedPrecondition, "no switch running: call Injector.Start first")
	}
	// Not through the loop: the orchestrator calls this from the intake
	// (trigger pauses), while a sim testbed's loop waits for the intake;
	// SchedulePauses takes the switch's lock and only arms timers.
	var err error
	for i, m := range req.GetPauses() {
		if e := sw.SchedulePauses(PauseInjectionFromProto(m)); e != nil {
			err = fmt.Errorf("pauses[%d]: %w", i, e)
			break
		}
	}
	switch {
	case errors.Is(err, injector.ErrPFCOff):
		return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
	case err != nil:
		return nil, badRequest("%v", err)
	}
	return &luminav1.SchedulePausesResponse{}, nil
}

// PFC (Injector) returns the switch's PFC counters and watchdog log.
func (s injectorSvc) PFC(context.Context, *luminav1.InjectorPFCRequest) (*luminav1.InjectorPFCResponse, error) {
	s.mu.Lock()
	sw := s.sw
	s.mu.Unlock()
	if sw == nil {
		return nil, status.Error(codes.FailedPrecondition, "no switch running: call Injector.Start first")
	}
	return InjectorPFCToProto(sw.PFCCounters(), sw.PFCLog()), nil
}

// Halt (Injector) stops the switch's pipeline (injector.Switch.Halt).
func (s injectorSvc) Halt(context.Context, *luminav1.InjectorHaltRequest) (*luminav1.InjectorHaltResponse, error) {
	s.mu.Lock()
	sw := s.sw
	s.mu.Unlock()
	if sw == nil {
		return nil, status.Error(codes.FailedPrecondition, "no switch running: call Injector.Start first")
	}
	sw.Halt()
	return &luminav1.InjectorHaltResponse{}, nil
}

// Close releases everything the agent started.
func (a *Agent) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

func badRequest(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// ---- dumper ----

// Start creates and starts the dumper.
func (ds dumperSvc) Start(ctx context.Context, req *luminav1.DumperStartRequest) (*luminav1.DumperStartResponse, error) {
	a := ds.Agent
	cfg, err := DumperConfigFromProto(req.GetConfig())
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if !a.begin("dumper", func() bool { return a.dumper != nil }) {
		return nil, status.Error(codes.FailedPrecondition, "a dumper is already running")
	}
	defer a.end("dumper")
	var closers []func()
	keep := func() {
		a.mu.Lock()
		a.closers = append(a.closers, closers...)
		a.mu.Unlock()
	}
	if cfg.Backend == "sim" {
		loop, _, release := a.env().Loop(1)
		port, closePort, err := a.env().Port(cfg.Interface, loop)
		if err != nil {
			release()
			return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
		}
		cfg.SimPort = port
		closers = append(closers, func() { closePort(); release() })
	}
	d, err := dumper.New(cfg)
	if err != nil {
		keep()
		return nil, badRequest("%v", err)
	}
	if err := d.Start(context.Background()); err != nil {
		keep()
		return nil, status.Errorf(codes.Internal, "starting the dumper: %v", err)
	}
	closers = append(closers, func() { d.Stop() })
	keep()
	a.mu.Lock()
	a.dumper, a.dpath = d, d.Config().OutPath
	a.mu.Unlock()
	return &luminav1.DumperStartResponse{}, nil
}

// Stop stops the dumper and writes its file.
func (ds dumperSvc) Stop(ctx context.Context, _ *luminav1.DumperStopRequest) (*luminav1.DumperStopResponse, error) {
	a := ds.Agent
	a.mu.Lock()
	d := a.dumper
	a.mu.Unlock()
	if d == nil {
		return nil, status.Error(codes.FailedPrecondition, "no dumper running")
	}
	rep, err := d.Stop()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "stopping the dumper: %v", err)
	}
	return &luminav1.DumperStopResponse{Report: DumperReportToProto(rep)}, nil
}

// Fetch streams the dumper's output file (and only that file).
func (ds dumperSvc) Fetch(req *luminav1.FetchRequest, stream luminav1.Dumper_FetchServer) error {
	a := ds.Agent
	a.mu.Lock()
	allowed := a.dpath
	a.mu.Unlock()
	if allowed == "" || req.GetPath() != allowed {
		return status.Errorf(codes.PermissionDenied, "only the dumper's output %q can be fetched", allowed)
	}
	f, err := os.Open(allowed)
	if err != nil {
		return status.Errorf(codes.NotFound, "%v", err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if err := stream.Send(&luminav1.Chunk{Data: buf[:n]}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "%v", err)
		}
	}
}

// ---- generator ----

// NICSpec is the JSON of StartNIC: a software RNIC on an interface, or a
// real RNIC through libibverbs (Backend "verbs": needs an agent built with
// -tags verbs), optionally configured with Listing 1's RoCE parameters.
type NICSpec struct {
	// Backend is "softrnic" (default) or "verbs".
	Backend string `json:"backend,omitempty"`
	// Device identifies the real NIC (verbs) for configuration, counters
	// and versions.
	Device nic.Device `json:"device,omitempty"`
	// Configure, when set (verbs), is applied to the NIC before the test
	// and restored when the agent closes.
	Configure *nic.Params `json:"configure,omitempty"`
	// Interface is the data interface.
	Interface string `json:"interface"`
	// RNIC is the software RNIC's configuration (softrnic); for verbs its
	// Name, IPs and Seed are used.
	RNIC softrnic.Config `json:"rnic"`
}

// StartNIC starts the software RNIC on its interface, in real time.
func (g generatorSvc) StartNIC(ctx context.Context, req *luminav1.StartNICRequest) (*luminav1.StartNICResponse, error) {
	a := g.Agent
	spec, err := NICSpecFromProto(req.GetNic())
	if err != nil {
		return nil, badRequest("%v", err)
	}
	rc := spec.RNIC
	mac := net.HardwareAddr(rc.MAC[:])
	if k := req.GetSlowdown(); k > 1 && spec.Backend == "verbs" {
		// The NIC's own timers, pauses and line rate run in real time.
		return nil, badRequest("slowdown %d: a verbs NIC runs in real time (slowdown is for the software RNIC)", k)
	}
	if !a.begin("rnic", func() bool { return a.dev != nil }) {
		return nil, status.Error(codes.FailedPrecondition, "an RNIC is already running")
	}
	defer a.end("rnic")
	// The closers of what this Start opened: the agent's on success, and
	// also on a failure after nic.Configure (Close restores the NIC).
	var closers []func()
	keep := func() {
		a.mu.Lock()
		a.closers = append(a.closers, closers...)
		a.mu.Unlock()
	}
	loop, exec, release := a.env().Loop(int64(req.GetSlowdown()))
	var dev generator.Device
	var versions *luminav1.NICVersions
	switch spec.Backend {
	case "", "softrnic":
		port, closePort, err := a.env().Port(spec.Interface, loop)
		if err != nil {
			release()
			return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
		}
		var nc *softrnic.NIC
		exec(func() {
			nc, err = softrnic.New(loop, port, rc)
		})
		if err != nil {
			closePort()
			release()
			return nil, badRequest("%v", err)
		}
		dev = nc.Device()
		a.mu.Lock()
		a.softNIC = nc
		a.mu.Unlock()
		versions = NICVersionsToProto(nic.Versions{Driver: "lumina softrnic", Personality: rc.Personality.Name})
		closers = append(closers, func() { closePort(); release() })
	case "verbs":
		if spec.Configure != nil {
			restore, err := nic.Configure(ctx, spec.Device, *spec.Configure)
			if err != nil {
				release()
				return nil, status.Errorf(codes.FailedPrecondition, "configuring %s: %v", spec.Device.IfName, err)
			}
			closers = append(closers, restore)
		}
		// ODP memory on a real NIC: the page fault time is the NIC's own,
		// so only enabled and prefetch reach it (docs/hardware.md).
		vd, err := verbs.Open(verbs.Config{Loop: loop, Device: spec.Device.IBDev, IfName: spec.Interface, Port: spec.Device.Port,
			IPs: rc.IPs, Seed: rc.Seed, ODP: rc.ODP != nil, ODPPrefetch: rc.ODP != nil && rc.ODP.Prefetch})
		if err != nil {
			release()
			keep()
			return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
		}
		dev = vd
		if ifi, err := net.InterfaceByName(spec.Interface); err == nil && len(ifi.HardwareAddr) == 6 {
			mac = ifi.HardwareAddr
		}
		if v, err := nic.ReadVersions(spec.Device); err == nil {
			versions = NICVersionsToProto(v)
		}
		closers = append(closers, func() { vd.Close(); release() })
	default:
		release()
		return nil, badRequest("unknown RNIC backend %q (softrnic or verbs)", spec.Backend)
	}
	// Several requesters and responder sessions share the RNIC (a host in
	// several flows, #30): each takes the completions of its own QPs.
	var mux *generator.Mux
	exec(func() { mux = generator.NewMux(dev) })
	keep()
	a.mu.Lock()
	a.loop, a.dev, a.exec = loop, mux, exec
	a.mu.Unlock()
	return &luminav1.StartNICResponse{Mac: mac.String(), Versions: versions}, nil
}

// StallRx stops the software RNIC's receive pipeline (rx-stall events).
func (g generatorSvc) StallRx(_ context.Context, req *luminav1.StallRxRequest) (*luminav1.StallRxResponse, error) {
	a := g.Agent
	_, exec, loop, err := a.rnic()
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	nc := a.softNIC
	a.mu.Unlock()
	if nc == nil {
		return nil, status.Error(codes.FailedPrecondition, "rx-stall needs the software RNIC")
	}
	for i, st := range req.GetStalls() {
		if st.GetStartNs() < 0 || st.GetDurationNs() < 0 {
			return nil, badRequest("stalls[%d]: negative time", i)
		}
	}
	exec(func() {
		now := loop.Now()
		for _, st := range req.GetStalls() {
			nc.StallRx(time.Duration(now+st.GetStartNs()), time.Duration(st.GetDurationNs()))
		}
	})
	return &luminav1.StallRxResponse{}, nil
}

func (a *Agent) rnic() (generator.Device, generator.Exec, sim.Loop, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dev == nil {
		return nil, nil, nil, status.Error(codes.FailedPrecondition, "StartNIC first")
	}
	return a.dev, a.exec, a.loop, nil
}

// Serve starts the responder on listen_addr and returns the bound address.
// Only a connection that first presents req.token takes the handshake
// (generator.Authenticate, #38 point 4): a stranger connecting first is
// closed, and the responder keeps accepting until the requester comes.
func (g generatorSvc) Serve(ctx context.Context, req *luminav1.ServeRequest) (*luminav1.ServeResponse, error) {
	a := g.Agent
	dev, exec, _, err := a.rnic()
	if err != nil {
		return nil, err
	}
	secret := req.GetToken()
	if len(secret) < MinTokenLen {
		return nil, badRequest("the responder's control connection needs a token of at least %d characters (ServeRequest.token)", MinTokenLen)
	}
	ln, err := a.env().Listen(req.GetListenAddr())
	if err != nil {
		if fb, ok := anyHost(req.GetListenAddr(), err); ok {
			// The peer's address is not one of this machine's (NAT, a
			// name): listen on every interface instead.
			ln, err = a.env().Listen(fb)
		}
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "listening: %v", err)
		}
	}
	go func() {
		c, err := acceptRequester(ln, secret, DefaultAuthTimeout)
		ln.Close() // the handshake is taken
		if err != nil {
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
		defer cancel()
		generator.Serve(ctx, generator.ResponderConfig{Device: dev, Exec: exec, Verify: true}, c)
	}()
	a.mu.Lock()
	a.closers = append(a.closers, func() { ln.Close() })
	a.mu.Unlock()
	return &luminav1.ServeResponse{Addr: ln.Addr().String()}, nil
}

// anyHost returns addr with an empty host (every interface), if addr
// names a host and err says it is not an address of this machine.
func anyHost(addr string, err error) (string, bool) {
	host, port, serr := net.SplitHostPort(addr)
	if serr != nil || host == "" || !errors.Is(err, syscall.EADDRNOTAVAIL) {
		return "", false
	}
	return net.JoinHostPort("", port), true
}

// acceptRequester accepts connections on ln until one presents secret
// within timeout (generator.Authenticate) and returns it; the others are
// closed. Each connection is checked in its own goroutine, so a silent one
// does not hold up the requester; ln (a limited listener on a machine)
// bounds how many are checked at once.
func acceptRequester(ln net.Listener, secret string, timeout time.Duration) (net.Conn, error) {
	won := make(chan net.Conn, 1)
	errc := make(chan error, 1)
	var once sync.Once
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				errc <- err
				return
			}
			go func() {
				if err := generator.Authenticate(c, secret, time.Now().Add(timeout)); err != nil {
					c.Close()
					return
				}
				MarkAuthenticated(c)
				taken := true
				once.Do(func() { won <- c; taken = false })
				if taken {
					c.Close()
				}
			}()
		}
	}()
	select {
	case c := <-won:
		return c, nil
	case err := <-errc:
		select { // a winner that raced the listener's close
		case c := <-won:
			return c, nil
		default:
		}
		return nil, err
	}
}

// Run runs the requester side of one flow of a test to its end. An agent
// runs several at once, one per flow that starts at its host: each sets
// up in its Env's turn (SetUp), reports its connections to the intake
// with its flow index, and starts start_delay_ns after the run's traffic
// starts (Env.Traffic).
func (g generatorSvc) Run(ctx context.Context, req *luminav1.RunRequest) (*luminav1.RunResponse, error) {
	a := g.Agent
	env := a.env()
	flow := int(req.GetFlow())
	if err := env.SetUp(ctx, flow); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "flow %d: %v", flow, err)
	}
	setUp := false
	defer func() {
		if !setUp {
			env.Abandon(flow)
		}
	}()
	dev, exec, loop, err := a.rnic()
	if err != nil {
		return nil, err
	}
	delay := time.Duration(req.GetStartDelayNs())
	if delay < 0 {
		return nil, badRequest("start_delay_ns %d is negative", delay)
	}
	tr, err := TrafficFromProto(req.GetTraffic())
	if err != nil {
		return nil, badRequest("%v", err)
	}
	ic, err := env.GRPC(req.GetIntakeAddr(), req.GetIntakeCertPem(), req.GetIntakeToken())
	if err != nil {
		return nil, badRequest("intake: %v", err)
	}
	defer ic.Close()
	intake := luminav1.NewIntakeClient(ic)
	r, err := generator.NewRequester(generator.RequesterConfig{Device: dev, Clock: loop, Exec: exec, Traffic: tr, Secret: req.GetResponderToken(),
		After: func(d time.Duration, fn func()) { loop.AfterFunc(d, fn) },
		OnConnections: func(ctx context.Context, conns []generator.Connection) error {
			_, err := intake.Install(ctx, &luminav1.InstallRequest{Connections: ConnectionsToProto(conns), Flow: req.GetFlow()})
			return err
		}})
	if err != nil {
		return nil, badRequest("%v", err)
	}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := env.Dial(dctx, req.GetResponderAddr())
	dcancel()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "responder: %v", err)
	}
	defer conn.Close()
	if _, err := r.Handshake(ctx, conn); err != nil {
		return nil, status.Errorf(codes.Aborted, "handshake: %v", err)
	}
	// A software RNIC on a real clock times its retransmissions with the
	// loop's timers: how late they ran during the traffic bounds how late
	// its timeouts may be (the timeout check allows for it).
	// A hardware RNIC's timers are its own: nothing to allow for.
	a.mu.Lock()
	soft := a.softNIC != nil
	a.mu.Unlock()
	var lateness interface{ TakeTimerLateness() time.Duration }
	if soft {
		lateness, _ = loop.(interface{ TakeTimerLateness() time.Duration })
	}
	if lateness != nil {
		a.lateStart(lateness)
	}
	setUp = true
	stopped := env.Traffic(ctx, loop, Flow{Index: flow, Delay: delay, Limit: time.Duration(req.GetDeadlineNs()),
		Start: r.StartOnLoop, Done: r.Done()})
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, ferr := r.Finish(fctx)
	if ferr != nil && stopped == "" {
		stopped = "finish: " + ferr.Error()
	}
	out := &luminav1.RunResponse{Stopped: stopped}
	if lateness != nil {
		out.NicTimerLateMaxNs = uint64(a.lateEnd(lateness))
	}
	if res != nil {
		out.Result = ResultToProto(*res)
	}
	return out, nil
}

// lateStart begins a flow's traffic for the loop's timer lateness: the
// first of the agent's flows in traffic discards the lateness so far (the
// handshakes' do not count).
func (a *Agent) lateStart(l interface{ TakeTimerLateness() time.Duration }) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inTraffic == 0 {
		l.TakeTimerLateness()
		a.lateMax = 0
	}
	a.inTraffic++
}

// lateEnd ends a flow's traffic and returns the largest lateness of the
// loop's timers since the first of the flows in traffic with it started:
// the flows of one agent share its loop, so each reports the lateness of
// their common span (not less than its own).
func (a *Agent) lateEnd(l interface{ TakeTimerLateness() time.Duration }) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inTraffic--
	a.lateMax = max(a.lateMax, l.TakeTimerLateness())
	return a.lateMax
}

// Counters returns the RNIC's counters.
func (g generatorSvc) Counters(ctx context.Context, _ *luminav1.CountersRequest) (*luminav1.CountersResponse, error) {
	a := g.Agent
	dev, exec, _, err := a.rnic()
	if err != nil {
		return nil, err
	}
	var m map[string]uint64
	exec(func() { m = dev.CounterMap() })
	out := &luminav1.CountersResponse{Counters: m}
	a.mu.Lock()
	if nc := a.softNIC; nc != nil {
		out.NicPauseLateMaxNs = uint64(nc.PFCApplyLateness())
		out.NicRxLateMaxNs = uint64(nc.RxLateness())
	}
	a.mu.Unlock()
	return out, nil
}

// ---- injector ----

// Start (Injector) attaches interfaces as switch ports and serves P4Runtime.
func (a *Agent) injectorStart(req *luminav1.InjectorStartRequest) (*luminav1.InjectorStartResponse, error) {
	if !a.begin("injector", func() bool { return a.sw != nil }) {
		return nil, status.Error(codes.FailedPrecondition, "a switch is already running")
	}
	defer a.end("injector")
	env := a.env()
	loop, exec, release := env.Loop(int64(req.GetSlowdown()))
	var sw *injector.Switch
	cfg := injector.Config{Seed: req.GetSeed()}
	if m := req.GetPfc(); m != nil {
		pc, err := SwitchPFCFromProto(m)
		if err != nil {
			release()
			return nil, badRequest("%v", err)
		}
		cfg.PFC = pc
	}
	exec(func() { sw = injector.New(loop, cfg) })
	closers := []func(){release}
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, id := range slices.Sorted(maps.Keys(req.GetPorts())) {
		p, closePort, err := env.Port(req.GetPorts()[id], loop)
		if err != nil {
			cleanup()
			return nil, status.Errorf(codes.FailedPrecondition, "port %d: %v", id, err)
		}
		closers = append(closers, closePort)
		exec(func() { err = sw.AddPort(id, p) })
		if err != nil {
			cleanup()
			return nil, badRequest("%v", err)
		}
	}
	ln, err := env.Listen(req.GetP4RuntimeAddr())
	if err != nil {
		cleanup()
		return nil, status.Errorf(codes.FailedPrecondition, "P4Runtime listener: %v", err)
	}
	g := grpc.NewServer(append(slices.Clip(a.ServerOpts), injector.ServerOption())...)
	injector.NewServer(sw, 0).Register(g)
	addr := ln.Addr()
	go ServeGRPC(g, ln, func(format string, args ...any) {
		a.logf("P4Runtime server on %v: "+format, append([]any{addr}, args...)...)
	})
	a.mu.Lock()
	a.closers = append(a.closers, func() { g.Stop(); cleanup() })
	a.sw = sw
	a.mu.Unlock()
	bound := ln.Addr().String()
	if strings.HasPrefix(req.GetP4RuntimeAddr(), "unix://") {
		bound = "unix://" + bound
	}
	return &luminav1.InjectorStartResponse{P4RuntimeAddr: bound}, nil
}
