package dumper

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestWriteFabric: a worker receiving the copies of two switches
// interleaved, each switch's in its sequence order, keeps one sorted run
// (runs are sorted per switch); two workers' spools merge into (timestamp,
// switch, sequence) order.
func TestWriteFabric(t *testing.T) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	type cp struct {
		sw      uint8
		seq, ts uint64
	}
	frame := func(c cp) []byte {
		f := s.Frame(nil, c.seq)
		putMAC := func(b []byte, v uint64) {
			for i := 5; i >= 0; i-- {
				b[i] = byte(v)
				v >>= 8
			}
		}
		putMAC(f[0:6], c.ts)
		putMAC(f[6:12], roce.MirrorSeqField(c.sw, c.seq))
		return f
	}
	workers := [][]cp{
		{{0, 1, 1000}, {1, 1, 1050}, {0, 2, 1100}, {1, 2, 1100}, {0, 4, 1300}},
		{{1, 3, 1200}, {0, 3, 1250}, {1, 4, 1400}},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcap")
	var sps []*spool
	for w, q := range workers {
		sp, err := newSpool(path, w, 128, roce.DefaultMirrorPort, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		var c batch
		for _, x := range q {
			f := frame(x)
			sp.put(&c, f, len(f))
		}
		sps = append(sps, sp)
	}
	if len(sps[0].runs) != 1 || len(sps[1].runs) != 1 || sps[0].seen != 0b11 {
		t.Fatalf("runs %d and %d, switches seen %b; want one run each, switches 0 and 1", len(sps[0].runs), len(sps[1].runs), sps[0].seen)
	}
	if err := finish(path, 128, sps); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range readAll(t, path) {
		sw, seq, ts, _ := trace.MirrorSwitchSeq(p.Data)
		got = append(got, fmt.Sprintf("s%d#%d@%d", sw, seq, ts))
	}
	want := []string{"s0#1@1000", "s1#1@1050", "s0#2@1100", "s1#2@1100", "s1#3@1200", "s0#3@1250", "s0#4@1300", "s1#4@1400"}
	if !slices.Equal(got, want) {
		t.Errorf("merged = %v, want %v", got, want)
	}
}
