package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// swCopy is one mirror copy of a fabric: its switch, sequence number and
// timestamp.
type swCopy struct {
	sw      uint8
	seq, ts uint64
	wrapped bool // a wrapped (PFC) copy instead of a RoCE one
	wantSrc int
	wantIdx int
}

func (c swCopy) String() string { return fmt.Sprintf("s%d#%d@%d", c.sw, c.seq, c.ts) }

// swFrame is the copy's frame: a RoCE mirror copy or a wrapped PFC copy
// whose sequence field names the switch.
func swFrame(tb testing.TB, c swCopy) []byte {
	tb.Helper()
	if c.wrapped {
		pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 65535})
		return roce.AppendMACMirror(nil, roce.MirrorMeta{Switch: c.sw, Seq: c.seq, TimestampNs: c.ts}, true, 201, pfc)
	}
	f := mirrorFrame(tb, c.seq, c.ts)
	putMAC48(f[6:], roce.MirrorSeqField(c.sw, c.seq))
	return f
}

// fabricFiles deals the copies to dumper files in the order given (the
// dumpers' arrival order): copy c goes to file c.wantSrc.
func fabricFiles(tb testing.TB, dumpers int, arrival []swCopy) [][]byte {
	per := make([][]rec, dumpers)
	for _, c := range arrival {
		f := swFrame(tb, c)
		per[c.wantSrc] = append(per[c.wantSrc], rec{seq: roce.MirrorSeqField(c.sw, c.seq), ts: c.ts, data: f, orig: len(f)})
	}
	files := make([][]byte, dumpers)
	for d := range per {
		files[d] = pcapFile(tb, per[d])
	}
	return files
}

// TestMergeSwitches merges two dumper files holding the copies of three
// switches interleaved in arrival order (each switch's copies in its
// sequence order) into (timestamp, switch, sequence) order, with each
// packet's source and index kept, through Merge and MergeFiles.
func TestMergeSwitches(t *testing.T) {
	// Arrival order per dumper; wantIdx is the index in that dumper.
	arrival := []swCopy{
		{sw: 2, seq: 1, ts: 100, wantSrc: 0, wantIdx: 0},
		{sw: 1, seq: 1, ts: 150, wantSrc: 1, wantIdx: 0},
		{sw: 0, seq: 1, ts: 100, wantSrc: 0, wantIdx: 1},
		{sw: 0, seq: 2, ts: 200, wantSrc: 1, wantIdx: 1, wrapped: true},
		{sw: 1, seq: 2, ts: 200, wantSrc: 0, wantIdx: 2},
		{sw: 2, seq: 2, ts: 250, wantSrc: 1, wantIdx: 2},
		{sw: 0, seq: 3, ts: 300, wantSrc: 0, wantIdx: 3},
		{sw: 2, seq: 3, ts: 260, wantSrc: 0, wantIdx: 4},
		{sw: 0, seq: 4, ts: 400, wantSrc: 1, wantIdx: 3},
		{sw: 1, seq: 3, ts: 450, wantSrc: 0, wantIdx: 5, wrapped: true},
	}
	files := fabricFiles(t, 2, arrival)
	want := []string{"s0#1@100", "s2#1@100", "s1#1@150", "s0#2@200", "s1#2@200", "s2#2@250", "s2#3@260", "s0#3@300", "s0#4@400", "s1#3@450"}
	key := func(c swCopy) string { return c.String() }
	byKey := map[string]swCopy{}
	for _, c := range arrival {
		byKey[key(c)] = c
	}
	check := func(t *testing.T, got []string, srcs, idx []int) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("merged order = %v, want %v", got, want)
		}
		for i, k := range got {
			if c := byKey[k]; srcs != nil && (srcs[i] != c.wantSrc || idx[i] != c.wantIdx) {
				t.Errorf("packet %d (%s): source %d index %d, want %d %d", i, k, srcs[i], idx[i], c.wantSrc, c.wantIdx)
			}
		}
	}
	name := func(data []byte) string {
		sw, seq, ts, ok := trace.MirrorSwitchSeq(data)
		if !ok {
			t.Fatalf("frame of %d bytes", len(data))
		}
		return swCopy{sw: sw, seq: seq, ts: ts}.String()
	}

	t.Run("Merge", func(t *testing.T) {
		tmp := t.TempDir()
		var got []string
		var srcs, idx []int
		stats, err := trace.MergeOptions{TempDir: tmp}.Merge(func(src int, p trace.Packet) error {
			got, srcs, idx = append(got, name(p.Data)), append(srcs, src), append(idx, p.Index)
			if _, _, ts, _ := trace.MirrorSwitchSeq(p.Data); uint64(p.TimeNs) != ts {
				t.Errorf("%s: record time %d", name(p.Data), p.TimeNs)
			}
			return nil
		}, sources(t, files)...)
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, srcs, idx)
		if stats.Packets != 10 || !slices.Equal(stats.PerSource, []int{6, 4}) || stats.OutOfOrder != 0 {
			t.Errorf("stats = %+v, want 10 packets, [6 4], 0 out of order", stats)
		}
		if left := dirNames(t, tmp); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})

	t.Run("MergeFiles", func(t *testing.T) {
		dir := t.TempDir()
		paths := writeFiles(t, dir, files)
		out := filepath.Join(dir, "trace.pcap")
		if _, err := trace.MergeFiles(out, 0, paths...); err != nil {
			t.Fatal(err)
		}
		var got []string
		err := trace.ReadFile(out, func(p trace.Packet) error {
			got = append(got, name(p.Data))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, nil, nil)
		if names := dirNames(t, dir); !slices.Equal(names, []string{"dumper-0.pcap", "dumper-1.pcap", "trace.pcap"}) {
			t.Errorf("directory after MergeFiles = %v, want the inputs and trace.pcap", names)
		}
	})

	t.Run("per-switch-out-of-order", func(t *testing.T) {
		// Switch 1's copies 2 and 1 swapped in dumper 0: the merge emits
		// them as they come and counts one packet out of order.
		bad := []swCopy{
			{sw: 1, seq: 2, ts: 200, wantSrc: 0},
			{sw: 0, seq: 1, ts: 100, wantSrc: 0},
			{sw: 1, seq: 1, ts: 150, wantSrc: 0},
			{sw: 0, seq: 2, ts: 300, wantSrc: 1},
		}
		var got []string
		stats, err := trace.MergeOptions{TempDir: t.TempDir()}.Merge(func(src int, p trace.Packet) error {
			got = append(got, name(p.Data))
			return nil
		}, sources(t, fabricFiles(t, 2, bad))...)
		if err != nil {
			t.Fatal(err)
		}
		if w := []string{"s0#1@100", "s1#2@200", "s1#1@150", "s0#2@300"}; !slices.Equal(got, w) || stats.OutOfOrder != 1 {
			t.Errorf("Merge = %v, %d out of order, want %v, 1", got, stats.OutOfOrder, w)
		}
	})

	t.Run("truncated-source", func(t *testing.T) {
		// Dumper 1 cut inside its last packet (s0#4): every packet before
		// s0#4 in the merged order is emitted, then the source's error.
		cut := [][]byte{files[0], files[1][:len(files[1])-10]}
		var got []string
		_, err := trace.MergeOptions{TempDir: t.TempDir()}.Merge(func(src int, p trace.Packet) error {
			got = append(got, name(p.Data))
			return nil
		}, sources(t, cut)...)
		if !errors.Is(err, trace.ErrTruncated) || !strings.HasPrefix(err.Error(), "trace: merge: dumper-1: trace: packet 3 at offset") {
			t.Fatalf("Merge error = %v, want dumper-1's ErrTruncated at packet 3", err)
		}
		if w := want[:6]; !slices.Equal(got, w) {
			t.Errorf("emitted %v, want %v", got, w)
		}
	})
}

// TestMergeFilesOneSwitchNoTemp: copies of switch 0 only are merged
// without temporary files (the pre-scan), in sequence order.
func TestMergeFilesOneSwitchNoTemp(t *testing.T) {
	dir := t.TempDir()
	paths := writeFiles(t, dir, filesOf(t, []uint64{1, 3}, []uint64{2, 4}))
	tmp := t.TempDir()
	// A TempDir that cannot be written would fail the split; the direct
	// merge never touches it.
	if err := os.Chmod(tmp, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(tmp, 0o700)
	out := filepath.Join(dir, "trace.pcap")
	if _, err := (trace.MergeOptions{TempDir: tmp}).MergeFiles(out, 0, paths...); err != nil && os.Geteuid() != 0 {
		t.Fatal(err)
	}
	var got []uint64
	trace.ReadFile(out, func(p trace.Packet) error {
		s, _, _ := trace.MirrorFields(p.Data)
		got = append(got, s)
		return nil
	})
	if !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Errorf("merged = %v, want [1 2 3 4]", got)
	}
	if b, _ := os.ReadFile(out); !bytes.HasPrefix(b, []byte{0x4d, 0x3c, 0xb2, 0xa1}) && !bytes.HasPrefix(b, []byte{0xa1, 0xb2, 0x3c, 0x4d}) {
		t.Errorf("output is not a nanosecond pcap")
	}
}

// TestMergeOneSwitchOption: MergeOptions.OneSwitch merges switch 0's
// copies directly (the same order as the split), and refuses a copy of
// another switch.
func TestMergeOneSwitchOption(t *testing.T) {
	files := filesOf(t, []uint64{1, 3, 5, 6}, []uint64{2, 4, 7})
	for _, opt := range []trace.MergeOptions{{OneSwitch: true}, {TempDir: t.TempDir()}} {
		out, stats, err := collect(t, opt, files)
		var srcs []int
		for _, g := range out {
			srcs = append(srcs, g.src)
		}
		if err != nil || !slices.Equal(seqsOf(recsOf(out)), []uint64{1, 2, 3, 4, 5, 6, 7}) || !slices.Equal(srcs, []int{0, 1, 0, 1, 0, 0, 1}) || stats.Packets != 7 {
			t.Errorf("Merge(OneSwitch %v) = %v from %v, %v, want 1..7 from [0 1 0 1 0 0 1]", opt.OneSwitch, seqsOf(recsOf(out)), srcs, err)
		}
	}
	fab := fabricFiles(t, 2, []swCopy{{sw: 0, seq: 1, ts: 100, wantSrc: 0}, {sw: 3, seq: 1, ts: 150, wantSrc: 1}})
	_, err := trace.MergeOptions{OneSwitch: true}.Merge(func(int, trace.Packet) error { return nil }, sources(t, fab)...)
	if want := "trace: merge: dumper-1: packet 0: a copy of switch 3: invalid argument (a merge of switch 0's copies only: MergeOptions.OneSwitch)"; !errors.Is(err, trace.ErrInvalid) || err.Error() != want {
		t.Errorf("Merge(OneSwitch) of a copy of switch 3: %v, want %q", err, want)
	}
}
