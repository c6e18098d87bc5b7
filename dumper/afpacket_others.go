//go:build !linux

package dumper

import (
	"context"
	"fmt"
)

type afpacketStub struct{}

func newAFPacket(*Config) backend { return afpacketStub{} }

func (afpacketStub) start(context.Context, []*worker) error {
	return fmt.Errorf("%w: afpacket needs Linux", ErrNotSupported)
}
func (afpacketStub) stop() (uint64, []uint64, error) { return 0, nil, nil }
func (afpacketStub) close() error                    { return nil }
