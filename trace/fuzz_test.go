package trace

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader. It must never panic, must
// fail only with io.EOF or the package's sentinels, must keep its promises
// about Packet, and must not grow its buffer far beyond the input's size.
func FuzzReader(f *testing.F) {
	for _, tc := range readCases {
		f.Add(tc.in)
	}
	for _, tc := range errCases {
		f.Add(tc.in)
	}
	for _, format := range []Format{FormatPcap, FormatPcapng} {
		var buf bytes.Buffer
		w, _ := newWriter(format, &buf, 64, LinkTypeEthernet)
		for i, size := range []int{0, 1, 60, 100} {
			w.WritePacket(int64(i)*1e9+int64(i), seq(i, size), size+i)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("NewReader error %v wraps no sentinel", err)
			}
			return
		}
		if f := r.Format(); f != FormatPcap && f != FormatPcapng {
			t.Fatalf("Format() = %q", f)
		}
		for i := 0; ; i++ {
			p, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !isSentinel(err) {
					t.Fatalf("Next error %v wraps no sentinel", err)
				}
				if _, err2 := r.Next(); !errors.Is(err2, err) {
					t.Fatalf("Next after %v = %v, want the same", err, err2)
				}
				break
			}
			if p.Index != i {
				t.Fatalf("packet %d has Index %d", i, p.Index)
			}
			if len(p.Data) > MaxPacketSize || p.OrigLen < len(p.Data) {
				t.Fatalf("packet %d: len(Data) = %d, OrigLen = %d", i, len(p.Data), p.OrigLen)
			}
			if r.Format() == FormatPcap && p.Interface != 0 {
				t.Fatalf("pcap packet %d: Interface = %d", i, p.Interface)
			}
		}
		// Growth is bounded by what was read, not by what lengths claimed.
		if limit := 2 * (len(in) + readChunk); cap(r.buf) > limit {
			t.Fatalf("buffer grew to %d bytes for a %d-byte input", cap(r.buf), len(in))
		}
	})
}
