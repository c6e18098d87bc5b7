package integrity_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/trace"
)

const (
	benchPackets = 5_000_000
	benchDumpers = 4
)

// benchTraces builds, once per process, a merged trace of 5 M mirror copies
// (captured at 128 bytes, as the public dumper's default snaplen) and the 4
// dumper files it was dealt from round robin, all in memory (about 1.4 GB).
var benchTraces = sync.OnceValues(func() ([]byte, [][]byte) {
	f := framePayload(nopTB{}, pkt{1, 1}, 76) // a 150-byte RoCE WRITE
	if len(f) != 150 {
		panic("bench frame")
	}
	f = f[:128]
	var merged bytes.Buffer
	merged.Grow(24 + benchPackets*(16+128))
	mw, _ := trace.NewPcapWriter(&merged, 128, trace.LinkTypeEthernet)
	per := make([]*bytes.Buffer, benchDumpers)
	pws := make([]*trace.PcapWriter, benchDumpers)
	for i := range per {
		per[i] = new(bytes.Buffer)
		per[i].Grow(24 + benchPackets/benchDumpers*(16+128))
		pws[i], _ = trace.NewPcapWriter(per[i], 128, trace.LinkTypeEthernet)
	}
	for i := range benchPackets {
		seq, ts := uint64(i+1), uint64(1_000_000+i*60)
		putMAC48(f[0:], ts)
		putMAC48(f[6:], seq)
		if err := mw.WritePacket(int64(ts), f, 150); err != nil {
			panic(err)
		}
		if err := pws[i%benchDumpers].WritePacket(int64(ts), f, 150); err != nil {
			panic(err)
		}
	}
	files := make([][]byte, benchDumpers)
	for i, b := range per {
		files[i] = b.Bytes()
	}
	return merged.Bytes(), files
})

// nopTB lets frame run outside a test; it never fails on valid input.
type nopTB struct{ testing.TB }

func (nopTB) Helper()               {}
func (nopTB) Fatal(...any)          { panic("frame") }
func (nopTB) Fatalf(string, ...any) { panic("frame") }

func reportPackets(b *testing.B) {
	pkts := float64(b.N) * benchPackets
	b.ReportMetric(pkts/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
}

// BenchmarkCheckerAdd: the conditions alone, 5 M Add calls per op.
func BenchmarkCheckerAdd(b *testing.B) {
	chk, err := integrity.NewChecker(integrity.Options{}, "d0", "d1", "d2", "d3")
	if err != nil {
		b.Fatal(err)
	}
	cnt := integrity.Counters{SwitchMirrored: integrity.Known(benchPackets)}
	b.ReportAllocs()
	for b.Loop() {
		chk.Reset()
		for i := range benchPackets {
			chk.Add(uint64(i+1), uint64(1_000_000+i*60), i&3, i>>2)
		}
		if v := chk.Finish(cnt); !v.Pass {
			b.Fatal(v.String())
		}
	}
	reportPackets(b)
}

// BenchmarkCheck: Check over a merged 5 M-packet pcap in memory (reading
// included).
func BenchmarkCheck(b *testing.B) {
	merged, _ := benchTraces()
	cnt := integrity.Counters{SwitchMirrored: integrity.Known(benchPackets), SwitchRoCEReceived: integrity.Known(benchPackets)}
	br := bytes.NewReader(nil)
	b.SetBytes(int64(len(merged)))
	b.ReportAllocs()
	for b.Loop() {
		br.Reset(merged)
		r, err := trace.NewReader(br)
		if err != nil {
			b.Fatal(err)
		}
		v, err := integrity.Check(r, cnt, integrity.Options{})
		if err != nil || !v.Pass {
			b.Fatal(v.String(), err)
		}
	}
	reportPackets(b)
}

// BenchmarkCheckSources: merge 4 in-memory dumper files of 1.25 M packets
// and check the merged stream, sources known (5 M packets per op).
func BenchmarkCheckSources(b *testing.B) {
	_, files := benchTraces()
	c := integrity.Counters{SwitchMirrored: integrity.Known(benchPackets), SwitchRoCEReceived: integrity.Known(benchPackets)}
	for range files {
		c.Dumpers = append(c.Dumpers, integrity.DumperCounters{
			Captured: integrity.Known(benchPackets / benchDumpers), Dropped: integrity.Known(0),
		})
	}
	readers := make([]*bytes.Reader, len(files))
	for i := range readers {
		readers[i] = bytes.NewReader(nil)
	}
	srcs := make([]trace.MergeSource, len(files))
	b.ReportAllocs()
	for b.Loop() {
		for i := range srcs {
			readers[i].Reset(files[i])
			r, err := trace.NewReader(readers[i])
			if err != nil {
				b.Fatal(err)
			}
			srcs[i] = trace.MergeSource{Name: "dumper", Reader: r}
		}
		v, err := integrity.CheckSources(c, integrity.Options{}, srcs...)
		if err != nil || !v.Pass {
			b.Fatal(v.String(), err)
		}
	}
	reportPackets(b)
}
