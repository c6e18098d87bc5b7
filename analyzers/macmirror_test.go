package analyzers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// mixedPcap writes the frames of script as mirror copies, with a wrapped
// PFC copy (XOFF, then XON, alternately sent and received) after every
// every-th RoCE copy when every > 0. Sequence numbers count both kinds from
// 1. It returns the trace, the RoCE copies and the wrapped copies, and
// for each trace index the index of the same RoCE copy in the trace
// without wrapped copies (-1 for a wrapped copy).
func mixedPcap(t *testing.T, conns []model.Connection, script string, every int) (pcap []byte, roceN, macN uint64, roceIndex []int) {
	t.Helper()
	fr, err := tracetest.Frames(conns, script, tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, 128, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	for i, f := range fr {
		b := bytes.Clone(f.Data)
		seq++
		if !roce.ApplyMirror(b, roce.MirrorMeta{Seq: seq, TimestampNs: uint64(f.TimeNs), Event: f.Event}, roce.DefaultMirrorPort, 0x1234) ||
			!roce.RestoreMirror(b, roce.DefaultMirrorPort) {
			t.Fatal("mirror codec failed")
		}
		if err := w.WritePacket(f.TimeNs, b, len(b)); err != nil {
			t.Fatal(err)
		}
		roceIndex = append(roceIndex, int(roceN))
		roceN++
		if every > 0 && i%every == every-1 {
			seq++
			ts := f.TimeNs + 1
			pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 2}, 0x08, [8]uint16{3: uint16(macN%2) * 0xFFFF})
			m := roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: seq, TimestampNs: uint64(ts), Event: roce.EventPause}, macN%2 == 0, 1, pfc)
			if err := w.WritePacket(ts, m, len(m)); err != nil {
				t.Fatal(err)
			}
			roceIndex = append(roceIndex, -1)
			macN++
		}
	}
	return buf.Bytes(), roceN, macN, roceIndex
}

// mapIndices rewrites, in a JSON value, every non-negative number under a
// key ending in "index" with index[number].
func mapIndices(v any, index []int) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if n, ok := x.(float64); ok && strings.HasSuffix(k, "index") && n >= 0 {
				v[k] = float64(index[int(n)])
			} else {
				mapIndices(x, index)
			}
		}
	case []any:
		for _, x := range v {
			mapIndices(x, index)
		}
	}
}

// TestMACCopiesIgnored: wrapped PFC copies interleaved with the RoCE copies
// change no analyzer's result, and the integrity check, with switch
// counters that count them as mirrored but not received, passes.
func TestMACCopiesIgnored(t *testing.T) {
	conns := tracetest.Conns(2, 0xFFFFFE, model.VerbWrite)
	// Losses, go-back-N, a retransmission, ECN and a CNP, a duplicate.
	const script = "0/0 1/0 0/1x 1/1 0/2 0/N1 1/A1 0/1 0/2a 0/A2 1/2e 1/C 1/3+ 1/3a 1/A3"
	// check analyzes the trace with a wrapped copy after every every-th
	// RoCE copy, and returns its checks as JSON, trace indices mapped to
	// those of the trace without wrapped copies.
	check := func(t *testing.T, every int) ([]byte, uint64) {
		pcap, roceN, macN, roceIndex := mixedPcap(t, conns, script, every)
		received, mirrored := roceN-1, roceN+macN // one duplicate copy
		mirror := true
		meta := model.Meta{Connections: conns, Mirror: &mirror, Switch: &model.Switch{RoCEReceived: &received, Mirrored: &mirrored}}
		for _, infer := range []bool{false, true} {
			m := meta
			if infer {
				m.Connections, m.Mirror = nil, nil
			}
			r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("mixed", pcap), m, analyzers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Integrity.Verdict != model.Pass || !r.Valid || !r.Trace.Mirrored || r.Trace.RoCEPackets != int(roceN) {
				t.Fatalf("every %d, inferred %v: integrity %+v, valid %v, mirrored %v, %d RoCE packets (want %d)\n%s",
					every, infer, r.Integrity, r.Valid, r.Trace.Mirrored, r.Trace.RoCEPackets, roceN, report.Text(r))
			}
			if infer {
				continue
			}
			b, err := json.Marshal(r.Checks)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			mapIndices(v, roceIndex)
			b, _ = json.Marshal(v)
			return b, macN
		}
		panic("unreachable")
	}
	wantJSON, _ := check(t, 0)
	for _, every := range []int{1, 2, 5} {
		got, macN := check(t, every)
		if macN == 0 {
			t.Fatalf("every %d: no wrapped copies", every)
		}
		if !bytes.Equal(got, wantJSON) {
			t.Errorf("every %d: checks with %d wrapped copies differ from those without:\n got %s\nwant %s", every, macN, got, wantJSON)
		}
	}
}
