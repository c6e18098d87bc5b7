package config

import (
	"errors"
	"testing"
)

const setBase = `name: s
requester:
  nic: {personality: cx4, ip-list: [10.0.0.1/24]}
responder:
  nic:
    ip-list: [10.0.0.2/24]
dumpers:
  - {name: d0, weight: 1}
  - {name: d1, weight: 1}
traffic:
  mtu: 1024
  message-size: 4096
  data-pkt-events:
    - {qpn: 0, psn: 2, type: drop, iter: 1}
`

func TestParseSetting(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Setting
		err  string
	}{
		{"traffic.mtu=2048", Setting{"traffic.mtu", "2048"}, ""},
		{"traffic.data-pkt-events=[]", Setting{"traffic.data-pkt-events", "[]"}, ""},
		{" a.b = x=y", Setting{"a.b", " x=y"}, ""},
		{"traffic.mtu", Setting{}, `config: bad --set "traffic.mtu": want PATH=VALUE, e.g. traffic.post-interval-us=3000`},
		{"=3", Setting{}, `config: bad --set "=3": want PATH=VALUE, e.g. traffic.post-interval-us=3000`},
		{"traffic..mtu=3", Setting{}, `config: bad --set "traffic..mtu=3": empty key in path "traffic..mtu"`},
	} {
		got, err := ParseSetting(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || !errors.Is(err, ErrSetting) {
				t.Errorf("ParseSetting(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSetting(%q) = %+v, %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestSetApplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sets  []Setting
		check func(*Test) string
	}{
		{"replace a scalar", []Setting{{"traffic.mtu", "512"}}, func(x *Test) string {
			if x.Traffic.MTU != 512 || len(x.Traffic.Events) != 1 {
				return "want mtu 512 and the file's one event"
			}
			return ""
		}},
		{"replace a list", []Setting{{"traffic.data-pkt-events", "[]"}}, func(x *Test) string {
			if len(x.Traffic.Events) != 0 {
				return "want no events"
			}
			return ""
		}},
		{"add a key", []Setting{{"traffic.num-qps", "3"}}, func(x *Test) string {
			if x.Traffic.NumQPs != 3 {
				return "want num-qps 3"
			}
			return ""
		}},
		{"add a key to a block mapping", []Setting{{"responder.nic.personality", "cx5"}}, func(x *Test) string {
			if x.Responder.NIC.Personality != "cx5" {
				return "want responder personality cx5"
			}
			return ""
		}},
		{"add mappings on the path", []Setting{{"responder.roce-parameters.slow-restart", "true"}}, func(x *Test) string {
			if !x.Responder.RoCE.SlowRestart {
				return "want responder slow-restart"
			}
			return ""
		}},
		{"index a list", []Setting{{"dumpers.1.weight", "3"}}, func(x *Test) string {
			if len(x.Dumpers) != 2 || x.Dumpers[1].Weight != 3 || x.Dumpers[0].Weight != 1 {
				return "want dumper 1 weight 3, dumper 0 weight 1"
			}
			return ""
		}},
		{"the issue's sweep point", []Setting{{"traffic.message-size", "65536"}, {"requester.nic.personality", "cx5"}}, func(x *Test) string {
			if x.Traffic.MessageSize != 65536 || x.Requester.NIC.Personality != "cx5" || x.Responder.NIC.Personality != "spec" {
				return "want message-size 65536, requester cx5, responder spec (the file's default)"
			}
			return ""
		}},
		{"later wins", []Setting{{"traffic.mtu", "2048"}, {"traffic.mtu", "512"}}, func(x *Test) string {
			if x.Traffic.MTU != 512 {
				return "want mtu 512"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := ParseWith("s.yaml", []byte(setBase), LoadOptions{Set: tc.sets})
			if err != nil {
				t.Fatalf("ParseWith: %v", err)
			}
			if msg := tc.check(x); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []Setting
		want string
	}{
		{"bad value points at the key it replaced", []Setting{{"traffic.mtu", "2000"}},
			"s.yaml:11:8: mtu: want 256, 512, 1024, 2048 or 4096, got 2000 (--set traffic.mtu=2000)"},
		{"value breaks another key's rule", []Setting{{"traffic.mtu", "4096"}, {"traffic.message-size", "8192"}},
			"s.yaml:14:21: psn: want 0..1 or \"all\", got 2 (a message of 8192 bytes at mtu 4096 is 2 packets; psn is the 0-based packet index within a message)" +
				" (with --set traffic.mtu=4096 --set traffic.message-size=8192)"},
		{"the issue's sweep point: message size and personality", []Setting{{"traffic.message-size", "65536x"}, {"requester.nic.personality", "cx9"}},
			"s.yaml:3:22: personality: want spec, cx4, cx5 or cx6, or the path of a .yaml/.yml file, got \"cx9\"; did you mean \"cx4\"? (--set requester.nic.personality=cx9)\n" +
				"s.yaml:12:17: message-size: want an integer, got \"65536x\" (--set traffic.message-size=65536x)"},
		{"added personality key", []Setting{{"responder.nic.personality", "cx7"}},
			"s.yaml:6:5: personality: want spec, cx4, cx5 or cx6, or the path of a .yaml/.yml file, got \"cx7\"; did you mean \"cx4\"? (--set responder.nic.personality=cx7)"},
		{"two overrides, the error at one", []Setting{{"traffic.message-size", "65536"}, {"traffic.mtu", "9000"}},
			"s.yaml:11:8: mtu: want 256, 512, 1024, 2048 or 4096, got 9000 (--set traffic.mtu=9000)"},
		{"unknown key added", []Setting{{"traffic.mtux", "1"}},
			`s.yaml:11:3: unknown key "mtux" in traffic; did you mean "mtu"? (--set traffic.mtux=1)`},
		{"index out of range", []Setting{{"dumpers.2.weight", "1"}},
			`s.yaml:1:1: --set dumpers.2.weight=1: dumpers is a list of 2: want an index 0..1, not "2"`},
		{"through a scalar", []Setting{{"name.x", "1"}},
			`s.yaml:1:1: --set name.x=1: name is "s", not a mapping or list`},
		{"value not YAML", []Setting{{"traffic.mtu", "[1"}},
			"s.yaml:1:1: --set traffic.mtu=[1: value is not YAML: line 1: did not find expected ',' or ']'"},
		{"alias", []Setting{{"traffic.mtu", "&a 1"}},
			"s.yaml:1:1: --set traffic.mtu=&a 1: value may not use YAML anchors or aliases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWith("s.yaml", []byte(setBase), LoadOptions{Set: tc.sets})
			if err == nil || err.Error() != tc.want {
				t.Errorf("ParseWith error =\n%v\nwant\n%s", err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
		})
	}
}
