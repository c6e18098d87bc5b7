//go:build !dpdk || !linux

package dumper

import (
	"context"
	"fmt"
)

// DPDKAvailable reports whether this binary was built with the dpdk
// backend (go build -tags dpdk, Linux, cgo, libdpdk-dev).
const DPDKAvailable = false

type dpdkStub struct{}

func newDPDK(*Config) backend { return dpdkStub{} }

func (dpdkStub) start(context.Context, []*worker) error {
	return fmt.Errorf("%w: built without dpdk (go build -tags dpdk, needs cgo and libdpdk-dev)", ErrNotSupported)
}
func (dpdkStub) stop() (uint64, []uint64, error) { return 0, nil, nil }
func (dpdkStub) close() error                    { return nil }
