//go:build linux

package dumper

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Blaster sends raw frames on an interface through an AF_PACKET socket
// that bypasses the qdisc: the test and benchmark traffic source. It is
// not safe for concurrent use.
type Blaster struct {
	fd int
}

// OpenBlaster opens a sending socket on ifname in the calling thread's
// network namespace. The socket receives nothing.
func OpenBlaster(ifname string) (*Blaster, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket(AF_PACKET): %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("SO_SNDBUF: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind: %w", err)
	}
	return &Blaster{fd: fd}, nil
}

// Send transmits one frame, retrying while the socket's buffer is full.
func (b *Blaster) Send(frame []byte) error {
	for {
		_, err := unix.Write(b.fd, frame)
		if err == nil {
			return nil
		}
		if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		return err
	}
}

// Close closes the socket.
func (b *Blaster) Close() error { return unix.Close(b.fd) }
