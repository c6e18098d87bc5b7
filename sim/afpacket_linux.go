package sim

import (
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
// It is a TimedPort: the socket has SO_TIMESTAMPNS on, so each frame comes
// with the kernel's software receive timestamp (CLOCK_REALTIME, taken when
// the frame entered the receive path, before it queued on the socket), and
// the reader goroutine converts it to the Loop's clock when it reads the
// frame:
//
//	rxNs = loop.Now() - (time.Now().UnixNano() - kernelNs) / slowdown
//
// that is, the frame arrived (wall now − kernel stamp) before loop.Now(),
// on the loop's clock (a RealLoop's Slowdown; 1 for other loops).
// The conversion reads two clocks one after the other — the wall clock
// first — so its error is the time between the two reads, and it can only
// make rxNs later, never earlier. A third read (the wall clock again)
// bounds it: a pair more than maxClockPairNs apart (the reader was
// preempted between the reads) is read again, up to clockPairTries times,
// so the error is tens of ns and in practice below 2 µs. rxNs is capped at
// the loop time of the read, so a wall-clock step forward cannot put an
// arrival in the future; a step backwards while frames are queued makes
// their rxNs early by the step. A frame without a timestamp (the kernel
// refused the option) gets the loop time of the read, and is counted in
// AFPacketStats.RxUntimed.
//
// It is a TxTimedPort: SendTimed asks the kernel for the frame's software
// transmit timestamp (SO_TIMESTAMPING, taken when the driver hands the
// frame on: for a veth, as it enters the peer's receive path) and reads it
// from the socket's error queue once the write returned, converting it to
// the Loop's clock as a receive timestamp.
//
// The socket belongs to the network namespace of the thread that calls
// OpenAFPacket. Send and SendTimed must be called on the Loop; Close from
// anywhere.
type AFPacketPort struct {
	fd    int
	name  string
	loop  Loop
	slow  int64                               // the Loop's slowdown (1 unless a RealLoop's)
	tx    *txMsg                              // SendTimed's buffers (on the Loop)
	recv  atomic.Pointer[func([]byte, int64)] // set by SetReceiver or SetTimedReceiver
	done  atomic.Bool
	wg    sync.WaitGroup
	stats AFPacketStats
}

var (
	_ Port        = (*AFPacketPort)(nil)
	_ TimedPort   = (*AFPacketPort)(nil)
	_ TxTimedPort = (*AFPacketPort)(nil)
)

// AFPacketStats counts a port's traffic. Fields are read with Stats.
type AFPacketStats struct {
	TxFrames, TxErrors, RxFrames, RxNoReceiver atomic.Uint64
	// RxUntimed counts received frames that carried no kernel timestamp
	// and were stamped with the loop time of the read instead.
	RxUntimed atomic.Uint64
}

const (
	ethPAll        = 0x0003
	packetOutgoing = 4 // sockaddr_ll.sll_pkttype of our own transmissions
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// OpenAFPacket opens a raw socket on interface ifname (in promiscuous mode,
// with kernel receive timestamps) and starts delivering its frames to loop.
func OpenAFPacket(ifname string, loop Loop) (*AFPacketPort, error) {
	return openAFPacket(ifname, loop, nil)
}

// openAFPacket is OpenAFPacket with a function the reader calls before each
// read; tests use it to make the reader late.
func openAFPacket(ifname string, loop Loop, beforeRead func()) (*AFPacketPort, error) {
	fd, err := openPacketSocket(ifname)
	if err != nil {
		return nil, err
	}
	p := &AFPacketPort{fd: fd, name: ifname, loop: loop, slow: 1, tx: newTxMsg()}
	if s, ok := loop.(interface{ Slowdown() int64 }); ok {
		p.slow = max(s.Slowdown(), 1)
	}
	p.wg.Add(1)
	go p.readLoop(beforeRead)
	return p, nil
}

// openPacketSocket opens and configures the socket of an AFPacketPort.
func openPacketSocket(ifname string) (int, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return -1, fmt.Errorf("sim: afpacket: %w", err)
	}
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, int(htons(ethPAll)))
	if err != nil {
		return -1, fmt.Errorf("sim: afpacket socket on %s: %w (needs CAP_NET_RAW)", ifname, err)
	}
	sa := &syscall.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: ifi.Index}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("sim: afpacket bind %s: %w", ifname, err)
	}
	mreq := packetMreq{ifindex: int32(ifi.Index), typ: 1 /* PACKET_MR_PROMISC */}
	if _, _, e := syscall.Syscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), 263 /* SOL_PACKET */, 1, /* PACKET_ADD_MEMBERSHIP */
		uintptr(unsafe.Pointer(&mreq)), unsafe.Sizeof(mreq), 0); e != 0 {
		syscall.Close(fd)
		return -1, fmt.Errorf("sim: afpacket promiscuous mode on %s: %w", ifname, e)
	}
	tv := syscall.NsecToTimeval(int64(50 * time.Millisecond))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("sim: afpacket timeout: %w", err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<20)
	// Without timestamps frames are stamped when read (counted in RxUntimed).
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	// Software transmit timestamps, reported alone (no copy of the frame),
	// for the frames SendTimed asks them for; no SCM_TIMESTAMPING on
	// received frames (SO_TIMESTAMPNS reports those). Without them
	// SendTimed reports the departure unknown.
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soTimestamping, sofSoftware|sofOptTSOnly|sofOptRxFilter)
	return fd, nil
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
func (p *AFPacketPort) SetReceiver(fn func(frame []byte)) {
	if fn == nil {
		p.recv.Store(nil)
		return
	}
	timed := func(frame []byte, _ int64) { fn(frame) }
	p.recv.Store(&timed)
}

// SetTimedReceiver sets the function that gets each received frame on the
// Loop, with its arrival time on the Loop's clock (see AFPacketPort).
func (p *AFPacketPort) SetTimedReceiver(fn func(frame []byte, rxNs int64)) {
	if fn == nil {
		p.recv.Store(nil)
		return
	}
	p.recv.Store(&fn)
}

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

// SO_TIMESTAMPING (linux/net_tstamp.h): the socket option (and control
// message type) and its flags.
const (
	soTimestamping = 37 // SO_TIMESTAMPING_OLD = SCM_TIMESTAMPING_OLD; the same as NEW on 64-bit
	sofTxSoftware  = 1 << 1
	sofSoftware    = 1 << 4
	sofOptTSOnly   = 1 << 11
	sofOptRxFilter = 1 << 17
)

// SendTimed writes frame as Send does, asking for its software transmit
// timestamp, and returns that on the Loop's clock. ok is false when the
// write failed or no timestamp in the write's time window came back.
func (p *AFPacketPort) SendTimed(frame []byte) (int64, bool) {
	if p.done.Load() {
		return 0, false
	}
	before := wallNow()
	if err := p.tx.send(p.fd, frame); err != 0 {
		p.stats.TxErrors.Add(1)
		return 0, false
	}
	p.stats.TxFrames.Add(1)
	wall, now := clockPair(wallNow, p.loop.Now)
	// The stamp is taken during the write; one outside it is a stale one
	// from an earlier frame.
	kns, ok := p.tx.timestamp(p.fd, before, wall)
	if !ok {
		return 0, false
	}
	return arrivalOnLoop(now, wall, kns, true, p.slow), true
}

// txMsg is SendTimed's sendmsg(2) and error-queue recvmsg(2) state,
// allocated once.
type txMsg struct {
	hdr  syscall.Msghdr
	iov  syscall.Iovec
	ctl  [4]uint64 // the SO_TIMESTAMPING request: cmsghdr + int
	oob  [16]uint64
	data [64]byte
}

func newTxMsg() *txMsg {
	m := &txMsg{}
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&m.ctl[0]))
	h.Level, h.Type = syscall.SOL_SOCKET, soTimestamping
	h.SetLen(syscall.CmsgLen(4))
	*(*int32)(unsafe.Add(unsafe.Pointer(&m.ctl[0]), syscall.CmsgLen(0))) = sofTxSoftware
	return m
}

// send writes frame with a request for its software transmit timestamp.
func (m *txMsg) send(fd int, frame []byte) syscall.Errno {
	if len(frame) == 0 {
		return syscall.EINVAL
	}
	m.hdr = syscall.Msghdr{Iov: &m.iov, Iovlen: 1, Control: (*byte)(unsafe.Pointer(&m.ctl[0]))}
	m.hdr.SetControllen(syscall.CmsgSpace(4))
	m.iov.Base = &frame[0]
	m.iov.SetLen(len(frame))
	_, _, e := syscall.Syscall(syscall.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), 0)
	m.iov.Base = nil
	return e
}

// timestamp reads the socket's error queue until it is empty and returns
// the last software transmit timestamp within [from, to] (ns since the
// Unix epoch).
func (m *txMsg) timestamp(fd int, from, to int64) (int64, bool) {
	var ts int64
	ok := false
	for range 64 { // bounded: each read consumes an entry
		m.hdr = syscall.Msghdr{Iov: &m.iov, Iovlen: 1, Control: (*byte)(unsafe.Pointer(&m.oob[0]))}
		m.iov.Base = &m.data[0]
		m.iov.SetLen(len(m.data))
		m.hdr.SetControllen(len(m.oob) * 8)
		_, _, e := syscall.Syscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), syscall.MSG_ERRQUEUE|syscall.MSG_DONTWAIT)
		if e != 0 {
			break
		}
		if t, found := cmsgTxTimestamp(controlBytes(m.oob[:], &m.hdr)); found && t >= from && t <= to {
			ts, ok = t, true
		}
	}
	return ts, ok
}

// cmsgTxTimestamp finds the SCM_TIMESTAMPING control message in b and
// returns its software timestamp (the first of its three) in ns since the
// Unix epoch; a zero one is none.
func cmsgTxTimestamp(b []byte) (int64, bool) {
	ts, ok := cmsgTimespec(b, soTimestamping, 3)
	if !ok || ts.Nano() == 0 {
		return 0, false
	}
	return ts.Nano(), true
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

func (p *AFPacketPort) readLoop(beforeRead func()) {
	defer p.wg.Done()
	m := newRxMsg(65536)
	slow := p.slow
	for !p.done.Load() {
		if beforeRead != nil {
			beforeRead()
		}
		n, errno := m.recv(p.fd)
		if errno != 0 {
			if errno == syscall.EAGAIN || errno == syscall.EINTR {
				continue
			}
			return
		}
		if m.from.Pkttype == packetOutgoing {
			continue
		}
		wall, now := clockPair(wallNow, p.loop.Now)
		kns, ok := cmsgRxTimestamp(m.control())
		if !ok {
			p.stats.RxUntimed.Add(1)
		}
		rxNs := arrivalOnLoop(now, wall, kns, ok, slow)
		frame := append([]byte(nil), m.buf[:n]...)
		p.stats.RxFrames.Add(1)
		p.loop.Post(func() {
			if fn := p.recv.Load(); fn != nil {
				(*fn)(frame, rxNs)
			} else {
				p.stats.RxNoReceiver.Add(1)
			}
		})
	}
}

// maxClockPairNs and clockPairTries: see clockPair.
const (
	maxClockPairNs = 2000
	clockPairTries = 4
)

func wallNow() int64 { return time.Now().UnixNano() }

// clockPair reads the wall clock, then the loop's: a delay between the reads
// makes an arrival converted with them later by that delay. It reads the
// wall clock a second time after the loop's and returns the first pair whose
// reads were at most maxClockPairNs apart (the last of clockPairTries
// otherwise).
func clockPair(wall, loop func() int64) (wallNs, loopNs int64) {
	for i := 0; ; i++ {
		w := wall()
		l := loop()
		if wall()-w <= maxClockPairNs || i == clockPairTries-1 {
			return w, l
		}
	}
}

// arrivalOnLoop converts a kernel receive timestamp kernelNs (CLOCK_REALTIME)
// to the loop's clock, given the loop time loopNow and the wall time wallNs
// read just after the frame was read: the frame arrived wallNs − kernelNs
// of wall time, (wallNs − kernelNs) / slow of loop time, before loopNow
// (slow: the loop's slowdown). Without a timestamp (ok false), or with one
// after wallNs, the arrival is loopNow.
func arrivalOnLoop(loopNow, wallNs, kernelNs int64, ok bool, slow int64) int64 {
	if !ok || kernelNs >= wallNs {
		return loopNow
	}
	return loopNow - (wallNs-kernelNs)/max(slow, 1)
}

// rxMsg is the reader's recvmsg(2) state, allocated once: the frame buffer,
// the sender's address and the control messages, and the msghdr pointing at
// them. Reading with it allocates nothing.
type rxMsg struct {
	hdr  syscall.Msghdr
	iov  syscall.Iovec
	from syscall.RawSockaddrLinklayer
	oob  [8]uint64 // control messages; uint64 for cmsghdr alignment
	buf  []byte
}

func newRxMsg(size int) *rxMsg {
	m := &rxMsg{buf: make([]byte, size)}
	m.iov.Base = &m.buf[0]
	m.iov.SetLen(size)
	m.hdr.Name = (*byte)(unsafe.Pointer(&m.from))
	m.hdr.Iov = &m.iov
	m.hdr.Iovlen = 1
	m.hdr.Control = (*byte)(unsafe.Pointer(&m.oob[0]))
	return m
}

// recv reads one frame into m.buf and returns its length, or the errno.
func (m *rxMsg) recv(fd int) (int, syscall.Errno) {
	m.hdr.Namelen = syscall.SizeofSockaddrLinklayer
	m.hdr.SetControllen(len(m.oob) * 8)
	m.hdr.Flags = 0
	n, _, e := syscall.Syscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// control returns the control messages of the last recv.
func (m *rxMsg) control() []byte { return controlBytes(m.oob[:], &m.hdr) }

// controlBytes returns the control messages a recvmsg(2) with hdr wrote
// into oob.
func controlBytes(oob []uint64, hdr *syscall.Msghdr) []byte {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&oob[0])), len(oob)*8)
	return b[:min(int(hdr.Controllen), len(b))]
}

// cmsgRxTimestamp finds the SCM_TIMESTAMPNS control message in b (the
// control data of a recvmsg) and returns its time in ns since the Unix
// epoch. b must be aligned as the kernel writes it (cmsghdr alignment).
func cmsgRxTimestamp(b []byte) (int64, bool) {
	ts, ok := cmsgTimespec(b, syscall.SCM_TIMESTAMPNS, 1)
	if !ok {
		return 0, false
	}
	return ts.Nano(), true
}

// cmsgTimespec finds the first SOL_SOCKET control message of type typ in b
// that holds at least n timespecs and returns the first of them. b must be
// aligned as the kernel writes it (cmsghdr alignment).
func cmsgTimespec(b []byte, typ int32, n int) (*syscall.Timespec, bool) {
	hdrLen := syscall.CmsgLen(0)
	tsLen := syscall.CmsgLen(n * int(unsafe.Sizeof(syscall.Timespec{})))
	for len(b) >= hdrLen {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdrLen || l > len(b) {
			return nil, false
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == typ && l >= tsLen {
			return (*syscall.Timespec)(unsafe.Pointer(&b[hdrLen])), true
		}
		next := syscall.CmsgSpace(l - hdrLen)
		if next >= len(b) {
			break
		}
		b = b[next:]
	}
	return nil, false
}
