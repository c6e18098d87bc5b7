package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envSteps returns the comma-separated positive numbers of the environment
// variable name (a benchmark's steps), or def when it is unset.
func envSteps(b *testing.B, name string, def []float64) []float64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var steps []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			b.Fatalf("%s: %q: want positive numbers, comma-separated", name, s)
		}
		steps = append(steps, v)
	}
	return steps
}

// BenchmarkTestLength (issue #23) runs the same sim test, 8 WRITE QPs of
// 1 MiB messages at MTU 1024 with the default dumpers (two, one worker
// each, no num-pkts), at about 1 M, 10 M and 20 M mirrored packets, each
// in its own lumina process, and reports per size the wall time per
// packet, the peak RSS of the process, and the time per packet relative to
// the 1 M test of the same run (the reference): constant memory and
// constant time per packet are what "tests of any length" means.
//
// LUMINA_LENGTHS overrides the sizes, in millions of data packets
// (e.g. "1,10,100"; the first is the reference). Each size needs about
// 150 MB of disk per million packets (the trace only:
// keep-dumper-files: false).
//
//	go test -run '^$' -bench BenchmarkTestLength -benchtime 1x ./tests/
func BenchmarkTestLength(b *testing.B) {
	var sizes []int
	for _, n := range envSteps(b, "LUMINA_LENGTHS", []float64{1, 10, 20}) {
		if n != float64(int(n)) {
			b.Fatalf("LUMINA_LENGTHS: %g is not a whole number of millions", n)
		}
		sizes = append(sizes, int(n))
	}
	type result struct {
		packets int
		wall    time.Duration
		rssKB   int64
	}
	var res []result
	b.ReportAllocs()
	for b.Loop() {
		res = res[:0]
		for _, m := range sizes {
			dir := b.TempDir()
			// 8 QPs × msgs × 1024 packets: 128 messages per QP per million.
			yaml := fmt.Sprintf(`name: length
keep-dumper-files: false
requester: {nic: {personality: cx5}}
responder: {nic: {personality: cx5}}
traffic: {num-qps: 8, rdma-verb: write, num-msgs-per-qp: %d, mtu: 1024, message-size: 1048576}
`, 128*m)
			file := filepath.Join(dir, "length.yaml")
			if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			cmd := exec.CommandContext(ctx, luminaBin, "run", "-q", "--retries", "0", "-o", dir, file)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			wall := time.Since(start)
			cancel()
			if err != nil {
				b.Fatalf("%d M: %v\n%s", m, err, out)
			}
			var rep struct {
				Valid   bool `json:"valid"`
				Packets int  `json:"packets"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "length", "0", "report.json"))
			if err == nil {
				err = json.Unmarshal(data, &rep)
			}
			if err != nil || !rep.Valid {
				b.Fatalf("%d M: report %+v, %v", m, rep, err)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			res = append(res, result{packets: rep.Packets, wall: wall, rssKB: ru.Maxrss})
			os.RemoveAll(dir)
		}
	}
	ref := float64(res[0].wall.Nanoseconds()) / float64(res[0].packets)
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%12s %10s %10s %12s %14s\n", "packets", "wall", "ns/packet", "vs first", "peak RSS (MB)")
	for i, r := range res {
		per := float64(r.wall.Nanoseconds()) / float64(r.packets)
		fmt.Fprintf(&tab, "%12d %10s %10.0f %12.2f %14.0f\n", r.packets, r.wall.Round(time.Millisecond), per, per/ref, float64(r.rssKB)/1024)
		b.ReportMetric(per, fmt.Sprintf("ns/pkt-%dM", sizes[i]))
		b.ReportMetric(float64(r.rssKB)/1024, fmt.Sprintf("MB-peak-%dM", sizes[i]))
		if i > 0 {
			b.ReportMetric(per/ref, fmt.Sprintf("time-ratio-%dM/%dM", sizes[i], sizes[0]))
		}
	}
	b.Log(tab.String())
}
