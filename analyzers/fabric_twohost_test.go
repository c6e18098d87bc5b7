package analyzers

import (
	"context"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
)

// TestFabricTwoHostLossElsewhere: the two-host form on a fabric (hosts
// requester and responder, no Params.Hosts, its one flow named "" as its
// connections are): the routes name the hosts requester and responder,
// whose addresses are the connections' sides, so copies that stop at the
// spine still make the loss checks inconclusive, as in the hosts form
// (TestFabricStuckAtEnd), instead of the observed switch's verdict.
func TestFabricTwoHostLossElsewhere(t *testing.T) {
	conns := tracetest.FlowConns(obsHosts, []tracetest.Flow{{Name: "a", From: "h1", To: "h2", QPs: 1}})
	conns[0].Flow = ""
	fabric, _, _ := fabricTrace(t, conns, "0 1 2 3a", nil, func(i int, cs []*tracetest.Frame) {
		if i >= 2 {
			cs[2] = nil // PSN 2 and 3 stay at the spine
		}
	})
	m := fabricMeta(conns)
	m.Hosts = nil
	m.Fabric.Ports = []model.FabricPort{{Port: 1, Switch: "tor1", Host: "requester"}, {Port: 2, Switch: "tor2", Host: "responder"},
		{Port: 200, Switch: "tor1", PeerSwitch: "spine", PeerPort: 201}, {Port: 201, Switch: "spine", PeerSwitch: "tor1", PeerPort: 200},
		{Port: 202, Switch: "spine", PeerSwitch: "tor2", PeerPort: 203}, {Port: 203, Switch: "tor2", PeerSwitch: "spine", PeerPort: 202}}
	for i := range m.Fabric.Routes {
		r := &m.Fabric.Routes[i]
		r.From, r.To = map[string]string{"h1": "requester", "h2": "responder"}[r.From], map[string]string{"h1": "requester", "h2": "responder"}[r.To]
	}
	m.Fabric.Observe = map[string]string{"": "tor1"}
	r, err := Analyze(context.Background(), Bytes("fabric", fabric), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	why := "connection 0: copies stop matching between spine and tor2 (2 copies at spine never reached tor2, from PSN 2 (RC_RDMA_WRITE_MIDDLE)): packets lost or still queued between them"
	for _, c := range []string{report.CheckGBN, report.CheckRetransmission, report.CheckTimeout} {
		if v, reason := verdictReason(r, c); v != model.Inconclusive || len(reason) < len(why) || reason[:len(why)] != why {
			t.Errorf("%s = %s %q\nwant inconclusive starting %q", c, v, reason, why)
		}
	}
}

// TestFabricNoRoute: a run record whose routes name no host of the
// connection (a crafted or mismatched report.json) cannot tell what the
// other switches did to its packets: the loss checks are inconclusive,
// saying so, instead of the observed switch's false fail.
func TestFabricNoRoute(t *testing.T) {
	conns := tracetest.FlowConns(obsHosts, []tracetest.Flow{{Name: "a", From: "h1", To: "h2", QPs: 1}})
	fabric, _, _ := fabricTrace(t, conns, "0 1 2 3a", nil, func(i int, cs []*tracetest.Frame) {
		if i >= 2 {
			cs[2] = nil // PSN 2 and 3 stay at the spine
		}
	})
	m := fabricMeta(conns)
	for i := range m.Fabric.Routes {
		m.Fabric.Routes[i].From = "nobody"
	}
	r, err := Analyze(context.Background(), Bytes("fabric", fabric), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	why := "connection 0 (flow a): the run record gives no route between 10.0.0.1 and 10.0.0.2, so what other switches than tor1 did to its packets is unknown"
	for _, c := range []string{report.CheckGBN, report.CheckRetransmission, report.CheckTimeout} {
		if v, reason := verdictReason(r, c); v != model.Inconclusive || len(reason) < len(why) || reason[:len(why)] != why {
			t.Errorf("%s = %s %q\nwant inconclusive starting %q", c, v, reason, why)
		}
	}
}
