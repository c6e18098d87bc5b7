package trace_test

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

const (
	benchSources   = 4
	benchPerSource = 1_250_000
	benchTotal     = benchSources * benchPerSource
)

// benchFiles holds 4 in-memory dumper files of 1.25 M packets each (5 M in
// all, about 720 MB), dealt round robin: 130-byte RoCE SENDs captured at the
// public dumper's default snaplen of 128 bytes. Built once per process.
var benchFiles = sync.OnceValue(func() [][]byte {
	spec := roce.FrameSpec{
		SrcIP: ipReq, DstIP: ipRsp, UDPSrc: 0xC001,
		Opcode: roce.RCSendOnly, DestQP: 0x11, Payload: make([]byte, 72),
	}
	f, err := spec.Append(nil)
	if err != nil || len(f) != 130 {
		panic("bench frame")
	}
	bufs := make([]*bytes.Buffer, benchSources)
	ws := make([]*trace.PcapWriter, benchSources)
	for i := range bufs {
		bufs[i] = new(bytes.Buffer)
		bufs[i].Grow(24 + benchPerSource*(16+128))
		ws[i], err = trace.NewPcapWriter(bufs[i], 128, trace.LinkTypeEthernet)
		if err != nil {
			panic(err)
		}
	}
	for i := range benchTotal {
		seq, ts := uint64(i+1), t0+uint64(i)*60
		putMAC48(f[0:], ts)
		putMAC48(f[6:], seq)
		if err := ws[i%benchSources].WritePacket(int64(ts), f[:128], len(f)); err != nil {
			panic(err)
		}
	}
	files := make([][]byte, benchSources)
	for i, b := range bufs {
		files[i] = b.Bytes()
	}
	return files
})

// BenchmarkMerge merges 4 in-memory dumper files of 1.25 M 128-byte packets
// each (5 M packets per op) of one switch, directly (MergeOptions.OneSwitch):
// "callback" into a callback that only counts, "pcap" into a PcapWriter
// over a bufio.Writer to io.Discard; "split-callback" is "callback" without
// the option, through the per-switch temporary files a merge of unknown
// sources writes first. The few allocations per op are the Readers (a 256
// KiB buffer each), the heads and the stats (and the temporary files);
// none is per packet.
func BenchmarkMerge(b *testing.B) {
	files := benchFiles()
	readers := make([]*bytes.Reader, benchSources)
	for i := range readers {
		readers[i] = bytes.NewReader(nil)
	}
	srcs := make([]trace.MergeSource, benchSources)
	bw := bufio.NewWriterSize(io.Discard, 1<<20)
	pw, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		b.Fatal(err)
	}
	var count int
	for _, bc := range []struct {
		name  string
		out   func(int, trace.Packet) error
		split bool
	}{
		{"callback", func(int, trace.Packet) error { count++; return nil }, false},
		{"pcap", func(_ int, p trace.Packet) error { return pw.WritePacket(p.TimeNs, p.Data, p.OrigLen) }, false},
		{"split-callback", func(int, trace.Packet) error { count++; return nil }, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(benchTotal * 128))
			for b.Loop() {
				for i := range srcs {
					readers[i].Reset(files[i])
					r, err := trace.NewReader(readers[i])
					if err != nil {
						b.Fatal(err)
					}
					srcs[i] = trace.MergeSource{Name: "dumper", Reader: r}
				}
				stats, err := trace.MergeOptions{OneSwitch: !bc.split, TempDir: b.TempDir()}.Merge(bc.out, srcs...)
				if err != nil || stats.Packets != benchTotal || stats.OutOfOrder != 0 {
					b.Fatalf("Merge() = %+v, %v, want %d packets in order", stats, err, benchTotal)
				}
			}
			pkts := float64(b.N) * benchTotal
			b.ReportMetric(pkts/b.Elapsed().Seconds(), "packets/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
		})
	}
}
