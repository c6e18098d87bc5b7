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
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
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
// Per-host slices are in t.Hosts order, per-flow ones in t.Flows order.
type placement struct {
	// Generator services of the traffic hosts, Dumper services in
	// t.Dumpers order, and the Injector service (nil when the switch is a
	// P4Runtime target of its own at p4rt).
	hosts    []*grpc.ClientConn
	dumpers  []*grpc.ClientConn
	injector *grpc.ClientConn

	// Data plane: the switch ports of the hosts and dumpers, the interface
	// behind each port of the software switch, each host's data interface
	// and where each dumper writes its pcap on its host.
	hostPorts    []uint32
	dumperPorts  []uint32
	switchIfaces map[uint32]string
	hostIfaces   []string
	dumperIfaces []string
	dumperPaths  []string
	// localDumperFiles: dumperPaths are files of this process's machine
	// (sim), which the driver moves under the results directory instead of
	// copying them through the Dumper service when the file system allows.
	localDumperFiles bool

	// P4Runtime: where the software switch serves it (p4rtListen) or the
	// address of a target of its own (p4rt); the dial options for either;
	// a P4Info and device config to push instead of lumina's.
	p4rtListen, p4rt     string
	p4rtDial             []grpc.DialOption
	p4info, deviceConfig []byte
	// bfrt is the switch's BfRt server (remote, a Tofino: pauses by its
	// packet generator, tofino.go), the program bound there, the chip
	// and its pipe-local pktgen port (lumina.p4's LUMINA_PKTGEN_PORT).
	bfrt, bfrtProgram string
	tofinoChip        bfrt.Chip
	pktgenPort        uint32

	// rnic is the agents' RNIC: "softrnic" or "verbs".
	rnic string
	// responderListen is, per flow, the generator control address its
	// responder (on the flow's to host) listens on; responderHost, per
	// flow and if set, replaces the host of the address it bound.
	responderListen, responderHost []string

	// The Intake service: the listener the driver serves it on, the
	// address the requesters' agents dial, the server options, and the
	// certificate and token the agents use.
	intake       net.Listener
	intakeAddr   string
	intakeServer []grpc.ServerOption
	intakeCert   []byte
	token        string

	// realTime: the testbed runs on wall-clock time (netns, remote), so
	// the driver waits out the switch's longest hold after traffic.
	realTime bool
	// pids are the agents' process IDs by role (netns; for hooks).
	pids map[string]int
}

// hooks are the one way tests reach into a run: callbacks the driver
// calls at named points of its phases (nil: none).
type hooks struct {
	// installed runs when the control plane has installed the plan,
	// before traffic starts, with lumina's P4Runtime connection and how
	// to reach the switch's P4Runtime service (tests change the switch's
	// state behind lumina's back with it).
	installed func(ctx context.Context, cp *controlplane.Switch, addr string, dial []grpc.DialOption, p *controlplane.Plan)
	// traffic runs in its own goroutine when traffic starts (tests kill
	// components with it; netns gives the agents' PIDs in pl.pids).
	traffic func(pl *placement)
	// merged runs when the merge has streamed the whole trace through the
	// integrity check and the analyzers, before the analysis finishes:
	// the run's per-packet state, if it kept any, is at its largest there
	// (tests measure the heap with it).
	merged func()
}

// drive runs one repeat on a testbed, phase by phase, as the package
// documentation lists them: place the components, then start the switch,
// the dumpers, every host's RNIC, the responders and the intake, run the
// traffic of every flow, let a real-time testbed settle, collect, and
// (once the testbed is closed) merge the dumps into the trace and analyze
// it. It fills run as it goes, so a failed run keeps what was collected;
// dumper files land in dir/dumpers. The report is nil when a phase
// before the merge failed.
func drive(ctx context.Context, tb testbed, run *Run, dir string, progress func(string), h hooks) (*Report, error) {
	pl, err := tb.place(ctx, run, progress)
	if err != nil {
		tb.close()
		return nil, err
	}
	d := &driver{run: run, pl: pl, dir: dir, progress: progress, hooks: h}
	run.HostPorts = pl.hostPorts
	err = d.phases(ctx, d.startSwitch, d.startDumpers, d.startNICs, d.serveResponders, d.tofinoSetup, d.startIntake, d.traffic, d.settle, d.collect)
	d.close()
	tb.close()
	if err != nil {
		return nil, err
	}
	return d.merge(ctx), nil
}

// driver runs the phases of one repeat on a placement. Each phase is a
// method; what one phase hands the next is in its fields.
type driver struct {
	run      *Run
	pl       *placement
	dir      string
	progress func(string)
	hooks    hooks

	// startSwitch: lumina's P4Runtime connection and the switch's address.
	cp     *controlplane.Switch
	p4addr string
	// startDumpers: the dumpers' clients (nil once stopped) and ports.
	dumpers []luminav1.DumperClient
	dports  []controlplane.Dumper
	// startNICs: each host's generator and its RNIC's MAC.
	gens []luminav1.GeneratorClient
	macs []roce.MAC
	// serveResponders, startIntake: each flow's responder, the intake
	// barrier and its server.
	responders []responder
	intake     *intakeBarrier
	ig         *grpc.Server
	// tofinoSetup on a Tofino (pl.bfrt): the BfRt connection.
	tofino *tofino
	// softTiming: on a remote run on the models' clock, the connection to
	// `lumina injector`'s Timing (softclock.go).
	softTiming *grpc.ClientConn
}

// responder is one flow's responder: the address its requester dials and
// the secret it presents there.
type responder struct{ addr, secret string }

// phases runs each phase in turn and stops at the first that fails.
func (d *driver) phases(ctx context.Context, phases ...func(context.Context) error) error {
	for _, p := range phases {
		if err := p(ctx); err != nil {
			return err
		}
	}
	return nil
}

// close stops what the phases started and the testbed does not: the
// Intake service, dumpers still running (a failed run keeps their files),
// lumina's P4Runtime connection.
func (d *driver) close() {
	if d.ig != nil {
		d.ig.Stop()
	}
	if d.dumpers != nil {
		d.stopDumpers()
	}
	if d.cp != nil {
		d.cp.Close()
	}
	if d.tofino != nil {
		d.tofino.close()
	}
	if d.softTiming != nil {
		d.softTiming.Close()
	}
}

// startSwitch starts the software switch (Injector.Start) or finds the
// P4Runtime target, connects as primary and pushes the pipeline.
func (d *driver) startSwitch(ctx context.Context) error {
	run, pl := d.run, d.pl
	d.p4addr = pl.p4rt
	if pl.injector != nil {
		d.progress("injector: start the software switch, serve P4Runtime")
		ir, err := luminav1.NewInjectorClient(pl.injector).Start(ctx, &luminav1.InjectorStartRequest{
			Ports: pl.switchIfaces, P4RuntimeAddr: pl.p4rtListen, Seed: run.Seeds.Switch, Pfc: agent.SwitchPFCToProto(run.switchPFC(pl)),
			Slowdown: uint32(run.slowdown())})
		if err != nil {
			return fmt.Errorf("injector: %w", err)
		}
		d.p4addr = ir.GetP4RuntimeAddr()
	} else {
		d.progress("injector: P4Runtime target at " + d.p4addr)
		if err := checkSwitchClock(ctx, d.p4addr, pl.p4rtDial, run.slowdown()); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cp, err := controlplane.Dial(cctx, d.p4addr, controlplane.DialOptions{GRPC: pl.p4rtDial})
	if err != nil {
		return err
	}
	d.cp = cp
	if id := cp.ElectionID(); id != "1" {
		d.progress("P4Runtime: another controller was primary; lumina is primary with election ID " + id)
	}
	election := uint64(run.Repeat + 1)
	if pl.p4info != nil {
		err = cp.SetPipelineWith(cctx, pl.p4info, pl.deviceConfig, election)
	} else {
		err = cp.SetPipeline(cctx, pl.deviceConfig, election)
	}
	if err == nil && pl.injector == nil && run.slowdown() > 1 {
		err = d.startSoftTiming(cctx)
	}
	return err
}

// startDumpers starts every dumper (Dumper.Start).
func (d *driver) startDumpers(ctx context.Context) error {
	t, pl := d.run.Test, d.pl
	backends := map[string]int{}
	for _, dc := range t.Dumpers {
		backends[dc.Backend.String()]++
	}
	var parts []string
	for _, b := range slices.Sorted(maps.Keys(backends)) {
		parts = append(parts, fmt.Sprintf("%d %s", backends[b], b))
	}
	d.progress("dumpers: start " + strings.Join(parts, ", ")) // the backends actually used
	d.dumpers = make([]luminav1.DumperClient, len(t.Dumpers))
	for i, dc := range t.Dumpers {
		d.dumpers[i] = luminav1.NewDumperClient(pl.dumpers[i])
		cfg := agent.DumperConfigToProto(dumperConfig(t, i, pl.dumperIfaces[i], pl.dumperPaths[i]))
		if _, err := d.dumpers[i].Start(ctx, &luminav1.DumperStartRequest{Config: cfg}); err != nil {
			return fmt.Errorf("dumper %s: %w", dc.Name, err)
		}
		d.dports = append(d.dports, controlplane.Dumper{Name: dc.Name, Port: pl.dumperPorts[i], MAC: macDumper(i), Weight: dc.Weight, SnapLen: dc.SnapLen})
	}
	return nil
}

// stopDumpers stops every dumper and fetches its file into dir/dumpers,
// recording each one's report and error in the run.
func (d *driver) stopDumpers() {
	run, t := d.run, d.run.Test
	stopIn := dumperStopTimeout(t)
	for i, dc := range d.dumpers {
		name := t.Dumpers[i].Name
		local := filepath.Join(d.dir, "dumpers", t.Dumpers[i].DumpFilename)
		rep, err := stopDumper(dc, stopIn, d.pl.dumperPaths[i], local, d.pl.localDumperFiles)
		if err != nil {
			rep.Name = name
			run.DumperErrors = append(run.DumperErrors, fmt.Sprintf("dumper %s: %v", name, err))
			d.progress(fmt.Sprintf("dumper %s: %v", name, err))
		}
		run.Dumpers = append(run.Dumpers, rep)
		run.DumperFiles = append(run.DumperFiles, local)
	}
	d.dumpers = nil
}

// startNICs starts every host's RNIC (Generator.StartNIC) and records its
// MAC and versions.
func (d *driver) startNICs(ctx context.Context) error {
	run, pl := d.run, d.pl
	d.progress("generator: RNICs of " + hostCount(len(run.Test.Hosts)))
	d.gens = make([]luminav1.GeneratorClient, len(run.Test.Hosts))
	d.macs = make([]roce.MAC, len(run.Test.Hosts))
	for i, h := range run.Test.Hosts {
		d.gens[i] = luminav1.NewGeneratorClient(pl.hosts[i])
		spec := agent.NICSpec{Backend: pl.rnic, Interface: pl.hostIfaces[i], RNIC: run.nicConfig(i)}
		if pl.realTime && spec.RNIC.PFC != nil {
			// A software NIC's pause takes the real-time testbed's latency
			// to act: its buffer above XOFF must hold what arrives
			// meanwhile (the XOFF/XON thresholds stay the personality's).
			spec.RNIC.Personality.RxBufferBytes = max(spec.RNIC.Personality.RxBufferBytes, realTimeHeadroomBytes)
		}
		if pl.rnic == "verbs" {
			dev, params := run.nicDevice(i)
			spec.Device, spec.Configure = dev, &params
		}
		sn, err := d.gens[i].StartNIC(ctx, &luminav1.StartNICRequest{Nic: agent.NICSpecToProto(spec), Slowdown: uint32(run.slowdown())})
		if err != nil {
			return fmt.Errorf("%s RNIC: %w", h.Name, err)
		}
		mac, err := roce.ParseMAC(sn.GetMac())
		if err != nil {
			return fmt.Errorf("%s RNIC reported MAC %q", h.Name, sn.GetMac())
		}
		d.macs[i] = mac
		if m := sn.GetVersions(); m != nil {
			v, err := agent.NICVersionsFromProto(m)
			if err != nil {
				return fmt.Errorf("%s RNIC: %w", h.Name, err)
			}
			run.NICVersions[h.Name] = v
		}
	}
	return nil
}

// hostCount is "2 hosts", "1 host".
func hostCount(n int) string {
	if n == 1 {
		return "1 host"
	}
	return fmt.Sprintf("%d hosts", n)
}

// serveResponders starts each flow's responder on its to host
// (Generator.Serve) and the intake barrier the flows' requesters report
// their connections to.
func (d *driver) serveResponders(ctx context.Context) error {
	pl, t := d.pl, d.run.Test
	d.progress("generator: " + flowCount(len(t.Flows)) + ": responders")
	d.responders = make([]responder, len(t.Flows))
	for f, fl := range t.Flows {
		// A responder's control connection takes only its requester: a
		// secret of this run, sent through both agents (#38 point 4).
		secret := make([]byte, 24)
		if _, err := rand.Read(secret); err != nil {
			return err
		}
		to := t.HostIndex(fl.To)
		sr, err := d.gens[to].Serve(ctx, &luminav1.ServeRequest{ListenAddr: pl.responderListen[f], Token: hex.EncodeToString(secret)})
		if err != nil {
			return fmt.Errorf("%s: %w", d.flowRole(f, "responder"), err)
		}
		addr := sr.GetAddr()
		if pl.responderHost != nil && pl.responderHost[f] != "" {
			_, port, _ := net.SplitHostPort(addr)
			addr = net.JoinHostPort(pl.responderHost[f], port)
		}
		d.responders[f] = responder{addr: addr, secret: hex.EncodeToString(secret)}
	}
	d.intake = newIntakeBarrier(t, pl.realTime, d.installPlan)
	return nil
}

// startIntake serves the Intake service, where the control plane installs
// the test's entries once every flow's requester has reported its
// connections (the intake barrier).
func (d *driver) startIntake(context.Context) error {
	d.ig = grpc.NewServer(d.pl.intakeServer...)
	luminav1.RegisterIntakeServer(d.ig, &intakeServer{install: d.intake.report})
	go agent.ServeGRPC(d.ig, d.pl.intake, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "lumina: intake server: "+format+"\n", args...)
	})
	return nil
}

// installPlan translates the intent for every flow's connections (numbered
// globally) and the hosts' ports and MACs, installs the plan, and
// schedules the pauses, which start with traffic.
func (d *driver) installPlan(ctx context.Context, conns []generator.Connection) error {
	run, pl, t := d.run, d.pl, d.run.Test
	ports := controlplane.Ports{Dumpers: d.dports}
	for i, h := range t.Hosts {
		ports.Hosts = append(ports.Hosts, controlplane.Host{Name: h.Name, Port: pl.hostPorts[i], MAC: [6]byte(d.macs[i]), IPs: run.IPs[h.Name]})
	}
	if run.fabric != nil {
		ports.Fabric = run.fabric.controlplane(pl.dumperPorts)
	}
	install := controlplane.Intake(d.cp, run.Intent, ports, func(p *controlplane.Plan) {
		run.Plan = p
		if d.hooks.installed != nil {
			d.hooks.installed(ctx, d.cp, d.p4addr, pl.p4rtDial, p)
		}
	})
	if err := install(ctx, conns); err != nil {
		return err
	}
	// Pauses start with traffic, which starts when the plan is in
	// place; those that start on a data packet need its runtime QPN
	// and PSN.
	return d.schedulePauses(ctx)
}

// flowCount is "1 flow", "3 flows".
func flowCount(n int) string {
	if n == 1 {
		return "1 flow"
	}
	return fmt.Sprintf("%d flows", n)
}

// flowRole names flow f's requester or responder in errors: "requester"
// in the two-host form, "flow a requester" in the hosts form.
func (d *driver) flowRole(f int, role string) string {
	if !d.run.Test.HostsForm {
		return role
	}
	return "flow " + d.run.Test.Flows[f].Name + " " + role
}

// schedulePauses schedules the test's pause injections on the software
// switch (Injector.SchedulePauses): those at start-us from now (the
// intake, as traffic starts) and those on a data packet of the installed
// plan.
func (d *driver) schedulePauses(ctx context.Context) error {
	if d.pl.injector == nil && d.pl.bfrt != "" {
		return d.tofinoPauses(ctx)
	}
	ps, err := d.run.pauseOnPacket(d.run.Plan)
	if err != nil {
		return err
	}
	if ps = append(d.run.pauseAt(), ps...); len(ps) == 0 {
		return nil
	}
	if d.pl.injector == nil {
		return fmt.Errorf("pfc-events: pause injection needs lumina's software switch")
	}
	_, err = luminav1.NewInjectorClient(d.pl.injector).SchedulePauses(ctx, &luminav1.SchedulePausesRequest{Pauses: ps})
	return err
}

// startStalls schedules each host's rx-stall events (Generator.StallRx)
// just before the requesters start: their times count from here (on sim
// the virtual clock does not move before traffic; on netns the
// requesters' set-up, a few ms, comes first). Pauses are scheduled at the
// intake, when the plan is in place and traffic starts (the switch
// mirrors nothing before).
func (d *driver) startStalls(ctx context.Context) error {
	for i, h := range d.run.Test.Hosts {
		st := d.run.stalls(h.Name)
		if len(st) == 0 {
			continue
		}
		if _, err := d.gens[i].StallRx(ctx, &luminav1.StallRxRequest{Stalls: st}); err != nil {
			return fmt.Errorf("%s: rx-stall: %w", h.Name, err)
		}
	}
	return nil
}

// traffic runs every flow (Generator.Run on its from host, concurrently),
// each bounded on the testbed's clock, and records each flow's result, all
// flows' result and connections.
func (d *driver) traffic(ctx context.Context) error {
	run, pl, t := d.run, d.pl, d.run.Test
	if k := run.slowdown(); k > 1 {
		d.progress(fmt.Sprintf("traffic: run (limit %v on the testbed's clock, %d× slower than the wall clock)", run.Limit, k))
	} else {
		d.progress(fmt.Sprintf("traffic: run (limit %v on the testbed's clock)", run.Limit))
	}
	rctx, rcancel := context.WithTimeout(ctx, sim.WallTime(run.Limit, run.slowdown())+time.Minute)
	defer rcancel()
	fctx, fcancel := context.WithCancelCause(rctx) // a failed flow stops the others
	defer fcancel(nil)
	if err := d.startStalls(ctx); err != nil {
		return err
	}
	start := time.Now()
	if d.hooks.traffic != nil {
		go d.hooks.traffic(pl)
	}
	run.Flows = make([]FlowRun, len(t.Flows))
	errs := make([]error, len(t.Flows))
	var wg sync.WaitGroup
	for f := range t.Flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[f] = d.runFlow(fctx, f); errs[f] != nil {
				d.intake.fail(errs[f]) // a flow that fails releases the others
				fcancel(errs[f])
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(fctx); err != nil && rctx.Err() == nil {
		return err // the flow that failed first; the others were stopped
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	run.mergeFlows()
	if run.Stopped != "" {
		d.progress("traffic: " + run.Stopped)
	} else {
		d.progress(fmt.Sprintf("traffic: done in %v wall", time.Since(start).Round(time.Millisecond)))
	}
	return nil
}

// runFlow runs flow f: Generator.Run on its from host with its to host's
// responder, and records its result in run.Flows[f].
func (d *driver) runFlow(ctx context.Context, f int) error {
	run, pl, t := d.run, d.pl, d.run.Test
	fl := t.Flows[f]
	rsp := d.responders[f]
	rr, err := d.gens[t.HostIndex(fl.From)].Run(ctx, &luminav1.RunRequest{Traffic: agent.TrafficToProto(traffic(fl)), ResponderAddr: rsp.addr,
		IntakeAddr: pl.intakeAddr, DeadlineNs: int64(run.Limit), IntakeCertPem: pl.intakeCert, IntakeToken: pl.token,
		ResponderToken: rsp.secret, Flow: uint32(f), StartDelayNs: int64(fl.StartUs) * 1000})
	role := d.flowRole(f, "requester")
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	fr := FlowRun{Name: fl.Name, Stopped: rr.GetStopped(), NICTimerLate: time.Duration(rr.GetNicTimerLateMaxNs())}
	if m := rr.GetResult(); m != nil {
		res, err := agent.ResultFromProto(m)
		if err != nil {
			return fmt.Errorf("%s: %w", role, err)
		}
		fr.Result = &res
	} else if fr.Stopped == "" {
		return fmt.Errorf("%s: no result", role)
	}
	run.Flows[f] = fr
	return nil
}

// settle waits, on a real-time testbed, for what the switch may still
// hold (delay, reorder events: at most the longest hold after traffic)
// and PFC frames still in flight: their mirror copies and the counters
// must include them, so the driver waits for the longer of the two once.
// (On sim the loop runs them before traffic returns.)
func (d *driver) settle(ctx context.Context) error {
	if !d.pl.realTime {
		return nil
	}
	wait := settleTime(d.run, d.run.slowdown())
	if w := d.run.deadlockWindow(); w > 0 {
		// The deadlock window: the switches keep running deadlock-ms (on
		// the testbed's clock) after the last flow ended; the pfc
		// analysis looks for pauses still going round a cycle then.
		wait += sim.WallTime(w, d.run.slowdown())
		d.progress(fmt.Sprintf("traffic: the switches run on for the deadlock window, %v of the testbed's clock", w))
	}
	if wait > 0 {
		d.progress(fmt.Sprintf("traffic: waiting %v for held packets and PFC frames", wait))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d.run.deadlockWindow() > 0 && d.pl.injector != nil {
		// A deadlocked fabric keeps pausing for good: the window is over,
		// so the switch stops, and its counters and the trace end at the
		// same frame.
		d.progress("traffic: the deadlock window is over: halt the switch")
		if _, err := luminav1.NewInjectorClient(d.pl.injector).Halt(ctx, &luminav1.InjectorHaltRequest{}); err != nil {
			return fmt.Errorf("injector halt: %w", err)
		}
	}
	return nil
}

// collect reads the switch's counters, PFC state, tables, arbitration and
// timing, every host's NIC counters, and stops the dumpers, fetching their
// files; on a deadline of its own: traffic may have outlasted the
// set-up's.
func (d *driver) collect(ctx context.Context) error {
	run, pl, cp := d.run, d.pl, d.cp
	d.progress("collect: switch counters, tables and timing, NIC counters, stop dumpers, fetch their files")
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	var err error
	if run.Switch, err = cp.ReadCounters(cctx); err != nil {
		return err
	}
	if err := d.readSwitchPFC(cctx); err != nil {
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
		d.progress(err.Error())
	}
	scancel()
	run.LostPrimary = cp.LostPrimary()
	if timing := pl.injector; timing != nil || d.softTiming != nil {
		if timing == nil {
			timing = d.softTiming
		}
		tr, err := luminav1.NewInjectorClient(timing).Timing(ctx, &luminav1.InjectorTimingRequest{})
		if err != nil {
			return fmt.Errorf("injector timing: %w", err)
		}
		if run.Timing, err = agent.InjectorTimingFromProto(tr); err != nil {
			return fmt.Errorf("injector timing: %w", err)
		}
	}
	if err := d.collectNICs(ctx); err != nil {
		return err
	}
	d.stopDumpers()
	if len(run.DumperErrors) > 0 {
		return errors.New(strings.Join(run.DumperErrors, "; "))
	}
	return nil
}

// collectNICs reads every host's NIC counters (Generator.Counters) and how
// late its software RNIC applied pauses and handled frames.
func (d *driver) collectNICs(ctx context.Context) error {
	run := d.run
	for i, h := range run.Test.Hosts {
		c, err := d.gens[i].Counters(ctx, &luminav1.CountersRequest{})
		if err != nil {
			return fmt.Errorf("%s counters: %w", h.Name, err)
		}
		run.NICs[h.Name] = c.GetCounters()
		run.NICPauseLate = max(run.NICPauseLate, time.Duration(c.GetNicPauseLateMaxNs()))
		run.NICRxLate = max(run.NICRxLate, time.Duration(c.GetNicRxLateMaxNs()))
	}
	return nil
}

// readSwitchPFC fetches the software switch's PFC counters and log.
func (d *driver) readSwitchPFC(ctx context.Context) error {
	if d.tofino != nil && d.tofino.c != nil {
		return d.readTofinoPFC(ctx)
	}
	if d.pl.injector == nil || !d.run.pfcOn() && !d.run.queuesOn() {
		return nil
	}
	m, err := luminav1.NewInjectorClient(d.pl.injector).PFC(ctx, &luminav1.InjectorPFCRequest{})
	if err != nil {
		return fmt.Errorf("injector PFC: %w", err)
	}
	st, err := agent.InjectorPFCFromProto(m)
	if err != nil {
		return fmt.Errorf("injector PFC: %w", err)
	}
	d.run.SwitchPFC = st
	return nil
}

// merge merges the dumper files into the run's trace in dir, checks its
// integrity and, for a valid trace, runs the analyzers in the same pass
// and writes report.html; it returns the run's report.
func (d *driver) merge(ctx context.Context) *Report {
	run := d.run
	rpt := newReport(run.Test, run.Repeat, run)
	d.progress("trace: merge dumper files, integrity check")
	run.TracePath = filepath.Join(d.dir, run.Test.AggregatePcapFilename)
	stream, err := rpt.merge(ctx, run)
	if d.hooks.merged != nil {
		d.hooks.merged()
	}
	if rpt.Valid {
		d.progress("analyzers: events applied, checks")
		if err == nil {
			err = rpt.analyze(stream, d.dir)
		}
		if err != nil {
			rpt.Checks[checkAnalyzers] = CheckEntry{Verdict: model.Fail, Detail: err.Error()}
		}
	}
	return rpt
}

// intakeBarrier collects each flow's connections from its requester's
// Intake call and installs the plan once, when every flow has reported:
// the connections concatenated in flow order and numbered globally (flow
// f's connection q is t.QPOffset(f)+q; Flow is the flow's name in the
// hosts form). With hold (real-time testbeds, where a flow starts as soon
// as its call returns) every flow's call returns when the plan is in
// place, or with the error of the install or of a flow that failed.
// Without hold (sim) only the last flow's call waits, for the install:
// there the flows set up one after the other in flow order (each one's
// set-up includes its Intake call) and the virtual clock starts only when
// every flow has set up (agent.SimFlows), so no flow runs before the
// plan is in place, and holding the first would keep the next from
// setting up.
type intakeBarrier struct {
	t       *config.Test
	hold    bool
	install func(context.Context, []generator.Connection) error

	mu    sync.Mutex
	conns [][]generator.Connection // by flow; nil until it reported
	got   []bool
	n     int
	once  sync.Once
	done  chan struct{}
	err   error
}

func newIntakeBarrier(t *config.Test, hold bool, install func(context.Context, []generator.Connection) error) *intakeBarrier {
	return &intakeBarrier{t: t, hold: hold, install: install, conns: make([][]generator.Connection, len(t.Flows)), got: make([]bool, len(t.Flows)),
		done: make(chan struct{})}
}

// report takes flow f's connections (indexed from 0 within the flow) and
// waits for the plan.
func (b *intakeBarrier) report(ctx context.Context, f int, conns []generator.Connection) error {
	t := b.t
	b.mu.Lock()
	var err error
	switch {
	case f < 0 || f >= len(t.Flows):
		err = fmt.Errorf("intake: flow %d: the test has %d flows", f, len(t.Flows))
	case b.got[f]:
		err = fmt.Errorf("intake: flow %s reported its connections twice", t.Flows[f].Name)
	case len(conns) != t.Flows[f].NumQPs:
		err = fmt.Errorf("intake: flow %s reported %d connections, want %d", t.Flows[f].Name, len(conns), t.Flows[f].NumQPs)
	}
	if err != nil {
		b.mu.Unlock()
		b.fail(err)
		return err
	}
	b.got[f], b.conns[f] = true, conns
	b.n++
	last := b.n == len(t.Flows)
	b.mu.Unlock()
	if last {
		b.finish(b.install(ctx, b.all()))
	} else if !b.hold {
		return nil
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reported reports whether flow f has reported its connections.
func (b *intakeBarrier) reported(f int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got[f]
}

// all returns every flow's connections, numbered globally.
func (b *intakeBarrier) all() []generator.Connection {
	return globalConns(b.t, b.conns)
}

// globalConns concatenates each flow's connections (numbered from 0 within
// the flow) in flow order, numbered globally, with the flow's name in the
// hosts form.
func globalConns(t *config.Test, perFlow [][]generator.Connection) []generator.Connection {
	var out []generator.Connection
	for f, cs := range perFlow {
		off := t.QPOffset(f)
		for _, c := range cs {
			c.Index += off
			if t.HostsForm {
				c.Flow = t.Flows[f].Name
			}
			out = append(out, c)
		}
	}
	return out
}

// fail releases every flow waiting for the plan with err (the first
// outcome counts).
func (b *intakeBarrier) fail(err error) { b.finish(err) }

func (b *intakeBarrier) finish(err error) {
	b.once.Do(func() {
		b.err = err
		close(b.done)
	})
}

// stopDumper stops a dumper (within stopIn: its stop merges what it
// spooled), checks its report and copies its pcap from remote on its host
// to local, for as long as data keeps coming (fetchIdle without any is an
// error). With move (remote is a file of this machine: sim), it renames
// remote to local instead when both are on one file system: the same
// bytes without a second copy of the trace on the disk while it is
// fetched, nor the time to write it.
func stopDumper(dc luminav1.DumperClient, stopIn time.Duration, remote, local string, move bool) (dumper.Report, error) {
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
	if move {
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return rep, err
		}
		if os.Rename(remote, local) == nil {
			return rep, nil
		}
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

// intakeServer serves the Intake service to the requesters' agents: each
// call carries one flow's connections.
type intakeServer struct {
	luminav1.UnimplementedIntakeServer
	install func(ctx context.Context, flow int, conns []generator.Connection) error
}

func (s *intakeServer) Install(ctx context.Context, req *luminav1.InstallRequest) (*luminav1.InstallResponse, error) {
	conns, err := agent.ConnectionsFromProto(req.GetConnections())
	if err != nil {
		return nil, err
	}
	if err := s.install(ctx, int(req.GetFlow()), conns); err != nil {
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
				return fmt.Errorf("%w: %w", stalled, err)
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
		d = sim.WallTime(hold, slowdown) + heldMargin
	}
	if run.pfcOn() {
		d = max(d, sim.WallTime(longestPause, slowdown)+pfcSettle)
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
