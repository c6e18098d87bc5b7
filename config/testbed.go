package config

import (
	"fmt"
	"slices"
	"strings"
)

// ParseTestbed returns the testbed named s (sim, netns or remote, in any
// case), as the testbed key and lumina run --testbed spell it.
func ParseTestbed(s string) (Testbed, error) {
	for i, n := range testbedNames {
		if strings.EqualFold(s, n) {
			return Testbed(i), nil
		}
	}
	return 0, fmt.Errorf("config: unknown testbed %q (want %s)", s, quoteList(testbedNames))
}

// WithTestbed returns a copy of t that runs on testbed tb, as lumina run
// --testbed does: Testbed is tb, and every dumper's backend follows it (all
// sim on testbed sim; on netns and remote, a sim backend becomes afpacket,
// afpacket and dpdk are kept). It returns an error, matched by
// errors.Is(err, ErrInvalid), if the copy cannot run on tb: on remote, a
// host, the switch or a dumper without control-ip; eal-args on a dumper
// whose backend is no longer dpdk. t is not changed.
func (t *Test) WithTestbed(tb Testbed) (*Test, error) {
	if tb < TestbedSim || tb > TestbedRemote {
		return nil, fmt.Errorf("config: %v: %w", tb, &testbedError{msg: "unknown testbed"})
	}
	c := t.OnTestbed(tb)
	var msgs []string
	for _, p := range testbedProblems(c) {
		msgs = append(msgs, p.msg)
	}
	if len(msgs) > 0 {
		file := t.File
		if file == "" {
			file = t.Name
		}
		return nil, &testbedError{msg: fmt.Sprintf("%s: --testbed %s: %s", file, tb, strings.Join(msgs, "; "))}
	}
	return c, nil
}

// testbedError is WithTestbed's error; it matches ErrInvalid.
type testbedError struct{ msg string }

func (e *testbedError) Error() string        { return e.msg }
func (e *testbedError) Is(target error) bool { return target == ErrInvalid }

// OnTestbed is WithTestbed without the checks: the copy lumina run makes
// before its testbed reports what is missing there.
func (t *Test) OnTestbed(tb Testbed) *Test {
	c := *t
	c.Dumpers = slices.Clone(t.Dumpers)
	c.Hosts, c.Flows, c.PFCEvents = slices.Clone(t.Hosts), slices.Clone(t.Flows), slices.Clone(t.PFCEvents)
	c.Testbed = tb
	for i := range c.Dumpers {
		switch dm := &c.Dumpers[i]; {
		case tb == TestbedSim:
			dm.Backend = BackendSim
		case dm.Backend == BackendSim:
			dm.Backend = BackendAFPacket
		}
	}
	return &c
}

// slowdownOnRemote says why netns-slowdown k > 1 cannot run on remote.
func slowdownOnRemote(k int) string {
	return fmt.Sprintf("netns-slowdown %d: hardware runs in real time (the key is for the netns testbed; remove it or set 1)", k)
}

// tbProblem is one reason why a test cannot run on its testbed.
type tbProblem struct {
	host   string // the path of a host's keys (requester, hosts.h1) or "switch"; "" for a dumper
	dumper int    // the dumper's index in Test.Dumpers, if host is ""
	key    string // the key at fault
	msg    string
	path   string // or the path of the key at fault, if host and dumper do not apply
}

// testbedProblems returns why t cannot run on t.Testbed after
// withTestbed: what ParseWith reports, with positions, and WithTestbed
// without.
func testbedProblems(t *Test) []tbProblem {
	var out []tbProblem
	if t.Testbed == TestbedRemote {
		out = controlIPProblems(t)
	}
	if t.Testbed == TestbedRemote && t.Fabric() {
		out = append(out, remoteFabricProblems(t)...)
	}
	if t.Testbed == TestbedRemote && t.NetnsSlowdown > 1 {
		out = append(out, tbProblem{path: "netns-slowdown", msg: slowdownOnRemote(t.NetnsSlowdown)})
	}
	if t.Testbed == TestbedRemote {
		for _, ev := range t.pfcEvents() {
			switch ev.Type {
			case PFCPause:
				if ev.Start != nil {
					out = append(out, tbProblem{path: pfcEventsPath(t), msg: "pfc-events: " + RemoteStartPause})
				}
			case PFCRxStall:
				out = append(out, tbProblem{path: pfcEventsPath(t), msg: "pfc-events of type rx-stall need the software NIC (sim, netns)"})
			}
		}
	}
	for i, dm := range t.Dumpers {
		if t.Testbed == TestbedRemote && dm.ControlIP == "" {
			out = append(out, tbProblem{dumper: i, key: "control-ip", msg: fmt.Sprintf("dumper %q has no control-ip", dm.Name)})
		}
		if (t.Testbed == TestbedSim) != (dm.Backend == BackendSim) {
			out = append(out, tbProblem{dumper: i, key: "backend", msg: fmt.Sprintf("dumper %q: backend %s does not run on testbed %s", dm.Name, dm.Backend, t.Testbed)})
		}
		if len(dm.EALArgs) > 0 && dm.Backend != BackendDPDK {
			out = append(out, tbProblem{dumper: i, key: "eal-args", msg: fmt.Sprintf("dumper %q: eal-args are only used by backend dpdk, and the backend becomes %s", dm.Name, dm.Backend)})
		}
	}
	return out
}

// controlIPProblems returns a problem for each traffic host and the
// switch without control-ip, which the remote testbed needs.
func controlIPProblems(t *Test) []tbProblem {
	var out []tbProblem
	hosts := t.Hosts
	if len(hosts) == 0 && !t.HostsForm {
		hosts = []NamedHost{{Name: RequesterName, Host: t.Requester}, {Name: ResponderName, Host: t.Responder}}
	}
	for i, h := range hosts {
		if h.ControlIP != "" {
			continue
		}
		what := h.Name
		if t.HostsForm {
			what = "host " + h.Name
		}
		p := h.Name
		if i < len(t.Hosts) {
			p = hostPath(t, i)
		}
		out = append(out, tbProblem{host: p, key: "control-ip", msg: what + " has no control-ip"})
	}
	if t.Switch.ControlIP == "" {
		out = append(out, tbProblem{host: "switch", key: "control-ip", msg: "switch has no control-ip"})
	}
	return out
}

// override applies WithTestbed's rule to t, a valid test, and reports its
// problems at the keys concerned in the file.
func (d *decoder) override(t *Test, tb Testbed) *Test {
	c := t.OnTestbed(tb)
	for _, p := range testbedProblems(c) {
		var at Pos
		if p.path != "" {
			at = d.firstPos(p.path)
		} else if p.host != "" {
			at = d.firstPos(p.host + "." + p.key)
			if k := d.keys[p.host]; at == (Pos{1, 1}) && k != nil && k.Line > 0 {
				at = Pos{k.Line, k.Column}
			}
		} else if dp := d.dumperPath(p.dumper); dp != "" {
			at = d.firstPos(dp+"."+p.key, dp)
		} else {
			at = d.firstPos("testbed")
		}
		d.errorAt(at, fmt.Sprintf("--testbed %s: %s", tb, p.msg))
	}
	return c
}
