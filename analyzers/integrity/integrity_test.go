package integrity_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// pkt is one mirror copy as the switch numbered and stamped it.
type pkt struct{ seq, ts uint64 }

// wrr is the injector's weighted round robin over 3 dumpers with weights
// 1:2:3: of every 6 packets, dumper-0 gets the 1st, dumper-1 the 2nd and
// 3rd, dumper-2 the 4th to 6th.
var wrr = []int{0, 1, 1, 2, 2, 2}

// deal numbers n packets from first in space sp, stamps them ts0, ts0+100,
// … (48-bit, wrapping) and deals them to dumpers by the cyclic pattern.
func deal(sp trace.SeqSpace, first uint64, n int, ts0 uint64, pattern []int) [][]pkt {
	dumpers := slices.Max(pattern) + 1
	per := make([][]pkt, dumpers)
	seq := first
	for i := range n {
		d := pattern[i%len(pattern)]
		per[d] = append(per[d], pkt{seq, (ts0 + uint64(i)*100) & roce.MirrorTimeMask})
		seq = sp.Next(seq)
	}
	return per
}

// clean is the default scenario: 600 packets, seq 1..600, timestamps from
// 1 000 000 ns, dealt 1:2:3. Packet seq s (trace index s-1) goes to
// dumper pattern[(s-1)%6].
func clean() [][]pkt { return deal(trace.SeqSpace40, 1, 600, 1_000_000, wrr) }

// counters returns counters that match per exactly.
func counters(per [][]pkt) integrity.Counters {
	var c integrity.Counters
	total := 0
	for i, p := range per {
		total += len(p)
		c.Dumpers = append(c.Dumpers, integrity.DumperCounters{
			Name:     fmt.Sprintf("dumper-%d", i),
			Captured: integrity.Known(uint64(len(p))),
			Dropped:  integrity.Known(0),
		})
	}
	c.SwitchMirrored = integrity.Known(uint64(total))
	c.SwitchRoCEReceived = integrity.Known(uint64(total))
	return c
}

var (
	ipA = netip.MustParseAddr("192.168.1.1")
	ipB = netip.MustParseAddr("192.168.1.2")
)

// frame builds the mirror copy of a RoCE WRITE as a dumper writes it:
// ApplyMirror as the injector's egress does, then RestoreMirror as the
// dumper does.
func frame(tb testing.TB, p pkt) []byte { return framePayload(tb, p, 16) }

// framePayload is frame with a payload of n bytes.
func framePayload(tb testing.TB, p pkt, n int) []byte {
	tb.Helper()
	spec := roce.FrameSpec{
		SrcIP: ipA, DstIP: ipB, UDPSrc: 0xD00D, Opcode: roce.RCWriteOnly,
		DestQP: 0x42, PSN: roce.PSN(p.seq & roce.PSNMask),
		RETH:    roce.RETHFields{VA: 0x1000, RKey: 7, Length: uint32(n)},
		Payload: bytes.Repeat([]byte{byte(p.seq)}, n),
	}
	f, err := spec.Append(nil)
	if err != nil {
		tb.Fatal(err)
	}
	if !roce.ApplyMirror(f, roce.MirrorMeta{Seq: p.seq, TimestampNs: p.ts}, roce.DefaultMirrorPort, uint16(p.seq)) ||
		!roce.RestoreMirror(f, roce.DefaultMirrorPort) {
		tb.Fatal("mirror rewrite failed")
	}
	return f
}

// pcapOf writes a dumper's file: record timestamps are the switch's.
func pcapOf(tb testing.TB, ps []pkt) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, 0, trace.LinkTypeEthernet)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range ps {
		if err := w.WritePacket(int64(p.ts), frame(tb, p), 0); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

func sourcesOf(tb testing.TB, per [][]pkt) []trace.MergeSource {
	tb.Helper()
	srcs := make([]trace.MergeSource, len(per))
	for i, ps := range per {
		r, err := trace.NewReader(bytes.NewReader(pcapOf(tb, ps)))
		if err != nil {
			tb.Fatal(err)
		}
		srcs[i] = trace.MergeSource{Name: fmt.Sprintf("dumper-%d", i), Reader: r}
	}
	return srcs
}

// Mutations of dumper files, by sequence number.

func find(per [][]pkt, seq uint64) (d, i int) {
	for d := range per {
		for i := range per[d] {
			if per[d][i].seq == seq {
				return d, i
			}
		}
	}
	panic(fmt.Sprintf("seq %d not found", seq))
}

func remove(per [][]pkt, seqs ...uint64) [][]pkt {
	for _, s := range seqs {
		d, i := find(per, s)
		per[d] = slices.Delete(per[d], i, i+1)
	}
	return per
}

func duplicate(per [][]pkt, seq uint64) [][]pkt {
	d, i := find(per, seq)
	per[d] = slices.Insert(per[d], i+1, per[d][i])
	return per
}

func swapTimestamps(per [][]pkt, a, b uint64) [][]pkt {
	da, ia := find(per, a)
	db, ib := find(per, b)
	per[da][ia].ts, per[db][ib].ts = per[db][ib].ts, per[da][ia].ts
	return per
}

func setSeq(per [][]pkt, old, seq uint64) [][]pkt {
	d, i := find(per, old)
	per[d][i].seq = seq
	return per
}

func TestCheckSources(t *testing.T) {
	type res = struct {
		check  string
		reason string
		index  int
	}
	tests := []struct {
		name string
		per  [][]pkt
		cnt  func(c *integrity.Counters) // adjusts counters(per); nil: exact
		opt  integrity.Options
		want res // zero check: pass
	}{
		{name: "clean", per: clean()},
		{
			// seq 43 was dumper-0's 8th packet; 42 is dumper-2 #20, 44 is
			// dumper-1 #14.
			name: "frame-removed", per: remove(clean(), 43),
			cnt:  func(c *integrity.Counters) { *c = counters(clean()) },
			want: res{"seq", "gap: seq 43 missing (between dumper-2 #20 and dumper-1 #14)", 42},
		},
		{
			name: "three-frames-removed", per: remove(clean(), 43, 44, 45),
			want: res{"seq", "gap: seq 43..45 missing (3 packets) (between dumper-2 #20 and dumper-2 #21)", 42},
		},
		{
			// Counters that match the damaged files: only the sequence
			// numbers tell.
			name: "frame-removed-counters-agree", per: remove(clean(), 43),
			want: res{"seq", "gap: seq 43 missing (between dumper-2 #20 and dumper-1 #14)", 42},
		},
		{
			name: "duplicate", per: duplicate(clean(), 77),
			want: res{"seq", "duplicate: seq 77 appears twice (dumper-2 #37 and dumper-2 #38)", 77},
		},
		{
			name: "out-of-order", per: setSeq(clean(), 300, 250),
			want: res{"seq", "out of order: seq 250 after seq 299 at trace index 299 (dumper-2 #149)", 299},
		},
		{
			// seq 90 is trace index 89 and dumper-2's packet #44.
			name: "timestamps-swapped", per: swapTimestamps(clean(), 89, 90),
			want: res{"timestamp", "timestamp: trace index 89 (seq 90, dumper-2 #44) at 1008800 ns is before index 88 at 1008900 ns", 89},
		},
		{
			name: "timestamps-swapped-within-tolerance", per: swapTimestamps(clean(), 89, 90),
			opt: integrity.Options{TimeToleranceNs: 100},
		},
		{
			name: "timestamps-swapped-beyond-tolerance", per: swapTimestamps(clean(), 89, 90),
			opt:  integrity.Options{TimeToleranceNs: 99},
			want: res{"timestamp", "timestamp: trace index 89 (seq 90, dumper-2 #44) at 1008800 ns is before index 88 at 1008900 ns", 89},
		},
		{
			name: "mirrored-mismatch", per: clean(),
			cnt:  func(c *integrity.Counters) { c.SwitchMirrored = integrity.Known(601) },
			want: res{"mirrored", "count: trace has 600 packets, switch mirrored 601", -1},
		},
		{
			name: "received-mismatch", per: clean(),
			cnt:  func(c *integrity.Counters) { c.SwitchRoCEReceived = integrity.Known(602) },
			want: res{"received", "count: trace has 600 packets, switch received 602 RoCE packets", -1},
		},
		{
			name: "mirrored-reported-before-received", per: clean(),
			cnt: func(c *integrity.Counters) {
				c.SwitchMirrored = integrity.Known(599)
				c.SwitchRoCEReceived = integrity.Known(602)
			},
			want: res{"mirrored", "count: trace has 600 packets, switch mirrored 599", -1},
		},
		{
			name: "dumper-drops", per: clean(),
			cnt:  func(c *integrity.Counters) { c.Dumpers[1].Dropped = integrity.Known(3) },
			want: res{"dumpers", "dumper-1 dropped 3 packets (kernel drops or buffer overflow)", -1},
		},
		{
			name: "dumper-drop-one", per: clean(),
			cnt:  func(c *integrity.Counters) { c.Dumpers[2].Dropped = integrity.Known(1) },
			want: res{"dumpers", "dumper-2 dropped 1 packet (kernel drops or buffer overflow)", -1},
		},
		{
			name: "dumper-captured-mismatch", per: clean(),
			cnt:  func(c *integrity.Counters) { c.Dumpers[2].Captured = integrity.Known(301) },
			want: res{"dumpers", "dumper-2 captured 301 packets, trace has 300 from it", -1},
		},
		{
			name: "dumper-count-mismatch", per: clean(),
			cnt:  func(c *integrity.Counters) { c.Dumpers = c.Dumpers[:2] },
			want: res{"dumpers", "dumpers: counters for 2 dumpers, trace has 3 sources", -1},
		},
		{
			// seq 499 is dumper-0 #83; 500 was dumper-1 #166, so 501 is
			// now dumper-1 #166.
			name: "seq-reported-before-timestamp-and-counts", per: swapTimestamps(remove(clean(), 500), 10, 11),
			cnt:  func(c *integrity.Counters) { *c = counters(clean()) },
			want: res{"seq", "gap: seq 500 missing (between dumper-0 #83 and dumper-1 #166)", 499},
		},
		{
			name: "wrap40", per: deal(trace.SeqSpace40, 1<<40-300, 600, 1<<48-30_000, wrr),
		},
		{
			name: "wrap31", per: deal(trace.SeqSpaceLumina31, 0x7FFFFFFF-300, 600, 1<<40-30_000, wrr),
			opt: integrity.Options{Seq: trace.SeqSpaceLumina31},
		},
		{
			// A mask of 2^31-1 expects 0 after 0x7FFFFFFF (trace index
			// 300, dumper-0 #50); the public tool sends 1 (dumper-1 #100).
			name: "wrap31-with-mask-space", per: deal(trace.SeqSpaceLumina31, 0x7FFFFFFF-300, 600, 1_000_000, wrr),
			opt:  integrity.Options{Seq: trace.SeqSpace{Min: 0, Max: 1<<31 - 1}},
			want: res{"seq", "gap: seq 0 missing (between dumper-0 #50 and dumper-1 #100)", 301},
		},
		{
			name: "wrap31-out-of-range-zero", per: setSeq(deal(trace.SeqSpaceLumina31, 0x7FFFFFFF-300, 600, 1_000_000, wrr), 1, 0),
			opt:  integrity.Options{Seq: trace.SeqSpaceLumina31},
			want: res{"seq", "range: seq 0 at trace index 301 (dumper-1 #100) is outside 1..2147483647", 301},
		},
		{
			name: "expect-first-seq", per: clean(),
			opt: integrity.Options{ExpectFirstSeq: true},
		},
		{
			name: "expect-first-seq-missing", per: remove(clean(), 1, 2),
			opt:  integrity.Options{ExpectFirstSeq: true},
			want: res{"seq", "start: first packet has seq 3 (dumper-1 #0), want 1", 0},
		},
		{
			name: "first-seq-anything", per: remove(clean(), 1, 2),
		},
		{
			name: "empty", per: [][]pkt{nil, nil, nil},
			want: res{"seq", "empty trace", -1},
		},
		{
			name: "empty-allowed", per: [][]pkt{nil, nil, nil},
			opt: integrity.Options{AllowEmpty: true},
		},
		{
			name: "empty-allowed-but-switch-mirrored", per: [][]pkt{nil, nil, nil},
			opt:  integrity.Options{AllowEmpty: true},
			cnt:  func(c *integrity.Counters) { c.SwitchMirrored = integrity.Known(5) },
			want: res{"mirrored", "count: trace has 0 packets, switch mirrored 5", -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cnt := counters(tt.per)
			if tt.cnt != nil {
				tt.cnt(&cnt)
			}
			v, err := integrity.CheckSources(cnt, tt.opt, sourcesOf(t, tt.per)...)
			if err != nil {
				t.Fatalf("CheckSources() error = %v", err)
			}
			got := res{v.Check, v.Reason, v.FirstBadIndex}
			want := tt.want
			if want.check == "" {
				want.index = -1
			}
			if got != want || v.Pass != (tt.want.check == "") {
				t.Errorf("CheckSources() = pass %v %+v, want pass %v %+v", v.Pass, got, tt.want.check == "", want)
			}
			if len(v.Checks) != 5 {
				t.Fatalf("CheckSources() has %d checks, want 5", len(v.Checks))
			}
		})
	}
}

func TestVerdictChecks(t *testing.T) {
	per := clean()
	t.Run("all-checked", func(t *testing.T) {
		v, err := integrity.CheckSources(counters(per), integrity.Options{}, sourcesOf(t, per)...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range v.Checks {
			got = append(got, r.Name+"="+r.Status.String())
		}
		want := []string{"seq=pass", "timestamp=pass", "mirrored=pass", "received=pass", "dumpers=pass"}
		if !slices.Equal(got, want) {
			t.Errorf("Checks = %v, want %v", got, want)
		}
		if s := v.String(); s != "pass" {
			t.Errorf("String() = %q, want %q", s, "pass")
		}
		if v.Stats.Packets != 600 || !slices.Equal(v.Stats.PerSource, []int{100, 200, 300}) ||
			v.Stats.FirstSeq != 1 || v.Stats.LastSeq != 600 {
			t.Errorf("Stats = %+v, want 600 packets, [100 200 300], seq 1..600", v.Stats)
		}
	})
	t.Run("counters-unknown", func(t *testing.T) {
		v, err := integrity.CheckSources(integrity.Counters{}, integrity.Options{}, sourcesOf(t, per)...)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Pass || !slices.Equal(v.Skipped(), []string{"mirrored", "received", "dumpers"}) {
			t.Errorf("CheckSources(no counters) = pass %v, skipped %v, want pass, skipped [mirrored received dumpers]", v.Pass, v.Skipped())
		}
		if s := v.String(); s != "pass (skipped: mirrored, received, dumpers)" {
			t.Errorf("String() = %q", s)
		}
		if v.Checks[2].Reason != "switch mirrored count unknown" {
			t.Errorf("mirrored reason = %q, want %q", v.Checks[2].Reason, "switch mirrored count unknown")
		}
	})
	t.Run("dumper-counters-unknown", func(t *testing.T) {
		c := counters(per)
		for i := range c.Dumpers {
			c.Dumpers[i].Captured, c.Dumpers[i].Dropped = integrity.Count{}, integrity.Count{}
		}
		v, err := integrity.CheckSources(c, integrity.Options{}, sourcesOf(t, per)...)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Pass || !slices.Equal(v.Skipped(), []string{"dumpers"}) {
			t.Errorf("skipped = %v, want [dumpers]", v.Skipped())
		}
	})
	t.Run("fail-string", func(t *testing.T) {
		c := counters(per)
		c.SwitchMirrored = integrity.Known(1)
		v, _ := integrity.CheckSources(c, integrity.Options{}, sourcesOf(t, per)...)
		if s := v.String(); s != "fail: mirrored: count: trace has 600 packets, switch mirrored 1" {
			t.Errorf("String() = %q", s)
		}
	})
	t.Run("stats-wraps", func(t *testing.T) {
		per := deal(trace.SeqSpace40, 1<<40-300, 600, 1<<48-30_000, wrr)
		v, err := integrity.CheckSources(counters(per), integrity.Options{}, sourcesOf(t, per)...)
		if err != nil {
			t.Fatal(err)
		}
		if v.Stats.SeqWraps != 1 || v.Stats.TimeWraps != 1 {
			t.Errorf("Stats = %+v, want 1 seq wrap, 1 timestamp wrap", v.Stats)
		}
	})
}

// TestCheckMergedFile checks a merged file (sources unknown): reasons
// locate packets by trace index, dumper counters are compared in total.
func TestCheckMergedFile(t *testing.T) {
	tests := []struct {
		name string
		per  [][]pkt
		cnt  func(c *integrity.Counters)
		want string
	}{
		{name: "clean", per: clean()},
		{name: "gap", per: remove(clean(), 43), cnt: func(c *integrity.Counters) { *c = counters(clean()) },
			want: "gap: seq 43 missing (between index 41 and index 42)"},
		{name: "duplicate", per: duplicate(clean(), 77),
			want: "duplicate: seq 77 appears twice (index 76 and index 77)"},
		{name: "out-of-order", per: setSeq(clean(), 300, 250),
			want: "out of order: seq 250 after seq 299 at trace index 299"},
		{name: "timestamp", per: swapTimestamps(clean(), 89, 90),
			want: "timestamp: trace index 89 (seq 90) at 1008800 ns is before index 88 at 1008900 ns"},
		{name: "dumpers-total", per: clean(), cnt: func(c *integrity.Counters) { c.Dumpers[0].Captured = integrity.Known(101) },
			want: "dumpers captured 601 packets in total, trace has 600"},
		{name: "dumper-drops", per: clean(), cnt: func(c *integrity.Counters) { c.Dumpers[0].Dropped = integrity.Known(2) },
			want: "dumper-0 dropped 2 packets (kernel drops or buffer overflow)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for i, ps := range tt.per {
				p := filepath.Join(dir, fmt.Sprintf("dumper-%d.pcap", i))
				if err := os.WriteFile(p, pcapOf(t, ps), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			merged := filepath.Join(dir, "merged.pcap")
			if _, err := trace.MergeFiles(merged, 0, paths...); err != nil {
				t.Fatal(err)
			}
			cnt := counters(tt.per)
			if tt.cnt != nil {
				tt.cnt(&cnt)
			}
			v, err := integrity.CheckFile(merged, cnt, integrity.Options{})
			if err != nil {
				t.Fatalf("CheckFile() error = %v", err)
			}
			if v.Reason != tt.want || v.Pass != (tt.want == "") {
				t.Errorf("CheckFile() = %v, %q, want %v, %q", v.Pass, v.Reason, tt.want == "", tt.want)
			}
			// The same dumper files checked with their sources known agree
			// on pass/fail.
			v2, err := integrity.CheckFiles(cnt, integrity.Options{}, paths...)
			if err != nil {
				t.Fatalf("CheckFiles() error = %v", err)
			}
			if v2.Pass != v.Pass || v2.Check != v.Check || v2.FirstBadIndex != v.FirstBadIndex {
				t.Errorf("CheckFiles() = %v %s %d, CheckFile() = %v %s %d, want the same", v2.Pass, v2.Check, v2.FirstBadIndex, v.Pass, v.Check, v.FirstBadIndex)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	per := clean()
	t.Run("truncated-source", func(t *testing.T) {
		f := pcapOf(t, per[1])
		r, err := trace.NewReader(bytes.NewReader(f[:len(f)-3]))
		if err != nil {
			t.Fatal(err)
		}
		srcs := sourcesOf(t, per)
		srcs[1].Reader = r
		_, err = integrity.CheckSources(counters(per), integrity.Options{}, srcs...)
		if !errors.Is(err, trace.ErrTruncated) || !strings.Contains(err.Error(), "dumper-1") {
			t.Errorf("CheckSources(truncated) error = %v, want ErrTruncated naming dumper-1", err)
		}
	})
	t.Run("not-mirror", func(t *testing.T) {
		var buf bytes.Buffer
		w, _ := trace.NewPcapWriter(&buf, 0, trace.LinkTypeEthernet)
		w.WritePacket(1, frame(t, pkt{1, 1}), 0)
		w.WritePacket(2, []byte{1, 2, 3}, 0)
		r, _ := trace.NewReader(&buf)
		_, err := integrity.Check(r, integrity.Counters{}, integrity.Options{})
		if !errors.Is(err, trace.ErrNotMirrorCopy) || err.Error() != "integrity: trace index 1: not a mirror copy (link type ETHERNET, 3 bytes)" {
			t.Errorf("Check(short frame) error = %v, want ErrNotMirrorCopy", err)
		}
	})
	t.Run("bad-options", func(t *testing.T) {
		for _, opt := range []integrity.Options{
			{Seq: trace.SeqSpace{Min: 3, Max: 2}},
			{TimeMask: 1000},
		} {
			if _, err := integrity.NewChecker(opt); !errors.Is(err, integrity.ErrOptions) {
				t.Errorf("NewChecker(%+v) error = %v, want ErrOptions", opt, err)
			}
		}
	})
	t.Run("missing-file", func(t *testing.T) {
		if _, err := integrity.CheckFile(filepath.Join(t.TempDir(), "nope.pcap"), integrity.Counters{}, integrity.Options{}); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("CheckFile(missing) error = %v, want not exist", err)
		}
	})
}

// TestChecker drives a Checker directly, as a dumper-side or streaming user
// would.
func TestChecker(t *testing.T) {
	chk, err := integrity.NewChecker(integrity.Options{TimeMask: 1<<32 - 1}, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	chk.Add(10, 1<<32-10, 0, 0)
	chk.Add(11, 5, 1, 0) // 32-bit timestamp wrap
	chk.Add(12, 6, 0, 1)
	v := chk.Finish(integrity.Counters{SwitchMirrored: integrity.Known(3)})
	if !v.Pass || v.Stats.TimeWraps != 1 || chk.Packets() != 3 {
		t.Errorf("Finish() = %v %+v, want pass with 1 time wrap", v.String(), v.Stats)
	}
	chk.Add(12, 7, 1, 1)
	v = chk.Finish(integrity.Counters{})
	if want := "duplicate: seq 12 appears twice (a #1 and b #1)"; v.Reason != want {
		t.Errorf("Finish() reason = %q, want %q", v.Reason, want)
	}
	chk.Reset()
	if v := chk.Finish(integrity.Counters{}); v.Reason != "empty trace" {
		t.Errorf("after Reset, Finish() reason = %q, want %q", v.Reason, "empty trace")
	}
}

func TestCheckerAllocs(t *testing.T) {
	chk, err := integrity.NewChecker(integrity.Options{}, "dumper-0", "dumper-1")
	if err != nil {
		t.Fatal(err)
	}
	f := frame(t, pkt{1, 1000})
	var seq, ts uint64 = 1, 1000
	i := 0
	p := trace.Packet{Data: f, LinkType: trace.LinkTypeEthernet}
	allocs := testing.AllocsPerRun(10000, func() {
		seq++
		ts += 100
		i++
		chk.Add(seq, ts, i&1, i>>1)
		// And through Observe, with a gap every time: violations are
		// recorded without allocating too.
		putMAC48(f[6:], seq+5)
		putMAC48(f[0:], ts)
		p.Index = i
		if err := chk.Observe(i&1, p); err != nil {
			t.Fatal(err)
		}
		seq += 5
	})
	if allocs != 0 {
		t.Errorf("Checker.Add + Observe allocations = %v, want 0", allocs)
	}
}

// TestCheckAllocsPerPacket checks that Check over a reader costs no
// allocation per packet: 10 times more packets, the same allocations.
func TestCheckAllocsPerPacket(t *testing.T) {
	build := func(n int) []byte {
		var ps []pkt
		for i := range n {
			ps = append(ps, pkt{uint64(i + 1), uint64(i) * 10})
		}
		return pcapOf(t, ps)
	}
	small, large := build(300), build(3000)
	br := bytes.NewReader(nil)
	allocs := func(in []byte, n int) float64 {
		return testing.AllocsPerRun(5, func() {
			br.Reset(in)
			r, err := trace.NewReader(br)
			if err != nil {
				t.Fatal(err)
			}
			v, err := integrity.Check(r, integrity.Counters{SwitchMirrored: integrity.Known(uint64(n))}, integrity.Options{})
			if err != nil || !v.Pass {
				t.Fatalf("Check() = %v, %v", v.String(), err)
			}
		})
	}
	if a, b := allocs(small, 300), allocs(large, 3000); a != b {
		t.Errorf("Check allocations: %v for 300 packets, %v for 3000, want equal (0 per packet)", a, b)
	}
}

func putMAC48(b []byte, v uint64) {
	for i := 5; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}
