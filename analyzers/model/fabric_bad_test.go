package model

import (
	"errors"
	"strings"
	"testing"
)

// TestParseMetaFabricBad: a crafted run record whose fabric the analyzers
// cannot read (switch ids beyond 32, unnamed or repeated switches, ports
// of unknown switches or beyond 16 bits, routes and observed switches
// naming unknown switches, a deadlock window beyond 60 s that would
// overflow the window's end) is refused with ErrMeta naming the fault;
// a consistent one is read.
func TestParseMetaFabricBad(t *testing.T) {
	many := `"s0"`
	for i := 1; i < 33; i++ {
		many += `, "s` + strings.Repeat("x", i) + `"`
	}
	const ok2 = `"switches": ["a", "b"], "ports": [{"port": 1, "switch": "a", "host": "h1"}, {"port": 200, "switch": "a", "peer_switch": "b", "peer_port": 201}, {"port": 201, "switch": "b", "peer_switch": "a", "peer_port": 200}]`
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"consistent", `{"fabric": {` + ok2 + `, "routes": [{"from": "h1", "to": "h2", "hops": [{"switch": "a", "in": 1, "out": 200}]}], "observe": {"f": "a"}}}`, ""},
		{"no switches", `{"fabric": {"switches": []}}`, "fabric: 0 switches (want 1..32)"},
		{"33 switches", `{"fabric": {"switches": [` + many + `]}}`, "fabric: 33 switches (want 1..32)"},
		{"unnamed switch", `{"fabric": {"switches": ["a", ""]}}`, "fabric: switch 1 has no name"},
		{"switch twice", `{"fabric": {"switches": ["a", "a"]}}`, `fabric: switch "a" appears twice`},
		{"port of unknown switch", `{"fabric": {"switches": ["a"], "ports": [{"port": 1, "switch": "zz", "host": "h1"}]}}`, `fabric: port 1: no switch "zz" (switches: a)`},
		{"peer of unknown switch", `{"fabric": {"switches": ["a"], "ports": [{"port": 200, "switch": "a", "peer_switch": "zz", "peer_port": 201}]}}`, `fabric: port 200: peer_switch: no switch "zz" (switches: a)`},
		{"port twice", `{"fabric": {"switches": ["a"], "ports": [{"port": 1, "switch": "a", "host": "h1"}, {"port": 1, "switch": "a", "host": "h2"}]}}`, "fabric: port 1 appears twice"},
		{"peer not listed", `{"fabric": {"switches": ["a", "b"], "ports": [{"port": 200, "switch": "a", "peer_switch": "b", "peer_port": 201}]}}`, "fabric: port 200: its peer, b port 201, is not listed as b's port cabled back to it"},
		{"peer cabled elsewhere", `{"fabric": {"switches": ["a", "b"], "ports": [{"port": 200, "switch": "a", "peer_switch": "b", "peer_port": 201}, {"port": 201, "switch": "b", "peer_switch": "a", "peer_port": 202}]}}`, "fabric: port 200: its peer, b port 201, is not listed as b's port cabled back to it"},
		{"port beyond 16 bits", `{"fabric": {"switches": ["a"], "ports": [{"port": 65537, "switch": "a", "host": "h1"}]}}`, "fabric: port 65537 beyond 16 bits"},
		{"route of unknown switch", `{"fabric": {` + ok2 + `, "routes": [{"from": "h1", "to": "h2", "hops": [{"switch": "c", "in": 1, "out": 200}]}]}}`, `fabric: route h1 → h2: no switch "c" (switches: a, b)`},
		{"observe unknown switch", `{"fabric": {` + ok2 + `, "observe": {"f": "c"}}}`, `fabric: observe: flow "f": no switch "c" (switches: a, b)`},
		{"last_seq of 33 switches", `{"fabric": {` + ok2 + `}, "switch": {"last_seq": [` + strings.Repeat("1, ", 32) + `1]}}`, "switch: last_seq has 33 switches (want at most 32)"},
		{"deadlock beyond 60 s", `{"fabric": {` + ok2 + `}, "params": {"deadlock_ns": 9000000000000000000}}`, "deadlock_ns 9000000000000000000 (want 0..60000000000: deadlock-ms 1..60000)"},
		{"deadlock in analysis beyond 60 s", `{"analysis": {"params": {"deadlock_ns": 60000000001}}}`, "deadlock_ns 60000000001 (want 0..60000000000: deadlock-ms 1..60000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMeta([]byte(tc.doc))
			if tc.want == "" {
				if err != nil {
					t.Errorf("ParseMeta = %v, want no error", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrMeta) || !strings.HasSuffix(err.Error(), ": "+tc.want) {
				t.Errorf("ParseMeta = %v, want ErrMeta ending %q", err, tc.want)
			}
		})
	}
}
