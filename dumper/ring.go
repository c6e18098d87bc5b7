package dumper

import (
	"sync/atomic"
	"time"
)

// ring is a single-producer single-consumer ring of frame slots between a
// capture loop that must never block (the dpdk backend's lcore, in C) and
// the goroutine that writes the worker's spool (drain). The producer
// copies at most snap bytes of a frame into slot head mod slots, fills its
// record, and publishes head; the consumer writes slots up to head and
// publishes tail. A full ring (head - tail == slots) makes the producer
// count a drop: the disk fell behind for longer than the ring lasts.
//
// slab, recs and ctl are plain Go memory that the dpdk backend pins and
// hands to C; the layouts of ringRec and ringCtl are C's struct lum_rec and
// the uint64_t ctl[16] of struct lum_worker (head at 0, tail at LUM_TAIL,
// 8).
type ring struct {
	slab  []byte
	recs  []ringRec
	snap  int
	slots uint64
	ctl   *ringCtl
}

// ringRec is one slot's record.
type ringRec struct {
	origLen uint32 // length on the wire
	capLen  uint32 // bytes in the slot (≤ snap)
}

// ringCtl holds the ring's two indices, each written by one side.
// Each is on its own cache line: the producer's stores to head do not
// take the line the consumer's stores to tail own, and back.
type ringCtl struct {
	head atomic.Uint64 // slots filled, ever; written by the producer
	_    [56]byte
	tail atomic.Uint64 // slots consumed, ever; written by the consumer
	_    [56]byte
}

// newRing allocates a ring of bytes/snap slots (at least 64), touching
// every page so the capture loop never faults.
func newRing(bytes, snap int) *ring {
	slots := max(bytes/snap, 64)
	r := &ring{slab: make([]byte, slots*snap), recs: make([]ringRec, slots), snap: snap, slots: uint64(slots), ctl: new(ringCtl)}
	for i := 0; i < len(r.slab); i += 4096 {
		r.slab[i] = 0
	}
	return r
}

// drainIdle is how long drain sleeps when fewer than drainBatch slots are
// ready: reading the head on every burst would pull its cache line from
// the producer's core each time, and the producer would have to take it
// back for its next store.
const (
	drainIdle  = 50 * time.Microsecond
	drainBatch = 256
)

// drain is the consumer: it writes every published slot to w's spool and
// frees it, until done is closed and the ring is empty. The producer
// counts the frames it received; drain counts into w only what the spool
// dropped or refused.
func (r *ring) drain(w *worker, done <-chan struct{}) {
	var c batch
	t := r.ctl.tail.Load()
	for {
		h := r.ctl.head.Load()
		if h-t < drainBatch {
			select {
			case <-done:
				if h = r.ctl.head.Load(); h == t {
					return
				}
			default:
				time.Sleep(drainIdle)
				if h = r.ctl.head.Load(); h == t {
					continue
				}
			}
		}
		if sp := w.sp; sp.limit != 0 && sp.n == sp.limit && sp.err == nil {
			// The spool is full: put would count every frame as dropped
			// (the C loop let only mirror copies in). Count them at once.
			sp.full = true
			c.dropped += h - t
			t = h
		}
		for ; t != h; t++ {
			i := t % r.slots
			rec := r.recs[i]
			off := int(i) * r.snap
			w.sp.put(&c, r.slab[off:off+int(rec.capLen)], int(rec.origLen))
			if t&1023 == 1023 {
				r.ctl.tail.Store(t + 1) // free slots early on long bursts
			}
		}
		r.ctl.tail.Store(t)
		c.received = 0 // counted by the producer
		w.c.flush(&c)
	}
}
