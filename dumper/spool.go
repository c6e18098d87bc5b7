package dumper

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// counters are one worker's live counts. Workers add to them in batches
// (see batch) so that no atomic is on the per-packet path; Live reads them
// while the worker runs.
type counters struct {
	received atomic.Uint64 // mirror copies the worker saw (dropped ones included)
	dropped  atomic.Uint64 // lost: capacity reached, file error, or ring full
	foreign  atomic.Uint64 // frames that are not mirror copies
}

// batch counts frames a worker handled since its last flush.
type batch struct {
	received, dropped, foreign uint64
}

// flush publishes a batch's counts and resets it.
func (c *counters) flush(b *batch) {
	if b.received != 0 {
		c.received.Add(b.received)
	}
	if b.dropped != 0 {
		c.dropped.Add(b.dropped)
	}
	if b.foreign != 0 {
		c.foreign.Add(b.foreign)
	}
	*b = batch{}
}

// spoolBufSize is a spool's write buffer: one write(2) per MiB of capture.
const spoolBufSize = 1 << 20

// spool is one worker's capture file. The worker hands it each frame; the
// spool cuts it to the snap length, restores a RoCE copy's UDP ports,
// stamps the pcap record with the switch timestamp and appends it through a
// 1 MiB buffer, so a worker's memory does not grow with the test: the test's
// length is bounded by the disk (and by Capacity, frames per worker), not by
// memory.
//
// The file is a nanosecond pcap in arrival order. Arrival order is sequence
// order in the common case (one queue keeps the switch's order); where a
// frame's sequence number is before its predecessor's, a new sorted run
// starts, and Stop merges the runs of every worker (see finish).
//
// A spool is written by exactly one goroutine (its worker, or for dpdk the
// goroutine draining the worker's ring) until the worker has stopped.
type spool struct {
	f     *os.File
	path  string
	bw    *bufio.Writer
	snap  int
	port  uint16
	limit uint64 // frames it may hold; 0: no limit

	off  int64       // file offset of the next record
	n    uint64      // frames written
	runs []sortedRun // sorted runs, in file order
	last uint64      // sequence number of the last frame written
	err  error       // first write error; frames after it are dropped
	full bool        // a frame was dropped because limit was reached
}

// sortedRun is a sorted stretch of a spool file: n records from offset off.
type sortedRun struct {
	off int64
	n   uint64
}

// newSpool creates worker w's spool file next to outPath.
func newSpool(outPath string, w, snap int, port uint16, limit uint64) (*spool, error) {
	dir, base := filepath.Split(outPath)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".w"+strconv.Itoa(w)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &spool{f: f, path: f.Name(), bw: bufio.NewWriterSize(f, spoolBufSize), snap: snap, port: port, limit: limit}
	if _, err := trace.NewPcapWriter(s.bw, snap, trace.LinkTypeEthernet); err != nil {
		s.remove()
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.off = pcapHeaderLen
	return s, nil
}

// Lengths of the pcap file and record headers (trace's PcapWriter writes
// the file header; the spool writes records itself, in the same format,
// straight into its write buffer).
const (
	pcapHeaderLen = 24
	pcapRecordLen = 16
)

// put appends frame, whose length on the wire is origLen, and counts it in
// c: received and written, received and dropped (limit reached or a write
// error), or foreign (too short to be a mirror copy, or a RoCE copy whose
// ports cannot be restored). It does not allocate.
func (s *spool) put(c *batch, frame []byte, origLen int) {
	if len(frame) < trace.MirrorHeaderLen {
		c.foreign++
		return
	}
	c.received++
	if s.err != nil {
		c.dropped++
		return
	}
	if s.limit != 0 && s.n == s.limit {
		s.full = true
		c.dropped++
		return
	}
	capLen := min(len(frame), s.snap)
	need := pcapRecordLen + capLen
	if s.bw.Available() < need {
		if err := s.bw.Flush(); err != nil {
			s.err = err
			c.dropped++
			return
		}
	}
	rec := s.bw.AvailableBuffer()[:need]
	data := rec[pcapRecordLen:]
	copy(data, frame[:capLen])
	// A wrapped copy (PFC/PAUSE) is kept as it came; a RoCE copy gets its
	// UDP ports back.
	if !trace.IsMACMirror(data) && !roce.RestoreMirror(data, s.port) {
		c.received--
		c.foreign++
		return
	}
	seq, ts, _ := trace.MirrorFields(data)
	le := binary.LittleEndian
	le.PutUint32(rec[0:], uint32(ts/1e9))
	le.PutUint32(rec[4:], uint32(ts%1e9))
	le.PutUint32(rec[8:], uint32(capLen))
	le.PutUint32(rec[12:], uint32(max(origLen, capLen)))
	if s.n == 0 || seqDiff(seq, s.last) < 0 {
		s.runs = append(s.runs, sortedRun{off: s.off})
	}
	s.bw.Write(rec) // rec is the buffer's own free space: no copy, no error
	s.runs[len(s.runs)-1].n++
	s.off += int64(need)
	s.n++
	s.last = seq
}

// flush writes what is buffered; the file stays open for reading.
func (s *spool) flush() error {
	if s.err != nil {
		return s.err
	}
	if err := s.bw.Flush(); err != nil {
		s.err = err
	}
	return s.err
}

// remove closes and deletes the file.
func (s *spool) remove() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	os.Remove(s.path)
}

// seqDiff is a-b in 48-bit serial arithmetic (trace.SeqSpace48.Diff,
// inlined for the write path).
func seqDiff(a, b uint64) int64 { return int64((a-b)<<16) >> 16 }
