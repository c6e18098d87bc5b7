package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/roce"
)

// dumpFlags: lumina dump.
type dumpFlags struct {
	cfg                     dumper.Config
	port                    uint
	eal, format, benchTools string
	dur                     time.Duration
	bench                   bool
	benchCount, benchFrame  int
}

func (f *dumpFlags) define(fs *flag.FlagSet) {
	cfg := &f.cfg
	fs.StringVar(&cfg.Name, "name", "dumper", "dumper `name` in reports")
	fs.StringVar(&cfg.Backend, "backend", "afpacket", "capture `backend`: afpacket, dpdk (binary built with -tags dpdk) or sim")
	fs.StringVar(&cfg.Interface, "interface", "", "network `interface` to capture on (afpacket)")
	fs.IntVar(&cfg.Workers, "workers", 1, "capture `workers` (fanout sockets or DPDK lcores)")
	fs.IntVar(&cfg.SnapLen, "snaplen", dumper.DefaultSnapLen, "bytes kept per frame (64..9216)")
	fs.IntVar(&cfg.Capacity, "capacity", dumper.DefaultCapacity, "frames each worker may write to disk (0: no limit)")
	fs.UintVar(&f.port, "mirror-port", roce.DefaultMirrorPort, "UDP destination `port` of mirror copies (rewrite-udp-dst-port)")
	fs.StringVar(&cfg.FanoutMode, "fanout", "lb", "afpacket fanout `mode`: lb, hash or cpu")
	fs.StringVar(&f.eal, "eal", "", "DPDK EAL `args`, space-separated, e.g. \"--no-huge -m 256 --no-pci --vdev=net_af_packet0,iface=eth1\"")
	fs.StringVar(&cfg.OutPath, "out", "", "pcap `file` to write on stop (default NAME.pcap)")
	fs.IntVar(&cfg.BlockSize, "block-size", dumper.DefaultBlockSize, "afpacket TPACKET_V3 block size in `bytes`")
	fs.IntVar(&cfg.BlockCount, "block-count", dumper.DefaultBlockCount, "afpacket TPACKET_V3 blocks per worker")
	fs.StringVar(&f.format, "format", "text", "report `format`: text or json")
	fs.DurationVar(&f.dur, "duration", 0, "stop after this long (0: on SIGTERM/SIGINT only)")
	fs.BoolVar(&f.bench, "bench", false, "benchmark afpacket, dpdk and tcpdump in two network namespaces (root), and the DPDK loop against dpdk-testpmd on net_null, instead of capturing")
	fs.IntVar(&f.benchCount, "bench-count", 2_000_000, "frames the benchmark blaster sends per run")
	fs.IntVar(&f.benchFrame, "bench-frame", 130, "benchmark frame length in bytes (74+4k)")
	fs.StringVar(&f.benchTools, "bench-tools", "afpacket,dpdk,tcpdump,null", "benchmark `tools`, comma-separated: afpacket, dpdk, tcpdump (one table, CPU per packet) and null (the DPDK loop and dpdk-testpmd on net_null, packets per second per core)")
}

func (f *dumpFlags) check(args []string) error {
	if len(args) != 0 {
		return usagef("dump takes no arguments (got %q)", args[0])
	}
	if f.format != "text" && f.format != "json" {
		return usagef("dump: --format must be text or json, not %q", f.format)
	}
	if f.port == 0 || f.port > 0xFFFF {
		return usagef("dump: --mirror-port %d out of range 1..65535", f.port)
	}
	if f.dur < 0 {
		return usagef("dump: --duration must not be negative")
	}
	if f.bench {
		if f.benchCount < 1 {
			return usagef("dump: --bench-count must be positive")
		}
		return nil
	}
	if f.cfg.Backend == "sim" {
		return usagef("dump: the sim backend is for embedding (dumper.Config.SimPort), not the CLI")
	}
	if f.cfg.Backend == "afpacket" && f.cfg.Interface == "" {
		return usagef("dump: --interface is required with --backend afpacket")
	}
	return nil
}

// runDump is lumina dump: a capture until the context ends (or
// --duration), then the report; or, with --bench, the capture benchmark.
func runDump(ctx context.Context, f *dumpFlags, _ []string, stdout, stderr io.Writer) error {
	cfg := f.cfg
	cfg.MirrorPort = uint16(f.port)
	cfg.EALArgs = strings.Fields(f.eal)
	if f.bench {
		bc := dumper.BenchConfig{Count: f.benchCount, FrameLen: f.benchFrame, SnapLen: cfg.SnapLen, Workers: cfg.Workers,
			Tools: strings.Split(f.benchTools, ",")}
		_, err := dumper.RunBench(ctx, bc, stdout, stderr)
		return err
	}
	// A worker blocks in write(2) for every chunk of its spool (direct
	// I/O takes a millisecond or so). With a single P (a dumper pinned
	// to one CPU), the runtime would hand that P to another thread on
	// every such write and sysmon would then poll every 20 µs: more CPU
	// than the capture itself. A second P, idle, avoids that; it costs
	// nothing while no other goroutine runs.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	cpuStart := dumper.ProcessCPUNs()
	d, err := dumper.New(cfg)
	if err != nil {
		return usagef("dump: %v", err)
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	c := d.Config()
	fmt.Fprintf(stderr, "lumina: dump: capturing on %s (backend %s, %d workers, snaplen %d, capacity %d, mirror port %d)\n",
		orDash(c.Interface), c.Backend, c.Workers, c.SnapLen, c.Capacity, c.MirrorPort)
	cpu0 := dumper.ProcessCPUNs()
	var timeout <-chan time.Time
	if f.dur > 0 {
		timeout = time.After(f.dur)
	}
	select {
	case <-ctx.Done():
	case <-timeout:
	}
	cpu1 := dumper.ProcessCPUNs()
	r, err := d.Stop()
	cpu2 := dumper.ProcessCPUNs()
	out := dumpOutput{Report: r, CPUSetupNs: cpu0 - cpuStart, CPUCaptureNs: cpu1 - cpu0, CPUStopNs: cpu2 - cpu1, CPUTotalNs: cpu2}
	if l := d.Loop(); l.CPU > 0 {
		out.Loop = &l
	}
	if f.format == "json" {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printDumpReport(stdout, out)
	}
	return err
}

// dumpOutput is the --format json report: dumper.Report plus this
// process's CPU time (user+system, getrusage, ns) in each phase: setup
// (allocating and touching the buffers, opening the backend), capture
// (from ready to the stop signal), stop (drain, restore, merge, write,
// fsync), and in total since the process started; with the dpdk backend,
// the lcores' receive loops (dumper.Dumper.Loop).
type dumpOutput struct {
	dumper.Report
	CPUSetupNs   int64             `json:"cpu_setup_ns"`
	CPUCaptureNs int64             `json:"cpu_capture_ns"`
	CPUStopNs    int64             `json:"cpu_stop_ns"`
	CPUTotalNs   int64             `json:"cpu_total_ns"`
	Loop         *dumper.LoopStats `json:"loop,omitempty"`
}

func printDumpReport(w io.Writer, o dumpOutput) {
	r := o.Report
	fmt.Fprintf(w, "dumper %s (%s): captured %d, kernel dropped %d, buffer dropped %d, foreign %d\n",
		r.Name, r.Backend, r.Captured, r.KernelDropped, r.BufferDropped, r.Foreign)
	for _, wr := range r.PerWorker {
		fmt.Fprintf(w, "  worker %d: received %d, captured %d, kernel dropped %d, buffer dropped %d, foreign %d\n",
			wr.Worker, wr.Received, wr.Captured, wr.KernelDropped, wr.BufferDropped, wr.Foreign)
	}
	if r.Path != "" {
		fmt.Fprintf(w, "wrote %s\n", r.Path)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
