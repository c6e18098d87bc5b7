package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// TestSwitchECN: switch.ecn turns the software switch's queue model on, as
// more than two hosts do (a two-host test without ecn has none), and goes
// to the control plane's intent with the first host's DSCP map, the one
// the switch's queues classify by.
func TestSwitchECN(t *testing.T) {
	ecn := &config.ECN{Priorities: []int{3, 5}, KminKB: 100, KmaxKB: 400, Pmax: 0.2}
	three := []config.NamedHost{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, tc := range []struct {
		name   string
		test   config.Test
		queues bool
	}{
		{"two hosts", config.Test{Hosts: three[:2]}, false},
		{"ecn", config.Test{Hosts: three[:2], Switch: config.Switch{ECN: ecn}}, true},
		{"three hosts", config.Test{Hosts: three}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{Test: &tc.test}
			if got := r.queuesOn(); got != tc.queues {
				t.Errorf("queuesOn() = %v, want %v", got, tc.queues)
			}
		})
	}
	test, err := config.Load("../examples/send.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(test, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intent.ECN != nil || r.Intent.DSCPToPriority != ([64]uint8{}) {
		t.Errorf("intent without switch.ecn: ECN %v, DSCP map %v; want neither", r.Intent.ECN, r.Intent.DSCPToPriority)
	}
	test.Switch.ECN = ecn
	test.Hosts[0].NIC.PrioDSCPMap = map[int][]int{5: {3}}
	if r, err = newRun(test, 0); err != nil {
		t.Fatal(err)
	}
	want := (&config.NIC{PrioDSCPMap: map[int][]int{5: {3}}}).DSCPToPriority()
	if r.Intent.ECN != ecn || r.Intent.DSCPToPriority != want {
		t.Errorf("intent: ECN %v, DSCP map %v; want %v, %v", r.Intent.ECN, r.Intent.DSCPToPriority, ecn, want)
	}
}

// ecnTest is threeHosts without pfc-events, with switch.ecn on priority 3
// and h1's DSCP map moving DSCP 46 to priority 3 and 24 to priority 0.
func ecnTest() *config.Test {
	tc := threeHosts()
	tc.PFCEvents = nil
	tc.Switch.ECN = &config.ECN{Priorities: []int{3}, KminKB: 100, KmaxKB: 400, Pmax: 0.2}
	tc.Hosts[0].NIC.PrioDSCPMap = map[int][]int{3: {46}, 0: {24}}
	return tc
}

// TestRemoteECNRed: on a placement like the remote testbed's (no software
// switch agent: a P4Runtime target of its own, here the Go target served
// on loopback), the intake writes switch.ecn as Egress.ecn_red entries,
// one per DSCP the first host's map puts on priority 3, with the
// thresholds in 80-byte cells and the mask of 2^14; the target holds
// exactly the plan.
func TestRemoteECNRed(t *testing.T) {
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(injector.New(sim.NewEventLoop(), injector.Config{}), 0).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)

	d, _ := fakeDriver(t, ecnTest(), nil)
	d.pl.injector, d.pl.p4rt = nil, ln.Addr().String()
	d.pl.p4rtDial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	d.dports = []controlplane.Dumper{{Name: "d0", Port: 10, MAC: [6]byte{2, 0, 0, 0, 1, 0}, Weight: 1}}
	ctx := context.Background()
	if err := d.startNICs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.startSwitch(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cp.Close() })
	ep := func(host int, qpn uint32) generator.Endpoint {
		return generator.Endpoint{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(host + 1)}), MAC: roce.MAC{2, 0, 0, 0, 0, byte(host + 1)}, QPN: qpn, IPSN: 1}
	}
	conns := []generator.Connection{
		{Index: 0, Verb: generator.VerbWrite, Requester: ep(0, 0x100), Responder: ep(2, 0x200)},
		{Index: 1, Verb: generator.VerbWrite, Requester: ep(1, 0x101), Responder: ep(2, 0x201)},
	}
	if err := d.installPlan(ctx, conns); err != nil {
		t.Fatal(err)
	}
	c := d.cp.Client()
	es, err := c.ReadTableEntryWildcard(ctx, "Egress.ecn_red")
	if err != nil {
		t.Fatal(err)
	}
	num := func(b []byte) (v uint64) {
		for _, x := range b {
			v = v<<8 | uint64(x)
		}
		return v
	}
	var got []string
	for _, e := range es {
		var ps []string
		for _, p := range e.GetAction().GetAction().GetParams() {
			ps = append(ps, fmt.Sprint(num(p.GetValue())))
		}
		got = append(got, fmt.Sprintf("%d:%s", num(e.GetMatch()[0].GetExact().GetValue()), strings.Join(ps, ",")))
	}
	slices.Sort(got)
	// kmin 100 KiB = 1280 cells, kmax 400 KiB = 5120, (5120 − 1280)/0.2 =
	// 19200 ≈ 2^14: mask 16383. DSCP 24 is priority 0 in h1's map, 46
	// priority 3.
	var want []string
	for _, dscp := range []int{25, 26, 27, 28, 29, 30, 31, 46} {
		want = append(want, fmt.Sprintf("%d:1280,5120,16383", dscp))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ecn_red on the target (dscp:kmin,kmax,mask)\n got %q\nwant %q", got, want)
	}
	if d, err := d.cp.CheckInstalled(ctx, d.run.Plan); err != nil || len(d) != 0 {
		t.Errorf("CheckInstalled = %q, %v; want no differences", d, err)
	}
}

// incastECN is two writers into r on DSCP 26 (priority 3) with switch.ecn
// on priority 3: r's egress queue fills and marks by depth.
const incastECN = `name: incast-ecn-probe
seed: 3
hosts:
  h1: {nic: {personality: cx5, ip-list: [10.0.0.1/24]}}
  h2: {nic: {personality: cx5, ip-list: [10.0.0.2/24]}}
  r:  {nic: {personality: cx5, ip-list: [10.0.0.9/24]}}
switch:
  ecn: {priorities: [3], kmin-kb: 20, kmax-kb: 80, pmax: 0.2}
dumpers:
  - {name: dumper-0, weight: 1}
flows:
  - {name: a, from: h1, to: r, rdma-verb: write, num-qps: 1, message-size: 65536, num-msgs-per-qp: 20, mtu: 1024, dscp-list: [26]}
  - {name: b, from: h2, to: r, rdma-verb: write, num-qps: 1, message-size: 65536, num-msgs-per-qp: 20, mtu: 1024, dscp-list: [26]}
`

// TestSimECNRedSwitchState: on sim, a run with switch.ecn installs its
// ecn_red entries (DSCP 24..31: 256 and 1024 cells, mask 2^12 − 1) on the
// software switch, which marks by depth from them alone, and the
// switch_state check reads them back: untouched, r receives 3 CE-marked
// packets (seed 3) and the check passes; with DSCP 26's entry deleted
// behind lumina's back nothing is marked and the check fails naming the
// missing entry.
func TestSimECNRedSwitchState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete bool
		marked int
		diff   []string
	}{
		{"untouched", false, 3, nil},
		{"entry deleted", true, 0, []string{"Egress.ecn_red: planned entry missing: hdr.ipv4.dscp=26 → Egress.set_red(256, 1024, 4095)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			test, err := config.Parse("incast.yaml", []byte(incastECN))
			if err != nil {
				t.Fatal(err)
			}
			o := Options{OutDir: t.TempDir(), RetriesSet: true, Testbed: "sim"}
			var plan *controlplane.Plan
			o.hooks.installed = func(ctx context.Context, cp *controlplane.Switch, _ string, _ []grpc.DialOption, p *controlplane.Plan) {
				plan = p
				if !tc.delete {
					return
				}
				c := cp.Client()
				e := c.NewTableEntry("Egress.ecn_red", map[string]client.MatchInterface{"hdr.ipv4.dscp": &client.ExactMatch{Value: []byte{26}}}, nil, nil)
				if err := c.DeleteTableEntry(ctx, e); err != nil {
					t.Errorf("delete ecn_red entry: %v", err)
				}
			}
			res := RunTest(context.Background(), test, o)
			if res.Err != nil || len(res.Repeats) != 1 {
				t.Fatalf("run: %v (%d repeats)", res.Err, len(res.Repeats))
			}
			// kmin 20 KiB = 256 cells, kmax 80 KiB = 1024, 768/0.2 = 3840 ≈ 2^11.9.
			if got, want := fmt.Sprint(plan.ECNRed), "[{24 256 1024 4095} {25 256 1024 4095} {26 256 1024 4095} {27 256 1024 4095} "+
				"{28 256 1024 4095} {29 256 1024 4095} {30 256 1024 4095} {31 256 1024 4095}]"; got != want {
				t.Errorf("installed plan's ecn_red = %s, want %s", got, want)
			}
			b, err := os.ReadFile(filepath.Join(res.Repeats[0].Dir, "counters.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cs struct {
				NICs map[string]map[string]int `json:"nics"`
			}
			if err := json.Unmarshal(b, &cs); err != nil {
				t.Fatal(err)
			}
			if got := cs.NICs["r"]["np_ecn_marked_roce_packets"]; got != tc.marked {
				t.Errorf("r's np_ecn_marked_roce_packets = %d, want %d", got, tc.marked)
			}
			ss := res.Repeats[0].Report.SwitchState
			want := "pass"
			if tc.diff != nil {
				want = "fail"
			}
			if ss == nil || string(ss.Verdict) != want || !reflect.DeepEqual(ss.TableDiff, tc.diff) {
				t.Errorf("switch_state %+v, want %s with table differences %q", ss, want, tc.diff)
			}
		})
	}
}
