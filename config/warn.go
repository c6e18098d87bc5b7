package config

import (
	"fmt"
	"strings"
)

// Warnings returns what is legal in a valid test but most likely not what
// its author meant, each at its position in t.File with a message
// starting "warning: ". ParseWith hands them to LoadOptions.Warn, with
// which lumina validate and lumina run print them on stderr and go on
// (exit 0). Today: a pfc-events pause of a priority that
// no flow of the paused host uses (docs/pfc.md): its host has nothing to
// stop, so the pfc check has nothing to check.
func Warnings(t *Test) []*Error {
	var out []*Error
	flows := t.flows()
	for i, ev := range t.pfcEvents() {
		hi := t.HostIndex(ev.To)
		if ev.Type != PFCPause || hi < 0 && t.HostsForm {
			continue
		}
		var nic *NIC
		if hi >= 0 {
			nic = &t.Hosts[hi].NIC
		} else if h := map[string]*Host{RequesterName: &t.Requester, ResponderName: &t.Responder}[ev.To]; h != nil {
			nic = &h.NIC // a two-host Test built by hand, not normalized
		} else {
			continue
		}
		var prios [8]bool
		dscp := false // some flow of the host has a dscp-list
		for f := range flows {
			if fl := &flows[f]; fl.From == ev.To || fl.To == ev.To {
				for p, ok := range flowPriorities(&fl.Traffic, nic) {
					prios[p] = prios[p] || ok
				}
				dscp = dscp || len(fl.DSCPList) > 0
			}
		}
		if prios[ev.Priority] {
			continue
		}
		var used []string
		for p, ok := range prios {
			if ok {
				used = append(used, fmt.Sprint(p))
			}
		}
		var msg string
		if !t.HostsForm {
			tr := &flows[0].Traffic
			how := "traffic.dscp-list gives priority " + strings.Join(used, ", ")
			if len(tr.DSCPList) == 0 {
				how = "the QPs' DSCP is 0 without traffic.dscp-list: priority " + strings.Join(used, ", ")
			}
			msg = fmt.Sprintf("warning: pfc-events[%d] pauses %s on priority %d, but no flow uses it (%s): the pause stops nothing and the pfc check has nothing to check; "+
				"give traffic.dscp-list a DSCP of priority %d, such as %d", i, ev.To, ev.Priority, how, ev.Priority, exampleDSCP(nic, ev.Priority))
		} else {
			how := "no flow goes from or to " + ev.To
			if len(used) > 0 {
				how = "its flows' QPs have priority " + strings.Join(used, ", ")
				if !dscp {
					how += " (DSCP 0 without dscp-list)"
				}
			}
			msg = fmt.Sprintf("warning: pfc-events[%d] pauses %s on priority %d, but no flow of %s uses it (%s): the pause stops nothing and the pfc check has nothing to check; "+
				"give the dscp-list of a flow from or to %s a DSCP of priority %d, such as %d", i, ev.To, ev.Priority, ev.To, how, ev.To, ev.Priority, exampleDSCP(nic, ev.Priority))
		}
		out = append(out, &Error{File: t.File, Line: ev.Pos.Line, Col: ev.Pos.Col, Msg: msg})
	}
	return out
}

// flowPriorities returns the priorities the QPs' packets carry on nic:
// each QP's DSCP (traffic.dscp-list; without it DSCP 0, the generator's
// default traffic class) through nic's prio-dscp-map. Both hosts send
// with the QP's DSCP (data one way, acknowledgements the other).
func flowPriorities(tr *Traffic, nic *NIC) [8]bool {
	m := nic.DSCPToPriority()
	var out [8]bool
	if len(tr.DSCPList) == 0 {
		out[m[0]&7] = true
		return out
	}
	for _, d := range tr.DSCPList {
		if d >= 0 && d < 64 {
			out[m[d]&7] = true
		}
	}
	return out
}

// exampleDSCP returns a DSCP of priority p on nic: the RoCE convention
// 26 for priority 3 under the default map, else the lowest one.
func exampleDSCP(nic *NIC, p int) int {
	m := nic.DSCPToPriority()
	if m[26] == uint8(p) {
		return 26
	}
	for d, q := range m {
		if int(q) == p {
			return d
		}
	}
	return 8 * p
}
