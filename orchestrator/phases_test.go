package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/memnet"
	"github.com/netlumina/lumina/orchestrator/agent"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/roce"
)

// threeHosts is a hosts-form test built by hand: h1 and h2 write to r
// (flow b starts 50 µs late), r reads from h1; h2 is paused on priority 3
// and r's NIC stalls.
func threeHosts() *config.Test {
	tr := func(qps int, verb config.Verb) config.Traffic {
		return config.Traffic{NumQPs: qps, Verb: verb, MessageSize: 4096, MTU: 1024, NumMsgsPerQP: 2}
	}
	return &config.Test{Name: "three", Seed: 9, Testbed: config.TestbedSim, HostsForm: true,
		Hosts: []config.NamedHost{{Name: "h1"}, {Name: "h2"}, {Name: "r"}},
		Flows: []config.Flow{{Name: "a", From: "h1", To: "r", Traffic: tr(2, config.VerbWrite)},
			{Name: "b", From: "h2", To: "r", StartUs: 50, Traffic: tr(1, config.VerbWrite)},
			{Name: "c", From: "r", To: "h1", Traffic: tr(1, config.VerbRead)}},
		PFCEvents: []config.PFCEvent{{Type: config.PFCPause, To: "h2", Priority: 3, Quanta: 100, StartUs: 10},
			{Type: config.PFCRxStall, Host: "r", StartUs: 5, DurationUs: 7}},
	}
}

// callLog records the calls the fake agents receive, one line each.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf(format, a...))
}

// sorted returns the calls in order (concurrent calls arrive in any order).
func (l *callLog) sorted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.calls))
}

// fakeGen is one host's Generator service: it records each call and
// answers as an agent would (StartNIC: MAC 02:00:00:00:00:<host+1>;
// Serve: address <host>:<n>; Run: a result with the flow's connections and
// 1000 bytes per QP over 1000 ns × (flow+1)).
type fakeGen struct {
	luminav1.UnimplementedGeneratorServer
	name  string
	i     int
	log   *callLog
	mu    sync.Mutex
	serve int
	// runErr, if set, fails Run for this flow index.
	runErr map[uint32]error
}

func (g *fakeGen) StartNIC(_ context.Context, req *luminav1.StartNICRequest) (*luminav1.StartNICResponse, error) {
	spec, err := agent.NICSpecFromProto(req.GetNic())
	if err != nil {
		return nil, err
	}
	rc := spec.RNIC
	g.log.add("%s StartNIC if=%s name=%s mac=%x ips=%v seed=%d", g.name, spec.Interface, rc.Name, rc.MAC, rc.IPs, rc.Seed)
	return &luminav1.StartNICResponse{Mac: fmt.Sprintf("02:00:00:00:00:%02x", g.i+1)}, nil
}

func (g *fakeGen) Serve(_ context.Context, req *luminav1.ServeRequest) (*luminav1.ServeResponse, error) {
	g.mu.Lock()
	n := g.serve
	g.serve++
	g.mu.Unlock()
	g.log.add("%s Serve listen=%s", g.name, req.GetListenAddr())
	return &luminav1.ServeResponse{Addr: fmt.Sprintf("%s:%d", g.name, n)}, nil
}

func (g *fakeGen) Run(_ context.Context, req *luminav1.RunRequest) (*luminav1.RunResponse, error) {
	tr, err := agent.TrafficFromProto(req.GetTraffic())
	if err != nil {
		return nil, err
	}
	f := req.GetFlow()
	g.log.add("%s Run flow=%d responder=%s delay=%dns qps=%d verb=%s", g.name, f, req.GetResponderAddr(), req.GetStartDelayNs(), tr.NumQPs, tr.Verb)
	if err := g.runErr[f]; err != nil {
		return nil, err
	}
	res := generator.Result{Verb: tr.Verb, DurationNs: 1000 * int64(f+1), Responder: &generator.ResponderStats{Verified: true}}
	for q := range tr.NumQPs {
		res.Bytes += 1000
		res.QPs = append(res.QPs, generator.QPResult{Index: q, Posted: 2, Completed: 2})
		res.Connections = append(res.Connections, generator.Connection{Index: q, Verb: tr.Verb,
			Requester: generator.Endpoint{IP: netip.MustParseAddr("10.0.0.1"), MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: uint32(0x100*(f+1)) + uint32(q), IPSN: 1},
			Responder: generator.Endpoint{IP: netip.MustParseAddr("10.0.0.3"), MAC: roce.MAC{2, 0, 0, 0, 0, 3}, QPN: uint32(0x200*(f+1)) + uint32(q), IPSN: 2}})
	}
	return &luminav1.RunResponse{Result: agent.ResultToProto(res)}, nil
}

func (g *fakeGen) Counters(context.Context, *luminav1.CountersRequest) (*luminav1.CountersResponse, error) {
	g.log.add("%s Counters", g.name)
	return &luminav1.CountersResponse{Counters: map[string]uint64{"host": uint64(g.i)}, NicPauseLateMaxNs: uint64(10 * g.i), NicRxLateMaxNs: uint64(g.i)}, nil
}

func (g *fakeGen) StallRx(_ context.Context, req *luminav1.StallRxRequest) (*luminav1.StallRxResponse, error) {
	for _, s := range req.GetStalls() {
		g.log.add("%s StallRx start=%dns duration=%dns", g.name, s.GetStartNs(), s.GetDurationNs())
	}
	return &luminav1.StallRxResponse{}, nil
}

// fakeDumper is a dumper's Dumper service: it records Start.
type fakeDumper struct {
	luminav1.UnimplementedDumperServer
	log *callLog
}

func (s *fakeDumper) Start(_ context.Context, req *luminav1.DumperStartRequest) (*luminav1.DumperStartResponse, error) {
	c, err := agent.DumperConfigFromProto(req.GetConfig())
	if err != nil {
		return nil, err
	}
	s.log.add("%s Start if=%s out=%s", c.Name, c.Interface, c.OutPath)
	return &luminav1.DumperStartResponse{}, nil
}

// fakeInjector is the switch's Injector service: it records scheduled
// pauses.
type fakeInjector struct {
	luminav1.UnimplementedInjectorServer
	log *callLog
}

func (s *fakeInjector) SchedulePauses(_ context.Context, req *luminav1.SchedulePausesRequest) (*luminav1.SchedulePausesResponse, error) {
	for _, m := range req.GetPauses() {
		p := agent.PauseInjectionFromProto(m)
		s.log.add("switch SchedulePauses port=%d priority=%d quanta=%d start=%v", p.Port, p.Priority, p.Quanta, p.Start)
	}
	return &luminav1.SchedulePausesResponse{}, nil
}

// fakeDriver is a driver of t's repeat 0 on a placement of fake agents
// over an in-memory network (the sim testbed's ports, interfaces and
// responder address), and the log of the calls they receive.
func fakeDriver(t *testing.T, tc *config.Test, gens map[string]*fakeGen) (*driver, *callLog) {
	t.Helper()
	run, err := newRun(tc, 0)
	if err != nil {
		t.Fatal(err)
	}
	log := &callLog{}
	var mn memnet.Network
	serve := func(name string, register func(*grpc.Server)) *grpc.ClientConn {
		g := grpc.NewServer()
		register(g)
		ln, err := mn.Listen(name)
		if err != nil {
			t.Fatal(err)
		}
		go g.Serve(ln)
		t.Cleanup(g.Stop)
		c, err := mn.GRPC(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	pl := &placement{rnic: "softrnic", switchIfaces: map[uint32]string{}}
	for i, h := range tc.Hosts {
		g := &fakeGen{name: h.Name, i: i, log: log}
		if gens != nil && gens[h.Name] != nil {
			g = gens[h.Name]
			g.name, g.i, g.log = h.Name, i, log
		}
		pl.hosts = append(pl.hosts, serve(agentName(tc, i), func(s *grpc.Server) { luminav1.RegisterGeneratorServer(s, g) }))
		pl.hostPorts = append(pl.hostPorts, hostPort(i))
		pl.hostIfaces = append(pl.hostIfaces, "eth0")
	}
	for range tc.Flows {
		pl.responderListen = append(pl.responderListen, "generator:0")
	}
	pl.injector = serve("switch", func(s *grpc.Server) { luminav1.RegisterInjectorServer(s, &fakeInjector{log: log}) })
	for i, dc := range tc.Dumpers {
		pl.dumpers = append(pl.dumpers, serve(fmt.Sprint("dumper", i), func(s *grpc.Server) { luminav1.RegisterDumperServer(s, &fakeDumper{log: log}) }))
		pl.dumperPorts = append(pl.dumperPorts, uint32(portDumper0+i))
		pl.dumperIfaces = append(pl.dumperIfaces, "eth0")
		pl.dumperPaths = append(pl.dumperPaths, "/work/dumper"+fmt.Sprint(i)+"-"+dc.DumpFilename)
	}
	run.HostPorts = pl.hostPorts
	return &driver{run: run, pl: pl, progress: func(string) {}}, log
}

// TestDriverNICs: startNICs starts one RNIC per host, in hosts order, each
// on its interface with its own name, MAC (02:4c:00:00:00:<i+1>), default
// address (10.0.0.<i+1>) and seed (the first two hosts' are the two-host
// form's requester and responder seeds), and keeps the MAC each reports.
func TestDriverNICs(t *testing.T) {
	tc := threeHosts()
	d, log := fakeDriver(t, tc, nil)
	if err := d.startNICs(context.Background()); err != nil {
		t.Fatal(err)
	}
	seed := func(role string) uint64 { return seedFor(tc, 0, role) }
	want := []string{
		fmt.Sprintf("h1 StartNIC if=eth0 name=h1 mac=024c00000001 ips=[10.0.0.1] seed=%d", seed("requester")),
		fmt.Sprintf("h2 StartNIC if=eth0 name=h2 mac=024c00000002 ips=[10.0.0.2] seed=%d", seed("responder")),
		fmt.Sprintf("r StartNIC if=eth0 name=r mac=024c00000003 ips=[10.0.0.3] seed=%d", hostSeed(tc, 0, 2)),
	}
	if got := log.calls; !reflect.DeepEqual(got, want) {
		t.Errorf("startNICs calls\n got %q\nwant %q", got, want)
	}
	if want := []roce.MAC{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}, {2, 0, 0, 0, 0, 3}}; !reflect.DeepEqual(d.macs, want) {
		t.Errorf("startNICs MACs = %v, want %v", d.macs, want)
	}
	if s := d.run.Seeds.Hosts; s["h1"] == s["h2"] || s["h2"] == s["r"] || s["h1"] == s["r"] {
		t.Errorf("host seeds %v, want distinct", s)
	}
}

// TestDriverDumpersAndNICCounters: startDumpers starts each dumper on its
// interface and path and gives the control plane its port (10+i), MAC and
// weight; collectNICs reads every host's counters into the run by host
// name, with the largest lateness.
func TestDriverDumpersAndNICCounters(t *testing.T) {
	tc := threeHosts()
	tc.Dumpers = []config.Dumper{{Name: "d0", Weight: 1, DumpFilename: "d0.pcap"}, {Name: "d1", Weight: 3, DumpFilename: "d1.pcap"}}
	d, log := fakeDriver(t, tc, nil)
	ctx := context.Background()
	for _, ph := range []func(context.Context) error{d.startDumpers, d.startNICs, d.collectNICs} {
		if err := ph(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range log.calls {
		if !strings.Contains(c, "StartNIC") {
			got = append(got, c)
		}
	}
	want := []string{"d0 Start if=eth0 out=/work/dumper0-d0.pcap", "d1 Start if=eth0 out=/work/dumper1-d1.pcap", "h1 Counters", "h2 Counters", "r Counters"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls\n got %q\nwant %q", got, want)
	}
	if got, want := fmt.Sprint(d.dports), "[{d0 10 [2 76 0 0 1 0] 1 0} {d1 11 [2 76 0 0 1 1] 3 0}]"; got != want {
		t.Errorf("dumper ports %s, want %s", got, want)
	}
	run := d.run
	if want := map[string]map[string]uint64{"h1": {"host": 0}, "h2": {"host": 1}, "r": {"host": 2}}; !reflect.DeepEqual(run.NICs, want) {
		t.Errorf("NIC counters %v, want %v", run.NICs, want)
	}
	if run.NICPauseLate != 20 || run.NICRxLate != 2 {
		t.Errorf("NIC lateness pause %v rx %v, want 20ns and 2ns", run.NICPauseLate, run.NICRxLate)
	}
}

// TestDriverTraffic: serve starts one responder per flow on its to host;
// traffic runs each flow on its from host against its own responder's
// address, with its index and start delay, schedules the stall on r and
// the pause on h2's port (2); the run's connections and result are every
// flow's, numbered globally, with the flows' names.
func TestDriverTraffic(t *testing.T) {
	tc := threeHosts()
	d, log := fakeDriver(t, tc, nil)
	ctx := context.Background()
	for _, ph := range []func(context.Context) error{d.startNICs, d.serveResponders, d.traffic} {
		if err := ph(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The plan's install is the intake's (TestIntakeBarrier); here the
	// pauses it schedules.
	if err := d.schedulePauses(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range log.sorted() {
		if !strings.Contains(c, "StartNIC") {
			got = append(got, c)
		}
	}
	want := []string{
		"h1 Run flow=0 responder=r:0 delay=0ns qps=2 verb=write",
		"h2 Run flow=1 responder=r:1 delay=50000ns qps=1 verb=write",
		"r Run flow=2 responder=h1:0 delay=0ns qps=1 verb=read",
		"h1 Serve listen=generator:0",
		"r Serve listen=generator:0",
		"r Serve listen=generator:0",
		"r StallRx start=5000ns duration=7000ns",
		"switch SchedulePauses port=2 priority=3 quanta=100 start=10µs",
	}
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls\n got %q\nwant %q", got, want)
	}
	run := d.run
	var conns []string
	for _, c := range run.Connections {
		conns = append(conns, fmt.Sprintf("%d:%#x", c.Index, c.Responder.QPN))
	}
	if want := "0:0x200 1:0x201 2:0x400 3:0x600"; strings.Join(conns, " ") != want {
		t.Errorf("run connections %s, want %s", strings.Join(conns, " "), want)
	}
	g := run.Generator
	if g == nil || g.Bytes != 4000 || g.DurationNs != 3000 || len(g.QPs) != 4 || g.QPs[3].Index != 3 || g.Verb != "" || !g.Responder.Verified {
		t.Errorf("run generator %+v, want 4000 bytes over 3000 ns, QPs 0..3, mixed verb, verified", g)
	}
	if len(run.Flows) != 3 || run.Flows[1].Name != "b" || run.Flows[1].Result.Bytes != 1000 {
		t.Errorf("run flows %+v", run.Flows)
	}
}

// TestDriverTrafficFlowFails: on a real-time testbed (the intake holds
// every flow until the plan is in place), a flow whose Run fails fails the
// traffic phase naming the flow, and releases the flows waiting at the
// intake with its error.
func TestDriverTrafficFlowFails(t *testing.T) {
	tc := threeHosts()
	boom := errors.New("boom")
	d, _ := fakeDriver(t, tc, map[string]*fakeGen{"h2": {runErr: map[uint32]error{1: boom}}})
	d.pl.realTime = true
	ctx := context.Background()
	if err := d.startNICs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.serveResponders(ctx); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- d.intake.report(ctx, 0, make([]generator.Connection, 2)) }()
	err := d.traffic(ctx)
	if err == nil || !strings.Contains(err.Error(), "flow b requester: ") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("traffic with flow b failing = %v, want an error naming flow b's requester", err)
	}
	select {
	case werr := <-waiting:
		if werr == nil || !strings.Contains(werr.Error(), "boom") {
			t.Errorf("flow a at the intake got %v, want flow b's error", werr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("flow a still waits at the intake after flow b failed")
	}
}

// TestIntakeBarrier: the plan is installed once, when every flow has
// reported, with the connections in flow order numbered globally; a flow
// reporting the wrong number of connections, twice, or a flow index out of
// range fails every flow.
func TestIntakeBarrier(t *testing.T) {
	tc := threeHosts()
	conns := func(f, n int) []generator.Connection {
		var out []generator.Connection
		for q := range n {
			out = append(out, generator.Connection{Index: q, Requester: generator.Endpoint{QPN: uint32(0x10*f + q)}})
		}
		return out
	}
	t.Run("all report", func(t *testing.T) {
		var installs [][]string
		var mu sync.Mutex
		b := newIntakeBarrier(tc, true, func(_ context.Context, cs []generator.Connection) error {
			var s []string
			for _, c := range cs {
				s = append(s, fmt.Sprintf("%d:%#x", c.Index, c.Requester.QPN))
			}
			mu.Lock()
			installs = append(installs, s)
			mu.Unlock()
			return nil
		})
		errs := make(chan error, 3)
		for _, f := range []int{2, 0, 1} { // in any order
			go func() { errs <- b.report(context.Background(), f, conns(f, tc.Flows[f].NumQPs)) }()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Errorf("report = %v", err)
			}
		}
		if want := [][]string{{"0:0x0", "1:0x1", "2:0x10", "3:0x20"}}; !reflect.DeepEqual(installs, want) {
			t.Errorf("installs %q, want %q", installs, want)
		}
	})
	// Without hold (sim: the flows set up in turn), the first flows'
	// calls return at once and the last one's after the install, with
	// its error.
	t.Run("no hold", func(t *testing.T) {
		var installs int
		b := newIntakeBarrier(tc, false, func(context.Context, []generator.Connection) error { installs++; return errors.New("no room") })
		for f := range 2 {
			if err := b.report(context.Background(), f, conns(f, tc.Flows[f].NumQPs)); err != nil || installs != 0 {
				t.Fatalf("report(%d) = %v after %d installs, want nil before any", f, err, installs)
			}
		}
		if err := b.report(context.Background(), 2, conns(2, 1)); err == nil || err.Error() != "no room" || installs != 1 {
			t.Errorf("last report = %v after %d installs, want the install's error after 1", err, installs)
		}
	})
	for _, tt := range []struct {
		name  string
		flow  int
		conns []generator.Connection
		want  string
	}{
		{"wrong count", 1, conns(1, 2), "intake: flow b reported 2 connections, want 1"},
		{"no such flow", 3, conns(3, 1), "intake: flow 3: the test has 3 flows"},
		{"twice", 0, conns(0, 2), "intake: flow a reported its connections twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			installed := false
			b := newIntakeBarrier(tc, true, func(context.Context, []generator.Connection) error { installed = true; return nil })
			waiting := make(chan error, 1)
			go func() { waiting <- b.report(context.Background(), 0, conns(0, 2)) }()
			if tt.name == "twice" {
				for !b.reported(0) {
					time.Sleep(time.Millisecond)
				}
			}
			if err := b.report(context.Background(), tt.flow, tt.conns); err == nil || err.Error() != tt.want {
				t.Errorf("report(%d) = %v, want %q", tt.flow, err, tt.want)
			}
			if err := <-waiting; err == nil || err.Error() != tt.want {
				t.Errorf("flow a's report = %v, want %q", err, tt.want)
			}
			if installed {
				t.Error("the plan was installed")
			}
		})
	}
}

// TestSeedsJSON: report.json's seeds keep the two-host form's flat keys
// and put any other hosts' under "hosts" (a host may be named "test" or
// "switch"); both read back.
func TestSeedsJSON(t *testing.T) {
	tests := []struct {
		seeds Seeds
		json  string
	}{
		{Seeds{Test: 1, Switch: 2, Hosts: map[string]uint64{"responder": 4, "requester": 3}},
			`{"test":1,"switch":2,"requester":3,"responder":4}`},
		{Seeds{Test: 1, Switch: 2, Hosts: map[string]uint64{"test": 5, "switch": 6, "h1": 7}},
			`{"test":1,"switch":2,"hosts":{"h1":7,"switch":6,"test":5}}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.seeds)
		if err != nil || string(b) != tt.json {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", tt.seeds, b, err, tt.json)
		}
		var back Seeds
		if err := json.Unmarshal([]byte(tt.json), &back); err != nil || !reflect.DeepEqual(back, tt.seeds) {
			t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", tt.json, back, err, tt.seeds)
		}
	}
}

// TestHostSeeds: the first two hosts keep the two-host form's seeds; the
// others' differ from each other in about half their bits (derived
// through a finalizer, not seedFor's last-character difference).
func TestHostSeeds(t *testing.T) {
	tc := &config.Test{Seed: 8}
	if hostSeed(tc, 3, 0) != seedFor(tc, 3, "requester") || hostSeed(tc, 3, 1) != seedFor(tc, 3, "responder") {
		t.Error("the first two hosts' seeds are not the two-host form's")
	}
	for i := 2; i < 64; i++ {
		if d := bits.OnesCount64(hostSeed(tc, 0, i) ^ hostSeed(tc, 0, i+1)); d < 16 || d > 48 {
			t.Errorf("hostSeed(%d) and hostSeed(%d) differ in %d bits, want 16..48", i, i+1, d)
		}
	}
}
