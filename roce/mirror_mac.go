package roce

import (
	"encoding/binary"
	"errors"
)

// EtherTypeLuminaMirror (IEEE 802 local experimental EtherType 1) marks the
// mirror copy of a frame that is not IP: a PFC or PAUSE frame the switch
// received from a host or sent to one. RoCE mirror copies keep their own
// format (ApplyMirror); this one wraps the original frame:
//
//	0..5    mirror timestamp (48 bits, ns), as a RoCE copy's destination MAC
//	6..11   mirror sequence field (48 bits: switch id and sequence number,
//	        MirrorSeqField), as a RoCE copy's source MAC
//	12..13  EtherTypeLuminaMirror
//	14      event (EventNone, or EventPause for a test's injected pause)
//	15      flags: MACMirrorSent when the switch sent the frame, else it
//	        received it
//	16..17  the switch port it was received on or sent from
//	18..    the original frame (from its destination MAC; no FCS)
//
// Dumpers keep these copies as they keep RoCE mirror copies, so the
// integrity check covers them: they carry sequence numbers of the same
// sequence.
const EtherTypeLuminaMirror = 0x88B5

// MACMirrorHeaderLen is the length of the wrapper before the original frame.
const MACMirrorHeaderLen = 18

// MACMirrorSent is the flag of a copy of a frame the switch sent.
const MACMirrorSent = 0x01

// MACMirror is a decoded wrapped mirror copy.
type MACMirror struct {
	MirrorMeta
	Sent  bool   // the switch sent the frame (else it received it)
	Port  uint16 // switch port
	Frame []byte // the original frame, aliasing the copy
}

// ErrNotMACMirror is returned by ParseMACMirror for a frame that is not a
// wrapped mirror copy.
var ErrNotMACMirror = errors.New("roce: not a wrapped mirror copy")

// AppendMACMirror appends the wrapped mirror copy of frame to dst.
func AppendMACMirror(dst []byte, m MirrorMeta, sent bool, port uint16, frame []byte) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, MACMirrorHeaderLen)...)
	h := dst[n:]
	putMAC48(h[0:6], m.TimestampNs&MirrorTimeMask)
	putMAC48(h[6:12], MirrorSeqField(m.Switch, m.Seq))
	binary.BigEndian.PutUint16(h[12:], EtherTypeLuminaMirror)
	h[14] = byte(m.Event)
	if sent {
		h[15] = MACMirrorSent
	}
	binary.BigEndian.PutUint16(h[16:], port)
	return append(dst, frame...)
}

// ParseMACMirror decodes a wrapped mirror copy without copying it.
func ParseMACMirror(b []byte, m *MACMirror) error {
	if len(b) < MACMirrorHeaderLen+EthernetLen || binary.BigEndian.Uint16(b[12:]) != EtherTypeLuminaMirror {
		return ErrNotMACMirror
	}
	sw, seq := SplitMirrorSeq(MAC(b[6:12]).Uint64())
	*m = MACMirror{
		MirrorMeta: MirrorMeta{TimestampNs: MAC(b[0:6]).Uint64(), Seq: seq, Switch: sw, Event: Event(b[14])},
		Sent:       b[15]&MACMirrorSent != 0,
		Port:       binary.BigEndian.Uint16(b[16:]),
		Frame:      b[MACMirrorHeaderLen:],
	}
	return nil
}
