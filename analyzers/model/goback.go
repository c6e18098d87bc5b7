package model

import "github.com/netlumina/lumina/roce"

// ContinuesGoBack is the rule by which the READ go-back trackers
// (retransmission, gbn) decide whether p, a READ request re-sent at the
// PSN right after the last request of a go-back under way, is part of
// that go-back. It is not when a NAK or RNR NAK for p's PSN came since
// the go-back began (nakForPSN: p answers it). It is when nothing was
// answered since (progressed false). After responses, it is when only
// the go-back's own requests were answered (ePSN, the next response the
// requester expects, not past p's PSN) and p left sooner after the
// go-back's previous request (lastReqNs) than a transport timer can
// expire (minTimeoutNs; 0 when the QP timeout is unknown, and then it is
// not): a go-back-N re-sends the whole window, but the responses to its
// first requests may overtake its later ones on a busy requester, and
// such a later request is no timeout.
func ContinuesGoBack(p *Pkt, nakForPSN, progressed bool, ePSN roce.PSN, lastReqNs, minTimeoutNs int64) bool {
	switch {
	case nakForPSN:
		return false
	case !progressed:
		return true
	case ePSN.Sub(p.PSN) > 0 || minTimeoutNs <= 0:
		return false
	}
	return p.TimeNs-lastReqNs < minTimeoutNs
}
