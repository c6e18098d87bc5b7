package config

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The hosts form: hosts, flows and top-level pfc-events (docs/config.md
// "Many hosts"). Its keys decode through the schema's sections like the
// two-host form's: a host is a hostSection, a flow a flowSection (its own
// keys and every key of traffic).

// trafficOf returns the Traffic that s, a Traffic or a Flow, holds.
func trafficOf(s reflect.Value) *Traffic {
	if s.Type() == reflect.TypeFor[Flow]() {
		return &ptr[Flow](s).Traffic
	}
	return ptr[Traffic](s)
}

// validEntityName reports whether s can name a host or a flow: 1 to
// MaxNameLen letters, digits, '_' or '-' (no '.', which separates the
// keys of a path such as hosts.h1.nic).
func validEntityName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// entityNameErr is what a name that validEntityName refuses is told.
func entityNameErr(v *yaml.Node) string {
	return fmt.Sprintf("want 1..%d letters, digits, '_' or '-', got %s", MaxNameLen, describe(v))
}

// decEntityName decodes a flow's name.
func decEntityName(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var s string
	if !d.nonEmpty(v, path, &s) {
		return
	}
	if !validEntityName(s) {
		d.fail(v, path, "%s", entityNameErr(v))
		return
	}
	f.SetString(s)
}

// decHostRef decodes a host name (a flow's from and to); validate checks
// that hosts has it.
func decHostRef(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var s string
	if d.nonEmpty(v, path, &s) {
		f.SetString(s)
	}
}

// decSide decodes a PFC event's to or host: requester or responder in
// traffic.pfc-events, a host's name in the hosts form's top-level
// pfc-events (validate checks it).
func decSide(d *decoder, v *yaml.Node, path string, f, s reflect.Value) {
	if strings.HasPrefix(path, "traffic.") {
		oneOf(sideNames)(d, v, path, f, s)
		return
	}
	decHostRef(d, v, path, f, s)
}

// decFlowRef decodes start.flow of a PFC event; validatePFC checks it.
func decFlowRef(d *decoder, v *yaml.Node, path string, f, s reflect.Value) {
	decHostRef(d, v, path, f, s)
}

// decFlowPFCEvents refuses pfc-events in a flow.
func decFlowPFCEvents(d *decoder, _ *yaml.Node, path string, _, _ reflect.Value) {
	d.errorf(d.keys[path], "pfc-events in a flow: in the hosts form pfc-events is a top-level key (its to and host name a host, its start names the flow)")
	d.bad[path] = true
}

// decHosts decodes hosts: a mapping from host name to host, in file order.
func decHosts(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	decNamed(d, v, path, "host", "hosts", 2, MaxHosts, hostSection, ptr[[]NamedHost](f), func(name string, pos Pos) (NamedHost, func(*NamedHost) reflect.Value) {
		return NamedHost{Name: name, Pos: pos}, func(h *NamedHost) reflect.Value { return reflect.ValueOf(&h.Host).Elem() }
	})
}

// decNamed decodes a mapping from a name to a section (kinds: hosts,
// switches), in file order, into out: lo..hi entries, each with a valid name, each
// value sec with its defaults (null: the defaults). mk makes an entry with
// its name and position and says where in it sec goes.
func decNamed[T any](d *decoder, v *yaml.Node, path, kind, kinds string, lo, hi int, sec *section, out *[]T,
	mk func(name string, pos Pos) (T, func(*T) reflect.Value)) {
	if v.Kind != yaml.MappingNode {
		d.fail(v, path, "want a mapping from %s name to %s (%d..%d %s), got %s", kind, kind, lo, hi, kinds, describe(v))
		return
	}
	ps := d.pairs(v, path, 0)
	if len(ps) < lo || len(ps) > hi {
		d.fail(v, path, "want %d..%d %s, got %d", lo, hi, kinds, len(ps))
		ps = ps[:min(len(ps), hi)]
	}
	for _, p := range ps {
		ep := path + "." + p.name
		if !validEntityName(p.name) {
			d.errorf(p.key, "%s: a %s's name: %s", kinds, kind, entityNameErr(deref(p.key)))
			d.bad[path] = true
			continue
		}
		d.keys[ep] = p.key
		val := deref(p.val)
		if val == nil {
			d.errorf(p.val, "%s: alias chain too long", p.name)
			d.bad[ep] = true
			continue
		}
		d.nodes[ep] = val
		e, into := mk(p.name, Pos{max(p.key.Line, 1), max(p.key.Column, 1)})
		rv := into(&e)
		setDefaults(sec, rv)
		if !isNull(val) {
			d.section(val, ep, sec, rv)
		}
		*out = append(*out, e)
	}
}

// decFlows decodes flows: a list of flowSection mappings.
func decFlows(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	elems, ok := d.seq(v, path)
	if !ok {
		return
	}
	if len(elems) == 0 || len(elems) > MaxFlows {
		d.fail(v, path, "want 1..%d flows, got %d", MaxFlows, len(elems))
		elems = elems[:min(len(elems), MaxFlows)]
	}
	flows := ptr[[]Flow](f)
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		fl := Flow{Pos: Pos{max(e.Line, 1), max(e.Column, 1)}}
		rv := reflect.ValueOf(&fl).Elem()
		setDefaults(flowSection, rv)
		d.nodes[p] = e
		d.section(e, p, flowSection, rv)
		*flows = append(*flows, fl)
	}
}

// decECN decodes switch.ecn into a new *ECN (absent: nil).
func decECN(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	e := &ECN{Pos: Pos{max(v.Line, 1), max(v.Column, 1)}}
	rv := reflect.ValueOf(e).Elem()
	setDefaults(ecnSection, rv)
	if d.section(v, path, ecnSection, rv) {
		f.Set(reflect.ValueOf(e))
	}
}

// decPmax decodes switch.ecn.pmax: a probability in (0, 1].
func decPmax(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	s, ok := d.scalar(v, path, "a probability 0 < pmax <= 1")
	if !ok {
		return
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || x <= 0 || x > 1 {
		d.fail(v, path, "want a probability 0 < pmax <= 1 (the marking probability at kmax-kb), got %s", describe(v))
		return
	}
	f.SetFloat(x)
}

// encTwoHost writes the two-host form's key field (requester, responder,
// traffic); nothing in the hosts form.
func encTwoHost(field string, sec *section) func(reflect.Value) *yaml.Node {
	return func(s reflect.Value) *yaml.Node {
		if ptr[Test](s).HostsForm {
			return nil
		}
		return marshalValue(s.FieldByName(field), sec)
	}
}

// encHosts writes hosts; nothing in the two-host form.
func encHosts(s reflect.Value) *yaml.Node {
	t := ptr[Test](s)
	if !t.HostsForm {
		return nil
	}
	m := mapping()
	for i := range t.Hosts {
		m.Content = append(m.Content, str(t.Hosts[i].Name), marshalSection(hostSection, reflect.ValueOf(&t.Hosts[i].Host).Elem()))
	}
	return m
}

// encFlows writes flows; nothing in the two-host form.
func encFlows(s reflect.Value) *yaml.Node {
	t := ptr[Test](s)
	if !t.HostsForm {
		return nil
	}
	return marshalValue(s.FieldByName("Flows"), flowSection)
}

// encTopPFCEvents writes the top-level pfc-events of the hosts form;
// nothing in the two-host form (where they are traffic.pfc-events) or
// without events.
func encTopPFCEvents(s reflect.Value) *yaml.Node {
	t := ptr[Test](s)
	if !t.HostsForm || len(t.PFCEvents) == 0 {
		return nil
	}
	return marshalValue(s.FieldByName("PFCEvents"), pfcEventSection)
}

// hostPath returns the path of host i's keys: its name in the two-host
// form (requester, responder), hosts.NAME in the hosts form.
func hostPath(t *Test, i int) string {
	if t.HostsForm {
		return "hosts." + t.Hosts[i].Name
	}
	return t.Hosts[i].Name
}

// flowPath returns the path of flow f's keys: traffic in the two-host
// form, flows[f] in the hosts form.
func flowPath(t *Test, f int) string {
	if t.HostsForm {
		return fmt.Sprintf("flows[%d]", f)
	}
	return "traffic"
}

// pfcEventsPath returns the path of the PFC events: traffic.pfc-events in
// the two-host form, pfc-events in the hosts form.
func pfcEventsPath(t *Test) string {
	if t.HostsForm {
		return "pfc-events"
	}
	return "traffic.pfc-events"
}

// hostNames returns the names of t's hosts, for messages.
func hostNames(t *Test) []string {
	out := make([]string, len(t.Hosts))
	for i := range t.Hosts {
		out[i] = t.Hosts[i].Name
	}
	return out
}

// flowNames returns the names of t's flows, for messages.
func flowNames(t *Test) []string {
	out := make([]string, len(t.Flows))
	for i := range t.Flows {
		out[i] = t.Flows[i].Name
	}
	return out
}

// noSuch is the message for a name that names no host or flow.
func noSuch(key, what, name string, names []string) string {
	msg := fmt.Sprintf("%s: no %s named %q (%ss: %s)", key, what, name, what, strings.Join(names, ", "))
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}

// validateForm checks that the file uses one form: hosts and flows, or
// requester, responder and traffic.
func (d *decoder) validateForm(t *Test) {
	hosts, flows := d.keys["hosts"] != nil, d.keys["flows"] != nil
	if hosts {
		for _, k := range []string{"requester", "responder", "traffic"} {
			if kn := d.keys[k]; kn != nil {
				d.errorf(kn, "%s: the hosts form (hosts and flows) replaces requester, responder and traffic: give hosts and flows, or requester, responder and traffic", k)
			}
		}
		if !d.given("hosts") && !d.bad["hosts"] {
			d.errorf(d.keys["hosts"], "hosts: want 2..%d hosts, got null", MaxHosts)
			d.bad["hosts"] = true // no flow's host is unknown then
		}
		if !flows {
			d.errorf(d.keys["hosts"], "hosts needs flows: the traffic of the hosts form is a list of flows, each {name, from, to, ...} with the keys of traffic")
		} else if !d.given("flows") && !d.bad["flows"] {
			d.errorf(d.keys["flows"], "flows: want 1..%d flows, got null", MaxFlows)
		}
	} else if flows {
		d.errorf(d.keys["flows"], "flows needs hosts: the hosts of the flows' from and to (in the two-host form, give traffic instead)")
	}
	if kn := d.keys["pfc-events"]; kn != nil && !hosts {
		d.errorf(kn, "pfc-events at the top level belongs to the hosts form; with requester and responder give traffic.pfc-events")
	}
}

// validateHosts checks what involves several hosts: no address on two
// hosts (the switch forwards by destination address).
func (d *decoder) validateHosts(t *Test) {
	if !t.HostsForm {
		return
	}
	type owner struct {
		host string
		at   Pos
	}
	seen := map[netip.Addr]owner{}
	for i := range t.Hosts {
		h := &t.Hosts[i]
		lp := hostPath(t, i) + ".nic.ip-list"
		list := d.nodes[lp]
		for j, p := range h.NIC.IPList {
			at := d.firstPos(lp, hostPath(t, i))
			if list != nil && list.Kind == yaml.SequenceNode && len(list.Content) == len(h.NIC.IPList) {
				at = Pos{list.Content[j].Line, list.Content[j].Column}
			}
			if o, dup := seen[p.Addr()]; dup && o.host != h.Name {
				d.errorAt(at, fmt.Sprintf("ip-list[%d]: %s is also an address of host %s (at %s): every host needs its own addresses", j, p.Addr(), o.host, o.at))
			} else if !dup {
				seen[p.Addr()] = owner{h.Name, at}
			}
		}
	}
}

// validateFlows checks the flows of the hosts form: unique names, from
// and to naming two different hosts, and the QPs of all flows within the
// switch's connections.
func (d *decoder) validateFlows(t *Test) {
	if !t.HostsForm {
		return
	}
	names := map[string]Pos{}
	total := 0
	for i := range t.Flows {
		fl := &t.Flows[i]
		p := flowPath(t, i)
		if d.bad[p] {
			continue
		}
		if fl.Name != "" {
			at := d.firstPos(p+".name", p)
			if first, dup := names[fl.Name]; dup {
				d.errorAt(at, fmt.Sprintf("duplicate flow name %q (first at %s)", fl.Name, first))
			} else {
				names[fl.Name] = at
			}
		}
		known := true
		for _, k := range []struct{ key, name string }{{"from", fl.From}, {"to", fl.To}} {
			if k.name != "" && t.Host(k.name) == nil && !d.bad["hosts"] {
				d.errorAt(d.firstPos(p+"."+k.key, p), noSuch(k.key, "host", k.name, hostNames(t)))
				known = false
			}
		}
		if known && fl.From != "" && fl.From == fl.To {
			d.errorAt(d.firstPos(p+".to", p), fmt.Sprintf("to: flow %s goes from %s to itself; want another host", fl.Name, fl.From))
		}
		total += fl.NumQPs
	}
	if total > MaxTotalQPs {
		d.errorAt(d.firstPos("flows"), fmt.Sprintf("flows: %d QPs in all, more than the %d connections the switch tracks; use fewer num-qps", total, MaxTotalQPs))
	}
}

// validateECN checks the ecn thresholds of switch, or of every switch of
// switches.
func (d *decoder) validateECN(t *Test) {
	paths, sws := []string{"switch"}, []*Switch{&t.Switch}
	if t.Fabric() {
		paths, sws = nil, nil
		for i := range t.Switches {
			paths, sws = append(paths, "switches."+t.Switches[i].Name), append(sws, &t.Switches[i].Switch)
		}
	}
	for i, sp := range paths {
		e, p := sws[i].ECN, sp+".ecn"
		if e == nil || d.bad[p+".kmin-kb"] || d.bad[p+".kmax-kb"] || d.bad[p] {
			continue
		}
		if e.KminKB >= e.KmaxKB && d.given(p+".kmin-kb") && d.given(p+".kmax-kb") {
			d.errorAt(d.pos(p+".kmax-kb"), fmt.Sprintf("kmax-kb: want more than kmin-kb (%d), got %d", e.KminKB, e.KmaxKB))
		}
	}
}

// HostIPs returns the addresses of host h, the i-th of Test.Hosts: its
// ip-list, or 10.0.0.(i+1) when it has none (the sim and netns testbeds'
// default, docs/config.md).
func HostIPs(h Host, i int) []netip.Addr {
	var out []netip.Addr
	for _, p := range h.NIC.IPList {
		out = append(out, p.Addr())
	}
	if len(out) == 0 {
		out = []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})}
	}
	return out
}
