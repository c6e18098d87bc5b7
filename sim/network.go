package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/netlumina/lumina/trace"
)

// Link defaults, applied to zero fields of LinkConfig.
const (
	DefaultBandwidthBps int64         = 100e9                 // 100 Gb/s
	DefaultDelay        time.Duration = 500 * time.Nanosecond // about 100 m of fibre
	DefaultQueueBytes   int           = 16 << 20              // 16 MiB per direction
	DefaultMTU          int           = 9216                  // jumbo Ethernet frame, bytes
)

// Direction names one direction of a link. The zero value is invalid.
type Direction uint8

// The two directions of a link: frames sent by endpoint a travel AtoB.
const (
	AtoB Direction = iota + 1
	BtoA
)

// String returns "a->b", "b->a" or "Direction(N)".
func (d Direction) String() string {
	switch d {
	case AtoB:
		return "a->b"
	case BtoA:
		return "b->a"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// Verdict is a Hook's decision about a frame. The zero value is Pass.
type Verdict uint8

// Hook verdicts.
const (
	Pass Verdict = iota // transmit the (possibly mutated) frame
	Drop                // discard the frame; it takes no time on the wire
)

// String returns "pass", "drop" or "Verdict(N)".
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Drop:
		return "drop"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// LinkConfig describes a full-duplex point-to-point link. The zero value is
// a 100 Gb/s link with 500 ns of propagation delay.
type LinkConfig struct {
	// Name names the link in endpoint names ("<Name>/a", "<Name>/b").
	// Default "link<N>", N counting the Network's links from 0.
	Name string

	// BandwidthBps is the rate of each direction in bits per second.
	// Default (0 or negative) DefaultBandwidthBps, 100 Gb/s. A frame of n
	// bytes occupies the wire for ceil(n*8*1e9/BandwidthBps) ns.
	BandwidthBps int64

	// Delay is the propagation delay added after transmission ends.
	// Default (0) DefaultDelay, 500 ns; negative means no delay.
	Delay time.Duration

	// QueueBytes bounds, per direction, the bytes waiting to be
	// transmitted plus the frame being transmitted. A frame that would
	// exceed it is dropped at Send and counted in DroppedQueue.
	// Default (0) DefaultQueueBytes, 16 MiB; negative means unbounded.
	QueueBytes int

	// MTU is the largest frame, in bytes, the link carries. Larger frames
	// are dropped at Send and counted in DroppedMTU.
	// Default (0) DefaultMTU, 9216; negative means no limit.
	MTU int

	// Hook, if set, runs on the loop when a frame starts transmission,
	// after it left the queue and before taps record it. It may modify the
	// frame in place (the link's private copy: the sender's buffer is not
	// affected) and returns Drop to discard it, counted in DroppedHook. A
	// dropped frame takes no time on the wire. Hook must not call Send and
	// must not keep the frame. Default nil: every frame passes.
	Hook func(dir Direction, frame []byte) Verdict
}

// LinkStats counts one endpoint's traffic. Tx and Dropped counters are for
// frames this endpoint sent; Rx counters for frames it received.
type LinkStats struct {
	TxFrames, TxBytes uint64 // frames that started transmission (passed MTU, queue and hook)
	RxFrames, RxBytes uint64 // frames handed to this endpoint's receiver

	DroppedHook  uint64 // sent frames the Hook dropped
	DroppedQueue uint64 // sent frames dropped because the queue was full
	DroppedMTU   uint64 // sent frames longer than the MTU
	RxDropped    uint64 // frames that arrived while this endpoint had no receiver
}

// Network is a set of links driven by one EventLoop: the in-process
// testbed's wiring. It owns a buffer pool shared by its links.
//
// A Network and its Endpoints are not safe for concurrent use. Use them
// from callbacks running on the loop, or from the goroutine that drives the
// loop while it is not running; from other goroutines, go through
// EventLoop.Post.
type Network struct {
	loop   *EventLoop
	pool   bufPool
	links  []*link
	taps   []*tap
	closed bool
}

// NewNetwork returns an empty Network on loop.
func NewNetwork(loop *EventLoop) *Network {
	if loop == nil {
		panic("sim: NewNetwork with nil loop")
	}
	return &Network{loop: loop}
}

// Loop returns the EventLoop the Network runs on.
func (n *Network) Loop() *EventLoop { return n.loop }

// link is the state shared by a link's two endpoints.
type link struct {
	net        *Network
	name       string
	bw         uint64 // bits per second, > 0
	delay      int64  // ns, >= 0
	queueLimit int    // bytes, < 0 unbounded
	mtu        int    // bytes, < 0 unbounded
	hook       func(Direction, []byte) Verdict
	taps       []*tap
	ends       [2]Endpoint
}

// Endpoint is one end of a link; it implements Port. Frames it sends go
// through its own transmit queue, one at a time, to the other end.
type Endpoint struct {
	link  *link
	peer  *Endpoint
	dir   Direction // direction of the frames this endpoint sends
	name  string
	recv  func([]byte)
	stats LinkStats

	// Transmitter. A frame is on the wire from its start until busyUntil.
	txq         frameQueue // frames waiting for the wire
	txqBytes    int        // bytes in txq
	curLen      int        // length of the last frame put on the wire
	busyUntil   int64      // when the wire is free again
	kickPending bool       // a kick event is scheduled at busyUntil
	kickFn      func()     // e.kick, bound once so scheduling does not allocate

	// Frames on the wire or propagating, in arrival order. Each has one
	// delivery event scheduled; events due at equal times run in
	// scheduling order, so each delivery pops the head.
	flight    frameQueue
	deliverFn func() // e.deliver, bound once
}

var _ Port = (*Endpoint)(nil)

// NewLink adds a link and returns its two endpoints. Frames sent on a
// travel AtoB to b, and frames sent on b travel BtoA to a.
func (n *Network) NewLink(cfg LinkConfig) (a, b *Endpoint) {
	l := &link{
		net:        n,
		name:       cfg.Name,
		bw:         uint64(cfg.BandwidthBps),
		delay:      int64(cfg.Delay),
		queueLimit: cfg.QueueBytes,
		mtu:        cfg.MTU,
		hook:       cfg.Hook,
	}
	if l.name == "" {
		l.name = "link" + strconv.Itoa(len(n.links))
	}
	n.links = append(n.links, l)
	if cfg.BandwidthBps <= 0 {
		l.bw = uint64(DefaultBandwidthBps)
	}
	switch {
	case cfg.Delay == 0:
		l.delay = int64(DefaultDelay)
	case cfg.Delay < 0:
		l.delay = 0
	}
	if cfg.QueueBytes == 0 {
		l.queueLimit = DefaultQueueBytes
	}
	if cfg.MTU == 0 {
		l.mtu = DefaultMTU
	}
	a, b = &l.ends[0], &l.ends[1]
	a.link, a.peer, a.dir, a.name = l, b, AtoB, l.name+"/a"
	b.link, b.peer, b.dir, b.name = l, a, BtoA, l.name+"/b"
	for _, e := range []*Endpoint{a, b} {
		e.kickFn = e.kick
		e.deliverFn = e.deliver
	}
	return a, b
}

// Name returns "<link name>/a" or "<link name>/b".
func (e *Endpoint) Name() string { return e.name }

// Peer returns the other end of the link.
func (e *Endpoint) Peer() *Endpoint { return e.peer }

// Direction returns the direction of the frames this endpoint sends.
func (e *Endpoint) Direction() Direction { return e.dir }

// Stats returns this endpoint's counters.
func (e *Endpoint) Stats() LinkStats { return e.stats }

// SetReceiver sets the function that receives frames arriving at e. It runs
// on the loop; the frame is valid only during the call. With no receiver,
// arriving frames are counted in RxDropped and discarded.
func (e *Endpoint) SetReceiver(fn func(frame []byte)) { e.recv = fn }

// Send copies frame into the link's transmit queue. The frame is dropped
// (and counted) if it is longer than the MTU or the queue is full. If the
// wire is idle, transmission starts now: the Hook and taps run before Send
// returns.
func (e *Endpoint) Send(frame []byte) {
	l := e.link
	size := len(frame)
	if l.mtu >= 0 && size > l.mtu {
		e.stats.DroppedMTU++
		return
	}
	now := l.net.loop.Now()
	busy := now < e.busyUntil
	if l.queueLimit >= 0 {
		queued := e.txqBytes
		if busy {
			queued += e.curLen
		}
		if queued+size > l.queueLimit {
			e.stats.DroppedQueue++
			return
		}
	}
	buf := l.net.pool.get(size)
	copy(buf, frame)
	if !busy && e.txq.len() == 0 {
		e.transmit(now, buf)
		return
	}
	e.txq.push(buf)
	e.txqBytes += size
	if !e.kickPending {
		e.kickPending = true
		l.net.loop.at(e.busyUntil, e.kickFn)
	}
}

// kick runs when the wire becomes free and frames are waiting.
func (e *Endpoint) kick() {
	e.kickPending = false
	now := e.link.net.loop.Now()
	for e.txq.len() > 0 {
		buf := e.txq.pop()
		e.txqBytes -= len(buf)
		if e.transmit(now, buf) {
			break
		}
	}
	if e.txq.len() > 0 {
		e.kickPending = true
		e.link.net.loop.at(e.busyUntil, e.kickFn)
	}
}

// transmit puts buf on the wire at time now, which must be at or after
// busyUntil, and reports whether it did (false: the Hook dropped it).
func (e *Endpoint) transmit(now int64, buf []byte) bool {
	l := e.link
	if l.hook != nil && l.hook(e.dir, buf) == Drop {
		e.stats.DroppedHook++
		l.net.pool.put(buf)
		return false
	}
	for _, t := range l.taps {
		t.write(now, buf)
	}
	end := now + serialization(len(buf), l.bw)
	e.busyUntil = end
	e.curLen = len(buf)
	e.stats.TxFrames++
	e.stats.TxBytes += uint64(len(buf))
	e.flight.push(buf)
	l.net.loop.at(end+l.delay, e.deliverFn)
	return true
}

// deliver hands the oldest frame in flight to the peer's receiver.
func (e *Endpoint) deliver() {
	buf := e.flight.pop()
	p := e.peer
	if p.recv == nil {
		p.stats.RxDropped++
	} else {
		p.stats.RxFrames++
		p.stats.RxBytes += uint64(len(buf))
		p.recv(buf)
	}
	e.link.net.pool.put(buf)
}

// serialization returns ceil(n*8*1e9/bw) nanoseconds, saturating at a
// quarter of MaxInt64 so that adding times cannot overflow.
func serialization(n int, bw uint64) int64 {
	const limit = math.MaxInt64 / 4
	hi, lo := bits.Mul64(uint64(n)*8, 1e9)
	if hi >= bw {
		return limit
	}
	q, r := bits.Div64(hi, lo, bw)
	if r != 0 {
		q++
	}
	if q > limit {
		return limit
	}
	return int64(q)
}

// SerializationDelay returns how long a frame of n bytes occupies a link of
// cfg's bandwidth: ceil(n*8*1e9/bandwidth) ns, with the default bandwidth
// when cfg.BandwidthBps <= 0.
func SerializationDelay(cfg LinkConfig, n int) time.Duration {
	bw := cfg.BandwidthBps
	if bw <= 0 {
		bw = DefaultBandwidthBps
	}
	return time.Duration(serialization(n, uint64(bw)))
}

// PathModel is implemented by a Port whose link is modelled on the
// virtual clock (*Endpoint): it tells a component how long its frames
// spend between it and the other end of the link when the link is idle.
// Components use it to convert a delay measured at the far end of the link
// (the Lumina paper measures NIC latencies at the switch) into the delay
// they add themselves. Real-time ports (AF_PACKET) do not implement it.
type PathModel interface {
	// FrameDelay returns the time from the start of transmission of an
	// n-byte frame to its arrival at the other end of an idle link:
	// serialization (ceil(n·8·1e9/bandwidth) ns) plus propagation. Links
	// are symmetric: it holds for both directions.
	FrameDelay(n int) time.Duration
}

var _ PathModel = (*Endpoint)(nil)

// FrameDelay implements PathModel: serialization of n bytes at the link's
// bandwidth plus its propagation delay.
func (e *Endpoint) FrameDelay(n int) time.Duration {
	return time.Duration(serialization(n, e.link.bw) + e.link.delay)
}

// tap writes the frames of one link to a pcap stream.
type tap struct {
	bw  *bufio.Writer
	pw  *trace.PcapWriter
	err error // first write error; later frames are not written
}

func (t *tap) write(ts int64, frame []byte) {
	if t.err == nil {
		t.err = t.pw.WritePacket(ts, frame, 0)
	}
}

// Tap records every frame either end of ep's link puts on the wire, in
// both directions, into w as a pcap file (Ethernet link type, nanosecond
// timestamps) truncated to snaplen bytes (0: trace.DefaultSnaplen).
//
// A frame is recorded when its transmission starts, after the Hook: the
// tap sees the Hook's modifications and not the frames it drops, nor frames
// dropped at Send for MTU or queue overflow. The timestamp is the virtual
// time of transmission start in nanoseconds, written as if the loop's epoch
// were the Unix epoch (so captures start on 1970-01-01). Frames of the two
// directions are interleaved in transmission order.
//
// Writes go through a bufio.Writer; Close flushes it and reports the first
// write error. w is not closed. Several taps may watch one link.
func (n *Network) Tap(ep *Endpoint, w io.Writer, snaplen int) error {
	if n.closed {
		return ErrClosed
	}
	if ep == nil || ep.link == nil || ep.link.net != n {
		return errors.New("sim: Tap: endpoint does not belong to this network")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	pw, err := trace.NewPcapWriter(bw, snaplen, trace.LinkTypeEthernet)
	if err != nil {
		return fmt.Errorf("sim: tap on %s: %w", ep.link.name, err)
	}
	t := &tap{bw: bw, pw: pw}
	ep.link.taps = append(ep.link.taps, t)
	n.taps = append(n.taps, t)
	return nil
}

// Close detaches and flushes every tap and returns the write errors, if
// any. Links keep working after Close; Tap then fails with ErrClosed.
// Close is idempotent.
func (n *Network) Close() error {
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	for _, t := range n.taps {
		if t.err == nil {
			t.err = t.bw.Flush()
		}
		if t.err != nil {
			errs = append(errs, fmt.Errorf("sim: tap: %w", t.err))
		}
	}
	n.taps = nil
	for _, l := range n.links {
		l.taps = nil
	}
	return errors.Join(errs...)
}
