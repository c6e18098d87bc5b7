package orchestrator

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/injector"
)

// TestHostsExamples runs the hosts-form examples on sim and checks exact
// facts: the hosts' switch ports and seeds, each flow's connections (its
// name, its hosts' addresses, numbered globally in flow order), each
// event applied to a packet of its own flow's connection (the event's
// destination QP is that connection's), and every message of every QP
// completed.
func TestHostsExamples(t *testing.T) {
	tests := []struct {
		file  string
		ports []uint32
		// flows: per flow, "from→to" addresses, repeated per connection.
		conns []string
		// events: per installed event, "flow qp(global) msg psn type".
		events []string
	}{
		{"pairs", []uint32{1, 2, 32, 33, 34, 35, 36, 37},
			[]string{"p1 10.0.0.1→10.0.0.2", "p1 10.0.0.1→10.0.0.2", "p2 10.0.0.3→10.0.0.4", "p2 10.0.0.3→10.0.0.4",
				"p3 10.0.0.5→10.0.0.6", "p4 10.0.0.7→10.0.0.8", "p4 10.0.0.7→10.0.0.8"},
			[]string{"p1 1 0 3 drop", "p1 1 1 3 drop", "p1 1 2 3 drop", "p1 1 3 3 drop", "p2 2 0 1 ecn",
				"p3 4 0 2 ecn", "p3 4 2 5 drop", "p4 6 1 0 drop"}},
		{"bidirectional", []uint32{1, 2},
			[]string{"ab 10.0.0.1→10.0.0.2", "ab 10.0.0.1→10.0.0.2", "ba 10.0.0.2→10.0.0.1", "ba 10.0.0.2→10.0.0.1"},
			[]string{"ab 0 0 4 drop", "ab 0 1 4 drop", "ab 0 2 4 drop", "ab 0 3 4 drop", "ba 3 0 2 ecn"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tc, err := config.Load("../examples/" + tt.file + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
			if res.Err != nil || len(res.Repeats) != 1 {
				t.Fatalf("run: %v", res.Err)
			}
			rep, run := res.Repeats[0].Report, res.Repeats[0].Run
			if !rep.Valid || !rep.Passed() {
				t.Fatalf("valid %v, checks %v", rep.Valid, rep.Checks)
			}
			if !reflect.DeepEqual(run.HostPorts, tt.ports) {
				t.Errorf("host ports %v, want %v", run.HostPorts, tt.ports)
			}
			seeds := map[uint64]bool{}
			for i, h := range tc.Hosts {
				if s := rep.Seeds.Hosts[h.Name]; s != hostSeed(tc, 0, i) || seeds[s] {
					t.Errorf("host %s seed %d, want %d and distinct", h.Name, s, hostSeed(tc, 0, i))
				}
				seeds[rep.Seeds.Hosts[h.Name]] = true
			}
			var conns []string
			for i, c := range run.Connections {
				if c.Index != i {
					t.Errorf("connection %d has index %d", i, c.Index)
				}
				conns = append(conns, fmt.Sprintf("%s %s→%s", c.Flow, c.Requester.IP, c.Responder.IP))
				if rc := rep.Connections[i]; rc.Flow != c.Flow || rc.ID != i {
					t.Errorf("report connection %d = %+v, want flow %s", i, rc, c.Flow)
				}
			}
			if !reflect.DeepEqual(conns, tt.conns) {
				t.Errorf("connections\n got %q\nwant %q", conns, tt.conns)
			}
			var events []string
			for _, e := range rep.Events {
				c := run.Connections[e.QP]
				events = append(events, fmt.Sprintf("%s %d %d %d %s", c.Flow, e.QP, e.Msg, e.PSN, e.Type))
				// The packet hit is one of the event's connection: data
				// to its responder's QP (write, send), READ responses to
				// its requester's.
				want := c.Responder.QPN
				if c.Verb == generator.VerbRead {
					want = c.Requester.QPN
				}
				if !e.Applied || e.DestQP != want {
					t.Errorf("event %+v: applied %v to dest QP %#x, want applied to %#x (connection %d of flow %s)", e, e.Applied, e.DestQP, want, e.QP, c.Flow)
				}
			}
			if !reflect.DeepEqual(events, tt.events) {
				t.Errorf("events\n got %q\nwant %q", events, tt.events)
			}
			// Every message of every QP of every flow completed.
			for f, fl := range tc.Flows {
				fr := run.Flows[f]
				if fr.Name != fl.Name || fr.Stopped != "" || fr.Result == nil || len(fr.Result.QPs) != fl.NumQPs {
					t.Fatalf("flow %s: %+v", fl.Name, fr)
				}
				for _, q := range fr.Result.QPs {
					if q.Posted != fl.NumMsgsPerQP || q.Completed != fl.NumMsgsPerQP || q.Errors != 0 {
						t.Errorf("flow %s QP %d: posted %d completed %d errors %d, want %d completed", fl.Name, q.Index, q.Posted, q.Completed, q.Errors, fl.NumMsgsPerQP)
					}
				}
			}
			g := rep.Generator
			if g == nil || len(g.QPs) != len(tt.conns) || !g.Verified || len(g.Errors) != 0 || len(g.Flows) != len(tc.Flows) {
				t.Fatalf("generator report %+v, want %d QPs, verified, no errors, %d flows", g, len(tt.conns), len(tc.Flows))
			}
			var bytes int64
			for f, fg := range g.Flows {
				fl := tc.Flows[f]
				if want := int64(fl.NumQPs * fl.NumMsgsPerQP * fl.MessageSize); fg.Name != fl.Name || fg.Bytes != want || !fg.Verified || fg.Stopped != "" {
					t.Errorf("generator flow %d = %+v, want %s with %d bytes, verified", f, fg, fl.Name, want)
				}
				bytes += fg.Bytes
			}
			if g.Bytes != bytes {
				t.Errorf("generator bytes %d, want the flows' %d", g.Bytes, bytes)
			}
			if txt := rep.Text(); !strings.HasSuffix(txt, "\nresult: PASS\n") {
				t.Errorf("report.txt does not pass:\n%s", txt)
			}
		})
	}
}

// hostsPFC is three hosts with PFC on priority 3: h1 writes to h2, h3 to
// h1 (no egress shared, so no congestion pause); the switch pauses h3, the
// third host, on port 32: a frame every 10 µs for 50 µs.
const hostsPFC = `name: pfc3
seed: 2
hosts:
  h1: {nic: {personality: cx5, ip-list: [10.0.0.1/24], pfc: {priorities: [3]}}}
  h2: {nic: {personality: cx5, ip-list: [10.0.0.2/24], pfc: {priorities: [3]}}}
  h3: {nic: {personality: cx5, ip-list: [10.0.0.3/24], pfc: {priorities: [3]}}}
dumpers:
  - {name: dumper-0, weight: 1}
flows:
  - {name: a, from: h1, to: h2, rdma-verb: write, num-qps: 1, num-msgs-per-qp: 4, mtu: 1024, message-size: 65536, dscp-list: [26]}
  - {name: b, from: h3, to: h1, rdma-verb: write, num-qps: 1, num-msgs-per-qp: 4, mtu: 1024, message-size: 65536, dscp-list: [26]}
pfc-events:
  - {type: pause, to: h3, priority: 3, quanta: 65535, start-us: 0, duration-us: 50, interval-us: 10}
`

// TestHostsPFC: a pause to a named host goes out of that host's port only
// (32 for the third host: 5 frames, at 0, 10, 20, 30 and 40 µs) and
// reaches that host's NIC only; report.json names every host's port; the
// switch's PFC configuration paces every host's port at its line rate.
func TestHostsPFC(t *testing.T) {
	tc, err := config.Parse("pfc3.yaml", []byte(hostsPFC))
	if err != nil {
		t.Fatal(err)
	}
	res := RunTest(context.Background(), tc, Options{OutDir: t.TempDir()})
	if res.Err != nil || len(res.Repeats) != 1 {
		t.Fatalf("run: %v", res.Err)
	}
	rep, run := res.Repeats[0].Report, res.Repeats[0].Run
	if !rep.Valid || !rep.Passed() {
		t.Fatalf("valid %v, checks %v", rep.Valid, rep.Checks)
	}
	if want := map[string]uint32{"h1": 1, "h2": 2, "h3": 32}; !reflect.DeepEqual(rep.SwitchPorts, want) {
		t.Errorf("switch_ports %v, want %v", rep.SwitchPorts, want)
	}
	if sp := rep.SwitchPFC; sp == nil || len(sp.Ports) != 1 || sp.Ports[0] != (SwitchPFCPort{Port: 32, Priority: 3, PFCCounters: injector.PFCCounters{TxPause: 5}}) {
		t.Errorf("switch_pfc %+v, want only port 32 priority 3 with 5 pauses sent", sp)
	}
	for h, want := range map[string]uint64{"h1": 0, "h2": 0, "h3": 5} {
		if got, ok := run.NICs[h]["rx_prio3_pause"]; !ok || got != want {
			t.Errorf("NIC %s rx_prio3_pause = %d (%v), want %d", h, got, ok, want)
		}
	}
	pl := &placement{hostPorts: run.HostPorts, dumperPorts: []uint32{10}}
	if got, want := run.switchPFC(pl).PortBps, map[uint32]int64{1: 100e9, 2: 100e9, 32: 100e9, 10: 400e9}; !reflect.DeepEqual(got, want) {
		t.Errorf("switchPFC port rates %v, want %v", got, want)
	}
}

// TestSimHostsAgentCalls: a run of examples/pairs.yaml (8 hosts, 4 flows)
// on sim makes one StartNIC and one Counters call per host, one Serve and
// one Run per flow, and reads the switch's queue state (more than two
// hosts share its egress queues).
func TestSimHostsAgentCalls(t *testing.T) {
	var mu sync.Mutex
	n := map[string]int{}
	run, err := driveSim(t, "../examples/pairs.yaml", func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		mu.Lock()
		n[info.FullMethod]++
		mu.Unlock()
		return h(ctx, req)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"/lumina.v1.Injector/Start": 1, "/lumina.v1.Injector/Timing": 1, "/lumina.v1.Injector/PFC": 1,
		"/lumina.v1.Dumper/Start": 2, "/lumina.v1.Dumper/Stop": 2,
		"/lumina.v1.Generator/StartNIC": 8, "/lumina.v1.Generator/Serve": 4, "/lumina.v1.Generator/Run": 4, "/lumina.v1.Generator/Counters": 8}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("agent calls %v, want %v", n, want)
	}
	if len(run.NICs) != 8 || len(run.Connections) != 7 || run.Plan == nil || len(run.Plan.Forward) != 8+2 {
		t.Errorf("run: %d NICs, %d connections, plan %v", len(run.NICs), len(run.Connections), run.Plan != nil)
	}
}
