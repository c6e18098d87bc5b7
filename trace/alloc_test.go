package trace

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// makeFile writes n packets of size bytes with the given writer format.
func makeFile(tb testing.TB, format Format, n, size int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	buf.Grow(n * (size + 32))
	w, err := newWriter(format, &buf, 0, LinkTypeEthernet)
	if err != nil {
		tb.Fatal(err)
	}
	data := seq(0, size)
	for i := range n {
		if err := w.WritePacket(t0Nsec+int64(i)*1000, data, 0); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestReaderNextAllocs(t *testing.T) {
	const runs = 1000
	for _, format := range []Format{FormatPcap, FormatPcapng} {
		t.Run(string(format), func(t *testing.T) {
			in := makeFile(t, format, 2*runs+10, 1518)
			r, err := NewReader(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Next(); err != nil { // grows the buffer
				t.Fatal(err)
			}
			var err2 error
			allocs := testing.AllocsPerRun(runs, func() {
				if _, err := r.Next(); err != nil {
					err2 = err
				}
			})
			if err2 != nil {
				t.Fatal(err2)
			}
			if allocs != 0 {
				t.Errorf("Reader.Next allocations = %v, want 0", allocs)
			}
			var p Packet
			allocs = testing.AllocsPerRun(runs/4, func() {
				if err := r.ReadPacket(&p); err != nil {
					err2 = err
				}
			})
			if err2 != nil {
				t.Fatal(err2)
			}
			if allocs != 0 {
				t.Errorf("Reader.ReadPacket allocations = %v, want 0", allocs)
			}
		})
	}
}

func TestWritePacketAllocs(t *testing.T) {
	data := seq(0, 1518)
	for _, format := range []Format{FormatPcap, FormatPcapng} {
		for name, out := range map[string]io.Writer{
			"discard": io.Discard,
			"bufio":   bufio.NewWriter(io.Discard),
		} {
			t.Run(string(format)+"/"+name, func(t *testing.T) {
				w, err := newWriter(format, out, 0, LinkTypeEthernet)
				if err != nil {
					t.Fatal(err)
				}
				ts := int64(t0Nsec)
				allocs := testing.AllocsPerRun(1000, func() {
					ts++
					if err := w.WritePacket(ts, data[:ts%int64(len(data))], 0); err != nil {
						t.Fatal(err)
					}
				})
				if allocs != 0 {
					t.Errorf("%sWriter.WritePacket allocations = %v, want 0", format, allocs)
				}
			})
		}
	}
}
