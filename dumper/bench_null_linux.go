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
	"strconv"
	"strings"
	"syscall"
	"time"
)

// benchNull measures the dpdk receive loop on the net_null vdev, which
// hands out mbufs as fast as the loop asks (no kernel, no NIC), next to
// dpdk-testpmd --forward-mode=rxonly on the same vdev, one after the other
// in child processes (EAL initializes once per process). Each runs one
// loop, on an lcore pinned to CPU 1, for cfg.NullDuration; the rate is the
// packets the loop took per second of its thread's CPU time (a busy-polling
// loop uses all the CPU it gets, so this is packets per second per core,
// and does not depend on how much of the core other processes took).
//
// The lumina side is `lumina dump --backend dpdk` with Capacity 1: the
// dumper fills net_null's mbufs with a mirror copy, so the loop filters
// and copies every frame into its ring, and the ring's drain, its spool
// full, only counts them (no disk can take tens of millions of frames a
// second; "ring full" counts the frames the loop found no slot for, which
// it does not copy: if many, the drain fell behind and the rate is
// flattered). Its loop time is the lcore thread's CPU clock (Dumper.Loop);
// testpmd's is its busiest thread's, the forwarding
// lcore, from /proc/PID/task/TID/schedstat just before it is told to stop.
func benchNull(ctx context.Context, cfg BenchConfig, tmp string, stdout io.Writer) ([]BenchResult, error) {
	if cfg.NullDuration == 0 {
		cfg.NullDuration = 3 * time.Second
	}
	fmt.Fprintf(stdout, "net_null vdev, %d B frames, one receive loop on CPU 1, %v each; rate = packets / CPU time of the loop's thread\n",
		130, cfg.NullDuration)
	fmt.Fprintf(stdout, "%-13s %12s %10s %12s %14s\n", "loop", "packets", "ring full", "loop CPU s", "Mpps per core")
	skip := func(tool, why string) BenchResult {
		fmt.Fprintf(stdout, "%-13s skipped: %s\n", tool, why)
		return BenchResult{Tool: tool, Skipped: why}
	}
	var ours, pmd BenchResult
	if !DPDKAvailable {
		ours = skip("null-lumina", "this lumina was built without dpdk (go build -tags dpdk ./cmd/lumina)")
	} else if r, err := nullLumina(ctx, cfg, tmp); err != nil {
		ours = skip("null-lumina", err.Error())
	} else {
		ours = r
	}
	if ours.Skipped == "" {
		printNull(stdout, ours)
	}
	if p, err := exec.LookPath("dpdk-testpmd"); err != nil {
		pmd = skip("null-testpmd", "dpdk-testpmd not installed (Debian: apt-get install -y dpdk-dev)")
	} else if r, err := nullTestpmd(ctx, cfg, p); err != nil {
		pmd = skip("null-testpmd", err.Error())
	} else {
		pmd = r
		printNull(stdout, pmd)
	}
	if ours.Skipped != "" || pmd.Skipped != "" || pmd.PPSPerCore == 0 {
		fmt.Fprintf(stdout, "net_null DPDK/testpmd rate: skipped (%s)\n", strings.TrimPrefix(ours.Skipped+"; "+pmd.Skipped, "; "))
	} else {
		fmt.Fprintf(stdout, "net_null DPDK/testpmd rate: %.2f (%.2f / %.2f Mpps per core)\n",
			ours.PPSPerCore/pmd.PPSPerCore, ours.PPSPerCore/1e6, pmd.PPSPerCore/1e6)
	}
	return []BenchResult{ours, pmd}, nil
}

func printNull(w io.Writer, r BenchResult) {
	full := "-"
	if r.Tool == "null-lumina" {
		full = strconv.FormatUint(r.RingFull, 10)
	}
	fmt.Fprintf(w, "%-13s %12d %10s %12.3f %14.2f\n", r.Tool, r.LoopPackets, full, float64(r.LoopCPUNs)/1e9, r.PPSPerCore/1e6)
}

// nullEAL is the EAL of both net_null runs: no hugepages, no PCI, one
// lcore on CPU 1 (lumina: the main lcore; testpmd adds a main lcore on
// CPU 0 that waits on stdin).
func nullEAL(lcores, prefix string) []string {
	return []string{"--no-huge", "-m", "512", "--no-pci", "--lcores=" + lcores, "--vdev=net_null0,size=130",
		"--file-prefix=" + prefix, "--log-level=lib.eal:error"}
}

func nullLumina(ctx context.Context, cfg BenchConfig, tmp string) (BenchResult, error) {
	res := BenchResult{Tool: "null-lumina"}
	cctx, cancel := context.WithTimeout(ctx, cfg.NullDuration+60*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("lumina-bench-null-%d", os.Getpid())
	defer os.RemoveAll(filepath.Join(ealRuntimeDir(), prefix))
	cmd := exec.CommandContext(cctx, cfg.Exe, "dump", "--backend", "dpdk", "--format", "json",
		"--eal", strings.Join(nullEAL("0@1", prefix), " "), "--duration", cfg.NullDuration.String(),
		"--out", filepath.Join(tmp, "null.pcap"), "--capacity", "1")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	werr := cmd.Run()
	var o struct {
		Loop *LoopStats `json:"loop"`
	}
	if err := json.Unmarshal([]byte(out.String()), &o); err != nil {
		return res, fmt.Errorf("lumina dump: %v (exit %v): %s", err, werr, strings.TrimSpace(errb.String()))
	}
	if o.Loop == nil || o.Loop.CPU == 0 {
		return res, errors.New("lumina dump reported no loop time")
	}
	res.LoopPackets = o.Loop.Received
	res.LoopCPUNs = o.Loop.CPU.Nanoseconds()
	res.RingFull = o.Loop.RingFull
	res.PPSPerCore = float64(res.LoopPackets) / (float64(res.LoopCPUNs) / 1e9)
	return res, nil
}

var testpmdRX = regexp.MustCompile(`Accumulated forward statistics for all ports[^\n]*\n\s*RX-packets:\s*(\d+)`)

func nullTestpmd(ctx context.Context, cfg BenchConfig, exe string) (BenchResult, error) {
	res := BenchResult{Tool: "null-testpmd"}
	cctx, cancel := context.WithTimeout(ctx, cfg.NullDuration+60*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("lumina-bench-testpmd-%d", os.Getpid())
	defer os.RemoveAll(filepath.Join(ealRuntimeDir(), prefix))
	args := append(nullEAL("0@0,1@1", prefix), "--", "--forward-mode=rxonly", "--burst=64", "--rxq=1", "--txq=1",
		"--total-num-mbufs=8192")
	// testpmd's stdout is a pipe: without line buffering its "Press enter
	// to exit" would wait in stdio's buffer until it exits.
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		args = append([]string{"-oL", exe}, args...)
		exe = sb
	}
	cmd := exec.CommandContext(cctx, exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return res, err
	}
	// Forwarding runs once testpmd asks for enter.
	var text strings.Builder // written by the scanner until scanDone
	ready := make(chan bool, 1)
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			text.WriteString(sc.Text() + "\n")
			if !sent && strings.Contains(sc.Text(), "Press enter to exit") {
				ready <- true
				sent = true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	fail := func(err error) (BenchResult, error) {
		cmd.Process.Kill()
		<-scanDone
		cmd.Wait()
		return res, err
	}
	select {
	case ok := <-ready:
		if !ok {
			<-scanDone
			cmd.Wait()
			return res, fmt.Errorf("dpdk-testpmd did not start: %s", strings.TrimSpace(errb.String()))
		}
	case <-time.After(30 * time.Second):
		return fail(errors.New("dpdk-testpmd did not start forwarding in 30 s"))
	}
	select {
	case <-time.After(cfg.NullDuration):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	loopNs := busiestThreadNs(cmd.Process.Pid)
	stdin.Write([]byte("\n"))
	stdin.Close()
	<-scanDone
	if err := cmd.Wait(); err != nil {
		return res, fmt.Errorf("dpdk-testpmd: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	m := testpmdRX.FindStringSubmatch(text.String())
	if m == nil || loopNs == 0 {
		return res, fmt.Errorf("dpdk-testpmd: no RX-packets total or no thread time in its output")
	}
	res.LoopPackets, _ = strconv.ParseUint(m[1], 10, 64)
	res.LoopCPUNs = loopNs
	res.PPSPerCore = float64(res.LoopPackets) / (float64(loopNs) / 1e9)
	return res, nil
}

// busiestThreadNs is the largest on-CPU time (ns, /proc schedstat) of the
// threads of process pid: a busy-polling lcore's.
func busiestThreadNs(pid int) int64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var best int64
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil && ns > best {
			best = ns
		}
	}
	return best
}
