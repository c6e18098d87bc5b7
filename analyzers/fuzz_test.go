package analyzers

import (
	"context"
	"os"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

// FuzzAnalyze feeds arbitrary traces (seeded with real ones) to the whole
// pipeline, with and without inferred connections: it must never panic,
// and a report must always marshal.
func FuzzAnalyze(f *testing.F) {
	if b, err := os.ReadFile("../examples/traces/write-drop.pcap"); err == nil {
		f.Add(b)
	}
	conns := tracetest.Conns(2, 0xFFFFFE, model.VerbWrite)
	for _, s := range []string{"0 1x 2 N1 1 2 A2 1/0e 1/C 1/A0", "Q0:3 r0 r1x r2 Q1:2 r1 r2", "0 1 F1 0x 0 A0"} {
		fr, err := tracetest.Frames(conns, s, tracetest.Options{})
		if err != nil {
			f.Fatal(err)
		}
		for _, foreign := range []bool{false, true} {
			b, err := tracetest.Pcap(fr, tracetest.Options{Foreign: foreign})
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, meta := range []model.Meta{{}, {Connections: conns}} {
			r, err := Analyze(context.Background(), Bytes("fuzz", b), meta, Options{})
			if err != nil {
				continue
			}
			if _, err := r.MarshalIndent(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
