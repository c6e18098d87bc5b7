package trace_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// rec is one packet as a dumper writes it.
type rec struct {
	seq, ts uint64
	data    []byte // as captured (at most the snaplen)
	orig    int
}

const (
	testSnaplen = 128
	t0          = 1_700_000_000_000_000_000 % (1 << 48) // a switch timestamp, ns
)

var (
	ipReq = netip.MustParseAddr("10.0.0.1")
	ipRsp = netip.MustParseAddr("10.0.0.2")
)

// mirrorFrame builds a RoCE frame, turns it into the injector's mirror copy
// with ApplyMirror and restores its ports as the dumper does. The payload
// length varies with seq so that packets differ in size, some beyond
// testSnaplen.
func mirrorFrame(tb testing.TB, seq, ts uint64) []byte {
	tb.Helper()
	payload := make([]byte, int(seq%31)*4)
	for i := range payload {
		payload[i] = byte(seq) + byte(i)
	}
	spec := roce.FrameSpec{
		SrcIP: ipReq, DstIP: ipRsp, UDPSrc: 0xC001,
		Opcode: roce.RCSendOnly, DestQP: 0x11, PSN: roce.PSN(seq & roce.PSNMask),
		Payload: payload,
	}
	f, err := spec.Append(nil)
	if err != nil {
		tb.Fatal(err)
	}
	if !roce.ApplyMirror(f, roce.MirrorMeta{Seq: seq, TimestampNs: ts}, roce.DefaultMirrorPort, uint16(seq*7919)) {
		tb.Fatal("ApplyMirror failed")
	}
	if !roce.RestoreMirror(f, roce.DefaultMirrorPort) {
		tb.Fatal("RestoreMirror failed")
	}
	return f
}

// distribute builds the packets with sequence numbers seqs (in switch
// order, timestamps 100 ns apart) and deals them to dumpers by the cyclic
// pattern: packet i goes to dumper pattern[i%len(pattern)].
func distribute(tb testing.TB, seqs []uint64, dumpers int, pattern []int) (merged []rec, per [][]rec) {
	tb.Helper()
	per = make([][]rec, dumpers)
	for i, s := range seqs {
		ts := (t0 + uint64(i)*100) & roce.MirrorTimeMask
		f := mirrorFrame(tb, s, ts)
		r := rec{seq: s, ts: ts, data: f[:min(len(f), testSnaplen)], orig: len(f)}
		merged = append(merged, r)
		d := pattern[i%len(pattern)]
		per[d] = append(per[d], r)
	}
	return merged, per
}

// pcapFile returns a pcap of recs with the record timestamps = switch
// timestamps, as a dumper writes it.
func pcapFile(tb testing.TB, recs []rec) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, testSnaplen, trace.LinkTypeEthernet)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range recs {
		if err := w.WritePacket(int64(r.ts), r.data, r.orig); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

func sources(tb testing.TB, files [][]byte) []trace.MergeSource {
	tb.Helper()
	srcs := make([]trace.MergeSource, len(files))
	for i, f := range files {
		r, err := trace.NewReader(bytes.NewReader(f))
		if err != nil {
			tb.Fatal(err)
		}
		srcs[i] = trace.MergeSource{Name: fmt.Sprintf("dumper-%d", i), Reader: r}
	}
	return srcs
}

// got is one packet Merge emitted.
type got struct {
	src, index int
	rec
}

// collect merges the dumper files and returns what Merge emitted.
func collect(tb testing.TB, opt trace.MergeOptions, files [][]byte) ([]got, trace.MergeStats, error) {
	tb.Helper()
	var out []got
	stats, err := opt.Merge(func(src int, p trace.Packet) error {
		seq, ts, ok := trace.MirrorFields(p.Data)
		if !ok {
			tb.Fatalf("emitted packet of %d bytes", len(p.Data))
		}
		if uint64(p.TimeNs) != ts {
			tb.Errorf("packet seq %d: record time %d, MAC timestamp %d", seq, p.TimeNs, ts)
		}
		out = append(out, got{src, p.Index, rec{seq, ts, bytes.Clone(p.Data), p.OrigLen}})
		return nil
	}, sources(tb, files)...)
	return out, stats, err
}

func seqsOf[T interface{ getSeq() uint64 }](xs []T) []uint64 {
	s := make([]uint64, len(xs))
	for i, x := range xs {
		s[i] = x.getSeq()
	}
	return s
}

func (r rec) getSeq() uint64 { return r.seq }

// run returns n sequence numbers counting from first in space sp.
func run(sp trace.SeqSpace, first uint64, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = first
		first = sp.Next(first)
	}
	return s
}

func TestMerge(t *testing.T) {
	const top40 = 1<<40 - 1
	tests := []struct {
		name    string
		opt     trace.MergeOptions
		seqs    []uint64
		dumpers int
		pattern []int
		want    []uint64 // nil: seqs
	}{
		{name: "wrr-1:2:3", seqs: run(trace.SeqSpace40, 1, 600), dumpers: 3, pattern: []int{0, 1, 1, 2, 2, 2}},
		{name: "alternate", seqs: run(trace.SeqSpace40, 1, 101), dumpers: 2, pattern: []int{1, 0}},
		{name: "one-source", seqs: run(trace.SeqSpace40, 1, 50), dumpers: 1, pattern: []int{0}},
		{name: "starts-anywhere", seqs: run(trace.SeqSpace40, 123456789, 50), dumpers: 3, pattern: []int{2, 0, 1}},
		{name: "one-source-of-three-empty", seqs: run(trace.SeqSpace40, 1, 60), dumpers: 3, pattern: []int{0, 2, 2}},
		{name: "all-empty", seqs: nil, dumpers: 3, pattern: []int{0}},
		{name: "no-sources", seqs: nil, dumpers: 0, pattern: []int{0}},
		{
			name: "wrap40", seqs: run(trace.SeqSpace40, top40-2, 7), dumpers: 3, pattern: []int{0, 1, 1, 2, 2, 2},
			want: []uint64{top40 - 2, top40 - 1, top40, 0, 1, 2, 3},
		},
		{
			name: "wrap40-long", seqs: run(trace.SeqSpace40, top40-300, 600), dumpers: 4, pattern: []int{3, 0, 1, 2, 1},
		},
		{
			name: "wrap31", opt: trace.MergeOptions{Seq: trace.SeqSpaceLumina31},
			seqs: run(trace.SeqSpaceLumina31, 0x7FFFFFFD, 6), dumpers: 2, pattern: []int{1, 0},
			want: []uint64{0x7FFFFFFD, 0x7FFFFFFE, 0x7FFFFFFF, 1, 2, 3},
		},
		{
			name: "wrap31-long", opt: trace.MergeOptions{Seq: trace.SeqSpaceLumina31},
			seqs: run(trace.SeqSpaceLumina31, 0x7FFFFFFF-200, 500), dumpers: 3, pattern: []int{0, 1, 1, 2, 2, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			merged, per := distribute(t, tt.seqs, tt.dumpers, tt.pattern)
			files := make([][]byte, tt.dumpers)
			for d := range files {
				files[d] = pcapFile(t, per[d])
			}
			out, stats, err := collect(t, tt.opt, files)
			if err != nil {
				t.Fatalf("Merge() error = %v", err)
			}
			want := tt.want
			if want == nil {
				want = tt.seqs
			}
			if gotSeqs := seqsOf(recsOf(out)); !slices.Equal(gotSeqs, want) && !(len(gotSeqs) == 0 && len(want) == 0) {
				t.Fatalf("Merge() sequence = %v, want %v", abbrev(gotSeqs), abbrev(want))
			}
			// Byte-identical to the inputs, in merged order, with the
			// source and per-source index of each packet.
			next := make([]int, tt.dumpers)
			for i, g := range out {
				if !bytes.Equal(g.data, merged[i].data) || g.ts != merged[i].ts || g.orig != merged[i].orig {
					t.Fatalf("packet %d (seq %d) differs from input: data %x ts %d orig %d, want %x %d %d",
						i, g.seq, g.data, g.ts, g.orig, merged[i].data, merged[i].ts, merged[i].orig)
				}
				if wantSrc := tt.pattern[i%len(tt.pattern)]; g.src != wantSrc || g.index != next[wantSrc] {
					t.Fatalf("packet %d: source %d #%d, want %d #%d", i, g.src, g.index, wantSrc, next[wantSrc])
				}
				next[g.src]++
			}
			if stats.Packets != len(tt.seqs) || stats.OutOfOrder != 0 {
				t.Errorf("Merge() stats = %+v, want %d packets, 0 out of order", stats, len(tt.seqs))
			}
			for d := range tt.dumpers {
				if stats.PerSource[d] != len(per[d]) {
					t.Errorf("Merge() PerSource[%d] = %d, want %d", d, stats.PerSource[d], len(per[d]))
				}
			}
		})
	}
}

func recsOf(gs []got) []rec {
	r := make([]rec, len(gs))
	for i, g := range gs {
		r[i] = g.rec
	}
	return r
}

func abbrev(s []uint64) string {
	if len(s) <= 12 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v … %v (%d)", s[:6], s[len(s)-6:], len(s))
}

// filesOf builds one dumper file per list of sequence numbers, in the order
// given (which need not be sorted).
func filesOf(tb testing.TB, lists ...[]uint64) [][]byte {
	files := make([][]byte, len(lists))
	for d, l := range lists {
		recs := make([]rec, len(l))
		for i, s := range l {
			ts := s * 10 & roce.MirrorTimeMask
			f := mirrorFrame(tb, s, ts)
			recs[i] = rec{seq: s, ts: ts, data: f[:min(len(f), testSnaplen)], orig: len(f)}
		}
		files[d] = pcapFile(tb, recs)
	}
	return files
}

// TestMergeOrder covers hand-written source contents: explicit wraps, the
// wrong sequence space, sources out of order, duplicates.
func TestMergeOrder(t *testing.T) {
	const top40 = 1<<40 - 1
	tests := []struct {
		name      string
		opt       trace.MergeOptions
		sources   [][]uint64
		want      []uint64
		wantSrc   []int
		wantOOO   int
		wantCount []int
	}{
		{
			name:    "wrap40",
			sources: [][]uint64{{top40 - 2, 0, 3}, {top40 - 1, 1}, {top40, 2}},
			want:    []uint64{top40 - 2, top40 - 1, top40, 0, 1, 2, 3},
			wantSrc: []int{0, 1, 2, 0, 1, 2, 0},
		},
		{
			name:    "wrap40-first-packet-after-wrap-in-source-0",
			sources: [][]uint64{{0, 2}, {top40, 1}},
			want:    []uint64{top40, 0, 1, 2},
			wantSrc: []int{1, 0, 1, 0},
		},
		{
			name:    "wrap31-public-tool",
			opt:     trace.MergeOptions{Seq: trace.SeqSpaceLumina31},
			sources: [][]uint64{{0x7FFFFFFE, 1, 3}, {0x7FFFFFFF, 2}},
			want:    []uint64{0x7FFFFFFE, 0x7FFFFFFF, 1, 2, 3},
			wantSrc: []int{0, 1, 0, 1, 0},
		},
		{
			// The same trace read as 48-bit numbers: 1 is not after
			// 0x7FFFFFFF, so the merge is wrong and says so.
			name:    "wrap31-with-48-bit-space",
			sources: [][]uint64{{0x7FFFFFFE, 1, 3}, {0x7FFFFFFF, 2}},
			want:    []uint64{0x7FFFFFFE, 1, 3, 0x7FFFFFFF, 2},
			wantSrc: []int{0, 0, 0, 1, 1},
			wantOOO: 2,
		},
		{
			// A mask of 2^31-1 (0..0x7FFFFFFF, wrapping to 0) puts the
			// public tool's 1 two steps after 0x7FFFFFFF: the order is
			// still right here, but the integrity check would see a gap.
			name:    "wrap31-with-mask-space",
			opt:     trace.MergeOptions{Seq: trace.SeqSpace{Min: 0, Max: 1<<31 - 1}},
			sources: [][]uint64{{0x7FFFFFFE, 1, 3}, {0x7FFFFFFF, 2}},
			want:    []uint64{0x7FFFFFFE, 0x7FFFFFFF, 1, 2, 3},
			wantSrc: []int{0, 1, 0, 1, 0},
		},
		{
			name:    "source-out-of-order-is-not-reordered",
			sources: [][]uint64{{1, 3, 2, 5}, {4, 6}},
			want:    []uint64{1, 3, 2, 4, 5, 6},
			wantSrc: []int{0, 0, 0, 1, 0, 1},
			wantOOO: 1,
		},
		{
			name:    "duplicate-within-source",
			sources: [][]uint64{{1, 2, 2, 4}, {3}},
			want:    []uint64{1, 2, 2, 3, 4},
			wantSrc: []int{0, 0, 0, 1, 0},
		},
		{
			name:    "duplicate-across-sources-lower-source-first",
			sources: [][]uint64{{1, 3}, {2, 3}},
			want:    []uint64{1, 2, 3, 3},
			wantSrc: []int{0, 1, 0, 1},
		},
		{
			name:    "gaps-are-kept",
			sources: [][]uint64{{10, 40}, {20, 30}, {}},
			want:    []uint64{10, 20, 30, 40},
			wantSrc: []int{0, 1, 1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stats, err := collect(t, tt.opt, filesOf(t, tt.sources...))
			if err != nil {
				t.Fatalf("Merge() error = %v", err)
			}
			var srcs []int
			for _, g := range out {
				srcs = append(srcs, g.src)
			}
			if g := seqsOf(recsOf(out)); !slices.Equal(g, tt.want) || !slices.Equal(srcs, tt.wantSrc) {
				t.Errorf("Merge() = seqs %#x sources %v, want %#x %v", g, srcs, tt.want, tt.wantSrc)
			}
			if stats.OutOfOrder != tt.wantOOO {
				t.Errorf("Merge() OutOfOrder = %d, want %d", stats.OutOfOrder, tt.wantOOO)
			}
		})
	}
}

func TestSeqSpace(t *testing.T) {
	s40, s31 := trace.SeqSpace40, trace.SeqSpaceLumina31
	mask31 := trace.SeqSpace{Max: 1<<31 - 1}
	const top40 = 1<<40 - 1
	t.Run("Next", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			sp   trace.SeqSpace
			v    uint64
			want uint64
		}{
			{"40/1", s40, 1, 2},
			{"40/top", s40, top40, 0},
			{"zero-value/top", trace.SeqSpace{}, top40, 0},
			{"31/top", s31, 0x7FFFFFFF, 1},
			{"31/1", s31, 1, 2},
			{"31/out-of-range-0", s31, 0, 1},
			{"mask31/top", mask31, 0x7FFFFFFF, 0},
		} {
			if got := tt.sp.Next(tt.v); got != tt.want {
				t.Errorf("%s: %+v.Next(%#x) = %#x, want %#x", tt.name, tt.sp, tt.v, got, tt.want)
			}
		}
	})
	t.Run("Diff", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			sp   trace.SeqSpace
			a, b uint64
			want int64
		}{
			{"40/equal", s40, 5, 5, 0},
			{"40/next", s40, 6, 5, 1},
			{"40/prev", s40, 5, 6, -1},
			{"40/across-wrap", s40, 1, top40, 2},
			{"40/across-wrap-back", s40, top40, 1, -2},
			{"40/half", s40, 1 << 39, 0, 1 << 39},
			{"40/over-half", s40, 1<<39 + 1, 0, -(1<<39 - 1)},
			{"31/across-wrap", s31, 1, 0x7FFFFFFF, 1},
			{"31/across-wrap-2", s31, 3, 0x7FFFFFFE, 4},
			{"31/back", s31, 0x7FFFFFFF, 2, -2},
			{"mask31/across-wrap", mask31, 1, 0x7FFFFFFF, 2},
			{"31/max-forward", s31, 1 + (1<<30 - 1), 1, 1<<30 - 1},
			{"31/max-back", s31, 1 + 1<<30, 1, -(1<<30 - 1)},
		} {
			if got := tt.sp.Diff(tt.a, tt.b); got != tt.want {
				t.Errorf("%s: %+v.Diff(%#x, %#x) = %d, want %d", tt.name, tt.sp, tt.a, tt.b, got, tt.want)
			}
		}
	})
	t.Run("Add", func(t *testing.T) {
		if got := s31.Add(0x7FFFFFFE, 3); got != 2 {
			t.Errorf("Lumina31.Add(0x7FFFFFFE, 3) = %d, want 2", got)
		}
		if got := s40.Add(top40, 1<<40+2); got != 1 {
			t.Errorf("40.Add(top, 2^40+2) = %d, want 1", got)
		}
	})
	t.Run("Validate", func(t *testing.T) {
		for _, sp := range []trace.SeqSpace{{Min: 5, Max: 5}, {Min: 6, Max: 5}, {Max: 1 << 40}} {
			if err := sp.Validate(); !errors.Is(err, trace.ErrInvalid) {
				t.Errorf("%+v.Validate() = %v, want ErrInvalid", sp, err)
			}
		}
		for _, sp := range []trace.SeqSpace{{}, s40, s31, {Min: 0, Max: 1}} {
			if err := sp.Validate(); err != nil {
				t.Errorf("%+v.Validate() = %v, want nil", sp, err)
			}
		}
		if got := s31.Len(); got != 1<<31-1 {
			t.Errorf("Lumina31.Len() = %d, want %d", got, 1<<31-1)
		}
		if s31.Contains(0) || !s31.Contains(1) || s40.Contains(1<<40) {
			t.Error("Contains wrong at the edges")
		}
	})
}

func TestMirrorFields(t *testing.T) {
	f := mirrorFrame(t, 0x02030405AB, 0xA0B0C0D0E0F0)
	putMAC48(f[6:], roce.MirrorSeqField(3, 0x02030405AB))
	seq, ts, ok := trace.MirrorFields(f)
	if !ok || seq != 0x0602030405AB || ts != 0xA0B0C0D0E0F0 {
		t.Errorf("MirrorFields() = %#x, %#x, %v, want 0x0602030405ab, 0xa0b0c0d0e0f0, true", seq, ts, ok)
	}
	if sw, seq, ts, ok := trace.MirrorSwitchSeq(f); !ok || sw != 3 || seq != 0x02030405AB || ts != 0xA0B0C0D0E0F0 {
		t.Errorf("MirrorSwitchSeq() = %d, %#x, %#x, %v, want 3, 0x2030405ab, 0xa0b0c0d0e0f0, true", sw, seq, ts, ok)
	}
	if _, _, ok := trace.MirrorFields(f[:11]); ok {
		t.Error("MirrorFields(11 bytes) ok = true, want false")
	}
}

func TestMergeErrors(t *testing.T) {
	good := filesOf(t, []uint64{1, 3, 5, 7}, []uint64{2, 4, 6, 8})

	// A raw-IP pcap.
	var raw bytes.Buffer
	w, _ := trace.NewPcapWriter(&raw, 0, trace.LinkTypeRaw)
	w.WritePacket(0, make([]byte, 40), 0)

	// A dumper file whose third packet is 8 bytes long.
	var short bytes.Buffer
	w, _ = trace.NewPcapWriter(&short, 0, trace.LinkTypeEthernet)
	w.WritePacket(10, mirrorFrame(t, 2, 10), 0)
	w.WritePacket(30, mirrorFrame(t, 4, 30), 0)
	w.WritePacket(50, make([]byte, 8), 0)

	errOut := errors.New("disk full")
	tests := []struct {
		name     string
		files    [][]byte
		out      func(int, trace.Packet) error
		opt      trace.MergeOptions
		wantErr  error
		wantMsg  string
		wantSent int // packets emitted before the error
	}{
		{
			name:    "truncated",
			files:   [][]byte{good[0], good[1][:len(good[1])-10]},
			wantErr: trace.ErrTruncated, wantMsg: "trace: merge: dumper-1: trace: packet 3 at offset",
			wantSent: 6, // 1..6, then 7 is pending and 8 is cut
		},
		{
			name:    "not-ethernet",
			files:   [][]byte{good[0], raw.Bytes()},
			wantErr: trace.ErrNotMirrorCopy, wantMsg: "trace: merge: dumper-1: packet 0: not a mirror copy (link type RAW, want ETHERNET)",
		},
		{
			name:    "short-frame",
			files:   [][]byte{good[0], short.Bytes()},
			wantErr: trace.ErrNotMirrorCopy, wantMsg: "trace: merge: dumper-1: packet 2: not a mirror copy (frame of 8 bytes, want at least 12)",
			wantSent: 4, // 1, 2, 3, 4: reading 4's successor fails
		},
		{
			name:  "out-error",
			files: good,
			out: func(src int, p trace.Packet) error {
				if p.Index == 2 {
					return errOut
				}
				return nil
			},
			wantErr: errOut, wantMsg: "disk full", wantSent: 4,
		},
		{
			name:    "bad-space",
			files:   good,
			opt:     trace.MergeOptions{Seq: trace.SeqSpace{Min: 9, Max: 3}},
			wantErr: trace.ErrInvalid, wantMsg: "trace: merge: trace: sequence space 9..3: invalid argument",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.out
			if out == nil {
				out = func(int, trace.Packet) error { return nil }
			}
			stats, err := tt.opt.Merge(out, sources(t, tt.files)...)
			if !errors.Is(err, tt.wantErr) || !strings.HasPrefix(fmt.Sprint(err), tt.wantMsg) {
				t.Fatalf("Merge() error = %v, want %v starting %q", err, tt.wantErr, tt.wantMsg)
			}
			if stats.Packets != tt.wantSent {
				t.Errorf("Merge() stats.Packets = %d, want %d", stats.Packets, tt.wantSent)
			}
		})
	}
	t.Run("nil-reader", func(t *testing.T) {
		_, err := trace.Merge(func(int, trace.Packet) error { return nil }, trace.MergeSource{Name: "x"})
		if !errors.Is(err, trace.ErrInvalid) {
			t.Errorf("Merge(nil Reader) error = %v, want ErrInvalid", err)
		}
	})
}

func writeFiles(t *testing.T, dir string, files [][]byte) []string {
	t.Helper()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(dir, fmt.Sprintf("dumper-%d.pcap", i))
		if err := os.WriteFile(paths[i], f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

func readAllRecs(t *testing.T, path string) []rec {
	t.Helper()
	var out []rec
	err := trace.ReadFile(path, func(p trace.Packet) error {
		seq, ts, _ := trace.MirrorFields(p.Data)
		if uint64(p.TimeNs) != ts {
			t.Errorf("%s: packet %d: record time %d, want %d", path, p.Index, p.TimeNs, ts)
		}
		out = append(out, rec{seq, ts, bytes.Clone(p.Data), p.OrigLen})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestMergeFiles(t *testing.T) {
	merged, per := distribute(t, run(trace.SeqSpace40, 1<<40-100, 300), 3, []int{0, 1, 1, 2, 2, 2})
	files := [][]byte{pcapFile(t, per[0]), pcapFile(t, per[1]), pcapFile(t, per[2])}

	t.Run("ok", func(t *testing.T) {
		dir := t.TempDir()
		paths := writeFiles(t, dir, files)
		outPath := filepath.Join(dir, "merged.pcap")
		stats, err := trace.MergeFiles(outPath, 0, paths...)
		if err != nil {
			t.Fatalf("MergeFiles() error = %v", err)
		}
		if stats.Packets != 300 || !slices.Equal(stats.PerSource, []int{50, 100, 150}) {
			t.Errorf("MergeFiles() stats = %+v, want 300 packets, [50 100 150]", stats)
		}
		got := readAllRecs(t, outPath)
		if len(got) != len(merged) {
			t.Fatalf("merged file has %d packets, want %d", len(got), len(merged))
		}
		for i := range got {
			g, w := got[i], merged[i]
			if g.seq != w.seq || g.ts != w.ts || g.orig != w.orig || !bytes.Equal(g.data, w.data) {
				t.Fatalf("merged packet %d = seq %d ts %d orig %d, want seq %d ts %d orig %d (or data differs)",
					i, g.seq, g.ts, g.orig, w.seq, w.ts, w.orig)
			}
		}
		fi, err := os.Stat(outPath)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("merged file mode = %v, want 0644", fi.Mode().Perm())
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"dumper-0.pcap", "dumper-1.pcap", "dumper-2.pcap", "merged.pcap"}) {
			t.Errorf("directory after MergeFiles = %v, want the inputs and merged.pcap only", names)
		}
		r, err := os.Open(outPath)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rd, err := trace.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		if !rd.Nanosecond() || rd.Format() != trace.FormatPcap || rd.LinkType() != trace.LinkTypeEthernet {
			t.Errorf("merged file: nano %v format %v link %v, want true pcap ETHERNET", rd.Nanosecond(), rd.Format(), rd.LinkType())
		}
	})

	t.Run("error-leaves-nothing", func(t *testing.T) {
		dir := t.TempDir()
		bad := slices.Clone(files)
		bad[2] = bad[2][:len(bad[2])-5]
		paths := writeFiles(t, dir, bad)
		outPath := filepath.Join(dir, "merged.pcap")
		_, err := trace.MergeFiles(outPath, 0, paths...)
		if !errors.Is(err, trace.ErrTruncated) || !strings.Contains(err.Error(), paths[2]) {
			t.Fatalf("MergeFiles() error = %v, want ErrTruncated naming %s", err, paths[2])
		}
		if _, err := os.Stat(outPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after a failed merge, Stat(outPath) error = %v, want not exist", err)
		}
		if names := dirNames(t, dir); len(names) != 3 {
			t.Errorf("directory after failed MergeFiles = %v, want the 3 inputs only", names)
		}
	})

	t.Run("error-keeps-old-output", func(t *testing.T) {
		dir := t.TempDir()
		paths := writeFiles(t, dir, [][]byte{files[0], []byte("not a pcap file")})
		outPath := filepath.Join(dir, "merged.pcap")
		if err := os.WriteFile(outPath, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := trace.MergeFiles(outPath, 0, paths...)
		if !errors.Is(err, trace.ErrNotPcap) {
			t.Fatalf("MergeFiles() error = %v, want ErrNotPcap", err)
		}
		if b, _ := os.ReadFile(outPath); string(b) != "old" {
			t.Errorf("outPath after failed merge = %q, want %q", b, "old")
		}
	})

	t.Run("missing-dir", func(t *testing.T) {
		dir := t.TempDir()
		paths := writeFiles(t, dir, files)
		if _, err := trace.MergeFiles(filepath.Join(dir, "no", "such", "merged.pcap"), 0, paths...); err == nil {
			t.Error("MergeFiles(into a missing directory) error = nil, want an error")
		}
	})
}

// TestMergeAllocs checks that Merge allocates nothing per packet: merging
// 100 times more packets costs no more allocations (the constant part is
// the Readers, the heads and the stats).
func TestMergeAllocs(t *testing.T) {
	const pattern = 4
	build := func(n int) [][]byte {
		files := make([][]byte, pattern)
		per := make([][]rec, pattern)
		f := mirrorFrame(t, 1, 0)
		for i := range n {
			g := slices.Clone(f)
			seq, ts := uint64(i+1), uint64(i)*50
			putMAC48(g[0:], ts)
			putMAC48(g[6:], seq)
			per[i%pattern] = append(per[i%pattern], rec{seq, ts, g, len(g)})
		}
		for d := range files {
			files[d] = pcapFile(t, per[d])
		}
		return files
	}
	small, large := build(400), build(40000)
	bw := bufio.NewWriterSize(io.Discard, 64<<10)
	pw, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	out := func(_ int, p trace.Packet) error { return pw.WritePacket(p.TimeNs, p.Data, p.OrigLen) }
	readers := make([]*bytes.Reader, pattern)
	for i := range readers {
		readers[i] = bytes.NewReader(nil)
	}
	srcs := make([]trace.MergeSource, pattern)
	allocs := func(files [][]byte, want int) float64 {
		return testing.AllocsPerRun(5, func() {
			for i := range srcs {
				readers[i].Reset(files[i])
				r, err := trace.NewReader(readers[i])
				if err != nil {
					t.Fatal(err)
				}
				srcs[i] = trace.MergeSource{Name: "d", Reader: r}
			}
			stats, err := trace.Merge(out, srcs...)
			if err != nil || stats.Packets != want {
				t.Fatalf("Merge() = %d packets, %v, want %d", stats.Packets, err, want)
			}
		})
	}
	a, b := allocs(small, 400), allocs(large, 40000)
	if b != a {
		t.Errorf("Merge allocations: %v for 400 packets, %v for 40000, want equal (0 per packet)", a, b)
	}
}

func putMAC48(b []byte, v uint64) {
	for i := 5; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// TestMergeRandom compares Merge with the obvious reference, sorting by
// position in the switch's numbering, on random deals of consecutive
// numbers (some across a wrap) to random numbers of sources.
func TestMergeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	spaces := []trace.SeqSpace{trace.SeqSpace40, trace.SeqSpaceLumina31, {Min: 10, Max: 99}}
	for iter := range 40 {
		sp := spaces[iter%len(spaces)]
		n := rng.IntN(int(min(300, sp.Len()/2))) // serial order holds within half a cycle
		first := sp.Add(sp.Min, sp.Len()-uint64(rng.IntN(2*n+1)))
		want := run(sp, first, n)
		k := 1 + rng.IntN(6)
		lists := make([][]uint64, k)
		var wantSrc []int
		for _, s := range want {
			d := rng.IntN(k)
			lists[d] = append(lists[d], s)
			wantSrc = append(wantSrc, d)
		}
		out, stats, err := collect(t, trace.MergeOptions{Seq: sp}, filesOf(t, lists...))
		if err != nil {
			t.Fatalf("iteration %d: Merge() error = %v", iter, err)
		}
		var gotSrc []int
		for _, g := range out {
			gotSrc = append(gotSrc, g.src)
		}
		if got := seqsOf(recsOf(out)); !slices.Equal(got, want) || !slices.Equal(gotSrc, wantSrc) || stats.OutOfOrder != 0 {
			t.Fatalf("iteration %d (space %+v, %d sources): Merge() = %v, want %v", iter, sp, k, abbrev(got), abbrev(want))
		}
	}
}
