package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/orchestrator/agent"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// A testbed decides where one repeat's components live: it starts them
// (agents in this process on a virtual clock, in network namespaces, or
// on remote hosts) and hands back gRPC clients for them and the wiring
// the driver needs. Everything else, the phases of a run, is the driver's.
type testbed interface {
	// place starts the components of a repeat.
	place(ctx context.Context, run *Run, progress func(string)) (*placement, error)
	// close stops what place started and removes what it created.
	close()
}

// placement says where a repeat's components live and how to reach them.
type placement struct {
	// Generator services of the requester and responder hosts, Dumper
	// services in t.Dumpers order, and the Injector service (nil when the
	// switch is a P4Runtime target of its own at p4rt).
	requester, responder *grpc.ClientConn
	dumpers              []*grpc.ClientConn
	injector             *grpc.ClientConn

	// Data plane: the switch ports of the hosts and dumpers, the interface
	// behind each port of the software switch, each host's data interface
	// and where each dumper writes its pcap on its host.
	reqPort, rspPort   uint32
	dumperPorts        []uint32
	switchIfaces       map[uint32]string
	reqIface, rspIface string
	dumperIfaces       []string
	dumperPaths        []string

	// P4Runtime: where the software switch serves it (p4rtListen) or the
	// address of a target of its own (p4rt); the dial options for either;
	// a P4Info and device config to push instead of lumina's.
	p4rtListen, p4rt     string
	p4rtDial             []grpc.DialOption
	p4info, deviceConfig []byte

	// rnic is the agents' RNIC: "softrnic" or "verbs".
	rnic string
	// responderListen is the responder's generator control address;
	// responderHost, if set, replaces the host of the address it bound.
	responderListen, responderHost string

	// The Intake service: the listener the driver serves it on, the
	// address the requester's agent dials, the server options, and the
	// certificate and token the agent uses.
	intake       net.Listener
	intakeAddr   string
	intakeServer []grpc.ServerOption
	intakeCert   []byte
	token        string

	// realTime: the testbed runs on wall-clock time (netns, remote), so
	// the driver waits out the switch's longest hold after traffic.
	realTime bool

	// onTraffic, if set, runs in its own goroutine when traffic starts
	// (tests kill components with it).
	onTraffic func()
	// onInstalled, if set, runs when the control plane has installed the
	// plan, before traffic starts, with lumina's P4Runtime connection and
	// how to reach the switch's P4Runtime service (tests change the
	// switch's state behind lumina's back with it).
	onInstalled func(ctx context.Context, cp *controlplane.Switch, addr string, dial []grpc.DialOption, p *controlplane.Plan)
}

// drive runs the phases of one repeat on a testbed: switch, control plane,
// dumpers, RNICs, responder, intake, traffic, collection. It fills run as
// it goes, so a failed run keeps what was collected; dumper files land in
// dir/dumpers.
func drive(ctx context.Context, tb testbed, run *Run, dir string, progress func(string)) error {
	t := run.Test
	pl, err := tb.place(ctx, run, progress)
	if err != nil {
		return err
	}
	run.ReqPort, run.RspPort = pl.reqPort, pl.rspPort

	// The switch and its pipeline.
	p4addr := pl.p4rt
	if pl.injector != nil {
		progress("injector: start the software switch, serve P4Runtime")
		ir, err := luminav1.NewInjectorClient(pl.injector).Start(ctx, &luminav1.InjectorStartRequest{
			Ports: pl.switchIfaces, P4RuntimeAddr: pl.p4rtListen, Seed: run.Seeds.Switch, Pfc: agent.SwitchPFCToProto(run.switchPFC(pl)),
			Ecn:      agent.SwitchECNToProto(run.switchECN()),
			Slowdown: uint32(run.slowdown())})
		if err != nil {
			return fmt.Errorf("injector: %w", err)
		}
		p4addr = ir.GetP4RuntimeAddr()
	} else {
		progress("injector: P4Runtime target at " + p4addr)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cp, err := controlplane.Dial(cctx, p4addr, controlplane.DialOptions{GRPC: pl.p4rtDial})
	if err != nil {
		return err
	}
	defer cp.Close()
	if id := cp.ElectionID(); id != "1" {
		progress("P4Runtime: another controller was primary; lumina is primary with election ID " + id)
	}
	election := uint64(run.Repeat + 1)
	if pl.p4info != nil {
		err = cp.SetPipelineWith(cctx, pl.p4info, pl.deviceConfig, election)
	} else {
		err = cp.SetPipeline(cctx, pl.deviceConfig, election)
	}
	if err != nil {
		return err
	}

	// Dumpers.
	backends := map[string]int{}
	for _, d := range t.Dumpers {
		backends[d.Backend.String()]++
	}
	var parts []string
	for _, b := range slices.Sorted(maps.Keys(backends)) {
		parts = append(parts, fmt.Sprintf("%d %s", backends[b], b))
	}
	progress("dumpers: start " + strings.Join(parts, ", ")) // the backends actually used
	var dports []controlplane.Dumper
	dumpers := make([]luminav1.DumperClient, len(t.Dumpers))
	for i, d := range t.Dumpers {
		dumpers[i] = luminav1.NewDumperClient(pl.dumpers[i])
		cfg := agent.DumperConfigToProto(dumperConfig(t, i, pl.dumperIfaces[i], pl.dumperPaths[i]))
		if _, err := dumpers[i].Start(ctx, &luminav1.DumperStartRequest{Config: cfg}); err != nil {
			return fmt.Errorf("dumper %s: %w", d.Name, err)
		}
		dports = append(dports, controlplane.Dumper{Name: d.Name, Port: pl.dumperPorts[i], MAC: macDumper(i), Weight: d.Weight, SnapLen: d.SnapLen})
	}
	stopIn := dumperStopTimeout(t)
	stopDumpers := func() {
		for i, dc := range dumpers {
			name := t.Dumpers[i].Name
			local := filepath.Join(dir, "dumpers", t.Dumpers[i].DumpFilename)
			rep, err := stopDumper(dc, stopIn, pl.dumperPaths[i], local)
			if err != nil {
				rep.Name = name
				run.DumperErrors = append(run.DumperErrors, fmt.Sprintf("dumper %s: %v", name, err))
				progress(fmt.Sprintf("dumper %s: %v", name, err))
			}
			run.Dumpers = append(run.Dumpers, rep)
			run.DumperFiles = append(run.DumperFiles, local)
		}
		dumpers = nil
	}
	defer func() {
		if dumpers != nil {
			stopDumpers()
		}
	}()

	// RNICs and the responder.
	progress("generator: RNICs, responder")
	gens := [2]luminav1.GeneratorClient{luminav1.NewGeneratorClient(pl.requester), luminav1.NewGeneratorClient(pl.responder)}
	var macs [2][6]byte
	for i, side := range sides {
		spec := agent.NICSpec{Backend: pl.rnic, Interface: [2]string{pl.reqIface, pl.rspIface}[i], RNIC: run.nicConfig(side)}
		if pl.realTime && spec.RNIC.PFC != nil {
			// A software NIC's pause takes the real-time testbed's latency
			// to act: its buffer above XOFF must hold what arrives
			// meanwhile (the XOFF/XON thresholds stay the personality's).
			spec.RNIC.Personality.RxBufferBytes = max(spec.RNIC.Personality.RxBufferBytes, realTimeHeadroomBytes)
		}
		if pl.rnic == "verbs" {
			dev, params := run.nicDevice(side)
			spec.Device, spec.Configure = dev, &params
		}
		sn, err := gens[i].StartNIC(ctx, &luminav1.StartNICRequest{Nic: agent.NICSpecToProto(spec), Slowdown: uint32(run.slowdown())})
		if err != nil {
			return fmt.Errorf("%s RNIC: %w", side, err)
		}
		hw, err := net.ParseMAC(sn.GetMac())
		if err != nil || len(hw) != 6 {
			return fmt.Errorf("%s RNIC reported MAC %q", side, sn.GetMac())
		}
		macs[i] = [6]byte(hw)
		if m := sn.GetVersions(); m != nil {
			v, err := agent.NICVersionsFromProto(m)
			if err != nil {
				return fmt.Errorf("%s RNIC: %w", side, err)
			}
			run.NICVersions[side] = v
		}
	}
	// The responder's control connection takes only the requester: a
	// secret of this run, sent through both agents (#38 point 4).
	rspSecret := make([]byte, 24)
	if _, err := rand.Read(rspSecret); err != nil {
		return err
	}
	sr, err := gens[1].Serve(ctx, &luminav1.ServeRequest{ListenAddr: pl.responderListen, Token: hex.EncodeToString(rspSecret)})
	if err != nil {
		return fmt.Errorf("responder: %w", err)
	}
	rspAddr := sr.GetAddr()
	if pl.responderHost != "" {
		_, port, _ := net.SplitHostPort(rspAddr)
		rspAddr = net.JoinHostPort(pl.responderHost, port)
	}

	// The Intake service: the control plane installs the test's entries
	// when the requester reports its connections.
	ports := controlplane.Ports{
		Requester: controlplane.Host{Port: pl.reqPort, MAC: macs[0], IPs: run.IPs[Requester]},
		Responder: controlplane.Host{Port: pl.rspPort, MAC: macs[1], IPs: run.IPs[Responder]},
		Dumpers:   dports,
	}
	ig := grpc.NewServer(pl.intakeServer...)
	install := controlplane.Intake(cp, run.Intent, ports, func(p *controlplane.Plan) {
		run.Plan = p
		if pl.onInstalled != nil {
			pl.onInstalled(ctx, cp, p4addr, pl.p4rtDial, p)
		}
	})
	luminav1.RegisterIntakeServer(ig, &intakeServer{install: func(ctx context.Context, conns []generator.Connection) error {
		if err := install(ctx, conns); err != nil {
			return err
		}
		// Pauses start with traffic, which starts when the plan is in
		// place; those that start on a data packet need its runtime QPN
		// and PSN.
		ps, err := run.pauseOnPacket(pl, run.Plan)
		if err != nil {
			return err
		}
		if ps = append(run.pauseAt(pl), ps...); len(ps) == 0 {
			return nil
		}
		if pl.injector == nil {
			return fmt.Errorf("pfc-events: pause injection needs lumina's software switch")
		}
		_, err = luminav1.NewInjectorClient(pl.injector).SchedulePauses(ctx, &luminav1.SchedulePausesRequest{Pauses: ps})
		return err
	}})
	go ig.Serve(pl.intake)
	defer ig.Stop()

	// Traffic.
	if k := run.slowdown(); k > 1 {
		progress(fmt.Sprintf("traffic: run (limit %v on the testbed's clock, %d× slower than the wall clock)", run.Limit, k))
	} else {
		progress(fmt.Sprintf("traffic: run (limit %v on the testbed's clock)", run.Limit))
	}
	rctx, rcancel := context.WithTimeout(ctx, agent.WallTime(run.Limit, run.slowdown())+time.Minute)
	defer rcancel()
	if err := run.startPFCEvents(ctx, pl); err != nil {
		return err
	}
	start := time.Now()
	if pl.onTraffic != nil {
		go pl.onTraffic()
	}
	rr, err := gens[0].Run(rctx, &luminav1.RunRequest{Traffic: agent.TrafficToProto(traffic(t)), ResponderAddr: rspAddr,
		IntakeAddr: pl.intakeAddr, DeadlineNs: int64(run.Limit), IntakeCertPem: pl.intakeCert, IntakeToken: pl.token,
		ResponderToken: hex.EncodeToString(rspSecret)})
	if err != nil {
		return fmt.Errorf("requester: %w", err)
	}
	run.Stopped = rr.GetStopped()
	run.NICTimerLate = time.Duration(rr.GetNicTimerLateMaxNs())
	if m := rr.GetResult(); m != nil {
		res, err := agent.ResultFromProto(m)
		if err != nil {
			return fmt.Errorf("requester: %w", err)
		}
		run.Generator, run.Connections = &res, res.Connections
	} else if run.Stopped == "" {
		return fmt.Errorf("requester: no result")
	}
	if run.Stopped != "" {
		progress("traffic: " + run.Stopped)
	} else {
		progress(fmt.Sprintf("traffic: done in %v wall", time.Since(start).Round(time.Millisecond)))
	}

	// On a real-time testbed the switch may still hold packets (delay,
	// reorder events: at most the longest hold after traffic) and PFC
	// frames may still be in flight; their mirror copies and the counters
	// must include them, so the driver waits for the longer of the two
	// once. (On sim the loop runs them before traffic returns.)
	if wait := settleTime(run, run.slowdown()); pl.realTime && wait > 0 {
		progress(fmt.Sprintf("traffic: waiting %v for held packets and PFC frames", wait))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	// Collect, on a deadline of its own: traffic may have outlasted the
	// set-up's.
	progress("collect: switch counters, tables and timing, NIC counters, stop dumpers, fetch their files")
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	if run.Switch, err = cp.ReadCounters(cctx); err != nil {
		return err
	}
	if err := run.readSwitchPFC(cctx, pl); err != nil {
		return err
	}
	// The switch must hold what lumina installed, and lumina must have
	// stayed its primary controller (report.go: the switch_state check).
	if run.Plan != nil {
		if run.TableDiff, err = cp.CheckInstalled(cctx, run.Plan); err != nil {
			return err
		}
	}
	// Arbitration news still in flight on the stream counts too; a target
	// that does not answer a repeated arbitration update (the spec says it
	// must) leaves what the stream said so far.
	sctx, scancel := context.WithTimeout(cctx, 5*time.Second)
	if err := cp.SyncArbitration(sctx); err != nil {
		progress(err.Error())
	}
	scancel()
	run.LostPrimary = cp.LostPrimary()
	if pl.injector != nil {
		tr, err := luminav1.NewInjectorClient(pl.injector).Timing(ctx, &luminav1.InjectorTimingRequest{})
		if err != nil {
			return fmt.Errorf("injector timing: %w", err)
		}
		if run.Timing, err = agent.InjectorTimingFromProto(tr); err != nil {
			return fmt.Errorf("injector timing: %w", err)
		}
	}
	for i, side := range sides {
		c, err := gens[i].Counters(ctx, &luminav1.CountersRequest{})
		if err != nil {
			return fmt.Errorf("%s counters: %w", side, err)
		}
		run.NICs[side] = c.GetCounters()
		run.NICPauseLate = max(run.NICPauseLate, time.Duration(c.GetNicPauseLateMaxNs()))
		run.NICRxLate = max(run.NICRxLate, time.Duration(c.GetNicRxLateMaxNs()))
	}
	stopDumpers()
	if len(run.DumperErrors) > 0 {
		return errors.New(strings.Join(run.DumperErrors, "; "))
	}
	return nil
}

// stopDumper stops a dumper (within stopIn: its stop merges what it
// spooled), checks its report and copies its pcap from remote on its host
// to local, for as long as data keeps coming (fetchIdle without any is an
// error).
func stopDumper(dc luminav1.DumperClient, stopIn time.Duration, remote, local string) (dumper.Report, error) {
	sctx, cancel := context.WithTimeout(context.Background(), stopIn)
	r, err := dc.Stop(sctx, &luminav1.DumperStopRequest{})
	cancel()
	if err != nil {
		return dumper.Report{}, err
	}
	rep, err := agent.DumperReportFromProto(r.GetReport())
	if err != nil {
		return dumper.Report{}, err
	}
	return rep, fetch(dc, remote, local, fetchIdle)
}

// fetchIdle is how long a dumper file's copy may go without data.
const fetchIdle = 60 * time.Second

// dumperStopTimeout is how long a dumper may take to stop: a minute, and
// the time to merge the test's whole expected trace at 50 MB/s (a dumper
// merges its share; one spool run per repeat at worst is far less). The
// trace's estimate counts event copies and PFC frames (config.Estimate).
func dumperStopTimeout(t *config.Test) time.Duration {
	const mergeBps = 50 << 20
	return time.Minute + time.Duration(t.Estimate().TraceBytes/mergeBps)*time.Second
}

// intakeServer serves the Intake service to the requester's agent.
type intakeServer struct {
	luminav1.UnimplementedIntakeServer
	install func(context.Context, []generator.Connection) error
}

func (s *intakeServer) Install(ctx context.Context, req *luminav1.InstallRequest) (*luminav1.InstallResponse, error) {
	conns, err := agent.ConnectionsFromProto(req.GetConnections())
	if err != nil {
		return nil, err
	}
	if err := s.install(ctx, conns); err != nil {
		return nil, err
	}
	return &luminav1.InstallResponse{}, nil
}

// fetch copies the file remote from a dumper's agent to local, for as
// long as data keeps coming: idle without a chunk cancels it.
func fetch(dc luminav1.DumperClient, remote, local string, idle time.Duration) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stalled := fmt.Errorf("copying %s: no data for %v", remote, idle)
	watchdog := time.AfterFunc(idle, func() { cancel(stalled) })
	defer watchdog.Stop()
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
			if context.Cause(ctx) == stalled {
				return fmt.Errorf("%w: %v", stalled, err)
			}
			return err
		}
		if _, err := f.Write(c.GetData()); err != nil {
			return err
		}
		watchdog.Reset(idle)
	}
}

// realTimeHeadroomBytes is the PFC headroom of the software switch's
// ingress buffers and the software NICs' receive buffers on a real-time
// testbed: what ~10 ms of a software sender's real rate (a few Gb/s over
// veth and AF_PACKET) brings before a pause takes effect there, where the
// hardware-sized defaults (tens of KB at 100 Gb/s) assume a reaction in
// microseconds.
const realTimeHeadroomBytes = 16 << 20

// pfcSettle is how long the driver lets PFC frames settle after traffic
// on a real-time testbed: above the longest pause (65535 quanta at 10
// Gb/s is 3.4 ms, on the testbed's clock) and the testbed's pipeline lag
// (wall clock).
const pfcSettle = 200 * time.Millisecond

// longestPause is 65535 quanta at 10 Gb/s.
const longestPause = 3355443 * time.Nanosecond

// heldMargin covers the real-time pipeline's lag behind the longest hold.
const heldMargin = 20 * time.Millisecond

// settleTime is how long, on the wall clock, a real-time run whose loops
// are slowdown times slower than the wall clock waits after traffic before
// its counters are read: the longest hold (testbed clock) plus heldMargin,
// and with PFC the longest pause (testbed clock) plus pfcSettle; 0 with
// neither.
func settleTime(run *Run, slowdown int64) time.Duration {
	var d time.Duration
	if hold := longestHold(run.Plan); hold > 0 {
		d = agent.WallTime(hold, slowdown) + heldMargin
	}
	if run.pfcOn() {
		d = max(d, agent.WallTime(longestPause, slowdown)+pfcSettle)
	}
	return d
}

// longestHold returns the longest time a delay or reorder event of p holds
// a packet.
func longestHold(p *controlplane.Plan) time.Duration {
	var d int64
	if p == nil {
		return 0
	}
	for _, e := range p.Events {
		d = max(d, e.Params.DelayNs, e.Params.MaxHoldNs)
	}
	return time.Duration(d)
}
