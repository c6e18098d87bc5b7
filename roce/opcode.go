package roce

import "strconv"

// Opcode is the BTH OpCode field. Bits 7:5 select the transport (RC 000,
// UC 001, RD 010, UD 011, CNP 100, XRC 101), bits 4:0 the operation.
//
// The zero value is RC_SEND_FIRST, a real opcode; use Opcode.Valid to tell a
// known opcode from an unknown one.
type Opcode uint8

// Transport is the transport service of an opcode (bits 7:5 of the OpCode).
type Transport uint8

// Transports.
const (
	TransportRC  Transport = 0x00
	TransportUC  Transport = 0x20
	TransportRD  Transport = 0x40
	TransportUD  Transport = 0x60
	TransportCNP Transport = 0x80
	TransportXRC Transport = 0xA0
)

// String returns the transport's short name.
func (t Transport) String() string {
	switch t {
	case TransportRC:
		return "RC"
	case TransportUC:
		return "UC"
	case TransportRD:
		return "RD"
	case TransportUD:
		return "UD"
	case TransportCNP:
		return "CNP"
	case TransportXRC:
		return "XRC"
	}
	return "0x" + strconv.FormatUint(uint64(t), 16)
}

// Operation codes (bits 4:0), shared by the transports that support them.
const (
	opSendFirst          = 0x00
	opSendMiddle         = 0x01
	opSendLast           = 0x02
	opSendLastImm        = 0x03
	opSendOnly           = 0x04
	opSendOnlyImm        = 0x05
	opWriteFirst         = 0x06
	opWriteMiddle        = 0x07
	opWriteLast          = 0x08
	opWriteLastImm       = 0x09
	opWriteOnly          = 0x0A
	opWriteOnlyImm       = 0x0B
	opReadRequest        = 0x0C
	opReadResponseFirst  = 0x0D
	opReadResponseMiddle = 0x0E
	opReadResponseLast   = 0x0F
	opReadResponseOnly   = 0x10
	opAcknowledge        = 0x11
	opAtomicAcknowledge  = 0x12
	opCompareSwap        = 0x13
	opFetchAdd           = 0x14
	opResync             = 0x15
	opSendLastInvalidate = 0x16
	opSendOnlyInvalidate = 0x17
	opFlush              = 0x1C
	opAtomicWrite        = 0x1D
	opCNP                = 0x01 // in the 0x80 block
	opcodeTransportMask  = 0xE0
	opcodeOperationMask  = 0x1F
)

// RC opcodes.
const (
	RCSendFirst              Opcode = Opcode(TransportRC) | opSendFirst
	RCSendMiddle             Opcode = Opcode(TransportRC) | opSendMiddle
	RCSendLast               Opcode = Opcode(TransportRC) | opSendLast
	RCSendLastWithImmediate  Opcode = Opcode(TransportRC) | opSendLastImm
	RCSendOnly               Opcode = Opcode(TransportRC) | opSendOnly
	RCSendOnlyWithImmediate  Opcode = Opcode(TransportRC) | opSendOnlyImm
	RCWriteFirst             Opcode = Opcode(TransportRC) | opWriteFirst
	RCWriteMiddle            Opcode = Opcode(TransportRC) | opWriteMiddle
	RCWriteLast              Opcode = Opcode(TransportRC) | opWriteLast
	RCWriteLastWithImmediate Opcode = Opcode(TransportRC) | opWriteLastImm
	RCWriteOnly              Opcode = Opcode(TransportRC) | opWriteOnly
	RCWriteOnlyWithImmediate Opcode = Opcode(TransportRC) | opWriteOnlyImm
	RCReadRequest            Opcode = Opcode(TransportRC) | opReadRequest
	RCReadResponseFirst      Opcode = Opcode(TransportRC) | opReadResponseFirst
	RCReadResponseMiddle     Opcode = Opcode(TransportRC) | opReadResponseMiddle
	RCReadResponseLast       Opcode = Opcode(TransportRC) | opReadResponseLast
	RCReadResponseOnly       Opcode = Opcode(TransportRC) | opReadResponseOnly
	RCAcknowledge            Opcode = Opcode(TransportRC) | opAcknowledge
	RCAtomicAcknowledge      Opcode = Opcode(TransportRC) | opAtomicAcknowledge
	RCCompareSwap            Opcode = Opcode(TransportRC) | opCompareSwap
	RCFetchAdd               Opcode = Opcode(TransportRC) | opFetchAdd
	RCSendLastWithInvalidate Opcode = Opcode(TransportRC) | opSendLastInvalidate
	RCSendOnlyWithInvalidate Opcode = Opcode(TransportRC) | opSendOnlyInvalidate
	RCFlush                  Opcode = Opcode(TransportRC) | opFlush
	RCAtomicWrite            Opcode = Opcode(TransportRC) | opAtomicWrite
	UCSendFirst              Opcode = Opcode(TransportUC) | opSendFirst
	UCSendMiddle             Opcode = Opcode(TransportUC) | opSendMiddle
	UCSendLast               Opcode = Opcode(TransportUC) | opSendLast
	UCSendLastWithImmediate  Opcode = Opcode(TransportUC) | opSendLastImm
	UCSendOnly               Opcode = Opcode(TransportUC) | opSendOnly
	UCSendOnlyWithImmediate  Opcode = Opcode(TransportUC) | opSendOnlyImm
	UCWriteFirst             Opcode = Opcode(TransportUC) | opWriteFirst
	UCWriteMiddle            Opcode = Opcode(TransportUC) | opWriteMiddle
	UCWriteLast              Opcode = Opcode(TransportUC) | opWriteLast
	UCWriteLastWithImmediate Opcode = Opcode(TransportUC) | opWriteLastImm
	UCWriteOnly              Opcode = Opcode(TransportUC) | opWriteOnly
	UCWriteOnlyWithImmediate Opcode = Opcode(TransportUC) | opWriteOnlyImm
	UDSendOnly               Opcode = Opcode(TransportUD) | opSendOnly
	UDSendOnlyWithImmediate  Opcode = Opcode(TransportUD) | opSendOnlyImm
	CNP                      Opcode = Opcode(TransportCNP) | opCNP
)

// Header flags: which extended transport headers follow the BTH.
const (
	hasRDETH uint16 = 1 << iota
	hasDETH
	hasFETH
	hasRETH
	hasAtomicETH
	hasAETH
	hasAtomicAckETH
	hasImmDt
	hasIETH
	hasCNPPad
	hasPayload // the opcode may carry payload
	isKnown
	isFirst
	isMiddle
	isLast
	isRequest
)

// Header sizes in bytes.
const (
	BTHLen          = 12
	RETHLen         = 16
	AETHLen         = 4
	ImmDtLen        = 4
	IETHLen         = 4
	AtomicETHLen    = 28
	AtomicAckETHLen = 8
	DETHLen         = 8
	RDETHLen        = 4
	FETHLen         = 4
	CNPPadLen       = 16 // the 16 reserved zero bytes after a CNP's BTH
	ICRCLen         = 4
)

type opInfo struct {
	name  string
	flags uint16
	ext   uint8 // total bytes of extended headers
}

var opTable [256]opInfo

func init() {
	type op struct {
		code  uint8
		name  string
		flags uint16
	}
	ops := []op{
		{opSendFirst, "SEND_FIRST", hasPayload | isFirst | isRequest},
		{opSendMiddle, "SEND_MIDDLE", hasPayload | isMiddle | isRequest},
		{opSendLast, "SEND_LAST", hasPayload | isLast | isRequest},
		{opSendLastImm, "SEND_LAST_WITH_IMMEDIATE", hasPayload | hasImmDt | isLast | isRequest},
		{opSendOnly, "SEND_ONLY", hasPayload | isFirst | isLast | isRequest},
		{opSendOnlyImm, "SEND_ONLY_WITH_IMMEDIATE", hasPayload | hasImmDt | isFirst | isLast | isRequest},
		{opWriteFirst, "RDMA_WRITE_FIRST", hasPayload | hasRETH | isFirst | isRequest},
		{opWriteMiddle, "RDMA_WRITE_MIDDLE", hasPayload | isMiddle | isRequest},
		{opWriteLast, "RDMA_WRITE_LAST", hasPayload | isLast | isRequest},
		{opWriteLastImm, "RDMA_WRITE_LAST_WITH_IMMEDIATE", hasPayload | hasImmDt | isLast | isRequest},
		{opWriteOnly, "RDMA_WRITE_ONLY", hasPayload | hasRETH | isFirst | isLast | isRequest},
		{opWriteOnlyImm, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", hasPayload | hasRETH | hasImmDt | isFirst | isLast | isRequest},
		{opReadRequest, "RDMA_READ_REQUEST", hasRETH | isFirst | isLast | isRequest},
		{opReadResponseFirst, "RDMA_READ_RESPONSE_FIRST", hasPayload | hasAETH | isFirst},
		{opReadResponseMiddle, "RDMA_READ_RESPONSE_MIDDLE", hasPayload | isMiddle},
		{opReadResponseLast, "RDMA_READ_RESPONSE_LAST", hasPayload | hasAETH | isLast},
		{opReadResponseOnly, "RDMA_READ_RESPONSE_ONLY", hasPayload | hasAETH | isFirst | isLast},
		{opAcknowledge, "ACKNOWLEDGE", hasAETH | isFirst | isLast},
		{opAtomicAcknowledge, "ATOMIC_ACKNOWLEDGE", hasAETH | hasAtomicAckETH | isFirst | isLast},
		{opCompareSwap, "COMPARE_SWAP", hasAtomicETH | isFirst | isLast | isRequest},
		{opFetchAdd, "FETCH_ADD", hasAtomicETH | isFirst | isLast | isRequest},
		{opResync, "RESYNC", isFirst | isLast | isRequest},
		{opSendLastInvalidate, "SEND_LAST_WITH_INVALIDATE", hasPayload | hasIETH | isLast | isRequest},
		{opSendOnlyInvalidate, "SEND_ONLY_WITH_INVALIDATE", hasPayload | hasIETH | isFirst | isLast | isRequest},
		{opFlush, "FLUSH", hasFETH | hasRETH | isFirst | isLast | isRequest},
		{opAtomicWrite, "ATOMIC_WRITE", hasPayload | hasRETH | isFirst | isLast | isRequest},
	}
	for _, o := range ops {
		// RC: everything except RESYNC (RD only).
		if o.code != opResync {
			set(Opcode(TransportRC)|Opcode(o.code), "RC_"+o.name, o.flags)
		}
		// RD: the RC set (without the IBTA 1.5 additions and invalidate), plus
		// RDETH on every packet and DETH on requests.
		if o.code <= opFetchAdd || o.code == opResync {
			f := o.flags | hasRDETH
			if f&isRequest != 0 {
				f |= hasDETH
			}
			set(Opcode(TransportRD)|Opcode(o.code), "RD_"+o.name, f)
		}
		// UC: SEND and WRITE only.
		if o.code <= opWriteOnlyImm {
			set(Opcode(TransportUC)|Opcode(o.code), "UC_"+o.name, o.flags)
		}
	}
	set(UDSendOnly, "UD_SEND_ONLY", hasPayload|hasDETH|isFirst|isLast|isRequest)
	set(UDSendOnlyWithImmediate, "UD_SEND_ONLY_WITH_IMMEDIATE", hasPayload|hasDETH|hasImmDt|isFirst|isLast|isRequest)
	set(CNP, "CNP", hasCNPPad|isFirst|isLast)
}

func set(op Opcode, name string, flags uint16) {
	ext := 0
	for _, h := range []struct {
		f uint16
		n int
	}{{hasRDETH, RDETHLen}, {hasDETH, DETHLen}, {hasFETH, FETHLen}, {hasRETH, RETHLen},
		{hasAtomicETH, AtomicETHLen}, {hasAETH, AETHLen}, {hasAtomicAckETH, AtomicAckETHLen},
		{hasImmDt, ImmDtLen}, {hasIETH, IETHLen}, {hasCNPPad, CNPPadLen}} {
		if flags&h.f != 0 {
			ext += h.n
		}
	}
	opTable[op] = opInfo{name: name, flags: flags | isKnown, ext: uint8(ext)}
}

// Valid reports whether op is an opcode this package knows (RC, UC, RD, UD
// or CNP). Unknown opcodes still decode: their BTH is shown, nothing after it.
func (op Opcode) Valid() bool { return opTable[op].flags&isKnown != 0 }

// String returns the opcode's name, e.g. "RC_RDMA_WRITE_ONLY" or "CNP", and
// "UNKNOWN_0xNN" for an opcode this package does not know.
func (op Opcode) String() string {
	if n := opTable[op].name; n != "" {
		return n
	}
	const hex = "0123456789ABCDEF"
	return "UNKNOWN_0x" + string([]byte{hex[op>>4], hex[op&0xF]})
}

// Transport returns the opcode's transport service.
func (op Opcode) Transport() Transport { return Transport(op & opcodeTransportMask) }

// ExtLen returns the total length of the extended transport headers that
// follow the BTH for this opcode (0 for unknown opcodes).
func (op Opcode) ExtLen() int { return int(opTable[op].ext) }

// HasRETH reports whether packets of this opcode carry a RETH.
func (op Opcode) HasRETH() bool { return opTable[op].flags&hasRETH != 0 }

// HasAETH reports whether packets of this opcode carry an AETH.
func (op Opcode) HasAETH() bool { return opTable[op].flags&hasAETH != 0 }

// HasImmDt reports whether packets of this opcode carry immediate data.
func (op Opcode) HasImmDt() bool { return opTable[op].flags&hasImmDt != 0 }

// HasIETH reports whether packets of this opcode carry an IETH.
func (op Opcode) HasIETH() bool { return opTable[op].flags&hasIETH != 0 }

// HasAtomicETH reports whether packets of this opcode carry an AtomicETH.
func (op Opcode) HasAtomicETH() bool { return opTable[op].flags&hasAtomicETH != 0 }

// HasAtomicAckETH reports whether packets of this opcode carry an AtomicAckETH.
func (op Opcode) HasAtomicAckETH() bool { return opTable[op].flags&hasAtomicAckETH != 0 }

// HasDETH reports whether packets of this opcode carry a DETH.
func (op Opcode) HasDETH() bool { return opTable[op].flags&hasDETH != 0 }

// HasRDETH reports whether packets of this opcode carry an RDETH.
func (op Opcode) HasRDETH() bool { return opTable[op].flags&hasRDETH != 0 }

// HasFETH reports whether packets of this opcode carry a FETH.
func (op Opcode) HasFETH() bool { return opTable[op].flags&hasFETH != 0 }

// HasPayload reports whether packets of this opcode may carry payload.
func (op Opcode) HasPayload() bool { return opTable[op].flags&hasPayload != 0 }

// IsFirst reports whether op starts a message (FIRST or ONLY, and single
// packet requests such as READ requests and atomics).
func (op Opcode) IsFirst() bool { return opTable[op].flags&isFirst != 0 }

// IsLast reports whether op ends a message (LAST or ONLY).
func (op Opcode) IsLast() bool { return opTable[op].flags&isLast != 0 }

// IsMiddle reports whether op is a MIDDLE packet.
func (op Opcode) IsMiddle() bool { return opTable[op].flags&isMiddle != 0 }

// IsRequest reports whether op is sent by a requester (SEND, WRITE, READ
// request, atomics). READ responses and acknowledgements are not requests.
func (op Opcode) IsRequest() bool { return opTable[op].flags&isRequest != 0 }

// IsAck reports whether op is an ACKNOWLEDGE or ATOMIC_ACKNOWLEDGE: the
// packets whose AETH decides ACK vs NAK. Lumina's analyzers call this class
// "ack".
func (op Opcode) IsAck() bool {
	o := op & opcodeOperationMask
	t := op.Transport()
	return (t == TransportRC || t == TransportRD) && (o == opAcknowledge || o == opAtomicAcknowledge)
}

// IsCNP reports whether op is the RoCEv2 congestion notification packet.
func (op Opcode) IsCNP() bool { return op == CNP }

// IsReadRequest reports whether op is an RDMA READ request.
func (op Opcode) IsReadRequest() bool {
	return op.Valid() && op&opcodeOperationMask == opReadRequest && op.Transport() != TransportUC
}

// IsReadResponse reports whether op is an RDMA READ response (any position).
func (op Opcode) IsReadResponse() bool {
	o := op & opcodeOperationMask
	return op.Valid() && o >= opReadResponseFirst && o <= opReadResponseOnly &&
		(op.Transport() == TransportRC || op.Transport() == TransportRD)
}

// IsWrite reports whether op is an RDMA WRITE packet (any position, with or
// without immediate).
func (op Opcode) IsWrite() bool {
	o := op & opcodeOperationMask
	return op.Valid() && o >= opWriteFirst && o <= opWriteOnlyImm
}

// IsSend reports whether op is a SEND packet (any position and variant).
func (op Opcode) IsSend() bool {
	o := op & opcodeOperationMask
	return op.Valid() && (o <= opSendOnlyImm || o == opSendLastInvalidate || o == opSendOnlyInvalidate) &&
		op.Transport() != TransportCNP
}

// IsData reports whether op is a "data" packet in Lumina's classification:
// everything except acknowledgements and CNPs (READ requests and responses
// included). Events are injected on data packets only.
func (op Opcode) IsData() bool { return op.Valid() && !op.IsAck() && !op.IsCNP() }
