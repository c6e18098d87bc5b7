package main

import (
	"bytes"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

func benchPackets(t testing.TB) []trace.Packet {
	r, err := trace.NewReader(bytes.NewReader(buildWriteDrop(t)))
	if err != nil {
		t.Fatal(err)
	}
	var ps []trace.Packet
	for {
		p, err := r.Next()
		if err != nil {
			break
		}
		p.Data = append([]byte(nil), p.Data...)
		ps = append(ps, p)
	}
	return ps
}

func newTestDecoder(jsonl bool) *decoder {
	return &decoder{jsonl: jsonl, mirrorMode: "auto", parser: roce.Parser{VerifyICRC: true, MirrorPort: roce.DefaultMirrorPort}}
}

func TestDecodeFrameAllocs(t *testing.T) {
	ps := benchPackets(t)
	for _, jsonl := range []bool{false, true} {
		d := newTestDecoder(jsonl)
		d.frame(ps[0]) // grow the line buffer once
		if n := testing.AllocsPerRun(200, func() {
			for _, p := range ps {
				d.frame(p)
			}
		}); n != 0 {
			t.Errorf("decoder.frame (jsonl=%v) allocs per %d frames = %v, want 0", jsonl, len(ps), n)
		}
	}
}

// BenchmarkDecodeFrame measures formatting one frame (parse + ICRC check +
// line formatting), the per-frame cost of "lumina decode".
func BenchmarkDecodeFrame(b *testing.B) {
	ps := benchPackets(b)
	for _, jsonl := range []bool{false, true} {
		name := "text"
		if jsonl {
			name = "jsonl"
		}
		b.Run(name, func(b *testing.B) {
			d := newTestDecoder(jsonl)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				d.frame(ps[i%len(ps)])
				i++
			}
		})
	}
}
