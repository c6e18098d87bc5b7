package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
)

// BenchmarkPoolThroughSwitch (issue #22, point 3) offers traffic through
// the whole netns testbed — software RNICs, the software switch mirroring
// every packet, a pool of 4 dumpers × 1 afpacket worker — at rising line
// rates (a cx5 personality file whose line-rate-gbps is the offered rate;
// 4 WRITE QPs, MTU 1024, about 50 ms of traffic per step) and reports the
// highest rate, in mirrored packets per second, at which the run is valid
// (the integrity check passes), with the first rate at which it is not.
// On this 2-core machine the software RNICs and switch saturate near 60k
// mirrored packets/s, below what the pool takes (the dumpers alone:
// BenchmarkPoolRate in dumper/), so every step is valid and the metric is
// the testbed's, not the pool's. On sim there is no such rate: the virtual
// clock waits for every component.
//
// LUMINA_POOL_GBPS overrides the steps (e.g. "1,2,4,8").
//
//	go test -run '^$' -bench BenchmarkPoolThroughSwitch -benchtime 1x ./tests/
func BenchmarkPoolThroughSwitch(b *testing.B) {
	testutil.RequireNetns(b)
	steps := envSteps(b, "LUMINA_POOL_GBPS", []float64{1, 4, 16, 64, 100})
	type step struct {
		gbps    float64
		valid   bool
		packets int
		pps     float64
		reason  string
	}
	var res []step
	b.ReportAllocs()
	for b.Loop() {
		res = res[:0]
		for _, g := range steps {
			dir := b.TempDir()
			const qps, msg = 4, 1 << 20
			msgs := max(2, int(g*1e9/8*0.05)/(qps*msg))
			if err := os.WriteFile(filepath.Join(dir, "rate.yaml"), fmt.Appendf(nil, "base: cx5\nline-rate-gbps: %g\n", g), 0o644); err != nil {
				b.Fatal(err)
			}
			test := fmt.Sprintf(`name: pool
testbed: netns
requester: {nic: {personality: rate.yaml, ip-list: [10.0.0.1/24]}}
responder: {nic: {personality: rate.yaml, ip-list: [10.0.0.2/24]}}
dumpers: [{name: d0}, {name: d1}, {name: d2}, {name: d3}]
keep-dumper-files: false
traffic: {num-qps: %d, rdma-verb: write, num-msgs-per-qp: %d, mtu: 1024, message-size: %d}
`, qps, msgs, msg)
			file := filepath.Join(dir, "pool.yaml")
			if err := os.WriteFile(file, []byte(test), 0o644); err != nil {
				b.Fatal(err)
			}
			r, err := invoke("run", "-q", "--retries", "0", "-o", dir, file)
			if err != nil {
				b.Fatal(err)
			}
			rp := readReport(b, filepath.Join(dir, "pool", "0"))
			st := step{gbps: g, valid: rp.Valid, packets: rp.Packets, reason: rp.Integrity.Reason}
			if !rp.Valid && st.reason == "" {
				st.reason = rp.Error
			}
			if rp.Generator != nil && rp.Generator.DurationNs > 0 {
				st.pps = float64(rp.Packets) / (float64(rp.Generator.DurationNs) / 1e9)
			}
			res = append(res, st)
			if r.code != 0 && !rp.Valid {
				break // the pool's limit
			}
		}
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%10s %8s %10s %14s  %s\n", "offered", "valid", "packets", "mirrored pps", "integrity")
	best := 0.0
	for _, s := range res {
		fmt.Fprintf(&tab, "%7g Gb/s %8v %10d %14.0f  %s\n", s.gbps, s.valid, s.packets, s.pps, s.reason)
		if s.valid {
			best = max(best, s.pps)
		}
	}
	b.ReportMetric(best, "max-valid-pkts/s")
	if last := res[len(res)-1]; !last.valid {
		b.ReportMetric(last.gbps, "first-invalid-Gb/s")
	}
	b.Log(tab.String())
}
