package config

import (
	"fmt"
	"strings"
	"testing"
)

// Issue #38, point 11: validation counts what PFC frames, messages and
// the spool need, and refuses a test that does not fit, naming the fix.
func TestEstimateLimits(t *testing.T) {
	const pfcTest = "requester: {nic: {pfc: {priorities: [3]}}}\n" +
		"responder: {nic: {pfc: {priorities: [3]}}}\n" +
		"traffic:\n  dscp-list: [26]\n  pfc-events:\n" +
		"    - {type: pause, to: requester, priority: 3, duration-us: 3600000000, interval-us: 1}\n"
	// 4 QPs × 131072 messages of 1 KiB: 553 MiB peak RSS measured on sim
	// (/usr/bin/time -v lumina run), where the estimate was 260 MiB.
	const manyMessages = "traffic: {num-qps: 4, num-msgs-per-qp: 131072, message-size: 1024}\n"
	const big = "traffic: {num-msgs-per-qp: 100, message-size: 1048576}\n" // 225280 packets, 30.9 MiB of trace
	disk := func(free int64) Resources {
		return Resources{DiskFree: func(string) (int64, bool) { return free, true }}
	}
	spool := func(free int64, shared bool) Resources {
		return Resources{SpoolFree: func(string) (string, int64, bool, bool) { return "/small", free, shared, true }}
	}
	tests := []struct {
		name, in string
		o        LoadOptions
		want     string // "" for no error
		warn     string // "" for no warning
	}{
		// A pause every µs for an hour: up to 3.6e9 mirrored frames of 98
		// B each, twice (dumper files kept); the frames are at most, the
		// one message's 4 packets certain: a warning.
		{"pfc frames", pfcTest, LoadOptions{Resources: disk(100 << 30)}, "",
			"t.yaml:6:5: warning: the results need 1.1 KiB to 657.1 GiB of disk (1 repeats × up to 8 packets and 3600000001 PFC frames, traces and dumper files), 100 GiB are free under the results directory: the run fails if the trace grows past what fits; free some, choose another with -o, keep-dumper-files: false (halves it), or lower snap-len, num-msgs-per-qp, the PFC frames or num-repeats"},
		{"pfc frames memory", pfcTest, LoadOptions{Resources: Resources{MemoryBytes: 64 << 30}},
			"t.yaml:6:5: the test needs about 429.5 GiB of memory on this machine (messages 3 × 1 QPs × 4096 B = 12 KiB, dumpers 8 MiB, held packets 0 B, records 429.3 GiB: graph data 128 MiB, 3600000001 packets of events and PFC frames, 1 messages, base 256 MiB), more than the limit of 64 GiB; use fewer QPs, messages or events, smaller messages or fewer dumper workers, or raise the limit with --memory-limit", ""},
		{"many messages", manyMessages, LoadOptions{Resources: Resources{MemoryBytes: 700 << 20}},
			"t.yaml:1:40: the test needs about 776 MiB of memory on this machine (messages 3 × 4 QPs × 1024 B = 12 KiB, dumpers 8 MiB, held packets 0 B, records 512 MiB: graph data 128 MiB, 0 packets of events and PFC frames, 524288 messages, base 256 MiB), more than the limit of 700 MiB; use fewer QPs, messages or events, smaller messages or fewer dumper workers, or raise the limit with --memory-limit", ""},
		{"many messages fit", manyMessages, LoadOptions{Resources: Resources{MemoryBytes: 800 << 20}}, "", ""},
		// The spool (TMPDIR) on a file system of its own: the dumper files
		// are 102400 packets of 144 B at least (14.1 MiB), 30.9 MiB at most.
		{"spool", big, LoadOptions{Resources: spool(8<<20, false)},
			"t.yaml:1:28: a repeat's dumper files need at least 14.1 MiB (at least 102400 packets, before the merge) in the spool directory /small, where 8 MiB are free; set TMPDIR to a larger file system, or lower snap-len or num-msgs-per-qp", ""},
		{"spool may not fit", big, LoadOptions{Resources: spool(16<<20, false)}, "",
			"t.yaml:1:28: warning: a repeat's dumper files need 14.1 MiB to 30.9 MiB (up to 225280 packets, before the merge) in the spool directory /small, where 16 MiB are free: the run fails if they grow past it; set TMPDIR to a larger file system, or lower snap-len or num-msgs-per-qp"},
		{"spool fits", big, LoadOptions{Resources: spool(32<<20, false)}, "", ""},
		// Without keep-dumper-files, the last repeat's dumper files still
		// sit under the results directory until its merge: the first
		// repeat's trace and twice the second's, 3 × 14.1 MiB at least,
		// 3 × 30.9 MiB at most.
		{"dumper files not kept", "num-repeats: 2\nkeep-dumper-files: false\n" + big, LoadOptions{Resources: disk(32 << 20)},
			"t.yaml:1:14: the results need at least 42.2 MiB of disk (2 repeats × at least 102400 packets, traces and dumper files), 32 MiB are free under the results directory; free some, choose another with -o, or lower snap-len, num-msgs-per-qp or num-repeats", ""},
		{"dumper files not kept, may not fit", "num-repeats: 2\nkeep-dumper-files: false\n" + big, LoadOptions{Resources: disk(64 << 20)}, "",
			"t.yaml:1:14: warning: the results need 42.2 MiB to 92.8 MiB of disk (2 repeats × up to 225280 packets, traces and dumper files), 64 MiB are free under the results directory: the run fails if the trace grows past what fits; free some, choose another with -o, or lower snap-len, num-msgs-per-qp or num-repeats"},
		{"spool on remote", "testbed: remote\nrequester: {control-ip: r}\nresponder: {control-ip: p}\nswitch: {control-ip: s}\ndumpers:\n  - {control-ip: d}\n" + big,
			LoadOptions{Resources: spool(1, false)}, "", ""},
		// Spool and results on one file system: the dumper files and their
		// copy (kept), never with the trace (the spool is removed before
		// the merge): twice the trace, 61.9 MiB at most.
		{"spool shared", big, LoadOptions{Resources: Resources{
			DiskFree:  func(string) (int64, bool) { return 64 << 20, true },
			SpoolFree: func(string) (string, int64, bool, bool) { return "/tmp", 64 << 20, true, true }}}, "", ""},
		{"spool shared, does not fit", big, LoadOptions{Resources: Resources{
			DiskFree:  func(string) (int64, bool) { return 16 << 20, true },
			SpoolFree: func(string) (string, int64, bool, bool) { return "/tmp", 16 << 20, true, true }}},
			"t.yaml:1:28: the results need at least 28.1 MiB of disk (1 repeats × at least 102400 packets, traces and dumper files), 16 MiB are free under the results directory; free some, choose another with -o, keep-dumper-files: false (halves it), or lower snap-len, num-msgs-per-qp or num-repeats", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warns []string
			o := tt.o
			o.Warn = func(e Error) { warns = append(warns, e.Error()) }
			if got := parseError(tt.in, o); got != tt.want {
				t.Errorf("ParseWith(%q) error =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
			if got := strings.Join(warns, "\n"); got != tt.warn {
				t.Errorf("ParseWith(%q) warnings =\n%s\nwant\n%s", tt.in, got, tt.warn)
			}
		})
	}
}

// Issue #38, point 13: a netns test whose hold, times netns-slowdown,
// keeps the testbed busy longer than MaxNetnsWallTime is refused at the
// event; the same on sim (no slowdown) or with a shorter hold is fine.
func TestNetnsWallTime(t *testing.T) {
	const ev = "traffic:\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: delay, delay-us: %d}\n"
	tests := []struct {
		name, in string
		want     string
	}{
		// The certain wall time of a hold: 4.29 s × 10000 = 11.9 h, within
		// the limit (the run's own limit is warned about by lumina validate).
		{"longest delay", "testbed: netns\nnetns-slowdown: 10000\n" + fmt.Sprintf(ev, 4294967), ""},
		{"pfc stall", "testbed: netns\nnetns-slowdown: 1000\nresponder: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  dscp-list: [26]\n  pfc-events:\n    - {type: rx-stall, host: responder, start-us: 100, duration-us: 100000000}\n",
			"t.yaml:7:7: on netns this entry takes at least 27h46m40s of wall-clock time (its hold or end × netns-slowdown 1000), more than the limit of 24h0m0s; shorten it or lower netns-slowdown (docs/run.md#netns-slowdown)"},
		{"sim", "netns-slowdown: 1000\nresponder: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  dscp-list: [26]\n  pfc-events:\n    - {type: rx-stall, host: responder, start-us: 100, duration-us: 100000000}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Parse(%q) error =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
		})
	}
}

// Issue #38, point 13: a netns test whose traffic limit, times
// netns-slowdown, exceeds MaxNetnsWallTime validates with a warning at
// netns-slowdown (netns-slowdown 10000 and 9 messages: 127 s × 10000,
// about 15 days); at netns-slowdown 50, or on sim, none.
func TestNetnsLimitWarning(t *testing.T) {
	const body = "traffic:\n  num-msgs-per-qp: 9\n  data-pkt-events:\n    - {qpn: 0, psn: 1, type: delay, delay-us: 4294967}\n"
	tests := []struct{ in, want string }{
		{"testbed: netns\nnetns-slowdown: 10000\n" + body,
			"t.yaml:2:17: warning: on netns the traffic's limit of 2m7s on the models' clock takes up to 352h46m43s of wall-clock time at netns-slowdown 10000 (more than 24h0m0s): a run that does not complete holds the testbed that long; lower netns-slowdown, num-msgs-per-qp or the retransmission timeout and retries (docs/run.md#netns-slowdown)"},
		{"testbed: netns\nnetns-slowdown: 50\n" + body, ""},
		{"netns-slowdown: 10000\n" + body, ""},
	}
	for _, tt := range tests {
		var got []string
		_, err := ParseWith("t.yaml", []byte(tt.in), LoadOptions{Warn: func(e Error) { got = append(got, e.Error()) }})
		if err != nil {
			t.Errorf("ParseWith(%q) = %v, want no error", tt.in, err)
		}
		var want []string
		if tt.want != "" {
			want = []string{tt.want}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ParseWith(%q) warnings %q, want %q", tt.in, got, want)
		}
	}
}

// Issue #36: the run streams its trace, so what validation counts for a
// run's records does not grow with its packets: the same test at 128 and
// 12800 messages per QP (1.05 M and 105 M packets) differs by the
// messages' records alone, and the longer one fits in 1 GiB (it was
// refused as needing 27.9 GiB when every packet was counted).
func TestEstimateRecordsPerMessage(t *testing.T) {
	const test = "keep-dumper-files: false\ntraffic: {num-qps: 8, rdma-verb: write, num-msgs-per-qp: %d, mtu: 1024, message-size: 1048576}\n"
	est := func(msgs int) Estimate {
		tc, err := ParseWith("t.yaml", fmt.Appendf(nil, test, msgs), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tc.Estimate()
	}
	short, long := est(128), est(12800)
	if long.MinPackets != 100*short.MinPackets || short.MinPackets != 8*128*1024 {
		t.Fatalf("MinPackets %d and %d, want 1048576 and 100 times that", short.MinPackets, long.MinPackets)
	}
	if got, want := long.RecordBytes-short.RecordBytes, int64(8*(12800-128))*MessageMemory; got != want {
		t.Errorf("RecordBytes grew by %d from 128 to 12800 messages per QP, want %d (the messages' records)", got, want)
	}
	if short.RecordBytes != PlotMemory+8*128*MessageMemory {
		t.Errorf("RecordBytes = %d, want the graph data and 1024 messages, %d", short.RecordBytes, PlotMemory+8*128*MessageMemory)
	}
	if _, err := ParseWith("t.yaml", fmt.Appendf(nil, test, 12800), LoadOptions{Resources: Resources{MemoryBytes: 1 << 30}}); err != nil {
		t.Errorf("105 M packets with a 1 GiB memory limit: %v", err)
	}
}
