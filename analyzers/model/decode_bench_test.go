package model_test

import (
	"testing"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// BenchmarkDecode decodes 4096 frames of the trace of the lumina run
// directory LUMINA_BENCH_RUN (skipped when unset; from its 100 000th
// frame, past the start), held in memory, as the analysis pass does
// (Decode with the run's connections, then LastMirrorFields, which the
// integrity check reads): the per-packet cost of decoding alone.
// Run: LUMINA_BENCH_RUN=DIR go test ./analyzers/model -run '^$' -bench Decode -cpu 1
func BenchmarkDecode(b *testing.B) {
	dir := testutil.BenchRun(b)
	in, err := analyzers.ReadInputs(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	// The frames' first hdrLen bytes (the headers Decode reads), one after
	// the other as in the reader's buffer, which the reader has just
	// filled when they are decoded: they are in the cache (4096 × 128
	// bytes), as there.
	const skip, max, hdrLen = 100_000, 4096, 128
	var tps []trace.Packet
	buf := make([]byte, 0, max*hdrLen)
	seen := 0
	err = trace.ReadFile(in.Trace, func(p trace.Packet) error {
		if seen++; seen > skip && len(tps) < max {
			if p.OrigLen == 0 {
				p.OrigLen = len(p.Data)
			}
			n := len(buf)
			buf = append(buf, p.Data[:min(len(p.Data), hdrLen)]...)
			p.Data = buf[n:len(buf):len(buf)]
			tps = append(tps, p)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(tps) == 0 {
		b.Fatalf("%s: %d frames, want more than %d (the benchmark decodes from frame %d on)", in.Trace, seen, skip, skip+1)
	}
	d := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: 1024,
		Table: model.NewTable(in.Meta.Connections), Holds: in.Meta.Params.MirrorHolds}
	if in.Meta.Mirror != nil {
		d.Mirror = *in.Meta.Mirror
	} else { // as the analysis decides: from the first frame
		var pk roce.Packet
		d.Mirror = d.Parser.Parse(tps[0].Data, tps[0].OrigLen, &pk) == nil && pk.LooksMirrored()
	}
	if !d.Mirror {
		b.Logf("not a mirror trace")
	}
	var p model.Pkt
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testutil.ProcessCPUNs()
	var sink uint64
	for range b.N {
		for i := range tps {
			if d.Decode(&tps[i], &p) {
				sink += uint64(p.Conn)
			}
			if s, ts, ttl, ok := d.LastMirrorFields(); ok {
				sink += s ^ ts ^ uint64(ttl)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tps)), "ns/packet")
	if cpu0 > 0 { // the CPU time is known
		b.ReportMetric(float64(testutil.ProcessCPUNs()-cpu0)/float64(b.N*len(tps)), "cpu-ns/packet")
	}
	_ = sink
}
