//go:build !linux

package sim

import "errors"

// AFPacketPort is a Port over a Linux AF_PACKET socket; not supported here.
type AFPacketPort struct{}

var (
	_ TimedPort   = (*AFPacketPort)(nil)
	_ TxTimedPort = (*AFPacketPort)(nil)
)

// OpenAFPacket is not supported on this OS.
func OpenAFPacket(ifname string, loop Loop) (*AFPacketPort, error) {
	return nil, errors.New("sim: AF_PACKET ports need Linux")
}

func (p *AFPacketPort) Name() string                            { return "" }
func (p *AFPacketPort) SetReceiver(fn func([]byte))             {}
func (p *AFPacketPort) SetTimedReceiver(fn func([]byte, int64)) {}
func (p *AFPacketPort) Send(frame []byte)                       {}
func (p *AFPacketPort) SendTimed(frame []byte) (int64, bool)    { return 0, false }
func (p *AFPacketPort) Close() error                            { return nil }
