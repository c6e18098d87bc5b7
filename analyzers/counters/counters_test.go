package counters

import (
	"net/netip"
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
	rsp.After["out_of_sequence"], req.After["rp_cnp_handled"] = 0, 1
	rsp.After["rx_discards_phy"] = 1
	if res := Check([]model.NIC{req, rsp}, in); res.Verdict != model.Pass {
		t.Errorf("with 1 discard, out_of_sequence 0 of 1: %v %v, want pass", res.Verdict, res.Mismatches)
	}
	rsp.After["out_of_sequence"], rsp.After["duplicate_request"] = 2, 0
	res = Check([]model.NIC{req, rsp}, in)
	if len(res.Mismatches) != 1 || res.Mismatches[0].Detail != "responder: out_of_sequence = 2, the trace shows 1 (1 frames discarded by the NIC's buffer or the switch's PFC logic)" {
		t.Errorf("with 1 discard, out_of_sequence 2 of 1: %+v", res.Mismatches)
	}
	delete(rsp.After, "rx_discards_phy")

	if res := Check(nil, in); res.Verdict != model.Skip {
		t.Errorf("Check without NICs = %v, want skip", res.Verdict)
	}
}
