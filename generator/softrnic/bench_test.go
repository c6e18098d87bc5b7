package softrnic

import (
	"testing"
	"time"
)

// BenchmarkWrite1MB measures simulated packets per wall-clock second for a
// 1 MB WRITE (1024 packets at MTU 1024) between two NICs on a sim link.
func BenchmarkWrite1MB(b *testing.B) {
	const size = 1 << 20
	b.ReportAllocs()
	pkts := 0
	start := time.Now()
	for b.Loop() {
		p := newPair(b, pairOpts{bufSize: size, noHook: true})
		p.rq.PostSend(SendWR{Op: WRWrite, Local: p.reqMR, Length: size, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
		p.run(time.Second)
		if len(p.comps) != 1 || p.comps[0].Status != StatusSuccess {
			b.Fatalf("completions %+v", p.comps)
		}
		pkts += int(p.req.Counters().TxPackets + p.rsp.Counters().TxPackets)
	}
	b.ReportMetric(float64(pkts)/time.Since(start).Seconds(), "pkts/s")
}
