//go:build linux

package dumper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// ProcessCPUNs is this process's user+system CPU time in ns (getrusage).
func ProcessCPUNs() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// RunBench measures capture cost: in two fresh network namespaces joined
// by a veth pair, a blaster pinned to CPU 0 sends Count mirror copies as
// fast as it can, once per capture tool, while the tool runs pinned to
// CPU 1 in the other namespace: lumina dump with the afpacket backend,
// with the dpdk backend (if this binary has it) over net_af_packet, and
// tcpdump -w. The CPU cost is the capture process's rusage (user+system,
// as wait4 reports it) divided by the packets it captured. Kernel work
// done in the sender's softirq (veth delivery, the packet socket's copy
// into the ring) is charged to the blaster, for every tool alike.
// Everything it starts is bounded in time and cleaned up by PID and name.
// After the table it prints the afpacket/tcpdump CPU-per-packet ratio;
// then, for tool "null", benchNull's table and the net_null DPDK/testpmd
// rate ratio (a line saying why when either side is skipped).
func RunBench(ctx context.Context, cfg BenchConfig, stdout, stderr io.Writer) ([]BenchResult, error) {
	if cfg.Count == 0 {
		cfg.Count = 2_000_000
	}
	if cfg.FrameLen == 0 {
		cfg.FrameLen = 130
	}
	if cfg.SnapLen == 0 {
		cfg.SnapLen = DefaultSnapLen
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Exe = exe
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: the benchmark needs root (network namespaces)", ErrNotSupported)
	}
	s, err := NewMirrorStream(cfg.FrameLen, roce.DefaultMirrorPort)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "lumina-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	tools := cfg.Tools
	if len(tools) == 0 {
		tools = []string{"afpacket", "dpdk", "tcpdump", "null"}
	}
	var results []BenchResult
	byTool := map[string]BenchResult{}
	table := false
	for _, tool := range tools {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		switch tool {
		case "afpacket", "dpdk", "tcpdump":
		case "null":
			continue
		default:
			return results, fmt.Errorf("bench: unknown tool %q (afpacket, dpdk, tcpdump, null)", tool)
		}
		if !table {
			fmt.Fprintf(stdout, "%d frames of %d B, snaplen %d, %d worker(s), %d CPUs; blaster on CPU 0, capture on CPU 1\n",
				cfg.Count, cfg.FrameLen, cfg.SnapLen, cfg.Workers, runtime.NumCPU())
			fmt.Fprintf(stdout, "%-9s %12s %10s %8s %12s %10s %10s %10s\n", "tool", "offered pps", "captured", "lost", "CPU ns/pkt", "setup", "capture", "stop")
			table = true
		}
		r, err := benchOne(ctx, cfg, s, tool, tmp, stderr)
		if err != nil {
			r = BenchResult{Tool: tool, Skipped: err.Error()}
		}
		results = append(results, r)
		byTool[tool] = r
		if r.Skipped != "" {
			fmt.Fprintf(stdout, "%-9s skipped: %s\n", tool, r.Skipped)
			continue
		}
		phase := func(v float64) string {
			if r.Tool == "tcpdump" {
				return "-"
			}
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		fmt.Fprintf(stdout, "%-9s %12.0f %10d %8d %12.1f %10s %10s %10s\n", r.Tool, r.OfferedPPS, r.Captured, r.Lost,
			r.CPUNsPerPkt, phase(r.SetupNsPkt), phase(r.CaptureNsPkt), phase(r.StopNsPkt))
	}
	a, aok := byTool["afpacket"]
	t, tok := byTool["tcpdump"]
	switch {
	case !aok || !tok:
	case a.Skipped != "" || t.Skipped != "" || t.CPUNsPerPkt == 0:
		fmt.Fprintf(stdout, "afpacket/tcpdump CPU per packet: skipped (a capture was skipped)\n")
	default:
		fmt.Fprintf(stdout, "afpacket/tcpdump CPU per packet: %.2f (%.1f / %.1f ns)\n", a.CPUNsPerPkt/t.CPUNsPerPkt, a.CPUNsPerPkt, t.CPUNsPerPkt)
	}
	if slices.Contains(tools, "null") {
		rs, err := benchNull(ctx, cfg, tmp, stdout)
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

var nsSeq int

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// benchNetns creates namespaces tx and rx with veth ltx—lrx and returns a
// cleanup.
func benchNetns() (tx, rx string, cleanup func(), err error) {
	nsSeq++
	tx = fmt.Sprintf("lumina-bench-tx-%d-%d", os.Getpid(), nsSeq)
	rx = fmt.Sprintf("lumina-bench-rx-%d-%d", os.Getpid(), nsSeq)
	cleanup = func() {
		exec.Command("ip", "netns", "delete", tx).Run()
		exec.Command("ip", "netns", "delete", rx).Run()
	}
	steps := [][]string{
		{"ip", "netns", "add", tx}, {"ip", "netns", "add", rx},
		{"ip", "link", "add", "ltx", "netns", tx, "type", "veth", "peer", "name", "lrx", "netns", rx},
	}
	for _, ns := range [][2]string{{tx, "ltx"}, {rx, "lrx"}} {
		steps = append(steps,
			[]string{"ip", "netns", "exec", ns[0], "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
			[]string{"ip", "-n", ns[0], "link", "set", ns[1], "mtu", "9500", "up"})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			cleanup()
			return "", "", nil, err
		}
	}
	return tx, rx, cleanup, nil
}

var tcpdumpStats = regexp.MustCompile(`(\d+) packets dropped by kernel`)

func benchOne(ctx context.Context, cfg BenchConfig, s *MirrorStream, tool, tmp string, stderr io.Writer) (BenchResult, error) {
	res := BenchResult{Tool: tool, Sent: cfg.Count}
	out := filepath.Join(tmp, tool+".pcap")
	var cmdline []string
	var ready string
	capacity := cfg.Count/cfg.Workers + cfg.Count/10 + 1000
	dumpArgs := []string{cfg.Exe, "dump", "--format", "json", "--out", out, "--snaplen", strconv.Itoa(cfg.SnapLen),
		"--workers", strconv.Itoa(cfg.Workers), "--capacity", strconv.Itoa(capacity)}
	cpus := "1"
	if runtime.NumCPU() > 2 {
		cpus = fmt.Sprintf("1-%d", min(runtime.NumCPU()-1, cfg.Workers))
	}
	switch tool {
	case "afpacket":
		cmdline = append(dumpArgs, "--backend", "afpacket", "--interface", "lrx")
		ready = "lumina: dump: capturing"
	case "dpdk":
		if !DPDKAvailable {
			return res, errors.New("this lumina was built without dpdk (go build -tags dpdk ./cmd/lumina)")
		}
		lcores := make([]string, cfg.Workers)
		for i := range lcores {
			lcores[i] = fmt.Sprintf("%d@%d", i, 1+i%max(1, runtime.NumCPU()-1))
		}
		eal := fmt.Sprintf("--no-huge -m 512 --no-pci --lcores=%s --vdev=net_af_packet0,iface=lrx,qpairs=%d,framesz=2048,blocksz=4096,framecnt=65536 --log-level=lib.eal:error",
			strings.Join(lcores, ","), cfg.Workers)
		cmdline = append(dumpArgs, "--backend", "dpdk", "--eal", eal)
		ready = "lumina: dump: capturing"
	case "tcpdump":
		p, err := exec.LookPath("tcpdump")
		if err != nil {
			return res, errors.New("tcpdump not installed (apt-get install -y tcpdump)")
		}
		cmdline = []string{p, "-n", "-i", "lrx", "-w", out, "-s", strconv.Itoa(cfg.SnapLen), "-B", "65536",
			"udp", "dst", "port", strconv.Itoa(roce.DefaultMirrorPort)}
		ready = "listening on"
	}
	tx, rx, cleanup, err := benchNetns()
	if err != nil {
		return res, err
	}
	defer cleanup()

	full := append([]string{"taskset", "-c", cpus, "ip", "netns", "exec", rx}, cmdline...)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, full[0], full[1:]...)
	var stdoutBuf strings.Builder
	cmd.Stdout = &stdoutBuf
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return res, err
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return res, err
	}
	// Wait for the ready line; keep the rest of stderr.
	readyc := make(chan bool, 1)
	scanDone := make(chan struct{})
	var errText strings.Builder // written by the scanner until scanDone
	finish := func() error { <-scanDone; return cmd.Wait() }
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(errPipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			errText.WriteString(line + "\n")
			if !sent && strings.Contains(line, ready) {
				readyc <- true
				sent = true
			}
		}
		if !sent {
			readyc <- false
		}
	}()
	select {
	case ok := <-readyc:
		if !ok {
			finish()
			return res, fmt.Errorf("%s did not start: %s", tool, strings.TrimSpace(errText.String()))
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		finish()
		return res, fmt.Errorf("%s did not become ready in 60s", tool)
	}
	time.Sleep(200 * time.Millisecond)

	elapsed, err := blastNS(tx, s, cfg.Count)
	if err != nil {
		cmd.Process.Kill()
		finish()
		return res, err
	}
	res.OfferedPPS = float64(cfg.Count) / elapsed.Seconds()
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	werr := finish()
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var cpu int64
	if ru != nil {
		cpu = ru.Utime.Nano() + ru.Stime.Nano()
	}
	switch tool {
	case "tcpdump":
		if werr != nil {
			return res, fmt.Errorf("tcpdump: %v: %s", werr, errText.String())
		}
		n := 0
		if err := trace.ReadFile(out, func(trace.Packet) error { n++; return nil }); err != nil {
			return res, err
		}
		res.Captured = uint64(n)
		if m := tcpdumpStats.FindStringSubmatch(errText.String()); m != nil {
			fmt.Fprintf(stderr, "lumina: bench: tcpdump reports %s kernel drops\n", m[1])
		}
	default:
		var o struct {
			Report
			CPUSetupNs   int64 `json:"cpu_setup_ns"`
			CPUCaptureNs int64 `json:"cpu_capture_ns"`
			CPUStopNs    int64 `json:"cpu_stop_ns"`
		}
		if err := json.Unmarshal([]byte(stdoutBuf.String()), &o); err != nil {
			return res, fmt.Errorf("%s report: %v (exit %v): %s", tool, err, werr, errText.String())
		}
		res.Captured = o.Captured
		if o.Captured > 0 {
			c := float64(o.Captured)
			res.SetupNsPkt, res.CaptureNsPkt, res.StopNsPkt = float64(o.CPUSetupNs)/c, float64(o.CPUCaptureNs)/c, float64(o.CPUStopNs)/c
		}
	}
	if uint64(cfg.Count) > res.Captured {
		res.Lost = uint64(cfg.Count) - res.Captured
	}
	if res.Captured > 0 {
		res.CPUNsPerPkt = float64(cpu) / float64(res.Captured)
	}
	return res, nil
}

// blastNS sends n copies from interface ltx of namespace ns on a thread
// pinned to CPU 0, and returns how long it took.
func blastNS(ns string, s *MirrorStream, n int) (time.Duration, error) {
	type result struct {
		d   time.Duration
		err error
	}
	c := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread changed namespace and dies with us
		var set unix.CPUSet
		set.Set(0)
		unix.SchedSetaffinity(0, &set)
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			c <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			c <- result{err: fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		b, err := OpenBlaster("ltx")
		if err != nil {
			c <- result{err: err}
			return
		}
		defer b.Close()
		frame := s.Frame(nil, 1)
		start := time.Now()
		for seq := uint64(1); seq <= uint64(n); seq++ {
			s.Retag(frame, seq)
			if err := b.Send(frame); err != nil {
				c <- result{err: err}
				return
			}
		}
		c <- result{d: time.Since(start)}
	}()
	r := <-c
	return r.d, r.err
}
