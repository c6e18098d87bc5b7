package softrnic

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// QP is an RC queue pair: a requester (send queue) and a responder
// (receive queue) sharing one QPN. Methods must run on the NIC's Loop.
type QP struct {
	nic     *NIC
	qpn     uint32
	sqPSN   roce.PSN // initial send PSN (IPSN)
	state   QPState
	attr    QPAttr
	localIP netip.Addr
	mtu     int
	udpSrc  uint16
	rp      reactionPoint

	// Requester.
	sq          []*wqe   // posted and not yet completed, oldest first
	sendIdx     int      // cursor: WQE being transmitted
	sendOff     int      // cursor: packet offset in it
	assignPSN   roce.PSN // next PSN for a WQE not yet started
	compPSN     roce.PSN // oldest unacknowledged PSN
	retryLeft   int
	rnrLeft     int
	episodes    int     // timeout episodes that ended on this QP: the loss history (adaptive stage)
	timeouts    int     // consecutive timeouts without progress
	firstFactor float64 // this episode's first-timeout factor (0: not drawn yet)
	timer       sim.Timer
	timerDue    int64 // deadline of the armed timer (0: none)
	lastSend    int64 // last transmission or progress: the timer counts from here
	nakActive   bool  // a NAK/implied-NAK episode is being handled
	nakPSN      roce.PSN
	roundEnd    roce.PSN // one past the PSNs the go-back in progress resends
	goBackTimer sim.Timer
	pktsNoAck   int   // packets since the last AckReq
	rxLen       int   // length of the ACK/NAK/READ response being handled (calibrate.go)
	started     bool  // the QP was posted to: startAt is set
	startAt     int64 // the QP sends nothing before (QPStartJitter)

	// Waits that hold requests (odp.go).
	rnrWaiting bool      // waiting out an RNR NAK: no requests, READ responses from rnrPSN on dropped
	rnrPSN     roce.PSN  // the PSN the RNR NAK named
	localFault *odpFault // pending ODP fault on a READ response's destination

	// Responder.
	ePSN     roce.PSN
	msn      uint32
	nakSent  bool
	rq       []RecvWR
	inMsg    bool   // a multi-packet SEND/WRITE is in progress
	msgIsSnd bool   // the message in progress is a SEND
	dst      []byte // destination of the message in progress
	dstOff   int
	recvWR   RecvWR
	respQ    []*readResp
	// ODP (odp.go).
	rspFault    *odpFault // pending fault of a request: every other request is dropped
	rspFaultPSN roce.PSN  // the faulting request's PSN: its retries get RNR NAKs
	dupServing  int       // duplicate READs being served on the slow path (ODPInTest)
	dupEndNext  bool      // the frame just built ends a slow-path duplicate's response
}

type wqe struct {
	wr       SendWR
	npkts    int
	firstPSN roce.PSN
	lastPSN  roce.PSN
	assigned bool
	done     bool
	readGot  int // READ: response packets received in order
	// ODP: a WRITE/SEND source is mapped (srcReady) or being faulted in.
	srcReady, srcWaiting bool
}

type readResp struct {
	psn  roce.PSN // PSN of the next response packet
	data []byte   // remaining bytes to send
	n    int      // packets in the whole response (for FIRST/ONLY choice)
	sent int
	msn  uint32
	dup  bool // a duplicate served on the ODP slow path (ODPInTest)
}

// QPN returns the QP number.
func (qp *QP) QPN() uint32 { return qp.qpn }

// PSN returns the initial send PSN (the IPSN the metadata handshake reports).
func (qp *QP) PSN() roce.PSN { return qp.sqPSN }

// State returns the QP state.
func (qp *QP) State() QPState { return qp.state }

// LocalIP returns the address the QP sends from (valid after Connect).
func (qp *QP) LocalIP() netip.Addr { return qp.localIP }

// Connect moves the QP to RTS towards its peer.
func (qp *QP) Connect(c ConnectAttr) error {
	if qp.state != QPReset {
		return fmt.Errorf("%w: connect in state %v", ErrBadConnect, qp.state)
	}
	a, err := c.WithDefaults()
	if err != nil {
		return err
	}
	if !a.LocalIP.IsValid() {
		a.LocalIP = qp.nic.cfg.IPs[0]
	}
	if !qp.nic.hasIP(a.LocalIP) {
		return fmt.Errorf("%w: %v", ErrUnknownAddr, a.LocalIP)
	}
	if a.LocalIP.Is4() != a.RemoteIP.Is4() {
		return fmt.Errorf("%w: local %v and remote %v differ in address family", ErrBadConnect, a.LocalIP, a.RemoteIP)
	}
	qp.attr = a
	qp.localIP = a.LocalIP
	qp.mtu = a.MTU
	qp.udpSrc = roce.UDPSourcePort(qp.qpn, a.RemoteQPN)
	qp.assignPSN, qp.compPSN = qp.sqPSN, qp.sqPSN
	qp.ePSN = a.RemotePSN
	qp.rp.lineMbps = qp.nic.pers.LineRateGbps * 1000
	qp.state = QPRTS
	qp.resetRetries()
	return nil
}

// PostRecv posts a receive buffer for an incoming SEND or WRITE with immediate.
func (qp *QP) PostRecv(wr RecvWR) error {
	if qp.state == QPError {
		return ErrQPState
	}
	if wr.MR == nil || wr.Offset < 0 || wr.Length < 0 || wr.Offset+wr.Length > len(wr.MR.Buf) {
		return fmt.Errorf("%w: receive buffer outside its MR", ErrBadWR)
	}
	qp.rq = append(qp.rq, wr)
	return nil
}

// PostSend posts a WRITE, SEND or READ.
func (qp *QP) PostSend(wr SendWR) error {
	if qp.state != QPRTS {
		return ErrQPState
	}
	if wr.Op < WRWrite || wr.Op > WRRead {
		return fmt.Errorf("%w: opcode %v", ErrBadWR, wr.Op)
	}
	if wr.Local == nil || wr.Offset < 0 || wr.Length < 0 || wr.Offset+wr.Length > len(wr.Local.Buf) {
		return fmt.Errorf("%w: local buffer outside its MR", ErrBadWR)
	}
	if len(qp.sq) >= 1<<16 {
		return ErrQueueFull
	}
	n := max(1, (wr.Length+qp.mtu-1)/qp.mtu)
	if !qp.started {
		qp.started = true
		qp.startAt = qp.nic.loop.Now()
		if j := qp.nic.pers.QPStartJitter; j > 0 {
			qp.startAt += qp.nic.srng.Int64N(int64(j))
		}
	}
	qp.sq = append(qp.sq, &wqe{wr: wr, npkts: n})
	qp.nic.kick()
	return nil
}

// ---- requester: transmission ----

func (qp *QP) readyAt() int64 { return max(qp.rp.readyAt(), qp.startAt) }

// hasDataFrame reports whether nextDataFrame would produce a frame.
func (qp *QP) hasDataFrame() bool {
	if qp.state != QPRTS {
		return false
	}
	if len(qp.respQ) > 0 {
		return true
	}
	if qp.sendIdx >= len(qp.sq) || qp.requestsHeld() {
		return false
	}
	w := qp.sq[qp.sendIdx]
	psn := qp.assignPSN
	if w.assigned {
		psn = w.firstPSN.Add(qp.cursorOff(w))
	}
	if psn.Sub(qp.compPSN) >= qp.nic.pers.MaxOutstandingPSNs {
		return false
	}
	if w.wr.Op == WRRead && !w.assigned && qp.readsOutstanding() >= qp.attr.MaxRdAtomic {
		return false
	}
	if qp.nic.odp != nil && w.wr.Op != WRRead && !qp.sourceReady(w) {
		return false
	}
	return true
}

// cursorOff is the packet offset to send next in w: READs resume after the
// responses already received.
func (qp *QP) cursorOff(w *wqe) int {
	if w.wr.Op == WRRead && w.assigned {
		return max(qp.sendOff, w.readGot)
	}
	return qp.sendOff
}

func (qp *QP) readsOutstanding() int {
	n := 0
	for _, w := range qp.sq {
		if w.wr.Op == WRRead && w.assigned && !w.done {
			n++
		}
	}
	return n
}

// nextDataFrame builds the spec of the next data frame and advances the
// cursor. READ responses go before new requests.
func (qp *QP) nextDataFrame(f *roce.FrameSpec) bool {
	if !qp.hasDataFrame() {
		return false
	}
	*f = roce.FrameSpec{
		SrcMAC: qp.nic.cfg.MAC, DstMAC: qp.attr.RemoteMAC, SrcIP: qp.localIP, DstIP: qp.attr.RemoteIP,
		TOS: qp.attr.TrafficClass, UDPSrc: qp.udpSrc, DestQP: qp.attr.RemoteQPN,
	}
	if len(qp.respQ) > 0 {
		qp.nextReadResponse(f)
		return true
	}
	w := qp.sq[qp.sendIdx]
	if !w.assigned {
		w.assigned = true
		w.firstPSN = qp.assignPSN
		w.lastPSN = w.firstPSN.Add(w.npkts - 1)
		qp.assignPSN = w.lastPSN.Next()
	}
	off := qp.cursorOff(w)
	qp.fillRequest(w, off, f)
	if w.wr.Op == WRRead {
		qp.advanceCursor(w.npkts)
		return true
	}
	last := off == w.npkts-1
	qp.pktsNoAck++
	if last || qp.nic.pers.AckReqEvery > 0 && qp.pktsNoAck >= qp.nic.pers.AckReqEvery {
		f.AckReq = true
		qp.pktsNoAck = 0
	}
	if last {
		f.SE = w.wr.Op == WRWriteImm || w.wr.Op == WRSendImm
	}
	qp.advanceCursor(off + 1)
	return true
}

// fillRequest sets f's PSN, opcode, extension headers and payload for
// packet off of w (a READ: the request for the responses from off on). It
// does not set AckReq (except on READ requests) or SE, nor move the cursor.
func (qp *QP) fillRequest(w *wqe, off int, f *roce.FrameSpec) {
	f.PSN = w.firstPSN.Add(off)
	wr := &w.wr
	if wr.Op == WRRead {
		f.Opcode = roce.RCReadRequest
		f.AckReq = true
		done := off * qp.mtu
		f.RETH = roce.RETHFields{VA: wr.RemoteAddr + uint64(done), RKey: wr.RKey, Length: uint32(wr.Length - done)}
		return
	}
	first, last := off == 0, off == w.npkts-1
	start := wr.Offset + off*qp.mtu
	end := min(start+qp.mtu, wr.Offset+wr.Length)
	f.Payload = wr.Local.Buf[start:end]
	imm := last && (wr.Op == WRWriteImm || wr.Op == WRSendImm)
	switch {
	case wr.Op == WRWrite || wr.Op == WRWriteImm:
		f.Opcode = pick(first, last, imm, roce.RCWriteFirst, roce.RCWriteMiddle, roce.RCWriteLast,
			roce.RCWriteLastWithImmediate, roce.RCWriteOnly, roce.RCWriteOnlyWithImmediate)
		if first {
			f.RETH = roce.RETHFields{VA: wr.RemoteAddr, RKey: wr.RKey, Length: uint32(wr.Length)}
		}
	default:
		f.Opcode = pick(first, last, imm, roce.RCSendFirst, roce.RCSendMiddle, roce.RCSendLast,
			roce.RCSendLastWithImmediate, roce.RCSendOnly, roce.RCSendOnlyWithImmediate)
	}
	if imm {
		f.Immediate = wr.Imm
	}
}

func pick(first, last, imm bool, fst, mid, lst, lstImm, only, onlyImm roce.Opcode) roce.Opcode {
	switch {
	case first && last && imm:
		return onlyImm
	case first && last:
		return only
	case first:
		return fst
	case last && imm:
		return lstImm
	case last:
		return lst
	}
	return mid
}

// advanceCursor sets the cursor to packet off of the current WQE, moving to
// the next WQE when off reaches its end.
func (qp *QP) advanceCursor(off int) {
	w := qp.sq[qp.sendIdx]
	qp.sendOff = off
	if off >= w.npkts {
		qp.sendIdx++
		qp.sendOff = 0
	}
}

// onWire is called when a data frame of this QP leaves the NIC: the
// retransmission timer counts from the last one.
func (qp *QP) onWire(now int64) {
	if qp.state == QPRTS && qp.compPSN != qp.assignPSN {
		qp.lastSend = now
		qp.armTimer()
	}
}

// ---- requester: retransmission timer ----

func (qp *QP) resetRetries() {
	if qp.timeouts > 0 {
		qp.episodes++ // progress ended a timeout episode
	}
	qp.retryLeft = int(qp.attr.RetryCnt)
	if st, ok := qp.adaptiveStage(); ok {
		qp.retryLeft = st.MaxRetries
	}
	qp.rnrLeft = int(qp.attr.RNRRetry)
	qp.timeouts = 0
	qp.firstFactor = 0
}

func (qp *QP) adaptiveStage() (AdaptiveStage, bool) {
	a := qp.nic.pers.Adaptive
	if !qp.nic.cfg.AdaptiveRetrans || len(a) == 0 {
		return AdaptiveStage{}, false
	}
	return a[min(qp.episodes, len(a)-1)], true
}

// ttr is the QP's local ACK timeout T_tr = 4.096 µs × 2^timeout, with the
// personality's floor on the exponent.
func (qp *QP) ttr() time.Duration {
	return roce.TransportTimeout(max(qp.attr.Timeout, qp.nic.pers.MinTimeoutExp))
}

// timeoutInterval is the time from the last transmission (or progress) to
// the next timeout.
func (qp *QP) timeoutInterval() time.Duration {
	if qp.attr.Timeout == 0 {
		return 0 // IBA: timeout 0 is infinite
	}
	if st, ok := qp.adaptiveStage(); ok {
		return st.Interval(qp.timeouts, qp.ttr())
	}
	t := qp.ttr()
	f := qp.nic.pers.TimeoutNextFactor
	if qp.timeouts == 0 {
		if qp.firstFactor == 0 {
			p := &qp.nic.pers
			qp.firstFactor = p.TimeoutFirstFactor
			if p.TimeoutFirstFactorMax > p.TimeoutFirstFactor {
				qp.firstFactor += qp.nic.trng.Float64() * (p.TimeoutFirstFactorMax - p.TimeoutFirstFactor)
			}
		}
		f = qp.firstFactor
	}
	return time.Duration(float64(t) * f)
}

func (qp *QP) armTimer() {
	d := qp.timeoutInterval()
	if d == 0 || qp.state != QPRTS {
		return
	}
	due := qp.lastSend + int64(d)
	if qp.timerDue != 0 && qp.timerDue <= due {
		return // the armed timer fires first and re-checks
	}
	if qp.timer != nil {
		qp.timer.Stop()
	}
	qp.timerDue = due
	qp.timer = qp.nic.loop.AfterFunc(time.Duration(due-qp.nic.loop.Now()), qp.onTimer)
}

func (qp *QP) stopTimer() {
	if qp.timer != nil {
		qp.timer.Stop()
		qp.timer = nil
	}
	qp.timerDue = 0
}

func (qp *QP) onTimer() {
	qp.timer, qp.timerDue = nil, 0
	if qp.state != QPRTS || qp.compPSN == qp.assignPSN {
		return
	}
	if qp.requestsHeld() {
		// An RNR wait or a local page fault holds every request: the
		// go-back that ends it re-arms the timer (odp.go).
		return
	}
	now := qp.nic.loop.Now()
	interval := qp.timeoutInterval()
	if due := qp.lastSend + int64(interval); now < due {
		qp.timerDue = due
		qp.timer = qp.nic.loop.AfterFunc(time.Duration(due-now), qp.onTimer)
		return
	}
	qp.nic.logFire(TimerFire{QPN: qp.qpn, LastSendNs: qp.lastSend, FiredNs: now, IntervalNs: int64(interval)})
	if qp.retryLeft == 0 {
		qp.nic.ctr.ReqTransportRetriesExc++
		qp.fail(StatusRetryExcErr)
		return
	}
	// Mellanox counts expirations that lead to a retry (limit not exceeded).
	qp.nic.ctr.LocalAckTimeoutErr++
	if _, ok := qp.adaptiveStage(); ok {
		qp.nic.ctr.RoCEAdpRetransTo++
	}
	qp.retryLeft--
	qp.timeouts++
	qp.nakActive = false
	qp.goBack(qp.compPSN)
}

// ---- requester: acknowledgements and READ responses ----

func (qp *QP) requesterReceive(p *roce.Packet) {
	psn := p.BTH.PSN()
	qp.rxLen = len(p.Frame)
	if p.Opcode.IsReadResponse() {
		qp.readResponse(p, psn)
		return
	}
	if p.AETH == nil {
		return
	}
	s := p.AETH.Syndrome()
	// packet_seq_err counts "the received NAK sequence error packets" while
	// the retry limit is not exceeded: whatever the requester then does
	// with one (a stale NAK, overtaken by an ACK on its way, or one of an
	// episode already under way starts no retry), it was received.
	seqNAK := s.Type() == roce.AckTypeNAK && s.NAKCode() == roce.NAKPSNSequenceError
	// An ACK/NAK PSN must lie in [compPSN-1, assignPSN): otherwise stale.
	if psn.Sub(qp.compPSN) < -1 || psn.Sub(qp.assignPSN) >= 0 {
		if seqNAK {
			qp.nic.ctr.PacketSeqErr++
		}
		return
	}
	switch s.Type() {
	case roce.AckTypeACK:
		qp.ackUpTo(psn)
	case roce.AckTypeNAK:
		if s.NAKCode() != roce.NAKPSNSequenceError {
			qp.ackUpTo(psn.Add(-1))
			qp.fail(nakStatus(s.NAKCode()))
			return
		}
		// A NAK for a later PSN that the go-back already under way
		// resends (the responder's second NAK of a reordered packet that
		// arrived after the go-back began) starts no second retry: one
		// retry sequence per episode (rxe's started_retry). It is counted.
		inRound := qp.nakActive && qp.goBackTimer == nil && psn.Sub(qp.nakPSN) > 0 && psn.Sub(qp.roundEnd) < 0
		qp.ackUpTo(psn.Add(-1))
		if inRound {
			qp.nic.ctr.PacketSeqErr++
			qp.nakActive = true // the progress it acknowledged does not end the episode
			return
		}
		if qp.nakActive && qp.nakPSN == psn {
			qp.nic.ctr.PacketSeqErr++
			return // one retry sequence per episode
		}
		if qp.startRetry(psn, qp.nic.pers.NakReactionDelay, qp.nic.pers.NakReactionJitter) {
			qp.nic.ctr.PacketSeqErr++
		}
	case roce.AckTypeRNR:
		if psn.Sub(qp.compPSN) < 0 {
			// For a PSN already acknowledged (an ODP responder's NAK for a
			// re-sent request its READ answered meanwhile): stale.
			return
		}
		qp.ackUpTo(psn.Add(-1))
		if qp.rnrLeft == 0 {
			qp.nic.ctr.ReqRNRRetriesExc++
			qp.fail(StatusRNRRetryExcErr)
			return
		}
		qp.nic.ctr.RNRNakRetryErr++
		if qp.rnrLeft != 7 { // 7 = infinite
			qp.rnrLeft--
		}
		qp.stopTimer()
		qp.nakActive, qp.nakPSN = true, psn
		// The wait: no requests, and READ responses from psn on are
		// dropped (odp.go).
		qp.rnrWaiting, qp.rnrPSN = true, psn
		if qp.goBackTimer != nil {
			qp.goBackTimer.Stop()
		}
		qp.goBackTimer = qp.nic.loop.AfterFunc(qp.rnrWait(s.Value()), func() { qp.goBack(psn) })
	}
	qp.completeHead()
}

func nakStatus(c roce.NAKCode) Status {
	switch c {
	case roce.NAKInvalidRequest:
		return StatusRemInvReqErr
	case roce.NAKRemoteAccessError:
		return StatusRemAccessErr
	}
	return StatusRemOpErr
}

// startRetry begins a go-back-N episode at psn after the reaction delay. It
// consumes one retry and reports false if none was left (the QP failed).
func (qp *QP) startRetry(psn roce.PSN, delay, jitter Duration) bool {
	if qp.retryLeft == 0 {
		qp.nic.ctr.ReqTransportRetriesExc++
		qp.fail(StatusRetryExcErr)
		return false
	}
	qp.retryLeft--
	qp.nakActive, qp.nakPSN = true, psn
	// delay is the paper's switch-measured reaction: from the NAK (or the
	// response that implied it) at the switch to the retransmission there.
	d := qp.nic.atNIC(delay, qp.rxLen, qp.dataLenAt(psn)) + qp.nic.jitter(jitter)
	if qp.goBackTimer != nil {
		qp.goBackTimer.Stop()
	}
	qp.goBackTimer = qp.nic.loop.AfterFunc(d, func() { qp.goBack(psn) })
	return true
}

// ackUpTo acknowledges every PSN up to and including a (coalesced ACK).
func (qp *QP) ackUpTo(a roce.PSN) {
	next := a.Next()
	if next.Sub(qp.compPSN) <= 0 {
		return
	}
	for _, w := range qp.sq {
		if !w.assigned || w.done || w.lastPSN.Sub(a) > 0 {
			break
		}
		if w.wr.Op == WRRead {
			// An ACK beyond an incomplete READ: its responses were lost.
			qp.impliedNAK(w.firstPSN.Add(w.readGot))
			return
		}
		w.done = true
	}
	qp.progress(next)
}

// progress records that everything before next is acknowledged.
func (qp *QP) progress(next roce.PSN) {
	if next.Sub(qp.compPSN) <= 0 {
		return
	}
	qp.compPSN = next
	qp.nakActive = false
	qp.resetRetries()
	qp.lastSend = qp.nic.loop.Now()
	if qp.compPSN == qp.assignPSN {
		qp.stopTimer()
	} else {
		qp.armTimer()
	}
}

func (qp *QP) readResponse(p *roce.Packet, psn roce.PSN) {
	if qp.localFault != nil || qp.rnrWaiting && psn.Sub(qp.rnrPSN) >= 0 {
		return // dropped while waiting (odp.go)
	}
	var w *wqe
	idx := -1
	for i, x := range qp.sq {
		if x.wr.Op == WRRead && x.assigned && !x.done && psn.InWindow(x.firstPSN, uint32(x.npkts)) {
			w, idx = x, i
			break
		}
	}
	if w == nil {
		return // stale or duplicate
	}
	want := w.firstPSN.Add(w.readGot)
	switch d := psn.Sub(want); {
	case d < 0:
		return // duplicate response
	case d > 0:
		qp.impliedNAK(want)
		return
	}
	if qp.nic.odp != nil && qp.readDestFaults(w, psn) {
		return // dropped, no NAK: the go-back comes when the fault resolves
	}
	// In order: everything before this READ is done (the responder
	// executes in order), and this packet's data lands in the buffer.
	for _, x := range qp.sq[:idx] {
		if x.wr.Op != WRRead {
			x.done = true
		}
	}
	off := w.wr.Offset + w.readGot*qp.mtu
	copy(w.wr.Local.Buf[off:w.wr.Offset+w.wr.Length], p.Payload)
	w.readGot++
	if w.readGot == w.npkts {
		w.done = true
	}
	qp.progress(psn.Next())
	qp.completeHead()
}

// impliedNAK re-issues a READ from the first missing response PSN.
func (qp *QP) impliedNAK(missing roce.PSN) {
	if qp.nakActive && qp.nakPSN == missing {
		return
	}
	if qp.startRetry(missing, qp.nic.pers.NakReactionDelay, qp.nic.pers.NakReactionJitter) {
		qp.nic.ctr.ImpliedNakSeqErr++
	}
}

// goBack restarts transmission at psn (Go-back-N).
func (qp *QP) goBack(psn roce.PSN) {
	qp.goBackTimer = nil
	qp.rnrWaiting = false
	if qp.state != QPRTS {
		return
	}
	qp.roundEnd = qp.assignPSN
	if qp.sendIdx < len(qp.sq) && qp.sq[qp.sendIdx].assigned {
		qp.roundEnd = qp.sq[qp.sendIdx].firstPSN.Add(qp.sendOff)
	}
	for i, w := range qp.sq {
		if w.assigned && psn.InWindow(w.firstPSN, uint32(w.npkts)) {
			qp.sendIdx, qp.sendOff = i, psn.Sub(w.firstPSN)
			qp.pktsNoAck = 0
			qp.lastSend = qp.nic.loop.Now()
			// The timer counts from the go-back, whether or not the
			// retransmission can leave: a QP whose port stays paused (a
			// PFC deadlock or storm) times out again and ends by its
			// retry limit, as the transport timer of a NIC whose queue
			// holds the request.
			qp.armTimer()
			qp.nic.kick()
			return
		}
	}
}

// completeHead emits completions for finished WQEs in posting order.
func (qp *QP) completeHead() {
	popped := false
	for len(qp.sq) > 0 && qp.sq[0].done {
		popped = true
		w := qp.sq[0]
		qp.sq = qp.sq[1:]
		if qp.sendIdx > 0 {
			qp.sendIdx--
		} else {
			qp.sendOff = 0
		}
		op := CompWrite
		switch w.wr.Op {
		case WRSend, WRSendImm:
			op = CompSend
		case WRRead:
			op = CompRead
		}
		qp.nic.complete(Completion{QPN: qp.qpn, WRID: w.wr.ID, Status: StatusSuccess, Op: op, ByteLen: w.wr.Length})
	}
	if popped {
		qp.resetRetries() // a new head message: the adaptive stage may change
	}
}

// fail completes the oldest WQE with status, flushes the rest and moves the
// QP to the error state.
func (qp *QP) fail(st Status) {
	qp.stopTimer()
	if qp.goBackTimer != nil {
		qp.goBackTimer.Stop()
	}
	qp.state = QPError
	qp.nic.ctr.ReqCQEError++
	for i, w := range qp.sq {
		s := st
		if i > 0 {
			s = StatusWRFlushErr
		}
		qp.nic.complete(Completion{QPN: qp.qpn, WRID: w.wr.ID, Status: s, Op: CompSend})
	}
	qp.sq = nil
	for _, r := range qp.rq {
		qp.nic.complete(Completion{QPN: qp.qpn, WRID: r.ID, Status: StatusWRFlushErr, Op: CompRecv})
	}
	qp.rq = nil
	qp.respQ = nil
	qp.rnrWaiting, qp.localFault, qp.rspFault, qp.dupServing = false, nil, nil, 0
}
