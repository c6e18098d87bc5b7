package dumper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

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

// spoolBufSize is a spool's write chunk: one write(2) per 4 MiB of
// capture. Each write wakes the Go runtime's sysmon from its deep sleep
// (the worker was parked), which then polls for a millisecond: fewer,
// larger writes cost less CPU.
const spoolBufSize = 4 << 20

// spool is one worker's capture file. The worker hands it each frame; the
// spool cuts it to the snap length, restores a RoCE copy's UDP ports,
// stamps the pcap record with the switch timestamp and appends it to a
// 4 MiB buffer, written out in whole chunks, so a worker's memory does not
// grow with the test: the test's length is bounded by the disk (and by
// Capacity, frames per worker), not by memory.
//
// Where the file system allows it (Linux, O_DIRECT), chunks bypass the page
// cache: a buffered write(2) copies every byte once more into freshly
// allocated page-cache pages and makes the kernel write them back later,
// which costs more CPU than the whole capture path otherwise. The buffer is
// page-aligned and only whole chunks are written direct; flush writes the
// tail with O_DIRECT off, and the file is then read (merge) or renamed
// like any other.
//
// The file is a nanosecond pcap in arrival order. Arrival order is sequence
// order in the common case (one queue keeps the switch's order); where a
// frame's sequence number is before its predecessor's, a new sorted run
// starts, and Stop merges the runs of every worker (see finish).
//
// A spool is written by exactly one goroutine (its worker, or for dpdk the
// goroutine draining the worker's ring) until the worker has stopped.
type spool struct {
	f      *os.File
	path   string
	buf    []byte // page-aligned; chunk [0, spoolBufSize) plus room for one record past it
	pos    int    // bytes buffered
	direct bool   // f is open with O_DIRECT
	free   func() // releases buf
	snap   int
	port   uint16
	limit  uint64 // frames it may hold; 0: no limit

	off  int64                    // file offset of the next record
	n    uint64                   // frames written
	runs []sortedRun              // sorted runs, in file order
	last [roce.MaxSwitches]uint64 // per switch: sequence number of its last frame written
	seen uint32                   // per switch (bit): a frame of it was written
	err  error                    // first write error; frames after it are dropped
	full bool                     // a frame was dropped because limit was reached
}

// sortedRun is a sorted stretch of a spool file: n records from offset off.
type sortedRun struct {
	off int64
	n   uint64
}

// spoolAlign is the alignment of a spool's buffer (and so of every direct
// write's address, length and file offset).
const spoolAlign = 4096

// alignedBuffer is a Go-memory buffer of n bytes aligned to spoolAlign.
func alignedBuffer(n int) []byte {
	raw := make([]byte, n+spoolAlign)
	a := int((spoolAlign - uintptr(unsafe.Pointer(&raw[0]))%spoolAlign) % spoolAlign)
	return raw[a : a+n : a+n]
}

// newSpool creates worker w's spool file next to outPath.
//
// With direct, whole chunks bypass the page cache where the file system
// allows it (the real-time backends, whose capture CPU it saves); the sim
// backend writes through the page cache, which returns at memory speed
// while the virtual clock waits for every write.
func newSpool(outPath string, w, snap int, port uint16, limit uint64, direct bool) (*spool, error) {
	dir, base := filepath.Split(outPath)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".w"+strconv.Itoa(w)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	buf, free := spoolBuffer(spoolBufSize + pcapRecordLen + MaxSnapLen)
	s := &spool{f: f, path: f.Name(), buf: buf, free: free, snap: snap, port: port, limit: limit}
	hdr := bytes.NewBuffer(s.buf[:0])
	if _, err := trace.NewPcapWriter(hdr, snap, trace.LinkTypeEthernet); err != nil || hdr.Len() != pcapHeaderLen {
		s.remove()
		return nil, fmt.Errorf("spool: pcap header: %v", err)
	}
	s.pos = pcapHeaderLen
	s.off = pcapHeaderLen
	s.direct = direct && setDirect(f, true)
	return s, nil
}

// Lengths of the pcap file and record headers (trace's PcapWriter writes
// the file header; the spool writes records itself, in the same format,
// straight into its write buffer).
const (
	pcapHeaderLen = 24
	pcapRecordLen = 16
)

// ipFrameLen returns the length of the frame a RoCE mirror copy was cut
// from, from its IP header (total length, or payload length plus the fixed
// header), with its Ethernet header and VLAN tags; 0 if the copy does not
// hold the field. A clone session truncates copies to the dumper's snap
// length (as hardware mirror sessions do) and the copy's own length is
// then the cut one: the record keeps the original's, as if the dumper had
// cut it.
func ipFrameLen(b []byte) int {
	off := roce.EthernetLen - 2
	for range 2 {
		if len(b) < off+2 {
			return 0
		}
		if et := binary.BigEndian.Uint16(b[off:]); et != roce.EtherTypeVLAN && et != roce.EtherTypeQinQ {
			break
		}
		off += roce.VLANTagLen
	}
	if len(b) < off+2 {
		return 0
	}
	et, l3 := binary.BigEndian.Uint16(b[off:]), off+2
	switch {
	case et == roce.EtherTypeIPv4 && len(b) >= l3+4:
		return l3 + int(binary.BigEndian.Uint16(b[l3+2:]))
	case et == roce.EtherTypeIPv6 && len(b) >= l3+6:
		return l3 + roce.IPv6Len + int(binary.BigEndian.Uint16(b[l3+4:]))
	}
	return 0
}

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
	if s.pos >= spoolBufSize {
		if err := s.writeChunk(); err != nil {
			s.err = err
			c.dropped++
			return
		}
	}
	capLen := min(len(frame), s.snap)
	need := pcapRecordLen + capLen
	rec := s.buf[s.pos : s.pos+need]
	data := rec[pcapRecordLen:]
	copy(data, frame[:capLen])
	// A wrapped copy (PFC/PAUSE) is kept as it came; a RoCE copy gets its
	// UDP ports back.
	if !trace.IsMACMirror(data) {
		if !roce.RestoreMirror(data, s.port) {
			c.received--
			c.foreign++
			return
		}
		origLen = max(origLen, ipFrameLen(data))
	}
	sw, seq, ts, _ := trace.MirrorSwitchSeq(data)
	le := binary.LittleEndian
	le.PutUint32(rec[0:], uint32(ts/1e9))
	le.PutUint32(rec[4:], uint32(ts%1e9))
	le.PutUint32(rec[8:], uint32(capLen))
	le.PutUint32(rec[12:], uint32(max(origLen, capLen)))
	// A run is sorted per switch: it ends where a switch's sequence
	// number goes back (copies of several switches interleave).
	if s.n == 0 || s.seen&(1<<sw) != 0 && seqDiff(seq, s.last[sw]) < 0 {
		s.runs = append(s.runs, sortedRun{off: s.off})
	}
	s.pos += need
	s.runs[len(s.runs)-1].n++
	s.off += int64(need)
	s.n++
	s.last[sw] = seq
	s.seen |= 1 << sw
}

// writeChunk writes the first spoolBufSize bytes of the buffer and moves
// what follows them to its start. A direct write the file system refuses
// (EINVAL) is retried buffered, and the spool stays buffered.
func (s *spool) writeChunk() error {
	_, err := s.f.Write(s.buf[:spoolBufSize])
	if err != nil && s.direct && errors.Is(err, syscall.EINVAL) {
		s.direct = false
		setDirect(s.f, false)
		_, err = s.f.Write(s.buf[:spoolBufSize])
	}
	if err != nil {
		return err
	}
	s.pos = copy(s.buf, s.buf[spoolBufSize:s.pos])
	return nil
}

// flush writes what is buffered; the file stays open for reading.
func (s *spool) flush() error {
	if s.err != nil {
		return s.err
	}
	if s.direct {
		// The tail is not a whole chunk, and the merge reads the file
		// through the page cache.
		s.direct = false
		setDirect(s.f, false)
	}
	if s.pos > 0 {
		if _, err := s.f.Write(s.buf[:s.pos]); err != nil {
			s.err = err
			return err
		}
		s.pos = 0
	}
	return nil
}

// remove closes and deletes the file and releases the buffer.
func (s *spool) remove() {
	if s.free != nil {
		s.free()
		s.free, s.buf = nil, nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	os.Remove(s.path)
}

// seqDiff is a-b in 40-bit serial arithmetic (trace.SeqSpace40.Diff,
// inlined for the write path).
func seqDiff(a, b uint64) int64 { return int64((a-b)<<24) >> 24 }
