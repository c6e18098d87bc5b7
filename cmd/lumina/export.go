package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/store"
	"github.com/netlumina/lumina/trace"
)

// exportCmdFlags: lumina export; each subcommand parses its own flags.
type exportCmdFlags struct{}

func (*exportCmdFlags) define(*flag.FlagSet) {}

func (f *exportCmdFlags) check(args []string) error {
	return checkSubcommand("export", args, f.argWords(nil))
}

// runExport is lumina export: parquet or store.
func runExport(ctx context.Context, _ *exportCmdFlags, args []string, stdout, stderr io.Writer) error {
	var err error
	if args[0] == "parquet" {
		err = exportParquetCmd(ctx, args[1:], stdout, stderr)
	} else {
		err = exportStoreCmd(args[1:], stdout, stderr)
	}
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// exportHelp prints the subcommands' usage after export's.
func exportHelp(w io.Writer) {
	fmt.Fprintln(w)
	exportParquetCmd(context.Background(), []string{"-h"}, w, io.Discard)
	fmt.Fprintln(w)
	exportStoreCmd([]string{"-h"}, w, io.Discard)
}

// exportParquetCmd is `lumina export parquet -o FILE TRACE|RUN_DIR`.
func exportParquetCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lumina export parquet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output Parquet `file` (required)")
	rg := fs.Int("row-group", defaultRowGroup, "`rows` per row group (bounds the memory: one row group is buffered)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: lumina export parquet -o FILE [--row-group N] TRACE|RUN_DIR\n\nOne row per frame of the trace (a run directory: its trace, with its connections), decoded as the analyzers decode it.")
		fs.PrintDefaults()
	}
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("export parquet needs one TRACE or RUN_DIR")
	}
	if *out == "" {
		return usagef("export parquet needs -o FILE")
	}
	if *rg < 1 {
		return usagef("export parquet: --row-group must be >= 1")
	}
	n, err := ExportParquet(ctx, pos[0], *out, *rg)
	if err != nil {
		return fmt.Errorf("export parquet: %w", err)
	}
	fmt.Fprintf(stderr, "lumina: %d packets → %s\n", n, *out)
	return nil
}

// defaultRowGroup is the rows of one row group: 64 Ki rows of about 200
// bytes buffered at most.
const defaultRowGroup = 64 << 10

// PacketRow is one frame of a trace as `lumina export parquet` writes it:
// the trace record, the analyzers' decoding (model.Pkt) and, for a mirror
// trace, the switch's mirror metadata (docs/decode.md).
type PacketRow struct {
	// Index is the frame's 0-based index in the trace.
	Index int64 `parquet:"index"`
	// CaptureNs is the capture time (ns since the epoch); TimeNs the
	// switch timestamp of a mirror copy (unwrapped), else the capture
	// time.
	CaptureNs int64 `parquet:"capture_ns"`
	TimeNs    int64 `parquet:"time_ns"`
	FrameLen  int64 `parquet:"frame_len"`
	// RoCE: an RC RoCE packet or a CNP the analyzers decode; the fields
	// below are zero otherwise.
	RoCE bool `parquet:"roce"`
	// Mirror: the trace carries mirror metadata; Switch, Seq and Event are
	// then the copy's (Switch also of a wrapped PFC/PAUSE copy).
	Mirror bool   `parquet:"mirror"`
	Switch int32  `parquet:"switch"`
	Seq    *int64 `parquet:"seq,optional"`
	Event  string `parquet:"event"`
	// Conn is the connection (the run's connection index) or null.
	Conn       *int32 `parquet:"conn,optional"`
	Dir        string `parquet:"dir"`
	Kind       string `parquet:"kind"`
	Opcode     string `parquet:"opcode"`
	OpcodeNum  int32  `parquet:"opcode_num"`
	SrcIP      string `parquet:"src_ip"`
	DstIP      string `parquet:"dst_ip"`
	DestQP     int64  `parquet:"dest_qp"`
	PSN        int64  `parquet:"psn"`
	AckReq     bool   `parquet:"ack_req"`
	Delivered  bool   `parquet:"delivered"`
	CE         bool   `parquet:"ce"`
	NPkts      int32  `parquet:"npkts"`
	DMALen     int64  `parquet:"dma_len"`
	PayloadLen int32  `parquet:"payload_len"`
	NAKCode    int32  `parquet:"nak_code"`
	RNRTimer   int32  `parquet:"rnr_timer"`
	MSN        int64  `parquet:"msn"`
	HoldNs     int64  `parquet:"hold_ns"`
	HoldUnitNs int64  `parquet:"hold_unit_ns"`
	QDepth     int64  `parquet:"qdepth"`
	QDepthUnit int64  `parquet:"qdepth_unit"`
}

// ExportParquet writes the trace of arg (a trace file, or a run directory
// whose trace it decodes with the run's connections) to out as Parquet, one
// row per frame, rowGroup rows per row group: the live heap is one row
// group's column buffers (about 15 MiB at 64 Ki rows), the zstd encoder
// (store.Zstd, a few MiB) and the footer's metadata, which grows by about
// 30 KB a row group (Parquet writes it at the end): 20 MB live at 0.13 M
// and 2.1 M packets, 24 MB at 10.5 M; the resident set is that twice
// over for the GC's headroom (GOGC=100) and the binary (docs/lab-results.md).
// The file is written atomically
// (a temporary file renamed into place). It returns the rows written.
func ExportParquet(ctx context.Context, arg, out string, rowGroup int) (int64, error) {
	in, err := analyzers.ReadInputs(arg, "")
	if err != nil {
		return 0, err
	}
	f, err := os.Open(in.Trace)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", in.Trace, err)
	}
	if lt := r.LinkType(); lt != trace.LinkTypeEthernet {
		return 0, fmt.Errorf("%s: link type %v not supported (Ethernet only)", in.Trace, lt)
	}
	meta := in.Meta
	dec := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: meta.Params.MTU, Holds: meta.Params.MirrorHolds}
	if len(meta.Connections) > 0 {
		dec.Table = model.NewTable(meta.Connections)
	}
	decided := meta.Mirror != nil
	if decided {
		dec.Mirror = *meta.Mirror
	}

	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	zc, err := store.NewZstd()
	if err != nil {
		tmp.Close()
		return 0, err
	}
	defer zc.Close()
	w := parquet.NewGenericWriter[PacketRow](tmp, parquet.Compression(zc), parquet.MaxRowsPerRowGroup(int64(rowGroup)),
		parquet.CreatedBy("lumina", version, ""))
	const batch = 1024
	buf := make([]PacketRow, 0, batch)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	var n int64
	var pkt model.Pkt
	var probe roce.Packet
	for {
		if n%(64<<10) == 0 {
			if err := ctx.Err(); err != nil {
				tmp.Close()
				return n, err
			}
		}
		tp, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tmp.Close()
			return n, fmt.Errorf("%s: %w", in.Trace, err)
		}
		if !decided && dec.Parser.Parse(tp.Data, tp.OrigLen, &probe) == nil {
			// The first RoCE frame decides, as the analyzers decide.
			dec.Mirror, decided = probe.LooksMirrored(), true
		}
		buf = append(buf, packetRow(&dec, &tp, &pkt))
		n++
		if len(buf) == batch {
			if err := flush(); err != nil {
				tmp.Close()
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		tmp.Close()
		return n, err
	}
	if err := w.Close(); err != nil {
		tmp.Close()
		return n, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return n, err
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), out)
}

// packetRow decodes one frame.
func packetRow(dec *model.Decoder, tp *trace.Packet, p *model.Pkt) PacketRow {
	row := PacketRow{Index: int64(tp.Index), CaptureNs: tp.TimeNs, TimeNs: tp.TimeNs, FrameLen: int64(tp.OrigLen), Mirror: dec.Mirror}
	if row.FrameLen == 0 {
		row.FrameLen = int64(len(tp.Data))
	}
	ok := dec.Decode(tp, p)
	if dec.Mirror {
		if sw, seq, _, fine := trace.MirrorSwitchSeq(tp.Data); fine {
			s := int64(seq)
			row.Switch, row.Seq = int32(sw), &s
		}
	}
	if !ok {
		return row
	}
	row.RoCE = true
	row.TimeNs = p.TimeNs
	if dec.Mirror {
		row.Event = p.Event.String()
	}
	if p.Conn >= 0 {
		c := int32(p.Conn)
		row.Conn = &c
	}
	row.Dir, row.Kind = p.Dir.String(), p.Kind.String()
	row.Opcode, row.OpcodeNum = p.Op.String(), int32(p.Op)
	row.SrcIP, row.DstIP = p.SrcIP.String(), p.DstIP.String()
	row.DestQP, row.PSN, row.AckReq = int64(p.DestQP), int64(p.PSN), p.AckReq
	row.Delivered, row.CE, row.NPkts, row.DMALen = p.Delivered, p.CE, int32(p.NPkts), int64(p.DMALen)
	row.PayloadLen, row.NAKCode, row.RNRTimer, row.MSN = int32(p.PayloadLen), int32(p.NAKCode), int32(p.RNRTimer), int64(p.MSN)
	row.HoldNs, row.HoldUnitNs, row.QDepth, row.QDepthUnit = p.HoldNs, p.HoldUnitNs, p.QDepth, p.QDepthUnit
	return row
}

// labelFlags collects --label k=v.
type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, not %q", s)
	}
	l[k] = v
	return nil
}

// exportStoreCmd is `lumina export store --root ROOT --job ID DIR...`.
func exportStoreCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lumina export store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "results store `directory` (required)")
	job := fs.String("job", "", "job `id`: storing the same id again replaces its rows (default: content-HASH of the report.json files and the job's test, testbed, nic, firmware and labels, so only a re-export of the same results with the same metadata replaces)")
	testbed := fs.String("testbed", "", "testbed `name` (default: report.json's)")
	nic := fs.String("nic", "", "NIC partition `value` (default: the label nic, else the requester's personality or driver)")
	fw := fs.String("firmware", "", "firmware partition `value` (default: the label firmware, else the requester's firmware, else unknown)")
	date := fs.String("date", "", "date partition `YYYY-MM-DD` (default: today, UTC)")
	labels := labelFlags{}
	fs.Var(labels, "label", "job label `key=value` (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: lumina export store --root ROOT [flags] RESULTS_DIR|TEST_DIR|RUN_DIR...\n\nAdd runs (report.json files) to the Parquet results store: runs and losses tables partitioned by nic, firmware and date.")
		fs.PrintDefaults()
	}
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return err
	}
	if *root == "" || len(pos) == 0 {
		return usagef("export store needs --root ROOT and at least one directory")
	}
	j := store.Job{ID: *job, Testbed: *testbed, NIC: *nic, Firmware: *fw, Labels: labels}
	if *date != "" {
		t, err := time.Parse(time.DateOnly, *date)
		if err != nil {
			return usagef("export store: --date: %v", err)
		}
		j.Time = t
	}
	var dirs []string
	for _, p := range pos {
		d, err := store.RunDirs(p)
		if err != nil {
			return fmt.Errorf("export store: %w", err)
		}
		dirs = append(dirs, d...)
	}
	if j.ID == "" {
		if j.ID, err = store.ContentID(j, dirs...); err != nil {
			return fmt.Errorf("export store: %w", err)
		}
	}
	files, err := store.Add(*root, j, dirs...)
	if err != nil {
		return fmt.Errorf("export store: %w", err)
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return nil
}

// argWords: export's subcommands, for completion.
func (*exportCmdFlags) argWords([]*command) []string { return []string{"parquet", "store"} }
