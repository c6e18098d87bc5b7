package analyzers

// NICs that discarded frames in their receive buffer.
//
// A NIC's receive buffer drops frames when it is full (the counter
// rx_discards_phy: NVIDIA's "Understanding mlx5 ethtool Counters", the
// software RNIC's receive buffer in docs/softrnic.md). The switch mirrored
// and forwarded those frames, so the trace shows them delivered, but the
// transport never saw them: which frames they were is unknown. The
// per-connection checks that depend on what that NIC received (gbn,
// retransmission, timeout, counters; cnp when the trace delivered
// CE-marked packets to that NIC) then say inconclusive, naming
// the NIC and the count, instead of judging its NAKs, ACKs and counters
// against frames it never got. A failure that belongs to a connection
// with no discarding NIC at either end stays a failure.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers/counters"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/retransmission"
)

// nicDiscards makes the checks that depend on what a discarding NIC
// received inconclusive (see above). nics are the NICs with their
// addresses resolved (model.ResolveHostNICs).
func nicDiscards(r *report.Report, nics []model.NIC, t *model.Table, tally *counters.Tally) {
	// affected[c]: an end of connection c is a NIC that discarded frames.
	affected := make([]bool, len(t.Conns))
	// hit[name]: a NIC at an end of an affected connection.
	hit := map[string]bool{}
	var why []string
	marked := false // the trace delivered CE-marked packets to a discarding NIC
	for i := range nics {
		n := &nics[i]
		d, ok := n.Delta("rx_discards_phy")
		if !ok || d <= 0 {
			continue
		}
		var conns []string
		for c := range t.Conns {
			if n.Owns(t.Conns[c].Requester.IP) || n.Owns(t.Conns[c].Responder.IP) {
				affected[c] = true
				conns = append(conns, fmt.Sprint(c))
			}
		}
		if len(conns) == 0 {
			continue // no connection of the trace ends at this NIC
		}
		hit[n.Name] = true
		for _, ip := range n.IPs {
			marked = marked || tally.CEMarkedTo(ip) > 0
		}
		what := "connection " + conns[0]
		if len(conns) > 1 {
			what = "connections " + strings.Join(conns, ", ")
		}
		why = append(why, fmt.Sprintf("%s's NIC discarded %s in its receive buffer (rx_discards_phy) that the trace shows delivered: what it received is unknown (%s)",
			n.Name, frames(d), what))
	}
	if len(why) == 0 {
		return
	}
	sort.Strings(why)
	for i := range nics {
		for c := range t.Conns {
			if affected[c] && (nics[i].Owns(t.Conns[c].Requester.IP) || nics[i].Owns(t.Conns[c].Responder.IP)) {
				hit[nics[i].Name] = true
			}
		}
	}
	reason := strings.Join(why, "; ")
	other := func(c int) bool { return c < 0 || c >= len(affected) || !affected[c] }
	ch := &r.Checks

	gbnOther := false
	for _, v := range ch.GBN.Violations {
		gbnOther = gbnOther || other(v.Conn)
	}
	discardVerdict(&ch.GBN.Verdict, &ch.GBN.Reason, gbnOther, reason)

	gaveUp := map[int]bool{}
	for _, s := range ch.Retransmission.Conns {
		gaveUp[s.Conn] = s.GaveUp || s.Fatal
	}
	retxOther := false
	for _, l := range ch.Retransmission.Losses {
		retxOther = retxOther || (l.Kind == retransmission.KindNone && !gaveUp[l.Conn] && other(l.Conn))
	}
	discardVerdict(&ch.Retransmission.Verdict, &ch.Retransmission.Reason, retxOther, reason)

	toOther := false
	for _, e := range ch.Timeout.Timeouts {
		toOther = toOther || ((e.OutOfBound || e.RetryExceeded) && other(e.Conn))
	}
	discardVerdict(&ch.Timeout.Verdict, &ch.Timeout.Reason, toOther, reason)

	// CNP pacing is judged across connections: a NIC that may have lost
	// CE-marked frames paces its CNPs on marks the trace cannot name.
	if marked {
		discardVerdict(&ch.CNP.Verdict, &ch.CNP.Reason, false, reason)
	}

	// A discard counter that grew on a NIC without PFC is the host
	// discards check's own failure (counters.go: the run's results are
	// untrustworthy): it stays.
	ctOther := false
	for _, m := range ch.Counters.Mismatches {
		ctOther = ctOther || !hit[m.NIC] || strings.Contains(strings.ToLower(m.Counter), "discard")
	}
	discardVerdict(&ch.Counters.Verdict, &ch.Counters.Reason, ctOther, reason)
}

// discardVerdict makes v inconclusive for why unless it fails on a
// connection (or NIC) the discards do not touch.
func discardVerdict(v *model.Verdict, reason *string, failsElsewhere bool, why string) {
	if *v == model.Fail && failsElsewhere {
		return
	}
	inconclusive(v, reason, why)
}

// frames returns "1 frame" or "N frames".
func frames(n int64) string {
	if n == 1 {
		return "1 frame"
	}
	return fmt.Sprintf("%d frames", n)
}
