package agent

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/generator/softrnic"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// TestStartNICVerbsRefusesSlowdown: a hardware NIC's timers, pauses and
// line rate run in real time, so an agent refuses a slowdown for it
// before touching the device (the orchestrator refuses it first:
// orchestrator.RemoteOptions.Slowdown).
func TestStartNICVerbsRefusesSlowdown(t *testing.T) {
	a := &Agent{}
	t.Cleanup(a.Close)
	spec := NICSpec{Backend: "verbs", Interface: "eth0", RNIC: softrnic.Config{Name: "h0", MAC: hostMAC(0), IPs: []netip.Addr{hostIP(0)}}}
	_, err := (generatorSvc{Agent: a}).StartNIC(context.Background(), &luminav1.StartNICRequest{Nic: NICSpecToProto(spec), Slowdown: 1000})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "slowdown 1000: a verbs NIC runs in real time") {
		t.Fatalf("StartNIC verbs with slowdown 1000: %v", err)
	}
	if a.dev != nil {
		t.Error("an RNIC was started")
	}
}
