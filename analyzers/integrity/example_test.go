package integrity_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/trace"
)

// One pass over the dumpers' files writes the merged trace and checks it.
func Example_mergeAndCheck() {
	// Three dumpers' files, dealt 1:2:3, with seq 43 lost by dumper-0.
	per := remove(deal(trace.SeqSpace40, 1, 600, 1_000_000, wrr), 43)
	srcs := sourcesOf(nopTB{}, per)

	names := []string{"dumper-0", "dumper-1", "dumper-2"}
	chk, err := integrity.NewChecker(integrity.Options{ExpectFirstSeq: true}, names...)
	if err != nil {
		panic(err)
	}
	var merged bytes.Buffer
	bw := bufio.NewWriter(&merged)
	pw, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		panic(err)
	}
	stats, err := trace.Merge(func(src int, p trace.Packet) error {
		if err := chk.Observe(src, p); err != nil {
			return err
		}
		return pw.WritePacket(p.TimeNs, p.Data, p.OrigLen)
	}, srcs...)
	if err != nil {
		panic(err)
	}
	if err := bw.Flush(); err != nil {
		panic(err)
	}

	v := chk.Finish(integrity.Counters{
		SwitchRoCEReceived: integrity.Known(600),
		SwitchMirrored:     integrity.Known(600),
		Dumpers: []integrity.DumperCounters{
			{Captured: integrity.Known(99), Dropped: integrity.Known(1)},
			{Captured: integrity.Known(200), Dropped: integrity.Known(0)},
			{Captured: integrity.Known(300), Dropped: integrity.Known(0)},
		},
	})
	fmt.Println("merged:", stats.Packets, stats.PerSource)
	fmt.Println(v.String())
	for _, r := range v.Checks {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-9s %-4s %s", r.Name, r.Status, r.Reason)))
	}
	// Output:
	// merged: 599 [99 200 300]
	// fail: seq: gap: seq 43 missing (between dumper-2 #20 and dumper-1 #14); dumper-0 dropped 1 packet (kernel drops or buffer overflow)
	// seq       fail gap: seq 43 missing (between dumper-2 #20 and dumper-1 #14)
	// timestamp pass
	// mirrored  fail count: trace has 599 packets, switch mirrored 600
	// received  fail count: trace has 599 packets, switch received 600 RoCE packets
	// dumpers   fail dumper-0 dropped 1 packet (kernel drops or buffer overflow)
}
