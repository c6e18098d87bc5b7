package pfc

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
)

// TestFabricInconsistentMeta runs the deadlocked ring of TestFabricDeadlock
// with run records that disagree with the trace (a crafted report.json):
// the analysis must not panic, and gives no false pass: a ring whose ports
// the record does not list cannot be traced (model.Meta.Validate refuses
// most such records before the analyzers run).
func TestFabricInconsistentMeta(t *testing.T) {
	const ms = 1000000
	const untraced = "switch ports the run's fabric does not place on its switches (201, 203, 205, 207) sent PFC frames in the window 5.3 µs .. 5005.3 µs: a cycle through them cannot be traced"
	const unrouted = "PFC frames in the window 5.3 µs .. 5005.3 µs, and 36 RoCE copies of connections at switches their routes in the run record do not cross: the paths a cycle would follow cannot be traced"
	const cycle = "s2:201 → s3:203 → s4:205 → s1:207 → s2 kept pausing each other through 5.3 µs .. 5005.3 µs (frames in the window: s2:201 25, s3:203 25, s4:205 25, s1:207 25)"
	for _, tc := range []struct {
		name    string
		mut     func(f *model.Fabric)
		verdict model.Verdict
		reason  string
	}{
		{"consistent", func(f *model.Fabric) {}, model.Fail, cycle},
		{"one switch listed", func(f *model.Fabric) { f.Switches = f.Switches[:1] }, model.Inconclusive,
			"switch ports the run's fabric does not place on its switches (201, 203, 205) sent PFC frames in the window 5.3 µs .. 5005.3 µs: a cycle through them cannot be traced"},
		{"no switches", func(f *model.Fabric) { f.Switches = nil }, model.Inconclusive, untraced},
		{"empty ports", func(f *model.Fabric) { f.Ports = nil }, model.Inconclusive, untraced},
		{"ports of unknown switches", func(f *model.Fabric) {
			for i := range f.Ports {
				f.Ports[i].Switch, f.Ports[i].PeerSwitch = "nope", "nada"
			}
		}, model.Inconclusive, untraced},
		{"routes of unknown hosts", func(f *model.Fabric) {
			for i := range f.Routes {
				f.Routes[i].From, f.Routes[i].To = "x", "y"
			}
		}, model.Inconclusive, unrouted},
		{"routes of unknown switches", func(f *model.Fabric) {
			for i := range f.Routes {
				for j := range f.Routes[i].Hops {
					f.Routes[i].Hops[j].Switch = "zz"
				}
			}
		}, model.Inconclusive, unrouted},
		{"no routes", func(f *model.Fabric) { f.Routes = nil }, model.Inconclusive, unrouted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFabScen(t, []string{"s1", "s2", "s3", "s4"}, [][2]string{{"s1", "s2"}, {"s2", "s3"}, {"s3", "s4"}, {"s4", "s1"}})
			s.host("h1", "s1", 1)
			s.host("h2", "s2", 2)
			s.host("h3", "s3", 32)
			s.host("h4", "s4", 33)
			s.flow("A", "h1", "h3", "s1", "s2", "s3")
			s.flow("B", "h2", "h4", "s2", "s3", "s4")
			s.flow("C", "h3", "h1", "s3", "s4", "s1")
			s.flow("D", "h4", "h2", "s4", "s1", "s2")
			tc.mut(s.f)
			s.start(Options{DeadlockNs: 5 * ms, DetectionNs: 100 * ms})
			for k := range 3 {
				for c := range 4 {
					s.send(int64(1000+1000*k+100*c), c, 0)
				}
			}
			s.hold("s2", 201, 10000, 10*ms)
			s.hold("s1", 207, 12000, 10*ms)
			s.hold("s4", 205, 14000, 10*ms)
			s.hold("s3", 203, 16000, 10*ms)
			r := s.run()
			if r.Deadlock == nil || r.Fabric == nil {
				t.Fatalf("Deadlock, Fabric = %v, %v, want both", r.Deadlock, r.Fabric)
			}
			if d := r.Deadlock; d.Verdict != tc.verdict || d.Reason != tc.reason {
				t.Errorf("deadlock = %v %q,\nwant %v %q", d.Verdict, d.Reason, tc.verdict, tc.reason)
			}
		})
	}
}
