package softrnic

import (
	"github.com/netlumina/lumina/roce"
)

// responderReceive handles a request packet (SEND, WRITE, READ request).
func (qp *QP) responderReceive(p *roce.Packet) {
	psn := p.BTH.PSN()
	if qp.rspFault != nil {
		// A request's page fault is pending (odp.go): the faulting
		// request itself, re-sent after an RNR wait shorter than the
		// fault, is still not ready and gets another RNR NAK; any other
		// request is dropped silently.
		if psn == qp.rspFaultPSN {
			qp.odpRNRNak(psn, len(p.Frame), qp.msn, qp.rspFault, nil)
		}
		return
	}
	switch d := psn.Sub(qp.ePSN); {
	case d > 0: // gap: a packet was lost
		if qp.nakSent {
			return // one NAK per loss episode: drop silently
		}
		qp.nakSent = true
		qp.nic.ctr.OutOfSequence++
		delay := qp.nic.pers.NakGenDelay
		if qp.nic.pers.NakGenDelayLastPacket > 0 && qp.nearMessageEnd(p, int(d)) {
			delay = qp.nic.pers.NakGenDelayLastPacket
		}
		nakPSN, msn := qp.ePSN, qp.msn
		// delay is switch-measured: from the out-of-order packet at the
		// switch to the NAK there (calibrate.go).
		qp.nic.loop.AfterFunc(qp.nic.atNIC(delay, len(p.Frame), qp.ackLen()), func() {
			if qp.state != QPRTS {
				return
			}
			qp.sendAck(roce.NAKSyndrome(roce.NAKPSNSequenceError), nakPSN, msn)
			if qp.nic.cfg.SlowRestart && qp.nic.pers.CNPOnNAK {
				before := qp.nic.ctr.NPCNPSent
				qp.nic.maybeCNP(qp)
				if qp.nic.ctr.NPCNPSent != before {
					qp.nic.ctr.RoCESlowRestartCNPs++
				}
			}
		})
		return
	case d < 0: // duplicate
		qp.nic.ctr.DuplicateRequest++
		if p.Opcode.IsReadRequest() {
			if qp.nic.cfg.ODPInTest {
				qp.serveDupReadSlow(p, psn)
				return
			}
			qp.serveRead(p, psn, false)
			return
		}
		// A duplicate SEND/WRITE is not executed again; it is
		// acknowledged again with the last executed PSN and the current
		// MSN (every duplicate with AckEveryDuplicate, IBA C9-105).
		if p.BTH.AckReq() || qp.nic.pers.AckEveryDuplicate {
			qp.sendAck(roce.ACKSyndrome(roce.CreditCountInvalid), qp.ePSN.Add(-1), qp.msn)
		}
		return
	}
	if qp.dupServing > 0 {
		return // a new request while a duplicate READ is served on the slow path: dropped (odp.go)
	}
	qp.nakSent = false
	op := p.Opcode
	switch {
	case op.IsReadRequest():
		if qp.inMsg {
			qp.responderError(psn, roce.NAKInvalidRequest)
			return
		}
		qp.nic.ctr.RxReadRequests++
		qp.serveRead(p, psn, true)
	case op.IsWrite():
		qp.writePacket(p, psn)
	case op.IsSend():
		qp.sendPacket(p, psn)
	default:
		qp.responderError(psn, roce.NAKInvalidRequest) // atomics etc. are not supported
	}
}

// nearMessageEnd reports whether the out-of-order packet p, d packets
// past the expected one, is one of the last NakGenSlowLastPackets packets
// of its message: a LAST or ONLY packet, or a WRITE packet whose position
// follows from the DMA length of the message in progress.
func (qp *QP) nearMessageEnd(p *roce.Packet, d int) bool {
	if p.Opcode.IsLast() {
		return true
	}
	n := qp.nic.pers.NakGenSlowLastPackets
	if n <= 1 || !qp.inMsg || qp.msgIsSnd || p.Opcode.IsFirst() {
		return false
	}
	total := (len(qp.dst) + qp.mtu - 1) / qp.mtu
	idx := qp.dstOff/qp.mtu + d
	return idx < total && total-idx <= n
}

// checkSequence verifies FIRST/MIDDLE/LAST ordering and the payload length.
func (qp *QP) checkSequence(p *roce.Packet, psn roce.PSN) bool {
	op := p.Opcode
	if op.IsFirst() == qp.inMsg {
		qp.responderError(psn, roce.NAKInvalidRequest)
		return false
	}
	if !op.IsLast() && p.PayloadLen != qp.mtu || p.PayloadLen > qp.mtu {
		qp.responderError(psn, roce.NAKInvalidRequest)
		return false
	}
	return true
}

func (qp *QP) writePacket(p *roce.Packet, psn roce.PSN) {
	if !qp.checkSequence(p, psn) {
		return
	}
	op := p.Opcode
	hasImm := op.HasImmDt()
	if hasImm && len(qp.rq) == 0 {
		qp.rnrNAK(psn)
		return
	}
	if op.IsFirst() {
		qp.nic.ctr.RxWriteRequests++
		length := int(p.RETH.DMALength())
		dst, mr, off := qp.nic.lookupMR(p.RETH.RKey(), p.RETH.VirtualAddress(), length)
		if dst == nil {
			qp.responderError(psn, roce.NAKRemoteAccessError)
			return
		}
		if f := qp.nic.odpAccess(mr, off, length); f != nil {
			qp.odpResponderFault(f, psn, len(p.Frame), nil) // discarded
			return
		}
		qp.dst, qp.dstOff, qp.msgIsSnd = dst, 0, false
	}
	if qp.dstOff+p.PayloadLen > len(qp.dst) {
		qp.responderError(psn, roce.NAKInvalidRequest)
		return
	}
	copy(qp.dst[qp.dstOff:], p.Payload)
	qp.dstOff += p.PayloadLen
	qp.inMsg = !op.IsLast()
	if op.IsLast() {
		if qp.dstOff != len(qp.dst) {
			qp.responderError(psn, roce.NAKInvalidRequest)
			return
		}
		if hasImm {
			r := qp.rq[0]
			qp.rq = qp.rq[1:]
			qp.nic.complete(Completion{QPN: qp.qpn, WRID: r.ID, Op: CompRecvWithImm, Imm: p.ImmDt.Immediate(), HasImm: true})
		}
	}
	qp.executed(p, psn)
}

func (qp *QP) sendPacket(p *roce.Packet, psn roce.PSN) {
	if !qp.checkSequence(p, psn) {
		return
	}
	op := p.Opcode
	if op.IsFirst() {
		if len(qp.rq) == 0 {
			qp.rnrNAK(psn)
			return
		}
		if r := qp.rq[0]; qp.nic.odp != nil {
			if f := qp.nic.odpAccess(r.MR, r.Offset, r.Length); f != nil {
				qp.odpResponderFault(f, psn, len(p.Frame), nil) // discarded, the receive WQE kept
				return
			}
		}
		qp.nic.ctr.RxSendRequests++
		qp.recvWR = qp.rq[0]
		qp.rq = qp.rq[1:]
		r := qp.recvWR
		qp.dst, qp.dstOff, qp.msgIsSnd = r.MR.Buf[r.Offset:r.Offset+r.Length], 0, true
	}
	if qp.dstOff+p.PayloadLen > len(qp.dst) {
		qp.nic.ctr.RespCQEError++
		qp.nic.complete(Completion{QPN: qp.qpn, WRID: qp.recvWR.ID, Status: StatusLocLenErr, Op: CompRecv})
		qp.responderError(psn, roce.NAKInvalidRequest)
		return
	}
	copy(qp.dst[qp.dstOff:], p.Payload)
	qp.dstOff += p.PayloadLen
	qp.inMsg = !op.IsLast()
	if op.IsLast() {
		c := Completion{QPN: qp.qpn, WRID: qp.recvWR.ID, Op: CompRecv, ByteLen: qp.dstOff}
		if op.HasImmDt() {
			c.Imm, c.HasImm = p.ImmDt.Immediate(), true
		}
		qp.nic.complete(c)
	}
	qp.executed(p, psn)
}

// executed advances the expected PSN past an executed SEND/WRITE packet and
// acknowledges it if asked to.
func (qp *QP) executed(p *roce.Packet, psn roce.PSN) {
	qp.ePSN = psn.Next()
	if p.Opcode.IsLast() {
		qp.msn = (qp.msn + 1) & roce.PSNMask
	}
	if p.BTH.AckReq() {
		qp.sendAck(roce.ACKSyndrome(roce.CreditCountInvalid), psn, qp.msn)
	}
}

// serveRead queues the responses of a READ request at psn. A duplicate
// (re-issued) request replays from its PSN without advancing the expected
// PSN or the MSN. A fresh request whose source faults (ODP) is executed
// when the fault resolves, after an RNR NAK.
func (qp *QP) serveRead(p *roce.Packet, psn roce.PSN, fresh bool) {
	length := int(p.RETH.DMALength())
	src, mr, off := qp.nic.lookupMR(p.RETH.RKey(), p.RETH.VirtualAddress(), length)
	if src == nil {
		if fresh {
			qp.responderError(psn, roce.NAKRemoteAccessError)
		}
		return
	}
	if fresh {
		if f := qp.nic.odpAccess(mr, off, length); f != nil {
			qp.odpResponderFault(f, psn, len(p.Frame), func() { qp.executeRead(src, psn, true, false) })
			return
		}
	}
	qp.executeRead(src, psn, fresh, false)
}

// serveDupReadSlow answers the duplicate READ request p after the
// personality's ODPDupReadDelay; new requests are dropped until its
// response has left (odp.go).
func (qp *QP) serveDupReadSlow(p *roce.Packet, psn roce.PSN) {
	length := int(p.RETH.DMALength())
	src, _, _ := qp.nic.lookupMR(p.RETH.RKey(), p.RETH.VirtualAddress(), length)
	if src == nil {
		return
	}
	qp.dupServing++
	n := qp.nic
	n.loop.AfterFunc(n.atNIC(n.pers.ODPDupReadDelay, len(p.Frame), qp.readResponseLen(length)), func() {
		if qp.state != QPRTS {
			return
		}
		qp.executeRead(src, psn, false, true)
	})
}

// readResponseLen is the length of the first response frame of a READ of
// length bytes.
func (qp *QP) readResponseLen(length int) int {
	f := roce.FrameSpec{SrcIP: qp.localIP, DstIP: qp.attr.RemoteIP, Opcode: roce.RCReadResponseOnly, Payload: make([]byte, min(length, qp.mtu))}
	if length > qp.mtu {
		f.Opcode = roce.RCReadResponseFirst
	}
	return f.Len()
}

// executeRead queues the responses of the READ of src at psn (a
// slow-path duplicate: dup).
func (qp *QP) executeRead(src []byte, psn roce.PSN, fresh, dup bool) {
	n := max(1, (len(src)+qp.mtu-1)/qp.mtu)
	if fresh {
		qp.ePSN = psn.Add(n)
		qp.msn = (qp.msn + 1) & roce.PSNMask
	} else {
		// A re-issued request supersedes responses still queued for the
		// same PSNs.
		q := qp.respQ[:0]
		for _, r := range qp.respQ {
			if !r.psn.InWindow(psn, uint32(n)) {
				q = append(q, r)
			} else if r.dup {
				qp.dupServing-- // superseded: its window ends
			}
		}
		qp.respQ = q
	}
	qp.respQ = append(qp.respQ, &readResp{psn: psn, data: src, n: n, msn: qp.msn, dup: dup})
	qp.nic.kick()
}

// takeDupEnd reports (once) whether the frame just built ends a
// slow-path duplicate's response.
func (qp *QP) takeDupEnd() bool {
	d := qp.dupEndNext
	qp.dupEndNext = false
	return d
}

// dupServed ends a slow-path duplicate's window: its last response
// frame has left.
func (qp *QP) dupServed() {
	if qp.dupServing > 0 {
		qp.dupServing--
	}
}

// nextReadResponse fills f with the next READ response packet.
func (qp *QP) nextReadResponse(f *roce.FrameSpec) {
	r := qp.respQ[0]
	first, last := r.sent == 0, r.sent == r.n-1
	f.PSN = r.psn
	f.DestQP = qp.attr.RemoteQPN
	k := min(qp.mtu, len(r.data))
	f.Payload = r.data[:k]
	switch {
	case first && last:
		f.Opcode = roce.RCReadResponseOnly
	case first:
		f.Opcode = roce.RCReadResponseFirst
	case last:
		f.Opcode = roce.RCReadResponseLast
	default:
		f.Opcode = roce.RCReadResponseMiddle
	}
	f.AETH = roce.AETHFields{Syndrome: roce.ACKSyndrome(roce.CreditCountInvalid), MSN: r.msn}
	r.data = r.data[k:]
	r.psn = r.psn.Next()
	r.sent++
	if r.sent == r.n {
		qp.respQ = qp.respQ[1:]
		qp.dupEndNext = r.dup
	}
}

func (qp *QP) rnrNAK(psn roce.PSN) {
	qp.nic.ctr.OutOfBuffer++
	qp.sendAck(roce.RNRSyndrome(qp.attr.MinRNRTimer), psn, qp.msn)
}

// responderError NAKs a request with a class C error and moves the QP to
// the error state.
func (qp *QP) responderError(psn roce.PSN, code roce.NAKCode) {
	qp.sendAck(roce.NAKSyndrome(code), psn, qp.msn)
	qp.nic.ctr.RespCQEError++
	qp.fail(StatusWRFlushErr)
}

// sendAck sends an ACKNOWLEDGE with syndrome s for psn.
func (qp *QP) sendAck(s roce.Syndrome, psn roce.PSN, msn uint32) {
	f := roce.FrameSpec{
		SrcMAC: qp.nic.cfg.MAC, DstMAC: qp.attr.RemoteMAC, SrcIP: qp.localIP, DstIP: qp.attr.RemoteIP,
		TOS: qp.attr.TrafficClass, UDPSrc: qp.udpSrc, Opcode: roce.RCAcknowledge, DestQP: qp.attr.RemoteQPN,
		PSN: psn, AETH: roce.AETHFields{Syndrome: s, MSN: msn},
	}
	qp.nic.sendControl(&f)
}
