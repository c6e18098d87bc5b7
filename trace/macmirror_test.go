package trace_test

import (
	"bytes"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

func TestMACMirrorConstants(t *testing.T) {
	if trace.EtherTypeMACMirror != roce.EtherTypeLuminaMirror {
		t.Errorf("EtherTypeMACMirror = %#x, want roce.EtherTypeLuminaMirror %#x", trace.EtherTypeMACMirror, roce.EtherTypeLuminaMirror)
	}
	if trace.MACMirrorMinLen != roce.MACMirrorHeaderLen+roce.EthernetLen {
		t.Errorf("MACMirrorMinLen = %d, want %d", trace.MACMirrorMinLen, roce.MACMirrorHeaderLen+roce.EthernetLen)
	}
}

// macCopy returns the wrapped mirror copy of a PFC frame with sequence
// number seq and timestamp ts.
func macCopy(seq, ts uint64, sent bool) []byte {
	pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, byte(seq)}, 0x08, [8]uint16{3: uint16(seq)})
	return roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: seq, TimestampNs: ts, Event: roce.EventPause}, sent, 3, pfc)
}

func TestIsMACMirror(t *testing.T) {
	wrapped := macCopy(7, 1000, true)
	var m roce.MACMirror
	for _, tt := range []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"wrapped PFC", wrapped, true},
		{"wrapped, shortest", wrapped[:trace.MACMirrorMinLen], true},
		{"wrapped, one byte short", wrapped[:trace.MACMirrorMinLen-1], false},
		{"RoCE copy", mirrorFrame(t, 7, 1000), false},
		{"PFC frame", roce.BuildPFC(nil, [6]byte{}, 1, [8]uint16{}), false},
		{"empty", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := trace.IsMACMirror(tt.frame); got != tt.want {
				t.Errorf("IsMACMirror = %v, want %v", got, tt.want)
			}
			// The roce parser is the reference.
			if ref := roce.ParseMACMirror(tt.frame, &m) == nil; ref != tt.want {
				t.Errorf("roce.ParseMACMirror ok = %v, want %v", ref, tt.want)
			}
			p := trace.Packet{Data: tt.frame, LinkType: trace.LinkTypeEthernet}
			if got := p.IsMACMirror(); got != tt.want {
				t.Errorf("Packet.IsMACMirror = %v, want %v", got, tt.want)
			}
			p.LinkType = trace.LinkTypeRaw
			if p.IsMACMirror() {
				t.Error("Packet.IsMACMirror of a raw IP packet = true")
			}
		})
	}
	if seq, ts, ok := trace.MirrorFields(wrapped); !ok || seq != 7 || ts != 1000 {
		t.Errorf("MirrorFields(wrapped) = %d, %d, %v; want 7, 1000, true", seq, ts, ok)
	}
}

// TestMergeMACMirror: wrapped copies share the RoCE copies' sequence and
// merge in order with them, whichever dumper got them.
func TestMergeMACMirror(t *testing.T) {
	var merged []rec
	per := make([][]rec, 2)
	for i := range 40 {
		seq := uint64(i + 1)
		ts := (t0 + uint64(i)*100) & roce.MirrorTimeMask
		var f []byte
		if i%5 == 2 {
			f = macCopy(seq, ts, i%2 == 0)
		} else {
			f = mirrorFrame(t, seq, ts)
		}
		r := rec{seq: seq, ts: ts, data: f[:min(len(f), testSnaplen)], orig: len(f)}
		merged = append(merged, r)
		per[i%3%2] = append(per[i%3%2], r)
	}
	out, stats, err := collect(t, trace.MergeOptions{}, [][]byte{pcapFile(t, per[0]), pcapFile(t, per[1])})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Packets != len(merged) || stats.OutOfOrder != 0 || len(out) != len(merged) {
		t.Fatalf("merged %d packets (%d out of order), want %d in order", stats.Packets, stats.OutOfOrder, len(merged))
	}
	macs := 0
	for i, g := range out {
		if g.seq != merged[i].seq || !bytes.Equal(g.data, merged[i].data) {
			t.Fatalf("merged packet %d = seq %d, want seq %d", i, g.seq, merged[i].seq)
		}
		if trace.IsMACMirror(g.data) {
			macs++
		}
	}
	if macs != 8 {
		t.Errorf("wrapped copies in the merge = %d, want 8", macs)
	}
}
