package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// decodeFlags: lumina decode.
type decodeFlags struct {
	format, mirror string
	port           uint
}

func (f *decodeFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "format", "text", "output `format`: text or jsonl")
	fs.StringVar(&f.mirror, "mirror", "auto", "decode Lumina mirror metadata: auto, on or off")
	fs.UintVar(&f.port, "mirror-port", roce.DefaultMirrorPort, "UDP destination `port` of unrestored mirror copies (rewrite-udp-dst-port); 0 = none")
}

func (f *decodeFlags) check(args []string) error {
	if f.format != "text" && f.format != "jsonl" {
		return usagef("decode: --format must be text or jsonl, not %q", f.format)
	}
	switch f.mirror {
	case "auto", "on", "off":
	default:
		return usagef("decode: --mirror must be auto, on or off, not %q", f.mirror)
	}
	if f.port > 0xFFFF {
		return usagef("decode: --mirror-port %d out of range", f.port)
	}
	if len(args) == 0 {
		return usagef("decode needs a trace file")
	}
	return nil
}

// runDecode is lumina decode: one line per frame of each trace.
func runDecode(ctx context.Context, f *decodeFlags, args []string, stdout, _ io.Writer) error {
	d := decoder{jsonl: f.format == "jsonl", mirrorMode: f.mirror}
	if f.mirror != "off" {
		d.parser.MirrorPort = uint16(f.port)
	}
	d.parser.VerifyICRC = true
	w := bufio.NewWriterSize(stdout, 64<<10)
	defer w.Flush()
	for _, path := range args {
		if err := d.file(ctx, w, path); err != nil {
			return err
		}
	}
	return w.Flush()
}

// decoder prints frames; it reuses one line buffer, so printing a frame does
// not allocate.
type decoder struct {
	jsonl      bool
	mirrorMode string // auto, on, off
	parser     roce.Parser
	pkt        roce.Packet
	buf        []byte
	mirrored   int8 // auto mode, per file: 0 undecided, 1 yes, -1 no
	// mac is the last MAC Control frame (PAUSE, PFC), valid while isMAC.
	mac   roce.MACControlFrame
	isMAC bool
	// mm is the last wrapped mirror copy (the copy of a PFC or PAUSE frame
	// the switch received or sent), valid while wrapped; mac is then the
	// frame it wraps.
	mm      roce.MACMirror
	wrapped bool
	// switches names the logical switches of a fabric by id (the run
	// record's fabric, when the trace is its run's); nil: copies of a
	// switch other than 0 print its id.
	switches []string
}

func (d *decoder) file(ctx context.Context, w *bufio.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	if lt := r.LinkType(); lt != trace.LinkTypeEthernet {
		return fmt.Errorf("decode %s: link type %v not supported (Ethernet only)", path, lt)
	}
	d.mirrored = 0
	d.switches = runSwitchNames(path)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// Lines already printed stay printed; say where it broke.
			w.Flush()
			return fmt.Errorf("decode %s: %w", path, err)
		}
		d.frame(p)
		if _, err := w.Write(d.buf); err != nil {
			return err
		}
	}
}

// frame formats one frame into d.buf.
func (d *decoder) frame(tp trace.Packet) {
	p := &d.pkt
	perr := d.parser.Parse(tp.Data, tp.OrigLen, p)
	if tp.LinkType != trace.LinkTypeEthernet {
		perr = roce.ErrNotRoCE
	}
	// PAUSE and PFC frames get their own line, and so do their wrapped
	// mirror copies (EtherType 0x88B5, unless --mirror off), with the
	// mirror metadata. Neither decides --mirror auto. Unknown MAC Control
	// opcodes print as generic MAC Control; a truncated one is a non-RoCE
	// frame with the MAC Control error.
	d.isMAC, d.wrapped = false, false
	if errors.Is(perr, roce.ErrNotRoCE) && tp.LinkType == trace.LinkTypeEthernet {
		frame := tp.Data
		if d.mirrorMode != "off" && roce.ParseMACMirror(frame, &d.mm) == nil {
			d.wrapped = true
			frame = d.mm.Frame
		}
		if d.wrapped || p.EtherType == roce.EtherTypeMACControl {
			merr := roce.ParseMACControl(frame, &d.mac)
			if merr == nil || errors.Is(merr, roce.ErrMACControlOpcode) {
				d.isMAC = true
			} else {
				perr = merr
			}
		}
	}
	showMirror := false
	if perr == nil {
		switch d.mirrorMode {
		case "on":
			showMirror = true
		case "auto":
			if d.mirrored == 0 {
				d.mirrored = -1
				if p.LooksMirrored() {
					d.mirrored = 1
				}
			}
			showMirror = d.mirrored == 1 || p.MirrorRaw
		}
	}
	b := d.buf[:0]
	if d.jsonl {
		b = d.appendJSON(b, tp, perr, showMirror)
	} else {
		b = d.appendText(b, tp, perr, showMirror)
	}
	d.buf = append(b, '\n')
}

func appendAddr(b []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = a.AppendTo(b)
	return append(b, '"')
}

func appendKey(b []byte, key string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

func (d *decoder) appendJSON(b []byte, tp trace.Packet, perr error, mirror bool) []byte {
	p := &d.pkt
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(tp.Index), 10)
	b = appendKey(b, "time_ns")
	b = strconv.AppendInt(b, tp.TimeNs, 10)
	b = appendKey(b, "frame_len")
	b = strconv.AppendInt(b, int64(tp.OrigLen), 10)
	b = appendKey(b, "src_ip")
	b = appendAddr(b, p.SrcIP)
	b = appendKey(b, "dst_ip")
	b = appendAddr(b, p.DstIP)
	if perr != nil {
		b = appendKey(b, "opcode")
		b = append(b, "null"...)
		b = appendKey(b, "error")
		b = strconv.AppendQuote(b, perr.Error())
		if d.wrapped {
			b = d.appendWrappedJSON(b)
		}
		if d.isMAC {
			b = d.appendMACJSON(b)
		}
		return append(b, '}')
	}
	b = appendKey(b, "udp_src")
	b = strconv.AppendUint(b, uint64(p.UDPSrc), 10)
	b = appendKey(b, "udp_dst")
	b = strconv.AppendUint(b, uint64(p.UDPDst), 10)
	b = appendKey(b, "ecn")
	b = strconv.AppendUint(b, uint64(p.ECN()), 10)
	b = appendKey(b, "opcode")
	b = strconv.AppendQuote(b, p.Opcode.String())
	b = appendKey(b, "opcode_num")
	b = strconv.AppendUint(b, uint64(p.Opcode), 10)
	b = appendKey(b, "dest_qp")
	b = strconv.AppendUint(b, uint64(p.BTH.DestQP()), 10)
	b = appendKey(b, "psn")
	b = strconv.AppendUint(b, uint64(p.BTH.PSN()), 10)
	b = appendKey(b, "ack_req")
	b = appendBool(b, p.BTH.AckReq())
	b = appendKey(b, "becn")
	b = appendBool(b, p.BTH.BECN())
	b = appendKey(b, "pad")
	b = strconv.AppendInt(b, int64(p.PadLen), 10)
	b = appendKey(b, "icrc")
	b = strconv.AppendQuote(b, p.ICRC.String())
	if p.AETH != nil {
		s := p.AETH.Syndrome()
		b = appendKey(b, "aeth")
		b = append(b, `{"type":"`...)
		b = append(b, s.Type().String()...)
		b = append(b, `","code":`...)
		b = strconv.AppendUint(b, uint64(s.Value()), 10)
		b = append(b, `,"msn":`...)
		b = strconv.AppendUint(b, uint64(p.AETH.MSN()), 10)
		if s.Type() == roce.AckTypeRNR {
			b = append(b, `,"timer_ns":`...)
			b = strconv.AppendInt(b, int64(roce.RNRTimer(s.Value())), 10)
		}
		b = append(b, '}')
	}
	if p.RETH != nil {
		b = appendKey(b, "reth")
		b = append(b, `{"va":`...)
		b = strconv.AppendUint(b, p.RETH.VirtualAddress(), 10)
		b = append(b, `,"rkey":`...)
		b = strconv.AppendUint(b, uint64(p.RETH.RKey()), 10)
		b = append(b, `,"len":`...)
		b = strconv.AppendUint(b, uint64(p.RETH.DMALength()), 10)
		b = append(b, '}')
	}
	if mirror {
		m := p.Mirror()
		b = d.appendMirrorJSONHead(b, m.Switch, m.Seq, m.TimestampNs)
		b = append(b, m.Event.String()...)
		b = append(b, '"')
		if m.Event.Held() && p.HoldCode() != 0 {
			b = append(b, `,"hold_ns":`...)
			b = strconv.AppendInt(b, m.HoldNs, 10)
			b = append(b, `,"hold_unit_ns":`...)
			b = strconv.AppendInt(b, p.HoldCode().Unit(), 10)
		}
		if c := p.DepthCode(); m.QDepth != 0 {
			b = append(b, `,"qdepth":`...)
			b = strconv.AppendInt(b, m.QDepth, 10)
			b = append(b, `,"qdepth_unit":`...)
			b = strconv.AppendInt(b, c.Unit(), 10)
		}
		b = append(b, '}')
	}
	b = appendKey(b, "payload_len")
	b = strconv.AppendInt(b, int64(p.PayloadLen), 10)
	return append(b, '}')
}

func (d *decoder) appendText(b []byte, tp trace.Packet, perr error, mirror bool) []byte {
	p := &d.pkt
	b = strconv.AppendInt(b, int64(tp.Index), 10)
	b = append(b, ' ')
	b = appendSeconds(b, tp.TimeNs)
	b = append(b, ' ')
	if d.isMAC {
		b = d.mac.AppendText(b)
		return d.appendWrappedText(b)
	}
	if perr != nil {
		if p.SrcIP.IsValid() {
			b = p.SrcIP.AppendTo(b)
			b = append(b, " > "...)
			b = p.DstIP.AppendTo(b)
			b = append(b, ' ')
		}
		b = append(b, "non-RoCE ("...)
		b = append(b, perr.Error()...)
		b = append(b, ") len="...)
		b = strconv.AppendInt(b, int64(tp.OrigLen), 10)
		return d.appendWrappedText(b)
	}
	b = p.AppendTuple(b)
	b = append(b, ' ')
	b = append(b, p.Opcode.String()...)
	b = append(b, " qp=0x"...)
	b = roce.AppendHex(b, uint64(p.BTH.DestQP()), 6)
	b = append(b, " psn="...)
	b = strconv.AppendUint(b, uint64(p.BTH.PSN()), 10)
	if p.BTH.AckReq() {
		b = append(b, " A"...)
	}
	if p.BTH.BECN() {
		b = append(b, " BECN"...)
	}
	if e := p.ECN(); e != 0 {
		b = append(b, " ecn="...)
		b = strconv.AppendUint(b, uint64(e), 10)
	}
	if p.AETH != nil {
		s := p.AETH.Syndrome()
		b = append(b, ' ')
		b = append(b, s.Type().String()...)
		b = append(b, '(')
		switch s.Type() {
		case roce.AckTypeNAK:
			if c := s.NAKCode(); c <= roce.NAKInvalidRDRequest {
				b = append(b, c.String()...)
			} else {
				b = strconv.AppendUint(b, uint64(c), 10)
			}
		case roce.AckTypeACK:
			b = append(b, "credit="...)
			b = strconv.AppendUint(b, uint64(s.Value()), 10)
		case roce.AckTypeRNR: // the timer code and the delay it encodes
			b = append(b, "timer="...)
			b = strconv.AppendUint(b, uint64(s.Value()), 10)
			b = append(b, ' ')
			b = appendRNRTimer(b, s.Value())
		default:
			b = strconv.AppendUint(b, uint64(s.Value()), 10)
		}
		b = append(b, ')')
		b = append(b, " msn="...)
		b = strconv.AppendUint(b, uint64(p.AETH.MSN()), 10)
	}
	if p.RETH != nil {
		b = append(b, " va=0x"...)
		b = roce.AppendHex(b, p.RETH.VirtualAddress(), 1)
		b = append(b, " rkey=0x"...)
		b = roce.AppendHex(b, uint64(p.RETH.RKey()), 1)
		b = append(b, " dlen="...)
		b = strconv.AppendUint(b, uint64(p.RETH.DMALength()), 10)
	}
	b = append(b, " len="...)
	b = strconv.AppendInt(b, int64(p.PayloadLen), 10)
	if p.PadLen != 0 {
		b = append(b, " pad="...)
		b = strconv.AppendInt(b, int64(p.PadLen), 10)
	}
	b = append(b, " icrc="...)
	b = append(b, p.ICRC.String()...)
	if mirror {
		m := p.Mirror()
		b = append(b, " [mirror"...)
		b = d.appendSwitch(b, m.Switch)
		b = append(b, " seq="...)
		b = strconv.AppendUint(b, m.Seq, 10)
		b = append(b, " ts="...)
		b = strconv.AppendUint(b, m.TimestampNs, 10)
		b = append(b, " event="...)
		b = append(b, m.Event.String()...)
		if m.Event.Held() && p.HoldCode() != 0 { // 0: no hold recorded (traces before holds)
			b = append(b, " hold="...)
			b = strconv.AppendInt(b, m.HoldNs, 10)
			if u := p.HoldCode().Unit(); u > 1 {
				b = append(b, ".."...) // the hold's resolution
				b = strconv.AppendInt(b, m.HoldNs+u-1, 10)
			}
			b = append(b, "ns"...)
		}
		if c := p.DepthCode(); m.QDepth != 0 { // 0: an empty queue, or no queue model
			b = append(b, " qdepth="...)
			b = strconv.AppendInt(b, m.QDepth, 10)
			if u := c.Unit(); u > 1 {
				b = append(b, ".."...) // the depth's resolution
				b = strconv.AppendInt(b, m.QDepth+u-1, 10)
			}
		}
		b = append(b, ']')
	}
	return b
}

// appendWrappedText appends the mirror metadata of a wrapped mirror copy,
// " [mirror seq=N ts=N event=E sent port N]" ("recv port N" for a frame the
// switch received); nothing for other frames.
func (d *decoder) appendWrappedText(b []byte) []byte {
	if !d.wrapped {
		return b
	}
	m := &d.mm
	b = append(b, " [mirror"...)
	b = d.appendSwitch(b, m.Switch)
	b = append(b, " seq="...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, " ts="...)
	b = strconv.AppendUint(b, m.TimestampNs, 10)
	b = append(b, " event="...)
	b = appendEvent(b, m.Event)
	if m.Sent {
		b = append(b, " sent port "...)
	} else {
		b = append(b, " recv port "...)
	}
	b = strconv.AppendUint(b, uint64(m.Port), 10)
	return append(b, ']')
}

// appendSwitch appends " sw=NAME" (the run record's name) or " sw=N" for
// a copy of switch sw other than 0, and " sw=NAME" for switch 0 of a run
// whose record names its fabric's switches; nothing for switch 0
// otherwise, so one-switch traces print as before fabrics.
func (d *decoder) appendSwitch(b []byte, sw uint8) []byte {
	if sw == 0 && len(d.switches) == 0 {
		return b
	}
	b = append(b, " sw="...)
	if int(sw) < len(d.switches) && d.switches[sw] != "" {
		return append(b, d.switches[sw]...)
	}
	return strconv.AppendUint(b, uint64(sw), 10)
}

// appendMirrorJSONHead appends the "mirror" key of both kinds of mirror
// copies up to its event's value: "mirror":{"seq":N,"ts_ns":N,"event":",
// with "switch":N (and "switch_name":"NAME" from the run record) after
// "mirror":{ for a copy of a switch other than 0, or of any switch of a
// run whose record names its fabric's switches.
func (d *decoder) appendMirrorJSONHead(b []byte, sw uint8, seq, tsNs uint64) []byte {
	b = appendKey(b, "mirror")
	b = append(b, '{')
	if sw != 0 || len(d.switches) > 0 {
		b = append(b, `"switch":`...)
		b = strconv.AppendUint(b, uint64(sw), 10)
		if int(sw) < len(d.switches) && d.switches[sw] != "" {
			b = append(b, `,"switch_name":`...)
			b = strconv.AppendQuote(b, d.switches[sw])
		}
		b = append(b, ',')
	}
	b = append(b, `"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"ts_ns":`...)
	b = strconv.AppendUint(b, tsNs, 10)
	return append(b, `,"event":"`...)
}

// appendWrappedJSON appends the "mirror" key of a wrapped mirror copy:
// {"seq":N,"ts_ns":N,"event":"E","sent":B,"port":N}.
func (d *decoder) appendWrappedJSON(b []byte) []byte {
	m := &d.mm
	b = d.appendMirrorJSONHead(b, m.Switch, m.Seq, m.TimestampNs)
	b = appendEvent(b, m.Event)
	b = append(b, `","sent":`...)
	b = appendBool(b, m.Sent)
	b = append(b, `,"port":`...)
	b = strconv.AppendUint(b, uint64(m.Port), 10)
	return append(b, '}')
}

// appendEvent appends e's name; as roce.Event.String, which allocates for
// values that are no event ("event(N)").
func appendEvent(b []byte, e roce.Event) []byte {
	if e.Valid() {
		return append(b, e.String()...)
	}
	b = append(b, "event("...)
	b = strconv.AppendUint(b, uint64(e), 10)
	return append(b, ')')
}

// appendMACJSON appends the "mac_control" key of a PAUSE or PFC frame (or a
// MAC Control frame with an unknown opcode: no parameters).
func (d *decoder) appendMACJSON(b []byte) []byte {
	m := &d.mac
	b = appendKey(b, "mac_control")
	b = append(b, `{"opcode":"`...)
	switch m.Opcode {
	case roce.MACControlPause, roce.MACControlPFC:
		b = append(b, m.Opcode.String()...)
	default: // as MACControlOpcode.String, which allocates for these
		b = append(b, "MAC_CONTROL_0x"...)
		b = roce.AppendHex(b, uint64(m.Opcode), 4)
	}
	b = append(b, `","opcode_num":`...)
	b = strconv.AppendUint(b, uint64(m.Opcode), 10)
	b = append(b, `,"src_mac":"`...)
	b = appendMACAddr(b, m.SrcMAC)
	b = append(b, `","dst_mac":"`...)
	b = appendMACAddr(b, m.DstMAC)
	b = append(b, `","vlans":`...)
	b = strconv.AppendInt(b, int64(m.VLANs), 10)
	switch m.Opcode {
	case roce.MACControlPause:
		b = append(b, `,"pause_time":`...)
		b = strconv.AppendUint(b, uint64(m.PauseTime), 10)
	case roce.MACControlPFC:
		b = append(b, `,"enable_vector":`...)
		b = strconv.AppendUint(b, uint64(m.EnableVector), 10)
		b = append(b, `,"time":[`...)
		for i, q := range m.Time {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(q), 10)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendMACAddr appends a as six lower-case hex octets separated by colons.
func appendMACAddr(b []byte, a [6]byte) []byte {
	for i, c := range a {
		if i > 0 {
			b = append(b, ':')
		}
		b = roce.AppendHex(b, uint64(c), 2)
	}
	return b
}

// appendSeconds formats ns as seconds with 9 decimals.
func appendSeconds(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	b = append(b, '.')
	frac := ns % 1e9
	for div := int64(1e8); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return b
}

// runSwitchNames returns the switch names of the fabric of the lumina run
// whose trace is at path (analyzers.ReadInputs: the trace of the run
// directory holding it), or nil: not a run's trace, one switch, or a run
// record that cannot be read (decode prints switch ids then).
func runSwitchNames(path string) []string {
	if !analyzers.IsRunDir(filepath.Dir(path)) {
		return nil
	}
	in, err := analyzers.ReadInputs(path, "")
	if err != nil || in.RunDir == "" || in.Meta.Fabric == nil {
		return nil
	}
	return in.Meta.Fabric.Switches
}

// appendRNRTimer appends the delay an RNR timer code encodes
// (roce.RNRTimer) in ms with the digits it needs: "1.28ms", "0.01ms",
// "655.36ms".
func appendRNRTimer(b []byte, code uint8) []byte {
	b = strconv.AppendFloat(b, float64(roce.RNRTimer(code))/1e6, 'f', -1, 64)
	return append(b, "ms"...)
}
