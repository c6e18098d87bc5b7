package counters

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/roce"
)

// Mismatch is one counter that disagrees with the trace.
type Mismatch struct {
	NIC     string `json:"nic"`
	Counter string `json:"counter"`
	// Trace is the value the trace implies; NIC the counter's delta.
	Trace  int64  `json:"trace"`
	NICVal int64  `json:"nic_value"`
	Detail string `json:"detail"`
}

// Checked is one counter that was compared.
type Checked struct {
	NIC     string `json:"nic"`
	Counter string `json:"counter"`
	Value   int64  `json:"value"`
	OK      bool   `json:"ok"`
}

// Result is the outcome of the check.
type Result struct {
	Verdict    model.Verdict `json:"verdict"`
	Reason     string        `json:"reason,omitempty"`
	Mismatches []Mismatch    `json:"mismatches"`
	Checked    []Checked     `json:"checked,omitempty"`
}

type ipCounts struct {
	corruptTo, ceTo, cnpFrom, cnpTo int64
}

// Tally counts, per IP address, the packets the relations need. Observe
// allocates only the first time an address has a counted event.
type Tally struct {
	ips map[netip.Addr]*ipCounts
}

// NewTally returns an empty Tally.
func NewTally() *Tally { return &Tally{ips: map[netip.Addr]*ipCounts{}} }

func (t *Tally) get(a netip.Addr) *ipCounts {
	c := t.ips[a]
	if c == nil {
		c = &ipCounts{}
		t.ips[a] = c
	}
	return c
}

// Observe feeds one packet (of any connection or none).
func (t *Tally) Observe(p *model.Pkt) {
	switch {
	case p.Kind == model.KindCNP:
		t.get(p.SrcIP).cnpFrom++
		if p.Delivered {
			t.get(p.DstIP).cnpTo++
		}
	case p.Event == roce.EventCorrupt:
		t.get(p.DstIP).corruptTo++
	case p.CE:
		t.get(p.DstIP).ceTo++
	}
}

// Inputs are the other analyzers' results the relations use.
type Inputs struct {
	Table   *model.Table
	GBN     *gbn.Result
	Retrans *retransmission.Result
	Tally   *Tally
	// PFC is the pfc analyzer's result and PFCHosts its port mapping, for
	// the per-priority PFC counters. Default nil: not checked.
	PFC      *pfc.Result
	PFCHosts []pfc.Host
	// SwitchDrops counts frames the switch's PFC logic dropped after
	// mirroring them (model.Switch.PFCDrops): delivered in the trace,
	// never received. Default 0.
	SwitchDrops int64
}

// Check compares the NICs' counters with the trace.
func Check(nics []model.NIC, in Inputs) Result {
	res := Result{Mismatches: []Mismatch{}}
	gs := map[int]gbn.ConnStats{}
	if in.GBN != nil {
		for _, c := range in.GBN.Conns {
			gs[c.Conn] = c
		}
	}
	rs := map[int]retransmission.ConnStats{}
	if in.Retrans != nil {
		for _, c := range in.Retrans.Conns {
			rs[c.Conn] = c
		}
	}
	checked := false
	for i := range nics {
		n := &nics[i]
		name := n.Name
		if name == "" {
			name = fmt.Sprintf("nic-%d", i)
		}
		want := map[string]int64{}
		for _, c := range in.Table.Conns {
			g, r := gs[c.ID], rs[c.ID]
			if n.Owns(c.Requester.IP) {
				want["local_ack_timeout_err"] += int64(r.Timeouts)
				if c.Verb.IsRead() {
					want["implied_nak_seq_err"] += int64(r.Implied)
				} else {
					// One per NAK the requester received: two NAKs of
					// back-to-back episodes can share one go-back.
					want["packet_seq_err"] += int64(g.NAKsDelivered)
				}
			}
			if n.Owns(c.Responder.IP) {
				want["duplicate_request"] += int64(g.Duplicates)
				if !c.Verb.IsRead() {
					want["out_of_sequence"] += int64(g.NAKs)
				}
			}
		}
		var cnpTo int64
		if in.Tally != nil {
			for _, ip := range n.IPs {
				if c := in.Tally.ips[ip]; c != nil {
					want["rx_icrc_encapsulated"] += c.corruptTo
					want["np_ecn_marked_roce_packets"] += c.ceTo
					want["np_cnp_sent"] += c.cnpFrom
					cnpTo += c.cnpTo
				}
			}
		}
		for _, k := range []string{"rx_icrc_encapsulated", "np_ecn_marked_roce_packets", "np_cnp_sent"} {
			if _, ok := want[k]; !ok {
				want[k] = 0
			}
		}
		names := make([]string, 0, len(want))
		for k := range want {
			names = append(names, k)
		}
		sort.Strings(names)
		// Frames the NIC's receive buffer discarded (rx_discards_phy, a
		// software NIC with PFC whose pipeline stalled), and frames the
		// switch's PFC logic dropped after mirroring, are delivered in the
		// trace but never reached the transport: a counter of received
		// frames may be short by at most that many.
		discards, _ := n.Delta("rx_discards_phy")
		discards += in.SwitchDrops
		for _, k := range names {
			d, ok := n.Delta(k)
			if !ok {
				continue
			}
			checked = true
			good := d == want[k]
			if !good && discards > 0 && receivedCounters[k] {
				good = d <= want[k] && d >= want[k]-discards
			}
			res.Checked = append(res.Checked, Checked{NIC: name, Counter: k, Value: d, OK: good})
			if !good {
				detail := fmt.Sprintf("%s: %s = %d, the trace shows %d", name, k, d, want[k])
				if discards > 0 && receivedCounters[k] {
					detail += fmt.Sprintf(" (%d frames discarded by the NIC's buffer or the switch's PFC logic)", discards)
				}
				res.Mismatches = append(res.Mismatches, Mismatch{NIC: name, Counter: k, Trace: want[k], NICVal: d, Detail: detail})
			}
		}
		h, okh := n.Delta("rp_cnp_handled")
		ig, oki := n.Delta("rp_cnp_ignored")
		if okh || oki {
			checked = true
			ok := h+ig == cnpTo
			res.Checked = append(res.Checked, Checked{NIC: name, Counter: "rp_cnp_handled+rp_cnp_ignored", Value: h + ig, OK: ok})
			if !ok {
				res.Mismatches = append(res.Mismatches, Mismatch{NIC: name, Counter: "rp_cnp_handled+rp_cnp_ignored", Trace: cnpTo, NICVal: h + ig,
					Detail: fmt.Sprintf("%s: rp_cnp_handled+rp_cnp_ignored = %d, the trace delivered %d CNPs to it", name, h+ig, cnpTo)})
			}
		}
	}
	for i := range nics {
		if checkPFC(&nics[i], i, in, &res) {
			checked = true
		}
	}
	switch {
	case !checked:
		res.Verdict = model.Skip
		res.Reason = "no NIC counters"
	case len(res.Mismatches) > 0:
		res.Verdict = model.Fail
		res.Reason = fmt.Sprintf("%d counters disagree with the trace", len(res.Mismatches))
	default:
		res.Verdict = model.Pass
	}
	return res
}

// receivedCounters count frames the NIC received and processed: a frame
// its receive buffer discarded is delivered in the trace but not counted.
var receivedCounters = map[string]bool{
	"duplicate_request": true, "out_of_sequence": true, "np_ecn_marked_roce_packets": true,
	"rx_icrc_encapsulated": true, "packet_seq_err": true, "implied_nak_seq_err": true,
}

// checkPFC compares the NIC's per-priority PFC counters, when it has them,
// with the PFC frames the switch exchanged with its port, and reports
// whether it compared any.
func checkPFC(n *model.NIC, i int, in Inputs, res *Result) bool {
	if in.PFC == nil {
		return false
	}
	name := n.Name
	if name == "" {
		name = fmt.Sprintf("nic-%d", i)
	}
	port, found := -1, false
	for _, h := range in.PFCHosts {
		own := h.Name == n.Name && n.Name != ""
		for _, ip := range h.IPs {
			own = own || n.Owns(ip)
		}
		if own {
			port, found = int(h.Port), true
			break
		}
	}
	if !found && in.PFC.Frames > 0 {
		return false // frames in the trace, but whose port is unknown
	}
	u := in.PFC.UncertaintyNs
	checked := false
	for p := range 8 {
		var ps *pfc.PortStats
		if found {
			ps = in.PFC.Port(uint16(port), p)
		}
		if ps == nil {
			ps = &pfc.PortStats{}
		}
		for _, c := range []struct {
			counter  string
			want     int64
			tol      int64
			duration bool
		}{
			{fmt.Sprintf("rx_prio%d_pause", p), ps.Sent.Frames, 0, false},
			{fmt.Sprintf("rx_prio%d_pause_duration", p), ps.Sent.PausedUnclippedNs / 1000, durTol(ps.Sent.Episodes, u), true},
			{fmt.Sprintf("tx_prio%d_pause", p), ps.Received.Frames, 0, false},
			{fmt.Sprintf("tx_prio%d_pause_duration", p), ps.Received.PausedUnclippedNs / 1000, durTol(ps.Received.Episodes, u), true},
		} {
			d, ok := n.Delta(c.counter)
			if !ok {
				continue
			}
			checked = true
			good := d >= c.want-c.tol && d <= c.want+c.tol
			res.Checked = append(res.Checked, Checked{NIC: name, Counter: c.counter, Value: d, OK: good})
			if good {
				continue
			}
			detail := fmt.Sprintf("%s: %s = %d, the trace shows %d", name, c.counter, d, c.want)
			if c.duration {
				detail = fmt.Sprintf("%s: %s = %d µs, the trace shows %d µs (± %d)", name, c.counter, d, c.want, c.tol)
			}
			res.Mismatches = append(res.Mismatches, Mismatch{NIC: name, Counter: c.counter, Trace: c.want, NICVal: d, Detail: detail})
		}
	}
	return checked
}

// durTol is the tolerance in µs of a pause duration counter: 1 µs of
// rounding per episode and overall, plus 2U per episode.
func durTol(episodes int, uNs int64) int64 {
	return 1 + int64(episodes) + (2*uNs*int64(episodes)+999)/1000
}
