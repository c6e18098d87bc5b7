package agent

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/sim"
)

// TestInjectorStartOnce: a second Injector.Start, after the first or
// while it is in progress, is refused (FailedPrecondition) and leaves the
// first switch running.
func TestInjectorStartOnce(t *testing.T) {
	b := &flowBed{loop: sim.NewEventLoop()}
	network := sim.NewNetwork(b.loop)
	_, p := network.NewLink(sim.LinkConfig{Name: "h0", BandwidthBps: 100e9})
	a := &Agent{Env: &flowEnv{b: b, port: p}}
	t.Cleanup(a.Close)
	req := &luminav1.InjectorStartRequest{Ports: map[uint32]string{1: "h0"}, P4RuntimeAddr: "p4rt"}
	if _, err := a.injectorStart(req); err != nil {
		t.Fatalf("first Start: %v", err)
	}
	sw := a.sw
	req.P4RuntimeAddr = "p4rt-2"
	if _, err := a.injectorStart(req); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("second Start = %v, want FailedPrecondition", err)
	}
	if a.sw != sw {
		t.Error("second Start replaced the running switch")
	}

	c := &Agent{Env: &flowEnv{b: b, port: p}}
	t.Cleanup(c.Close)
	if !c.begin("injector", func() bool { return false }) {
		t.Fatal("begin on a fresh agent = false")
	}
	if _, err := c.injectorStart(req); status.Code(err) != codes.FailedPrecondition || c.sw != nil {
		t.Errorf("Start while one is in progress = %v (switch %v), want FailedPrecondition and none", err, c.sw)
	}
	c.end("injector")
	if _, err := c.injectorStart(req); err != nil {
		t.Errorf("Start after the other ended: %v", err)
	}
}
