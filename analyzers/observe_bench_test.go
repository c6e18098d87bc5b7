package analyzers

import (
	"os"
	"strconv"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/trace"
)

// BenchmarkObserve measures the per-connection analyzers alone
// (pipeline.observe: retransmission, rnr, gbn, cnp, events, counters,
// flows) on the first LUMINA_BENCH_PACKETS packets (default 300,000) of
// the run directory LUMINA_BENCH_RUN (skipped when unset), decoded once
// before the timed loop, as lumina analyze --format json analyzes them.
// Run: LUMINA_BENCH_RUN=DIR go test ./analyzers -run '^$' -bench Observe -cpu 1
func BenchmarkObserve(b *testing.B) {
	dir := testutil.BenchRun(b)
	limit := 300_000
	if v, err := strconv.Atoi(os.Getenv("LUMINA_BENCH_PACKETS")); err == nil && v > 0 {
		limit = v
	}
	in, err := ReadInputs(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	selected, _ := selectChecks(nil)
	opt := Options{Name: in.Trace, NoPlots: true}
	newPass := func() *mainPass {
		s, err := newStream(in.Meta, in.Meta.Connections, in.Meta.Params, opt, selected, in.Trace)
		if err != nil {
			b.Fatal(err)
		}
		return s.m
	}
	m := newPass()
	var pkts []model.Pkt
	err = trace.ReadFile(in.Trace, func(tp trace.Packet) error {
		if len(pkts) >= limit || tp.IsMACMirror() {
			return nil
		}
		if !m.decided {
			m.decided = detectMirror(&m.dec, &tp)
		}
		var p model.Pkt
		if m.dec.Decode(&tp, &p) {
			pkts = append(pkts, p)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu int64 // the process's CPU time in the loops: on a shared machine wall time counts the others' too
	for range b.N {
		b.StopTimer()
		a := newPass().a
		b.StartTimer()
		c0 := testutil.ProcessCPUNs()
		for i := range pkts {
			p := &pkts[i]
			p.Retx = false // set by the previous iteration's observe
			a.observe(p)
		}
		cpu += testutil.ProcessCPUNs() - c0
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pkts)), "ns/packet")
	if cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N*len(pkts)), "cpu-ns/packet")
	}
}
