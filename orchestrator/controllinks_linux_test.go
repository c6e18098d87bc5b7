package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
)

// TestControlLinks: the netns testbed joins the two hosts of each flow by
// one control veth per pair, numbered in the order of the pairs' first
// flows (the two-host form's 10.255.0.1 on the requester, .2 on the
// responder, as before #30), and each flow's responder listens on its to
// host's end.
func TestControlLinks(t *testing.T) {
	flow := func(from, to string) config.Flow { return config.Flow{Name: from + to, From: from, To: to} }
	hosts := func(names ...string) []config.NamedHost {
		var out []config.NamedHost
		for _, n := range names {
			out = append(out, config.NamedHost{Name: n})
		}
		return out
	}
	tests := []struct {
		name  string
		t     *config.Test
		links string // hosts and addresses of each link
		addrs string // each flow's responder address
	}{
		{"two-host form", &config.Test{Hosts: hosts("requester", "responder"), Flows: []config.Flow{flow("requester", "responder")}},
			"0-1 10.255.0.1 10.255.0.2", "10.255.0.2"},
		{"bidirectional", &config.Test{Hosts: hosts("a", "b"), Flows: []config.Flow{flow("a", "b"), flow("b", "a")}},
			"0-1 10.255.0.1 10.255.0.2", "10.255.0.2 10.255.0.1"},
		{"pairs", &config.Test{Hosts: hosts("h1", "h2", "h3", "h4", "h5", "h6"), Flows: []config.Flow{flow("h1", "h2"), flow("h3", "h4"), flow("h6", "h5")}},
			"0-1 10.255.0.1 10.255.0.2, 2-3 10.255.0.5 10.255.0.6, 5-4 10.255.0.9 10.255.0.10", "10.255.0.2 10.255.0.6 10.255.0.10"},
		{"incast", &config.Test{Hosts: hosts("h1", "h2", "r"), Flows: []config.Flow{flow("h1", "r"), flow("h2", "r"), flow("r", "h1")}},
			"0-2 10.255.0.1 10.255.0.2, 1-2 10.255.0.5 10.255.0.6", "10.255.0.2 10.255.0.6 10.255.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			links := controlLinks(tt.t)
			var ls, as []string
			for _, l := range links {
				ls = append(ls, fmt.Sprintf("%d-%d %v %v", l.hosts[0], l.hosts[1], l.addr[0], l.addr[1]))
			}
			for _, f := range tt.t.Flows {
				as = append(as, controlAddr(links, tt.t.HostIndex(f.From), tt.t.HostIndex(f.To)).String())
			}
			if got := strings.Join(ls, ", "); got != tt.links {
				t.Errorf("controlLinks = %s, want %s", got, tt.links)
			}
			if got := strings.Join(as, " "); got != tt.addrs {
				t.Errorf("responder addresses = %s, want %s", got, tt.addrs)
			}
		})
	}
	// The 65th link's addresses go on in the next /24.
	var tc config.Test
	for i := range 130 {
		tc.Hosts = append(tc.Hosts, config.NamedHost{Name: fmt.Sprint("h", i)})
	}
	for i := 0; i < 130; i += 2 {
		tc.Flows = append(tc.Flows, flow(fmt.Sprint("h", i), fmt.Sprint("h", i+1)))
	}
	if l := controlLinks(&tc)[64]; l.addr[0].String() != "10.255.1.1" || l.addr[1].String() != "10.255.1.2" {
		t.Errorf("link 64 addresses %v, want 10.255.1.1 and 10.255.1.2", l.addr)
	}
}
