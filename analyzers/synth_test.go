package analyzers

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// synth generates a long mirror trace without allocating per packet:
// nConns WRITE connections take turns sending 16-packet messages, each
// acknowledged by one ACK; every dropEvery-th message loses its 6th packet
// (NAK, go-back-N from it), every ecnEvery-th message has an ECN-marked
// packet answered by a CNP. Frames are templates patched in place (PSN,
// mirror sequence number, timestamp, event); their ICRC is not updated,
// which the analyzers do not check.
type synth struct {
	conns     []model.Connection
	data      [][]byte // per connection: WRITE MIDDLE template (full frame)
	ack, cnp  [][]byte
	dropEvery int
	ecnEvery  int

	ops     []op
	opi     int
	msgs    int
	psn     []roce.PSN
	seq     uint64
	ts      int64
	index   int
	dataLen int
}

type op struct {
	conn  int
	kind  byte // 'd' data, 'l' last data, 'a' ACK, 'n' NAK, 'c' CNP
	psn   roce.PSN
	event roce.Event
}

const synthMsgPkts = 16

func newSynth(tb testing.TB, nConns int) *synth {
	s := &synth{dropEvery: 50, ecnEvery: 20, ops: make([]op, 0, 64)}
	for i := range nConns {
		c := model.Connection{ID: i, Verb: model.VerbWrite,
			Requester: model.Endpoint{IP: netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), QPN: uint32(0x1000 + i), IPSN: uint32(0xFFFF00 + i*7)},
			Responder: model.Endpoint{IP: netip.MustParseAddr("10.0.0.1"), QPN: uint32(0x2000 + i)}}
		s.conns = append(s.conns, c)
		s.psn = append(s.psn, roce.PSN(c.Requester.IPSN))
		mk := func(f roce.FrameSpec) []byte {
			b, err := f.Append(nil)
			if err != nil {
				tb.Fatal(err)
			}
			return b
		}
		toRsp := roce.FrameSpec{SrcIP: c.Requester.IP, DstIP: c.Responder.IP, DestQP: c.Responder.QPN, TOS: 2, UDPSrc: 0xC000}
		toReq := roce.FrameSpec{SrcIP: c.Responder.IP, DstIP: c.Requester.IP, DestQP: c.Requester.QPN, TOS: 2, UDPSrc: 0xC001}
		d := toRsp
		d.Opcode, d.Payload = roce.RCWriteMiddle, make([]byte, 1024)
		a := toReq
		a.Opcode, a.AETH = roce.RCAcknowledge, roce.AETHFields{Syndrome: roce.ACKSyndrome(roce.CreditCountInvalid)}
		cn := toReq
		cn.Opcode, cn.BECN, cn.TOS = roce.CNP, true, 0xC2
		s.data, s.ack, s.cnp = append(s.data, mk(d)), append(s.ack, mk(a)), append(s.cnp, mk(cn))
	}
	s.dataLen = len(s.data[0])
	return s
}

// plan queues the packets of the next message.
func (s *synth) plan() {
	s.ops, s.opi = s.ops[:0], 0
	c := s.msgs % len(s.conns)
	s.msgs++
	m := s.msgs
	base := s.psn[c]
	lost := -1
	if m%s.dropEvery == 0 {
		lost = 5
	}
	for k := range synthMsgPkts {
		o := op{conn: c, kind: 'd', psn: base.Add(k)}
		if k == synthMsgPkts-1 {
			o.kind = 'l'
		}
		if k == lost {
			o.event = roce.EventDrop
		}
		if m%s.ecnEvery == 0 && k == 8 {
			o.event = roce.EventECN
		}
		s.ops = append(s.ops, o)
		if o.event == roce.EventECN {
			s.ops = append(s.ops, op{conn: c, kind: 'c'})
		}
		if lost >= 0 && k == lost+1 {
			s.ops = append(s.ops, op{conn: c, kind: 'n', psn: base.Add(lost)})
		}
	}
	if lost >= 0 {
		for k := lost; k < synthMsgPkts; k++ {
			kind := byte('d')
			if k == synthMsgPkts-1 {
				kind = 'l'
			}
			s.ops = append(s.ops, op{conn: c, kind: kind, psn: base.Add(k)})
		}
	}
	s.ops = append(s.ops, op{conn: c, kind: 'a', psn: base.Add(synthMsgPkts - 1)})
	s.psn[c] = base.Add(synthMsgPkts)
}

// next returns the next frame (valid until the following call) as a
// trace.Packet.
func (s *synth) next() trace.Packet {
	if s.opi == len(s.ops) {
		s.plan()
	}
	o := s.ops[s.opi]
	s.opi++
	var f []byte
	switch o.kind {
	case 'd', 'l':
		f = s.data[o.conn]
		f[42] = byte(roce.RCWriteMiddle)
		f[42+8] = 0
		if o.kind == 'l' {
			f[42] = byte(roce.RCWriteLast)
			f[42+8] = 0x80
		}
	case 'a', 'n':
		f = s.ack[o.conn]
		f[54] = byte(roce.ACKSyndrome(roce.CreditCountInvalid))
		if o.kind == 'n' {
			f[54] = byte(roce.NAKSyndrome(roce.NAKPSNSequenceError))
		}
	case 'c':
		f = s.cnp[o.conn]
	}
	roce.BTH(f[42:54]).SetPSN(o.psn)
	s.seq++
	s.ts += 100
	putMAC48(f[0:6], uint64(s.ts))
	putMAC48(f[6:12], s.seq)
	f[14+8] = byte(o.event)
	f[14+1] = f[14+1]&^3 | 2
	if o.event == roce.EventECN {
		f[14+1] |= 3
	}
	p := trace.Packet{Index: s.index, TimeNs: s.ts, Data: f, OrigLen: len(f), LinkType: trace.LinkTypeEthernet}
	s.index++
	return p
}

func putMAC48(b []byte, v uint64) {
	binary.BigEndian.PutUint16(b, uint16(v>>32))
	binary.BigEndian.PutUint32(b[2:], uint32(v))
}

// pcap writes n packets of s as a trace with the dumpers' snap length.
func (s *synth) pcap(tb testing.TB, n int) []byte { return s.pcapSnap(tb, n, 128) }

// pcapSnap is pcap with frames cut to snaplen bytes.
func (s *synth) pcapSnap(tb testing.TB, n, snaplen int) []byte {
	var buf bytes.Buffer
	buf.Grow(n * (16 + snaplen))
	w, err := trace.NewPcapWriter(&buf, snaplen, trace.LinkTypeEthernet)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n || s.opi < len(s.ops); i++ { // end with a whole message
		p := s.next()
		if err := w.WritePacket(p.TimeNs, p.Data, p.OrigLen); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}
