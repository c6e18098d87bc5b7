package tracetest

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// MTU is the payload of FIRST/MIDDLE data packets and READ responses.
const MTU = 1024

// Conns returns n WRITE connections 10.0.0.(11+i) → 10.0.0.1 with the
// given requester IPSN.
func Conns(n int, ipsn uint32, verb model.Verb) []model.Connection {
	var cs []model.Connection
	for i := range n {
		cs = append(cs, model.Connection{ID: i, Verb: verb,
			Requester: model.Endpoint{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(11 + i)}), QPN: uint32(0x100 + i), IPSN: ipsn},
			Responder: model.Endpoint{IP: netip.MustParseAddr("10.0.0.1"), QPN: uint32(0x200 + i), IPSN: 0x500}})
	}
	return cs
}

// Options of Build.
type Options struct {
	// Foreign writes a capture without mirror metadata: real MACs, TTL 64,
	// and dropped packets left out (as a capture at the receiver would).
	Foreign bool
	// Step is the default time between packets in ns. Default 100.
	Step int64
}

// Frame is one built frame.
type Frame struct {
	TimeNs int64
	Data   []byte
	Event  roce.Event
	// QDepth is the egress queue depth its mirror copy carries (bytes).
	QDepth int64
	// Wrapped, when set, makes the frame (a PFC or PAUSE frame) a wrapped
	// mirror copy (roce.AppendMACMirror) seen on switch port Port, sent by
	// the switch if Sent.
	Wrapped bool
	Port    uint16
	Sent    bool
	// Switch is the logical switch that made the copy (a fabric; each
	// switch numbers its copies from 1).
	Switch uint8
}

// Frames builds the frames of script.
func Frames(conns []model.Connection, script string, opt Options) ([]Frame, error) {
	step := opt.Step
	if step == 0 {
		step = 100
	}
	t := int64(1_000_000)
	next := step
	var out []Frame
	payload := bytes.Repeat([]byte{0xab}, MTU)
	for _, tok := range strings.Fields(script) {
		if strings.HasPrefix(tok, "@") {
			v, err := strconv.ParseInt(tok[1:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad delay %q", tok)
			}
			next = v
			continue
		}
		t += next
		next = step
		ci := 0
		if i := strings.IndexByte(tok, '/'); i >= 0 {
			v, err := strconv.Atoi(tok[:i])
			if err != nil || v >= len(conns) {
				return nil, fmt.Errorf("bad connection in %q", tok)
			}
			ci, tok = v, tok[i+1:]
		}
		c := conns[ci]
		ev := roce.EventNone
		ackReq := false
		for len(tok) > 1 {
			switch tok[len(tok)-1] {
			case 'x':
				ev = roce.EventDrop
			case 'c':
				ev = roce.EventCorrupt
			case 'e':
				ev = roce.EventECN
			case 'd':
				ev = roce.EventDelay
			case 'o':
				ev = roce.EventReorder
			case '+':
				ev = roce.EventDuplicate
			case 'a':
				ackReq = true
			default:
				goto parsed
			}
			tok = tok[:len(tok)-1]
		}
	parsed:
		req, rsp := c.Requester, c.Responder
		toRsp := roce.FrameSpec{SrcIP: req.IP, DstIP: rsp.IP, DestQP: rsp.QPN, TOS: 2, UDPSrc: 0xC000,
			SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2}}
		toReq := roce.FrameSpec{SrcIP: rsp.IP, DstIP: req.IP, DestQP: req.QPN, TOS: 2, UDPSrc: 0xC001,
			SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}}
		ipsn := roce.PSN(req.IPSN)
		num := func(s string) (roce.PSN, error) {
			v, err := strconv.Atoi(s)
			if err != nil {
				return 0, fmt.Errorf("bad PSN in %q", tok)
			}
			return ipsn.Add(v), nil
		}
		var f roce.FrameSpec
		var err error
		switch {
		case tok == "C":
			f = toReq
			f.Opcode, f.BECN, f.TOS, f.UDPSrc = roce.CNP, true, 0xC2, 0
		case tok == "Cr":
			f = toRsp
			f.Opcode, f.BECN, f.TOS, f.UDPSrc = roce.CNP, true, 0xC2, 0
		case tok[0] == 'A' || tok[0] == 'N' || tok[0] == 'R' || tok[0] == 'F':
			f = toReq
			f.Opcode = roce.RCAcknowledge
			ps, m, ok := strings.Cut(tok[1:], "#")
			if ok {
				v, err := strconv.ParseUint(m, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("bad MSN in %q", tok)
				}
				f.AETH.MSN = uint32(v)
			}
			timer := uint8(1)
			if tok[0] == 'R' {
				if p, c, ok := strings.Cut(ps, ":"); ok {
					v, err := strconv.ParseUint(c, 10, 5)
					if err != nil {
						return nil, fmt.Errorf("bad RNR timer in %q", tok)
					}
					ps, timer = p, uint8(v)
				}
			}
			f.PSN, err = num(ps)
			f.AETH.Syndrome = map[byte]roce.Syndrome{'A': roce.ACKSyndrome(roce.CreditCountInvalid),
				'N': roce.NAKSyndrome(roce.NAKPSNSequenceError), 'R': roce.RNRSyndrome(timer),
				'F': roce.NAKSyndrome(roce.NAKRemoteAccessError)}[tok[0]]
		case tok[0] == 'Q':
			f = toRsp
			f.Opcode, f.AckReq = roce.RCReadRequest, true
			ps, n, ok := strings.Cut(tok[1:], ":")
			k := 1
			if ok {
				if k, err = strconv.Atoi(n); err != nil {
					return nil, fmt.Errorf("bad READ length in %q", tok)
				}
			}
			f.PSN, err = num(ps)
			f.RETH = roce.RETHFields{VA: 0x1000, RKey: 7, Length: uint32(k * MTU)}
		case tok[0] == 'r':
			f = toReq
			f.Opcode, f.Payload = roce.RCReadResponseMiddle, payload
			f.PSN, err = num(tok[1:])
		case tok[0] == 's':
			f = toRsp
			f.Opcode, f.Payload = roce.RCSendMiddle, payload
			f.PSN, err = num(tok[1:])
		default:
			f = toRsp
			f.Opcode, f.Payload = roce.RCWriteMiddle, payload
			f.PSN, err = num(tok)
		}
		if err != nil {
			return nil, err
		}
		f.AckReq = f.AckReq || ackReq
		if ev == roce.EventECN && opt.Foreign {
			f.TOS |= 3
		}
		b, err := f.Append(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Frame{TimeNs: t, Data: b, Event: ev})
	}
	return out, nil
}

// Pcap writes frames as a trace: mirror copies (sequence numbers from 1,
// switch timestamps, events in the TTL) unless opt.Foreign.
func Pcap(frames []Frame, opt Options) ([]byte, error) {
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, 128, trace.LinkTypeEthernet)
	if err != nil {
		return nil, err
	}
	var seqs [roce.MaxSwitches]uint64
	for _, f := range frames {
		b := f.Data
		seq := &seqs[f.Switch%roce.MaxSwitches]
		switch {
		case f.Wrapped && opt.Foreign:
			continue
		case f.Wrapped:
			*seq++
			b = roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: *seq, Switch: f.Switch, TimestampNs: uint64(f.TimeNs), Event: f.Event}, f.Sent, f.Port, f.Data)
		case opt.Foreign:
			if f.Event == roce.EventDrop {
				continue
			}
		default:
			b = bytes.Clone(b)
			*seq++
			if !roce.ApplyMirror(b, roce.MirrorMeta{Seq: *seq, Switch: f.Switch, TimestampNs: uint64(f.TimeNs), Event: f.Event, QDepth: f.QDepth}, roce.DefaultMirrorPort, 0x1234) ||
				!roce.RestoreMirror(b, roce.DefaultMirrorPort) {
				return nil, fmt.Errorf("mirror codec failed")
			}
		}
		if err := w.WritePacket(f.TimeNs, b, len(b)); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// Build is Frames then Pcap, failing the test on error.
func Build(t testing.TB, conns []model.Connection, script string, opt Options) []byte {
	t.Helper()
	fr, err := Frames(conns, script, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Pcap(fr, opt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Pkts decodes a trace built by Build into model packets for conns.
func Pkts(t testing.TB, conns []model.Connection, pcap []byte, mirror bool) (*model.Table, []model.Pkt) {
	t.Helper()
	tab := model.NewTable(conns)
	d := model.Decoder{Mirror: mirror, MTU: MTU, Table: tab}
	r, err := trace.NewReader(bytes.NewReader(pcap))
	if err != nil {
		t.Fatal(err)
	}
	var out []model.Pkt
	for {
		tp, err := r.Next()
		if err != nil {
			break
		}
		var p model.Pkt
		if d.Decode(&tp, &p) {
			out = append(out, p)
		}
	}
	return tab, out
}

// Script decodes and returns the packets of script on conns (mirror trace).
func Script(t testing.TB, conns []model.Connection, script string) (*model.Table, []model.Pkt) {
	t.Helper()
	return Pkts(t, conns, Build(t, conns, script, Options{}), true)
}

// Host is a traffic host of a many-host trace: its name, address and
// switch port.
type Host struct {
	Name string
	IP   netip.Addr
	Port uint16
}

// Flow is a flow of a many-host trace: QPs WRITE connections from host
// From to host To.
type Flow struct {
	Name, From, To string
	QPs            int
}

// FlowConns returns the WRITE connections of flows, numbered globally in
// flow order (as config.Test.QPOffset), each naming its flow: connection
// i has requester QPN 0x100+i, responder QPN 0x200+i and IPSN 0. An
// unknown host name panics (programmer error).
func FlowConns(hosts []Host, flows []Flow) []model.Connection {
	ip := func(name string) netip.Addr {
		for _, h := range hosts {
			if h.Name == name {
				return h.IP
			}
		}
		panic("tracetest: no host " + name)
	}
	var out []model.Connection
	for _, f := range flows {
		for range f.QPs {
			i := len(out)
			out = append(out, model.Connection{ID: i, Verb: model.VerbWrite, Flow: f.Name,
				Requester: model.Endpoint{IP: ip(f.From), QPN: uint32(0x100 + i)},
				Responder: model.Endpoint{IP: ip(f.To), QPN: uint32(0x200 + i)}})
		}
	}
	return out
}

// Data returns the mirror frame of a WRITE MIDDLE packet of c with PSN
// IPSN+psn and n bytes of payload at t, on priority prio (DSCP 8·prio,
// ECT(0), or CE if ce), that joined an egress queue of depth bytes.
func Data(c model.Connection, t int64, psn, n, prio int, depth int64, ce bool) Frame {
	tos := byte(prio)<<5 | 2
	if ce {
		tos |= 3
	}
	f := roce.FrameSpec{SrcIP: c.Requester.IP, DstIP: c.Responder.IP, DestQP: c.Responder.QPN, TOS: tos,
		UDPSrc: 0xC000, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		Opcode: roce.RCWriteMiddle, PSN: roce.PSN(c.Requester.IPSN).Add(psn), Payload: make([]byte, n)}
	b, err := f.Append(nil)
	if err != nil {
		panic("tracetest: " + err.Error())
	}
	return Frame{TimeNs: t, Data: b, QDepth: depth}
}

// Ack returns the mirror frame of an ACK of c's responder for PSN
// IPSN+psn at t.
func Ack(c model.Connection, t int64, psn int) Frame {
	f := roce.FrameSpec{SrcIP: c.Responder.IP, DstIP: c.Requester.IP, DestQP: c.Requester.QPN, TOS: 2, UDPSrc: 0xC001,
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, Opcode: roce.RCAcknowledge,
		PSN: roce.PSN(c.Requester.IPSN).Add(psn)}
	f.AETH.Syndrome = roce.ACKSyndrome(roce.CreditCountInvalid)
	b, err := f.Append(nil)
	if err != nil {
		panic("tracetest: " + err.Error())
	}
	return Frame{TimeNs: t, Data: b}
}

// CNP returns the mirror frame of a CNP to c's requester at t.
func CNP(c model.Connection, t int64) Frame {
	f := roce.FrameSpec{SrcIP: c.Responder.IP, DstIP: c.Requester.IP, DestQP: c.Requester.QPN, TOS: 0xC2,
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, Opcode: roce.CNP, BECN: true}
	b, err := f.Append(nil)
	if err != nil {
		panic("tracetest: " + err.Error())
	}
	return Frame{TimeNs: t, Data: b}
}

// PFC returns the wrapped mirror copy of a PFC frame pausing priority
// prio for quanta (0: XON) seen on switch port port at t: sent by the
// switch to the port's host if sent, else received from it.
func PFC(t int64, sent bool, port uint16, prio int, quanta uint16) Frame {
	var q [8]uint16
	q[prio] = quanta
	return Frame{TimeNs: t, Data: roce.BuildPFC(nil, [6]byte{2}, 1<<prio, q), Wrapped: true, Port: port, Sent: sent}
}

// At is a packet of a Timed script: the script token Tok at Ns after the
// first packet.
type At struct {
	Ns  int64
	Tok string
}

// Timed returns the script of packets ps (in trace order, times not
// decreasing): the first packet comes at 1,000,100 ns (the default step
// after the trace's start), each next one at its Ns after it.
func Timed(ps ...At) string {
	var b strings.Builder
	prev := int64(-100)
	for _, p := range ps {
		fmt.Fprintf(&b, "@%d %s ", p.Ns-prev, p.Tok)
		prev = p.Ns
	}
	return strings.TrimSpace(b.String())
}
