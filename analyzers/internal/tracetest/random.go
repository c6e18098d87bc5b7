package tracetest

import (
	"math/rand/v2"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// RandomPkts returns n decoded packets of conns drawn from r: mostly each
// connection's next in-order data packet (WRITE/SEND requests, READ
// responses) without event, mixed with go-backs, gaps, switch events,
// ACKs, NAKs, RNR NAKs, READ requests (new and re-issued), CNPs and the
// odd fatal NAK (fewer of those with calm). They follow no protocol: they
// are for checking that an analyzer's fast path for the common packet
// gives what its general path gives, on any input.
func RandomPkts(r *rand.Rand, conns []model.Connection, n int, calm bool) []model.Pkt {
	odd := 20 // one packet in odd has an event, one in 5*odd goes back
	if calm {
		odd = 400
	}
	// Per connection: the last data PSN sent, the next READ request PSN,
	// the receiver's expected PSN, an RNR NAK awaiting the READ re-issue.
	type state struct {
		cur, req, exp roce.PSN
		rnr           bool
	}
	st := make([]state, len(conns))
	for i, c := range conns {
		ipsn := roce.PSN(c.Requester.IPSN & roce.PSNMask)
		st[i] = state{cur: ipsn.Add(-1), req: ipsn, exp: ipsn}
	}
	events := []roce.Event{roce.EventDrop, roce.EventECN, roce.EventCorrupt, roce.EventDelay, roce.EventReorder, roce.EventDuplicate}
	var ps []model.Pkt
	t := int64(1000)
	for i := range n {
		ci := r.IntN(len(conns))
		c, s := &conns[ci], &st[ci]
		t += 1 + r.Int64N(200)
		p := model.Pkt{Index: i, TimeNs: t, Conn: ci, NPkts: 1, PayloadLen: MTU, FrameLen: MTU + 62,
			SrcIP: model.IPFrom(c.Requester.IP), DstIP: model.IPFrom(c.Responder.IP), DestQP: c.Responder.QPN}
		if r.IntN(odd) == 0 {
			p.Event = events[r.IntN(len(events))]
		}
		read := c.Verb == model.VerbRead
		near := s.cur.Add(-r.IntN(5))
		k := r.IntN(100)
		if read && k < 72 && !s.cur.Next().LessThan(s.req) && r.IntN(8) > 0 {
			k = 72 // request the responses first, mostly
		}
		switch {
		case k < 72: // data
			psn := s.cur.Next()
			switch j := r.IntN(5 * odd); {
			case s.cur.Next() != s.exp && j < 20:
				psn = s.exp // go back to the receiver's expected PSN
			case j < 6:
				psn = s.cur.Add(-r.IntN(9)) // go back anywhere
			case j < 8:
				psn = s.cur.Add(2 + r.IntN(3)) // gap
			}
			s.cur = psn
			p.Kind, p.Dir, p.PSN, p.Op = model.KindData, model.ToResponder, psn, roce.RCWriteMiddle
			if read {
				p.Kind, p.Dir, p.Op = model.KindReadResp, model.ToRequester, roce.RCReadResponseMiddle
				p.SrcIP, p.DstIP = p.DstIP, p.SrcIP
			}
			if psn == s.exp && model.Delivered(p.Event) && (!read || psn.LessThan(s.req)) {
				s.exp = psn.Next()
			}
		case k < 80 && read: // READ request, new or re-issued
			p.Kind, p.Dir, p.Op, p.PayloadLen = model.KindReadReq, model.ToResponder, roce.RCReadRequest, 0
			p.NPkts = 1 + r.IntN(8)
			p.PSN = s.req
			switch j := r.IntN(odd); {
			case s.rnr:
				p.PSN, s.cur, s.rnr = s.exp, s.exp.Add(-1), false
			case j == 0:
				p.PSN = near
			case j < 4 && s.exp.LessThan(s.req):
				p.PSN, s.cur = s.exp, s.exp.Add(-1) // re-issued for a loss: the responses replay
			default:
				s.req = s.req.Add(p.NPkts)
			}
		case k < 88: // ACK: mostly of what arrived in order
			p.Kind, p.PSN, p.Op, p.MSN = model.KindAck, s.exp.Add(-1), roce.RCAcknowledge, uint32(r.IntN(64))
			if r.IntN(4) == 0 {
				p.PSN = near
			}
		case k < 93: // NAK: mostly of a loss
			p.Kind, p.PSN, p.Op = model.KindNak, s.exp, roce.RCAcknowledge
			if r.IntN(4) == 0 {
				p.PSN = near
			}
		case k < 96 && r.IntN(odd/10+1) == 0:
			p.Kind, p.PSN, p.Op, p.RNRTimer = model.KindRNR, s.exp, roce.RCAcknowledge, uint8(r.IntN(32))
			s.rnr = read
			if r.IntN(4) == 0 {
				p.PSN = near
			}
		case k < 99 && k >= 96:
			p.Kind, p.Op, p.PayloadLen = model.KindCNP, roce.CNP, 0
			if r.IntN(2) == 0 {
				p.Conn = -1
			}
		case k == 99 && r.IntN(odd) == 0:
			p.Kind, p.PSN, p.Op = model.KindNakFatal, near, roce.RCAcknowledge
		default:
			p.Kind, p.PSN, p.Op = model.KindAck, s.exp.Add(-1), roce.RCAcknowledge
		}
		if p.Kind == model.KindAck || p.Kind == model.KindNak || p.Kind == model.KindRNR || p.Kind == model.KindNakFatal {
			p.Dir, p.SrcIP, p.DstIP, p.PayloadLen = model.ToRequester, model.IPFrom(c.Responder.IP), model.IPFrom(c.Requester.IP), 0
		}
		if p.Kind == model.KindCNP {
			p.Dir = model.ToRequester
		}
		p.Delivered = model.Delivered(p.Event)
		p.CE = p.Event == roce.EventECN
		if p.Late() && r.IntN(2) == 0 {
			p.HoldUnitNs = 64
			p.HoldNs = r.Int64N(min(p.TimeNs, 5000))
		}
		ps = append(ps, p)
	}
	return ps
}
