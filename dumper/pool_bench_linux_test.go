//go:build linux

package dumper

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// poolDumpers is the pool BenchmarkPoolRate measures: 4 dumpers of one
// worker each.
const poolDumpers = 4

// poolTrial is one offered rate: the copies sent, each to dumper seq mod
// poolDumpers (the switch's mirror round robin), and whether the
// integrity check passed over the pool's files.
type poolTrial struct {
	rate, achieved float64 // offered and achieved packets per second
	pass           bool
	reason         string
}

// BenchmarkPoolRate finds, by a bounded search, the highest offered rate
// (mirror copies per second) at which a pool of 4 dumpers × 1 worker still
// passes the integrity check: copies spread round robin over the pool, as
// the switch's mirror sessions do.
//
//   - netns: 4 afpacket dumpers, each on its own veth pair, fed by a paced
//     sender over 4 AF_PACKET sockets. The rate doubles from 50 kpps until a
//     trial fails or the sender cannot reach it, then 4 bisection steps
//     narrow the bracket. Each trial sends half a second of copies (20 k to
//     1 M). Reported: max-pkts/s (the highest rate achieved by a passing
//     trial), and sender-limited=1 when no trial failed (the sender, one
//     thread and one syscall per copy, not the pool, was the limit).
//   - sim: 4 sim dumpers on sim links. The sim dumper is lossless at any
//     offered rate (the virtual clock waits for the disk), so there is no
//     rate to search: reported is the wall-clock rate the pool writes at,
//     wall-pkts/s, for 1 M copies, integrity checked.
//
// Wall-clock rates depend on the machine and its load; note the load next
// to them.
//
//	go test -run '^$' -bench BenchmarkPoolRate -benchtime 1x ./dumper/
func BenchmarkPoolRate(b *testing.B) {
	b.Run("sim", func(b *testing.B) {
		b.ReportAllocs()
		const n = 1_000_000
		var wall time.Duration
		for range b.N {
			tr, d := poolSim(b, n)
			if !tr.pass {
				b.Fatalf("sim pool: integrity failed: %s", tr.reason)
			}
			wall += d
		}
		b.ReportMetric(float64(n*b.N)/wall.Seconds(), "wall-pkts/s")
	})
	b.Run("netns", func(b *testing.B) {
		b.ReportAllocs()
		testutil.RequireNetns(b)
		var best float64
		limited := 1.0
		for range b.N {
			best, limited = 0, 1
			lo, hi := 0.0, 0.0
			for rate := 50_000.0; rate <= 6_400_000 && hi == 0; rate *= 2 {
				tr := poolNetns(b, rate)
				b.Logf("offered %.0f pps: achieved %.0f, pass %v %s", tr.rate, tr.achieved, tr.pass, tr.reason)
				if tr.pass {
					best = max(best, tr.achieved)
				}
				switch {
				case !tr.pass:
					hi, limited = rate, 0
				case tr.achieved < 0.9*rate:
					hi = -1 // the sender's limit: stop doubling
				default:
					lo = rate
				}
			}
			for i := 0; i < 4 && hi > 0; i++ {
				mid := (lo + hi) / 2
				tr := poolNetns(b, mid)
				b.Logf("offered %.0f pps: achieved %.0f, pass %v %s", tr.rate, tr.achieved, tr.pass, tr.reason)
				if tr.pass {
					lo, best = mid, max(best, tr.achieved)
				} else {
					hi = mid
				}
			}
		}
		b.ReportMetric(best, "max-pkts/s")
		b.ReportMetric(limited, "sender-limited")
	})
}

// poolSim sends n copies round robin to 4 sim dumpers and checks
// integrity; it returns the trial and the wall time of capture and stop.
func poolSim(b *testing.B, n int) (poolTrial, time.Duration) {
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	dir := b.TempDir()
	loop := sim.NewEventLoop()
	net := sim.NewNetwork(loop)
	var ends []*sim.Endpoint
	var ds []*Dumper
	var paths []string
	for i := range poolDumpers {
		a, e := net.NewLink(sim.LinkConfig{MTU: 9500})
		ends = append(ends, a)
		p := filepath.Join(dir, "dumper-"+strconv.Itoa(i)+".pcap")
		d, err := New(Config{Name: "dumper-" + strconv.Itoa(i), Backend: "sim", SimPort: e, OutPath: p})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		ds, paths = append(ds, d), append(paths, p)
	}
	start := time.Now()
	f := s.Frame(nil, 1)
	for seq := uint64(1); seq <= uint64(n); seq++ {
		s.Retag(f, seq)
		ends[seq%poolDumpers].Send(f)
		if seq%4096 == 0 {
			loop.Run()
		}
	}
	loop.Run()
	tr := poolCheck(b, ds, paths, n)
	return tr, time.Since(start)
}

// poolNetns offers rate copies per second for half a second to 4
// afpacket dumpers and checks integrity.
func poolNetns(b *testing.B, rate float64) poolTrial {
	n := min(max(int(rate/2), 20_000), 1_000_000)
	tx, rx := testutil.NewNetns(b, "ptx"), testutil.NewNetns(b, "prx")
	for i := range poolDumpers {
		testutil.Veth(b, tx, "ltx"+strconv.Itoa(i), "", rx, "lrx"+strconv.Itoa(i), "")
	}
	for _, ns := range []*testutil.Netns{tx, rx} {
		ns.Run(b, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	}
	dir := b.TempDir()
	var ds []*Dumper
	var paths []string
	for i := range poolDumpers {
		p := filepath.Join(dir, "dumper-"+strconv.Itoa(i)+".pcap")
		d, err := New(Config{Name: "dumper-" + strconv.Itoa(i), Backend: "afpacket", Interface: "lrx" + strconv.Itoa(i), OutPath: p})
		if err != nil {
			b.Fatal(err)
		}
		if err := rx.Do(func() error { return d.Start(b.Context()) }); err != nil {
			b.Fatal(err)
		}
		ds, paths = append(ds, d), append(paths, p)
	}
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	var took time.Duration
	err := tx.Do(func() error {
		var bs []*Blaster
		defer func() {
			for _, x := range bs {
				x.Close()
			}
		}()
		for i := range poolDumpers {
			x, err := OpenBlaster("ltx" + strconv.Itoa(i))
			if err != nil {
				return err
			}
			bs = append(bs, x)
		}
		f := s.Frame(nil, 1)
		step := time.Duration(float64(time.Second) / rate)
		start := time.Now()
		for seq := uint64(1); seq <= uint64(n); seq++ {
			if seq%64 == 0 { // pace in bursts of 64
				if ahead := time.Duration(seq)*step - time.Since(start); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			s.Retag(f, seq)
			if err := bs[seq%poolDumpers].Send(f); err != nil {
				return err
			}
		}
		took = time.Since(start)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	waitQuiet(ds, uint64(n))
	tr := poolCheck(b, ds, paths, n)
	tr.rate, tr.achieved = rate, float64(n)/took.Seconds()
	return tr
}

// poolCheck stops the dumpers and runs the integrity check over their
// files, n copies mirrored.
func poolCheck(b *testing.B, ds []*Dumper, paths []string, n int) poolTrial {
	var cs []integrity.DumperCounters
	for _, d := range ds {
		r, err := d.Stop()
		if err != nil {
			b.Fatal(err)
		}
		cs = append(cs, r.Counters())
	}
	v, err := integrity.CheckFiles(integrity.Counters{SwitchMirrored: integrity.Known(uint64(n)), Dumpers: cs},
		integrity.Options{ExpectFirstSeq: true}, paths...)
	if err != nil {
		b.Fatal(err)
	}
	return poolTrial{pass: v.Pass, reason: fmt.Sprintf("%s: %s", v.Check, v.Reason)}
}

// waitQuiet waits until the dumpers have handed over n frames in all, or
// none for 300 ms.
func waitQuiet(ds []*Dumper, n uint64) {
	var last uint64
	since := time.Now()
	for time.Since(since) < 300*time.Millisecond {
		var got uint64
		for _, d := range ds {
			l := d.Live()
			got += l.Received + l.Foreign
		}
		if got >= n {
			return
		}
		if got != last {
			last, since = got, time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
}
