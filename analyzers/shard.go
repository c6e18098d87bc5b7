package analyzers

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/trace"
)

// The analysis pass on more than one goroutine (Options.Workers > 1).
//
// The trace flows in batches of consecutive packets through three roles:
//
//   - the reader reads the trace (trace.Reader, which checks the file's
//     framing and gives the one-goroutine pass's errors) and copies the
//     frames of a batch into the batch's buffer; it decides from the first
//     RoCE frame whether the trace carries mirror metadata (decoding that
//     batch itself, frame by frame, as the one-goroutine pass does). On a
//     pcap file (or Bytes) no goroutine only reads: every worker reads
//     batches in turn, straight into their buffers, and decodes what it
//     read (shard_chunk.go); what follows describes the one reader
//     goroutine of the others (pcapng);
//   - decoding does everything that reads a frame and no state of the
//     analysis: model.Decoder.DecodeDeferred (each goroutine has its own
//     Decoder: the connection cache is per Decoder; the Table is shared
//     and read only), the integrity check's frame fields
//     (integrity.ParseFrame, or the decoder's, setIntegFrame) and the PFC
//     priority (pfc.Analyzer.Priority);
//   - the consumer (the goroutine calling Analyze) takes the batches in
//     trace order, each once decoded, and runs the rest of mainPass.packet
//     on its packets in order: the switch timestamps' unwrap
//     (model.Decoder.Unwrap), the integrity check, the PFC and fabric
//     analyses, the trace totals, the per-connection analyzers and the
//     graphs' collector.
//
// Decoding has no goroutine of its own with two workers: the reader
// decodes a queued batch while no batch is free to read into, the
// consumer while the next batch in order is not decoded yet; each worker
// past two is a goroutine that only decodes. So the work spreads over
// the workers whichever side is slower, with no more goroutines than
// workers.
//
// Every analyzer thus sees the packets of the one-goroutine pass, in the
// same order, on one goroutine: the report is the one-goroutine report,
// byte for byte (TestWorkersIdentical). Batches are recycled: at most
// shardBatches(workers) batches of shardBatchLen packets and about
// shardBatchBytes bytes of frames are in flight (bounded memory, no
// allocation per packet).

const (
	shardBatchLen   = 1024      // packets per batch
	shardBatchBytes = 256 << 10 // frame bytes per batch (then one more frame)
)

// shardBatches is the number of batches in flight with n decoders.
func shardBatches(n int) int { return 2*n + 4 }

// workers is Options.Workers resolved: 0 is GOMAXPROCS.
func workers(n int) int {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return max(n, 1)
}

// pktState is what a decoder found of a packet, besides its model.Pkt.
type pktState struct {
	integ  integrity.Frame
	raw    uint64 // the switch timestamp to unwrap (hasRaw)
	hasRaw bool
	ok     bool // Decode reported true
	mac    bool // a wrapped MAC Control copy (trace.IsMACMirror)
	prio   int8 // pfc priority (ok)
	// origLen is the frame's trace.Packet.OrigLen (ok): the consumer
	// reads the frame's trace.Packet only for a MAC Control copy and the
	// graphs, so that it moves fewer of the decoders' bytes between cores.
	origLen uint32 // OrigLen is a pcap or pcapng 32-bit field
}

type batch struct {
	buf  []byte
	tps  []trace.Packet // Data in buf
	pkts []model.Pkt
	st   []pktState
	// mirror is the decoders' model.Decoder.Mirror for this batch.
	mirror bool
	// decoded: the reader decoded the batch (the trace's mirror metadata
	// was undecided at its start). foreignAt ≥ 0 is the packet before
	// which the decision applies (gbn.SetForeign, the consumer's
	// Decoder.Mirror).
	decoded   bool
	foreignAt int
	ready     chan struct{} // decoded
	err       error         // the reader's error after the batch's packets
}

// alloc gives b its buffers, for n packets in about bytes of frames, at
// its first use: a pass allocates only the batches the trace fills.
func (b *batch) alloc(bytes, n int) {
	if b.buf == nil {
		b.buf, b.tps = make([]byte, 0, bytes), make([]trace.Packet, 0, n)
		b.pkts, b.st = make([]model.Pkt, n), make([]pktState, n)
	}
}

func (b *batch) reset() {
	b.buf, b.tps = b.buf[:0], b.tps[:0] // pkts and st keep their length
	b.decoded, b.foreignAt, b.err = false, -1, nil
}

// shardSpec is what the reader and the decoders of a pass need.
type shardSpec struct {
	dec        model.Decoder // the decoders' settings (each goroutine a copy)
	decided    bool          // dec.Mirror is decided
	checkInteg bool          // read the integrity check's fields
	pfc        *pfc.Analyzer // read the PFC priority; nil: not
}

// shardPass runs a pass over the trace src on n > 1 workers: consume is
// the in-order side (mainPass.consume, or the inference's).
func shardPass(ctx context.Context, src Source, spec shardSpec, n int, consume func(order <-chan *batch, free chan<- *batch, sr *shardRun) error) error {
	rc, tr, err := openTrace(src)
	if err != nil {
		return err
	}
	defer rc.Close()
	if ra, ok := rc.(io.ReaderAt); ok {
		if ch, ok := tr.Chunker(ra); ok {
			return chunkPass(ctx, src, ch, spec, n, consume)
		}
	}
	nb := shardBatches(n)
	free := make(chan *batch, nb)
	for range nb { // their buffers: at their first read (batch.alloc)
		free <- &batch{foreignAt: -1, ready: make(chan struct{}, 1)}
	}
	sr := &shardRun{work: make(chan *batch, nb), checkInteg: spec.checkInteg, pfc: spec.pfc}
	order := make(chan *batch, nb)
	stop := make(chan struct{}) // the consumer stopped early
	var wg sync.WaitGroup
	for range n - 2 { // the reader and the consumer decode too
		dec := spec.dec // a copy: its own connection cache
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range sr.work {
				sr.decode(&dec, b)
			}
		}()
	}
	// The reader.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(sr.work)
		defer close(order)
		rd := readerState{dec: spec.dec, decided: spec.decided}
		hdec := spec.dec // to decode the others' batches with
		var tp trace.Packet
		for cnt := 0; ; {
			var b *batch
			for b == nil { // a free batch; while none, decode one
				select {
				case b = <-free:
					continue
				default:
				}
				select {
				case b = <-free:
				case w := <-sr.work:
					sr.decode(&hdec, w)
				case <-stop:
					return
				}
			}
			b.alloc(shardBatchBytes+trace.MaxPacketSize, shardBatchLen)
			b.reset()
			for len(b.tps) < shardBatchLen && len(b.buf) < shardBatchBytes {
				if cnt&0xFFFF == 0 && ctx.Err() != nil {
					b.err = ctx.Err()
					break
				}
				cnt++
				if err := tr.ReadPacket(&tp); err != nil {
					if err != io.EOF {
						b.err = fmt.Errorf("analyzers: %s: %w", src.Name(), err)
					} else {
						b.err = io.EOF
					}
					break
				}
				off := len(b.buf)
				b.buf = append(b.buf, tp.Data...)
				tp.Data = b.buf[off:len(b.buf):len(b.buf)]
				b.tps = append(b.tps, tp)
			}
			b.mirror = rd.dec.Mirror
			if !rd.decided {
				rd.decodeUndecided(b, sr)
			}
			order <- b
			if b.decoded {
				b.ready <- struct{}{}
			} else {
				sr.work <- b
			}
			if b.err != nil {
				return
			}
		}
	}()
	err = consume(order, free, sr)
	if err != nil {
		close(stop)
		for b := range order { // let the reader and decoders finish
			<-b.ready
		}
	}
	wg.Wait()
	return err
}

// shardRun is what the goroutines of a pass share.
type shardRun struct {
	work       chan *batch // batches to decode (nil: chunk)
	checkInteg bool
	pfc        *pfc.Analyzer
	chunk      *chunkRead // a pcap file read in turns (shard_chunk.go); nil: one reader
}

// decode decodes b with dec (set to b's mirror setting) and marks it
// ready.
func (sr *shardRun) decode(dec *model.Decoder, b *batch) {
	dec.Mirror = b.mirror
	for i := range b.tps {
		sr.decodeOne(dec, &b.tps[i], &b.pkts[i], &b.st[i])
	}
	b.ready <- struct{}{}
}

// wait returns once b is decoded, decoding other batches with dec
// meanwhile.
func (sr *shardRun) wait(b *batch, dec *model.Decoder) {
	for {
		select {
		case <-b.ready:
			return
		default:
		}
		if sr.chunk != nil {
			if !sr.readFree(dec) {
				<-b.ready
				return
			}
			continue
		}
		select {
		case <-b.ready:
			return
		case w, ok := <-sr.work:
			if !ok { // every batch is handed out
				<-b.ready
				return
			}
			sr.decode(dec, w)
		}
	}
}

// readerState is the reader's decision on the trace's mirror metadata.
type readerState struct {
	dec     model.Decoder
	decided bool
}

// decodeUndecided decodes b as mainPass.packet does while the trace's
// mirror metadata is undecided: each frame may decide it.
func (rd *readerState) decodeUndecided(b *batch, sr *shardRun) {
	b.decoded = true
	for i := range b.tps {
		tp := &b.tps[i]
		if !rd.decided {
			if rd.decided = detectMirror(&rd.dec, tp); rd.decided {
				b.foreignAt, b.mirror = i, rd.dec.Mirror
			}
		}
		sr.decodeOne(&rd.dec, tp, &b.pkts[i], &b.st[i])
	}
}

// decodeOne does what mainPass.packet does with tp's frame that needs no
// state of the analysis.
func (sr *shardRun) decodeOne(dec *model.Decoder, tp *trace.Packet, p *model.Pkt, st *pktState) {
	// st's fields are set one by one, none twice (no pktState{} stored
	// whole first: see integrity.Frame.SetMirror).
	if tp.IsMACMirror() {
		st.mac, st.ok, st.raw, st.hasRaw, st.prio = true, false, 0, false, 0
		if sr.checkInteg {
			st.integ = integrity.ParseFrame(tp.Data)
		}
		return
	}
	st.mac = false
	st.ok, st.raw, st.hasRaw = dec.DecodeDeferred(tp, p)
	st.prio, st.origLen = 0, uint32(tp.OrigLen)
	if st.ok && sr.pfc != nil {
		st.prio = int8(pfcPriority(dec, sr.pfc, tp.Data))
	}
	if sr.checkInteg {
		setIntegFrame(&st.integ, dec, tp.Data)
	}
}

// consume runs the analysis of the batches of order, in order, and
// returns them to free; it returns the reader's error (nil at the end of
// the trace).
func (m *mainPass) consume(order <-chan *batch, free chan<- *batch, sr *shardRun) error {
	hdec := m.dec // to decode the others' batches with
	return consumeBatches(order, free, sr, &hdec, func(b *batch) {
		mirror := m.dec.Mirror
		if len(b.tps) == 0 {
			return
		}
		base := b.tps[0].Index // the batch's packets are consecutive
		for i := range b.tps {
			if i == b.foreignAt {
				m.decided, m.dec.Mirror, mirror = true, b.mirror, b.mirror
				m.a.gbn.SetForeign(!mirror)
			}
			m.packetDecoded(&b.tps[i], base+i, &b.pkts[i], &b.st[i], mirror)
		}
	})
}

// consumeBatches calls fn with the batches of order, in order, each once
// decoded (decoding others with hdec meanwhile), and returns them to
// free; it returns the reader's error (nil at the end of the trace).
func consumeBatches(order <-chan *batch, free chan<- *batch, sr *shardRun, hdec *model.Decoder, fn func(*batch)) error {
	for b := range order {
		sr.wait(b, hdec)
		fn(b)
		err := b.err
		free <- b
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}

// inferShard is the inference pass of Analyze (connections inferred) on
// n > 1 workers: in.Observe sees the packets the one-goroutine pass gives
// it, in the same order.
func inferShard(ctx context.Context, src Source, dec model.Decoder, decided bool, in *model.Inferrer, n int) error {
	d := dec // the in-order side's: the timestamps' unwrap
	return shardPass(ctx, src, shardSpec{dec: dec, decided: decided}, n, func(order <-chan *batch, free chan<- *batch, sr *shardRun) error {
		hdec := dec
		return consumeBatches(order, free, sr, &hdec, func(b *batch) {
			for i := range b.tps {
				p, st := &b.pkts[i], &b.st[i]
				if st.hasRaw {
					if t := d.Unwrap(st.raw); st.ok {
						p.TimeNs = t
					}
				}
				if st.ok {
					in.Observe(p)
				}
			}
		})
	})
}

// packetDecoded is mainPass.packet of the frame tp, of index idx, a
// decoder read as p and st.
func (m *mainPass) packetDecoded(tp *trace.Packet, idx int, p *model.Pkt, st *pktState, mirror bool) {
	r := m.r
	r.Trace.Packets++
	if m.a.opt.Checked == nil {
		m.a.integ.AddParsedFrame(&st.integ, -1, idx)
	}
	if st.mac {
		m.a.pfc.MAC(tp.Data, idx)
		return
	}
	if st.hasRaw {
		if t := m.dec.Unwrap(st.raw); st.ok {
			p.TimeNs = t
		}
	}
	if !st.ok {
		return
	}
	m.a.pfc.ObservePriority(p, int(st.prio), int(st.origLen))
	if r.Trace.RoCEPackets == 0 {
		r.Trace.FirstNs = p.TimeNs
	}
	r.Trace.LastNs = p.TimeNs
	r.Trace.RoCEPackets++
	if p.Conn < 0 && p.Kind != model.KindCNP {
		r.Trace.Unattributed++
	}
	if m.a.fab != nil && !m.a.fab.copyOf(p) {
		return
	}
	m.a.observe(p)
	if m.a.seq != nil {
		m.a.seq.Add(tp, p, mirror)
	}
}

// setIntegFrame sets *f to integrity.ParseFrame of frame, which dec
// decoded last: from the fields the decoder read when it could.
func setIntegFrame(f *integrity.Frame, dec *model.Decoder, frame []byte) {
	if seqField, ts, ttl, ok := dec.LastMirrorFields(); ok {
		f.SetMirror(seqField, ts, ttl)
		return
	}
	*f = integrity.ParseFrame(frame)
}

// pfcPriority is a.Priority(frame) of the frame dec decoded last.
func pfcPriority(dec *model.Decoder, a *pfc.Analyzer, frame []byte) int {
	if tos, ok := dec.LastTOS(); ok {
		return a.PriorityOfTOS(tos)
	}
	return a.Priority(frame)
}
