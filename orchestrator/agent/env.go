package agent

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/sim"
)

// Env is where an agent's components live: on a machine in real time
// (Real: AF_PACKET interfaces, sockets, wall clock), or inside the sim
// testbed's process on its virtual clock. The services are the same code
// in both; only the Env differs.
type Env interface {
	// Loop returns the loop one component runs on, the Exec that runs a
	// function on it and waits, and a function that releases the loop. On
	// a real clock the loop runs slowdown times slower than the wall clock
	// (sim.NewRealLoopSlow; < 1: 1); the virtual clock ignores it.
	Loop(slowdown int64) (loop sim.Loop, exec generator.Exec, release func())
	// Port opens the data interface name as a port whose frames arrive on
	// loop; close releases it.
	Port(name string, loop sim.Loop) (p sim.Port, close func(), err error)
	// Listen listens on addr ("host:port", or "unix://path").
	Listen(addr string) (net.Listener, error)
	// Dial connects to a listener of Listen.
	Dial(ctx context.Context, addr string) (net.Conn, error)
	// GRPC returns a client connection to addr that trusts exactly the
	// server certificate certPEM and sends token.
	GRPC(addr string, certPEM []byte, token string) (*grpc.ClientConn, error)
	// SetUp waits until flow index of the run may set up its connections.
	// On a virtual clock shared by several agents (SimFlows) flows set up
	// one at a time in flow order, so every RNIC creates its QPs in the
	// same order on every run; a real clock's Env returns at once. After
	// a SetUp that returned nil, call exactly one of Traffic (set-up done)
	// or Abandon (set-up failed).
	SetUp(ctx context.Context, index int) error
	// Abandon ends the set-up of flow index without traffic: the flows
	// after it may set up, and the run does not wait for it.
	Abandon(index int)
	// Traffic starts flow f on loop after f.Delay (on a shared virtual
	// clock: once every flow of the run is ready, in flow order at one
	// instant) and waits until f.Done is closed, f.Limit has passed on
	// loop's clock since the flow's start, or ctx ends, driving the clock
	// if the Env owns it. It returns why the flow stopped early, or "" if
	// f.Done was closed.
	Traffic(ctx context.Context, loop sim.Loop, f Flow) string
}

// Real is the Env of an agent on a machine: one real-time loop per
// component, AF_PACKET ports, TCP or unix sockets, TLS with a pinned
// certificate.
type Real struct{}

var _ Env = Real{}

// Loop implements Env.
func (Real) Loop(slowdown int64) (sim.Loop, generator.Exec, func()) {
	l := sim.NewRealLoopSlow(slowdown)
	l.Start()
	return l, generator.PostAndWait(l.Post), l.Close
}

// Port implements Env.
func (Real) Port(name string, loop sim.Loop) (sim.Port, func(), error) {
	p, err := sim.OpenAFPacket(name, loop)
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.Close() }, nil
}

// Listen implements Env.
func (Real) Listen(addr string) (net.Listener, error) {
	network := "tcp"
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		network, addr = "unix", path
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	return LimitListener(ln, MaxConnsPerListener), nil
}

// Dial implements Env.
func (Real) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		return d.DialContext(ctx, "unix", path)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// GRPC implements Env.
func (Real) GRPC(addr string, certPEM []byte, token string) (*grpc.ClientConn, error) {
	opts, err := DialOptions(certPEM, token)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(addr, opts...)
}

// SetUp implements Env: flows on a real clock set up when they come.
func (Real) SetUp(context.Context, int) error { return nil }

// Abandon implements Env: nothing waits for a flow on a real clock.
func (Real) Abandon(int) {}

// Traffic implements Env: the flow starts on loop's timer after its delay
// (at once without one), and Await waits for it on the wall clock.
func (r Real) Traffic(ctx context.Context, loop sim.Loop, f Flow) string {
	if f.Delay <= 0 {
		generator.PostAndWait(loop.Post)(f.Start)
		return r.Await(ctx, loop, f.Done, f.Limit)
	}
	tm := loop.AfterFunc(f.Delay, f.Start)
	defer tm.Stop() // a flow stopped before its start does not start late
	return r.await(ctx, loop, f.Done, min(f.Delay, time.Duration(1<<62))+min(f.Limit, time.Duration(1<<62)), f.Limit)
}

// Await waits until done is closed, limit has passed on loop's clock (the
// wall clock, limit × the loop's slowdown) or ctx ends. It returns why
// traffic stopped early, or "" if done was closed.
func (r Real) Await(ctx context.Context, loop sim.Loop, done <-chan struct{}, limit time.Duration) string {
	return r.await(ctx, loop, done, limit, limit)
}

// await is Await waiting wait on loop's clock and naming limit.
func (Real) await(ctx context.Context, loop sim.Loop, done <-chan struct{}, wait, limit time.Duration) string {
	wall := wait
	if s, ok := loop.(interface{ Slowdown() int64 }); ok {
		wall = sim.WallTime(wait, s.Slowdown())
	}
	t := time.NewTimer(wall)
	defer t.Stop()
	select {
	case <-done:
		return ""
	case <-t.C:
		return fmt.Sprintf("traffic did not complete within %v", limit)
	case <-ctx.Done():
		return "interrupted: " + ctx.Err().Error()
	}
}
