package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error it reports
// is well formed, and that every Test it accepts survives a Marshal/Parse
// round trip.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tt := range errorTests {
		f.Add([]byte(tt.in))
	}
	for _, tt := range hostsErrorTests {
		f.Add([]byte(tt.in))
	}
	for _, tt := range fabricErrorTests {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(closYAML))
	for _, in := range fuzzValidSeeds {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.yaml", data)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a Test and an error")
			}
			var list ErrorList
			if !errors.As(err, &list) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse error %T %v is not an ErrorList", err, err)
			}
			if len(list) == 0 || len(list) > maxErrors+1 {
				t.Fatalf("len(ErrorList) = %d, want 1..%d", len(list), maxErrors+1)
			}
			for _, e := range list {
				if e.File != "f.yaml" || e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Fatalf("malformed error %+v", e)
				}
			}
			return
		}
		checkRoundTrip(t, cfg)
		_ = cfg.ExpandEvents()
		tp := cfg.Topology()
		for i := range cfg.Hosts {
			if tp.HostSwitch(i) < 0 {
				t.Fatalf("host %d of a valid Test is on no switch", i)
			}
		}
		for f := range cfg.Flows {
			if r := cfg.Route(cfg.HostIndex(cfg.Flows[f].From), cfg.HostIndex(cfg.Flows[f].To)); len(r) == 0 || cfg.ObservedSwitch(f) < 0 {
				t.Fatalf("flow %d of a valid Test has no route", f)
			}
		}
	})
}

var fuzzValidSeeds = []string{
	"name: t\n",
	"traffic: {rdma-verb: send_read, num-qps: \"2,3\", dscp-list: [1, 2, 3, 4, 5]}\n",
	"x-l: &l {username: u}\nrequester: {<<: *l, nic: {type: cx5, ip-list: [10.0.0.1]}}\n",
	"iter-scope: connection\ntraffic:\n  tx-depth: 8\n  num-msgs-per-qp: 4\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: drop, iter: 2, msg: 3}\n    - {qpn: 0, psn: 1, type: ecn}\n",
	"testbed: netns\ndumpers:\n  - {name: a, weight: 2, workers: 4, backend: dpdk, eal-args: [-l, 0-3], nic: {rte-port-id: 1}}\n  - {name: b}\n",
	"hosts: {h1: {nic: {pfc: {priorities: [3]}}}, h2: {}, h3: {}}\nswitch: {ecn: {priorities: [3], kmin-kb: 1, kmax-kb: 2, pmax: 0.5}}\n" +
		"flows: [{name: a, from: h1, to: h3, num-qps: 2, data-pkt-events: [{qpn: 1, psn: 0, type: drop}]}, {name: b, from: h2, to: h3, start-us: 5}]\n" +
		"pfc-events: [{type: pause, to: h1, priority: 3, start: {flow: a, qpn: 1, psn: 0}}]\n",
}
