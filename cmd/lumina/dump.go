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

func init() {
	register(&command{
		name: "dump", args: "",
		summary: "capture mirror copies to disk until SIGTERM/SIGINT, then make them one pcap (see dumper/doc.go)",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			var cfg dumper.Config
			fs.StringVar(&cfg.Name, "name", "dumper", "dumper `name` in reports")
			fs.StringVar(&cfg.Backend, "backend", "afpacket", "capture `backend`: afpacket, dpdk (binary built with -tags dpdk) or sim")
			fs.StringVar(&cfg.Interface, "interface", "", "network `interface` to capture on (afpacket)")
			fs.IntVar(&cfg.Workers, "workers", 1, "capture `workers` (fanout sockets or DPDK lcores)")
			fs.IntVar(&cfg.SnapLen, "snaplen", dumper.DefaultSnapLen, "bytes kept per frame (64..9216)")
			fs.IntVar(&cfg.Capacity, "capacity", dumper.DefaultCapacity, "frames each worker may write to disk (0: no limit)")
			port := fs.Uint("mirror-port", roce.DefaultMirrorPort, "UDP destination `port` of mirror copies (rewrite-udp-dst-port)")
			fs.StringVar(&cfg.FanoutMode, "fanout", "lb", "afpacket fanout `mode`: lb, hash or cpu")
			eal := fs.String("eal", "", "DPDK EAL `args`, space-separated, e.g. \"--no-huge -m 256 --no-pci --vdev=net_af_packet0,iface=eth1\"")
			fs.StringVar(&cfg.OutPath, "out", "", "pcap `file` to write on stop (default NAME.pcap)")
			fs.IntVar(&cfg.BlockSize, "block-size", dumper.DefaultBlockSize, "afpacket TPACKET_V3 block size in `bytes`")
			fs.IntVar(&cfg.BlockCount, "block-count", dumper.DefaultBlockCount, "afpacket TPACKET_V3 blocks per worker")
			format := fs.String("format", "text", "report `format`: text or json")
			dur := fs.Duration("duration", 0, "stop after this long (0: on SIGTERM/SIGINT only)")
			bench := fs.Bool("bench", false, "benchmark afpacket, dpdk and tcpdump in two network namespaces (root), and the DPDK loop against dpdk-testpmd on net_null, instead of capturing")
			benchCount := fs.Int("bench-count", 2_000_000, "frames the benchmark blaster sends per run")
			benchFrame := fs.Int("bench-frame", 130, "benchmark frame length in bytes (74+4k)")
			benchTools := fs.String("bench-tools", "afpacket,dpdk,tcpdump,null", "benchmark `tools`, comma-separated: afpacket, dpdk, tcpdump (one table, CPU per packet) and null (the DPDK loop and dpdk-testpmd on net_null, packets per second per core)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) != 0 {
					return usagef("dump takes no arguments (got %q)", args[0])
				}
				if *format != "text" && *format != "json" {
					return usagef("dump: --format must be text or json, not %q", *format)
				}
				if *port == 0 || *port > 0xFFFF {
					return usagef("dump: --mirror-port %d out of range 1..65535", *port)
				}
				if *dur < 0 {
					return usagef("dump: --duration must not be negative")
				}
				cfg.MirrorPort = uint16(*port)
				cfg.EALArgs = strings.Fields(*eal)
				if *bench {
					if *benchCount < 1 {
						return usagef("dump: --bench-count must be positive")
					}
					bc := dumper.BenchConfig{Count: *benchCount, FrameLen: *benchFrame, SnapLen: cfg.SnapLen, Workers: cfg.Workers,
						Tools: strings.Split(*benchTools, ",")}
					_, err := dumper.RunBench(ctx, bc, stdout, stderr)
					return err
				}
				if cfg.Backend == "sim" {
					return usagef("dump: the sim backend is for embedding (dumper.Config.SimPort), not the CLI")
				}
				if cfg.Backend == "afpacket" && cfg.Interface == "" {
					return usagef("dump: --interface is required with --backend afpacket")
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
				if *dur > 0 {
					timeout = time.After(*dur)
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
				if *format == "json" {
					b, _ := json.MarshalIndent(out, "", "  ")
					fmt.Fprintf(stdout, "%s\n", b)
				} else {
					printDumpReport(stdout, out)
				}
				return err
			}
		},
	})
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
