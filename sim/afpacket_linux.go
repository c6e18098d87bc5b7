package sim

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// AFPacketPort is a Port over a Linux AF_PACKET raw socket bound to one
// network interface: the real-time counterpart of a link Endpoint. Frames
// sent go out on the interface as they are; frames received (from other
// hosts, not our own transmissions) are copied and delivered on the Loop.
//
// The socket belongs to the network namespace of the thread that calls
// OpenAFPacket. Send must be called on the Loop; Close from anywhere.
type AFPacketPort struct {
	fd    int
	name  string
	loop  Loop
	recv  atomic.Pointer[func([]byte)]
	done  atomic.Bool
	wg    sync.WaitGroup
	stats AFPacketStats
}

// AFPacketStats counts a port's traffic. Fields are read with Stats.
type AFPacketStats struct {
	TxFrames, TxErrors, RxFrames, RxNoReceiver atomic.Uint64
}

const ethPAll = 0x0003

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// OpenAFPacket opens a raw socket on interface ifname (in promiscuous mode)
// and starts delivering its frames to loop.
func OpenAFPacket(ifname string, loop Loop) (*AFPacketPort, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("sim: afpacket: %w", err)
	}
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, int(htons(ethPAll)))
	if err != nil {
		return nil, fmt.Errorf("sim: afpacket socket on %s: %w (needs CAP_NET_RAW)", ifname, err)
	}
	sa := &syscall.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: ifi.Index}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("sim: afpacket bind %s: %w", ifname, err)
	}
	mreq := packetMreq{ifindex: int32(ifi.Index), typ: 1 /* PACKET_MR_PROMISC */}
	if _, _, e := syscall.Syscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), 263 /* SOL_PACKET */, 1, /* PACKET_ADD_MEMBERSHIP */
		uintptr(unsafe.Pointer(&mreq)), unsafe.Sizeof(mreq), 0); e != 0 {
		syscall.Close(fd)
		return nil, fmt.Errorf("sim: afpacket promiscuous mode on %s: %w", ifname, e)
	}
	tv := syscall.NsecToTimeval(int64(50 * time.Millisecond))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("sim: afpacket timeout: %w", err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<20)
	p := &AFPacketPort{fd: fd, name: ifname, loop: loop}
	p.wg.Add(1)
	go p.readLoop()
	return p, nil
}

type packetMreq struct {
	ifindex int32
	typ     uint16
	alen    uint16
	addr    [8]byte
}

// Name returns the interface name.
func (p *AFPacketPort) Name() string { return p.name }

// SetReceiver sets the function that gets each received frame on the Loop.
func (p *AFPacketPort) SetReceiver(fn func(frame []byte)) { p.recv.Store(&fn) }

// Send writes frame to the interface. Errors are counted (Stats), not
// returned: a lossy wire is something the protocol handles.
func (p *AFPacketPort) Send(frame []byte) {
	if p.done.Load() {
		return
	}
	if _, err := syscall.Write(p.fd, frame); err != nil {
		p.stats.TxErrors.Add(1)
		return
	}
	p.stats.TxFrames.Add(1)
}

// Stats returns the port's counters.
func (p *AFPacketPort) Stats() (txFrames, txErrors, rxFrames, rxNoReceiver uint64) {
	return p.stats.TxFrames.Load(), p.stats.TxErrors.Load(), p.stats.RxFrames.Load(), p.stats.RxNoReceiver.Load()
}

// Close stops reception and closes the socket. It waits for the reader.
func (p *AFPacketPort) Close() error {
	if p.done.Swap(true) {
		return nil
	}
	p.wg.Wait()
	return syscall.Close(p.fd)
}

func (p *AFPacketPort) readLoop() {
	defer p.wg.Done()
	buf := make([]byte, 65536)
	for !p.done.Load() {
		n, from, err := syscall.Recvfrom(p.fd, buf, 0)
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == 4 /* PACKET_OUTGOING */ {
			continue
		}
		frame := append([]byte(nil), buf[:n]...)
		p.stats.RxFrames.Add(1)
		p.loop.Post(func() {
			if fn := p.recv.Load(); fn != nil {
				(*fn)(frame)
			} else {
				p.stats.RxNoReceiver.Add(1)
			}
		})
	}
}

var _ Port = (*AFPacketPort)(nil)
