package analyzers

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// analyzeWorkers analyzes b with opt on 1, 2 and 4 workers and fails
// unless the three give the same error, or the same report.json, report
// text and graphs' data.
func analyzeWorkers(t *testing.T, name string, b []byte, meta model.Meta, opt Options) {
	t.Helper()
	var want []byte
	var wantErr string
	var wantR *Report
	for _, w := range []int{1, 2, 4} {
		opt.Workers = w
		r, err := Analyze(context.Background(), Bytes(name, b), meta, opt)
		var got []byte
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		} else if got, err = r.MarshalIndent(); err != nil {
			t.Fatal(err)
		} else {
			got = append(got, report.Text(r)...)
		}
		if w == 1 {
			want, wantErr, wantR = got, gotErr, r
			continue
		}
		if gotErr != wantErr {
			t.Errorf("%s workers %d: error %q, want %q (1 worker)", name, w, gotErr, wantErr)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s workers %d: report differs from 1 worker's:\n%s", name, w, firstDiff(string(got), string(want)))
		}
		if wantR != nil && !reflect.DeepEqual(r.Plots, wantR.Plots) {
			t.Errorf("%s workers %d: graphs' data differ from 1 worker's", name, w)
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "got:  " + al[i] + "\nwant: " + bl[i]
		}
	}
	return "lengths differ"
}

// TestWorkersIdentical checks that the analysis on several workers gives
// the one-worker report, byte for byte: on a synthetic mirror trace of
// many batches (losses, NAKs, ECN marks, CNPs), with the connections given
// and inferred, with and without the graphs' data; on the example traces,
// on scripted traces with and without mirror metadata, and on the fuzz
// corpus (the held-out traces: malformed and truncated ones too).
func TestWorkersIdentical(t *testing.T) {
	s := newSynth(t, 8)
	meta := synthMeta(s)
	syn := s.pcap(t, 3*shardBatchLen*shardBatches(4)+123)
	for _, m := range []model.Meta{meta, {Params: meta.Params}} {
		for _, noPlots := range []bool{false, true} {
			analyzeWorkers(t, "synth", syn, m, Options{NoPlots: noPlots})
		}
	}
	analyzeWorkers(t, "synth-truncated", syn[:len(syn)-100], meta, Options{})
	qp := 3
	analyzeWorkers(t, "synth-qp", syn, meta, Options{QP: &qp})
	analyzeWorkers(t, "synth-checked", syn, meta, Options{Checked: &integrity.Verdict{Pass: true}})
	analyzeWorkers(t, "synth-nomirror", syn, meta, Options{MirrorPort: -1, Checks: []string{"gbn", "cnp"}})
	for _, f := range []string{"../examples/traces/write-drop.pcap", "../examples/traces/mixed.pcapng", "report/testdata/kinds-foreign.pcap",
		"report/testdata/kinds-mirror.pcap", "../cmd/lumina/testdata/odp-two-reads.pcap"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		analyzeWorkers(t, f, b, model.Meta{}, Options{})
	}
	conns := tracetest.Conns(2, 0xFFFFFE, model.VerbWrite)
	for _, sc := range []string{"0 1x 2 N1 1 2 A2 1/0e 1/C 1/A0", "Q0:3 r0 r1x r2 Q1:2 r1 r2", "0 1 F1 0x 0 A0"} {
		fr, err := tracetest.Frames(conns, sc, tracetest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, foreign := range []bool{false, true} {
			b, err := tracetest.Pcap(fr, tracetest.Options{Foreign: foreign})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []model.Meta{{}, {Connections: conns}} {
				analyzeWorkers(t, sc, b, m, Options{})
			}
		}
	}
	corpus, err := filepath.Glob("testdata/fuzz/FuzzAnalyze/*")
	if err != nil || len(corpus) == 0 {
		t.Fatalf("no fuzz corpus: %v", err)
	}
	readerCorpus, err := filepath.Glob("../trace/testdata/fuzz/FuzzReader/*") // malformed files: the same errors
	if err != nil || len(readerCorpus) == 0 {
		t.Fatalf("no reader fuzz corpus: %v", err)
	}
	corpus = append(corpus, readerCorpus...)
	for _, f := range corpus {
		b, err := readCorpusBytes(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []model.Meta{{}, {Connections: conns}} {
			analyzeWorkers(t, f, b, m, Options{})
		}
	}
}

// TestWorkersCanceled checks that a canceled analysis on workers returns
// the context's error, as on one.
func TestWorkersCanceled(t *testing.T) {
	s := newSynth(t, 4)
	b := s.pcap(t, 10_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, w := range []int{1, 2} {
		if _, err := Analyze(ctx, Bytes("synth", b), synthMeta(s), Options{Workers: w}); err != context.Canceled {
			t.Errorf("workers %d: error %v, want context.Canceled", w, err)
		}
	}
}

// readCorpusBytes reads the []byte of a one-value fuzz corpus file
// ("go test fuzz v1", then []byte("...")).
func readCorpusBytes(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, v, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if !ok || !strings.HasPrefix(v, "[]byte(") || !strings.HasSuffix(v, ")") {
		return nil, fmt.Errorf("%s: not a []byte fuzz corpus file", path)
	}
	s, err := strconv.Unquote(v[len("[]byte(") : len(v)-1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []byte(s), nil
}

// TestIntegFrameFast checks that the integrity check's fields and the
// TOS (the PFC priority's) taken from the decoder's fast path
// (model.Decoder.LastMirrorFields, LastTOS) are those integrity.ParseFrame
// and roce.FrameTOS read, on every frame of the synthetic trace, the
// example trace and the fuzz corpus, with and without mirror metadata.
func TestIntegFrameFast(t *testing.T) {
	s := newSynth(t, 4)
	traces := [][]byte{s.pcap(t, 20_000)}
	if b, err := os.ReadFile("../examples/traces/write-drop.pcap"); err == nil {
		traces = append(traces, b)
	}
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzAnalyze/*")
	for _, f := range corpus {
		if b, err := readCorpusBytes(f); err == nil {
			traces = append(traces, b)
		}
	}
	fast := 0
	for _, b := range traces {
		for _, mirror := range []bool{true, false} {
			dec := decoder(model.Meta{}, Options{}, 1024)
			dec.Mirror = mirror
			var p model.Pkt
			_ = pass(context.Background(), Bytes("t", b), func(tp *trace.Packet) {
				dec.Decode(tp, &p)
				if _, _, _, ok := dec.LastMirrorFields(); ok {
					fast++
				}
				got := integrity.Frame{TsNs: 1, Seq: 2, Switch: 3, Event: 4, MAC: true} // every field set: setIntegFrame must set each
				if setIntegFrame(&got, &dec, tp.Data); got != integrity.ParseFrame(tp.Data) {
					want := integrity.ParseFrame(tp.Data)
					t.Fatalf("frame %d: %+v, want %+v", tp.Index, got, want)
				}
				if tos, ok := dec.LastTOS(); ok && tos != roce.FrameTOS(tp.Data) {
					t.Fatalf("frame %d: TOS %#x, want %#x", tp.Index, tos, roce.FrameTOS(tp.Data))
				}
			})
		}
	}
	if fast < 20_000 {
		t.Errorf("%d frames read by the fast path, want the synthetic trace's at least", fast)
	}
}

// TestWorkersAllocs checks that the analysis on workers allocates per
// run, not per packet: a trace four times longer (no losses nor CNPs,
// whose records are the results) costs no more allocations, beyond a
// slack for the runtime's own.
func TestWorkersAllocs(t *testing.T) {
	mk := func(n int) (Source, model.Meta) {
		s := newSynth(t, 8)
		s.dropEvery, s.ecnEvery = 1<<30, 1<<30
		return Bytes("synth", s.pcap(t, n)), synthMeta(s)
	}
	const n = 40 * shardBatchLen
	var allocs [2]float64
	for i, k := range []int{1, 4} {
		src, meta := mk(k * n)
		allocs[i] = testing.AllocsPerRun(3, func() {
			r, err := Analyze(context.Background(), src, meta, Options{Workers: 2, NoPlots: true})
			if err != nil || r.Trace.Packets < k*n {
				t.Fatalf("%v, %d packets", err, r.Trace.Packets)
			}
		})
	}
	t.Logf("allocations per run: %v for %d packets, %v for %d", allocs[0], n, allocs[1], 4*n)
	if allocs[1] > allocs[0]+50 {
		t.Errorf("%v allocations for %d packets, %v for %d: it allocates per packet", allocs[1], 4*n, allocs[0], n)
	}
}

// TestWorkersChunks checks the pass on workers over a pcap trace read in
// chunks under the read turn (shard_chunk.go): batches cut by their
// packet count (records of 80 bytes) and by their buffer (144 bytes, a
// record read again by the next batch), a file as the same bytes in
// memory, and a record damaged deep in the trace, which every number of
// workers reports as one does, after the same packets.
func TestWorkersChunks(t *testing.T) {
	s := newSynth(t, 8)
	meta := synthMeta(s)
	small := s.pcapSnap(t, 3*chunkBatchLen+77, 64)
	if n := 3 * chunkBatchLen * 80; len(small) < n { // the count, not the bytes, cuts its batches
		t.Fatalf("%d bytes, want at least %d", len(small), n)
	}
	analyzeWorkers(t, "synth-64", small, meta, Options{})
	long := newSynth(t, 8).pcap(t, 3*chunkBatchBytes/144)
	analyzeWorkers(t, "synth-128", long, meta, Options{})

	bad := bytes.Clone(long)
	const damaged = chunkBatchBytes/144 + 1000 // in the second batch or later
	off := 24
	for range damaged {
		off += 16 + int(binary.LittleEndian.Uint32(bad[off+8:]))
	}
	binary.LittleEndian.PutUint32(bad[off+8:], trace.MaxPacketSize+1)
	analyzeWorkers(t, "synth-damaged", bad, meta, Options{})
	_, err := Analyze(context.Background(), Bytes("synth-damaged", bad), meta, Options{Workers: 2})
	if want := fmt.Sprintf("packet %d at offset %d", damaged, off); !errors.Is(err, trace.ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Errorf("damaged record: error %v, want one wrapping %v about %s", err, trace.ErrCorrupt, want)
	}

	path := filepath.Join(t.TempDir(), "synth.pcap")
	if err := os.WriteFile(path, long, 0o600); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, src := range []Source{Bytes(path, long), File(path)} {
		r, err := Analyze(context.Background(), src, meta, Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
		} else if string(got) != string(want) {
			t.Errorf("file on two workers: report differs from the same bytes':\n%s", firstDiff(string(got), string(want)))
		}
	}
}
