package analyzers

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

func synthMeta(s *synth) model.Meta {
	return model.Meta{Connections: s.conns, Params: model.Params{MTU: 1024, Timeout: ptr(uint8(14)), MinTimeBetweenCNPsUs: ptr(4.0)}}
}

func ptr[T any](v T) *T { return &v }

// TestPassAllocs checks that the analysis pass does not allocate per
// packet in steady state: parse, connection lookup, every analyzer's state
// machine and the plot collector, with data, ACKs, ECN marks, CNPs and
// (amortized) losses.
func TestPassAllocs(t *testing.T) {
	s := newSynth(t, 8)
	meta := synthMeta(s)
	m := newMainPass(model.NewTable(meta.Connections), meta, meta.Params, Options{},
		model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: 1024, Mirror: true}, true)
	// Warm up: every connection, pacing domain and plot buffer exists, and
	// the loss and go-back slices have grown.
	for range 200_000 {
		p := s.next()
		m.packet(&p)
	}
	s.dropEvery = 1 << 30 // no new losses: their records are the only appends
	got := testing.AllocsPerRun(100_000, func() {
		p := s.next()
		m.packet(&p)
	})
	if got != 0 {
		t.Errorf("allocations per packet = %v, want 0", got)
	}
	if m.r.Trace.RoCEPackets != m.r.Trace.Packets || m.r.Trace.Unattributed != 0 {
		t.Errorf("trace %+v: every packet should be RoCE of a known connection", m.r.Trace)
	}
}

// TestSynthAnalyzes checks that the benchmark's trace is a valid run whose
// checks pass, so the benchmark measures the normal path.
func TestSynthAnalyzes(t *testing.T) {
	s := newSynth(t, 8)
	meta := synthMeta(s)
	b := s.pcap(t, 50_000)
	r, err := Analyze(context.Background(), Bytes("synth", b), meta, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed() || r.Integrity.Verdict != model.Pass {
		t.Fatalf("synthetic trace does not pass: %+v %+v %+v", r.Integrity, r.Checks.Verdicts(), r.Checks.GBN.Violations[:min(3, len(r.Checks.GBN.Violations))])
	}
	if n := len(r.Checks.Retransmission.Losses); n == 0 {
		t.Error("no losses in the synthetic trace")
	}
	if r.Checks.CNP.Observed == 0 {
		t.Error("no CNPs in the synthetic trace")
	}
}

// BenchmarkAnalyze measures the full analysis of an in-memory trace of
// LUMINA_BENCH_PACKETS packets (default 5,000,000): pcap reading, integrity,
// parsing, all analyzers, plot data and the report (without rendering),
// with the connections given (one pass) or inferred (two passes). It
// reports packets per wall-second and per CPU-second of the process
// (user+sys, the garbage collector's included).
// Run: go test ./analyzers -run '^$' -bench Analyze -benchtime 3x -cpu 1
func BenchmarkAnalyze(b *testing.B) {
	n := 5_000_000
	if v, err := strconv.Atoi(os.Getenv("LUMINA_BENCH_PACKETS")); err == nil && v > 0 {
		n = v
	}
	s := newSynth(b, 16)
	meta := synthMeta(s)
	trace := s.pcap(b, n)
	n = s.index
	for _, bc := range []struct {
		name string
		meta model.Meta
	}{{"meta", meta}, {"inferred", model.Meta{Params: meta.Params}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(trace)))
			b.ReportAllocs()
			var cpu cpuMeter
			cpu.begin()
			for range b.N {
				r, err := Analyze(context.Background(), Bytes("synth", trace), bc.meta, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if !r.Passed() || len(r.Connections) != 16 {
					b.Fatal("synthetic trace does not pass")
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
			cpu.report(b, n)
		})
	}
}
