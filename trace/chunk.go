package trace

import (
	"errors"
	"io"
)

// ChunkBufSize is the least capacity of a buffer given to
// Chunker.Next: the largest record (its header and MaxPacketSize bytes)
// always fits.
const ChunkBufSize = pcapRecordHeaderLen + MaxPacketSize

// Chunker reads the records of a pcap file in chunks of whole records,
// each with one ReadAt straight into the caller's buffer: the packets of
// a chunk alias that buffer, so a caller can keep several chunks in
// flight (each in its own buffer) and hand them to other goroutines.
// It gives the packets, indexes and errors Reader.Next gives for the same
// file, in the same order. A Chunker is not safe for concurrent use.
type Chunker struct {
	r  *Reader // the header's fields, the position, the index, errf
	ra io.ReaderAt
}

// Chunker returns a Chunker that continues r, a pcap Reader that has
// returned no packet yet, from ra, the file r reads (r's own buffered
// bytes are not used again). It returns false for pcapng, where a
// record's framing depends on the blocks before it, and once r returned
// a packet or an error.
func (r *Reader) Chunker(ra io.ReaderAt) (*Chunker, bool) {
	if r.format != FormatPcap || r.index != 0 || r.err != nil || ra == nil {
		return nil, false
	}
	return &Chunker{r: r, ra: ra}, true
}

// Next reads the next records into buf[:cap(buf)] (cap(buf) at least
// ChunkBufSize) and appends their packets to pkts, at most up to
// cap(pkts) of them; it returns buf resliced to the bytes read and pkts.
// err applies after the packets returned: io.EOF when the file ends
// cleanly after them, an error wrapping ErrTruncated or ErrCorrupt (with
// the message Reader.Next gives) when the next record is damaged, nil
// when more records may follow. After an error, every later call returns
// no packet and the same error.
func (c *Chunker) Next(buf []byte, pkts []Packet) ([]byte, []Packet, error) {
	r := c.r
	if r.err != nil {
		return buf[:0], pkts, r.err
	}
	if cap(buf) < ChunkBufSize {
		return buf[:0], pkts, errors.New("trace: Chunker.Next: buffer smaller than ChunkBufSize")
	}
	buf = buf[:cap(buf)]
	n, rerr := c.ra.ReadAt(buf, r.off)
	buf = buf[:n]
	if rerr != nil && rerr != io.EOF {
		r.err = r.ioErr(r.off, true, rerr)
		return buf[:0], pkts, r.err
	}
	atEOF := n < cap(buf) // ReadAt returns fewer bytes only at the end (or with an error)
	b := buf
	for len(pkts) < cap(pkts) {
		if len(b) < pcapRecordHeaderLen {
			if !atEOF {
				return buf, pkts, nil
			}
			if len(b) == 0 {
				r.err = io.EOF
			} else {
				r.err = r.errf(r.off, true, "%w record header (want %d bytes, have %d)", ErrTruncated, pcapRecordHeaderLen, len(b))
			}
			return buf, pkts, r.err
		}
		capLen := r.u32(b[8:])
		if capLen > MaxPacketSize {
			r.err = r.errf(r.off, true, "%w record: captured length %d exceeds maximum %d", ErrCorrupt, capLen, MaxPacketSize)
			return buf, pkts, r.err
		}
		rec := pcapRecordHeaderLen + int(capLen)
		if rec > len(b) {
			if !atEOF {
				return buf, pkts, nil
			}
			r.err = r.errf(r.off, true, "%w record (want %d bytes, have %d)", ErrTruncated, rec, len(b))
			return buf, pkts, r.err
		}
		pkts = pkts[:len(pkts)+1]
		r.setPcapPacket(&pkts[len(pkts)-1], b[:rec:rec])
		r.index++
		r.off += int64(rec)
		b = b[rec:]
	}
	return buf, pkts, nil
}
