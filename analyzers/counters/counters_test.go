package counters

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
)

func TestCounters(t *testing.T) {
	// One NAK episode (PSN 1 corrupted), one timeout (PSN 3 dropped), one
	// CE mark answered by a CNP.
	script := "0 1c 2 N1 1 2 3x @9000 3 A3 4e C A4"
	conns := tracetest.Conns(1, 77, model.VerbWrite)
	tab, pkts := tracetest.Script(t, conns, script)
	g := gbn.New(tab, gbn.Options{})
	r := retransmission.New(tab, retransmission.Options{})
	tl := NewTally()
	for i := range pkts {
		r.Observe(&pkts[i])
		g.Observe(&pkts[i])
		tl.Observe(&pkts[i])
	}
	gr, rr := g.Finish(), r.Finish()
	in := Inputs{Table: tab, GBN: &gr, Retrans: &rr, Tally: tl}
	req := model.NIC{Name: "requester", IPs: []netip.Addr{conns[0].Requester.IP},
		Before: model.Counters{"packet_seq_err": 10}, After: model.Counters{"packet_seq_err": 11, "local_ack_timeout_err": 1, "rp_cnp_handled": 1}}
	rsp := model.NIC{Name: "responder", IPs: []netip.Addr{conns[0].Responder.IP},
		After: model.Counters{"out_of_sequence": 1, "rx_icrc_encapsulated": 1, "np_ecn_marked_roce_packets": 1, "np_cnp_sent": 1, "duplicate_request": 0}}

	res := Check([]model.NIC{req, rsp}, in)
	if res.Verdict != model.Pass || len(res.Checked) != 8 {
		t.Errorf("Check = %v %v, checked %+v; want pass with 8 counters", res.Verdict, res.Mismatches, res.Checked)
	}

	rsp.After["out_of_sequence"] = 2
	req.After["rp_cnp_handled"] = 0
	res = Check([]model.NIC{req, rsp}, in)
	var got []string
	for _, m := range res.Mismatches {
		got = append(got, m.Detail)
	}
	want := "requester: rp_cnp_handled+rp_cnp_ignored = 0, the trace delivered 1 CNPs to it; responder: out_of_sequence = 2, the trace shows 1"
	if res.Verdict != model.Fail || strings.Join(got, "; ") != want {
		t.Errorf("Check mismatches = %q (%v), want %q", strings.Join(got, "; "), res.Verdict, want)
	}

	// A NIC whose buffer discarded frames (rx_discards_phy) may count up
	// to that many fewer received frames, never more.
	// (With PFC configured: without it the discard check fails the NIC.)
	rsp.After["out_of_sequence"], req.After["rp_cnp_handled"] = 0, 1
	rsp.After["rx_discards_phy"], rsp.After["rx_prio3_pause"] = 1, 0
	if res := Check([]model.NIC{req, rsp}, in); res.Verdict != model.Pass {
		t.Errorf("with 1 discard, out_of_sequence 0 of 1: %v %v, want pass", res.Verdict, res.Mismatches)
	}
	rsp.After["out_of_sequence"], rsp.After["duplicate_request"] = 2, 0
	res = Check([]model.NIC{req, rsp}, in)
	if len(res.Mismatches) != 1 || res.Mismatches[0].Detail != "responder: out_of_sequence = 2, the trace shows 1 (1 frames discarded by the NIC's buffer or the switch's PFC logic)" {
		t.Errorf("with 1 discard, out_of_sequence 2 of 1: %+v", res.Mismatches)
	}
	delete(rsp.After, "rx_discards_phy")
	delete(rsp.After, "rx_prio3_pause")

	if res := Check(nil, in); res.Verdict != model.Skip {
		t.Errorf("Check without NICs = %v, want skip", res.Verdict)
	}
}

// counterTrace analyzes the script of TestCounters: one NAK episode, one
// timeout, one CE mark answered by a CNP.
func counterTrace(t *testing.T) (Inputs, []netip.Addr) {
	t.Helper()
	conns := tracetest.Conns(1, 77, model.VerbWrite)
	tab, pkts := tracetest.Script(t, conns, "0 1c 2 N1 1 2 3x @9000 3 A3 4e C A4")
	g := gbn.New(tab, gbn.Options{})
	r := retransmission.New(tab, retransmission.Options{})
	tl := NewTally()
	for i := range pkts {
		r.Observe(&pkts[i])
		g.Observe(&pkts[i])
		tl.Observe(&pkts[i])
	}
	gr, rr := g.Finish(), r.Finish()
	return Inputs{Table: tab, GBN: &gr, Retrans: &rr, Tally: tl}, []netip.Addr{conns[0].Requester.IP, conns[0].Responder.IP}
}

func TestDiscards(t *testing.T) {
	in, ips := counterTrace(t)
	for _, tc := range []struct {
		name    string
		after   model.Counters
		verdict model.Verdict
		checked []Checked
		details []string
	}{
		{name: "none", after: model.Counters{"rx_discards_phy": 5, "tx_discards_phy": 0, "ip4InDiscards": 2},
			verdict: model.Pass, checked: []Checked{
				{NIC: "responder", Counter: "ip4InDiscards", Value: 0, OK: true},
				{NIC: "responder", Counter: "rx_discards_phy", Value: 0, OK: true},
				{NIC: "responder", Counter: "tx_discards_phy", Value: 0, OK: true}}},
		{name: "rx and tx", after: model.Counters{"rx_discards_phy": 8, "tx_discards_phy": 1, "ip4InDiscards": 2},
			verdict: model.Fail, checked: []Checked{
				{NIC: "responder", Counter: "ip4InDiscards", Value: 0, OK: true},
				{NIC: "responder", Counter: "rx_discards_phy", Value: 3, OK: false},
				{NIC: "responder", Counter: "tx_discards_phy", Value: 1, OK: false}},
			details: []string{
				"responder: rx_discards_phy = 3, want 0: the NIC discarded frames without PFC, the run's results are untrustworthy",
				"responder: tx_discards_phy = 1, want 0: the NIC discarded frames without PFC, the run's results are untrustworthy"}},
		{name: "E810", after: model.Counters{"ip4InDiscards": 3},
			verdict: model.Fail, checked: []Checked{{NIC: "responder", Counter: "ip4InDiscards", Value: 1, OK: false}},
			details: []string{"responder: ip4InDiscards = 1, want 0: the NIC discarded frames without PFC, the run's results are untrustworthy"}},
		{name: "PFC", after: model.Counters{"rx_discards_phy": 8, "rx_prio3_pause": 0},
			verdict: model.Pass, checked: []Checked{{NIC: "responder", Counter: "rx_discards_phy", Value: 3, OK: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rsp := model.NIC{Name: "responder", IPs: ips[1:], Before: model.Counters{"rx_discards_phy": 5, "ip4InDiscards": 2}, After: tc.after}
			res := Check([]model.NIC{rsp}, in)
			var details []string
			for _, m := range res.Mismatches {
				details = append(details, m.Detail)
			}
			if res.Verdict != tc.verdict || !slices.Equal(res.Checked, tc.checked) || !slices.Equal(details, tc.details) {
				t.Errorf("Check = %v, checked %+v, mismatches %q; want %v, %+v, %q", res.Verdict, res.Checked, details, tc.verdict, tc.checked, tc.details)
			}
		})
	}
}

func TestE810Names(t *testing.T) {
	in, ips := counterTrace(t)
	// The trace: one CE-marked packet and one CNP the responder sent,
	// delivered to the requester. Checked in the order of the Mellanox
	// names (np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled).
	req := model.NIC{Name: "requester", IPs: ips[:1], Before: model.Counters{"cnpHandled": 4},
		After: model.Counters{"cnpHandled": 5, "cnpIgnored": 0, "cnpSent": 0}}
	rsp := model.NIC{Name: "responder", IPs: ips[1:], Before: model.Counters{"cnpSent": 10, "RxECNMrkd": 20},
		After: model.Counters{"cnpSent": 11, "RxECNMrkd": 21, "cnpHandled": 0}}
	res := Check([]model.NIC{req, rsp}, in)
	want := []Checked{
		{NIC: "requester", Counter: "cnpSent", Value: 0, OK: true},
		{NIC: "requester", Counter: "cnpHandled+cnpIgnored", Value: 1, OK: true},
		{NIC: "responder", Counter: "cnpSent", Value: 1, OK: true},
		{NIC: "responder", Counter: "RxECNMrkd", Value: 1, OK: true},
		{NIC: "responder", Counter: "cnpHandled+cnpIgnored", Value: 0, OK: true},
	}
	if res.Verdict != model.Pass || !slices.Equal(res.Checked, want) {
		t.Errorf("Check = %v %v, checked %+v; want pass, %+v", res.Verdict, res.Mismatches, res.Checked, want)
	}

	rsp.After["cnpSent"], rsp.After["RxECNMrkd"], req.After["cnpHandled"] = 13, 20, 4
	res = Check([]model.NIC{req, rsp}, in)
	var got []string
	for _, m := range res.Mismatches {
		got = append(got, m.Detail)
	}
	wantD := []string{
		"requester: cnpHandled+cnpIgnored = 0, the trace delivered 1 CNPs to it",
		"responder: cnpSent = 3, the trace shows 1",
		"responder: RxECNMrkd = 0, the trace shows 1",
	}
	if res.Verdict != model.Fail || !slices.Equal(got, wantD) {
		t.Errorf("Check mismatches = %q (%v), want %q", got, res.Verdict, wantD)
	}
	// A Mellanox name, when reported too, wins.
	rsp.After["np_cnp_sent"] = 1
	res = Check([]model.NIC{rsp}, in)
	for _, c := range res.Checked {
		if c.Counter == "cnpSent" {
			t.Errorf("Check used cnpSent beside np_cnp_sent: %+v", res.Checked)
		}
	}
}
