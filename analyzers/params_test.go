package analyzers

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator/softrnic"
)

// TestParamsFromConfigHosts: a hosts-form test gives every host's facts
// (addresses, CNP interval, NAK trigger, its personality's line rate) in Params.Hosts; the global
// values are the first flow's, timeout and retry_cnt unknown where the
// flows differ.
func TestParamsFromConfigHosts(t *testing.T) {
	host := func(name, personality, ip string, minUs int, slow bool) config.NamedHost {
		return config.NamedHost{Name: name, Host: config.Host{NIC: config.NIC{Personality: personality, IPList: []netip.Prefix{netip.MustParsePrefix(ip)}},
			RoCE: config.RoCEParameters{MinTimeBetweenCNPs: minUs, SlowRestart: slow}}}
	}
	flow := func(name, from, to string, timeout, retry int) config.Flow {
		return config.Flow{Name: name, From: from, To: to, Traffic: config.Traffic{Verb: config.VerbWrite, MTU: 1024, NumQPs: 1,
			MinRetransmitTimeout: timeout, MaxRetransmitRetry: retry}}
	}
	tt := &config.Test{HostsForm: true,
		Hosts: []config.NamedHost{host("h1", "cx5", "10.0.0.1/24", 4, true), host("h2", "cx4", "10.0.0.2/24", 8, false), host("r", "cx5", "10.0.0.9/24", 50, true)},
		Flows: []config.Flow{flow("a", "h1", "r", 14, 7), flow("b", "h2", "r", 14, 3)}}
	p := ParamsFromConfig(tt)
	f := func(v float64) *float64 { return &v }
	want := []model.HostParams{
		{Name: "h1", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}, MinTimeBetweenCNPsUs: f(4), NAKTriggersCNP: true, LinkGbps: 100},
		{Name: "h2", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, MinTimeBetweenCNPsUs: f(8), LinkGbps: 40},
		{Name: "r", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.9")}, MinTimeBetweenCNPsUs: f(50), NAKTriggersCNP: true, LinkGbps: 100},
	}
	if !reflect.DeepEqual(p.Hosts, want) {
		t.Errorf("Hosts = %+v, want %+v", p.Hosts, want)
	}
	if p.MTU != 1024 || p.Timeout == nil || *p.Timeout != 14 || p.RetryCnt != nil || *p.MinTimeBetweenCNPsUs != 50 || !p.NAKTriggersCNP {
		t.Errorf("params = mtu %d timeout %v retry %v min %v nak %v; want 1024, 14, nil (the flows differ), 50 (r), true",
			p.MTU, p.Timeout, p.RetryCnt, *p.MinTimeBetweenCNPsUs, p.NAKTriggersCNP)
	}
	if h := p.HostOf(netip.MustParseAddr("10.0.0.2")); h == nil || h.Name != "h2" {
		t.Errorf("HostOf(10.0.0.2) = %+v, want h2", h)
	}
	// The two-host form: no Hosts, the responder's CNP settings.
	two, err := config.Load("../examples/cnp-cx5.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p = ParamsFromConfig(two)
	if p.Hosts != nil || p.MinTimeBetweenCNPsUs == nil || *p.MinTimeBetweenCNPsUs != float64(two.Responder.RoCE.MinTimeBetweenCNPs) {
		t.Errorf("two-host params: hosts %+v, min %v; want none, the responder's %d", p.Hosts, p.MinTimeBetweenCNPsUs, two.Responder.RoCE.MinTimeBetweenCNPs)
	}
}

// TestResolveHostNICs: a NIC named after a host gets its addresses.
func TestResolveHostNICs(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.9")
	nics := model.ResolveHostNICs([]model.NIC{{Name: "r"}, {Name: "x"}}, nil, []model.HostParams{{Name: "r", IPs: []netip.Addr{ip}}})
	if !reflect.DeepEqual(nics[0].IPs, []netip.Addr{ip}) || nics[1].IPs != nil {
		t.Errorf("ResolveHostNICs = %+v, want r with 10.0.0.9, x without", nics)
	}
}

// TestNAKTriggersCNP: a NAK is a CNP trigger with slow restart when the
// notification point's personality sends CNPs with NAKs: the run's (it
// wins over the file's), a builtin, a personality file (cx5-fw2.yaml: base
// cx5), or the builtin that models a hardware NIC's type.
func TestNAKTriggersCNP(t *testing.T) {
	tt, err := config.Load("../examples/personality/fast-retransmission-fw2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		personality string
		nicType     string
		run         string // the personality the run loaded ("": none)
		slow        bool
		want        bool
	}{
		{"cx5", "cx5", "", "", true, true},
		{"cx4", "cx4", "", "", true, false},
		{"spec", "spec", "", "", true, false},
		{"file based on cx5", "cx5-fw2.yaml", "", "", true, true},
		{"missing file named like a cx5", "cx5-none.yaml", "", "", true, false},
		{"missing file on a cx4", "cx5-none.yaml", "cx4", "", true, false},
		{"missing file on a cx5", "cx5-none.yaml", "cx5", "", true, true},
		{"hardware cx6", "", "cx6", "", true, true},
		{"hardware e810", "", "e810", "", true, false},
		{"run's cx4 over the file's cx5", "cx5", "", "cx4", true, false},
		{"run's cx6 over spec", "spec", "", "cx6", true, true},
		{"no slow restart", "cx5", "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := config.Host{NIC: config.NIC{Personality: tc.personality, Type: tc.nicType}, RoCE: config.RoCEParameters{SlowRestart: tc.slow}}
			var pers map[string]softrnic.Personality
			if tc.run != "" {
				p, err := softrnic.LoadPersonality(tc.run)
				if err != nil {
					t.Fatal(err)
				}
				pers = map[string]softrnic.Personality{"r": p}
			}
			if got := nakTriggersCNP(tt, "r", h, pers); got != tc.want {
				t.Errorf("nakTriggersCNP(%s) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// TestParamsFromConfigFabric: a fabric's deadlock-ms is Params.DeadlockNs;
// the storm detection and restoration times are those of its switch
// watchdog with the shortest detection.
func TestParamsFromConfigFabric(t *testing.T) {
	for _, tc := range []struct {
		file                      string
		deadlock, detect, restore int64
	}{
		{"../examples/fabric/pfc-deadlock.yaml", 20e6, 0, 0},
		{"../examples/fabric/pfc-storm-clos.yaml", 0, 50e6, 100e6},
		{"../examples/fabric/hawkeye-fig1.yaml", 0, 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tt, err := config.Load(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			p := ParamsFromConfig(tt)
			want := tc.deadlock
			if p.DeadlockNs != want || p.PFCDetectionNs != tc.detect || p.PFCRestorationNs != tc.restore {
				t.Errorf("deadlock %d, detection %d, restoration %d; want %d, %d, %d", p.DeadlockNs, p.PFCDetectionNs, p.PFCRestorationNs, want, tc.detect, tc.restore)
			}
		})
	}
}

// TestParamsFromConfigRNR: rnr_retry (nil for the default 7, the largest
// of the flows') and odp come from the test (issue #32).
func TestParamsFromConfigRNR(t *testing.T) {
	tests := []struct {
		name, yaml string
		rnr        *int
		odp        bool
		odpIPs     string // Params.ODPIPs joined by spaces
	}{
		{"defaults", "name: t\n", nil, false, ""},
		{"rnr-retry 3", "traffic: {rnr-retry: 3}\n", intp(3), false, ""},
		{"rnr-retry 7", "traffic: {rnr-retry: 7}\n", nil, false, ""},
		{"rnr-retry 0, odp responder", "responder: {nic: {odp: {}}}\ntraffic: {rnr-retry: 0}\n", intp(0), true, "10.0.0.2"},
		{"odp requester, two addresses", "requester: {nic: {ip-list: [10.0.0.1/24, 10.0.1.1/24], odp: {enabled: true}}}\n", nil, true, "10.0.0.1 10.0.1.1"},
		{"odp off", "responder: {nic: {odp: {enabled: false}}}\n", nil, false, ""},
		{"flows differ", "hosts: {a: {nic: {ip-list: [10.0.0.5/24], odp: {prefetch: true}}}, b: {nic: {ip-list: [10.0.0.6/24]}}}\nflows:\n  - {name: f, from: a, to: b, rnr-retry: 2}\n  - {name: g, from: b, to: a, rnr-retry: 5}\n  - {name: h, from: b, to: a, rnr-retry: 1}\n",
			intp(5), true, "10.0.0.5"},
		{"a flow infinite", "hosts: {a: {}, b: {}}\nflows:\n  - {name: f, from: a, to: b, rnr-retry: 2}\n  - {name: g, from: b, to: a}\n", nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := config.Parse("t.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			p := ParamsFromConfig(tc)
			var ips []string
			for _, ip := range p.ODPIPs {
				ips = append(ips, ip.String())
			}
			if !reflect.DeepEqual(p.RNRRetry, tt.rnr) || p.ODP != tt.odp || strings.Join(ips, " ") != tt.odpIPs {
				t.Errorf("ParamsFromConfig(%q): RNRRetry %v, ODP %v, ODPIPs %v; want %v, %v, %s", tt.yaml, derefInt(p.RNRRetry), p.ODP, ips,
					derefInt(tt.rnr), tt.odp, tt.odpIPs)
			}
		})
	}
}

func intp(v int) *int { return &v }

func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
