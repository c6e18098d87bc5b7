package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/config"
)

// maxRetainedPerPacket is the most heap the run path may keep per packet
// of the trace, over report.html's graph data (report.RecordBytes a
// packet, up to report.MaxPlotBytes): its per-message records (a
// completion time, a message of the report) come to a few bytes a packet
// in these messages of 64 packets. A list of per-packet records of any
// use (a timestamp and a PSN: 16 B) exceeds it. docs/run.md#tests-of-any-length.
const maxRetainedPerPacket = 8

// heapChildEnv is set in the process TestRunHeapBounded measures in.
const heapChildEnv = "LUMINA_TEST_HEAP_CHILD"

// Issue #36, items 3 and 4: the `lumina run` path keeps no per-packet
// state beyond the graph data's bounded records. The same test at n and
// 4n messages on sim: the live heap when the merge has streamed the whole
// trace through the integrity check and the analyzers (before the
// analysis finishes, where such state would be largest) grows by the
// graph data's records of the extra packets and less than
// maxRetainedPerPacket bytes per extra packet besides.
func TestRunHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: two sim runs of 33 k and 131 k packets")
	}
	if os.Getenv(heapChildEnv) == "" {
		// This process's live heap also holds what the package's other
		// tests left, 12 MiB that changes while it is measured (run with
		// them, the growth read 0.4-1.4 MiB more than alone, past the
		// bound in half the runs): the test measures in a process of its
		// own.
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunHeapBounded$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), heapChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("the measuring process:\n%s", out)
		if err != nil {
			t.Fatalf("the measuring process: %v", err)
		}
		return
	}
	const yaml = "name: heap\nseed: 1\nkeep-dumper-files: false\n" +
		"traffic: {num-qps: 2, rdma-verb: write, num-msgs-per-qp: %d, mtu: 1024, message-size: 65536}\n"
	heap := func(msgs int) (live uint64, packets int) {
		tc, err := config.Parse("heap.yaml", fmt.Appendf(nil, yaml, msgs))
		if err != nil {
			t.Fatal(err)
		}
		o := Options{OutDir: t.TempDir(), Retries: 0, RetriesSet: true}
		o.hooks.merged = func() {
			runtime.GC()
			runtime.GC() // and the pools' victim caches
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			live = ms.HeapAlloc
		}
		res := RunTest(context.Background(), tc, o)
		if !res.OK() || len(res.Repeats) != 1 {
			t.Fatalf("%d messages: run failed: %v", msgs, res.Err)
		}
		if live == 0 {
			t.Fatalf("%d messages: the merged hook did not run", msgs)
		}
		return live, res.Repeats[0].Report.Packets
	}
	heap(16) // warm up: the packages' one-time state (pipelines, templates)
	small, n1 := heap(256)
	large, n4 := heap(1024)
	if n4 < 4*n1-1024 || n1 < 32768 {
		t.Fatalf("packets %d and %d, want about 32768 and 4 times that", n1, n4)
	}
	extra := n4 - n1
	// The graph data: a record per extra packet, and a partly filled
	// buffer of 4096 records per connection.
	plot := uint64(extra+2*4096) * uint64(report.RecordBytes)
	allowed := plot + uint64(extra)*maxRetainedPerPacket
	grew := int64(large) - int64(small)
	t.Logf("live heap after the merge: %d packets %.1f MiB, %d packets %.1f MiB (+%.1f MiB; graph data of the extra packets %.1f MiB)",
		n1, float64(small)/(1<<20), n4, float64(large)/(1<<20), float64(grew)/(1<<20), float64(plot)/(1<<20))
	if grew > int64(allowed) {
		t.Errorf("the run's live heap grew by %d B for %d more packets: %.1f B a packet beyond the graph data's %d, want at most %d",
			grew, extra, float64(grew-int64(plot))/float64(extra), report.RecordBytes, maxRetainedPerPacket)
	}
}
