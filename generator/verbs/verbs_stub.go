//go:build !verbs || !linux || !cgo

package verbs

import (
	"net/netip"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// Device is an RDMA device opened with Open. In this build (without the
// verbs tag, without cgo, or not on Linux) it cannot be opened: Open returns
// ErrNotBuilt.
type Device struct{}

var _ generator.Device = (*Device)(nil)

// Open returns ErrNotBuilt: the binary was built without libibverbs.
func Open(cfg Config) (*Device, error) { return nil, ErrNotBuilt }

// Name returns "".
func (*Device) Name() string { return "" }

// MAC returns the zero MAC.
func (*Device) MAC() [6]byte { return [6]byte{} }

// IPs returns nil.
func (*Device) IPs() []netip.Addr { return nil }

// RegMR returns an unregistered MR over buf.
func (*Device) RegMR(buf []byte) *generator.MR { return &generator.MR{Buf: buf} }

// NewQP returns a QP whose methods fail with ErrNotBuilt.
func (*Device) NewQP() generator.QP { return stubQP{} }

// SetCompletionHandler does nothing.
func (*Device) SetCompletionHandler(func(generator.Completion)) {}

// CounterMap returns nil.
func (*Device) CounterMap() map[string]uint64 { return nil }

// Err returns ErrNotBuilt.
func (*Device) Err() error { return ErrNotBuilt }

// Close does nothing.
func (*Device) Close() error { return nil }

type stubQP struct{}

func (stubQP) QPN() uint32                         { return 0 }
func (stubQP) PSN() roce.PSN                       { return 0 }
func (stubQP) LocalIP() netip.Addr                 { return netip.Addr{} }
func (stubQP) Connect(generator.ConnectAttr) error { return ErrNotBuilt }
func (stubQP) PostSend(generator.SendWR) error     { return ErrNotBuilt }
func (stubQP) PostRecv(generator.RecvWR) error     { return ErrNotBuilt }
