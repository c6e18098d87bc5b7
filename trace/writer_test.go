package trace

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// packetWriter is what both writers have in common.
type packetWriter interface {
	WritePacket(tsNanos int64, data []byte, origLen int) error
}

var (
	_ packetWriter = (*PcapWriter)(nil)
	_ packetWriter = (*PcapngWriter)(nil)
)

// newWriter creates a writer of the given format.
func newWriter(format Format, w io.Writer, snaplen int, lt LinkType) (packetWriter, error) {
	if format == FormatPcap {
		return NewPcapWriter(w, snaplen, lt)
	}
	return NewPcapngWriter(w, snaplen, lt)
}

func TestWriterHeaders(t *testing.T) {
	tests := []struct {
		format  Format
		snaplen int
		want    string
	}{
		{FormatPcap, 0, "4d3cb2a1" + "0200" + "0400" + "00000000" + "00000000" + "00000400" + "01000000"},
		{FormatPcap, 128, "4d3cb2a1" + "0200" + "0400" + "00000000" + "00000000" + "80000000" + "01000000"},
		{FormatPcapng, 1500, "" +
			// SHB: type, length, byte-order magic, version 1.0, section length -1, length.
			"0a0d0d0a" + "1c000000" + "4d3c2b1a" + "0100" + "0000" + "ffffffffffffffff" + "1c000000" +
			// IDB: type, length, link type, reserved, snaplen, if_tsresol 9, opt_endofopt, length.
			"01000000" + "20000000" + "0100" + "0000" + "dc050000" + "0900" + "0100" + "09000000" + "00000000" + "20000000"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		if _, err := newWriter(tc.format, &buf, tc.snaplen, LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(buf.Bytes()); got != tc.want {
			t.Errorf("%s writer header (snaplen %d) = %s, want %s", tc.format, tc.snaplen, got, tc.want)
		}
	}
}

func TestWriterRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 60, 1518, 9000}
	for _, format := range []Format{FormatPcap, FormatPcapng} {
		for _, snaplen := range []int{0, 128, 1} {
			t.Run(fmt.Sprintf("%s/snaplen=%d", format, snaplen), func(t *testing.T) {
				var buf bytes.Buffer
				w, err := newWriter(format, &buf, snaplen, LinkTypeEthernet)
				if err != nil {
					t.Fatal(err)
				}
				effSnap := snaplen
				if effSnap == 0 {
					effSnap = DefaultSnaplen
				}
				var want []Packet
				for i, size := range sizes {
					for j, origLen := range []int{0, size + 100, size / 2} {
						data := seq(i+j, size)
						ts := int64(t0Nsec + 1001*len(want))
						if err := w.WritePacket(ts, data, origLen); err != nil {
							t.Fatalf("WritePacket(%d, %d bytes, %d) = %v", ts, size, origLen, err)
						}
						capLen := min(size, effSnap)
						// OrigLen is the given length (len(data) if 0),
						// raised to the captured length.
						orig := max(origLen, capLen)
						if origLen == 0 {
							orig = size
						}
						var d []byte
						if capLen > 0 {
							d = data[:capLen]
						}
						want = append(want, Packet{Index: len(want), TimeNs: ts, Data: d, OrigLen: orig, LinkType: LinkTypeEthernet})
					}
				}
				r, got, err := readAll(buf.Bytes())
				if err != nil {
					t.Fatalf("reading back: %v", err)
				}
				if r.Format() != format || r.Snaplen() != effSnap || r.LinkType() != LinkTypeEthernet || !r.Nanosecond() {
					t.Errorf("reader reports (%s, snaplen %d, %v, nano %v), want (%s, %d, ETHERNET, true)",
						r.Format(), r.Snaplen(), r.LinkType(), r.Nanosecond(), format, effSnap)
				}
				checkPackets(t, "read back", got, want)
			})
		}
	}
}

// TestPcapngWriterLargeTime checks timestamps beyond pcap's 32-bit seconds.
func TestWriterTimestampRange(t *testing.T) {
	const late = int64(math.MaxUint32+1) * 1e9
	var buf bytes.Buffer
	ng, _ := NewPcapngWriter(&buf, 0, LinkTypeEthernet)
	for _, ts := range []int64{0, late, math.MaxInt64} {
		if err := ng.WritePacket(ts, []byte{1}, 0); err != nil {
			t.Fatalf("PcapngWriter.WritePacket(%d) = %v, want nil", ts, err)
		}
	}
	_, got, err := readAll(buf.Bytes())
	if err != nil || len(got) != 3 || got[1].TimeNs != late || got[2].TimeNs != math.MaxInt64 {
		t.Errorf("read back = %v, %v; want times 0, %d, %d", got, err, late, int64(math.MaxInt64))
	}

	pw, _ := NewPcapWriter(io.Discard, 0, LinkTypeEthernet)
	if err := pw.WritePacket(late-1, nil, 0); err != nil {
		t.Errorf("PcapWriter.WritePacket(%d) = %v, want nil", late-1, err)
	}
	if err := pw.WritePacket(late, nil, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("PcapWriter.WritePacket(%d) = %v, want ErrInvalid", late, err)
	}
}

func TestWriterErrors(t *testing.T) {
	for _, format := range []Format{FormatPcap, FormatPcapng} {
		for _, snaplen := range []int{-1, MaxPacketSize + 1} {
			if _, err := newWriter(format, io.Discard, snaplen, 1); !errors.Is(err, ErrInvalid) {
				t.Errorf("new %s writer(snaplen %d) = %v, want ErrInvalid", format, snaplen, err)
			}
		}
		w, err := newWriter(format, io.Discard, MaxPacketSize, 1)
		if err != nil {
			t.Fatalf("new %s writer(snaplen MaxPacketSize) = %v", format, err)
		}
		tests := []struct {
			ts   int64
			orig int
		}{{-1, 0}, {math.MinInt64, 0}, {0, -1}, {0, math.MaxUint32 + 1}}
		for _, tc := range tests {
			if err := w.WritePacket(tc.ts, []byte{1}, tc.orig); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s WritePacket(%d, 1 byte, %d) = %v, want ErrInvalid", format, tc.ts, tc.orig, err)
			}
		}

		// Write failures are passed on.
		fail := errors.New("disk full")
		if _, err := newWriter(format, failWriter{0, fail}, 0, 1); !errors.Is(err, fail) {
			t.Errorf("new %s writer on failing writer = %v, want %v", format, err, fail)
		}
		writes := 2 // per packet: header, data
		if format == FormatPcapng {
			writes = 3 // header, data, padding and trailer
		}
		for n := range writes {
			// The file header is one write; then fail the packet's nth.
			w, err := newWriter(format, &failAfter{n: 2 + n, err: fail}, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WritePacket(0, []byte{1, 2}, 0); !errors.Is(err, fail) {
				t.Errorf("%s WritePacket failing at its write %d = %v, want %v", format, n+1, err, fail)
			}
		}
	}
}

type failWriter struct {
	n   int
	err error
}

func (w failWriter) Write(p []byte) (int, error) { return w.n, w.err }

// failAfter succeeds n-1 times, then fails.
type failAfter struct {
	n   int
	err error
}

func (w *failAfter) Write(p []byte) (int, error) {
	w.n--
	if w.n <= 0 {
		return 0, w.err
	}
	return len(p), nil
}

// TestWriterBuffered checks the documented use with a bufio.Writer.
func TestWriterBuffered(t *testing.T) {
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	w, _ := NewPcapngWriter(bw, 0, LinkTypeRaw)
	for i := range 100 {
		if err := w.WritePacket(int64(i), seq(i, i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	_, got, err := readAll(out.Bytes())
	if err != nil || len(got) != 100 || got[99].LinkType != LinkTypeRaw {
		t.Errorf("read back %d packets, %v; want 100 RAW packets", len(got), err)
	}
}

func TestWriteFramesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pcap")
	frames := [][]byte{bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 78)}
	if err := WriteFramesFile(path, frames, 250); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := ReadFile(path, func(p Packet) error {
		got = append(got, fmt.Sprintf("%d %d %x", p.TimeNs, len(p.Data), p.Data[0]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "0 60 1; 250 78 2"; strings.Join(got, "; ") != want {
		t.Errorf("read back %q, want %q", strings.Join(got, "; "), want)
	}
}
