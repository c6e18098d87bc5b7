package trace

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

const (
	benchPackets = 100_000
	benchSize    = 128
)

func benchmarkRead(b *testing.B, format Format) {
	in := makeFile(b, format, benchPackets, benchSize)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	br := bytes.NewReader(in)
	for b.Loop() {
		br.Reset(in)
		r, err := NewReader(br)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != benchPackets {
			b.Fatalf("read %d packets, want %d", n, benchPackets)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPackets), "ns/pkt")
}

// BenchmarkReadPcap reads a file of 100k 128-byte packets from memory per
// iteration. The Reader is created anew each time; its setup (a 256 KiB
// bufio buffer) is a few allocations per 100k packets.
func BenchmarkReadPcap(b *testing.B)   { benchmarkRead(b, FormatPcap) }
func BenchmarkReadPcapng(b *testing.B) { benchmarkRead(b, FormatPcapng) }

func benchmarkWrite(b *testing.B, format Format) {
	data := seq(0, benchSize)
	bw := bufio.NewWriterSize(io.Discard, 64<<10)
	size := int64(len(makeFile(b, format, benchPackets, benchSize)))
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		w, err := newWriter(format, bw, 0, LinkTypeEthernet)
		if err != nil {
			b.Fatal(err)
		}
		for i := range benchPackets {
			if err := w.WritePacket(t0Nsec+int64(i), data, 0); err != nil {
				b.Fatal(err)
			}
		}
		bw.Flush()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPackets), "ns/pkt")
}

// BenchmarkWritePcap writes 100k 128-byte packets per iteration through a
// bufio.Writer into io.Discard.
func BenchmarkWritePcap(b *testing.B)   { benchmarkWrite(b, FormatPcap) }
func BenchmarkWritePcapng(b *testing.B) { benchmarkWrite(b, FormatPcapng) }
