package pfc

import (
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
)

// TestFabricInconsistentMeta runs the deadlocked ring of TestFabricDeadlock
// with run records that disagree with the trace (a crafted report.json):
// the analysis must not panic and must still give a deadlock verdict
// (model.Meta.Validate refuses such a record before the analyzers run).
func TestFabricInconsistentMeta(t *testing.T) {
	const ms = 1000000
	for _, tc := range []struct {
		name string
		mut  func(f *model.Fabric)
	}{
		{"one switch listed", func(f *model.Fabric) { f.Switches = f.Switches[:1] }},
		{"no switches", func(f *model.Fabric) { f.Switches = nil }},
		{"empty ports", func(f *model.Fabric) { f.Ports = nil }},
		{"ports of unknown switches", func(f *model.Fabric) {
			for i := range f.Ports {
				f.Ports[i].Switch, f.Ports[i].PeerSwitch = "nope", "nada"
			}
		}},
		{"peers not listed", func(f *model.Fabric) {
			for i := range f.Ports {
				f.Ports[i].PeerPort += 1000
			}
		}},
		{"routes of unknown hosts", func(f *model.Fabric) {
			for i := range f.Routes {
				f.Routes[i].From, f.Routes[i].To = "x", "y"
			}
		}},
		{"routes of unknown switches", func(f *model.Fabric) {
			for i := range f.Routes {
				for j := range f.Routes[i].Hops {
					f.Routes[i].Hops[j].Switch = "zz"
				}
			}
		}},
		{"duplicate switch names", func(f *model.Fabric) { f.Switches = []string{"s1", "s1", "s1", "s1"} }},
		{"no routes", func(f *model.Fabric) { f.Routes = nil }},
		{"huge ports", func(f *model.Fabric) {
			for i := range f.Ports {
				f.Ports[i].Port += 1 << 20
			}
		}},
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
			if v := r.Deadlock.Verdict; v != model.Pass && v != model.Fail {
				t.Errorf("deadlock = %v %q, want pass or fail", v, r.Deadlock.Reason)
			}
		})
	}
}
