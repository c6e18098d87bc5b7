package trace

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkAll reads in with a Chunker, bufSize bytes and maxPkts packets per
// call, copying the packets' data; it returns the packets before the
// first error and that error (nil at a clean end).
func chunkAll(t *testing.T, in []byte, bufSize, maxPkts int) ([]Packet, error) {
	t.Helper()
	br := bytes.NewReader(in)
	r, err := NewReader(br)
	if err != nil {
		return nil, err
	}
	c, ok := r.Chunker(br)
	if !ok {
		t.Fatal("Chunker refused a pcap reader that returned nothing")
	}
	var out []Packet
	buf, pkts := make([]byte, 0, bufSize), make([]Packet, 0, maxPkts)
	for calls := 0; ; calls++ {
		if calls > len(in)+2 {
			t.Fatalf("no end after %d calls", calls)
		}
		var err error
		buf, pkts, err = c.Next(buf, pkts[:0])
		for _, p := range pkts {
			p.Data = bytes.Clone(p.Data)
			out = append(out, p)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if _, p2, err2 := c.Next(buf, pkts[:0]); len(p2) != 0 || err2 != err { // sticky
				t.Errorf("after %v: Next gave %d packets, %v", err, len(p2), err2)
			}
			return out, err
		}
	}
}

// TestChunkerAsReader checks that a Chunker gives the packets, indexes
// and errors Reader.Next gives: on pcap files of both byte orders and
// timestamp units, cut at every length (truncated record headers and
// records), with a captured length above MaxPacketSize, with records of
// up to MaxPacketSize bytes, read with buffers and packet limits that
// split the file everywhere.
func TestChunkerAsReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var files [][]byte
	for _, o := range []order{le, be} {
		for _, magic := range []uint32{pcapMagicMicro, pcapMagicNano} {
			f := pcapHeader(o, magic, 65535, 1)
			for i := range 40 {
				n := rng.IntN(300)
				if i == 17 {
					n = MaxPacketSize // the largest record
				}
				f = append(f, pcapRecord(o, uint32(i), uint32(rng.IntN(999_999)), seq(i, n), uint32(n+rng.IntN(3)))...)
			}
			files = append(files, f)
		}
	}
	corrupt := cat(pcapHeader(le, pcapMagicMicro, 65535, 1), pcapRecord(le, 1, 2, seq(0, 60), 60), pcapRecord(le, 1, 3, seq(1, 60), 60))
	copy(corrupt[24+16+60+8:], le.AppendUint32(nil, MaxPacketSize+1))
	files = append(files, corrupt)

	for fi, f := range files {
		for cut := 24; cut <= len(f); cut += max(1, rng.IntN(4000)) {
			in := f[:cut]
			_, want, werr := readAll(in)
			for _, lim := range []struct{ buf, pkts int }{{ChunkBufSize, 1000}, {ChunkBufSize + 100, 3}, {ChunkBufSize + 7, 1}, {2 * ChunkBufSize, 64}} {
				got, gerr := chunkAll(t, in, lim.buf, lim.pkts)
				checkPackets(t, "chunker", got, want)
				if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
					t.Errorf("file %d cut at %d, buffer %d, %d packets: error %v, want %v", fi, cut, lim.buf, lim.pkts, gerr, werr)
				}
			}
		}
	}
}

// failAt is an io.ReaderAt over data that fails from offset at on.
type failAt struct {
	data []byte
	at   int64
	err  error
}

func (f failAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.at {
		return 0, f.err
	}
	n := copy(p, f.data[off:min(int64(len(f.data)), f.at)])
	return n, f.err
}

// TestChunkerIOError checks that a read failure other than the end of
// the file is passed on, not taken as truncation; and that a Chunker is
// refused where one cannot continue the Reader.
func TestChunkerIOError(t *testing.T) {
	boom := errors.New("boom")
	in := cat(pcapHeader(le, pcapMagicMicro, 65535, 1), pcapRecord(le, 1, 2, seq(0, 60), 60), pcapRecord(le, 1, 3, seq(1, 60), 60))
	r, err := NewReader(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.Chunker(failAt{in, 50, boom})
	_, pkts, err := c.Next(make([]byte, 0, ChunkBufSize), nil)
	if !errors.Is(err, boom) || isSentinel(err) || len(pkts) != 0 {
		t.Errorf("Next = %d packets, %v; want none and an error wrapping only %v", len(pkts), err, boom)
	}
	if _, _, err := c.Next(make([]byte, 0, 10), nil); !errors.Is(err, boom) {
		t.Errorf("after the failure: %v, want the same error", err)
	}

	r, _ = NewReader(bytes.NewReader(in))
	c, _ = r.Chunker(bytes.NewReader(in))
	if _, _, err := c.Next(make([]byte, 0, ChunkBufSize-1), nil); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("a buffer below ChunkBufSize: %v, want an error", err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Chunker(bytes.NewReader(in)); ok {
		t.Error("Chunker of a Reader that returned a packet: ok")
	}
	ng := cat(ngSHB(le), ngIDB(le, 1, 0))
	if r, err := NewReader(bytes.NewReader(ng)); err != nil {
		t.Fatal(err)
	} else if _, ok := r.Chunker(bytes.NewReader(ng)); ok {
		t.Error("Chunker of a pcapng Reader: ok")
	}
}
