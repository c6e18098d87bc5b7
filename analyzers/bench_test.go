package analyzers

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/trace"
)

// cpuMeter measures the process's CPU time (user+sys, every thread: the
// garbage collector's too) over a benchmark's timed loop, so that a
// benchmark can report packets per CPU-second next to packets per
// wall-second. On a shared machine wall time counts the time other
// processes hold the cores; CPU time does not.
type cpuMeter struct{ start int64 }

func (m *cpuMeter) begin() { m.start = testutil.ProcessCPUNs() }

// report adds the packets/cpu-s metric for n packets per iteration; it
// reports nothing where the process's CPU time is unknown.
func (m *cpuMeter) report(b *testing.B, n int) {
	end := testutil.ProcessCPUNs()
	if m.start <= 0 || end <= m.start {
		return
	}
	b.ReportMetric(float64(n)*float64(b.N)/(float64(end-m.start)/1e9), "packets/cpu-s")
}

// BenchmarkAnalyzeRun analyzes the trace of the lumina run directory
// LUMINA_BENCH_RUN (skipped when unset) as lumina analyze does: the run's
// metadata and integrity options, from the file (page cache), without
// plot data (json: lumina analyze --format json) and with it (html).
// packets/cpu-s counts the analyses' CPU time only (user+sys, every
// thread); x-read is that time over the CPU time of only reading the same
// file (trace.ReadFile, one worker's reader) between the analyses: a
// figure the machine's speed of the moment changes less (the read's cost
// is mostly the page cache's copy, which no analysis avoids).
// Run: LUMINA_BENCH_RUN=DIR go test ./analyzers -run '^$' -bench AnalyzeRun -benchtime 3x -cpu 1
func BenchmarkAnalyzeRun(b *testing.B) {
	dir := testutil.BenchRun(b)
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
			opt := Options{Name: in.Trace, Integrity: DirIntegrity(dir), NoPlots: bc.noPlots, Workers: benchWorkers()}
			b.SetBytes(size)
			b.ReportAllocs()
			var anaCPU, readCPU int64
			for range b.N {
				c0 := testutil.ProcessCPUNs()
				r, err := AnalyzeFile(context.Background(), in.Trace, in.Meta, opt)
				if err != nil {
					b.Fatal(err)
				}
				if r.Trace.Packets != n {
					b.Fatalf("%d packets, want %d", r.Trace.Packets, n)
				}
				c1 := testutil.ProcessCPUNs()
				b.StopTimer()
				if err := trace.ReadFile(in.Trace, func(trace.Packet) error { return nil }); err != nil {
					b.Fatal(err)
				}
				readCPU += testutil.ProcessCPUNs() - c1
				anaCPU += c1 - c0
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
			if anaCPU > 0 && readCPU > 0 { // 0: the process's CPU time is unknown here
				b.ReportMetric(float64(n)*float64(b.N)/(float64(anaCPU)/1e9), "packets/cpu-s")
				b.ReportMetric(float64(anaCPU)/float64(readCPU), "x-read")
			}
		})
	}
}

// benchWorkers is LUMINA_BENCH_WORKERS (default 0: GOMAXPROCS, which
// -cpu sets).
func benchWorkers() int {
	n, _ := strconv.Atoi(os.Getenv("LUMINA_BENCH_WORKERS"))
	return n
}

// BenchmarkAnalyzeWorkers analyzes the same trace on one worker and on
// two (Options.Workers), alternately in each iteration, and reports the
// wall-time ratio (speedup: one worker's time over two's) and each one's
// packets per CPU-second. The trace is LUMINA_BENCH_RUN's (a lumina run
// directory, read from its file as lumina analyze --format json does) or
// else the in-memory synthetic trace of BenchmarkAnalyze. The ratio needs
// two idle cores: on a loaded machine it is the share the others left.
// Run: LUMINA_BENCH_RUN=DIR go test ./analyzers -run '^$' -bench AnalyzeWorkers -benchtime 3x -cpu 2
func BenchmarkAnalyzeWorkers(b *testing.B) {
	var src Source
	var meta model.Meta
	opt := Options{NoPlots: true}
	n := 0
	if dir := os.Getenv("LUMINA_BENCH_RUN"); dir != "" {
		in, err := ReadInputs(dir, "")
		if err != nil {
			b.Fatal(err)
		}
		if err := trace.ReadFile(in.Trace, func(trace.Packet) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		src, meta, opt.Integrity = File(in.Trace), in.Meta, DirIntegrity(dir)
	} else {
		n = 2_000_000
		if v, err := strconv.Atoi(os.Getenv("LUMINA_BENCH_PACKETS")); err == nil && v > 0 {
			n = v
		}
		s := newSynth(b, 16)
		meta = synthMeta(s)
		src = Bytes("synth", s.pcap(b, n))
		n = s.index
	}
	b.ReportAllocs()
	var wall, cpu [2]int64
	for range b.N {
		for i, w := range []int{1, 2} {
			opt.Workers = w
			t0, c0 := time.Now(), testutil.ProcessCPUNs()
			r, err := Analyze(context.Background(), src, meta, opt)
			if err != nil {
				b.Fatal(err)
			}
			wall[i] += int64(time.Since(t0))
			cpu[i] += testutil.ProcessCPUNs() - c0
			if r.Trace.Packets != n {
				b.Fatalf("%d packets, want %d", r.Trace.Packets, n)
			}
		}
	}
	b.ReportMetric(float64(wall[0])/float64(wall[1]), "speedup-2w")
	for i, name := range []string{"packets/cpu-s-1w", "packets/cpu-s-2w"} {
		if cpu[i] > 0 {
			b.ReportMetric(float64(n)*float64(b.N)/(float64(cpu[i])/1e9), name)
		}
	}
}
