package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
)

// TestODPRNRCheck: the rnr check and the other checks on sim runs of the
// sequences of Fukuoka et al., Analyzing Performance Pitfalls of
// On-Demand Paging of InfiniBand (cx4, min-rnr-timer 14 = 1.28 ms): the
// RNR wait is 3 × the timer (cx4's rnr-wait-factor; 3.001 at the switch,
// the NAK's and the retry's propagation added), the 2nd READ's silent
// loss (Fig. 6) and the requester's page-fault restart (Fig. 2 middle) are
// silent timeouts that fail rnr alone; Fig. 11's 3rd READ turns it into a
// NAK; a WRITE's RNR wait passes. The counters agree with the trace. The
// requester's ODP excuses hold only on a requester with ODP (issue #32
// review): with ODP at the responder only and a requester whose first
// timeout fires at T_tr/2 (early.yaml), the 2nd READ's re-send after
// 33.6 ms fails timeout and is a silent timeout, not a restart. With
// rnr-retry 0 the RNR NAK exhausts the retries: counted by
// req_rnr_retries_exceeded, the counters still agree.
func TestODPRNRCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "early.yaml"), []byte("base: cx4\ntimeout-first-factor: 0.5\ntimeout-first-factor-max: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml string
		rnr        model.Verdict
		stalls     string // "class/rel/stall" of each stall
		waits      string // "rel/ratio/verdict" of each RNR wait
		// others are the verdicts of the other checks that do not pass.
		others map[string]model.Verdict
	}{
		{"fig6-remote", "requester: {nic: {personality: cx4}}\nresponder: {nic: {personality: cx4, odp: {enabled: true}}}\n" +
			"traffic: {rdma-verb: read, num-msgs-per-qp: 2, message-size: 1024, tx-depth: 2, min-rnr-timer: 14, post-interval-us: 3000}\n",
			model.Fail, "rnr/0/3.981028ms silent-timeout/1/231.768982ms", "0/3.001/pass", nil},
		{"fig2-local", "requester: {nic: {personality: cx4, odp: {page-fault-us: 300}}}\nresponder: {nic: {personality: cx4}}\n" +
			"traffic: {rdma-verb: read, message-size: 1024}\n",
			model.Pass, "silent-restart/0/301.233µs", "", nil},
		{"fig11-remote", "requester: {nic: {personality: cx4}}\nresponder: {nic: {personality: cx4, odp: {enabled: true}}}\n" +
			"traffic: {rdma-verb: read, num-msgs-per-qp: 3, message-size: 1024, tx-depth: 3, min-rnr-timer: 14, post-interval-us: 3000}\n",
			model.Pass, "rnr/0/3.981028ms nak/1/186.496µs", "0/3.001/pass", nil},
		{"write-remote", "requester: {nic: {personality: cx4}}\nresponder: {nic: {personality: cx4, odp: {enabled: true}}}\n" +
			"traffic: {rdma-verb: write, num-msgs-per-qp: 3, message-size: 4096, min-rnr-timer: 14}\n",
			model.Pass, "rnr/0/3.980572ms", "0/3.001/pass", nil},
		{"fig6-remote-early-timer", "requester: {nic: {personality: early.yaml}}\nresponder: {nic: {personality: cx4, odp: {enabled: true, page-fault-us: 400}}}\n" +
			"traffic: {rdma-verb: read, num-msgs-per-qp: 2, message-size: 100, tx-depth: 2, min-rnr-timer: 14, post-interval-us: 3000}\n",
			model.Fail, "rnr/0/3.981028ms silent-timeout/1/33.55548ms", "0/3.001/pass", map[string]model.Verdict{"timeout": model.Fail}},
		{"rnr-retry-0", "requester: {nic: {personality: cx4}}\nresponder: {nic: {personality: cx4, odp: {enabled: true, page-fault-us: 400}}}\n" +
			"traffic: {rdma-verb: read, message-size: 100, min-rnr-timer: 14, rnr-retry: 0}\n",
			model.Pass, "", "0/0/skip", map[string]model.Verdict{"generator": model.Fail, "gbn": model.Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc2, err := config.Parse(filepath.Join(dir, "odp.yaml"), []byte("name: odp\n"+tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			res := RunTest(context.Background(), tc2, Options{OutDir: t.TempDir()})
			if res.Err != nil || len(res.Repeats) != 1 || !res.Repeats[0].Report.Valid {
				t.Fatalf("run: %v %+v", res.Err, res.Repeats)
			}
			rep := res.Repeats[0].Report
			for name, c := range rep.Checks {
				want := model.Pass
				switch name {
				case "rnr":
					want = tc.rnr
				case "events_applied":
					want = model.Skip
				}
				if v, ok := tc.others[name]; ok {
					want = v
				}
				if c.Verdict != want {
					t.Errorf("check %s = %s (%s), want %s", name, c.Verdict, c.Detail, want)
				}
			}
			r := rep.Analysis.Checks.RNR
			var stalls, waits []string
			for _, s := range r.Stalls {
				stalls = append(stalls, fmt.Sprintf("%s/%d/%s", s.Class, s.RelPSN, time.Duration(s.StallNs)))
			}
			for _, w := range r.Waits {
				waits = append(waits, fmt.Sprintf("%d/%g/%s", w.RelPSN, w.Ratio, w.Verdict))
			}
			if got := strings.Join(stalls, " "); got != tc.stalls {
				t.Errorf("stalls %q, want %q", got, tc.stalls)
			}
			if got := strings.Join(waits, " "); got != tc.waits {
				t.Errorf("waits %q, want %q", got, tc.waits)
			}
			if len(r.Counters) != 2 {
				t.Errorf("rnr counters %+v (skipped %q), want the requester's and the responder's", r.Counters, r.CountersSkipped)
			}
			for _, c := range r.Counters {
				if !c.OK {
					t.Errorf("rnr counters: %+v", c)
				}
			}
			if !strings.Contains(rep.Text(), "\n  rnr             "+string(tc.rnr)+"  ") {
				t.Errorf("report.txt has no rnr line:\n%s", rep.Text())
			}
		})
	}
}
