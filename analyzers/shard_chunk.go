package analyzers

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/trace"
)

// The pass on workers over a pcap file (or Bytes): no goroutine only
// reads. The file is read in batches of whole records, each with one
// ReadAt straight into the batch's buffer (trace.Chunker), under a read
// turn that keeps the batches in trace order; the goroutine that read a
// batch decodes it right after its turn, while the frames are still in
// its core's cache. The workers past the consumer do only that; the
// consumer (shardRun.wait) takes a read turn too whenever the next batch
// in order is not decoded yet and a batch is free, so the reading and
// decoding spread over every worker, the consumer's included, whichever
// side is slower. Only the decoded packets move to the consumer's core.
//
// pcapng, where a record's framing depends on the blocks before it, is
// read by shardPass's one reader goroutine instead.

const (
	// chunkBatchBytes is a batch's buffer: every ReadAt fills it (the
	// bytes after its last whole record, or after chunkBatchLen records,
	// are read again by the next batch).
	chunkBatchBytes = 2 * trace.ChunkBufSize
	chunkBatchLen   = 4096 // packets per batch, at most
)

// chunkRead is the read turn's state (shardRun.chunk).
type chunkRead struct {
	mu    sync.Mutex // the read turn: the fields below, sends on order
	ctx   context.Context
	name  string
	ch    *trace.Chunker
	rd    readerState
	ended bool // order is closed: the trace ended, failed or the consumer stopped
	order chan *batch
	free  chan *batch
}

// chunkPass is shardPass on the pcap trace ch reads.
func chunkPass(ctx context.Context, src Source, ch *trace.Chunker, spec shardSpec, n int, consume func(order <-chan *batch, free chan<- *batch, sr *shardRun) error) error {
	nb := shardBatches(n)
	cr := &chunkRead{ctx: ctx, name: src.Name(), ch: ch, rd: readerState{dec: spec.dec, decided: spec.decided},
		order: make(chan *batch, nb), free: make(chan *batch, nb)}
	for range nb { // their buffers: at their first read (batch.alloc)
		cr.free <- &batch{foreignAt: -1, ready: make(chan struct{}, 1)}
	}
	sr := &shardRun{checkInteg: spec.checkInteg, pfc: spec.pfc, chunk: cr}
	stop := make(chan struct{}) // the consumer returned
	var wg sync.WaitGroup
	for range n - 1 { // the consumer reads and decodes too
		dec := spec.dec // a copy: its own connection cache
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case b := <-cr.free:
					if !sr.readBatch(b, &dec, false) {
						cr.free <- b
						return
					}
				case <-stop:
					return
				}
			}
		}()
	}
	err := consume(cr.order, cr.free, sr)
	close(stop)
	cr.mu.Lock()
	if !cr.ended { // the consumer stopped early
		cr.ended = true
		close(cr.order)
	}
	cr.mu.Unlock()
	for b := range cr.order { // let the others finish decoding
		<-b.ready
	}
	wg.Wait()
	return err
}

// readFree reads and decodes a batch (readBatch) if one is free and no
// other goroutine holds the read turn; it reports whether it did.
func (sr *shardRun) readFree(dec *model.Decoder) bool {
	select {
	case f := <-sr.chunk.free:
		if sr.readBatch(f, dec, true) {
			return true
		}
		sr.chunk.free <- f
	default:
	}
	return false
}

// readBatch reads the next batch of the trace into b under the read turn
// and decodes it with dec; it returns false, b untouched, when the
// reading ended, or when try is set and another goroutine holds the turn.
func (sr *shardRun) readBatch(b *batch, dec *model.Decoder, try bool) bool {
	cr := sr.chunk
	if try {
		if !cr.mu.TryLock() {
			return false
		}
	} else {
		cr.mu.Lock()
	}
	if cr.ended {
		cr.mu.Unlock()
		return false
	}
	b.alloc(chunkBatchBytes, chunkBatchLen)
	b.reset()
	err := cr.ctx.Err()
	if err == nil {
		b.buf, b.tps, err = cr.ch.Next(b.buf, b.tps)
		if err != nil && err != io.EOF {
			err = fmt.Errorf("analyzers: %s: %w", cr.name, err)
		}
	}
	b.err = err
	b.mirror = cr.rd.dec.Mirror
	if !cr.rd.decided {
		cr.rd.decodeUndecided(b, sr)
	}
	cr.order <- b // never blocks: each batch is in order at most once
	if err != nil {
		cr.ended = true
		close(cr.order)
	}
	cr.mu.Unlock()
	if b.decoded {
		b.ready <- struct{}{}
	} else {
		sr.decode(dec, b)
	}
	return true
}
