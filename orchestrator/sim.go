package orchestrator

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/memnet"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/sim"
)

// simBed is the sim testbed: every component is an agent in this process,
// on one virtual clock, with sim links between the hosts and the switch.
// The driver reaches the agents, the P4Runtime server and the Intake
// service through the same gRPC services as on the other testbeds, over
// an in-memory network that no other process can reach; the generator's
// control connection crosses it too.
type simBed struct {
	loop *sim.EventLoop
	// mu serializes calls into components (control goroutines) with the
	// event loop, which runs under it.
	mu  sync.Mutex
	net memnet.Network
	// serverOpts are the agents' gRPC server options (tests intercept
	// with them). Default none.
	serverOpts []grpc.ServerOption
	work       string
	agents     []*agent.Agent
	servers    []*grpc.Server
	conns      []*grpc.ClientConn
	// flows sequences the run's flows on the loop (set-up in flow order,
	// one start for all, one goroutine driving the clock): every agent's
	// Run goes through it.
	flows *agent.SimFlows
}

func newSimBed() *simBed {
	b := &simBed{loop: sim.NewEventLoop()}
	b.flows = agent.NewSimFlows(b.loop, b.exec)
	return b
}

func (b *simBed) exec(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn()
}

func (b *simBed) place(ctx context.Context, run *Run, progress func(string)) (*placement, error) {
	t := run.Test
	progress("sim: agents in this process on one virtual clock, gRPC in memory")
	b.flows.Expect(len(t.Flows))
	work, err := os.MkdirTemp("", "lumina-sim-")
	if err != nil {
		return nil, errorf("sim: %w", err)
	}
	b.work = work
	network := sim.NewNetwork(b.loop)
	link := func(name string, gbps float64) (host, sw sim.Port) {
		return network.NewLink(sim.LinkConfig{Name: name, BandwidthBps: int64(gbps * 1e9)})
	}
	fb := run.fabric
	pl := &placement{switchIfaces: map[uint32]string{}, p4rtListen: "p4runtime", rnic: "softrnic", localDumperFiles: true}
	// A sim link and an agent per host: the link named after the host,
	// the switch's interface p<i+1>.
	swPorts := map[string]sim.Port{}
	hostEnds := make([]sim.Port, len(t.Hosts))
	for i, h := range t.Hosts {
		rate := run.Personality[h.Name].LineRateGbps
		host, sw := link(h.Name, rate)
		if fb != nil {
			// A fabric's host cable takes its links entry's gbps and delay-ns.
			host, sw = network.NewLink(fb.hosts[i].simLink(h.Name, rate))
		}
		p := "p" + strconv.Itoa(i+1)
		swPorts[p], hostEnds[i] = sw, host
		pl.switchIfaces[hostPort(i)] = p
	}
	if fb != nil {
		// Each switch-to-switch link is a sim link between two ports of
		// the one software switch (its logical switches' ports).
		for l, sl := range fb.links {
			a, z := network.NewLink(sl.simLink(fb.switches[sl.sw[0]]+"-"+fb.switches[sl.sw[1]]+"-"+strconv.Itoa(l), run.lineGbps()))
			for end, p := range []sim.Port{a, z} {
				swPorts[linkIface(l, end)] = p
				pl.switchIfaces[sl.ports[end]] = linkIface(l, end)
			}
		}
	}
	// deadlock-ms: the switches run on that long after the last flow.
	b.flows.Linger(run.deadlockWindow())
	for i := range t.Hosts {
		c, err := b.start(agentName(t, i), map[string]sim.Port{"eth0": hostEnds[i]})
		if err != nil {
			return nil, err
		}
		pl.hosts = append(pl.hosts, c)
		pl.hostPorts = append(pl.hostPorts, hostPort(i))
		pl.hostIfaces = append(pl.hostIfaces, "eth0")
	}
	for range t.Flows {
		pl.responderListen = append(pl.responderListen, "generator:0")
	}
	for i, d := range t.Dumpers {
		host, sw := link(d.Name, 400)
		p := "pd" + strconv.Itoa(i)
		swPorts[p] = sw
		pl.switchIfaces[uint32(portDumper0+i)] = p
		c, err := b.start("dumper"+strconv.Itoa(i), map[string]sim.Port{"eth0": host})
		if err != nil {
			return nil, err
		}
		pl.dumpers = append(pl.dumpers, c)
		pl.dumperPorts = append(pl.dumperPorts, uint32(portDumper0+i))
		pl.dumperIfaces = append(pl.dumperIfaces, "eth0")
		pl.dumperPaths = append(pl.dumperPaths, filepath.Join(work, "dumper"+strconv.Itoa(i)+"-"+d.DumpFilename))
	}
	if pl.injector, err = b.start("switch", swPorts); err != nil {
		return nil, err
	}
	pl.p4rtDial = b.net.DialOptions()
	if pl.intake, err = b.net.Listen("intake"); err != nil {
		return nil, err
	}
	pl.intakeAddr = pl.intake.Addr().String()
	return pl, nil
}

// agentName names host i's agent (sim) or namespace (netns): the host's
// name in the two-host form ("requester", "responder"), host-<name> in the
// hosts form (no host name collides with the switch's or a dumper's).
func agentName(t *config.Test, i int) string {
	if !t.HostsForm {
		return t.Hosts[i].Name
	}
	return "host-" + t.Hosts[i].Name
}

// start starts an agent whose data interfaces are ports and serves its
// services on the in-memory network under name.
func (b *simBed) start(name string, ports map[string]sim.Port) (*grpc.ClientConn, error) {
	a := &agent.Agent{Env: &simEnv{bed: b, ports: ports}}
	b.agents = append(b.agents, a)
	g := grpc.NewServer(b.serverOpts...)
	a.Register(g)
	b.servers = append(b.servers, g)
	ln, err := b.net.Listen(name)
	if err != nil {
		return nil, err
	}
	go agent.ServeGRPC(g, ln, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "lumina: sim: agent %s: %s\n", name, fmt.Sprintf(format, args...))
	})
	c, err := b.net.GRPC(name)
	if err != nil {
		return nil, err
	}
	b.conns = append(b.conns, c)
	return c, nil
}

func (b *simBed) close() {
	for _, c := range b.conns {
		c.Close()
	}
	for _, g := range b.servers {
		g.Stop()
	}
	for _, a := range b.agents {
		a.Close()
	}
	if b.work != "" {
		os.RemoveAll(b.work)
	}
}

// simEnv is one sim agent's Env: the bed's clock and in-memory network,
// and the agent's own data interfaces.
type simEnv struct {
	bed   *simBed
	ports map[string]sim.Port
}

var _ agent.Env = (*simEnv)(nil)

func (e *simEnv) Loop(int64) (sim.Loop, generator.Exec, func()) {
	return e.bed.loop, e.bed.exec, func() {}
}

func (e *simEnv) Port(name string, _ sim.Loop) (sim.Port, func(), error) {
	p, ok := e.ports[name]
	if !ok {
		return nil, nil, fmt.Errorf("sim: no interface %q on this host", name)
	}
	return p, func() {}, nil
}

func (e *simEnv) Listen(addr string) (net.Listener, error) { return e.bed.net.Listen(addr) }

func (e *simEnv) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return e.bed.net.Dial(ctx, addr)
}

// GRPC implements agent.Env: in memory, in plaintext.
func (e *simEnv) GRPC(addr string, _ []byte, _ string) (*grpc.ClientConn, error) {
	return e.bed.net.GRPC(addr)
}

// SetUp implements agent.Env: the flows set up in flow order (SimFlows).
func (e *simEnv) SetUp(ctx context.Context, index int) error { return e.bed.flows.SetUp(ctx, index) }

// Abandon implements agent.Env.
func (e *simEnv) Abandon(index int) { e.bed.flows.Abandon(index) }

// Traffic implements agent.Env: once every flow of the run is ready, they
// start together in flow order and one goroutine runs the virtual clock
// until nothing is left to do or every flow's limit has passed on it
// (SimFlows).
func (e *simEnv) Traffic(ctx context.Context, _ sim.Loop, f agent.Flow) string {
	return e.bed.flows.Traffic(ctx, f)
}
