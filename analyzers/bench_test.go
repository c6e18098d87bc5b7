package analyzers

import (
	"context"
	"os"
	"testing"

	"github.com/netlumina/lumina/trace"
)

// cpuMeter measures the process's CPU time (user+sys, every thread: the
// garbage collector's too) over a benchmark's timed loop, so that a
// benchmark can report packets per CPU-second next to packets per
// wall-second. On a shared machine wall time counts the time other
// processes hold the cores; CPU time does not.
type cpuMeter struct{ start int64 }

func (m *cpuMeter) begin() { m.start = processCPUNs() }

// report adds the packets/cpu-s metric for n packets per iteration; it
// reports nothing where the process's CPU time is unknown.
func (m *cpuMeter) report(b *testing.B, n int) {
	end := processCPUNs()
	if m.start <= 0 || end <= m.start {
		return
	}
	b.ReportMetric(float64(n)*float64(b.N)/(float64(end-m.start)/1e9), "packets/cpu-s")
}

// BenchmarkAnalyzeRun analyzes the trace of the lumina run directory
// LUMINA_BENCH_RUN (skipped when unset) as lumina analyze does: the run's
// metadata and integrity options, from the file (page cache), without
// plot data (json: lumina analyze --format json) and with it (html).
// Run: LUMINA_BENCH_RUN=DIR go test ./analyzers -run '^$' -bench AnalyzeRun -benchtime 3x -cpu 1
func BenchmarkAnalyzeRun(b *testing.B) {
	dir := os.Getenv("LUMINA_BENCH_RUN")
	if dir == "" {
		b.Skip("LUMINA_BENCH_RUN not set")
	}
	in, err := ReadInputs(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	n, size := 0, int64(0)
	if err := trace.ReadFile(in.Trace, func(p trace.Packet) error { n++; size += int64(len(p.Data)); return nil }); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name    string
		noPlots bool
	}{{"json", true}, {"html", false}} { // lumina analyze --format json; with -o (report.html)
		b.Run(bc.name, func(b *testing.B) {
			opt := Options{Name: in.Trace, Integrity: DirIntegrity(dir), NoPlots: bc.noPlots}
			b.SetBytes(size)
			b.ReportAllocs()
			var cpu cpuMeter
			cpu.begin()
			for range b.N {
				r, err := AnalyzeFile(context.Background(), in.Trace, in.Meta, opt)
				if err != nil {
					b.Fatal(err)
				}
				if r.Trace.Packets != n {
					b.Fatalf("%d packets, want %d", r.Trace.Packets, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
			cpu.report(b, n)
		})
	}
}
