package orchestrator

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// requestTimes runs tc on sim and returns the switch-side times of the
// requester's requests (WRITE ONLY / READ requests) of the first repeat,
// in trace order, counted from the first.
func requestTimes(t *testing.T, tc *config.Test) []int64 {
	t.Helper()
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
	if res.Err != nil || len(res.Repeats) != 1 || !res.Repeats[0].Report.Valid {
		t.Fatalf("run: %v %+v", res.Err, res.Repeats)
	}
	var out []int64
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(res.Repeats[0].Dir, "trace.pcap"), func(tp trace.Packet) error {
		if err := (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p); err != nil {
			return err
		}
		if p.Opcode == roce.RCWriteOnly || p.Opcode.IsReadRequest() {
			out = append(out, tp.TimeNs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(out) - 1; i >= 0; i-- {
		out[i] -= out[0]
	}
	return out
}

// TestPostIntervalOnSim: traffic.post-interval-us reaches the requester
// through the agent (issue #32): the switch sees the requests of one QP
// exactly that far apart, in the two-host form and in a flow.
func TestPostIntervalOnSim(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []int64
	}{
		{"two-host writes", "name: pi\ntraffic: {num-msgs-per-qp: 3, message-size: 512, post-interval-us: 250}\n",
			[]int64{0, 250_000, 500_000}},
		{"flow of reads", "name: pi\nhosts: {a: {}, b: {}}\nflows:\n  - {name: f, from: a, to: b, rdma-verb: read, num-msgs-per-qp: 3, message-size: 512, post-interval-us: 40}\n",
			[]int64{0, 40_000, 80_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := config.Parse("pi.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			got := requestTimes(t, tc)
			if len(got) != len(tt.want) {
				t.Fatalf("request times = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("request times = %v, want %v", got, tt.want)
					break
				}
			}
		})
	}
}
