package agent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/memnet"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/sim"
)

// flowBed is the sim testbed in miniature: agents on one virtual clock,
// their RNICs linked through a switch that forwards by destination MAC
// and records every frame it receives, gRPC and control connections in
// memory, and an intake that records what the requesters report.
type flowBed struct {
	loop   *sim.EventLoop
	mu     sync.Mutex
	net    memnet.Network
	flows  *SimFlows
	agents []*Agent
	frames []frame // received by the switch, in order

	imu      sync.Mutex
	installs map[uint32][]generator.Connection
}

// frame is one frame at the switch: its time on the clock, its sender
// and its bytes.
type frame struct {
	t    int64
	from int
	b    []byte
}

// flowEnv is one flowBed agent's Env (the sim testbed's simEnv).
type flowEnv struct {
	b    *flowBed
	port sim.Port
}

func (e *flowEnv) Loop(int64) (sim.Loop, generator.Exec, func()) {
	return e.b.loop, e.b.exec, func() {}
}
func (e *flowEnv) Port(string, sim.Loop) (sim.Port, func(), error) {
	return e.port, func() {}, nil
}
func (e *flowEnv) Listen(addr string) (net.Listener, error) { return e.b.net.Listen(addr) }
func (e *flowEnv) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return e.b.net.Dial(ctx, addr)
}
func (e *flowEnv) GRPC(addr string, _ []byte, _ string) (*grpc.ClientConn, error) {
	return e.b.net.GRPC(addr)
}
func (e *flowEnv) SetUp(ctx context.Context, i int) error { return e.b.flows.SetUp(ctx, i) }
func (e *flowEnv) Abandon(i int)                          { e.b.flows.Abandon(i) }
func (e *flowEnv) Traffic(ctx context.Context, _ sim.Loop, f Flow) string {
	return e.b.flows.Traffic(ctx, f)
}

func (b *flowBed) exec(fn func()) { b.mu.Lock(); defer b.mu.Unlock(); fn() }

type recordingIntake struct {
	luminav1.UnimplementedIntakeServer
	b *flowBed
}

func (r recordingIntake) Install(_ context.Context, req *luminav1.InstallRequest) (*luminav1.InstallResponse, error) {
	cs, err := ConnectionsFromProto(req.GetConnections())
	if err != nil {
		return nil, err
	}
	r.b.imu.Lock()
	defer r.b.imu.Unlock()
	if _, dup := r.b.installs[req.GetFlow()]; dup {
		return nil, fmt.Errorf("flow %d installed twice", req.GetFlow())
	}
	r.b.installs[req.GetFlow()] = cs
	return &luminav1.InstallResponse{}, nil
}

func hostMAC(h int) [6]byte { return [6]byte{2, 0, 0, 0, 0, byte(h + 1)} }

func hostIP(h int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(h + 1)}) }

// newFlowBed starts hosts agents with a software RNIC each and the intake.
func newFlowBed(t *testing.T, hosts int) *flowBed {
	t.Helper()
	b := &flowBed{loop: sim.NewEventLoop(), installs: map[uint32][]generator.Connection{}}
	b.flows = NewSimFlows(b.loop, b.exec)
	network := sim.NewNetwork(b.loop)
	sw := make([]sim.Port, hosts)
	for h := range hosts {
		host, p := network.NewLink(sim.LinkConfig{Name: fmt.Sprintf("h%d", h), BandwidthBps: 100e9})
		sw[h] = p
		a := &Agent{Env: &flowEnv{b: b, port: host}}
		t.Cleanup(a.Close)
		b.agents = append(b.agents, a)
		spec := NICSpec{Interface: "eth0", RNIC: softrnic.Config{Name: fmt.Sprintf("h%d", h), MAC: hostMAC(h),
			IPs: []netip.Addr{hostIP(h)}, Seed: uint64(100 + h)}}
		if _, err := (generatorSvc{Agent: a}).StartNIC(context.Background(), &luminav1.StartNICRequest{Nic: NICSpecToProto(spec)}); err != nil {
			t.Fatalf("h%d: StartNIC: %v", h, err)
		}
	}
	for h, p := range sw {
		p.SetReceiver(func(fr []byte) {
			b.frames = append(b.frames, frame{t: b.loop.Now(), from: h, b: bytes.Clone(fr)})
			for o := range hosts {
				if m := hostMAC(o); bytes.Equal(fr[:6], m[:]) {
					sw[o].Send(fr)
				}
			}
		})
	}
	g := grpc.NewServer()
	luminav1.RegisterIntakeServer(g, recordingIntake{b: b})
	ln, err := b.net.Listen("intake")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return b
}

// testFlow is one flow of a flowBed run.
type testFlow struct {
	from, to int
	delay    time.Duration
	tr       generator.Traffic
}

// flowOutcome is what a run of flows produced.
type flowOutcome struct {
	results  []*generator.Result
	installs map[uint32][]generator.Connection
	frames   []frame
}

// runFlows serves every flow's responder, then issues the flows' Run
// calls in the order given, each in its own goroutine and each a while
// after the one before (so that they reach the agents in that order),
// and returns when all have returned.
func runFlows(t *testing.T, flows []testFlow, order []int) flowOutcome {
	t.Helper()
	hosts := 0
	for _, f := range flows {
		hosts = max(hosts, f.from+1, f.to+1)
	}
	b := newFlowBed(t, hosts)
	b.flows.Expect(len(flows))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addrs := make([]string, len(flows))
	tokens := make([]string, len(flows))
	for i, f := range flows {
		tokens[i] = fmt.Sprintf("flow-%d-secret-0123456789", i)
		sr, err := (generatorSvc{Agent: b.agents[f.to]}).Serve(ctx, &luminav1.ServeRequest{ListenAddr: fmt.Sprintf("rsp-%d", i), Token: tokens[i]})
		if err != nil {
			t.Fatalf("flow %d: Serve: %v", i, err)
		}
		addrs[i] = sr.GetAddr()
	}
	out := flowOutcome{results: make([]*generator.Result, len(flows))}
	var wg sync.WaitGroup
	for _, i := range order {
		f := flows[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr, err := (generatorSvc{Agent: b.agents[f.from]}).Run(ctx, &luminav1.RunRequest{Traffic: TrafficToProto(f.tr),
				ResponderAddr: addrs[i], IntakeAddr: "intake", DeadlineNs: int64(time.Second), ResponderToken: tokens[i],
				Flow: uint32(i), StartDelayNs: int64(f.delay)})
			if err != nil {
				t.Errorf("flow %d: Run: %v", i, err)
				return
			}
			if rr.GetStopped() != "" {
				t.Errorf("flow %d: stopped: %s", i, rr.GetStopped())
			}
			res, err := ResultFromProto(rr.GetResult())
			if err != nil {
				t.Errorf("flow %d: %v", i, err)
				return
			}
			out.results[i] = &res
		}()
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	out.installs, out.frames = b.installs, b.frames
	return out
}

// TestAgentFlowsDeterministic (#30): three hosts on one virtual clock;
// h0 is requester of two flows (to h1 and, 3 µs later, to h2) and
// responder of two (from h2 and from h1: Serve twice on one agent). Every
// flow completes every message with its bytes verified; each intake call
// carries its flow index and that flow's connections; and two runs whose
// Run calls reach the agents in opposite orders give the same results
// (bytes, durations, completion times, QPNs and PSNs) and the same frames
// at the same instants.
func TestAgentFlowsDeterministic(t *testing.T) {
	flows := []testFlow{
		{from: 0, to: 1, tr: generator.Traffic{Verb: generator.VerbWrite, NumQPs: 2, MsgsPerQP: 4, MsgSize: new(8192), TxDepth: 2}},
		{from: 0, to: 2, delay: 3 * time.Microsecond, tr: generator.Traffic{Verb: generator.VerbSend, NumQPs: 1, MsgsPerQP: 5, MsgSize: new(4096)}},
		{from: 2, to: 0, tr: generator.Traffic{Verb: generator.VerbRead, NumQPs: 1, MsgsPerQP: 3, MsgSize: new(16384)}},
		{from: 1, to: 0, tr: generator.Traffic{Verb: generator.VerbWrite, NumQPs: 1, MsgsPerQP: 2, MsgSize: new(2048), WithImm: true}},
	}
	recvs := []int{0, 5, 0, 2} // the responder's receive completions
	a := runFlows(t, flows, []int{0, 1, 2, 3})
	if t.Failed() {
		t.FailNow()
	}
	for i, f := range flows {
		res := a.results[i]
		want := int64(f.tr.NumQPs * f.tr.MsgsPerQP * *f.tr.MsgSize)
		if res.Bytes != want || len(res.Errors) != 0 {
			t.Errorf("flow %d: %d bytes, errors %v; want %d bytes, none", i, res.Bytes, res.Errors, want)
		}
		for _, q := range res.QPs {
			if q.Posted != f.tr.MsgsPerQP || q.Completed != f.tr.MsgsPerQP || len(q.MCTNs) != f.tr.MsgsPerQP {
				t.Errorf("flow %d QP %d: posted %d, completed %d, %d MCTs; want %d each", i, q.Index, q.Posted, q.Completed, len(q.MCTNs), f.tr.MsgsPerQP)
			}
		}
		if r := res.Responder; r == nil || !r.Verified || r.RecvCompletions != recvs[i] || r.RecvErrors != 0 {
			t.Errorf("flow %d: responder %+v, want verified with %d receive completions", i, r, recvs[i])
		}
		cs := a.installs[uint32(i)]
		if len(cs) != f.tr.NumQPs || !reflect.DeepEqual(cs, res.Connections) {
			t.Errorf("flow %d: intake got %+v, want the result's %d connections %+v", i, cs, f.tr.NumQPs, res.Connections)
		}
		for _, c := range cs {
			if c.Requester.IP != hostIP(f.from) || c.Responder.IP != hostIP(f.to) {
				t.Errorf("flow %d: connection %s → %s, want %v → %v", i, c.Requester.IP, c.Responder.IP, hostIP(f.from), hostIP(f.to))
			}
		}
	}
	b := runFlows(t, flows, []int{3, 2, 1, 0})
	for i := range flows {
		if !reflect.DeepEqual(a.results[i], b.results[i]) {
			t.Errorf("flow %d: results differ with the Run calls in the opposite order:\n%+v\n%+v", i, a.results[i], b.results[i])
		}
	}
	if len(a.frames) != len(b.frames) {
		t.Fatalf("%d frames, then %d with the Run calls in the opposite order", len(a.frames), len(b.frames))
	}
	for k := range a.frames {
		if x, y := a.frames[k], b.frames[k]; x.t != y.t || x.from != y.from || !bytes.Equal(x.b, y.b) {
			t.Fatalf("frame %d differs with the Run calls in the opposite order: at %d from h%d, then at %d from h%d", k, x.t, x.from, y.t, y.from)
		}
	}
}

// TestAgentFlowStartDelay: start_delay_ns delays a flow's first frame, and
// every frame after it, by exactly that much on the virtual clock; the
// result, counted from the flow's own start, is the same.
func TestAgentFlowStartDelay(t *testing.T) {
	const delay = 7300 * time.Nanosecond
	f := testFlow{from: 0, to: 1, tr: generator.Traffic{Verb: generator.VerbWrite, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(4096)}}
	now := runFlows(t, []testFlow{f}, []int{0})
	f.delay = delay
	later := runFlows(t, []testFlow{f}, []int{0})
	if t.Failed() {
		t.FailNow()
	}
	if len(now.frames) == 0 || len(now.frames) != len(later.frames) {
		t.Fatalf("%d frames without a delay, %d with", len(now.frames), len(later.frames))
	}
	for k := range now.frames {
		x, y := now.frames[k], later.frames[k]
		if y.t-x.t != int64(delay) || !bytes.Equal(x.b, y.b) {
			t.Fatalf("frame %d at %d ns with start_delay_ns %d, at %d ns without; want the same frame exactly %d ns later", k, y.t, delay, x.t, delay)
		}
	}
	if !reflect.DeepEqual(now.results[0], later.results[0]) {
		t.Errorf("results differ with a start delay:\n%+v\n%+v", now.results[0], later.results[0])
	}
}

// TestSimFlowsRejects: a flow index outside the run, a flow set up twice,
// and traffic without a set-up are errors, not hangs.
func TestSimFlowsRejects(t *testing.T) {
	var mu sync.Mutex
	s := NewSimFlows(sim.NewEventLoop(), func(fn func()) { mu.Lock(); defer mu.Unlock(); fn() })
	s.Expect(2)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  func() string
		want string
	}{
		{"index past the run", func() string { return errString(s.SetUp(ctx, 2)) }, "flow 2 of a run of 2 flows"},
		{"negative index", func() string { return errString(s.SetUp(ctx, -1)) }, "flow -1 of a run of 2 flows"},
		{"first set-up", func() string { return errString(s.SetUp(ctx, 0)) }, ""},
		{"second set-up", func() string { return errString(s.SetUp(ctx, 0)) }, "flow 0 is already running"},
		{"traffic without set-up", func() string { return s.Traffic(ctx, Flow{Index: 1}) }, "flow 1: traffic without its set-up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestSimFlowsAbandon: a flow whose set-up failed does not hold up the
// others: the flow after it sets up, and the run starts without it.
func TestSimFlowsAbandon(t *testing.T) {
	var mu sync.Mutex
	loop := sim.NewEventLoop()
	s := NewSimFlows(loop, func(fn func()) { mu.Lock(); defer mu.Unlock(); fn() })
	s.Expect(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var started []int
	done := make(chan struct{})
	close(done)
	res := make(chan string, 2)
	for _, i := range []int{2, 1} {
		go func() {
			if err := s.SetUp(ctx, i); err != nil {
				res <- err.Error()
				return
			}
			if i == 1 {
				s.Abandon(1)
				res <- "abandoned"
				return
			}
			res <- s.Traffic(ctx, Flow{Index: i, Start: func() { started = append(started, i) }, Done: done, Limit: time.Second})
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.SetUp(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := []string{s.Traffic(ctx, Flow{Index: 0, Start: func() { started = append(started, 0) }, Done: done, Limit: time.Second}), <-res, <-res}
	slices.Sort(got)
	if want := []string{"", "", "abandoned"}; !slices.Equal(got, want) || !slices.Equal(started, []int{0, 2}) {
		t.Errorf("verdicts %q, started %v; want %q and flows 0 and 2 started in that order", got, started, want)
	}
	if got := s.Traffic(ctx, Flow{Index: 0}); !strings.Contains(got, "without its set-up") {
		t.Errorf("after the run, traffic of flow 0 without a new set-up: %q", got)
	}
}

// TestSimFlowsLinger: with Linger the clock stops exactly the linger after
// the last flow's requester is done, events (a switch's PFC refreshes)
// firing all along, and each flow's verdict is as without it (one done in
// time, one past its limit); without Linger the same run goes on until the
// last limit, as before.
func TestSimFlowsLinger(t *testing.T) {
	const (
		tick   = 10 * time.Microsecond // a timer that never stops firing
		doneAt = 1234 * time.Microsecond
		limit  = 50 * time.Millisecond
		slow   = 3 * time.Millisecond // the second flow's limit: it never ends
	)
	for _, tc := range []struct {
		name   string
		linger time.Duration
		// wantNow is the clock when the run ends; wantLast the last tick.
		wantNow, wantLast int64
	}{
		{"linger 5 ms", 5 * time.Millisecond, int64(slow + 5*time.Millisecond), int64(slow + 5*time.Millisecond)},
		{"no linger", 0, int64(limit), int64(limit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			loop := sim.NewEventLoop()
			s := NewSimFlows(loop, func(fn func()) { mu.Lock(); defer mu.Unlock(); fn() })
			s.Expect(2)
			s.Linger(tc.linger)
			var last int64
			var refresh func()
			refresh = func() { last = loop.Now(); loop.AfterFunc(tick, refresh) }
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done0, never := make(chan struct{}), make(chan struct{})
			res := make(chan string, 1)
			go func() {
				if err := s.SetUp(ctx, 1); err != nil {
					res <- err.Error()
					return
				}
				res <- s.Traffic(ctx, Flow{Index: 1, Start: func() {}, Done: never, Limit: slow})
			}()
			if err := s.SetUp(ctx, 0); err != nil {
				t.Fatal(err)
			}
			got0 := s.Traffic(ctx, Flow{Index: 0, Limit: limit, Done: done0, Start: func() {
				refresh()
				loop.AfterFunc(doneAt, func() { close(done0) })
			}})
			got1 := <-res
			if got0 != "" || got1 != "traffic did not complete within 3ms of virtual time" {
				t.Errorf("verdicts %q, %q; want \"\" and the second flow's limit", got0, got1)
			}
			if now := loop.Now(); now != tc.wantNow || last != tc.wantLast {
				t.Errorf("clock %d ns, last tick %d ns; want %d and %d", now, last, tc.wantNow, tc.wantLast)
			}
		})
	}
}
