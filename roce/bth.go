package roce

import "encoding/binary"

// BTH is a view of the 12-byte InfiniBand Base Transport Header.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad| TVer  |            P_Key              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|F|B|   resv6   |                    DestQP                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|    resv7    |                      PSN                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Methods do not check bounds: the caller guarantees len(b) >= BTHLen.
type BTH []byte

const (
	bthOpcode = 0
	bthFlags  = 1 // SE, M, PadCnt, TVer
	bthPKey   = 2
	bthFB     = 4 // FECN, BECN, resv6
	bthDestQP = 5
	bthAck    = 8 // AckReq, resv7
	bthPSN    = 9

	bthSE     = 0x80
	bthMig    = 0x40
	bthPadCnt = 0x30
	bthTVer   = 0x0F
	bthFECN   = 0x80
	bthBECN   = 0x40
	bthResv6  = 0x3F
	bthAckReq = 0x80
)

// Opcode returns the "OpCode" field.
func (b BTH) Opcode() Opcode { return Opcode(b[bthOpcode]) }

// SolicitedEvent returns the "SE" bit.
func (b BTH) SolicitedEvent() bool { return b[bthFlags]&bthSE != 0 }

// MigReq returns the "M" (migration request) bit.
func (b BTH) MigReq() bool { return b[bthFlags]&bthMig != 0 }

// PadCount returns the "PadCnt" field: pad bytes after the payload (0-3).
func (b BTH) PadCount() int { return int(b[bthFlags]&bthPadCnt) >> 4 }

// TVer returns the transport header version (0 for IBA).
func (b BTH) TVer() uint8 { return b[bthFlags] & bthTVer }

// PKey returns the "P_Key" field.
func (b BTH) PKey() uint16 { return binary.BigEndian.Uint16(b[bthPKey:]) }

// FECN returns the forward explicit congestion notification bit.
func (b BTH) FECN() bool { return b[bthFB]&bthFECN != 0 }

// BECN returns the backward explicit congestion notification bit (set on CNPs).
func (b BTH) BECN() bool { return b[bthFB]&bthBECN != 0 }

// DestQP returns the 24-bit "DestQP" field.
func (b BTH) DestQP() uint32 { return uint24(b[bthDestQP:]) }

// AckReq returns the "A" (acknowledge request) bit.
func (b BTH) AckReq() bool { return b[bthAck]&bthAckReq != 0 }

// PSN returns the 24-bit packet sequence number.
func (b BTH) PSN() PSN { return PSN(uint24(b[bthPSN:])) }

// SetOpcode sets the "OpCode" field.
func (b BTH) SetOpcode(op Opcode) { b[bthOpcode] = byte(op) }

// SetSolicitedEvent sets the "SE" bit.
func (b BTH) SetSolicitedEvent(v bool) { setBit(&b[bthFlags], bthSE, v) }

// SetMigReq sets the "M" bit.
func (b BTH) SetMigReq(v bool) { setBit(&b[bthFlags], bthMig, v) }

// SetPadCount sets "PadCnt" (n is masked to 0-3).
func (b BTH) SetPadCount(n int) { b[bthFlags] = b[bthFlags]&^bthPadCnt | byte(n&3)<<4 }

// SetTVer sets the transport header version.
func (b BTH) SetTVer(v uint8) { b[bthFlags] = b[bthFlags]&^bthTVer | v&bthTVer }

// SetPKey sets the "P_Key" field.
func (b BTH) SetPKey(k uint16) { binary.BigEndian.PutUint16(b[bthPKey:], k) }

// SetFECN sets the FECN bit.
func (b BTH) SetFECN(v bool) { setBit(&b[bthFB], bthFECN, v) }

// SetBECN sets the BECN bit.
func (b BTH) SetBECN(v bool) { setBit(&b[bthFB], bthBECN, v) }

// SetDestQP sets the 24-bit "DestQP" field (upper bits of qp are ignored).
func (b BTH) SetDestQP(qp uint32) { putUint24(b[bthDestQP:], qp) }

// SetAckReq sets the "A" bit.
func (b BTH) SetAckReq(v bool) { setBit(&b[bthAck], bthAckReq, v) }

// SetPSN sets the 24-bit PSN.
func (b BTH) SetPSN(p PSN) { putUint24(b[bthPSN:], uint32(p)) }

func setBit(p *byte, mask byte, v bool) {
	if v {
		*p |= mask
	} else {
		*p &^= mask
	}
}

func uint24(b []byte) uint32 {
	_ = b[2]
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

func putUint24(b []byte, v uint32) {
	_ = b[2]
	b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v)
}
