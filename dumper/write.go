package dumper

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// seqDiff is a-b in 48-bit serial arithmetic (trace.SeqSpace48.Diff,
// inlined for the write loop).
func seqDiff(a, b uint64) int64 { return int64((a-b)<<16) >> 16 }

// seqOf returns the mirror sequence number of a captured frame (0 if it is
// too short to carry one; such a frame is foreign anyway).
func seqOf(frame []byte) uint64 {
	seq, _, _ := trace.MirrorFields(frame)
	return seq
}

// order returns the order in which to write buffer b's records: nil means
// arrival order, which is sequence order in the common case (one queue
// preserves the switch's order). Otherwise it returns a sorted index.
func order(b *buffer) []int32 {
	sorted := true
	for i := 1; i < b.n; i++ {
		if seqDiff(seqOf(b.frame(i)), seqOf(b.frame(i-1))) < 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	idx := make([]int32, b.n)
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.SliceStable(idx, func(i, j int) bool {
		return seqDiff(seqOf(b.frame(int(idx[i]))), seqOf(b.frame(int(idx[j])))) < 0
	})
	return idx
}

// writePcap merges the workers' records by mirror sequence number (a k-way
// merge of per-worker sorted runs), restores each RoCE copy's UDP ports in
// place (wrapped copies are kept as they are) and writes a nanosecond pcap whose timestamps are the switch
// timestamps of the frames. The file appears at path atomically (temp file
// in the same directory, fsync, rename, fsync of the directory). It returns
// per worker the frames written and the foreign frames skipped.
func writePcap(path string, snaplen int, mirrorPort uint16, bufs []*buffer) (written, foreign []uint64, err error) {
	written = make([]uint64, len(bufs))
	foreign = make([]uint64, len(bufs))
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
			for i := range written {
				written[i] = 0
			}
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	pw, err := trace.NewPcapWriter(bw, snaplen, trace.LinkTypeEthernet)
	if err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}

	// heads[w] is worker w's next position; idx[w] its order (nil: arrival).
	heads := make([]int, len(bufs))
	idx := make([][]int32, len(bufs))
	for w, b := range bufs {
		idx[w] = order(b)
	}
	at := func(w int) int {
		if idx[w] != nil {
			return int(idx[w][heads[w]])
		}
		return heads[w]
	}
	// headSeq[w] caches the sequence number at heads[w].
	headSeq := make([]uint64, len(bufs))
	for w, b := range bufs {
		if b.n > 0 {
			headSeq[w] = seqOf(b.frame(at(w)))
		}
	}
	for {
		best := -1
		for w, b := range bufs {
			if heads[w] < b.n && (best < 0 || seqDiff(headSeq[w], headSeq[best]) < 0) {
				best = w
			}
		}
		if best < 0 {
			break
		}
		b := bufs[best]
		i := at(best)
		heads[best]++
		if heads[best] < b.n {
			headSeq[best] = seqOf(b.frame(at(best)))
		}
		frame := b.frame(i)
		_, ts, _ := trace.MirrorFields(frame)
		// A wrapped copy (PFC/PAUSE) is written as it came; a RoCE copy
		// gets its UDP ports back.
		if !trace.IsMACMirror(frame) && !roce.RestoreMirror(frame, mirrorPort) {
			foreign[best]++
			continue
		}
		if err := pw.WritePacket(int64(ts), frame, int(b.recs[i].origLen)); err != nil {
			return written, foreign, fmt.Errorf("write pcap: %w", err)
		}
		written[best]++
	}
	if err := bw.Flush(); err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}
	if err := f.Sync(); err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}
	if err := f.Close(); err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return written, foreign, fmt.Errorf("write pcap: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return written, foreign, nil
}
