package trace

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// File format constants shared by the writers and the reader.
const (
	pcapMagicMicro      = 0xa1b2c3d4 // pcap, microsecond timestamps
	pcapMagicNano       = 0xa1b23c4d // pcap, nanosecond timestamps
	pcapFileHeaderLen   = 24
	pcapRecordHeaderLen = 16

	ngBlockSHB    = 0x0A0D0D0A // Section Header Block
	ngBlockIDB    = 0x00000001 // Interface Description Block
	ngBlockOPB    = 0x00000002 // Packet Block (obsolete)
	ngBlockSPB    = 0x00000003 // Simple Packet Block
	ngBlockEPB    = 0x00000006 // Enhanced Packet Block
	ngByteOrder   = 0x1A2B3C4D // SHB byte-order magic
	ngEPBFixedLen = 28         // type, length, interface, ts high, ts low, caplen, origlen

	ngOptEnd      = 0  // opt_endofopt
	ngOptTsresol  = 9  // if_tsresol
	ngOptTsoffset = 14 // if_tsoffset
)

// checkSnaplen validates a writer's snaplen and applies the default.
func checkSnaplen(snaplen int) (int, error) {
	if snaplen == 0 {
		return DefaultSnaplen, nil
	}
	if snaplen < 0 || snaplen > MaxPacketSize {
		return 0, fmt.Errorf("trace: snaplen %d: %w (want 0..%d)", snaplen, ErrInvalid, MaxPacketSize)
	}
	return snaplen, nil
}

// packetLens validates a packet's arguments and returns its captured and
// original lengths.
func packetLens(tsNanos int64, data []byte, origLen, snaplen int) (capLen, orig int, err error) {
	if tsNanos < 0 {
		return 0, 0, fmt.Errorf("trace: timestamp %d: %w (negative)", tsNanos, ErrInvalid)
	}
	if origLen < 0 || origLen > math.MaxUint32 {
		return 0, 0, fmt.Errorf("trace: original length %d: %w", origLen, ErrInvalid)
	}
	capLen = min(len(data), snaplen)
	if origLen == 0 {
		origLen = len(data)
	}
	return capLen, max(origLen, capLen), nil
}

// PcapWriter writes a classic pcap file with nanosecond timestamps
// (magic 0xa1b23c4d, little-endian, version 2.4).
//
// PcapWriter does no buffering of its own: each WritePacket makes two Write
// calls on the underlying writer. Pass a *bufio.Writer when writing to a
// file or socket, and Flush it when done. A PcapWriter is not safe for
// concurrent use.
type PcapWriter struct {
	w       io.Writer
	snaplen int
	hdr     [pcapRecordHeaderLen]byte
}

// NewPcapWriter writes the pcap file header to w and returns a writer for
// its packets. A snaplen of 0 means DefaultSnaplen; otherwise it must be in
// 1..MaxPacketSize.
func NewPcapWriter(w io.Writer, snaplen int, linktype LinkType) (*PcapWriter, error) {
	snaplen, err := checkSnaplen(snaplen)
	if err != nil {
		return nil, err
	}
	var h [pcapFileHeaderLen]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], pcapMagicNano)
	le.PutUint16(h[4:], 2) // version major
	le.PutUint16(h[6:], 4) // version minor
	// h[8:16]: thiszone and sigfigs, both 0.
	le.PutUint32(h[16:], uint32(snaplen))
	le.PutUint32(h[20:], uint32(linktype))
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("trace: writing pcap file header: %w", err)
	}
	return &PcapWriter{w: w, snaplen: snaplen}, nil
}

// WritePacket writes one record. tsNanos is the capture time in nanoseconds
// since the Unix epoch and must be non-negative and before 2106 (the format
// stores unsigned 32-bit seconds). At most snaplen bytes of data are
// written. origLen is the length on the wire; 0 means len(data), and values
// below the captured length are raised to it. WritePacket does not allocate.
func (pw *PcapWriter) WritePacket(tsNanos int64, data []byte, origLen int) error {
	capLen, orig, err := packetLens(tsNanos, data, origLen, pw.snaplen)
	if err != nil {
		return err
	}
	sec := tsNanos / 1e9
	if sec > math.MaxUint32 {
		return fmt.Errorf("trace: timestamp %d: %w (beyond pcap's 32-bit seconds)", tsNanos, ErrInvalid)
	}
	le := binary.LittleEndian
	le.PutUint32(pw.hdr[0:], uint32(sec))
	le.PutUint32(pw.hdr[4:], uint32(tsNanos%1e9))
	le.PutUint32(pw.hdr[8:], uint32(capLen))
	le.PutUint32(pw.hdr[12:], uint32(orig))
	if _, err := pw.w.Write(pw.hdr[:]); err != nil {
		return fmt.Errorf("trace: writing pcap record header: %w", err)
	}
	if _, err := pw.w.Write(data[:capLen]); err != nil {
		return fmt.Errorf("trace: writing pcap record data: %w", err)
	}
	return nil
}

// PcapngWriter writes a pcapng file: one little-endian Section Header Block
// (version 1.0, unknown section length), one Interface Description Block
// with if_tsresol = 9 (nanoseconds), then one Enhanced Packet Block per
// packet on interface 0.
//
// Like PcapWriter it does no buffering of its own (three Write calls per
// packet): pass a *bufio.Writer and Flush it when done. A PcapngWriter is not
// safe for concurrent use.
type PcapngWriter struct {
	w       io.Writer
	snaplen int
	hdr     [ngEPBFixedLen]byte
	tail    [8]byte // padding (up to 3 zero bytes) and trailing block length
}

// NewPcapngWriter writes the section and interface headers to w and returns
// a writer for its packets. snaplen is as for NewPcapWriter and is recorded
// in the interface description.
func NewPcapngWriter(w io.Writer, snaplen int, linktype LinkType) (*PcapngWriter, error) {
	snaplen, err := checkSnaplen(snaplen)
	if err != nil {
		return nil, err
	}
	const (
		shbLen = 28
		idbLen = 32 // 20 fixed + if_tsresol (8) + opt_endofopt (4)
	)
	var h [shbLen + idbLen]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], ngBlockSHB)
	le.PutUint32(h[4:], shbLen)
	le.PutUint32(h[8:], ngByteOrder)
	le.PutUint16(h[12:], 1) // version major
	le.PutUint16(h[14:], 0) // version minor
	le.PutUint64(h[16:], math.MaxUint64)
	le.PutUint32(h[24:], shbLen)

	b := h[shbLen:]
	le.PutUint32(b[0:], ngBlockIDB)
	le.PutUint32(b[4:], idbLen)
	le.PutUint16(b[8:], uint16(linktype))
	// b[10:12] reserved.
	le.PutUint32(b[12:], uint32(snaplen))
	le.PutUint16(b[16:], ngOptTsresol)
	le.PutUint16(b[18:], 1)
	b[20] = 9 // 10^-9 s; b[21:24] padding
	le.PutUint16(b[24:], ngOptEnd)
	le.PutUint16(b[26:], 0)
	le.PutUint32(b[28:], idbLen)

	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("trace: writing pcapng headers: %w", err)
	}
	return &PcapngWriter{w: w, snaplen: snaplen}, nil
}

// WritePacket writes one Enhanced Packet Block. The arguments are as for
// PcapWriter.WritePacket, except that the timestamp range is the full
// non-negative int64. WritePacket does not allocate.
func (pw *PcapngWriter) WritePacket(tsNanos int64, data []byte, origLen int) error {
	capLen, orig, err := packetLens(tsNanos, data, origLen, pw.snaplen)
	if err != nil {
		return err
	}
	pad := -capLen & 3
	total := ngEPBFixedLen + capLen + pad + 4
	le := binary.LittleEndian
	le.PutUint32(pw.hdr[0:], ngBlockEPB)
	le.PutUint32(pw.hdr[4:], uint32(total))
	le.PutUint32(pw.hdr[8:], 0) // interface ID
	le.PutUint32(pw.hdr[12:], uint32(uint64(tsNanos)>>32))
	le.PutUint32(pw.hdr[16:], uint32(tsNanos))
	le.PutUint32(pw.hdr[20:], uint32(capLen))
	le.PutUint32(pw.hdr[24:], uint32(orig))
	pw.tail = [8]byte{}
	le.PutUint32(pw.tail[pad:], uint32(total))
	if _, err := pw.w.Write(pw.hdr[:]); err != nil {
		return fmt.Errorf("trace: writing pcapng packet block: %w", err)
	}
	if _, err := pw.w.Write(data[:capLen]); err != nil {
		return fmt.Errorf("trace: writing pcapng packet block: %w", err)
	}
	if _, err := pw.w.Write(pw.tail[:pad+4]); err != nil {
		return fmt.Errorf("trace: writing pcapng packet block: %w", err)
	}
	return nil
}

// WriteFramesFile writes frames to a new Ethernet pcap file at path, frame
// i stamped i × stepNs: a trace to hand to another tool (tshark, a test).
func WriteFramesFile(path string, frames [][]byte, stepNs int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	w, err := NewPcapWriter(bw, 0, LinkTypeEthernet)
	if err == nil {
		for i, fr := range frames {
			if err = w.WritePacket(int64(i)*stepNs, fr, len(fr)); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
