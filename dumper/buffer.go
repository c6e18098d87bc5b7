package dumper

import "sync/atomic"

// record describes one captured frame in a worker's slab.
type record struct {
	origLen uint32 // length on the wire
	capLen  uint32 // bytes kept in the slab (≤ snaplen)
	tsNs    int64  // capture time (backend clock), for diagnostics only
}

// buffer is one worker's capture memory: a slab of up to cap*snap bytes
// and up to cap records. It is written by exactly one goroutine (the
// worker) until the worker has stopped; then it is read by Stop. Only the
// counters are atomic, so that Live can read them while the worker runs.
//
// A preallocated buffer (the real-time backends) holds the whole slab
// from the start, touched, so capture never faults or allocates. A
// growable one (the sim backend, on a virtual clock) grows as frames
// arrive, doubling, so memory follows what was captured.
type buffer struct {
	slab []byte
	recs []record
	snap int
	cap  int  // frames the buffer may hold
	grow bool // the slab and records grow on demand
	n    int  // records used; owned by the worker

	received atomic.Uint64 // frames handed to add (dropped ones included)
	dropped  atomic.Uint64 // frames lost because the buffer was full
	foreign  atomic.Uint64 // frames not addressed to the mirror port
}

// growFrames is the first size of a growable buffer, in frames.
const growFrames = 1024

// newBuffer returns a buffer for capacity frames of snap bytes. With
// prealloc it allocates all of it now and touches it (one byte per page,
// so the kernel maps the pages now and not during a real-time capture);
// without, it starts small and grows.
func newBuffer(capacity, snap int, prealloc bool) *buffer {
	b := &buffer{snap: snap, cap: capacity, grow: !prealloc}
	if !prealloc {
		return b
	}
	b.slab = make([]byte, capacity*snap)
	b.recs = make([]record, capacity)
	for i := 0; i < len(b.slab); i += 4096 {
		b.slab[i] = 0
	}
	for i := 0; i < len(b.recs); i += 256 {
		b.recs[i] = record{}
	}
	return b
}

// add copies frame (cut to the snap length) into the next slot. When the
// buffer is full it counts a drop and returns false. A preallocated buffer
// never allocates; a growable one allocates when it doubles.
// The counters are updated by the caller in batches (see flush) to keep
// atomics off the per-packet path.
func (b *buffer) add(frame []byte, origLen int, tsNs int64) bool {
	if b.n == b.cap {
		return false
	}
	if b.n == len(b.recs) {
		b.extend()
	}
	off := b.n * b.snap
	c := copy(b.slab[off:off+b.snap], frame)
	b.recs[b.n] = record{origLen: uint32(origLen), capLen: uint32(c), tsNs: tsNs}
	b.n++
	return true
}

// extend doubles a growable buffer, up to its capacity.
func (b *buffer) extend() {
	n := min(max(growFrames, 2*len(b.recs)), b.cap)
	slab := make([]byte, n*b.snap)
	copy(slab, b.slab[:b.n*b.snap])
	recs := make([]record, n)
	copy(recs, b.recs[:b.n])
	b.slab, b.recs = slab, recs
}

// frame returns the bytes of record i.
func (b *buffer) frame(i int) []byte {
	off := i * b.snap
	return b.slab[off : off+int(b.recs[i].capLen)]
}

// batch counts frames a worker handled since its last flush.
type batch struct {
	received, dropped, foreign uint64
}

// flush publishes a batch's counts and resets it.
func (b *buffer) flush(c *batch) {
	if c.received != 0 {
		b.received.Add(c.received)
	}
	if c.dropped != 0 {
		b.dropped.Add(c.dropped)
	}
	if c.foreign != 0 {
		b.foreign.Add(c.foreign)
	}
	*c = batch{}
}

// put is add plus counting into c.
func (b *buffer) put(c *batch, frame []byte, origLen int, tsNs int64) {
	c.received++
	if !b.add(frame, origLen, tsNs) {
		c.dropped++
	}
}
