package pfc

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// TestManyHosts: incast on one switch. h1 and h2 write to r (port 9),
// h1 also to h4 (port 4); the switch pauses h1 (port 1) while h5 (port 5),
// to which h1 sends nothing, happens to pause the switch. The chain of
// h1's pause ends in egress contention toward r, not in h5's pause: the
// queue toward r is the one h1's last packets found deep.
func TestManyHosts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		depth      int64 // of the packets to r
		egress     uint16
		egressHost string
	}{{"depth", 30000, 9, "r"}, {"no depth: most packets", 0, 4, "h4"}} {
		t.Run(tc.name, func(t *testing.T) { manyHosts(t, tc.depth, tc.egress, tc.egressHost) })
	}
}

func manyHosts(t *testing.T, depth int64, egress uint16, egressHost string) {
	ip := func(b byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, b}) }
	conn := func(id int, from, to byte) model.Connection {
		return model.Connection{ID: id, Verb: model.VerbWrite, Requester: model.Endpoint{IP: ip(from), QPN: uint32(0x100 + id)},
			Responder: model.Endpoint{IP: ip(to), QPN: uint32(0x200 + id)}}
	}
	conns := []model.Connection{conn(0, 1, 9), conn(1, 2, 9), conn(2, 1, 4), conn(3, 6, 5)}
	hosts := []Host{{Name: "h1", Port: 1, IPs: []netip.Addr{ip(1)}}, {Name: "h2", Port: 2, IPs: []netip.Addr{ip(2)}},
		{Name: "h4", Port: 4, IPs: []netip.Addr{ip(4)}}, {Name: "h5", Port: 5, IPs: []netip.Addr{ip(5)}},
		{Name: "h6", Port: 6, IPs: []netip.Addr{ip(6)}}, {Name: "r", Port: 9, IPs: []netip.Addr{ip(9)}}}
	tab := model.NewTable(conns)
	a := New(tab, Options{Hosts: hosts})
	idx, seq := 0, uint64(0)
	pause := func(ts int64, sent bool, port uint16, q uint16) {
		seq++
		f := roce.BuildPFC(nil, [6]byte{2}, 1<<3, [8]uint16{3: q})
		a.MAC(roce.AppendMACMirror(nil, roce.MirrorMeta{TimestampNs: uint64(ts), Seq: seq, Event: roce.EventNone}, sent, port, f), idx)
		idx++
	}
	data := func(ts int64, c int) {
		frame := make([]byte, 100)
		frame[12], frame[13], frame[14], frame[15] = 0x08, 0x00, 0x45, 24<<2
		cn := tab.Conns[c]
		p := model.Pkt{Index: idx, TimeNs: ts, Conn: c, Dir: model.ToResponder, Kind: model.KindData,
			SrcIP: model.IPFrom(cn.Requester.IP), DstIP: model.IPFrom(cn.Responder.IP), Delivered: true}
		if cn.Responder.IP == ip(9) {
			p.QDepth = depth
		}
		a.Observe(&p, frame, len(frame))
		idx++
	}
	for k := range 10 {
		data(int64(1000+k*100), 0) // h1 → r
		data(int64(1050+k*100), 1) // h2 → r
	}
	data(1500, 2)                 // h1 → h4
	pause(2500, false, 5, 0xFFFF) // h5 pauses the switch
	data(2600, 3)                 // h6 → h5, queued
	pause(3000, true, 1, 0xFFFF)  // the switch pauses h1
	pause(3000, true, 2, 0xFFFF)  // and h2
	data(3100, 2)                 // in flight to h4
	data(3150, 2)
	pause(9000, true, 1, 0)
	pause(9000, true, 2, 0)
	pause(9500, false, 5, 0)
	data(10000, 2)
	r := a.Finish()
	if len(r.Causality) != 2 {
		t.Fatalf("causality = %+v, want two chains", r.Causality)
	}
	for i, want := range []struct {
		port uint16
		host string
	}{{1, "h1"}, {2, "h2"}} {
		c := r.Causality[i]
		o := c.Origin
		if len(c.Chain) != 1 || o.Kind != OriginCongestion || o.Port != want.port || o.Host != want.host ||
			o.EgressPort == nil {
			t.Errorf("chain of %s = %+v, origin %+v; want one hop, congestion at port %d", want.host, c.Chain, o, want.port)
		}
	}
	if o := r.Causality[0].Origin; *o.EgressPort != egress || o.EgressHost != egressHost {
		t.Errorf("egress of h1's pause = port %d (%s), want %d (%s)", *o.EgressPort, o.EgressHost, egress, egressHost)
	}
	if o := r.Causality[1].Origin; *o.EgressPort != 9 || o.EgressHost != "r" {
		t.Errorf("egress of h2's pause = port %d (%s), want 9 (r)", *o.EgressPort, o.EgressHost)
	}
	wantDetail := fmt.Sprintf("no pause received on another port at the time: egress contention in the switch (the queue toward port %d (%s) held port 1 (h1)'s packets)", egress, egressHost)
	if d := r.Causality[0].Origin.Detail; d != wantDetail {
		t.Errorf("detail = %q, want %q", d, wantDetail)
	}
}
