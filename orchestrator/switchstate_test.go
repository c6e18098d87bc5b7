package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
)

type installHook func(ctx context.Context, cp *controlplane.Switch, addr string, dial []grpc.DialOption, p *controlplane.Plan) error

func beBytes(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// eventEntry is an event_table entry on connection 0 of the plan at
// relative PSN rel, ITER 1, built with lumina's P4Info.
func eventEntry(cp *controlplane.Switch, p *controlplane.Plan, rel int, action string) *p4v1.TableEntry {
	c := cp.Client()
	ce := p.Conns[0]
	exact := func(v []byte) client.MatchInterface { return &client.ExactMatch{Value: v} }
	return c.NewTableEntry("Ingress.event_table", map[string]client.MatchInterface{
		"ig_intr_md.ingress_port": exact(beBytes(uint64(ce.Port), 2)), "hdr.bth.dest_qp": exact(beBytes(uint64(ce.DestQP), 3)),
		"hdr.bth.psn": exact(beBytes(uint64(ce.IPSN.Add(rel)), 3)), "meta.iter": exact(beBytes(1, 2))},
		c.NewTableActionDirect(action, nil), nil)
}

// runHooked runs examples/send.yaml (a drop at QP 0 relative PSN 10 and
// an ECN mark at packet 1 of every message of QP 2) on sim once, with
// hook changing the switch after the plan is installed, and returns its
// report and report.json.
func runHooked(t *testing.T, hook installHook) (*Report, map[string]json.RawMessage) {
	t.Helper()
	tc, err := config.Load("../examples/send.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{OutDir: t.TempDir(), RetriesSet: true, Testbed: "sim"}
	if hook != nil {
		o.hooks.installed = func(ctx context.Context, cp *controlplane.Switch, addr string, dial []grpc.DialOption, p *controlplane.Plan) {
			if err := hook(ctx, cp, addr, dial, p); err != nil {
				t.Errorf("hook: %v", err)
			}
		}
	}
	res := RunTest(context.Background(), tc, o)
	if res.Err != nil || len(res.Repeats) != 1 {
		t.Fatalf("run: %v (%d repeats)", res.Err, len(res.Repeats))
	}
	r := res.Repeats[0]
	b, err := os.ReadFile(filepath.Join(r.Dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var js map[string]json.RawMessage
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	return r.Report, js
}

// TestSwitchStateInvalidatesRun changes the switch behind lumina's back
// once the plan is installed, the ways issue #17 lists, and checks each
// run is invalid with a failing switch_state check that says why (and
// only for the reasons that apply).
func TestSwitchStateInvalidatesRun(t *testing.T) {
	const (
		events   = "did not ask for"      // (a) mirror copies carry events not in the intent
		counters = "event_drops"          // (b) the switch's event counters exceed the intent
		tables   = "differ from the plan" // (c) the tables read back differ from the plan
		primary  = "lost primary"         // (d) another controller became primary
	)
	all := []string{events, counters, tables, primary}
	tests := []struct {
		name string
		hook installHook
		want []string
	}{
		{"extra drops", func(ctx context.Context, cp *controlplane.Switch, _ string, _ []grpc.DialOption, p *controlplane.Plan) error {
			for _, rel := range []int{2, 20} { // message 0 packet 2, message 4 packet 0 of QP 0
				if err := cp.Client().InsertTableEntry(ctx, eventEntry(cp, p, rel, "Ingress.drop_event")); err != nil {
					return err
				}
			}
			return nil
		}, []string{events, counters, tables}},
		{"extra ECN mark", func(ctx context.Context, cp *controlplane.Switch, _ string, _ []grpc.DialOption, p *controlplane.Plan) error {
			return cp.Client().InsertTableEntry(ctx, eventEntry(cp, p, 3, "Ingress.mark_ecn"))
		}, []string{events, tables}},
		{"entry that hits nothing", func(ctx context.Context, cp *controlplane.Switch, _ string, _ []grpc.DialOption, p *controlplane.Plan) error {
			return cp.Client().InsertTableEntry(ctx, eventEntry(cp, p, 5000, "Ingress.drop_event")) // beyond the traffic
		}, []string{tables}},
		{"event_drops counter raised", func(ctx context.Context, cp *controlplane.Switch, _ string, _ []grpc.DialOption, p *controlplane.Plan) error {
			return cp.Client().ModifyCounterEntry(ctx, "Ingress.event_drops", int64(p.Conns[0].Port), &p4v1.CounterData{PacketCount: 30})
		}, []string{counters}},
		{"second controller outbids lumina", func(ctx context.Context, _ *controlplane.Switch, addr string, dial []grpc.DialOption, _ *controlplane.Plan) error {
			other, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 100, GRPC: dial})
			if err != nil {
				return err
			}
			return other.Close() // lumina is primary again (its stream hears both, in order): the loss still counts
		}, []string{primary}},
		{"second controller adds drops (issue #17)", func(ctx context.Context, cp *controlplane.Switch, addr string, dial []grpc.DialOption, p *controlplane.Plan) error {
			other, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 100, GRPC: dial})
			if err != nil {
				return err
			}
			t.Cleanup(func() { other.Close() })
			for _, rel := range []int{1, 7, 13, 22} {
				if err := other.Client().InsertTableEntry(ctx, eventEntry(cp, p, rel, "Ingress.drop_event")); err != nil {
					return err
				}
			}
			return nil
		}, all},
		{"second controller rewrites l2_forward (#38.2)", func(ctx context.Context, cp *controlplane.Switch, addr string, dial []grpc.DialOption, p *controlplane.Plan) error {
			other, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{ElectionID: 100, GRPC: dial})
			if err != nil {
				return err
			}
			defer other.Close() // lumina is primary again when it leaves: the loss and the table still count
			c := cp.Client()    // lumina's P4Info names the table; the other controller writes
			for _, f := range p.Forward {
				if err := other.Client().ModifyTableEntry(ctx, c.NewTableEntry("Ingress.l2_forward", map[string]client.MatchInterface{
					"hdr.ethernet.dst_addr": &client.ExactMatch{Value: f.MAC[:]}}, c.NewTableActionDirect("Ingress.drop_frame", nil), nil)); err != nil {
					return err
				}
			}
			return nil
		}, []string{tables, primary, "Ingress.l2_forward"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, js := runHooked(t, tt.hook)
			c := r.Checks["switch_state"]
			if r.Valid || c.Verdict != "fail" {
				t.Fatalf("valid %v, switch_state %+v; want invalid with switch_state fail (checks %v)", r.Valid, c, r.Checks)
			}
			for _, s := range append(all, tt.want[len(tt.want)-1]) { // (a table name, if any, comes last)
				if want := contains(tt.want, s); strings.Contains(c.Detail, s) != want {
					t.Errorf("switch_state detail mentions %q: %v, want %v\n%s", s, !want, want, c.Detail)
				}
			}
			reasons := 0 // the reasons the detail must give (a table name is part of one)
			for _, s := range tt.want {
				if contains(all, s) {
					reasons++
				}
			}
			var ss struct {
				Verdict string   `json:"verdict"`
				Reasons []string `json:"reasons"`
			}
			if err := json.Unmarshal(js["switch_state"], &ss); err != nil || ss.Verdict != "fail" || len(ss.Reasons) != reasons {
				t.Errorf("report.json switch_state = %s (%v), want verdict fail with %d reasons", js["switch_state"], err, reasons)
			}
			// analysis.checks holds every check: switch_state's reasons,
			// and the analyzers' skipped (no analyzer ran).
			if a := r.Analysis; a == nil || a.Valid || a.Checks.SwitchState == nil || a.Checks.SwitchState.Reason != c.Detail {
				t.Errorf("analysis of an invalid run = %+v, want invalid with switch_state %q", a, c.Detail)
			} else {
				for name, v := range a.Checks.Verdicts() {
					if v != model.Skip {
						t.Errorf("analysis.checks.%s = %s on an invalid run, want skip (no analyzer ran)", name, v)
					}
				}
			}
			// report.txt says why, and ends with the run's result.
			if txt := r.Text(); !strings.Contains(txt, "\n  switch_state    fail  ") || !strings.HasSuffix(txt, "\nresult: INVALID (switch_state)\n") {
				t.Errorf("report.txt:\n%s\nwant a failed switch_state line and result: INVALID (switch_state)", txt)
			}
			t.Logf("%s", c.Detail)
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestSwitchStateNormalRun: a run nobody interferes with stays valid and
// its switch_state check passes.
func TestSwitchStateNormalRun(t *testing.T) {
	r, js := runHooked(t, nil)
	if !r.Valid || !r.Passed() {
		t.Fatalf("valid %v, checks %v", r.Valid, r.Checks)
	}
	if c := r.Checks["switch_state"]; c.Verdict != "pass" {
		t.Errorf("switch_state %+v, want pass", c)
	}
	var ss struct {
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal(js["switch_state"], &ss); err != nil || ss.Verdict != "pass" || len(ss.Reasons) != 0 {
		t.Errorf("report.json switch_state = %s (%v), want verdict pass, no reasons", js["switch_state"], err)
	}
}
