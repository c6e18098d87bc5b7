package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
)

// Builders for hand-crafted capture files. They take the byte order so that
// big-endian files can be built as easily as little-endian ones.

type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

var (
	le = binary.LittleEndian
	be = binary.BigEndian
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// pcapHeader returns a pcap file header, version 2.4.
func pcapHeader(o order, magic, snaplen, link uint32) []byte {
	b := o.AppendUint32(nil, magic)
	b = o.AppendUint16(b, 2)
	b = o.AppendUint16(b, 4)
	b = o.AppendUint32(b, 0) // thiszone
	b = o.AppendUint32(b, 0) // sigfigs
	b = o.AppendUint32(b, snaplen)
	return o.AppendUint32(b, link)
}

// pcapRecord returns a pcap record header followed by data.
func pcapRecord(o order, sec, frac uint32, data []byte, orig uint32) []byte {
	b := o.AppendUint32(nil, sec)
	b = o.AppendUint32(b, frac)
	b = o.AppendUint32(b, uint32(len(data)))
	b = o.AppendUint32(b, orig)
	return append(b, data...)
}

// ngBlock returns a pcapng block of the given type around body, padding the
// body to 32 bits and adding the leading and trailing lengths.
func ngBlock(o order, typ uint32, body []byte) []byte {
	pad := -len(body) & 3
	n := uint32(12 + len(body) + pad)
	b := o.AppendUint32(nil, typ)
	b = o.AppendUint32(b, n)
	b = append(b, body...)
	b = append(b, make([]byte, pad)...)
	return o.AppendUint32(b, n)
}

// ngSHB returns a Section Header Block, version 1.0, unknown section length.
func ngSHB(o order) []byte {
	b := o.AppendUint32(nil, ngByteOrder)
	b = o.AppendUint16(b, 1)
	b = o.AppendUint16(b, 0)
	b = o.AppendUint64(b, math.MaxUint64)
	return ngBlock(o, ngBlockSHB, b)
}

// ngOpt returns one option, padded to 32 bits.
func ngOpt(o order, code uint16, val []byte) []byte {
	b := o.AppendUint16(nil, code)
	b = o.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	return append(b, make([]byte, -len(val)&3)...)
}

// ngOpts returns the options followed by opt_endofopt, or nothing.
func ngOpts(o order, opts ...[]byte) []byte {
	if len(opts) == 0 {
		return nil
	}
	return append(cat(opts...), ngOpt(o, ngOptEnd, nil)...)
}

func ngIDB(o order, link uint16, snaplen uint32, opts ...[]byte) []byte {
	b := o.AppendUint16(nil, link)
	b = o.AppendUint16(b, 0)
	b = o.AppendUint32(b, snaplen)
	return ngBlock(o, ngBlockIDB, append(b, ngOpts(o, opts...)...))
}

func tsresol(o order, v byte) []byte { return ngOpt(o, ngOptTsresol, []byte{v}) }

func tsoffset(o order, sec int64) []byte {
	return ngOpt(o, ngOptTsoffset, o.AppendUint64(nil, uint64(sec)))
}

func ngEPB(o order, ifID uint32, ts uint64, data []byte, orig uint32, opts ...[]byte) []byte {
	b := o.AppendUint32(nil, ifID)
	b = o.AppendUint32(b, uint32(ts>>32))
	b = o.AppendUint32(b, uint32(ts))
	b = o.AppendUint32(b, uint32(len(data)))
	b = o.AppendUint32(b, orig)
	b = append(b, data...)
	b = append(b, make([]byte, -len(data)&3)...)
	return ngBlock(o, ngBlockEPB, append(b, ngOpts(o, opts...)...))
}

func ngOPB(o order, ifID uint16, ts uint64, data []byte, orig uint32) []byte {
	b := o.AppendUint16(nil, ifID)
	b = o.AppendUint16(b, 0) // drops
	b = o.AppendUint32(b, uint32(ts>>32))
	b = o.AppendUint32(b, uint32(ts))
	b = o.AppendUint32(b, uint32(len(data)))
	b = o.AppendUint32(b, orig)
	return ngBlock(o, ngBlockOPB, append(b, data...))
}

func ngSPB(o order, orig uint32, data []byte) []byte {
	return ngBlock(o, ngBlockSPB, append(o.AppendUint32(nil, orig), data...))
}

// seq returns n bytes 0, 1, 2, ... (mod 256), offset by start.
func seq(start, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(start + i)
	}
	return b
}

// readAll reads every packet of in, copying their data. It returns the
// packets read before the first error, and that error (nil at a clean end).
func readAll(in []byte) (*Reader, []Packet, error) {
	r, err := NewReader(bytes.NewReader(in))
	if err != nil {
		return nil, nil, err
	}
	var pkts []Packet
	for {
		p, err := r.Next()
		if err == io.EOF {
			return r, pkts, nil
		}
		if err != nil {
			return r, pkts, err
		}
		p.Data = bytes.Clone(p.Data)
		pkts = append(pkts, p)
	}
}

func pktString(p Packet) string {
	d := p.Data
	if len(d) > 16 {
		return fmt.Sprintf("{#%d t=%d len=%d [% x ...] orig=%d %v if=%d}", p.Index, p.TimeNs, len(d), d[:16], p.OrigLen, p.LinkType, p.Interface)
	}
	return fmt.Sprintf("{#%d t=%d len=%d [% x] orig=%d %v if=%d}", p.Index, p.TimeNs, len(d), d, p.OrigLen, p.LinkType, p.Interface)
}

func pktEqual(a, b Packet) bool {
	return a.Index == b.Index && a.TimeNs == b.TimeNs && bytes.Equal(a.Data, b.Data) &&
		a.OrigLen == b.OrigLen && a.LinkType == b.LinkType && a.Interface == b.Interface
}

// checkPackets reports differences between got and want.
func checkPackets(t *testing.T, name string, got, want []Packet) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d packets, want %d", name, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !pktEqual(got[i], want[i]) {
			t.Errorf("%s: packet %d = %s, want %s", name, i, pktString(got[i]), pktString(want[i]))
		}
	}
}

// isSentinel reports whether err wraps one of the package's read errors.
func isSentinel(err error) bool {
	return errors.Is(err, ErrNotPcap) || errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt)
}
