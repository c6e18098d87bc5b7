package trace

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
)

const (
	// readerBufSize is the size of the bufio.Reader NewReader wraps its
	// input in.
	readerBufSize = 256 << 10

	// readChunk bounds how far the packet buffer grows ahead of the bytes
	// actually read, so that a huge length field in a short file cannot
	// force a huge allocation.
	readChunk = 64 << 10

	// Magic numbers as they read in the wrong byte order.
	pcapMagicMicroSwapped = 0xd4c3b2a1
	pcapMagicNanoSwapped  = 0x4d3cb2a1
	ngByteOrderSwapped    = 0x4D3C2B1A
)

// Reader reads packets from a pcap or pcapng stream, one at a time, reusing
// one buffer for their data. Create it with NewReader. A Reader is not safe
// for concurrent use.
type Reader struct {
	br     *bufio.Reader
	off    int64 // bytes consumed from the start of the input
	format Format
	index  int   // index of the next packet
	err    error // sticky: returned by every Next after the first error
	buf    []byte

	be bool // current byte order is big-endian (pcap file or pcapng section)

	// First interface's properties, as reported by the accessors. For pcap
	// they come from the file header.
	linkType  LinkType
	snaplen   int
	nano      bool
	haveIface bool

	// pcap: timestamp fraction multiplier (1000 for µs, 1 for ns).
	fracMul int64

	// pcapng: the interfaces of the current section, indexed by ID.
	ifaces []ngIface

	// pcap: win holds the bytes of r.br's buffer after the last record
	// returned, peeked but not consumed, and pend the bytes returned from
	// it that r.br has not discarded yet: records wholly inside win are
	// returned as slices of it, without a copy or a call into r.br.
	win  []byte
	pend int
}

// ngIface is what the reader keeps of a pcapng Interface Description Block.
type ngIface struct {
	linkType LinkType
	snaplen  int
	// Timestamp units to nanoseconds: for base-10 resolutions
	// ns = ts*mul/div (one of them is 1; div 0 means finer than 1e-28 s, so
	// always 0 ns); for base-2 resolutions shift >= 0 and ns = ts*1e9 >> shift.
	mul, div uint64
	shift    int
	offsetNs int64 // if_tsoffset, in nanoseconds
}

// NewReader reads the file header (and, for pcapng, the blocks up to the
// first Interface Description Block) from r and returns a Reader positioned
// at the first packet. The format is detected from the magic number: pcap
// with microsecond or nanosecond timestamps in either byte order, or pcapng.
// NewReader wraps r in a bufio.Reader of 256 KiB; the caller need not buffer.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{br: bufio.NewReaderSize(r, readerBufSize)}
	b, err := rd.peek(4)
	if err != nil {
		return nil, fmt.Errorf("trace: reading file header: %w", err)
	}
	if len(b) < 4 {
		if len(b) == 0 {
			return nil, fmt.Errorf("trace: %w (empty file)", ErrNotPcap)
		}
		if isMagicPrefix(b) {
			return nil, fmt.Errorf("trace: offset 0: %w file header (want 4 bytes of magic, have %d)", ErrTruncated, len(b))
		}
		return nil, fmt.Errorf("trace: %w (file of %d bytes)", ErrNotPcap, len(b))
	}
	switch magic := binary.LittleEndian.Uint32(b); magic {
	case pcapMagicMicro, pcapMagicNano, pcapMagicMicroSwapped, pcapMagicNanoSwapped:
		rd.be = magic == pcapMagicMicroSwapped || magic == pcapMagicNanoSwapped
		rd.nano = magic == pcapMagicNano || magic == pcapMagicNanoSwapped
		if err := rd.readPcapHeader(); err != nil {
			return nil, err
		}
	case ngBlockSHB:
		if err := rd.readPcapngHeader(); err != nil {
			return nil, err
		}
	default:
		// The file's bytes are not quoted: it may be anything a link
		// pointed to (/etc/shadow).
		return nil, fmt.Errorf("trace: %w (unknown magic number)", ErrNotPcap)
	}
	return rd, nil
}

// isMagicPrefix reports whether b, shorter than 4 bytes, starts a known
// magic number.
func isMagicPrefix(b []byte) bool {
	var m [4]byte
	for _, magic := range [...]uint32{pcapMagicMicro, pcapMagicNano, ngBlockSHB} {
		binary.LittleEndian.PutUint32(m[:], magic)
		if string(m[:len(b)]) == string(b) {
			return true
		}
		binary.BigEndian.PutUint32(m[:], magic)
		if string(m[:len(b)]) == string(b) {
			return true
		}
	}
	return false
}

// Format returns the file's format, FormatPcap or FormatPcapng.
func (r *Reader) Format() Format { return r.format }

// LinkType returns the link type of the file (pcap) or of the first
// interface described in the file (pcapng; 0 if the file has none). In
// pcapng each packet's own link type is in Packet.LinkType.
func (r *Reader) LinkType() LinkType { return r.linkType }

// Snaplen returns the snapshot length from the pcap file header or the
// first pcapng interface. 0 means no limit was recorded.
func (r *Reader) Snaplen() int { return r.snaplen }

// Nanosecond reports whether timestamps have nanosecond (or finer)
// resolution: the pcap nanosecond magic, or a first pcapng interface whose
// if_tsresol is 10^-9 or finer (2^-30 or finer in base 2). Packet.TimeNs is
// in nanoseconds either way.
func (r *Reader) Nanosecond() bool { return r.nano }

// Next returns the next packet. It returns io.EOF when the input ends
// cleanly between records, and an error wrapping ErrTruncated if it ends
// inside one; all complete packets are returned before either. After an
// error, every later call returns the same error.
//
// Packet.Data aliases a buffer owned by the Reader and is overwritten by the
// next call to Next (or ReadPacket). In steady state (once the buffer has
// grown to the largest packet) Next does not allocate.
func (r *Reader) Next() (Packet, error) {
	var p Packet
	err := r.ReadPacket(&p)
	return p, err
}

// ReadPacket is Next, filling *p in place (p is left as it was on error):
// for a caller that keeps one Packet for the whole trace, saving a copy
// per packet.
func (r *Reader) ReadPacket(p *Packet) error {
	// Fast path (pcap): the record is in the window of buffered bytes.
	if b := r.win; len(b) >= pcapRecordHeaderLen {
		capLen := r.u32(b[8:])
		if n := pcapRecordHeaderLen + int(capLen); capLen <= MaxPacketSize && n <= len(b) {
			r.win = b[n:]
			r.pend += n
			r.off += int64(n)
			r.setPcapPacket(p, b[:n:n])
			r.index++
			return nil
		}
	}
	q, err := r.next()
	if err == nil {
		*p = q
	}
	return err
}

// next is Next's slow path.
func (r *Reader) next() (Packet, error) {
	if r.err != nil {
		return Packet{}, r.err
	}
	var (
		p   Packet
		err error
	)
	if r.format == FormatPcap {
		p, err = r.nextPcap()
	} else {
		for {
			var ok bool
			p, ok, err = r.nextBlock()
			if err != nil || ok {
				break
			}
		}
	}
	if err != nil {
		r.err = err
		r.win = nil // the fast path must not return packets after the error
		return Packet{}, err
	}
	r.index++
	return p, nil
}

// ReadFile opens the pcap or pcapng file at path and calls fn for each of its
// packets in order. It stops at the end of the file (returning nil), at the
// first read error (returned with the path prefixed) or at the first error
// from fn (returned as is). p.Data is valid only during the call to fn.
func ReadFile(path string, fn func(p Packet) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var p Packet // filled in place (see setPcapPacket)
	for {
		err := r.ReadPacket(&p)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := fn(p); err != nil {
			return err
		}
	}
}

// Byte-order helpers for the current file or section.

func (r *Reader) u16(b []byte) uint16 {
	if r.be {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *Reader) u32(b []byte) uint32 {
	if r.be {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *Reader) u64(b []byte) uint64 {
	if r.be {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// I/O helpers. They keep r.off up to date.

// peek returns up to n buffered bytes without consuming them; fewer than n
// means the input ends. The error is non-nil only for failures other than
// the end of input.
func (r *Reader) peek(n int) ([]byte, error) {
	b, err := r.br.Peek(n)
	if err == io.EOF {
		err = nil
	}
	return b, err
}

// discard consumes n bytes and returns how many it could.
func (r *Reader) discard(n int) (int, error) {
	d, err := r.br.Discard(n)
	r.off += int64(d)
	if err == io.EOF {
		err = nil
	}
	return d, err
}

// readN reads exactly n bytes into the reused buffer and returns them. If
// the input ends first it returns how many bytes it got and
// io.ErrUnexpectedEOF (or io.EOF if none).
func (r *Reader) readN(n int) ([]byte, int, error) {
	if cap(r.buf) >= n {
		m, err := io.ReadFull(r.br, r.buf[:n])
		r.off += int64(m)
		return r.buf[:n:n], m, err
	}
	// Grow only as the bytes arrive.
	buf := r.buf[:0]
	for got := 0; got < n; {
		chunk := min(n-got, readChunk)
		buf = slices.Grow(buf[:got], chunk)[:got+chunk]
		m, err := io.ReadFull(r.br, buf[got:])
		got += m
		r.off += int64(m)
		if err != nil {
			r.buf = buf[:0]
			return nil, got, err
		}
	}
	r.buf = buf[:0]
	return buf[:n:n], n, nil
}

// isEOF reports whether err means the input ended.
func isEOF(err error) bool {
	return err == io.EOF || err == io.ErrUnexpectedEOF
}

// errf returns an error about the record (pcap) or block (pcapng) starting at
// byte offset start; packet says whether it is a packet record, which puts
// the packet index in the message. format must contain a %w verb.
func (r *Reader) errf(start int64, packet bool, format string, args ...any) error {
	if packet {
		return fmt.Errorf("trace: packet %d at offset %d: "+format, append([]any{r.index, start}, args...)...)
	}
	return fmt.Errorf("trace: offset %d: "+format, append([]any{start}, args...)...)
}

// ioErr wraps a read failure that is not the end of input.
func (r *Reader) ioErr(start int64, packet bool, err error) error {
	return r.errf(start, packet, "%w", err)
}

// ---- pcap ----

func (r *Reader) readPcapHeader() error {
	r.format = FormatPcap
	r.fracMul = 1000
	if r.nano {
		r.fracMul = 1
	}
	b, err := r.peek(pcapFileHeaderLen)
	if err != nil {
		return r.ioErr(0, false, err)
	}
	if len(b) < pcapFileHeaderLen {
		return r.errf(0, false, "%w pcap file header (want %d bytes, have %d)", ErrTruncated, pcapFileHeaderLen, len(b))
	}
	major, minor := r.u16(b[4:]), r.u16(b[6:])
	if major != 2 {
		return r.errf(0, false, "%w pcap file header: unsupported version %d.%d", ErrCorrupt, major, minor)
	}
	r.snaplen = int(min(r.u32(b[16:]), math.MaxInt32))
	// The upper bits of the link-type field carry FCS information.
	r.linkType = LinkType(r.u32(b[20:]))
	r.haveIface = true
	_, err = r.discard(pcapFileHeaderLen)
	return err
}

func (r *Reader) nextPcap() (Packet, error) {
	r.syncWin() // Next returned the records wholly in the window
	start := r.off
	b, err := r.peek(pcapRecordHeaderLen)
	if err != nil {
		return Packet{}, r.ioErr(start, true, err)
	}
	if len(b) == 0 {
		return Packet{}, io.EOF
	}
	if len(b) < pcapRecordHeaderLen {
		return Packet{}, r.errf(start, true, "%w record header (want %d bytes, have %d)", ErrTruncated, pcapRecordHeaderLen, len(b))
	}
	capLen := r.u32(b[8:])
	if capLen > MaxPacketSize {
		return Packet{}, r.errf(start, true, "%w record: captured length %d exceeds maximum %d", ErrCorrupt, capLen, MaxPacketSize)
	}
	if n := pcapRecordHeaderLen + int(capLen); n <= r.br.Size() {
		// Peek the whole record (blocking for its bytes as ReadFull
		// would) and keep what else is buffered as the window.
		if b, _ := r.br.Peek(n); len(b) == n {
			w, _ := r.br.Peek(r.br.Buffered())
			r.win = w[n:]
			r.pend = n
			r.off += int64(n)
			return r.pcapPacket(w[:n:n]), nil
		}
	}
	hdr := [pcapRecordHeaderLen]byte(b)
	r.discard(pcapRecordHeaderLen) // peeked: cannot fail
	data, n, err := r.readN(int(capLen))
	if err != nil {
		if isEOF(err) {
			return Packet{}, r.errf(start, true, "%w record (want %d bytes, have %d)", ErrTruncated, pcapRecordHeaderLen+int(capLen), pcapRecordHeaderLen+n)
		}
		return Packet{}, r.ioErr(start, true, err)
	}
	p := r.pcapPacket(hdr[:])
	p.Data = data
	return p, nil
}

// pcapPacket returns the packet of the pcap record rec (its header, then
// its data when present).
func (r *Reader) pcapPacket(rec []byte) Packet {
	var p Packet
	r.setPcapPacket(&p, rec)
	return p
}

// setPcapPacket sets *p to pcapPacket(rec), every field by itself:
// ReadPacket and Chunker.Next fill their packets in place, where a Packet
// built whole and copied in is read back from the stack in wide loads of
// the narrow stores that built it, which stalls store forwarding (Intel 64
// and IA-32 Architectures Optimization Reference Manual, "Store
// Forwarding"): 9–14% of two workers' time, 6–8% of one worker's user
// time.
func (r *Reader) setPcapPacket(p *Packet, rec []byte) {
	sec, frac := r.u32(rec[0:]), r.u32(rec[4:])
	capLen, origLen := r.u32(rec[8:]), r.u32(rec[12:])
	p.Index = r.index
	p.TimeNs = int64(sec)*1e9 + int64(frac)*r.fracMul
	p.Data = rec[pcapRecordHeaderLen:]
	p.OrigLen = int(max(capLen, origLen))
	p.LinkType = r.linkType
	p.Interface = 0 // pcap has one
}

// syncWin consumes from r.br the bytes of the records already returned
// from the window, and empties it.
func (r *Reader) syncWin() {
	if r.pend > 0 {
		r.br.Discard(r.pend) // peeked: cannot fail
	}
	r.win, r.pend = nil, 0
}

// ---- pcapng ----

// readPcapngHeader reads the first Section Header Block and any blocks up to
// and including the first Interface Description Block, stopping early at a
// packet block or the end of input.
func (r *Reader) readPcapngHeader() error {
	r.format = FormatPcapng
	if _, _, err := r.nextBlock(); err != nil {
		return err
	}
	for !r.haveIface {
		b, err := r.peek(4)
		if err != nil {
			return r.ioErr(r.off, false, err)
		}
		if len(b) < 4 {
			return nil // Next reports the end or the truncation.
		}
		switch r.u32(b) {
		case ngBlockEPB, ngBlockSPB, ngBlockOPB:
			return nil // Next reports the missing interface.
		}
		if _, _, err := r.nextBlock(); err != nil {
			return err
		}
	}
	return nil
}

// blockName names a pcapng block type for error messages.
func blockName(typ uint32) string {
	switch typ {
	case ngBlockSHB:
		return "section header block"
	case ngBlockIDB:
		return "interface description block"
	case ngBlockEPB:
		return "enhanced packet block"
	case ngBlockSPB:
		return "simple packet block"
	case ngBlockOPB:
		return "packet block"
	}
	return fmt.Sprintf("block type %#x", typ)
}

// nextBlock reads one pcapng block. ok reports whether it was a packet, in
// which case p holds it. It returns io.EOF at a clean end of input.
func (r *Reader) nextBlock() (p Packet, ok bool, err error) {
	start := r.off
	b, err := r.peek(12) // 12 bytes is the shortest valid block
	if err != nil {
		return Packet{}, false, r.ioErr(start, false, err)
	}
	if len(b) == 0 {
		return Packet{}, false, io.EOF
	}
	if len(b) < 8 {
		return Packet{}, false, r.errf(start, false, "%w block header (want 8 bytes, have %d)", ErrTruncated, len(b))
	}
	typ := r.u32(b) // the SHB type reads the same in both orders
	isPacket := typ == ngBlockEPB || typ == ngBlockSPB || typ == ngBlockOPB
	if typ == ngBlockSHB {
		if len(b) < 12 {
			return Packet{}, false, r.errf(start, false, "%w section header block (want at least 12 bytes, have %d)", ErrTruncated, len(b))
		}
		switch bom := binary.LittleEndian.Uint32(b[8:]); bom {
		case ngByteOrder:
			r.be = false
		case ngByteOrderSwapped:
			r.be = true
		default:
			sentinel := ErrCorrupt
			if start == 0 {
				sentinel = ErrNotPcap
			}
			return Packet{}, false, r.errf(start, false, "%w: section header block with a bad byte-order magic", sentinel)
		}
	}
	length := r.u32(b[4:])
	minLen := uint32(12)
	switch typ {
	case ngBlockSHB:
		minLen = 28
	case ngBlockIDB:
		minLen = 20
	case ngBlockEPB, ngBlockOPB:
		minLen = 32
	case ngBlockSPB:
		minLen = 16
	}
	if length < minLen || length%4 != 0 || length > MaxBlockSize {
		return Packet{}, false, r.errf(start, isPacket, "%w %s: bad block length %d (want a multiple of 4 in %d..%d)", ErrCorrupt, blockName(typ), length, minLen, MaxBlockSize)
	}
	switch typ {
	case ngBlockEPB, ngBlockOPB:
		p, err = r.readEPB(start, typ, int(length))
		return p, err == nil, err
	case ngBlockSPB:
		p, err = r.readSPB(start, int(length))
		return p, err == nil, err
	case ngBlockSHB, ngBlockIDB:
		return Packet{}, false, r.readHeaderBlock(start, typ, int(length))
	}
	// Any other block: skip it without buffering.
	if _, err := r.discard(int(length) - 4); err != nil {
		return Packet{}, false, r.ioErr(start, false, err)
	}
	return Packet{}, false, r.trailer(start, typ, int(length))
}

// truncBlock reports a block cut short by the end of input.
func (r *Reader) truncBlock(start int64, typ uint32, length int) error {
	isPacket := typ == ngBlockEPB || typ == ngBlockSPB || typ == ngBlockOPB
	return r.errf(start, isPacket, "%w %s (want %d bytes, have %d)", ErrTruncated, blockName(typ), length, r.off-start)
}

// trailer consumes and checks the trailing block length, the last 4 bytes
// of the block that started at start.
func (r *Reader) trailer(start int64, typ uint32, length int) error {
	isPacket := typ == ngBlockEPB || typ == ngBlockSPB || typ == ngBlockOPB
	if r.off-start != int64(length)-4 {
		return r.truncBlock(start, typ, length)
	}
	b, err := r.peek(4)
	if err != nil {
		return r.ioErr(start, isPacket, err)
	}
	if len(b) < 4 {
		return r.errf(start, isPacket, "%w %s (want %d bytes, have %d)", ErrTruncated, blockName(typ), length, r.off-start+int64(len(b)))
	}
	if trail := r.u32(b); trail != uint32(length) {
		return r.errf(start, isPacket, "%w %s: trailing length %d differs from leading length %d", ErrCorrupt, blockName(typ), trail, length)
	}
	r.discard(4) // peeked: cannot fail
	return nil
}

// readHeaderBlock reads a Section Header Block or Interface Description
// Block whole and applies it.
func (r *Reader) readHeaderBlock(start int64, typ uint32, length int) error {
	r.discard(8) // type and length, peeked
	body, _, err := r.readN(length - 8)
	if err != nil {
		if isEOF(err) {
			return r.truncBlock(start, typ, length)
		}
		return r.ioErr(start, false, err)
	}
	if trail := r.u32(body[len(body)-4:]); trail != uint32(length) {
		return r.errf(start, false, "%w %s: trailing length %d differs from leading length %d", ErrCorrupt, blockName(typ), trail, length)
	}
	body = body[:len(body)-4]
	if typ == ngBlockSHB {
		// body: byte-order magic, major, minor, section length, options.
		if major, minor := r.u16(body[4:]), r.u16(body[6:]); major != 1 {
			return r.errf(start, false, "%w section header block: unsupported version %d.%d", ErrCorrupt, major, minor)
		}
		r.ifaces = r.ifaces[:0]
		return nil
	}
	// Interface Description Block: link type, reserved, snaplen, options.
	ifc := ngIface{
		linkType: LinkType(r.u16(body[0:])),
		snaplen:  int(min(r.u32(body[4:]), math.MaxInt32)),
		mul:      1000, // default resolution: 10^-6 s
		div:      1,
		shift:    -1,
	}
	opts := body[8:]
	for len(opts) >= 4 {
		code, olen := r.u16(opts[0:]), int(r.u16(opts[2:]))
		if code == ngOptEnd {
			break
		}
		padded := 4 + (olen+3)&^3
		if padded > len(opts) {
			return r.errf(start, false, "%w interface description block: option %d of length %d overruns the block", ErrCorrupt, code, olen)
		}
		val := opts[4 : 4+olen]
		switch code {
		case ngOptTsresol:
			if olen < 1 {
				return r.errf(start, false, "%w interface description block: empty if_tsresol", ErrCorrupt)
			}
			ifc.setResolution(val[0])
		case ngOptTsoffset:
			if olen < 8 {
				return r.errf(start, false, "%w interface description block: if_tsoffset of %d bytes", ErrCorrupt, olen)
			}
			ifc.offsetNs = int64(r.u64(val)) * 1e9
		}
		opts = opts[padded:]
	}
	if !r.haveIface {
		r.haveIface = true
		r.linkType = ifc.linkType
		r.snaplen = ifc.snaplen
		r.nano = ifc.shift >= 30 || (ifc.shift < 0 && ifc.mul == 1)
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

// pow10 holds 10^0 through 10^19, all that fit in a uint64.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// setResolution applies an if_tsresol value: 10^-v seconds per unit, or
// 2^-(v&0x7f) if the top bit is set.
func (ifc *ngIface) setResolution(v byte) {
	ifc.mul, ifc.div, ifc.shift = 1, 1, -1
	switch e := int(v); {
	case v&0x80 != 0:
		ifc.shift = e & 0x7f
	case e <= 9:
		ifc.mul = pow10[9-e]
	case e-9 < len(pow10):
		ifc.div = pow10[e-9]
	default:
		ifc.div = 0 // every uint64 count is under 1 ns
	}
}

// nanos converts a timestamp in the interface's units to nanoseconds since
// the epoch. Values that do not fit wrap around.
func (ifc *ngIface) nanos(ts uint64) int64 {
	var ns uint64
	switch {
	case ifc.shift == 0:
		ns = ts * 1e9
	case ifc.shift > 0:
		hi, lo := bits.Mul64(ts, 1e9)
		if s := uint(ifc.shift); s < 64 {
			ns = lo>>s | hi<<(64-s)
		} else {
			ns = hi >> (s - 64)
		}
	case ifc.div == 0:
		ns = 0
	case ifc.div == 1:
		ns = ts * ifc.mul
	default:
		ns = ts / ifc.div
	}
	return int64(ns) + ifc.offsetNs
}

// readEPB reads an Enhanced Packet Block or an obsolete Packet Block.
func (r *Reader) readEPB(start int64, typ uint32, length int) (Packet, error) {
	b, err := r.peek(ngEPBFixedLen)
	if err != nil {
		return Packet{}, r.ioErr(start, true, err)
	}
	if len(b) < ngEPBFixedLen {
		return Packet{}, r.errf(start, true, "%w %s (want %d bytes, have %d)", ErrTruncated, blockName(typ), length, len(b))
	}
	var ifID int
	if typ == ngBlockOPB {
		ifID = int(r.u16(b[8:])) // followed by a 16-bit drops count
	} else {
		ifID = int(r.u32(b[8:]) & math.MaxInt32)
	}
	ts := uint64(r.u32(b[12:]))<<32 | uint64(r.u32(b[16:]))
	capLen, origLen := r.u32(b[20:]), r.u32(b[24:])
	if capLen > MaxPacketSize {
		return Packet{}, r.errf(start, true, "%w %s: captured length %d exceeds maximum %d", ErrCorrupt, blockName(typ), capLen, MaxPacketSize)
	}
	if ngEPBFixedLen+int(capLen+3)&^3+4 > length {
		return Packet{}, r.errf(start, true, "%w %s: captured length %d overruns block length %d", ErrCorrupt, blockName(typ), capLen, length)
	}
	if ifID >= len(r.ifaces) {
		return Packet{}, r.errf(start, true, "%w %s: unknown interface %d (section has %d)", ErrCorrupt, blockName(typ), ifID, len(r.ifaces))
	}
	ifc := &r.ifaces[ifID]
	r.discard(ngEPBFixedLen) // peeked: cannot fail
	data, err := r.readPacketData(start, typ, length, int(capLen))
	if err != nil {
		return Packet{}, err
	}
	return Packet{
		Index:     r.index,
		TimeNs:    ifc.nanos(ts),
		Data:      data,
		OrigLen:   int(max(capLen, origLen)),
		LinkType:  ifc.linkType,
		Interface: ifID,
	}, nil
}

// readSPB reads a Simple Packet Block, which belongs to interface 0 and
// carries no timestamp.
func (r *Reader) readSPB(start int64, length int) (Packet, error) {
	b, err := r.peek(12)
	if err != nil {
		return Packet{}, r.ioErr(start, true, err)
	}
	if len(b) < 12 {
		return Packet{}, r.errf(start, true, "%w %s (want %d bytes, have %d)", ErrTruncated, blockName(ngBlockSPB), length, len(b))
	}
	if len(r.ifaces) == 0 {
		return Packet{}, r.errf(start, true, "%w simple packet block: no interface described in this section", ErrCorrupt)
	}
	ifc := &r.ifaces[0]
	origLen := r.u32(b[8:])
	// The captured length is implied: the original length, limited by the
	// block's size and the interface's snaplen.
	capLen := min(int64(origLen), int64(length-16))
	if ifc.snaplen > 0 {
		capLen = min(capLen, int64(ifc.snaplen))
	}
	if capLen > MaxPacketSize {
		return Packet{}, r.errf(start, true, "%w simple packet block: captured length %d exceeds maximum %d", ErrCorrupt, capLen, MaxPacketSize)
	}
	r.discard(12) // peeked: cannot fail
	data, err := r.readPacketData(start, ngBlockSPB, length, int(capLen))
	if err != nil {
		return Packet{}, err
	}
	return Packet{
		Index:    r.index,
		Data:     data,
		OrigLen:  int(max(int64(origLen), capLen)),
		LinkType: ifc.linkType,
	}, nil
}

// readPacketData reads capLen bytes of packet data, skips the padding and
// options up to the block's end and checks its trailing length.
func (r *Reader) readPacketData(start int64, typ uint32, length, capLen int) ([]byte, error) {
	data, _, err := r.readN(capLen)
	if err == nil {
		rest := length - 4 - int(r.off-start)
		_, err = r.discard(rest)
		if err == nil {
			err = r.trailer(start, typ, length)
			if err != nil {
				return nil, err
			}
			return data, nil
		}
	}
	if isEOF(err) {
		return nil, r.truncBlock(start, typ, length)
	}
	return nil, r.ioErr(start, true, err)
}
