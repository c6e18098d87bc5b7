package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
)

// runExample runs examples/<path> once (one repeat) on the sim testbed into
// a temporary directory and returns the repeat's run directory.
func runExample(t *testing.T, path string) string {
	t.Helper()
	f := filepath.Join("..", "..", "examples", path)
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := config.Parse(f, data)
	if err != nil {
		t.Fatal(err)
	}
	tc.NumRepeats = 1
	out := t.TempDir()
	if res := orchestrator.RunTest(context.Background(), tc, orchestrator.Options{OutDir: out}); res.Err != nil {
		t.Fatal(res.Err)
	}
	return filepath.Join(out, tc.Name, "0")
}

// TestExportParquetRunDir: one row per frame of the run's trace, in row
// groups of --row-group rows, with what lumina decode --format jsonl and
// report.json say of the same frames.
func TestExportParquetRunDir(t *testing.T) {
	run := runExample(t, "regression/cx5/fast-retx.yaml")
	out := filepath.Join(t.TempDir(), "t.parquet")
	code, stdout, stderr := runCLI("export", "parquet", "-o", out, "--row-group", "100", run)
	if code != 0 || stdout != "" || stderr != "lumina: 552 packets → "+out+"\n" {
		t.Fatalf("export parquet: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, rg := range pf.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	if want := []int64{100, 100, 100, 100, 100, 52}; !slices.Equal(sizes, want) {
		t.Errorf("row groups of %v rows, want %v", sizes, want)
	}
	rows, err := parquet.ReadFile[PacketRow](out)
	if err != nil {
		t.Fatal(err)
	}
	var rep orchestrator.Report
	b, err := os.ReadFile(filepath.Join(run, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rows) != rep.Packets || len(rows) != 552 {
		t.Fatalf("%d rows, report.json has %d packets; want 552", len(rows), rep.Packets)
	}
	// The drops are report.json's losses: same PSNs, same switch times.
	var drops []string
	for _, r := range rows {
		if r.Event == "drop" {
			drops = append(drops, fmt.Sprintf("%d@%d", r.PSN, r.TimeNs))
		}
	}
	var losses []string
	for _, l := range rep.Analysis.Checks.Retransmission.Losses {
		losses = append(losses, fmt.Sprintf("%d@%d", l.PSN, l.TimeNs))
	}
	if !slices.Equal(drops, losses) || len(drops) != 16 {
		t.Errorf("drops %q, report.json's losses %q (want 16)", drops, losses)
	}
	// Every frame as lumina decode --format jsonl prints it.
	code, stdout, stderr = runCLI("decode", "--format", "jsonl", filepath.Join(run, "trace.pcap"))
	if code != 0 {
		t.Fatalf("decode: %d %s", code, stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	i := 0
	kinds := map[string]int{}
	for ; sc.Scan(); i++ {
		var d struct {
			Index  int64  `json:"index"`
			Opcode string `json:"opcode"`
			PSN    int64  `json:"psn"`
			QP     int64  `json:"dest_qp"`
			Src    string `json:"src_ip"`
			Mirror struct {
				Seq   int64  `json:"seq"`
				TS    int64  `json:"ts_ns"`
				Event string `json:"event"`
			} `json:"mirror"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		r := rows[i]
		ev := d.Mirror.Event
		if ev == "" {
			ev = "none"
		}
		if r.Index != d.Index || r.Opcode != d.Opcode || r.PSN != d.PSN || r.DestQP != d.QP || r.SrcIP != d.Src ||
			r.Seq == nil || *r.Seq != d.Mirror.Seq || r.TimeNs != d.Mirror.TS || r.Event != ev || !r.RoCE || !r.Mirror ||
			r.Conn == nil || *r.Conn != 0 {
			t.Fatalf("row %d = %+v; decode says %s", i, r, sc.Bytes())
		}
		kinds[r.Kind+"/"+r.Dir]++
	}
	if i != len(rows) {
		t.Errorf("decode printed %d frames, the file has %d rows", i, len(rows))
	}
	// 16 messages × 20 packets, and Go-back-N resends from each lost
	// packet (at 0, 5, 10, 15: 20+15+10+5 packets, four times); a NAK per
	// loss and an ACK per message back.
	want := map[string]int{"ack/to-requester": 16, "data/to-responder": 16*20 + 4*(20+15+10+5), "nak/to-requester": 16}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}

// TestExportParquetTrace: a trace file alone (no run: no connections)
// and the errors.
func TestExportParquetTrace(t *testing.T) {
	tmp := t.TempDir()
	sample := filepath.Join("..", "..", "examples", "traces", "write-drop.pcap")
	out := filepath.Join(tmp, "w.parquet")
	code, _, stderr := runCLI("export", "parquet", sample, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := parquet.ReadFile[PacketRow](out)
	if err != nil {
		t.Fatal(err)
	}
	_, dec, _ := runCLI("decode", sample)
	if n := strings.Count(dec, "\n"); len(rows) != n || n == 0 {
		t.Errorf("%d rows, decode prints %d lines", len(rows), n)
	}
	for _, r := range rows {
		if r.Conn != nil {
			t.Fatalf("row %+v: a connection without the run's metadata", r)
		}
	}

	write(t, tmp, "garbage.pcap", []byte("this is not a capture file at all\n"))
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"export", "parquet", sample}, 2, "lumina: export parquet needs -o FILE\n"},
		{[]string{"export", "parquet", "-o", out}, 2, "lumina: export parquet needs one TRACE or RUN_DIR\n"},
		{[]string{"export", "parquet", "-o", out, "--row-group", "0", sample}, 2, "lumina: export parquet: --row-group must be >= 1\n"},
		{[]string{"export"}, 2, "lumina: export needs a subcommand: parquet or store\n"},
		{[]string{"export", "csv"}, 2, "lumina: export: unknown subcommand \"csv\" (want parquet or store)\n"},
		{[]string{"export", "parquet", "-o", filepath.Join(tmp, "g.parquet"), filepath.Join(tmp, "garbage.pcap")}, 1, "lumina: export parquet: "},
		{[]string{"export", "parquet", "-o", filepath.Join(tmp, "n.parquet"), filepath.Join(tmp, "nope.pcap")}, 1, "lumina: export parquet: "},
		{[]string{"export", "store", "x"}, 2, "lumina: export store needs --root ROOT and at least one directory\n"},
		{[]string{"export", "store", "--root", tmp, tmp}, 1, "lumina: export store: store: no run directory"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.HasPrefix(stderr, c.err) {
			t.Errorf("lumina %q: exit %d, %q; want %d, %q", c.args, code, stderr, c.code, c.err)
		}
	}
	for _, left := range []string{"g.parquet", "n.parquet"} {
		if _, err := os.Stat(filepath.Join(tmp, left)); err == nil {
			t.Errorf("a failed export left %s", left)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(tmp, ".*")); len(ents) != 0 {
		t.Errorf("temporary files left: %q", ents)
	}
}

// TestDiffStore: BASE and NEW selected from a results store compare as
// the directories they were stored from; one side may be a directory.
func TestDiffStore(t *testing.T) {
	tmp := t.TempDir()
	diffSetup(t, tmp)
	root := filepath.Join(tmp, "store")
	for _, s := range []struct{ dir, fw string }{{"base", "22.39"}, {"new", "22.40"}, {"same", "22.41"}} {
		code, stdout, stderr := runCLI("export", "store", "--root", root, "--firmware", s.fw, "--date", "2026-11-27", "--label", "build=b-"+s.fw, filepath.Join(tmp, s.dir))
		if code != 0 || strings.Count(stdout, "\n") != 2 {
			t.Fatalf("export store %s: exit %d, %q %q", s.dir, code, stdout, stderr)
		}
	}
	_, want, _ := runCLI("diff", "--format", "json", filepath.Join(tmp, "base"), filepath.Join(tmp, "new"))
	for _, args := range [][]string{
		{"--store", root, "--base", "firmware=22.39", "--new", "firmware=22.40"},
		{"--store", root, "--base", "build=b-22.39,nic=cx5", "--new", "firmware=22.40", "--new", "firmware=22.40"},
		{"--store", root, "--new", "firmware=22.40,date=2026-11-27", filepath.Join(tmp, "base")},
		{"--store", root, "--base", "firmware=22.39", filepath.Join(tmp, "new")},
	} {
		code, got, stderr := runCLI(append([]string{"diff", "--format", "json"}, args...)...)
		if code != 1 {
			t.Errorf("diff %q: exit %d (%s), want 1 (a regression)", args, code, stderr)
		}
		var g, w map[string]any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		delete(g, "base")
		delete(g, "new")
		delete(w, "base")
		delete(w, "new")
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("diff %q differs from the directories' diff:\n%s\n%s", args, gb, wb)
		}
	}
	code, stdout, _ := runCLI("diff", "--store", root, "--base", "firmware=22.39", "--new", "firmware=22.41")
	if code != 0 || !strings.HasPrefix(stdout, "lumina diff: BASE "+root+"[firmware=22.39] → NEW "+root+"[firmware=22.41]\n") {
		t.Errorf("same NIC from the store: exit %d, %.120q", code, stdout)
	}
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"diff", "--base", "firmware=1", "x"}, 2, "lumina: diff: --base and --new select from a results store: give --store ROOT\n"},
		{[]string{"diff", "--store", root, "a", "b"}, 2, "lumina: diff: --store needs --base SEL and/or --new SEL\n"},
		{[]string{"diff", "--store", root, "--base", "firmware=22.39"}, 2, "lumina: diff: with --store and one of --base or --new, give 1 directories, not 0\n"},
		{[]string{"diff", "--store", root, "--base", "a=1", "--new", "b=2", "x"}, 2, "lumina: diff: with --store and --base and --new, give 0 directories, not 1\n"},
		{[]string{"diff", "--store", root, "--base", "firmware", "--new", "b=2"}, 2, "lumina: diff: --base: store: bad selection \"firmware\""},
		{[]string{"diff", "--store", root, "--base", "firmware=9", "--new", "firmware=22.40"}, 1, "lumina: diff: BASE: store: no run matches the selection \"firmware=9\""},
		{[]string{"diff", "--store", filepath.Join(tmp, "nope"), "--base", "firmware=9", "--new", "firmware=22.40"}, 1, "lumina: diff: BASE: store: "},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.HasPrefix(stderr, c.err) {
			t.Errorf("lumina %q: exit %d, %q; want %d, %q", c.args, code, stderr, c.code, c.err)
		}
	}
}

// TestExportStoreDefaultJobID: without --job, the job id comes from the
// results and the metadata given, not the directory's path: the same
// directory exported under two firmwares keeps both (the id of the
// directories' paths deleted the first), and a re-export of the same
// results with the same metadata replaces its rows.
func TestExportStoreDefaultJobID(t *testing.T) {
	tmp := t.TempDir()
	diffSetup(t, tmp)
	root := filepath.Join(tmp, "store")
	dir := filepath.Join(tmp, "base")
	export := func(args ...string) {
		t.Helper()
		a := append([]string{"export", "store", "--root", root, "--date", "2026-11-27"}, args...)
		if code, stdout, stderr := runCLI(append(a, dir)...); code != 0 {
			t.Fatalf("%q: exit %d, %q %q", a, code, stdout, stderr)
		}
	}
	files := func() []string {
		t.Helper()
		f, err := filepath.Glob(filepath.Join(root, "*", "*", "*", "*", "*.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range f {
			f[i], _ = filepath.Rel(root, filepath.Dir(f[i]))
		}
		return f
	}
	export("--firmware", "A")
	export("--firmware", "B")
	export("--firmware", "B", "--label", "build=7")
	got := files()
	want := []string{"losses/nic=cx5/firmware=A/date=2026-11-27", "losses/nic=cx5/firmware=B/date=2026-11-27", "losses/nic=cx5/firmware=B/date=2026-11-27",
		"runs/nic=cx5/firmware=A/date=2026-11-27", "runs/nic=cx5/firmware=B/date=2026-11-27", "runs/nic=cx5/firmware=B/date=2026-11-27"}
	if !slices.Equal(got, want) {
		t.Fatalf("after firmware A, B, B+label: %q, want %q", got, want)
	}
	export("--firmware", "A")
	export("--firmware", "B", "--label", "build=7")
	if got := files(); !slices.Equal(got, want) {
		t.Errorf("after re-exporting the same results: %q, want %q (the same job replaced)", got, want)
	}
}
