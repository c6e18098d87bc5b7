package analyzers

import (
	"context"
	"net/netip"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
)

// discardRun is a many-host run in which r's responder NAKs PSN 1 of flow
// a after the trace delivered PSNs 0..3 to it (what a NIC that discarded
// PSNs 1..3 in its receive buffer does: a gbn violation by the trace).
// Flow v (h1 to h4) is clean, or, with vBad, h4 NAKs a PSN the trace also
// delivered. With ce, PSN 1 reaches r CE-marked and r sends a CNP. r's NIC counters report discards rDiscards (with PFC
// counters, as the software NIC with PFC configured reports them).
func discardRun(t *testing.T, rDiscards uint64, vBad, ce bool) *Report {
	t.Helper()
	ip := func(b byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, b}) }
	hosts := []tracetest.Host{{Name: "h1", IP: ip(1), Port: 1}, {Name: "h4", IP: ip(4), Port: 4}, {Name: "r", IP: ip(9), Port: 9}}
	conns := tracetest.FlowConns(hosts, []tracetest.Flow{{Name: "a", From: "h1", To: "r", QPs: 1}, {Name: "v", From: "h1", To: "h4", QPs: 1}})
	script := "0/0 0/1 0/2 0/3 0/N1 0/1 0/2 0/3 0/A3 1/0 1/1 1/2 1/A2"
	if vBad {
		script = "0/0 0/1 0/2 0/3 0/N1 0/1 0/2 0/3 0/A3 1/0 1/1 1/2 1/N0 1/0 1/1 1/2 1/A2"
	}
	if ce {
		script = "0/0 0/1e 0/C" + script[7:]
	}
	b := tracetest.Build(t, conns, script, tracetest.Options{})
	us := 4.0
	meta := model.Meta{Connections: conns, Params: model.Params{MTU: tracetest.MTU, MinTimeBetweenCNPsUs: &us}, SwitchPorts: map[string]uint32{}}
	for _, h := range hosts {
		meta.SwitchPorts[h.Name] = uint32(h.Port)
		meta.Hosts = append(meta.Hosts, model.HostParams{Name: h.Name, IPs: []netip.Addr{h.IP}, MinTimeBetweenCNPsUs: &us})
		after := model.Counters{"rx_discards_phy": 0, "rx_prio3_pause": 0, "tx_prio3_pause": 0}
		if h.Name == "r" {
			after["rx_discards_phy"] = rDiscards
		}
		meta.NICs = append(meta.NICs, model.NIC{Name: h.Name, Before: model.Counters{}, After: after})
	}
	r, err := Analyze(context.Background(), Bytes("discards", b), meta, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Valid {
		t.Fatalf("run invalid: %s", r.Integrity.Reason)
	}
	return r
}

// TestNICDiscards: a receiving NIC's rx_discards_phy makes the checks of
// its connections inconclusive with the reason; without discards, or with
// a violation on a connection the discards do not touch, the verdicts are
// the old ones.
func TestNICDiscards(t *testing.T) {
	const why = "r's NIC discarded 7956 frames in its receive buffer (rx_discards_phy) that the trace shows delivered: what it received is unknown (connection 0)"
	type verdict struct {
		v      model.Verdict
		reason string
	}
	for _, tc := range []struct {
		name      string
		discards  uint64
		vBad      bool
		ce        bool
		gbn, retx verdict
		timeout   verdict
		cnp       verdict
		counters  verdict
		gbnConns  []int
	}{
		{name: "discards", discards: 7956,
			gbn: verdict{model.Inconclusive, why}, retx: verdict{model.Inconclusive, why}, timeout: verdict{model.Inconclusive, why},
			cnp: verdict{model.Pass, ""}, counters: verdict{model.Inconclusive, why}, gbnConns: []int{0}},
		{name: "no discards", discards: 0,
			gbn: verdict{model.Fail, ""}, retx: verdict{model.Pass, ""}, timeout: verdict{model.Pass, ""},
			cnp: verdict{model.Pass, ""}, counters: verdict{model.Pass, ""}, gbnConns: []int{0}},
		{name: "discards, violation elsewhere", discards: 7956, vBad: true,
			gbn: verdict{model.Fail, ""}, retx: verdict{model.Inconclusive, why}, timeout: verdict{model.Inconclusive, why},
			cnp: verdict{model.Pass, ""}, counters: verdict{model.Inconclusive, why}, gbnConns: []int{0, 1}},
		{name: "discards, CE-marked to r", discards: 7956, ce: true,
			gbn: verdict{model.Inconclusive, why}, retx: verdict{model.Inconclusive, why}, timeout: verdict{model.Inconclusive, why},
			cnp: verdict{model.Inconclusive, why}, counters: verdict{model.Inconclusive, why}, gbnConns: []int{0}},
		{name: "no discards, CE-marked to r", discards: 0, ce: true,
			gbn: verdict{model.Fail, ""}, retx: verdict{model.Pass, ""}, timeout: verdict{model.Pass, ""},
			cnp: verdict{model.Pass, ""}, counters: verdict{model.Pass, ""}, gbnConns: []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := discardRun(t, tc.discards, tc.vBad, tc.ce)
			c := &r.Checks
			for _, x := range []struct {
				name string
				got  verdict
				want verdict
			}{
				{report.CheckGBN, verdict{c.GBN.Verdict, c.GBN.Reason}, tc.gbn},
				{report.CheckRetransmission, verdict{c.Retransmission.Verdict, c.Retransmission.Reason}, tc.retx},
				{report.CheckTimeout, verdict{c.Timeout.Verdict, c.Timeout.Reason}, tc.timeout},
				{report.CheckCNP, verdict{c.CNP.Verdict, c.CNP.Reason}, tc.cnp},
				{report.CheckCounters, verdict{c.Counters.Verdict, c.Counters.Reason}, tc.counters},
			} {
				if x.got != x.want {
					t.Errorf("%s = %q %q, want %q %q", x.name, x.got.v, x.got.reason, x.want.v, x.want.reason)
				}
			}
			var conns []int
			for _, v := range c.GBN.Violations {
				if len(conns) == 0 || conns[len(conns)-1] != v.Conn {
					conns = append(conns, v.Conn)
				}
			}
			if len(conns) != len(tc.gbnConns) || (len(conns) > 0 && conns[0] != tc.gbnConns[0]) || (len(conns) > 1 && conns[1] != tc.gbnConns[1]) {
				t.Errorf("gbn violations on connections %v, want %v (%+v)", conns, tc.gbnConns, c.GBN.Violations)
			}
		})
	}
}
