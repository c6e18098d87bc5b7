package config

import (
	"fmt"
	"strings"
)

// host returns the traffic host named as in pfc-events (requester or
// responder), or nil.
func (t *Test) host(name string) *Host {
	switch name {
	case "requester":
		return &t.Requester
	case "responder":
		return &t.Responder
	}
	return nil
}

// Warnings returns what is legal in a valid test but most likely not what
// its author meant, each at its position in t.File with a message
// starting "warning: ". ParseWith hands them to LoadOptions.Warn, with
// which lumina validate and lumina run print them on stderr and go on
// (exit 0). Today: a pfc-events pause of a priority that
// no flow uses (docs/pfc.md): its host has nothing to stop, so the pfc
// check has nothing to check.
func Warnings(t *Test) []*Error {
	var out []*Error
	tr := &t.Traffic
	for i, ev := range tr.PFCEvents {
		h := t.host(ev.To)
		if ev.Type != PFCPause || h == nil {
			continue
		}
		prios := flowPriorities(tr, &h.NIC)
		if prios[ev.Priority] {
			continue
		}
		var used []string
		for p, ok := range prios {
			if ok {
				used = append(used, fmt.Sprint(p))
			}
		}
		how := "traffic.dscp-list gives priority " + strings.Join(used, ", ")
		if len(tr.DSCPList) == 0 {
			how = "the QPs' DSCP is 0 without traffic.dscp-list: priority " + strings.Join(used, ", ")
		}
		out = append(out, &Error{File: t.File, Line: ev.Pos.Line, Col: ev.Pos.Col,
			Msg: fmt.Sprintf("warning: pfc-events[%d] pauses %s on priority %d, but no flow uses it (%s): the pause stops nothing and the pfc check has nothing to check; "+
				"give traffic.dscp-list a DSCP of priority %d, such as %d", i, ev.To, ev.Priority, how, ev.Priority, exampleDSCP(&h.NIC, ev.Priority))})
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
