package counters

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

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
	// last is the counts of address lastIP, the last one counted: the
	// marked packets of an incast go to one address, found without
	// hashing it (the map's entries are never replaced).
	lastIP netip.Addr
	last   *ipCounts
}

// NewTally returns an empty Tally.
func NewTally() *Tally { return &Tally{ips: map[netip.Addr]*ipCounts{}} }

// CEMarkedTo returns the CE-marked RoCE packets the trace delivered to a.
func (t *Tally) CEMarkedTo(a netip.Addr) int64 {
	if c := t.ips[a]; c != nil {
		return c.ceTo
	}
	return 0
}

func (t *Tally) get(a netip.Addr) *ipCounts {
	if t.last != nil && t.lastIP == a {
		return t.last
	}
	c := t.ips[a]
	if c == nil {
		c = &ipCounts{}
		t.ips[a] = c
	}
	t.lastIP, t.last = a, c
	return c
}

// Observe feeds one packet (of any connection or none). It is inlined:
// most packets are none of those it counts.
func (t *Tally) Observe(p *model.Pkt) {
	if p.Kind != model.KindCNP && p.Event != roce.EventCorrupt && !p.CE {
		return
	}
	t.observe(p)
}

func (t *Tally) observe(p *model.Pkt) {
	switch {
	case p.Kind == model.KindCNP:
		t.get(p.SrcIP.Addr()).cnpFrom++
		if p.Delivered {
			t.get(p.DstIP.Addr()).cnpTo++
		}
	case p.Event == roce.EventCorrupt:
		t.get(p.DstIP.Addr()).corruptTo++
	case p.CE:
		t.get(p.DstIP.Addr()).ceTo++
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
	// Restarts counts, by connection ID, the timeout go-backs that were a
	// READ requester's restarts after its page faults on an ODP run
	// (timeout.Timeout.RestartIntervals): no timer expired, so
	// local_ack_timeout_err does not count them. Default nil: none.
	Restarts map[int]int
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
				want["local_ack_timeout_err"] += int64(r.Timeouts - in.Restarts[c.ID])
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
			label, d, ok := delta(n, k)
			if !ok {
				continue
			}
			checked = true
			good := d == want[k]
			if !good && discards > 0 && receivedCounters[k] {
				good = d <= want[k] && d >= want[k]-discards
			}
			res.Checked = append(res.Checked, Checked{NIC: name, Counter: label, Value: d, OK: good})
			if !good {
				detail := fmt.Sprintf("%s: %s = %d, the trace shows %d", name, label, d, want[k])
				if discards > 0 && receivedCounters[k] {
					detail += fmt.Sprintf(" (%d frames discarded by the NIC's buffer or the switch's PFC logic)", discards)
				}
				res.Mismatches = append(res.Mismatches, Mismatch{NIC: name, Counter: label, Trace: want[k], NICVal: d, Detail: detail})
			}
		}
		lh, h, okh := delta(n, "rp_cnp_handled")
		li, ig, oki := delta(n, "rp_cnp_ignored")
		if okh || oki {
			checked = true
			ok := h+ig == cnpTo
			label := "rp_cnp_handled+rp_cnp_ignored"
			if lh == e810Names["rp_cnp_handled"] || li == e810Names["rp_cnp_ignored"] {
				label = "cnpHandled+cnpIgnored"
			}
			res.Checked = append(res.Checked, Checked{NIC: name, Counter: label, Value: h + ig, OK: ok})
			if !ok {
				res.Mismatches = append(res.Mismatches, Mismatch{NIC: name, Counter: label, Trace: cnpTo, NICVal: h + ig,
					Detail: fmt.Sprintf("%s: %s = %d, the trace delivered %d CNPs to it", name, label, h+ig, cnpTo)})
			}
		}
		if checkDiscards(n, name, &res) {
			checked = true
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

// e810Names are the Intel E810 (irdma hw_counters) names of counters
// checked under their Mellanox names: the same events, counted the same
// way (irdma's TXNPCNPSENT, RXRPCNPHANDLED, RXRPCNPIGNORED statistics and
// the CE-marked RoCE packets received).
var e810Names = map[string]string{
	"np_cnp_sent":                "cnpSent",
	"np_ecn_marked_roce_packets": "RxECNMrkd",
	"rp_cnp_handled":             "cnpHandled",
	"rp_cnp_ignored":             "cnpIgnored",
}

// delta returns the delta of the counter k under its Mellanox name or,
// when the NIC does not report that, its E810 name, with the name found.
func delta(n *model.NIC, k string) (string, int64, bool) {
	if d, ok := n.Delta(k); ok {
		return k, d, true
	}
	if a, ok := e810Names[k]; ok {
		if d, ok := n.Delta(a); ok {
			return a, d, true
		}
	}
	return k, 0, false
}

// checkDiscards is the host discard check: every counter the NIC reports
// whose name contains "discard" (any case: Mellanox ethtool's
// rx_discards_phy, tx_discards_phy, E810's ip4InDiscards, …) must not
// have grown, or frames the trace shows delivered (or sent) never made it
// and the run's results are untrustworthy. A NIC with PFC configured
// (it reports rx_prio*_pause or tx_prio*_pause counters) is exempt: its
// receive buffer discards frames while the pipeline is paused, by design,
// and the received-frame counters above allow for them. It reports
// whether the NIC has any discard counter.
func checkDiscards(n *model.NIC, name string, res *Result) bool {
	var ks []string
	withPFC := false
	for k := range n.After {
		if strings.Contains(strings.ToLower(k), "discard") {
			ks = append(ks, k)
		}
		if (strings.HasPrefix(k, "rx_prio") || strings.HasPrefix(k, "tx_prio")) && strings.Contains(k, "_pause") {
			withPFC = true
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		d, _ := n.Delta(k)
		good := d == 0 || withPFC
		res.Checked = append(res.Checked, Checked{NIC: name, Counter: k, Value: d, OK: good})
		if !good {
			res.Mismatches = append(res.Mismatches, Mismatch{NIC: name, Counter: k, Trace: 0, NICVal: d,
				Detail: fmt.Sprintf("%s: %s = %d, want 0: the NIC discarded frames without PFC, the run's results are untrustworthy", name, k, d)})
		}
	}
	return len(ks) > 0
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
