package config

import (
	"reflect"
	"regexp"
	"testing"
	"time"
)

// Issue #32: nic.odp on traffic hosts, traffic's min-rnr-timer, rnr-retry
// and post-interval-us.

func TestParseODPErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"page-fault-us 0", "requester:\n  nic:\n    odp: {enabled: true, page-fault-us: 0}\n",
			`t.yaml:3:41: page-fault-us: want 1..10000000, got 0 (page-fault-us: µs until a page fault resolves)`},
		{"page-fault-us too long", "responder:\n  nic:\n    odp: {page-fault-us: 10000001}\n",
			`t.yaml:3:26: page-fault-us: want 1..10000000, got 10000001 (page-fault-us: µs until a page fault resolves)`},
		{"enabled not a bool", "requester:\n  nic:\n    odp: {enabled: sometimes}\n",
			`t.yaml:3:20: enabled: want a boolean (true or false), got "sometimes"`},
		{"odp not a mapping", "requester:\n  nic:\n    odp: true\n", `t.yaml:3:10: odp: want a mapping, got "true"`},
		{"unknown odp key", "requester:\n  nic:\n    odp: {prefech: true}\n",
			`t.yaml:3:11: unknown key "prefech" in requester.nic.odp; did you mean "prefetch"?`},
		{"odp on a dumper", "dumpers:\n  - nic: {odp: {enabled: true}}\n", `t.yaml:2:11: unknown key "odp" in dumpers[0].nic`},
		{"odp on a mirror", "requester-mirror:\n  nic: {odp: {}}\n", `t.yaml:2:9: unknown key "odp" in requester-mirror.nic`},
		{"min-rnr-timer", "traffic:\n  min-rnr-timer: 32\n",
			`t.yaml:2:18: min-rnr-timer: want 0..31, got 32 (min-rnr-timer: the IBA encoding, 14 is 1.28 ms)`},
		{"min-rnr-timer negative", "traffic:\n  min-rnr-timer: -1\n",
			`t.yaml:2:18: min-rnr-timer: want 0..31, got -1 (min-rnr-timer: the IBA encoding, 14 is 1.28 ms)`},
		{"rnr-retry", "traffic:\n  rnr-retry: 8\n", `t.yaml:2:14: rnr-retry: want 0..7, got 8 (rnr-retry: 7 is infinite)`},
		{"post-interval-us", "traffic:\n  post-interval-us: 10000001\n",
			`t.yaml:2:21: post-interval-us: want 0..10000000, got 10000001 (post-interval-us: µs between posting successive messages of a QP)`},
		{"post-interval-us negative", "traffic:\n  post-interval-us: -5\n",
			`t.yaml:2:21: post-interval-us: want 0..10000000, got -5 (post-interval-us: µs between posting successive messages of a QP)`},
		{"hosts form: odp on a host", "hosts:\n  h1: {nic: {odp: {page-fault-us: x}}}\n  h2: {}\nflows:\n  - {name: a, from: h1, to: h2}\n",
			`t.yaml:2:35: page-fault-us: want an integer, got "x"`},
		{"hosts form: flow keys", "hosts:\n  h1: {}\n  h2: {}\nflows:\n  - {name: a, from: h1, to: h2, rnr-retry: 9, min-rnr-timer: 40}\n",
			"t.yaml:5:44: rnr-retry: want 0..7, got 9 (rnr-retry: 7 is infinite)\n" +
				`t.yaml:5:62: min-rnr-timer: want 0..31, got 40 (min-rnr-timer: the IBA encoding, 14 is 1.28 ms)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, nil; want error %q", tt.in, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n%s\nwant\n%s", tt.in, err, tt.want)
			}
		})
	}
}

func TestParseODP(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(*Test)
	}{
		{"the issue's keys", "requester:\n  nic:\n    odp: {enabled: true, page-fault-us: 500, prefetch: false}\n" +
			"responder:\n  nic:\n    odp: {enabled: true, page-fault-us: 250}\n" +
			"traffic: {min-rnr-timer: 14, rnr-retry: 7, post-interval-us: 1000}\n", func(t *Test) {
			t.Requester.NIC.ODP = &ODP{Enabled: true, PageFaultUs: 500}
			t.Responder.NIC.ODP = &ODP{Enabled: true, PageFaultUs: 250}
			t.Traffic.MinRNRTimer, t.Traffic.RNRRetry, t.Traffic.PostIntervalUs = 14, 7, 1000
		}},
		{"enabled by default, page fault of the personality", "responder: {nic: {odp: {prefetch: true}}}\n", func(t *Test) {
			t.Responder.NIC.ODP = &ODP{Enabled: true, Prefetch: true}
		}},
		{"empty mapping", "responder: {nic: {odp: {}}}\n", func(t *Test) { t.Responder.NIC.ODP = &ODP{Enabled: true} }},
		{"turned off", "requester: {nic: {odp: {enabled: false, page-fault-us: 7}}}\n", func(t *Test) {
			t.Requester.NIC.ODP = &ODP{PageFaultUs: 7}
		}},
		{"null odp is absent", "requester: {nic: {odp: ~}}\n", func(*Test) {}},
		{"bounds", "traffic: {min-rnr-timer: 0, rnr-retry: 0, post-interval-us: 10000000}\n", func(t *Test) {
			t.Traffic.MinRNRTimer, t.Traffic.RNRRetry, t.Traffic.PostIntervalUs = 0, 0, 10_000_000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := defaultTest()
			tt.want(want)
			want.Normalize()
			got, err := Parse("t.yaml", []byte("name: t\n"+tt.in))
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(%q) =\n%+v\nwant\n%+v", tt.in, got, want)
			}
			checkRoundTrip(t, got)
		})
	}
}

func TestParseODPHostsForm(t *testing.T) {
	in := "hosts:\n  h1: {nic: {odp: {page-fault-us: 300}}}\n  h2: {}\n  h3: {}\n" +
		"flows:\n  - {name: a, from: h1, to: h2, min-rnr-timer: 14, post-interval-us: 3000}\n  - {name: b, from: h2, to: h3, rnr-retry: 3}\n"
	got, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse error = %v", err)
	}
	if got.Hosts[0].NIC.ODP == nil || *got.Hosts[0].NIC.ODP != (ODP{Enabled: true, PageFaultUs: 300}) {
		t.Errorf("hosts.h1.nic.odp = %+v, want {Enabled:true PageFaultUs:300}", got.Hosts[0].NIC.ODP)
	}
	if got.Hosts[1].NIC.ODP != nil {
		t.Errorf("hosts.h2.nic.odp = %+v, want nil", got.Hosts[1].NIC.ODP)
	}
	type rnr struct{ timer, retry, interval int }
	for i, want := range []rnr{{14, 7, 3000}, {12, 3, 0}} {
		f := got.Flows[i]
		if g := (rnr{f.MinRNRTimer, f.RNRRetry, f.PostIntervalUs}); g != want {
			t.Errorf("flows[%d] (min-rnr-timer, rnr-retry, post-interval-us) = %v, want %v", i, g, want)
		}
	}
	if !got.ODPInTest() {
		t.Errorf("ODPInTest() = false, want true (h1 uses ODP)")
	}
	checkRoundTrip(t, got)
}

func TestODPInTest(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"name: t\n", false},
		{"responder: {nic: {odp: {}}}\n", true},
		{"requester: {nic: {odp: {prefetch: true}}}\n", true},
		{"requester: {nic: {odp: {enabled: false}}}\n", false},
	}
	for _, tt := range tests {
		got, err := Parse("t.yaml", []byte(tt.in))
		if err != nil {
			t.Fatalf("Parse(%q) error = %v", tt.in, err)
		}
		if g := got.ODPInTest(); g != tt.want {
			t.Errorf("ODPInTest(%q) = %v, want %v", tt.in, g, tt.want)
		}
	}
}

// TestMarshalLeavesODPDefaultsOut: a test without the new keys marshals
// as before them (the resolved form of existing tests does not change).
func TestMarshalLeavesODPDefaultsOut(t *testing.T) {
	got, err := Parse("t.yaml", []byte("name: t\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := got.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"odp", "min-rnr-timer", "rnr-retry", "post-interval-us"} {
		if regexp.MustCompile(`(?m)^\s*` + k + `:`).Match(out) {
			t.Errorf("Marshal() of the defaults writes %q:\n%s", k, out)
		}
	}
}

// TestTrafficDeadlineODP: the post schedule and the page faults extend the
// deadline; a test without them keeps it (the trace of an existing test,
// which may end at the deadline, does not change).
func TestTrafficDeadlineODP(t *testing.T) {
	base := 32768*time.Nanosecond + 14*time.Second + time.Second // 4096 B at 1 Gb/s, retries, slack
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"none", "name: t\n", base},
		{"min-rnr-timer alone", "traffic: {min-rnr-timer: 0}\n", base},
		{"post interval", "traffic: {num-msgs-per-qp: 5, post-interval-us: 1000}\n",
			5*32768*time.Nanosecond + 5*14*time.Second + 4*time.Millisecond + time.Second},
		// 4096 B: 2 pages per buffer; each fault 500 µs + 4 × 1.28 ms.
		{"responder odp", "responder: {nic: {odp: {page-fault-us: 500}}}\ntraffic: {min-rnr-timer: 14}\n",
			base + 2*2*(500*time.Microsecond+4*1280*time.Microsecond)},
		// The larger fault of the two hosts; the default bound without page-fault-us.
		{"both hosts", "requester: {nic: {odp: {page-fault-us: 500}}}\nresponder: {nic: {odp: {}}}\ntraffic: {message-size: 8193}\n",
			65544*time.Nanosecond + 15*time.Second + 2*4*(10*time.Millisecond+4*640*time.Microsecond)},
		{"odp off", "responder: {nic: {odp: {enabled: false, page-fault-us: 500}}}\n", base},
		// Hosts form: the flow from the ODP host counts its faults; the
		// other flow (2 ms later, no ODP host) does not, and the slowest wins.
		{"hosts form", "hosts: {a: {nic: {odp: {page-fault-us: 1000}}}, b: {}, c: {}}\n" +
			"flows:\n  - {name: f, from: a, to: b}\n  - {name: g, from: b, to: c, start-us: 2000}\n",
			2*32768*time.Nanosecond + 14*time.Second + 2*2*(time.Millisecond+4*640*time.Microsecond) + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := Parse("t.yaml", []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.in, err)
			}
			if got := tc.TrafficDeadline(); got != tt.want {
				t.Errorf("TrafficDeadline(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
