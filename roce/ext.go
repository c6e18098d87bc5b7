package roce

import (
	"encoding/binary"
	"strconv"
	"time"
)

// RETH is a view of the 16-byte RDMA Extended Transport Header (WRITE
// FIRST/ONLY, READ request, FLUSH, ATOMIC_WRITE).
//
//	+-------------------------------+
//	|     Virtual Address (64)      |
//	+---------------+---------------+
//	|  R_Key (32)   | DMA Length(32)|
//	+---------------+---------------+
type RETH []byte

// VirtualAddress returns the "VA" field.
func (r RETH) VirtualAddress() uint64 { return binary.BigEndian.Uint64(r[0:]) }

// RKey returns the "R_Key" field.
func (r RETH) RKey() uint32 { return binary.BigEndian.Uint32(r[8:]) }

// DMALength returns the "DMA Length" field: the whole message length for
// WRITE, the bytes to read for READ.
func (r RETH) DMALength() uint32 { return binary.BigEndian.Uint32(r[12:]) }

// SetVirtualAddress sets the "VA" field.
func (r RETH) SetVirtualAddress(v uint64) { binary.BigEndian.PutUint64(r[0:], v) }

// SetRKey sets the "R_Key" field.
func (r RETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(r[8:], v) }

// SetDMALength sets the "DMA Length" field.
func (r RETH) SetDMALength(v uint32) { binary.BigEndian.PutUint32(r[12:], v) }

// ImmDt is a view of the 4-byte Immediate Data header.
type ImmDt []byte

// Immediate returns the immediate data, as the 32 bits on the wire.
func (i ImmDt) Immediate() uint32 { return binary.BigEndian.Uint32(i) }

// SetImmediate sets the immediate data.
func (i ImmDt) SetImmediate(v uint32) { binary.BigEndian.PutUint32(i, v) }

// IETH is a view of the 4-byte Invalidate Extended Transport Header.
type IETH []byte

// RKey returns the R_Key to invalidate.
func (i IETH) RKey() uint32 { return binary.BigEndian.Uint32(i) }

// SetRKey sets the R_Key to invalidate.
func (i IETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(i, v) }

// AtomicETH is a view of the 28-byte Atomic Extended Transport Header:
// VA (64), R_Key (32), Swap/Add data (64), Compare data (64).
type AtomicETH []byte

// VirtualAddress returns the "VA" field.
func (a AtomicETH) VirtualAddress() uint64 { return binary.BigEndian.Uint64(a[0:]) }

// RKey returns the "R_Key" field.
func (a AtomicETH) RKey() uint32 { return binary.BigEndian.Uint32(a[8:]) }

// SwapAdd returns the "Swap (or Add) Data" field.
func (a AtomicETH) SwapAdd() uint64 { return binary.BigEndian.Uint64(a[12:]) }

// Compare returns the "Compare Data" field.
func (a AtomicETH) Compare() uint64 { return binary.BigEndian.Uint64(a[20:]) }

// SetVirtualAddress sets the "VA" field.
func (a AtomicETH) SetVirtualAddress(v uint64) { binary.BigEndian.PutUint64(a[0:], v) }

// SetRKey sets the "R_Key" field.
func (a AtomicETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(a[8:], v) }

// SetSwapAdd sets the "Swap (or Add) Data" field.
func (a AtomicETH) SetSwapAdd(v uint64) { binary.BigEndian.PutUint64(a[12:], v) }

// SetCompare sets the "Compare Data" field.
func (a AtomicETH) SetCompare(v uint64) { binary.BigEndian.PutUint64(a[20:], v) }

// AtomicAckETH is a view of the 8-byte Atomic Acknowledge header.
type AtomicAckETH []byte

// OriginalData returns the remote value before the atomic operation.
func (a AtomicAckETH) OriginalData() uint64 { return binary.BigEndian.Uint64(a) }

// SetOriginalData sets the original remote value.
func (a AtomicAckETH) SetOriginalData(v uint64) { binary.BigEndian.PutUint64(a, v) }

// DETH is a view of the 8-byte Datagram Extended Transport Header (UD, RD):
// Q_Key (32), reserved (8), SrcQP (24).
type DETH []byte

// QKey returns the "Q_Key" field.
func (d DETH) QKey() uint32 { return binary.BigEndian.Uint32(d[0:]) }

// SrcQP returns the 24-bit "SrcQP" field.
func (d DETH) SrcQP() uint32 { return uint24(d[5:]) }

// SetQKey sets the "Q_Key" field.
func (d DETH) SetQKey(v uint32) { binary.BigEndian.PutUint32(d[0:], v) }

// SetSrcQP sets the "SrcQP" field.
func (d DETH) SetSrcQP(v uint32) { d[4] = 0; putUint24(d[5:], v) }

// RDETH is a view of the 4-byte Reliable Datagram Extended Transport Header:
// reserved (8), EE-Context (24).
type RDETH []byte

// EEContext returns the end-to-end context.
func (r RDETH) EEContext() uint32 { return uint24(r[1:]) }

// SetEEContext sets the end-to-end context.
func (r RDETH) SetEEContext(v uint32) { r[0] = 0; putUint24(r[1:], v) }

// FETH is a view of the 4-byte FLUSH Extended Transport Header.
type FETH []byte

// Value returns the raw FETH word (selectivity level and placement type).
func (f FETH) Value() uint32 { return binary.BigEndian.Uint32(f) }

// SetValue sets the raw FETH word.
func (f FETH) SetValue(v uint32) { binary.BigEndian.PutUint32(f, v) }

// AETH is a view of the 4-byte ACK Extended Transport Header: Syndrome (8),
// MSN (24).
//
// The syndrome's bit 7 is reserved, bits 6:5 are the type (00 ACK, 01 RNR
// NAK, 10 reserved, 11 NAK) and bits 4:0 the value: the credit count code for
// an ACK, the minimum RNR timer code for an RNR NAK, the NAK code for a NAK.
type AETH []byte

// Syndrome returns the raw "Syndrome" field.
func (a AETH) Syndrome() Syndrome { return Syndrome(a[0]) }

// MSN returns the 24-bit message sequence number.
func (a AETH) MSN() uint32 { return uint24(a[1:]) }

// SetSyndrome sets the "Syndrome" field.
func (a AETH) SetSyndrome(s Syndrome) { a[0] = byte(s) }

// SetMSN sets the 24-bit message sequence number.
func (a AETH) SetMSN(v uint32) { putUint24(a[1:], v) }

// Syndrome is an AETH syndrome byte.
type Syndrome uint8

// AckType is the kind of acknowledgement a syndrome encodes.
type AckType uint8

// Acknowledgement kinds (syndrome bits 6:5).
const (
	AckTypeACK      AckType = 0
	AckTypeRNR      AckType = 1
	AckTypeReserved AckType = 2
	AckTypeNAK      AckType = 3
)

// String returns "ack", "rnr", "nak" or "reserved".
func (t AckType) String() string {
	switch t {
	case AckTypeACK:
		return "ack"
	case AckTypeRNR:
		return "rnr"
	case AckTypeNAK:
		return "nak"
	}
	return "reserved"
}

// NAKCode is the value of a NAK syndrome (bits 4:0).
type NAKCode uint8

// NAK codes.
const (
	NAKPSNSequenceError     NAKCode = 0 // syndrome 0x60
	NAKInvalidRequest       NAKCode = 1 // syndrome 0x61
	NAKRemoteAccessError    NAKCode = 2 // syndrome 0x62
	NAKRemoteOperationalErr NAKCode = 3 // syndrome 0x63
	NAKInvalidRDRequest     NAKCode = 4 // syndrome 0x64
)

// CreditCountInvalid is the ACK credit code meaning "no credit information"
// (syndrome 0x1F, what rxe always sends).
const CreditCountInvalid uint8 = 0x1F

const (
	syndromeTypeShift       = 5
	syndromeValueMask uint8 = 0x1F
	syndromeTypeMask  uint8 = 0x60
)

// String names the NAK code.
func (c NAKCode) String() string {
	switch c {
	case NAKPSNSequenceError:
		return "psn_sequence_error"
	case NAKInvalidRequest:
		return "invalid_request"
	case NAKRemoteAccessError:
		return "remote_access_error"
	case NAKRemoteOperationalErr:
		return "remote_operational_error"
	case NAKInvalidRDRequest:
		return "invalid_rd_request"
	}
	return "reserved_" + strconv.Itoa(int(c))
}

// ACKSyndrome returns the syndrome of a positive ACK with the given credit
// count code (CreditCountInvalid = 0x1F: no credit information).
func ACKSyndrome(credit uint8) Syndrome { return Syndrome(credit & syndromeValueMask) }

// RNRSyndrome returns the syndrome of an RNR NAK with the given minimum RNR
// timer code (0-31).
func RNRSyndrome(timer uint8) Syndrome { return Syndrome(0x20 | timer&syndromeValueMask) }

// NAKSyndrome returns the syndrome of a NAK with the given code.
func NAKSyndrome(c NAKCode) Syndrome { return Syndrome(0x60 | uint8(c)&syndromeValueMask) }

// Type returns the acknowledgement kind.
func (s Syndrome) Type() AckType { return AckType(uint8(s) & syndromeTypeMask >> syndromeTypeShift) }

// Value returns the low five bits: credit code, RNR timer code or NAK code.
func (s Syndrome) Value() uint8 { return uint8(s) & syndromeValueMask }

// IsACK reports whether s is a positive acknowledgement.
func (s Syndrome) IsACK() bool { return s.Type() == AckTypeACK }

// IsNAK reports whether s is a NAK (not an RNR NAK).
func (s Syndrome) IsNAK() bool { return s.Type() == AckTypeNAK }

// IsRNR reports whether s is an RNR NAK.
func (s Syndrome) IsRNR() bool { return s.Type() == AckTypeRNR }

// NAKCode returns the NAK code of a NAK syndrome.
func (s Syndrome) NAKCode() NAKCode { return NAKCode(s.Value()) }

// String describes the syndrome, e.g. "ack(credit=31)", "nak(psn_sequence_error)", "rnr(timer=12)".
func (s Syndrome) String() string {
	v := strconv.Itoa(int(s.Value()))
	switch s.Type() {
	case AckTypeACK:
		return "ack(credit=" + v + ")"
	case AckTypeRNR:
		return "rnr(timer=" + v + ")"
	case AckTypeNAK:
		return "nak(" + s.NAKCode().String() + ")"
	}
	return "reserved(" + v + ")"
}

// creditTable maps a credit count code to receive WQEs (code 31: no credit info).
var creditTable = [31]int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
	512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768}

// CreditCount returns the number of receive WQEs an ACK credit code stands
// for, and false for code 31 ("invalid": no credit information).
func CreditCount(code uint8) (int, bool) {
	if int(code) >= len(creditTable) {
		return 0, false
	}
	return creditTable[code], true
}

// rnrTimerMicros maps the minimum RNR NAK timer code to microseconds (IBA
// table; code 0 is the longest, 655.36 ms).
var rnrTimerMicros = [32]int64{655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520}

// RNRTimer returns the delay encoded by a minimum RNR NAK timer code (0-31).
func RNRTimer(code uint8) time.Duration {
	return time.Duration(rnrTimerMicros[code&syndromeValueMask]) * time.Microsecond
}

// TransportTimeout returns the local ACK timeout T_tr = 4.096 µs × 2^timeout
// for the QP attribute timeout (0-31). Zero disables the timer and returns 0.
func TransportTimeout(timeout uint8) time.Duration {
	if timeout == 0 {
		return 0
	}
	return time.Duration(4096) << (timeout & 31) // 4096 ns × 2^timeout
}
