package trace

// The merge of copies of several switches.
//
// A fabric's mirror copies name their logical switch (roce.MirrorSeqField:
// switch id in bits 41..45 of the sequence field) and each switch counts its
// own sequence from 1. A dumper file holds the copies of every switch in
// the order they arrived; each switch's copies in it are in that switch's
// sequence order. The merged trace is ordered by (timestamp, switch id,
// sequence number), each switch's copies in its sequence order.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/netlumina/lumina/roce"
)

// MirrorSwitchSeq returns the switch id and sequence number carried in a
// mirror copy's sequence field (roce.SplitMirrorSeq of MirrorFields' seq)
// and its timestamp. ok is false if frame is shorter than MirrorHeaderLen.
func MirrorSwitchSeq(frame []byte) (sw uint8, seq, tsNs uint64, ok bool) {
	field, ts, ok := MirrorFields(frame)
	if !ok {
		return 0, 0, 0, false
	}
	sw, seq = roce.SplitMirrorSeq(field)
	return sw, seq, ts, true
}

// switchOf is the switch id of a frame of at least MirrorHeaderLen bytes.
func switchOf(frame []byte) uint8 { return frame[6] >> 1 % roce.MaxSwitches }

// spillHeaderLen is a spill record's header: index (8 bytes), time (8),
// original length (4), captured length (4), interface (4).
const spillHeaderLen = 28

// spillBuf is the buffer size of a spill file's writer and reader.
const spillBuf = 32 << 10

// spill is the copies of one switch from one source, in the source's
// order, in a temporary file; after the split pass it is read back as a
// packetSource. A source that failed (read error, a packet that is no
// mirror copy) ends with its error, returned by the last of its spills to
// reach its end: when every packet read from it has been emitted.
type spill struct {
	f     *os.File
	r     *bufio.Reader
	err   error // the source's error, or nil
	live  *int  // the source's spills not yet at their end
	ended bool
	hdr   [spillHeaderLen]byte
	data  []byte
	empty bool // no file: only err
}

// ReadPacket reads the next packet of the spill into *p, field by field
// (Data valid until the next call; p left as it was on error), then
// returns err or io.EOF.
func (s *spill) ReadPacket(p *Packet) error {
	if s.empty {
		return s.end()
	}
	if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
		if err == io.EOF {
			return s.end()
		}
		return fmt.Errorf("reading a spill file: %w", err)
	}
	le := binary.LittleEndian
	n := int(le.Uint32(s.hdr[20:]))
	if cap(s.data) < n {
		s.data = make([]byte, n)
	}
	s.data = s.data[:n]
	if _, err := io.ReadFull(s.r, s.data); err != nil {
		return fmt.Errorf("reading a spill file: %w", err)
	}
	p.Index = int(le.Uint64(s.hdr[0:]))
	p.TimeNs = int64(le.Uint64(s.hdr[8:]))
	p.OrigLen = int(le.Uint32(s.hdr[16:]))
	p.Data = s.data
	p.LinkType = LinkTypeEthernet
	p.Interface = int(le.Uint32(s.hdr[24:]))
	return nil
}

func (s *spill) end() error {
	if !s.ended {
		s.ended = true
		*s.live--
	}
	if s.err != nil && *s.live == 0 {
		// The error is the source's: it names the source already.
		return spillErr{s.err}
	}
	return io.EOF
}

// spillErr carries a source's error through a spill, unwrapped again by
// the merge so that the error reads as if the source were read directly.
type spillErr struct{ err error }

func (e spillErr) Error() string { return e.err.Error() }
func (e spillErr) Unwrap() error { return e.err }

// writeSpill appends p to w.
func writeSpill(w *bufio.Writer, hdr *[spillHeaderLen]byte, p Packet) error {
	le := binary.LittleEndian
	le.PutUint64(hdr[0:], uint64(p.Index))
	le.PutUint64(hdr[8:], uint64(p.TimeNs))
	le.PutUint32(hdr[16:], uint32(p.OrigLen))
	le.PutUint32(hdr[20:], uint32(len(p.Data)))
	le.PutUint32(hdr[24:], uint32(p.Interface))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(p.Data)
	return err
}

// mergeSwitches is Merge: a split pass writes each source's copies into
// one temporary file per switch (MergeOptions.TempDir), then each switch's
// files are k-way merged by sequence number (as mergeDirect merges one
// switch's sources) and those streams by (timestamp, switch id): a
// switch's stamps never decrease in its sequence order, so the next packet
// is the earliest of the switches' next packets. Timestamps compare in
// 48-bit serial arithmetic, as they wrap. A source's read error or a packet
// that is no mirror copy ends its spills; the merge returns it when it
// needs that source's next packet, as mergeDirect does.
func (o MergeOptions) mergeSwitches(out func(src int, p Packet) error, stats *MergeStats, srcs []MergeSource) (MergeStats, error) {
	dir := o.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	var done <-chan struct{}
	if o.Context != nil {
		done = o.Context.Done()
	}
	cancelled := func() error {
		if done == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("trace: merge: %w", context.Cause(o.Context))
		default:
			return nil
		}
	}
	spills := make([][roce.MaxSwitches]*spill, len(srcs))
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	var present [roce.MaxSwitches]bool
	var writers [roce.MaxSwitches]*bufio.Writer
	var hdr [spillHeaderLen]byte
	read := 0
	for i := range srcs {
		name := sourceName(srcs, i)
		var srcErr error
		for {
			if read%MergeCheckEvery == 0 {
				if err := cancelled(); err != nil {
					return *stats, err
				}
			}
			p, err := srcs[i].Reader.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				srcErr = fmt.Errorf("trace: merge: %s: %w", name, err)
				break
			}
			if err := checkMirrorCopy(&p, name); err != nil {
				srcErr = err
				break
			}
			read++
			sw := switchOf(p.Data)
			sp := spills[i][sw]
			if sp == nil {
				f, err := os.CreateTemp(dir, ".lumina-merge-*")
				if err != nil {
					return *stats, fmt.Errorf("trace: merge: %w", err)
				}
				files = append(files, f)
				sp = &spill{f: f}
				spills[i][sw] = sp
				present[sw] = true
				if writers[sw] == nil {
					writers[sw] = bufio.NewWriterSize(f, spillBuf)
				} else {
					writers[sw].Reset(f)
				}
			}
			if err := writeSpill(writers[sw], &hdr, p); err != nil {
				return *stats, fmt.Errorf("trace: merge: writing a spill file: %w", err)
			}
		}
		live := new(int)
		for sw, sp := range spills[i] {
			if sp == nil {
				continue
			}
			*live++
			sp.live = live
			if err := writers[sw].Flush(); err != nil {
				return *stats, fmt.Errorf("trace: merge: writing a spill file: %w", err)
			}
			if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
				return *stats, fmt.Errorf("trace: merge: %w", err)
			}
			sp.r = bufio.NewReaderSize(sp.f, spillBuf)
			sp.err = srcErr
		}
		if srcErr != nil && !hasSpill(&spills[i]) {
			*live++
			spills[i][0] = &spill{empty: true, err: srcErr, live: live}
			present[0] = true
		}
	}

	// One sequence merge per switch present, in switch order.
	type stream struct {
		sw  uint8
		m   *seqMerge
		j   int    // its pending head, valid while ok
		ts  uint64 // the pending packet's timestamp
		ok  bool
		src int
	}
	name := func(i int) string { return sourceName(srcs, i) }
	var streams []*stream
	for sw := range roce.MaxSwitches {
		if !present[sw] {
			continue
		}
		var in []packetSource
		var ids []int
		for i := range srcs {
			if sp := spills[i][sw]; sp != nil {
				in, ids = append(in, sp), append(ids, i)
			}
		}
		st := &stream{sw: uint8(sw), m: newSeqMerge(o.Seq.norm(), in, ids, name)}
		if err := st.m.init(); err != nil {
			return *stats, unspill(err)
		}
		streams = append(streams, st)
	}
	pull := func(st *stream) error {
		j, ooo, ok, err := st.m.next()
		if err != nil {
			return unspill(err)
		}
		st.j, st.ok = j, ok
		if ok {
			if ooo {
				stats.OutOfOrder++
			}
			_, st.ts, _ = MirrorFields(st.m.heads[j].p.Data)
			st.src = st.m.ids[j]
		}
		return nil
	}
	for _, st := range streams {
		if err := pull(st); err != nil {
			return *stats, err
		}
	}
	for {
		var best *stream
		for _, st := range streams {
			if st.ok && (best == nil || stampDiff(st.ts, best.ts) < 0) {
				best = st // ties: the lower switch id, first in streams
			}
		}
		if best == nil {
			return *stats, nil
		}
		if stats.Packets%MergeCheckEvery == 0 {
			if err := cancelled(); err != nil {
				return *stats, err
			}
		}
		if err := out(best.src, best.m.heads[best.j].p); err != nil {
			return *stats, err
		}
		stats.Packets++
		stats.PerSource[best.src]++
		if err := pull(best); err != nil {
			return *stats, err
		}
	}
}

func hasSpill(s *[roce.MaxSwitches]*spill) bool {
	for _, sp := range s {
		if sp != nil {
			return true
		}
	}
	return false
}

// unspill turns the merge's wrapping of a source error carried by a spill
// ("trace: merge: NAME: " + the source's error, itself already naming the
// source) back into the source's error.
func unspill(err error) error {
	var se spillErr
	if errors.As(err, &se) {
		return se.err
	}
	return err
}

// stampDiff is a-b in 48-bit serial arithmetic (mirror timestamps wrap).
func stampDiff(a, b uint64) int64 { return int64((a-b)<<16) >> 16 }

// OnlySwitchZero reports whether every mirror copy in the files at paths
// is a copy of switch 0 (a one-switch run: MergeOptions.OneSwitch),
// reading them once; a file or packet it cannot read is left to the merge,
// which reports why.
func OnlySwitchZero(paths ...string) bool {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		r, err := NewReader(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			f.Close()
			continue
		}
		for {
			p, err := r.Next()
			if err != nil {
				break
			}
			if p.LinkType == LinkTypeEthernet && len(p.Data) >= MirrorHeaderLen && switchOf(p.Data) != 0 {
				f.Close()
				return false
			}
		}
		f.Close()
	}
	return true
}
