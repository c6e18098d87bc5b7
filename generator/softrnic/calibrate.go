package softrnic

import (
	"time"

	"github.com/netlumina/lumina/roce"
)

// Calibration: the Lumina paper measured every NIC latency at the switch
// (§4, Fig. 5): NACK generation from the out-of-order packet's switch
// timestamp to the NAK's, NACK reaction from the NAK's to the
// retransmission's. Those spans include the frames' time on the link
// between the switch and the NIC, once in each direction. The personality
// fields hold the paper's switch-measured values; the NIC subtracts the
// path its two frames travel, as its port's link model gives it
// (sim.PathModel: serialization of each frame at the link's speed plus
// propagation), so that what the analyzers read at the switch is the
// personality's value for every link speed, MTU and frame size. A port
// without a link model (a real interface) subtracts nothing: there the
// wire is real and the paper's cables were a few metres.

// atNIC returns the NIC-internal part of a latency the paper measured at
// the switch: atSwitch minus the link time of the received frame (rxLen
// bytes, switch → NIC) and of the frame sent in response (txLen bytes,
// NIC → switch), never negative.
func (n *NIC) atNIC(atSwitch Duration, rxLen, txLen int) time.Duration {
	d := time.Duration(atSwitch)
	if n.path == nil || d <= 0 {
		return d
	}
	return max(0, d-n.path.FrameDelay(rxLen)-n.path.FrameDelay(txLen))
}

// ackLen is the length of the ACK/NAK frames qp sends.
func (qp *QP) ackLen() int {
	f := roce.FrameSpec{SrcIP: qp.localIP, DstIP: qp.attr.RemoteIP, Opcode: roce.RCAcknowledge}
	return f.Len()
}

// dataLenAt is the length of the request frame qp sends (or resends) for
// psn: the first frame of a go-back there. Zero if no posted WQE holds psn.
func (qp *QP) dataLenAt(psn roce.PSN) int {
	for _, w := range qp.sq {
		if !w.assigned || !psn.InWindow(w.firstPSN, uint32(w.npkts)) {
			continue
		}
		f := roce.FrameSpec{SrcIP: qp.localIP, DstIP: qp.attr.RemoteIP}
		qp.fillRequest(w, psn.Sub(w.firstPSN), &f)
		return f.Len()
	}
	return 0
}
