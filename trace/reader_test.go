package trace

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

const (
	t0Sec  = 1_700_000_000                   // a capture time, in seconds
	t0Usec = t0Sec*1_000_000 + 123_456       // ... with microseconds
	t0Nsec = t0Sec*1_000_000_000 + 123456789 // ... with nanoseconds
)

// readCase is a hand-crafted, valid input and what reading it must give.
type readCase struct {
	name    string
	in      []byte
	format  Format
	link    LinkType
	snaplen int
	nano    bool
	want    []Packet
}

var readCases = []readCase{
	{
		name:   "pcap big-endian microseconds",
		in:     cat(pcapHeader(be, pcapMagicMicro, 65535, 1), pcapRecord(be, t0Sec, 123456, seq(0, 60), 60), pcapRecord(be, t0Sec+1, 999999, seq(1, 3), 70)),
		format: FormatPcap, link: LinkTypeEthernet, snaplen: 65535,
		want: []Packet{
			{Index: 0, TimeNs: t0Usec * 1000, Data: seq(0, 60), OrigLen: 60, LinkType: 1},
			{Index: 1, TimeNs: (t0Sec+1)*1e9 + 999999000, Data: seq(1, 3), OrigLen: 70, LinkType: 1},
		},
	},
	{
		name:   "pcap little-endian microseconds",
		in:     cat(pcapHeader(le, pcapMagicMicro, 0, 101), pcapRecord(le, t0Sec, 123456, seq(5, 20), 20)),
		format: FormatPcap, link: LinkTypeRaw, snaplen: 0,
		want: []Packet{{Index: 0, TimeNs: t0Usec * 1000, Data: seq(5, 20), OrigLen: 20, LinkType: 101}},
	},
	{
		name:   "pcap big-endian nanoseconds",
		in:     cat(pcapHeader(be, pcapMagicNano, 128, 1), pcapRecord(be, t0Sec, 123456789, seq(0, 1), 1)),
		format: FormatPcap, link: LinkTypeEthernet, snaplen: 128, nano: true,
		want: []Packet{{Index: 0, TimeNs: t0Nsec, Data: seq(0, 1), OrigLen: 1, LinkType: 1}},
	},
	{
		name: "pcap caplen above origlen and snaplen tolerated",
		in:   cat(pcapHeader(le, pcapMagicNano, 8, 1), pcapRecord(le, 0, 0, seq(0, 10), 4), pcapRecord(le, 0, 1, nil, 0)),
		// The FCS bits of the link-type field are ignored.
		format: FormatPcap, link: LinkTypeEthernet, snaplen: 8, nano: true,
		want: []Packet{
			{Index: 0, TimeNs: 0, Data: seq(0, 10), OrigLen: 10, LinkType: 1},
			{Index: 1, TimeNs: 1, Data: nil, OrigLen: 0, LinkType: 1},
		},
	},
	{
		name:   "pcap link type with FCS bits",
		in:     cat(pcapHeader(le, pcapMagicNano, 0, 1|1<<26|4<<28), pcapRecord(le, 0, 7, seq(0, 4), 4)),
		format: FormatPcap, link: LinkTypeEthernet, nano: true,
		want: []Packet{{Index: 0, TimeNs: 7, Data: seq(0, 4), OrigLen: 4, LinkType: 1}},
	},
	{
		name:   "pcap header only",
		in:     pcapHeader(le, pcapMagicNano, 262144, 1),
		format: FormatPcap, link: LinkTypeEthernet, snaplen: 262144, nano: true,
	},
	{
		name:   "pcapng default resolution is microseconds",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0), ngEPB(le, 0, t0Usec, seq(0, 61), 61)),
		format: FormatPcapng, link: LinkTypeEthernet,
		want: []Packet{{Index: 0, TimeNs: t0Usec * 1000, Data: seq(0, 61), OrigLen: 61, LinkType: 1}},
	},
	{
		name:   "pcapng if_tsresol 6",
		in:     cat(ngSHB(le), ngIDB(le, 1, 9000, tsresol(le, 6)), ngEPB(le, 0, t0Usec, seq(0, 62), 100)),
		format: FormatPcapng, link: LinkTypeEthernet, snaplen: 9000,
		want: []Packet{{Index: 0, TimeNs: t0Usec * 1000, Data: seq(0, 62), OrigLen: 100, LinkType: 1}},
	},
	{
		name:   "pcapng if_tsresol 9",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 9)), ngEPB(le, 0, t0Nsec, seq(0, 63), 63)),
		format: FormatPcapng, link: LinkTypeEthernet, nano: true,
		want: []Packet{{Index: 0, TimeNs: t0Nsec, Data: seq(0, 63), OrigLen: 63, LinkType: 1}},
	},
	{
		name:   "pcapng if_tsresol 3 (milliseconds)",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 3)), ngEPB(le, 0, t0Sec*1000+5, seq(0, 4), 4)),
		format: FormatPcapng, link: LinkTypeEthernet,
		want: []Packet{{Index: 0, TimeNs: t0Sec*1e9 + 5e6, Data: seq(0, 4), OrigLen: 4, LinkType: 1}},
	},
	{
		name:   "pcapng if_tsresol 12 (picoseconds)",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 12)), ngEPB(le, 0, 1_000_000_123_456, seq(0, 4), 4)),
		format: FormatPcapng, link: LinkTypeEthernet, nano: true,
		want: []Packet{{Index: 0, TimeNs: 1_000_000_123, Data: seq(0, 4), OrigLen: 4, LinkType: 1}},
	},
	{
		name: "pcapng if_tsresol base 2",
		in: cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 0x80|20)),
			ngEPB(le, 0, t0Sec<<20|1<<19, seq(0, 5), 5), // t0 + 0.5 s
			ngEPB(le, 0, 3, seq(0, 5), 5)),              // 3 * 2^-20 s = 2861.02... ns
		format: FormatPcapng, link: LinkTypeEthernet,
		want: []Packet{
			{Index: 0, TimeNs: t0Sec*1e9 + 5e8, Data: seq(0, 5), OrigLen: 5, LinkType: 1},
			{Index: 1, TimeNs: 2861, Data: seq(0, 5), OrigLen: 5, LinkType: 1},
		},
	},
	{
		name:   "pcapng if_tsresol base 2 seconds",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 0x80)), ngEPB(le, 0, t0Sec, seq(0, 5), 5)),
		format: FormatPcapng, link: LinkTypeEthernet,
		want: []Packet{{Index: 0, TimeNs: t0Sec * 1e9, Data: seq(0, 5), OrigLen: 5, LinkType: 1}},
	},
	{
		name:   "pcapng if_tsresol base 2 nanosecond class",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 0x80|32)), ngEPB(le, 0, t0Sec<<32|1<<31, seq(0, 5), 5)),
		format: FormatPcapng, link: LinkTypeEthernet, nano: true,
		want: []Packet{{Index: 0, TimeNs: t0Sec*1e9 + 5e8, Data: seq(0, 5), OrigLen: 5, LinkType: 1}},
	},
	{
		name:   "pcapng if_tsoffset",
		in:     cat(ngSHB(le), ngIDB(le, 1, 0, tsoffset(le, t0Sec), tsresol(le, 9)), ngEPB(le, 0, 42, seq(0, 6), 6)),
		format: FormatPcapng, link: LinkTypeEthernet, nano: true,
		want: []Packet{{Index: 0, TimeNs: t0Sec*1e9 + 42, Data: seq(0, 6), OrigLen: 6, LinkType: 1}},
	},
	{
		name: "pcapng simple packet block",
		in: cat(ngSHB(le), ngIDB(le, 1, 4), ngEPB(le, 0, 1, seq(0, 4), 10),
			ngSPB(le, 10, seq(0, 10)), // snaplen 4 limits the data
			ngSPB(le, 2, seq(7, 2))),
		format: FormatPcapng, link: LinkTypeEthernet, snaplen: 4,
		want: []Packet{
			{Index: 0, TimeNs: 1000, Data: seq(0, 4), OrigLen: 10, LinkType: 1},
			{Index: 1, TimeNs: 0, Data: seq(0, 4), OrigLen: 10, LinkType: 1},
			{Index: 2, TimeNs: 0, Data: seq(7, 2), OrigLen: 2, LinkType: 1},
		},
	},
	{
		name:   "pcapng simple packet block without snaplen",
		in:     cat(ngSHB(be), ngIDB(be, 1, 0), ngSPB(be, 7, seq(3, 7))),
		format: FormatPcapng, link: LinkTypeEthernet,
		want: []Packet{{Index: 0, Data: seq(3, 7), OrigLen: 7, LinkType: 1}},
	},
	{
		name: "pcapng unknown blocks and options skipped",
		in: cat(ngSHB(le),
			ngBlock(le, 4, seq(0, 17)),                                      // name resolution block
			ngIDB(le, 1, 0, ngOpt(le, 2, []byte("eth0")), tsresol(le, 9)),   // if_name
			ngBlock(le, 0x00000BAD, seq(0, 40)),                             // custom block
			ngEPB(le, 0, 5, seq(0, 7), 7, ngOpt(le, 2, []byte{0, 0, 0, 1})), // epb_flags
			ngBlock(le, 5, seq(0, 20)),                                      // interface statistics block
			ngBlock(le, 0x0A, seq(0, 8)),                                    // decryption secrets block
			ngEPB(le, 0, 6, seq(1, 8), 8)),
		format: FormatPcapng, link: LinkTypeEthernet, nano: true,
		want: []Packet{
			{Index: 0, TimeNs: 5, Data: seq(0, 7), OrigLen: 7, LinkType: 1},
			{Index: 1, TimeNs: 6, Data: seq(1, 8), OrigLen: 8, LinkType: 1},
		},
	},
	{
		name: "pcapng two sections with different byte orders",
		in: cat(ngSHB(le), ngIDB(le, 1, 1500, tsresol(le, 9)), ngIDB(le, 1, 0), ngEPB(le, 1, 9, seq(0, 9), 9),
			ngSHB(be), ngIDB(be, 101, 0, tsresol(be, 9)), ngEPB(be, 0, t0Nsec, seq(2, 11), 11), ngOPB(be, 0, 8, seq(3, 3), 3)),
		format: FormatPcapng, link: LinkTypeEthernet, snaplen: 1500, nano: true,
		want: []Packet{
			{Index: 0, TimeNs: 9000, Data: seq(0, 9), OrigLen: 9, LinkType: 1, Interface: 1},
			{Index: 1, TimeNs: t0Nsec, Data: seq(2, 11), OrigLen: 11, LinkType: 101},
			{Index: 2, TimeNs: 8, Data: seq(3, 3), OrigLen: 3, LinkType: 101},
		},
	},
	{
		name: "pcapng two interfaces with different link types",
		in: cat(ngSHB(le), ngIDB(le, 1, 0, tsresol(le, 9)), ngIDB(le, 101, 0, tsresol(le, 6)),
			ngEPB(le, 1, 2, seq(0, 20), 20), ngEPB(le, 0, 3, seq(1, 14), 14), ngOPB(le, 1, 4, seq(2, 2), 0)),
		format: FormatPcapng, link: LinkTypeEthernet, nano: true,
		want: []Packet{
			{Index: 0, TimeNs: 2000, Data: seq(0, 20), OrigLen: 20, LinkType: 101, Interface: 1},
			{Index: 1, TimeNs: 3, Data: seq(1, 14), OrigLen: 14, LinkType: 1},
			{Index: 2, TimeNs: 4000, Data: seq(2, 2), OrigLen: 2, LinkType: 101, Interface: 1},
		},
	},
	{
		name:   "pcapng section header only",
		in:     ngSHB(le),
		format: FormatPcapng,
	},
}

func TestReaderHandCrafted(t *testing.T) {
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			r, got, err := readAll(tc.in)
			if err != nil {
				t.Fatalf("readAll = %v, want no error", err)
			}
			if f := r.Format(); f != tc.format {
				t.Errorf("Format() = %q, want %q", f, tc.format)
			}
			if l := r.LinkType(); l != tc.link {
				t.Errorf("LinkType() = %v, want %v", l, tc.link)
			}
			if s := r.Snaplen(); s != tc.snaplen {
				t.Errorf("Snaplen() = %d, want %d", s, tc.snaplen)
			}
			if n := r.Nanosecond(); n != tc.nano {
				t.Errorf("Nanosecond() = %v, want %v", n, tc.nano)
			}
			checkPackets(t, "Next", got, tc.want)
		})
	}
}

// errCase is a damaged input: reading it must give wantPkts packets, then an
// error wrapping want whose message contains every string in msg.
type errCase struct {
	name     string
	in       []byte
	wantPkts int
	want     error
	msg      []string
	notMsg   []string // the input's bytes, never quoted (issue #38, point 8)
}

var (
	// Three 60-byte records at offsets 24, 100 and 176.
	pcapBase = cat(pcapHeader(le, pcapMagicNano, 0, 1), pcapRecord(le, 1, 0, seq(0, 60), 60), pcapRecord(le, 2, 0, seq(1, 60), 60))
	pcapRec  = pcapRecord(le, 3, 0, seq(2, 60), 60)
	// An SHB (28 bytes) and an IDB (20 bytes), then 92-byte packet blocks.
	ngBase = cat(ngSHB(le), ngIDB(le, 1, 0))
	ngRec  = ngEPB(le, 0, 1, seq(0, 60), 60)
)

// withUint32 returns a copy of b with the 32-bit little-endian value at off
// replaced.
func withUint32(b []byte, off int, v uint32) []byte {
	b = cat(b)
	le.PutUint32(b[off:], v)
	return b
}

var errCases = []errCase{
	{name: "empty file", in: nil, want: ErrNotPcap, msg: []string{"empty"}},
	{name: "3-byte file", in: []byte("abc"), want: ErrNotPcap, msg: []string{"trace: not a pcap or pcapng file (file of 3 bytes)"}, notMsg: []string{"61 62 63", "abc"}},
	{name: "3 bytes of pcap magic", in: []byte{0xd4, 0xc3, 0xb2}, want: ErrTruncated},
	{name: "bad magic", in: []byte("\x7fELF\x02\x01\x01\x00........"), want: ErrNotPcap, msg: []string{"trace: not a pcap or pcapng file (unknown magic number)"}, notMsg: []string{"0x7f454c46", "ELF"}},
	{name: "text file", in: []byte("root:$6$salt$hash:19000:0:99999:7:::\n"), want: ErrNotPcap, msg: []string{"not a pcap or pcapng file"}, notMsg: []string{"0x726f6f74", "root"}},
	{name: "truncated pcap file header", in: pcapBase[:10], want: ErrTruncated, msg: []string{"file header", "want 24 bytes, have 10"}},
	{name: "unsupported pcap version", in: cat(withUint32(pcapHeader(le, pcapMagicNano, 0, 1), 4, 3), ngRec), want: ErrCorrupt, msg: []string{"version 3.0"}},
	{
		name: "truncated record header", in: cat(pcapBase, pcapRec[:5]), wantPkts: 2, want: ErrTruncated,
		msg: []string{"packet 2 at offset 176", "want 16 bytes, have 5"},
	},
	{
		name: "truncated record data", in: cat(pcapBase, pcapRec[:36]), wantPkts: 2, want: ErrTruncated,
		msg: []string{"trace: packet 2 at offset 176: truncated record (want 76 bytes, have 36)"},
	},
	{
		name: "truncated record data after header", in: cat(pcapBase, pcapRec[:16]), wantPkts: 2, want: ErrTruncated,
		msg: []string{"packet 2 at offset 176", "want 76 bytes, have 16"},
	},
	{
		name: "captured length above MaxPacketSize", in: cat(pcapBase, withUint32(pcapRec, 8, MaxPacketSize+1)), wantPkts: 2, want: ErrCorrupt,
		msg: []string{"packet 2 at offset 176", "262145"},
	},
	{name: "truncated section header", in: ngBase[:10], want: ErrTruncated},
	{name: "truncated section header body", in: ngBase[:20], want: ErrTruncated, msg: []string{"want 28 bytes, have 20"}},
	{name: "bad byte-order magic", in: withUint32(ngBase, 8, 0x11223344), want: ErrNotPcap, msg: []string{"bad byte-order magic"}, notMsg: []string{"0x11223344"}},
	{name: "bad byte-order magic in second section", in: cat(ngBase, withUint32(ngSHB(le), 8, 0x11223344)), want: ErrCorrupt, msg: []string{"offset 48"}},
	{name: "unsupported pcapng version", in: withUint32(ngBase, 12, 2), want: ErrCorrupt, msg: []string{"version 2.0"}},
	{name: "truncated interface description", in: ngBase[:40], want: ErrTruncated, msg: []string{"offset 28", "want 20 bytes, have 12"}},
	{
		name: "truncated packet block", in: cat(ngBase, ngRec, ngRec[:50]), wantPkts: 1, want: ErrTruncated,
		msg: []string{"packet 1 at offset 140", "want 92 bytes, have 50"},
	},
	{
		name: "truncated packet block header", in: cat(ngBase, ngRec, ngRec[:20]), wantPkts: 1, want: ErrTruncated,
		msg: []string{"packet 1 at offset 140", "have 20"},
	},
	{
		name: "packet block without trailer", in: cat(ngBase, ngRec, ngRec[:88]), wantPkts: 1, want: ErrTruncated,
		msg: []string{"packet 1 at offset 140", "want 92 bytes, have 88"},
	},
	{name: "truncated block header", in: cat(ngBase, ngRec, ngRec[:6]), wantPkts: 1, want: ErrTruncated, msg: []string{"offset 140", "want 8 bytes, have 6"}},
	{
		name: "truncated skipped block", in: cat(ngBase, ngBlock(le, 0xBAD, seq(0, 100))[:60]), want: ErrTruncated,
		msg: []string{"offset 48", "want 112 bytes, have 60"},
	},
	{name: "block length not a multiple of 4", in: cat(ngBase, withUint32(ngBlock(le, 0xBAD, seq(0, 8)), 4, 18)), want: ErrCorrupt, msg: []string{"bad block length 18"}},
	{name: "block length below 12", in: cat(ngBase, withUint32(ngBlock(le, 0xBAD, nil), 4, 8)), want: ErrCorrupt, msg: []string{"bad block length 8"}},
	{name: "block length above MaxBlockSize", in: cat(ngBase, withUint32(ngBlock(le, 0xBAD, nil), 4, 0x7ffffffc)), want: ErrCorrupt},
	{name: "packet block length below 32", in: cat(ngBase, withUint32(ngRec, 4, 28)), want: ErrCorrupt, msg: []string{"packet 0 at offset 48"}},
	{name: "trailing length mismatch", in: cat(ngBase, ngRec, withUint32(ngRec, 88, 96)), wantPkts: 1, want: ErrCorrupt, msg: []string{"trailing length 96"}},
	{name: "trailing length mismatch in skipped block", in: cat(ngBase, withUint32(ngBlock(le, 0xBAD, nil), 8, 16)), want: ErrCorrupt},
	{name: "trailing length mismatch in interface block", in: cat(ngSHB(le), withUint32(ngIDB(le, 1, 0), 16, 24)), want: ErrCorrupt},
	{
		name: "packet for unknown interface", in: cat(ngBase, ngRec, ngEPB(le, 3, 1, seq(0, 60), 60)), wantPkts: 1, want: ErrCorrupt,
		msg: []string{"packet 1 at offset 140", "unknown interface 3"},
	},
	{name: "packet before any interface", in: cat(ngSHB(le), ngRec), want: ErrCorrupt, msg: []string{"unknown interface 0"}},
	{name: "interfaces reset by a new section", in: cat(ngBase, ngSHB(be), ngEPB(be, 0, 1, nil, 0)), want: ErrCorrupt},
	{name: "simple packet before any interface", in: cat(ngSHB(le), ngSPB(le, 4, seq(0, 4))), want: ErrCorrupt},
	{name: "captured length overruns block", in: cat(ngBase, withUint32(ngRec, 20, 61)), want: ErrCorrupt, msg: []string{"captured length 61 overruns"}},
	{name: "packet block captured length above MaxPacketSize", in: cat(ngBase, withUint32(ngRec, 20, MaxPacketSize+1)), want: ErrCorrupt},
	{name: "simple packet above MaxPacketSize", in: cat(ngBase, ngSPB(le, MaxPacketSize+1, make([]byte, MaxPacketSize+1))), want: ErrCorrupt},
	{name: "option overruns block", in: cat(ngSHB(le), withUint32(ngIDB(le, 1, 0, tsresol(le, 9)), 16, 9|40<<16)), want: ErrCorrupt, msg: []string{"overruns"}},
	{name: "empty if_tsresol", in: cat(ngSHB(le), ngIDB(le, 1, 0, ngOpt(le, ngOptTsresol, nil))), want: ErrCorrupt},
	{name: "short if_tsoffset", in: cat(ngSHB(le), ngIDB(le, 1, 0, ngOpt(le, ngOptTsoffset, []byte{1, 2, 3, 4}))), want: ErrCorrupt},
}

func TestReaderErrors(t *testing.T) {
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := readAll(tc.in)
			if len(got) != tc.wantPkts {
				t.Errorf("got %d packets before the error, want %d", len(got), tc.wantPkts)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("readAll error = %v, want %v", err, tc.want)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not contain %q", err, m)
				}
			}
			for _, m := range tc.notMsg {
				if strings.Contains(err.Error(), m) {
					t.Errorf("error %q quotes the input: %q", err, m)
				}
			}
		})
	}
}

// TestReaderErrorSticky checks that an error is returned again by later
// calls, and that io.EOF is, too.
func TestReaderErrorSticky(t *testing.T) {
	for _, in := range [][]byte{cat(pcapBase, pcapRec[:30]), pcapBase, cat(ngBase, ngRec[:40])} {
		r, _, err := readAll(in)
		if err == nil {
			err = io.EOF
		}
		for range 3 {
			if _, err2 := r.Next(); err2 != err {
				t.Errorf("Next after %v = %v, want the same error", err, err2)
			}
		}
	}
}

// TestReaderBufferReuse checks that a packet's data is valid until the
// next call and cannot be appended to in place (the reader reuses its
// buffers afterwards: TestReaderNextAllocs).
func TestReaderBufferReuse(t *testing.T) {
	in := cat(pcapHeader(le, pcapMagicNano, 0, 1), pcapRecord(le, 0, 0, seq(0, 100), 100), pcapRecord(le, 0, 0, seq(50, 100), 100))
	r, err := NewReader(strings.NewReader(string(in)))
	if err != nil {
		t.Fatal(err)
	}
	p0, _ := r.Next()
	if !bytes.Equal(p0.Data, seq(0, 100)) {
		t.Fatalf("first packet data = %v, want seq(0, 100)", p0.Data)
	}
	p1, _ := r.Next()
	if !bytes.Equal(p1.Data, seq(50, 100)) {
		t.Fatalf("second packet data = %v, want seq(50, 100)", p1.Data)
	}
	for i, p := range []Packet{p0, p1} {
		if cap(p.Data) != len(p.Data) {
			t.Errorf("packet %d: cap(Data) = %d, want len(Data) = %d, so that appends cannot clobber the buffer", i, cap(p.Data), len(p.Data))
		}
	}
}

// TestReaderChunked reads pcap records of every size, up to more than the
// reader's buffer, from inputs delivered whole, one byte at a time and in
// odd chunks (by Next and ReadPacket): records that straddle the buffered bytes and records as
// large as the buffer or larger read as the ones inside it.
func TestReaderChunked(t *testing.T) {
	var recs [][]byte
	parts := [][]byte{pcapHeader(le, pcapMagicNano, 0, 1)}
	for i, size := 0, 0; size < 3*readerBufSize; i++ {
		n := (i * 7919) % 3000
		switch i % 97 {
		case 5:
			n = MaxPacketSize - i%7 // the record is larger than the buffer
		case 50:
			n = readerBufSize - pcapRecordHeaderLen - i%2 // as large as it
		}
		d := seq(i, n)
		recs = append(recs, d)
		parts = append(parts, pcapRecord(le, uint32(i), 0, d, uint32(n+i%3)))
		size += n + pcapRecordHeaderLen
	}
	in := cat(parts...)
	for name, src := range map[string]func() io.Reader{
		"whole":   func() io.Reader { return bytes.NewReader(in) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in)) },
		"half":    func() io.Reader { return iotest.HalfReader(bytes.NewReader(in)) },
	} {
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(src())
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range recs {
				var p Packet
				var err error
				if i%2 == 0 {
					p, err = r.Next()
				} else {
					err = r.ReadPacket(&p)
				}
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if p.Index != i || p.TimeNs != int64(i)*1e9 || !bytes.Equal(p.Data, want) || p.OrigLen != max(len(want), len(want)+i%3) || cap(p.Data) != len(p.Data) {
					t.Fatalf("packet %d: index %d time %d len %d orig %d, want len %d", i, p.Index, p.TimeNs, len(p.Data), p.OrigLen, len(want))
				}
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("after the last packet: %v, want EOF", err)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pcap")
	if err := os.WriteFile(good, readCases[0].in, 0o644); err != nil {
		t.Fatal(err)
	}
	var got []Packet
	err := ReadFile(good, func(p Packet) error {
		p.Data = append([]byte(nil), p.Data...)
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadFile(good) = %v, want nil", err)
	}
	checkPackets(t, "ReadFile", got, readCases[0].want)

	stop := errors.New("stop")
	calls := 0
	err = ReadFile(good, func(Packet) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("ReadFile(fn returning stop) = %v after %d calls, want stop after 1", err, calls)
	}

	bad := filepath.Join(dir, "bad.pcap")
	if err := os.WriteFile(bad, cat(pcapBase, pcapRec[:36]), 0o644); err != nil {
		t.Fatal(err)
	}
	calls = 0
	err = ReadFile(bad, func(Packet) error { calls++; return nil })
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), bad) || calls != 2 {
		t.Errorf("ReadFile(truncated) = %v after %d packets, want ErrTruncated naming the file after 2", err, calls)
	}

	if err := ReadFile(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestTimestampConversion(t *testing.T) {
	tests := []struct {
		resol byte
		ts    uint64
		want  int64
	}{
		{6, 1, 1000},
		{9, 1, 1},
		{0, 2, 2e9},
		{10, 25, 2},
		{29, math.MaxUint64, 0},
		{127, math.MaxUint64, 0},
		{28, math.MaxUint64, 1}, // 1.8e19 units of 1e-28 s = 1.8 ns
		{0x80, 3, 3e9},
		{0x80 | 1, 3, 15e8},
		{0x80 | 64, 1 << 63, 5e8},
		{0x80 | 127, math.MaxUint64, 0},
	}
	for _, tc := range tests {
		var ifc ngIface
		ifc.setResolution(tc.resol)
		if got := ifc.nanos(tc.ts); got != tc.want {
			t.Errorf("nanos(resol %#x, %d) = %d, want %d", tc.resol, tc.ts, got, tc.want)
		}
	}
}

func TestLinkTypeString(t *testing.T) {
	for lt, want := range map[LinkType]string{LinkTypeEthernet: "ETHERNET", LinkTypeRaw: "RAW", 300: "LinkType(300)"} {
		if got := lt.String(); got != want {
			t.Errorf("LinkType(%d).String() = %q, want %q", uint16(lt), got, want)
		}
	}
}

// errAfterReader returns data, then err instead of io.EOF.
type errAfterReader struct {
	data []byte
	err  error
}

func (r *errAfterReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReaderIOError checks that a read failure other than the end of input
// is passed on, not reported as truncation.
func TestReaderIOError(t *testing.T) {
	boom := errors.New("boom")
	for _, in := range [][]byte{nil, pcapBase[:10], pcapBase, cat(pcapBase, pcapRec[:30]), ngBase, cat(ngBase, ngRec[:40])} {
		r, err := NewReader(&errAfterReader{data: in, err: boom})
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, boom) || isSentinel(err) {
			t.Errorf("reading %d bytes then failing: error = %v, want one wrapping only %v", len(in), err, boom)
		}
	}
}
