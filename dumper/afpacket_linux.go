//go:build linux

package dumper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/netlumina/lumina/trace"
)

// TPACKET_V3 layout (linux/if_packet.h). A block starts with a
// tpacket_block_desc; block_status, num_pkts and offset_to_first_pkt are
// at these offsets. Each packet starts with a tpacket3_hdr.
const (
	blkStatusOff   = 8
	blkNumPktsOff  = 12
	blkFirstPktOff = 16

	pktNextOff    = 0
	pktSecOff     = 4
	pktNsecOff    = 8
	pktSnaplenOff = 12
	pktLenOff     = 16
	pktMacOff     = 24

	tpFrameSize = 2048
)

var fanoutSeq atomic.Uint32

// afpacket captures with one TPACKET_V3 socket per worker, all in one
// PACKET_FANOUT group. Workers run in their own goroutines; each owns its
// socket and buffer. draining/deadline are the stop protocol.
type afpacket struct {
	cfg   *Config
	socks []*afSocket
	wg    sync.WaitGroup

	errMu sync.Mutex // guards errs
	errs  []error
}

// afSocket is one worker's socket and ring. The socket is non-blocking and
// registered with the Go runtime's network poller (f, rc): a worker with
// no block to read parks its goroutine instead of blocking an OS thread in
// poll(2), so an idle or waiting worker costs no scheduler work, and stop
// ends the wait with a read deadline.
type afSocket struct {
	fd   int
	f    *os.File        // owns fd once set
	rc   syscall.RawConn // f's
	ring []byte
	bs   int // block size
	nb   int // block count
}

func newAFPacket(cfg *Config) backend { return &afpacket{cfg: cfg} }

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// mirrorFilter is a classic BPF program accepting the frames
// isMirrorCopy accepts, untagged (the kernel strips VLAN tags into
// metadata): IPv4 (first fragment or unfragmented, any IHL) and IPv6 (UDP
// as the first next header) frames whose UDP destination port is port, and
// wrapped mirror copies (EtherType 0x88B5, at least trace.MACMirrorMinLen
// bytes on the wire). It returns snaplen so the kernel copies at most
// snaplen bytes into the ring.
func mirrorFilter(port uint16, snaplen int) []unix.SockFilter {
	const (
		ldh  = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		ldb  = unix.BPF_LD | unix.BPF_B | unix.BPF_ABS
		ldxb = unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH
		ldhx = unix.BPF_LD | unix.BPF_H | unix.BPF_IND
		ldl  = unix.BPF_LD | unix.BPF_W | unix.BPF_LEN
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	p := uint32(port)
	return []unix.SockFilter{
		/* 0 */ {Code: ldh, K: 12},
		/* 1 */ {Code: jeq, K: 0x0800, Jt: 0, Jf: 7}, // → 9 (ipv6)
		/* 2 */ {Code: ldb, K: 23},
		/* 3 */ {Code: jeq, K: 17, Jt: 0, Jf: 14}, // → 18 reject
		/* 4 */ {Code: ldh, K: 20},
		/* 5 */ {Code: jset, K: 0x1fff, Jt: 12, Jf: 0}, // → 18 reject
		/* 6 */ {Code: ldxb, K: 14},
		/* 7 */ {Code: ldhx, K: 16},
		/* 8 */ {Code: jeq, K: p, Jt: 8, Jf: 9}, // → 17 accept / 18 reject
		/* 9 */ {Code: jeq, K: 0x86dd, Jt: 0, Jf: 4}, // → 14 (wrapped)
		/* 10 */ {Code: ldb, K: 20},
		/* 11 */ {Code: jeq, K: 17, Jt: 0, Jf: 6}, // → 18 reject
		/* 12 */ {Code: ldh, K: 56},
		/* 13 */ {Code: jeq, K: p, Jt: 3, Jf: 4}, // → 17 accept / 18 reject
		/* 14 */ {Code: jeq, K: trace.EtherTypeMACMirror, Jt: 0, Jf: 3}, // → 18 reject
		/* 15 */ {Code: ldl},
		/* 16 */ {Code: jge, K: trace.MACMirrorMinLen, Jt: 0, Jf: 1}, // → 17 / 18
		/* 17 */ {Code: ret, K: uint32(snaplen)},
		/* 18 */ {Code: ret, K: 0},
	}
}

func attachFilter(fd int, prog []unix.SockFilter) error {
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp)
}

func (a *afpacket) start(_ context.Context, ws []*worker) error {
	ifi, err := net.InterfaceByName(a.cfg.Interface)
	if err != nil {
		return err
	}
	mode := map[string]int{"hash": unix.PACKET_FANOUT_HASH, "lb": unix.PACKET_FANOUT_LB, "cpu": unix.PACKET_FANOUT_CPU}[a.cfg.FanoutMode]
	group := (uint32(os.Getpid()) + fanoutSeq.Add(1)*7919) & 0xffff
	for range ws {
		s, err := a.open(ifi.Index)
		if err != nil {
			return err
		}
		a.socks = append(a.socks, s)
		if len(ws) > 1 {
			arg := int(group) | mode<<16
			if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, arg); err != nil {
				return fmt.Errorf("PACKET_FANOUT %s: %w", a.cfg.FanoutMode, err)
			}
		}
	}
	// Every socket is in the group: now let mirror copies in, and forget
	// what the drop-all filter counted.
	for _, s := range a.socks {
		if err := attachFilter(s.fd, mirrorFilter(a.cfg.MirrorPort, a.cfg.SnapLen)); err != nil {
			return fmt.Errorf("SO_ATTACH_FILTER: %w", err)
		}
		if _, err := unix.GetsockoptTpacketStatsV3(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err != nil {
			return fmt.Errorf("PACKET_STATISTICS: %w", err)
		}
	}
	for i, s := range a.socks {
		a.wg.Add(1)
		go a.worker(s, ws[i])
	}
	return nil
}

// open creates one worker's socket: drop-all filter first (so nothing
// enters the ring before the fanout group is complete), TPACKET_V3 ring,
// mmap, bind.
func (a *afpacket) open(ifindex int) (*afSocket, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("socket(AF_PACKET): %w", err)
	}
	s := &afSocket{fd: fd, bs: a.cfg.BlockSize, nb: a.cfg.BlockCount}
	fail := func(what string, err error) (*afSocket, error) {
		s.close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := attachFilter(fd, []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}); err != nil {
		return fail("SO_ATTACH_FILTER", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fail("PACKET_VERSION", err)
	}
	req := unix.TpacketReq3{
		Block_size:     uint32(s.bs),
		Block_nr:       uint32(s.nb),
		Frame_size:     tpFrameSize,
		Frame_nr:       uint32(s.bs / tpFrameSize * s.nb),
		Retire_blk_tov: uint32(a.cfg.BlockTimeout / time.Millisecond),
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fail("PACKET_RX_RING", err)
	}
	ring, err := unix.Mmap(fd, 0, s.bs*s.nb, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fail("mmap ring", err)
	}
	s.ring = ring
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	s.f = os.NewFile(uintptr(fd), "packet")
	if s.rc, err = s.f.SyscallConn(); err == nil {
		err = s.f.SetReadDeadline(time.Time{}) // fails unless the poller took the socket
	}
	if err != nil {
		return fail("poller", err)
	}
	return s, nil
}

func (s *afSocket) close() error {
	var err error
	if s.ring != nil {
		err = unix.Munmap(s.ring)
		s.ring = nil
	}
	if s.f != nil {
		err = errors.Join(err, s.f.Close())
		s.f = nil
	} else if s.fd >= 0 {
		err = errors.Join(err, unix.Close(s.fd))
	}
	s.fd = -1
	return err
}

func (s *afSocket) status(blk int) *uint32 {
	return (*uint32)(unsafe.Pointer(&s.ring[blk*s.bs+blkStatusOff]))
}

// worker walks the ring's blocks in order: write every packet of a block
// the kernel handed over to the worker's spool (or count it as dropped
// when the spool cannot take it: the block is released either way, so the
// ring never stalls), give the block back, and when none is ready park
// until the kernel retires one (full, or after BlockTimeout) and wakes the
// socket, as libpcap sleeps in poll. Stop sets a read deadline: the worker
// writes the blocks retired until then and exits. The kernel ring is the
// bounded buffer between the wire and the disk: while the spool writes,
// the kernel fills other blocks, and what finds the ring full is counted
// in tp_drops.
func (a *afpacket) worker(s *afSocket, w *worker) {
	defer a.wg.Done()
	var c batch
	blk := 0
	ready := func(uintptr) bool { return atomic.LoadUint32(s.status(blk))&unix.TP_STATUS_USER != 0 }
	for {
		for ready(0) {
			s.block(w, &c, blk)
			atomic.StoreUint32(s.status(blk), unix.TP_STATUS_KERNEL)
			w.c.flush(&c)
			blk++
			if blk == s.nb {
				blk = 0
			}
		}
		if err := s.rc.Read(ready); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				a.errMu.Lock()
				a.errs = append(a.errs, fmt.Errorf("wait for a block: %w", err))
				a.errMu.Unlock()
			}
			for ready(0) { // retired just before the deadline
				s.block(w, &c, blk)
				atomic.StoreUint32(s.status(blk), unix.TP_STATUS_KERNEL)
				blk = (blk + 1) % s.nb
			}
			w.c.flush(&c)
			return
		}
	}
}

// block writes the packets of block blk, which the kernel handed over, to
// w's spool.
func (s *afSocket) block(w *worker, c *batch, blk int) {
	ne := binary.NativeEndian
	base := blk * s.bs
	block := s.ring[base : base+s.bs]
	n := int(ne.Uint32(block[blkNumPktsOff:]))
	off := int(ne.Uint32(block[blkFirstPktOff:]))
	for i := 0; i < n && off+pktMacOff+2 <= len(block); i++ {
		h := block[off : off+pktMacOff+2]
		snap := int(ne.Uint32(h[pktSnaplenOff:]))
		mac := off + int(ne.Uint16(h[pktMacOff:]))
		if mac+snap <= len(block) {
			w.sp.put(c, block[mac:mac+snap], int(ne.Uint32(h[pktLenOff:])))
		}
		next := int(ne.Uint32(h[pktNextOff:]))
		if next == 0 {
			break
		}
		off += next
	}
}

// stop drains: the kernel retires a partly filled block after
// BlockTimeout, so workers keep reading until a few timeouts have passed.
// Then it reads PACKET_STATISTICS (tp_drops: frames that found the ring
// full).
func (a *afpacket) stop() (uint64, []uint64, error) {
	deadline := time.Now().Add(3*a.cfg.BlockTimeout + 20*time.Millisecond)
	for _, s := range a.socks {
		s.f.SetReadDeadline(deadline)
	}
	a.wg.Wait()
	per := make([]uint64, len(a.socks))
	var total uint64
	var errs []error
	for i, s := range a.socks {
		st, err := unix.GetsockoptTpacketStatsV3(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err != nil {
			errs = append(errs, fmt.Errorf("PACKET_STATISTICS: %w", err))
			continue
		}
		per[i] = uint64(st.Drops)
		total += per[i]
	}
	a.errMu.Lock()
	errs = append(errs, a.errs...)
	a.errMu.Unlock()
	return total, per, errors.Join(errs...)
}

func (a *afpacket) close() error {
	var errs []error
	for _, s := range a.socks {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}
