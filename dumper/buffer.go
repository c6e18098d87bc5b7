package dumper

import "sync/atomic"

// record describes one captured frame in a worker's slab.
type record struct {
	origLen uint32 // length on the wire
	capLen  uint32 // bytes kept in the slab (≤ snaplen)
	tsNs    int64  // capture time (backend clock), for diagnostics only
}

// buffer is one worker's preallocated capture memory: a slab of
// cap*snap bytes and a fixed array of records. It is written by exactly one
// goroutine (the worker) until the worker has stopped; then it is read by
// Stop. Only the counters are atomic, so that Live can read them while the
// worker runs.
type buffer struct {
	slab []byte
	recs []record
	snap int
	n    int // records used; owned by the worker

	received atomic.Uint64 // frames handed to add (dropped ones included)
	dropped  atomic.Uint64 // frames lost because the buffer was full
	foreign  atomic.Uint64 // frames not addressed to the mirror port
}

// newBuffer allocates and touches (one byte per page, so the kernel maps
// the pages now and not during capture) a buffer for capacity frames of
// snap bytes.
func newBuffer(capacity, snap int) *buffer {
	b := &buffer{
		slab: make([]byte, capacity*snap),
		recs: make([]record, capacity),
		snap: snap,
	}
	for i := 0; i < len(b.slab); i += 4096 {
		b.slab[i] = 0
	}
	for i := 0; i < len(b.recs); i += 256 {
		b.recs[i] = record{}
	}
	return b
}

// add copies frame (cut to the snap length) into the next slot. When the
// buffer is full it counts a drop and returns false. It never allocates.
// The counters are updated by the caller in batches (see flush) to keep
// atomics off the per-packet path.
func (b *buffer) add(frame []byte, origLen int, tsNs int64) bool {
	if b.n == len(b.recs) {
		return false
	}
	off := b.n * b.snap
	c := copy(b.slab[off:off+b.snap], frame)
	b.recs[b.n] = record{origLen: uint32(origLen), capLen: uint32(c), tsNs: tsNs}
	b.n++
	return true
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
