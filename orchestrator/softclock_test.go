package orchestrator

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/sim"
)

// TestRemoteSlowdownRefused: the remote testbed's slowdown is for
// lumina's software components only; with the hosts' NICs (verbs) or a
// Tofino's pipeline, or out of range, the testbed refuses it before
// anything starts, and netns refuses it in favour of its netns-slowdown.
func TestRemoteSlowdownRefused(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ro   RemoteOptions
		want string // "" accepted
	}{
		{RemoteOptions{Slowdown: 1000, RNIC: "softrnic"}, ""},
		{RemoteOptions{Slowdown: 1}, ""},
		{RemoteOptions{Slowdown: 1000}, "slowdown 1000 needs the software RNIC (--rnic softrnic): the hosts' NICs (--rnic verbs) run in real time"},
		{RemoteOptions{Slowdown: 2, RNIC: "verbs"}, "(--rnic verbs) run in real time"},
		{RemoteOptions{Slowdown: 10, RNIC: "softrnic", P4Info: "p4info.txt"}, "slowdown 10 needs lumina's software switch: a Tofino (--p4info, --device-config) runs in real time"},
		{RemoteOptions{Slowdown: 10, RNIC: "softrnic", DeviceConfig: "dc.bin"}, "a Tofino (--p4info, --device-config) runs in real time"},
		{RemoteOptions{Slowdown: config.MaxNetnsSlowdown + 1, RNIC: "softrnic"}, "remote: slowdown 10001 (1..10000)"},
	} {
		tc.ro.TokenFile, tc.ro.CertDir = token, dir
		tb, err := newRemoteBed(tc.ro)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.ro, err)
				continue
			}
			tb.close()
			continue
		}
		if err == nil || !errors.Is(err, ErrTestbed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrTestbed with %q", tc.ro, err, tc.want)
		}
	}
	tc, err := config.Load("../examples/pause-reaction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tc.Testbed = config.TestbedNetns
	_, err = newTestbed(tc, Options{Remote: RemoteOptions{Slowdown: 1000}})
	if err == nil || !errors.Is(err, ErrTestbed) || !strings.Contains(err.Error(), "netns: slowdown 1000 is the remote testbed's (lumina run --slowdown); on netns the test's netns-slowdown sets it") {
		t.Errorf("netns with a remote slowdown: %v", err)
	}
}

// p4rtCaps is a P4Runtime target that is not lumina's: its Capabilities
// states no slowdown, or fails.
type p4rtCaps struct {
	p4v1.UnimplementedP4RuntimeServer
	fail bool
}

func (s p4rtCaps) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	if s.fail {
		return nil, errors.New("no capabilities here")
	}
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: "1.3.0"}, nil
}

// serveP4RT serves srv's P4Runtime on loopback until the test ends and
// returns its address.
func serveP4RT(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}

// TestCheckSwitchClock: the switch's clock, as `lumina injector` states it
// on Capabilities, must be the run's: a slowed run needs a switch slowed
// as much, and a switch that states nothing (a Tofino) or fails
// Capabilities runs in real time, which only a real-time run accepts.
func TestCheckSwitchClock(t *testing.T) {
	lumina := func(k int64) string {
		loop := sim.NewRealLoopSlow(k) // never started: Capabilities reads its slowdown only
		t.Cleanup(loop.Close)
		return serveP4RT(t, func(g *grpc.Server) { injector.NewServer(injector.New(loop, injector.Config{}), 0).Register(g) })
	}
	slow, real := lumina(1000), lumina(1)
	virtual := serveP4RT(t, func(g *grpc.Server) {
		injector.NewServer(injector.New(sim.NewEventLoop(), injector.Config{}), 0).Register(g)
	})
	tofino := serveP4RT(t, func(g *grpc.Server) { p4v1.RegisterP4RuntimeServer(g, p4rtCaps{}) })
	failing := serveP4RT(t, func(g *grpc.Server) { p4v1.RegisterP4RuntimeServer(g, p4rtCaps{fail: true}) })
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	for _, tc := range []struct {
		name, addr string
		want       int64
		err        string // "" accepted
	}{
		{"slowed injector, slowed run", slow, 1000, ""},
		{"real-time injector, real-time run", real, 1, ""},
		{"virtual-clock injector, real-time run", virtual, 1, ""},
		{"tofino, real-time run", tofino, 1, ""},
		{"failing capabilities, real-time run", failing, 1, ""},
		{"slowed injector, other slowdown", slow, 500, "runs its clock 1000× slower than the wall clock (lumina injector --slowdown 1000), this run 500×"},
		{"slowed injector, real-time run", slow, 1, "give lumina run --slowdown 1000 (with --rnic softrnic) or restart the injector with --slowdown 1"},
		{"real-time injector, slowed run", real, 1000, "runs its clock 1× slower than the wall clock (lumina injector --slowdown 1), this run 1000×"},
		{"tofino, slowed run", tofino, 1000, "must be `lumina injector --slowdown 1000`, but it states no slowdown (a Tofino, or not lumina's software switch): it runs in real time"},
		{"failing capabilities, slowed run", failing, 1000, "but its Capabilities failed (rpc error: code = Unknown desc = no capabilities here): lumina cannot tell that it runs slowed"},
	} {
		err := checkSwitchClock(context.Background(), tc.addr, dial, tc.want)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrTestbed) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want ErrTestbed with %q", tc.name, err, tc.err)
		}
	}
}
