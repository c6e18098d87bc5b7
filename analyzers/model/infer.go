package model

import (
	"net/netip"

	"github.com/netlumina/lumina/roce"
)

// Inferrer infers connections from a trace without metadata: requests
// carry the responder's QPN, ACKs/NAKs and READ responses the requester's.
// It groups requests into request flows (source, destination, QPN) and
// responses into response flows, and pairs each response flow with the
// request flow in the opposite direction between the same IPs whose PSN
// range contains the responses' PSNs. Feed it every decoded packet in
// trace order (Observe), then call Connections.
type Inferrer struct {
	flows map[flowKey]*flowStat
	order []flowKey
	mtu   int
}

type flowStat struct {
	first, last roce.PSN // first PSN seen; highest PSN seen (wrap-safe)
	lastEnd     roce.PSN // READ: highest PSN covered by a request
	n           int
	read, write bool
	send        bool
}

// NewInferrer returns an empty Inferrer.
func NewInferrer() *Inferrer { return &Inferrer{flows: map[flowKey]*flowStat{}} }

// Observe records one packet (decoded without a Table).
func (in *Inferrer) Observe(p *Pkt) {
	var req bool
	switch p.Kind {
	case KindData, KindReadReq:
		req = true
	case KindAck, KindNak, KindNakFatal, KindRNR, KindReadResp:
	default:
		return
	}
	if (p.Kind == KindData && !p.Op.IsLast() || p.Kind == KindReadResp && !p.Op.IsLast()) && p.PayloadLen > in.mtu {
		in.mtu = p.PayloadLen // FIRST and MIDDLE packets carry exactly one MTU
	}
	k := flowKey{p.SrcIP.Addr(), p.DstIP.Addr(), p.DestQP, req}
	f := in.flows[k]
	if f == nil {
		f = &flowStat{first: p.PSN, last: p.PSN, lastEnd: p.PSN}
		in.flows[k] = f
		in.order = append(in.order, k)
	}
	f.n++
	if p.PSN.Sub(f.last) > 0 {
		f.last = p.PSN
	}
	switch {
	case p.Kind == KindReadReq:
		f.read = true
		// The range end needs the MTU, unknown yet: remember the DMA
		// length in packets of the largest plausible MTU later.
		if end := p.PSN.Add(int(p.NPkts) - 1); end.Sub(f.lastEnd) > 0 {
			f.lastEnd = end
		}
	case p.Op.IsWrite():
		f.write = true
	case p.Op.IsSend():
		f.send = true
	}
	if f.last.Sub(f.lastEnd) > 0 {
		f.lastEnd = f.last
	}
}

// MTU returns the largest FIRST/MIDDLE payload seen, or 0.
func (in *Inferrer) MTU() int { return in.mtu }

// Connections returns the inferred connections, in order of their first
// request. Response flows that match no request flow are ignored.
func (in *Inferrer) Connections() []Connection {
	var reqs, resps []flowKey
	for _, k := range in.order {
		if k.req {
			reqs = append(reqs, k)
		} else {
			resps = append(resps, k)
		}
	}
	// Pair responses with requests: same IP pair reversed, PSN range match.
	pairedResp := map[flowKey]flowKey{} // request flow -> response flow
	taken := map[flowKey]bool{}
	for _, rk := range resps {
		r := in.flows[rk]
		best, bestScore := flowKey{}, -1
		for _, qk := range reqs {
			if qk.src != rk.dst || qk.dst != rk.src || taken[qk] {
				continue
			}
			q := in.flows[qk]
			score := 0
			// ACKs can be one below the first request PSN (re-ACK of
			// nothing); responses lie within the request range.
			if r.first.Sub(q.first) >= -1 && r.first.Sub(q.lastEnd) <= 0 {
				score += 2
			}
			if r.last.Sub(q.first) >= -1 && r.last.Sub(q.lastEnd) <= 0 {
				score++
			}
			if score > bestScore {
				best, bestScore = qk, score
			}
		}
		if bestScore > 0 || bestScore == 0 && countPeers(reqs, rk) == 1 {
			pairedResp[best] = rk
			taken[best] = true
		}
	}
	var out []Connection
	for _, qk := range reqs {
		q := in.flows[qk]
		c := Connection{ID: len(out), Inferred: true,
			Requester: Endpoint{IP: qk.src, IPSN: uint32(q.first)},
			Responder: Endpoint{IP: qk.dst, QPN: qk.qpn}}
		if rk, ok := pairedResp[qk]; ok {
			c.Requester.QPN = rk.qpn
		}
		switch {
		case q.read && (q.write || q.send):
			c.Verb = VerbMixed
		case q.read:
			c.Verb = VerbRead
		case q.send && !q.write:
			c.Verb = VerbSend
		default:
			c.Verb = VerbWrite
		}
		out = append(out, c)
	}
	return out
}

func countPeers(reqs []flowKey, rk flowKey) int {
	n := 0
	for _, qk := range reqs {
		if qk.src == rk.dst && qk.dst == rk.src {
			n++
		}
	}
	return n
}

// IPString formats an address for reports ("" for the zero Addr).
func IPString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
