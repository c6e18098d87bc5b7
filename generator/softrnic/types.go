package softrnic

import "github.com/netlumina/lumina/generator"

// The verbs-like types are the generator's, so that the generator drives
// this NIC and a real one the same way.
type (
	WROpcode     = generator.WROpcode
	Status       = generator.Status
	CompletionOp = generator.CompletionOp
	Completion   = generator.Completion
	MR           = generator.MR
	SendWR       = generator.SendWR
	RecvWR       = generator.RecvWR
	QPState      = generator.QPState
	ConnectAttr  = generator.ConnectAttr
	QPAttr       = generator.QPAttr
)

// Re-exported constants (see package generator).
const (
	WRWrite    = generator.WRWrite
	WRWriteImm = generator.WRWriteImm
	WRSend     = generator.WRSend
	WRSendImm  = generator.WRSendImm
	WRRead     = generator.WRRead

	StatusSuccess        = generator.StatusSuccess
	StatusLocLenErr      = generator.StatusLocLenErr
	StatusLocProtErr     = generator.StatusLocProtErr
	StatusWRFlushErr     = generator.StatusWRFlushErr
	StatusRemInvReqErr   = generator.StatusRemInvReqErr
	StatusRemAccessErr   = generator.StatusRemAccessErr
	StatusRemOpErr       = generator.StatusRemOpErr
	StatusRetryExcErr    = generator.StatusRetryExcErr
	StatusRNRRetryExcErr = generator.StatusRNRRetryExcErr

	CompSend        = generator.CompSend
	CompWrite       = generator.CompWrite
	CompRead        = generator.CompRead
	CompRecv        = generator.CompRecv
	CompRecvWithImm = generator.CompRecvWithImm

	QPReset = generator.QPReset
	QPRTS   = generator.QPRTS
	QPError = generator.QPError
)

// Errors (see package generator).
var (
	ErrQPState     = generator.ErrQPState
	ErrBadWR       = generator.ErrBadWR
	ErrQueueFull   = generator.ErrQueueFull
	ErrBadConnect  = generator.ErrBadConnect
	ErrUnknownAddr = generator.ErrUnknownAddr
)

// device adapts a NIC to generator.Device.
type device struct{ *NIC }

// Device returns the NIC as a generator.Device.
func (n *NIC) Device() generator.Device { return device{n} }

func (d device) NewQP() generator.QP           { return d.CreateQP() }
func (d device) CounterMap() map[string]uint64 { return d.Counters().Map() }

var _ generator.QP = (*QP)(nil)
