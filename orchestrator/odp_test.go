package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// odpFrames runs yaml on sim and returns its trace as "KIND PSN @ NS"
// frames, PSN relative to the requester's initial PSN, NS from the first
// frame: Q a READ request, R a READ response, N a NAK, RNR(t) an RNR NAK
// with timer code t; and its NIC counters.
func odpFrames(t *testing.T, yaml string) (string, map[string]map[string]uint64) {
	t.Helper()
	tc, err := config.Parse("odp.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
	if res.Err != nil || len(res.Repeats) != 1 || !res.Repeats[0].Report.Valid {
		t.Fatalf("run: %v %+v", res.Err, res.Repeats)
	}
	dir := res.Repeats[0].Dir
	var out []string
	var p roce.Packet
	var t0 int64
	var ipsn roce.PSN
	err = trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if err := (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p); err != nil {
			return err
		}
		if len(out) == 0 {
			t0, ipsn = tp.TimeNs, p.BTH.PSN()
		}
		kind := "?"
		switch {
		case p.Opcode.IsReadRequest():
			kind = "Q"
		case p.Opcode == roce.RCAcknowledge && p.AETH.Syndrome().IsRNR():
			kind = fmt.Sprintf("RNR(%d)", p.AETH.Syndrome().Value())
		case p.Opcode == roce.RCAcknowledge && p.AETH.Syndrome().IsNAK():
			kind = "N"
		case p.Opcode == roce.RCAcknowledge:
			kind = "A"
		default:
			kind = "R"
		}
		out = append(out, fmt.Sprintf("%s%d@%d", kind, p.BTH.PSN().Sub(ipsn), tp.TimeNs-t0))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "counters.json"))
	if err != nil {
		t.Fatal(err)
	}
	var counters struct {
		NICs map[string]map[string]uint64 `json:"nics"`
	}
	if err := json.Unmarshal(b, &counters); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " "), counters.NICs
}

// TestODPOnSim: nic.odp, min-rnr-timer and post-interval-us reach the
// software RNICs through the agents (issue #32), and ODPInTest reaches
// the NIC of the host without ODP. The sequences are those of Fukuoka et
// al., Analyzing Performance Pitfalls of On-Demand Paging of InfiniBand,
// Figs. 2 and 6, on the cx4 personality.
func TestODPOnSim(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string
		// page faults of requester and responder
		faults [2]uint64
	}{
		// Requester fault, page-fault-us 300: the response is dropped,
		// the READ re-sent when the fault resolved (300 µs + the
		// switch↔requester round trip after the response); the responder,
		// without ODP itself, answers the duplicate after cx4's 80 µs
		// (its ODPInTest).
		{"requester fault", "requester: {nic: {personality: cx4, odp: {page-fault-us: 300}}}\nresponder: {nic: {personality: cx4}}\n" +
			"traffic: {rdma-verb: read, message-size: 1024}\n",
			"Q0@0 R0@1233 Q0@302466 R0@382466", [2]uint64{1, 0}},
		// Responder fault, min-rnr-timer 14 (1.28 ms), two READs 3 ms
		// apart: the RNR NAK 140 µs after the request, the READ executed
		// when its fault resolved (500 µs, cx4's default), the requester
		// re-sends 3 × 1.28 ms after the NAK reached it, the second READ
		// (posted at 3 ms, held during the wait) right behind; the
		// duplicate answered after 80 µs, the second READ dropped, and
		// re-sent after the transport timeout.
		{"responder fault, two reads", "requester: {nic: {personality: cx4}}\nresponder: {nic: {personality: cx4, odp: {enabled: true}}}\n" +
			"traffic: {rdma-verb: read, num-msgs-per-qp: 2, message-size: 1024, tx-depth: 2, min-rnr-timer: 14, post-interval-us: 3000}\n",
			"Q0@0 RNR(14)0@140000 R0@501233 Q0@3981028 Q1@3981047 R0@4061028 Q1@235830010 R1@235831243", [2]uint64{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, nics := odpFrames(t, "name: odp\n"+tt.yaml)
			if got != tt.want {
				t.Errorf("frames =\n%s\nwant\n%s", got, tt.want)
			}
			for i, role := range []string{"requester", "responder"} {
				if n := nics[role]["page_faults"]; n != tt.faults[i] {
					t.Errorf("%s page_faults = %d, want %d", role, n, tt.faults[i])
				}
			}
		})
	}
}
