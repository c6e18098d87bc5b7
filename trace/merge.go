package trace

// Merging dumper files into one trace ordered by mirror sequence number.
//
// The injector stamps every mirror copy with a sequence number (source MAC)
// and its ingress timestamp (destination MAC) and spreads the copies over
// several dumpers by weighted round robin. Each dumper's file is therefore in
// sequence order with gaps where other dumpers got packets; the complete
// trace is the k-way merge of the files by sequence number. See Merge.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/netlumina/lumina/roce"
)

// ErrNotMirrorCopy means a packet cannot be a mirror copy: it is not an
// Ethernet frame, or it is too short to hold the two MAC addresses that carry
// the mirror timestamp and sequence number (12 bytes).
var ErrNotMirrorCopy = errors.New("not a mirror copy")

// MirrorHeaderLen is the number of leading frame bytes that carry mirror
// metadata: the destination MAC (timestamp) and the source MAC (sequence
// number).
const MirrorHeaderLen = 12

// MirrorSeqMax is the largest mirror sequence number of a switch: 2^40-1
// (roce.MirrorSeqMask). The 48-bit sequence field (source MAC) holds the
// switch id above it (roce.MirrorSeqField).
const MirrorSeqMax = roce.MirrorSeqMask

// MirrorFields returns the mirror sequence field (bytes 6..11, the source
// MAC, big-endian: the switch id and sequence number, see MirrorSwitchSeq) and switch timestamp in nanoseconds (bytes 0..5, the
// destination MAC, big-endian) of a mirror copy, RoCE or wrapped (the
// wrapper of IsMACMirror puts them at the same offsets). ok is false if
// frame is shorter than MirrorHeaderLen. It does not allocate.
func MirrorFields(frame []byte) (seq, tsNs uint64, ok bool) {
	if len(frame) < MirrorHeaderLen {
		return 0, 0, false
	}
	return roce.MAC(frame[6:12]).Uint64(), roce.MAC(frame[0:6]).Uint64(), true
}

// EtherTypeMACMirror is the EtherType of a wrapped mirror copy: the copy of
// a frame that is not IP (a PFC or PAUSE frame the switch received or
// sent), wrapped whole behind an 18-byte header that starts as a RoCE
// copy's metadata does (timestamp in bytes 0..5, sequence number in bytes
// 6..11), so MirrorFields and the merge read both kinds alike; see
// roce.ParseMACMirror for the rest.
const EtherTypeMACMirror = roce.EtherTypeLuminaMirror

// MACMirrorMinLen is the shortest wrapped mirror copy: the 18-byte wrapper
// and an Ethernet header.
const MACMirrorMinLen = roce.MACMirrorHeaderLen + roce.EthernetLen

// IsMACMirror reports whether frame is a wrapped mirror copy (EtherType
// EtherTypeMACMirror right after the two MAC fields, at least
// MACMirrorMinLen bytes) rather than a RoCE mirror copy. It is what tells
// the two kinds apart in a merged trace; it does not allocate.
func IsMACMirror(frame []byte) bool {
	return len(frame) >= MACMirrorMinLen && frame[12] == EtherTypeMACMirror>>8 && frame[13] == EtherTypeMACMirror&0xFF
}

// IsMACMirror reports whether p is a wrapped mirror copy: an Ethernet
// frame for which IsMACMirror holds.
func (p *Packet) IsMACMirror() bool {
	return p.LinkType == LinkTypeEthernet && IsMACMirror(p.Data)
}

// SeqSpace is the set of values a mirror sequence counter takes, in order:
// Min, Min+1, …, Max, then Min again. All sequence arithmetic (Merge, the
// integrity check) is modular over this cycle of Len() = Max-Min+1 values.
//
// A bit mask is not enough to describe every counter: lumina's injector
// counts 0, 1, …, 2^40-1, 0 per switch (a mask of 2^40-1 would do), but the public
// Lumina P4 program's 31-bit register goes from 0x7FFFFFFF back to 1, never
// to 0, so its cycle has 2^31-1 values, not 2^31. With a mask of 2^31-1 the
// step 0x7FFFFFFF → 1 would look like a one-packet gap. Hence the explicit
// range; see SeqSpace40 and SeqSpaceLumina31. A space numbers the copies
// of one switch: the merge and the integrity check apply it to each
// switch's sequence numbers (MirrorSwitchSeq).
//
// The zero value means SeqSpace40. Max == 0 means MirrorSeqMax. A valid space
// has Min < Max <= MirrorSeqMax.
//
// Two sequence numbers compare by their signed distance along the cycle
// (serial-number arithmetic, RFC 1982): b is after a when it is less than
// half a cycle ahead. This is right as long as the packets being compared
// are less than Len()/2 sequence numbers apart, which for 40 bits is always
// and for 31 bits is about 10^9 packets.
//
// Values outside [Min, Max] (a corrupt frame, or 0 with SeqSpaceLumina31)
// are reduced modulo Len() so that arithmetic on them stays defined; use
// Contains to detect them.
type SeqSpace struct {
	Min uint64 // first value, and the value after Max. Default 0.
	Max uint64 // last value before the wrap. Default (0) MirrorSeqMax.
}

// Sequence spaces of the counters lumina knows.
var (
	// SeqSpace40 is lumina's injector counter, one per logical switch: 40
	// bits, 2^40-1 wraps to 0. It is what the zero SeqSpace means.
	SeqSpace40 = SeqSpace{Min: 0, Max: MirrorSeqMax}

	// SeqSpaceLumina31 is the public Lumina tool's sequence_reg: 31 bits,
	// incremented before use so the first packet gets 1, and 0x7FFFFFFF
	// wraps to 1 (0 never appears).
	SeqSpaceLumina31 = SeqSpace{Min: 1, Max: 1<<31 - 1}
)

// norm applies the defaults.
func (s SeqSpace) norm() SeqSpace {
	if s.Max == 0 {
		s.Max = MirrorSeqMax
	}
	return s
}

// Validate reports whether s (after defaults) describes a usable cycle:
// Min < Max <= MirrorSeqMax. The error wraps ErrInvalid.
func (s SeqSpace) Validate() error {
	n := s.norm()
	if n.Min >= n.Max || n.Max > MirrorSeqMax {
		return fmt.Errorf("trace: sequence space %d..%d: %w (want Min < Max <= %d)", n.Min, n.Max, ErrInvalid, uint64(MirrorSeqMax))
	}
	return nil
}

// Len returns the number of values in the cycle, Max-Min+1.
func (s SeqSpace) Len() uint64 {
	s = s.norm()
	return s.Max - s.Min + 1
}

// Contains reports whether v is one of the space's values.
func (s SeqSpace) Contains(v uint64) bool {
	s = s.norm()
	return v >= s.Min && v <= s.Max
}

// pos returns v's position in the cycle, 0 for Min, in [0, Len()). s must be
// normalized.
func (s SeqSpace) pos(v uint64) uint64 {
	if v >= s.Min && v <= s.Max {
		return v - s.Min
	}
	n := s.Max - s.Min + 1
	if v > s.Max {
		return (v - s.Min) % n
	}
	// v < Min: −(Min−v) modulo n.
	if r := (s.Min - v) % n; r != 0 {
		return n - r
	}
	return 0
}

// Add returns the value k steps after v along the cycle.
func (s SeqSpace) Add(v, k uint64) uint64 {
	s = s.norm()
	n := s.Max - s.Min + 1
	p := s.pos(v) + k%n // < 2n <= 2^41: no overflow
	if p >= n {
		p -= n
	}
	return s.Min + p
}

// Next returns the value after v: v+1, or Min after Max.
func (s SeqSpace) Next(v uint64) uint64 { return s.Add(v, 1) }

// Diff returns the signed distance a−b along the cycle, in
// (−Len()/2, Len()/2]: positive when a comes after b, 1 when a follows b
// directly, 0 when they are equal.
func (s SeqSpace) Diff(a, b uint64) int64 {
	s = s.norm()
	n := s.Max - s.Min + 1
	return diffPos(s.pos(a), s.pos(b), n)
}

// diffPos is Diff on cycle positions pa, pb in [0, n).
func diffPos(pa, pb, n uint64) int64 {
	d := pa - pb
	if pa < pb {
		d += n
	}
	if d > n/2 {
		return int64(d) - int64(n)
	}
	return int64(d)
}

// MergeSource is one input of Merge: typically one dumper's file.
type MergeSource struct {
	// Name identifies the source in errors, e.g. "dumper-0" or a file
	// name. Empty means "source N" with N its position.
	Name string

	// Reader is positioned at the source's first packet. Merge reads it to
	// the end.
	Reader *Reader
}

// MergeStats counts what Merge emitted.
type MergeStats struct {
	// Packets is the number of packets emitted.
	Packets int

	// PerSource[i] is the number of packets emitted from source i.
	PerSource []int

	// OutOfOrder counts packets emitted with a sequence number before that
	// of the packet emitted just before them. Merge never reorders within a
	// source, so each one means a source that is not in sequence order (a
	// corrupt or badly written dumper file); the integrity check reports it
	// precisely.
	OutOfOrder int
}

// MergeOptions configure Merge and MergeFiles. The zero value is the
// default: 40-bit sequence numbers per switch.
type MergeOptions struct {
	// Seq is the sequence counter's range and wrap (of each switch).
	// Default (zero) SeqSpace40; use SeqSpaceLumina31 for traces of the
	// public Lumina tool.
	Seq SeqSpace
	// TempDir is where Merge keeps its per-switch temporary files (see
	// Merge). Default "": os.TempDir() for Merge, the output's directory
	// for MergeFiles.
	TempDir string
	// OneSwitch says the caller knows every copy is switch 0's (a
	// one-switch run; a dumper that saw no other switch): Merge then
	// merges the sources directly, without the split into temporary
	// files, and a copy of another switch stops it with ErrInvalid.
	// MergeFiles finds it out itself. Default false.
	OneSwitch bool
	// Observe, if set, also sees every packet MergeFiles writes, with its
	// source index (e.g. an integrity checker's Observe), so writing and
	// checking the merged trace take one pass over the inputs.
	Observe func(src int, p Packet) error
	// Context, if set, stops Merge and MergeFiles when it is cancelled:
	// they check it every MergeCheckEvery packets and return its error
	// (Ctrl-C during the merge of a long trace). Default nil: never.
	Context context.Context
}

// MergeCheckEvery is how many packets Merge emits between two looks at
// MergeOptions.Context: a cancelled merge emits at most that many more.
const MergeCheckEvery = 1024

// Merge is MergeOptions{}.Merge: a merge of 40-bit sequence numbers.
func Merge(out func(src int, p Packet) error, srcs ...MergeSource) (MergeStats, error) {
	return MergeOptions{}.Merge(out, srcs...)
}

// MergeFiles is MergeOptions{}.MergeFiles.
func MergeFiles(outPath string, snaplen int, inPaths ...string) (MergeStats, error) {
	return MergeOptions{}.MergeFiles(outPath, snaplen, inPaths...)
}

// mergeHead is a source's pending packet.
type mergeHead struct {
	p   Packet
	pos uint64 // cycle position of p's sequence number
	ok  bool   // p is pending; false once the source is exhausted
}

// Merge reads every source to its end and calls out once per packet, in
// the order of the switches' timestamps and sequence numbers, with the
// source's position in srcs and the packet as that source's Reader returned
// it (Index is the packet's index within its source; Data is valid only
// during the call). Pass a closure around a PcapWriter to write the merged
// trace, or an integrity checker, or both.
//
// Switches. Each copy names its logical switch (MirrorSwitchSeq), and each
// switch numbers its copies in its own sequence. A source (a dumper file)
// holds the copies of every switch interleaved in arrival order, each
// switch's copies in its sequence order. Merge first splits every source
// into one temporary file per switch (in o.TempDir, removed before it
// returns), then merges each switch's files by sequence number as below,
// and those per-switch streams by (timestamp, switch id): a switch's
// stamps never decrease in its sequence order. With copies of one switch
// only, the result is the sequence order below. MergeFiles skips the split
// when every copy is of switch 0, and so does Merge with o.OneSwitch.
//
// Memory is bounded by the number of sources and switches, not by the
// trace length: one pending packet and one read buffer per source and
// switch. The pending packet's Data is not copied: it stays valid because
// Merge reads a source only after its pending packet has been emitted. Per
// packet, Merge does O(k+s) comparisons for k sources and s switches and
// allocates nothing.
//
// Order within a switch. The next packet of a switch is the pending one
// whose sequence number is nearest after the last emitted one, by signed
// distance along the cycle of o.Seq (see SeqSpace), so a trace that crosses
// the counter's wrap (…, 2^40-1, 0, 1, … or, for the public tool, …,
// 0x7FFFFFFF, 1, …) merges in the order the switch counted. The first is
// the earliest of the sources' first packets in the same serial order.
// Ties (the same number in two sources) go to the lower source position.
//
// Merge does not sort within a source: it assumes each source's copies of
// a switch are in sequence order, as a dumper writes them, and does not
// check it. If a source is not (a corrupt file), a packet whose number is
// before the last emitted one of its switch is emitted as soon as it is a
// source's pending packet, and counted in MergeStats.OutOfOrder; the
// result is not sorted, and the integrity check (package
// analyzers/integrity) names the offending packet. Duplicates are emitted
// as they are.
//
// Errors. A read error from a source (ErrTruncated, ErrCorrupt, I/O) stops
// the merge with an error naming the source and wrapping the Reader's error;
// all packets ordered before the failing source's next packet have been
// emitted (with several switches: once every packet read from that source
// has been emitted). A packet that is not an Ethernet frame of at least
// MirrorHeaderLen bytes stops it with ErrNotMirrorCopy, naming the source
// and the packet's index. An error from out stops the merge and is returned
// as is. An invalid o.Seq or a nil Reader returns ErrInvalid before anything
// is read. A cancelled o.Context stops it with an error wrapping the
// context's cause, after at most MergeCheckEvery more packets. In every
// case the stats count what was emitted.
func (o MergeOptions) Merge(out func(src int, p Packet) error, srcs ...MergeSource) (MergeStats, error) {
	stats := MergeStats{PerSource: make([]int, len(srcs))}
	if err := o.Seq.Validate(); err != nil {
		return stats, fmt.Errorf("trace: merge: %w", err)
	}
	for i := range srcs {
		if srcs[i].Reader == nil {
			return stats, fmt.Errorf("trace: merge: %s: %w (nil Reader)", sourceName(srcs, i), ErrInvalid)
		}
	}
	if o.OneSwitch {
		return o.mergeDirect(out, srcs)
	}
	return o.mergeSwitches(out, &stats, srcs)
}

// mergeDirect is the merge of sources that hold the copies of one switch
// (switch 0): one k-way merge by sequence number, reading the sources
// directly.
func (o MergeOptions) mergeDirect(out func(src int, p Packet) error, srcs []MergeSource) (MergeStats, error) {
	stats := MergeStats{PerSource: make([]int, len(srcs))}
	in := make([]packetSource, len(srcs))
	ids := make([]int, len(srcs))
	for i := range srcs {
		in[i], ids[i] = srcs[i].Reader, i
	}
	m := newSeqMerge(o.Seq.norm(), in, ids, func(i int) string { return sourceName(srcs, i) })
	m.oneSwitch = true
	if err := m.init(); err != nil {
		return stats, err
	}
	var done <-chan struct{}
	if o.Context != nil {
		done = o.Context.Done()
	}
	for {
		j, ooo, ok, err := m.next()
		if err != nil {
			return stats, err
		}
		if !ok {
			return stats, nil
		}
		if ooo {
			stats.OutOfOrder++
		}
		if done != nil && stats.Packets%MergeCheckEvery == 0 {
			select {
			case <-done:
				return stats, fmt.Errorf("trace: merge: %w", context.Cause(o.Context))
			default:
			}
		}
		src := m.ids[j]
		if err := out(src, m.heads[j].p); err != nil {
			return stats, err
		}
		stats.Packets++
		stats.PerSource[src]++
	}
}

// packetSource is what a merge reads: a Reader, or a spill file of the
// merge of several switches.
type packetSource interface {
	// ReadPacket fills *p in place: a Packet returned by value and copied
	// is read back in wide loads of the narrow stores that built it, which
	// stalls store forwarding (Reader.setPcapPacket).
	ReadPacket(p *Packet) error
}

// seqMerge is the k-way merge by sequence number of its inputs, pulled one
// packet at a time (next). The packet next returns stays valid until the
// following call, which is when its input is advanced.
type seqMerge struct {
	sp      SeqSpace // normalized
	n       uint64   // sp.Len()
	in      []packetSource
	ids     []int // the MergeSource index of each input
	name    func(src int) string
	heads   []mergeHead
	last    uint64 // cycle position of the last packet returned
	emitted int    // the head returned last, -1 before the first
	// oneSwitch: the inputs are sources that must hold copies of switch 0
	// only (a direct merge).
	oneSwitch bool
}

func newSeqMerge(sp SeqSpace, in []packetSource, ids []int, name func(int) string) *seqMerge {
	return &seqMerge{sp: sp, n: sp.Max - sp.Min + 1, in: in, ids: ids, name: name, heads: make([]mergeHead, len(in)), emitted: -1}
}

// init reads every input's first packet.
func (m *seqMerge) init() error {
	for j := range m.heads {
		if err := m.advance(j); err != nil {
			return err
		}
	}
	return nil
}

// advance reads input j's next packet into its head.
func (m *seqMerge) advance(j int) error {
	h := &m.heads[j]
	if err := h.advance(m.in[j], m.name(m.ids[j]), m.sp); err != nil {
		return err
	}
	if m.oneSwitch && h.ok {
		if sw := switchOf(h.p.Data); sw != 0 {
			h.ok = false
			return fmt.Errorf("trace: merge: %s: packet %d: a copy of switch %d: %w (a merge of switch 0's copies only: MergeOptions.OneSwitch)",
				m.name(m.ids[j]), h.p.Index, sw, ErrInvalid)
		}
	}
	return nil
}

// next advances the input of the packet returned last and returns the
// head to emit: the first time, the earliest pending packet in serial
// order; then the pending packet nearest after the last one returned (or
// furthest before it: ooo, a source out of sequence order). Ties go to the
// lower input. ok is false once every input is exhausted.
func (m *seqMerge) next() (j int, ooo, ok bool, err error) {
	if m.emitted >= 0 {
		if err := m.advance(m.emitted); err != nil {
			return 0, false, false, err
		}
	}
	best := -1
	var bestD int64
	for i := range m.heads {
		h := &m.heads[i]
		if !h.ok {
			continue
		}
		if m.emitted < 0 {
			if best < 0 || diffPos(h.pos, m.heads[best].pos, m.n) < 0 {
				best = i
			}
			continue
		}
		if d := diffPos(h.pos, m.last, m.n); best < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	if best < 0 {
		return 0, false, false, nil
	}
	ooo = m.emitted >= 0 && bestD < 0
	m.last, m.emitted = m.heads[best].pos, best
	return best, ooo, true, nil
}

// advance reads the next packet of in (source name) into h.
func (h *mergeHead) advance(in packetSource, name string, sp SeqSpace) error {
	err := in.ReadPacket(&h.p)
	if err == io.EOF {
		h.ok = false
		h.p = Packet{}
		return nil
	}
	if err != nil {
		h.ok = false
		return fmt.Errorf("trace: merge: %s: %w", name, err)
	}
	if err := checkMirrorCopy(&h.p, name); err != nil {
		h.ok = false
		return err
	}
	field, _, _ := MirrorFields(h.p.Data)
	_, seq := roce.SplitMirrorSeq(field)
	h.pos, h.ok = sp.pos(seq), true
	return nil
}

// checkMirrorCopy returns ErrNotMirrorCopy, naming the source and the
// packet, if p is not an Ethernet frame of at least MirrorHeaderLen bytes.
func checkMirrorCopy(p *Packet, name string) error {
	if p.LinkType != LinkTypeEthernet {
		return fmt.Errorf("trace: merge: %s: packet %d: %w (link type %v, want %v)",
			name, p.Index, ErrNotMirrorCopy, p.LinkType, LinkTypeEthernet)
	}
	if len(p.Data) < MirrorHeaderLen {
		return fmt.Errorf("trace: merge: %s: packet %d: %w (frame of %d bytes, want at least %d)",
			name, p.Index, ErrNotMirrorCopy, len(p.Data), MirrorHeaderLen)
	}
	return nil
}

func sourceName(srcs []MergeSource, i int) string {
	if srcs[i].Name != "" {
		return srcs[i].Name
	}
	return "source " + strconv.Itoa(i)
}

// MergeFiles merges the pcap or pcapng files at inPaths (see Merge; each
// source is named by its path; a first read of the files tells whether
// they hold copies of several switches, and without them the files are
// merged directly, without temporary files) into a pcap file with nanosecond timestamps
// at outPath. Each packet keeps its record timestamp (the switch timestamp,
// as the dumpers write it), its captured bytes and its original length.
//
// snaplen is the output's snaplen; 0 means DefaultSnaplen, which keeps every
// byte the reader accepts. A smaller snaplen truncates longer packets.
//
// The output is written atomically: to a temporary file in outPath's
// directory, synced, then renamed to outPath (mode 0644). On any error the
// temporary file is removed and outPath is left as it was; the returned
// stats still count the packets merged before the error.
func (o MergeOptions) MergeFiles(outPath string, snaplen int, inPaths ...string) (stats MergeStats, err error) {
	if err := o.Seq.Validate(); err != nil {
		return MergeStats{PerSource: make([]int, len(inPaths))}, fmt.Errorf("trace: merge: %w", err)
	}
	srcs := make([]MergeSource, len(inPaths))
	for i, path := range inPaths {
		f, err := os.Open(path)
		if err != nil {
			return MergeStats{PerSource: make([]int, len(inPaths))}, fmt.Errorf("trace: merge: %w", err)
		}
		defer f.Close()
		r, err := NewReader(f)
		if err != nil {
			return MergeStats{PerSource: make([]int, len(inPaths))}, fmt.Errorf("trace: merge: %s: %w", path, err)
		}
		srcs[i] = MergeSource{Name: path, Reader: r}
	}

	tmp, err := os.CreateTemp(filepath.Dir(outPath), "."+filepath.Base(outPath)+".tmp*")
	if err != nil {
		return MergeStats{PerSource: make([]int, len(inPaths))}, fmt.Errorf("trace: merge: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	pw, err := NewPcapWriter(bw, snaplen, LinkTypeEthernet)
	if err != nil {
		return MergeStats{PerSource: make([]int, len(inPaths))}, fmt.Errorf("trace: merge: %s: %w", outPath, err)
	}
	if o.TempDir == "" {
		o.TempDir = filepath.Dir(outPath)
	}
	merge := o.Merge
	if o.OneSwitch || OnlySwitchZero(inPaths...) {
		merge = func(out func(int, Packet) error, srcs ...MergeSource) (MergeStats, error) {
			return o.mergeDirect(out, srcs)
		}
	}
	stats, err = merge(func(src int, p Packet) error {
		if o.Observe != nil {
			if err := o.Observe(src, p); err != nil {
				return err
			}
		}
		if err := pw.WritePacket(p.TimeNs, p.Data, p.OrigLen); err != nil {
			return fmt.Errorf("trace: merge: writing %s: %w", outPath, err)
		}
		return nil
	}, srcs...)
	if err != nil {
		return stats, err
	}
	if err = bw.Flush(); err == nil {
		if err = tmp.Chmod(0o644); err == nil {
			if err = tmp.Sync(); err == nil {
				err = tmp.Close()
			}
		}
	}
	if err != nil {
		return stats, fmt.Errorf("trace: merge: writing %s: %w", outPath, err)
	}
	if err = os.Rename(tmp.Name(), outPath); err != nil {
		return stats, fmt.Errorf("trace: merge: %w", err)
	}
	return stats, nil
}
