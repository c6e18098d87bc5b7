package roce

import (
	"encoding/binary"
	"errors"
	"strconv"
	"time"
)

// MAC Control frames (IEEE 802.3 Clause 31): link-wide PAUSE (Annex 31B,
// originally 802.3x) and Priority-based Flow Control (802.1Q Clause 36,
// originally 802.1Qbb; 802.3 Annex 31D). Both are untagged 64-byte frames
// (60 without FCS) to the reserved multicast address 01:80:C2:00:00:01.
const (
	// EtherTypeMACControl is the EtherType of MAC Control frames.
	EtherTypeMACControl = 0x8808
	// MACControlMinLen is the length of a PAUSE or PFC frame without FCS:
	// the Ethernet minimum. Builders pad with zeros up to it.
	MACControlMinLen = 60
	// PauseLen is the length of a PAUSE PDU (opcode, pause_time).
	PauseLen = 4
	// PFCLen is the length of a PFC PDU (opcode, priority_enable_vector,
	// time[0..7]).
	PFCLen = 20
	// PFCPriorities is the number of priorities (traffic classes) PFC names.
	PFCPriorities = 8
	// PauseQuantumBits is the pause quantum: 512 bit times at the link speed.
	PauseQuantumBits = 512
)

// MACControlDst is the destination address of PAUSE and PFC frames, which
// bridges do not forward.
var MACControlDst = [6]byte{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// MACControlOpcode is the opcode of a MAC Control frame. Zero is not a valid
// opcode.
type MACControlOpcode uint16

// MAC Control opcodes.
const (
	MACControlPause MACControlOpcode = 0x0001 // 802.3 Annex 31B PAUSE
	MACControlPFC   MACControlOpcode = 0x0101 // 802.3 Annex 31D / 802.1Qbb PFC
)

// String returns "PAUSE", "PFC" or "MAC_CONTROL_0xNNNN".
func (o MACControlOpcode) String() string {
	switch o {
	case MACControlPause:
		return "PAUSE"
	case MACControlPFC:
		return "PFC"
	}
	return string(o.appendName(nil))
}

func (o MACControlOpcode) appendName(b []byte) []byte {
	switch o {
	case MACControlPause:
		return append(b, "PAUSE"...)
	case MACControlPFC:
		return append(b, "PFC"...)
	}
	b = append(b, "MAC_CONTROL_0x"...)
	return AppendHex(b, uint64(o), 4)
}

// MACControl is a view of a MAC Control PDU: the bytes that follow the
// EtherType 0x8808. Its layout depends on the opcode:
//
//	PAUSE (0x0001)                      PFC (0x0101)
//	+-------------------------------+   +-------------------------------+
//	|         opcode (16)           |   |         opcode (16)           |
//	+-------------------------------+   +---------------+---------------+
//	|       pause_time (16)         |   | reserved (8)  |  e[7..0] (8)  |
//	+-------------------------------+   +---------------+---------------+
//	                                    |           time[0] (16)        |
//	                                    +-------------------------------+
//	                                    |              ...              |
//	                                    +-------------------------------+
//	                                    |           time[7] (16)        |
//	                                    +-------------------------------+
//
// Times are in pause quanta (PauseQuantumBits bit times). Bit n of the
// priority enable vector (mask 1<<n) says time[n] is valid; the high octet
// is reserved and must be zero (Wireshark flags it, receivers use only the
// low octet).
//
// Methods do not check bounds: the caller guarantees len(m) >= PauseLen for
// the PAUSE methods and len(m) >= PFCLen for the PFC methods.
type MACControl []byte

const (
	macOpcode    = 0
	macPauseTime = 2 // PAUSE
	macPFCEnable = 2 // PFC
	macPFCTime   = 4 // PFC: time[0], then time[1], ... two bytes each
)

// Opcode returns the "opcode" field.
func (m MACControl) Opcode() MACControlOpcode {
	return MACControlOpcode(binary.BigEndian.Uint16(m[macOpcode:]))
}

// PauseTime returns the PAUSE "pause_time" field, in quanta.
func (m MACControl) PauseTime() uint16 { return binary.BigEndian.Uint16(m[macPauseTime:]) }

// PriorityEnableVector returns the whole 16-bit PFC "priority_enable_vector",
// reserved high octet included.
func (m MACControl) PriorityEnableVector() uint16 {
	return binary.BigEndian.Uint16(m[macPFCEnable:])
}

// Time returns the PFC "time[prio]" field, in quanta; prio is 0-7.
func (m MACControl) Time(prio int) uint16 {
	return binary.BigEndian.Uint16(m[macPFCTime+2*prio:])
}

// SetOpcode sets the "opcode" field.
func (m MACControl) SetOpcode(op MACControlOpcode) {
	binary.BigEndian.PutUint16(m[macOpcode:], uint16(op))
}

// SetPauseTime sets the PAUSE "pause_time" field.
func (m MACControl) SetPauseTime(q uint16) { binary.BigEndian.PutUint16(m[macPauseTime:], q) }

// SetPriorityEnableVector sets the whole 16-bit PFC "priority_enable_vector";
// senders keep the high octet zero.
func (m MACControl) SetPriorityEnableVector(v uint16) {
	binary.BigEndian.PutUint16(m[macPFCEnable:], v)
}

// SetTime sets the PFC "time[prio]" field; prio is 0-7.
func (m MACControl) SetTime(prio int, q uint16) {
	binary.BigEndian.PutUint16(m[macPFCTime+2*prio:], q)
}

// Errors returned by ParseMACControl (sentinels, never wrapped).
var (
	// ErrNotMACControl: the EtherType (after at most two VLAN tags) is not
	// 0x8808.
	ErrNotMACControl = errors.New("roce: not a MAC Control frame")
	// ErrMACControlTruncated: the capture ends before the EtherType, or
	// before the parameters the opcode requires.
	ErrMACControlTruncated = errors.New("roce: MAC Control frame truncated")
	// ErrMACControlOpcode: the opcode is neither PAUSE nor PFC. The frame
	// is still decoded as a generic MAC Control frame (addresses, opcode,
	// PDU).
	ErrMACControlOpcode = errors.New("roce: unknown MAC Control opcode")
)

// MACControlFrame is a decoded MAC Control frame. Frame and PDU alias the
// bytes passed to ParseMACControl; nothing is copied.
type MACControlFrame struct {
	Frame          []byte // the captured bytes
	DstMAC, SrcMAC [6]byte
	// VLANs counts 802.1Q/802.1ad tags before the EtherType. Standard
	// PAUSE and PFC frames have none; whether a receiver honours a tagged
	// one is not settled (docs/pfc.md), so the parser accepts and reports
	// them.
	VLANs  int
	Opcode MACControlOpcode
	// PDU is the view from the opcode to the end of the capture (the pad
	// included).
	PDU MACControl

	// PauseTime is the PAUSE pause_time in quanta; 0 for other opcodes.
	PauseTime uint16
	// EnableVector is the whole PFC priority_enable_vector, reserved high
	// octet included; 0 for other opcodes. Enable returns its low octet.
	EnableVector uint16
	// Time holds the PFC time[0..7] in quanta, priority 0 first, enabled or
	// not; zero for other opcodes.
	Time [PFCPriorities]uint16
}

// Enable returns the meaningful low octet of the PFC priority enable vector:
// bit n set means time[n] is valid.
func (f *MACControlFrame) Enable() uint8 { return uint8(f.EnableVector) }

// Enabled reports whether priority prio (0-7) is enabled in a PFC frame.
func (f *MACControlFrame) Enabled(prio int) bool {
	return prio >= 0 && prio < PFCPriorities && f.EnableVector&(1<<prio) != 0
}

// ParseMACControl decodes frame, an Ethernet frame without FCS, into f. It
// accepts up to two VLAN tags, any destination address, and frames shorter
// than MACControlMinLen as long as the opcode's parameters are captured
// (software captures of outgoing frames show them before the MAC pads).
// It does not allocate. On error f holds what was decoded before it; for
// ErrMACControlOpcode that is everything but PauseTime, EnableVector and
// Time.
func ParseMACControl(frame []byte, f *MACControlFrame) error {
	*f = MACControlFrame{Frame: frame}
	if len(frame) < EthernetLen {
		return ErrMACControlTruncated
	}
	copy(f.DstMAC[:], frame[0:6])
	copy(f.SrcMAC[:], frame[6:12])
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	for (et == EtherTypeVLAN || et == EtherTypeQinQ) && f.VLANs < 2 {
		if len(frame) < off+2+VLANTagLen {
			return ErrMACControlTruncated
		}
		f.VLANs++
		off += VLANTagLen
		et = binary.BigEndian.Uint16(frame[off:])
	}
	if et != EtherTypeMACControl {
		return ErrNotMACControl
	}
	off += 2
	if len(frame) < off+2 {
		return ErrMACControlTruncated
	}
	m := MACControl(frame[off:])
	f.PDU = m
	f.Opcode = m.Opcode()
	switch f.Opcode {
	case MACControlPause:
		if len(m) < PauseLen {
			return ErrMACControlTruncated
		}
		f.PauseTime = m.PauseTime()
	case MACControlPFC:
		if len(m) < PFCLen {
			return ErrMACControlTruncated
		}
		f.EnableVector = m.PriorityEnableVector()
		for i := range f.Time {
			f.Time[i] = m.Time(i)
		}
	default:
		return ErrMACControlOpcode
	}
	return nil
}

// BuildPFC appends a PFC frame from src to dst and returns the extended
// slice: destination MACControlDst, EtherType 0x8808, opcode 0x0101, the
// enable vector (reserved octet zero), time[0..7] from quanta (enabled or
// not), zero pad up to MACControlMinLen. No FCS. It does not allocate when
// dst has room for MACControlMinLen more bytes.
func BuildPFC(dst []byte, src [6]byte, enable uint8, quanta [PFCPriorities]uint16) []byte {
	dst, m := appendMACControl(dst, src, MACControlPFC)
	m.SetPriorityEnableVector(uint16(enable))
	for i, q := range quanta {
		m.SetTime(i, q)
	}
	return dst
}

// BuildPause appends a PAUSE frame from src with pause_time quanta to dst
// and returns the extended slice; see BuildPFC.
func BuildPause(dst []byte, src [6]byte, quanta uint16) []byte {
	dst, m := appendMACControl(dst, src, MACControlPause)
	m.SetPauseTime(quanta)
	return dst
}

// appendMACControl appends a zeroed MACControlMinLen-byte frame with the
// Ethernet header and opcode filled in, and returns it with its PDU view.
func appendMACControl(dst []byte, src [6]byte, op MACControlOpcode) ([]byte, MACControl) {
	start := len(dst)
	dst = grow(dst, MACControlMinLen)
	b := dst[start:]
	clear(b)
	copy(b[0:6], MACControlDst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], EtherTypeMACControl)
	m := MACControl(b[EthernetLen:])
	m.SetOpcode(op)
	return dst, m
}

// QuantaToDuration returns how long quanta pause quanta last on a link of
// linkBps bits per second: quanta × 512 bit times, rounded up to the next
// nanosecond so that a pause is never shortened (65535 quanta at 100 Gb/s
// = 335.5392 µs → 335540 ns). It returns 0 for linkBps <= 0.
func QuantaToDuration(quanta uint16, linkBps int64) time.Duration {
	if linkBps <= 0 {
		return 0
	}
	// At most 65535 × 512 × 1e9 ≈ 3.4e16: no overflow.
	bits := int64(quanta) * PauseQuantumBits * int64(time.Second)
	return time.Duration((bits + linkBps - 1) / linkBps)
}

// String describes the frame in the one-line style of "lumina decode", e.g.
//
//	PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x09 p0=0(xon) p3=65535
//	PAUSE 02:00:00:00:00:01 > 01:80:c2:00:00:01 quanta=65535
//
// See AppendText.
func (f *MACControlFrame) String() string { return string(f.AppendText(nil)) }

// AppendText appends the String form to b without allocating when b has
// room. A PFC frame lists only its enabled priorities as pN=QUANTA, "(xon)"
// after a zero time (resume); a non-zero reserved octet adds "resv=0xNN";
// VLAN tags add "vlans=N"; an unknown opcode prints as
// "MAC_CONTROL_0xNNNN SRC > DST".
func (f *MACControlFrame) AppendText(b []byte) []byte {
	b = f.Opcode.appendName(b)
	b = append(b, ' ')
	b = appendMACAddr(b, f.SrcMAC)
	b = append(b, " > "...)
	b = appendMACAddr(b, f.DstMAC)
	switch f.Opcode {
	case MACControlPause:
		b = append(b, " quanta="...)
		b = appendMACQuanta(b, f.PauseTime)
	case MACControlPFC:
		b = append(b, " enable=0x"...)
		b = AppendHex(b, uint64(f.Enable()), 2)
		if r := f.EnableVector >> 8; r != 0 {
			b = append(b, " resv=0x"...)
			b = AppendHex(b, uint64(r), 2)
		}
		for i, q := range f.Time {
			if f.Enabled(i) {
				b = append(b, " p"...)
				b = append(b, byte('0'+i))
				b = append(b, '=')
				b = appendMACQuanta(b, q)
			}
		}
	}
	if f.VLANs != 0 {
		b = append(b, " vlans="...)
		b = strconv.AppendInt(b, int64(f.VLANs), 10)
	}
	return b
}

func appendMACQuanta(b []byte, q uint16) []byte {
	b = strconv.AppendUint(b, uint64(q), 10)
	if q == 0 {
		b = append(b, "(xon)"...)
	}
	return b
}

const macHexDigits = "0123456789abcdef"

// appendMACAddr appends a as six lower-case hex octets separated by colons.
func appendMACAddr(b []byte, a [6]byte) []byte {
	for i, c := range a {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, macHexDigits[c>>4], macHexDigits[c&0xF])
	}
	return b
}

// AppendHex appends v in lower-case hex, zero-padded to width digits (as
// lumina decode prints QPNs, keys and PFC fields).
func AppendHex(b []byte, v uint64, width int) []byte {
	var tmp [16]byte
	s := strconv.AppendUint(tmp[:0], v, 16)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// FrameTOS returns the IPv4 TOS or IPv6 traffic class of an Ethernet frame
// (after up to two VLAN tags): its DSCP is FrameTOS >> 2. It returns 0 for
// a frame that is neither or too short. The priority of a RoCE frame for
// PFC follows from its DSCP.
func FrameTOS(b []byte) uint8 {
	off := 12
	for k := 0; k < 2 && len(b) >= off+2; k++ {
		if et := binary.BigEndian.Uint16(b[off:]); et != EtherTypeVLAN && et != EtherTypeQinQ {
			break
		}
		off += 4
	}
	if len(b) < off+4 {
		return 0
	}
	switch binary.BigEndian.Uint16(b[off:]) {
	case EtherTypeIPv4:
		return b[off+3]
	case EtherTypeIPv6:
		return b[off+2]<<4 | b[off+3]>>4
	}
	return 0
}

// pauseReaction is the maximum delay from the reception of a PAUSE or PFC
// frame to the last start of a frame of the paused priority, in pause
// quanta per link speed (IEEE Std 802.3 Annex 31B, Table 31B-1, "PAUSE
// reaction timing"; 802.1Q §36.1.3.2 applies it to PFC). At 10 Gb/s the
// PHY types of the table differ (60 and 67 quanta): the stricter 60 is
// used.
var pauseReaction = [...]struct {
	bps    int64
	quanta int64
}{{100e6, 1}, {1e9, 2}, {10e9, 60}, {25e9, 80}, {40e9, 118}, {50e9, 147}, {100e9, 394}, {200e9, 453}, {400e9, 905}}

// PauseReactionBoundNs returns the 802.3 pause reaction bound at linkBps
// (> 0) in nanoseconds, rounded down: the quanta of the listed speed × 512
// bit times. An unlisted speed takes the nearest listed speed above it (the
// last beyond 400 Gb/s) and listed is false.
func PauseReactionBoundNs(linkBps int64) (ns int64, listed bool) {
	r := pauseReaction[len(pauseReaction)-1]
	for _, e := range pauseReaction {
		if linkBps <= e.bps {
			r = e
			break
		}
	}
	return r.quanta * PauseQuantumBits * 1e9 / linkBps, r.bps == linkBps
}
