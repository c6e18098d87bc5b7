package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// Host is a traffic host's name, switch port, MAC and addresses.
type Host struct {
	// Name is the host's name in the test ("requester" and "responder"
	// in the two-host form); errors name it.
	Name string
	Port uint32
	MAC  [6]byte
	IPs  []netip.Addr
}

// Dumper is a dumper's switch port, MAC and WRR weight (1..255).
type Dumper struct {
	Name   string
	Port   uint32
	MAC    [6]byte
	Weight int
	// SnapLen is how many bytes of each copy the dumper keeps: its clone
	// session truncates copies to it, as a hardware switch's mirror
	// session does, so that a copy takes no more of the switch→dumper link
	// than the dumper writes. Default 0: whole copies.
	SnapLen int
}

// Ports is where everything is attached to the switch: the traffic hosts
// (in the test's hosts order; the two-host form's requester then
// responder) and the dumpers, and, for a test with several switches, the
// fabric they form on it.
type Ports struct {
	Hosts   []Host
	Dumpers []Dumper
	// Fabric partitions the switch's ports into logical switches and
	// routes the hosts' traffic through them (fabric.go). Default nil:
	// one switch, and exactly the plan of a test without a fabric.
	Fabric *Fabric
}

// hostOf returns the index in Hosts of the host with address a, or -1.
func (ps *Ports) hostOf(a netip.Addr) int {
	for i, h := range ps.Hosts {
		if hasIP(h.IPs, a) {
			return i
		}
	}
	return -1
}

// Intent is what the test asks for, independent of runtime QPNs and PSNs.
type Intent struct {
	// Events are the test's events, expanded per message and packet
	// (config.Test.ExpandEvents).
	Events    []config.ExpandedEvent
	IterScope config.IterScope
	// MirrorPort is the UDP destination port of mirror copies. Default 9741.
	MirrorPort uint16
	// ECN is the switch's marking by egress queue depth (switch.ecn; nil:
	// off). It becomes the plan's Egress.ecn_red entries (ECNRed): one per
	// DSCP that DSCPToPriority puts on one of ECN.Priorities.
	ECN *config.ECN
	// DSCPToPriority is the switch's DSCP → priority map, the one its
	// queues classify by (the orchestrator's: the first host's NIC map,
	// config.NIC.DSCPToPriority, as the software switch's PFCConfig). Only
	// read with ECN.
	DSCPToPriority [64]uint8
	// CellBytes is the switch's queue cell size in bytes, the unit of
	// ecn_red's thresholds. Default DefaultCellBytes (Tofino 1).
	CellBytes int
}

// Plan is the complete switch state for one test: every table entry,
// register initial value, clone session and WRR slot.
type Plan struct {
	Forward  []ForwardEntry
	ARP      []ARPEntry
	Conns    []ConnEntry
	Events   []EventEntry
	Sessions []Session
	// WRR lists, per slot, the clone session that slot mirrors to; the
	// pipeline walks the slots round robin.
	WRR        []uint32
	MirrorPort uint16
	// CountPorts are the ports whose counters the test reads: the hosts'
	// in hosts order, then the dumpers'.
	CountPorts []uint32
	// ECNRed are Egress.ecn_red's entries, in DSCP order (none without
	// Intent.ECN).
	ECNRed []ECNRedEntry

	// A fabric's entries (none without Ports.Fabric): Ingress.port_switch
	// in port order, Ingress.fabric_forward route by route and hop by
	// hop, Egress.ecn_red_port by switch, port and DSCP.
	PortSwitch    []PortSwitchEntry
	FabricForward []FabricForwardEntry
	ECNRedPort    []ECNRedPortEntry
}

// ForwardEntry: l2_forward dst MAC → port.
type ForwardEntry struct {
	MAC  [6]byte
	Port uint32
}

// ARPEntry: arp_proxy target IP → MAC.
type ARPEntry struct {
	IP  netip.Addr
	MAC [6]byte
}

// ConnEntry identifies a connection's data packets: conn_lookup (ingress
// port, destination QPN) → index, and the initial register values
// (expected PSN = the data sender's IPSN, ITER = 1).
type ConnEntry struct {
	Index    uint16
	Port     uint32
	DestQP   uint32
	IPSN     roce.PSN
	Scope    config.IterScope
	QP       int
	DataFrom string // "requester" or "responder"
	// Responses marks the entry of a QP's responder ACK/NAK packets
	// (events with direction: response); its ITER counts per connection.
	Responses bool
}

// EventEntry: event_table (port, QPN, PSN, ITER) → action, with where it
// came from.
type EventEntry struct {
	Port   uint32
	DestQP uint32
	PSN    roce.PSN
	Iter   uint16
	Type   config.EventType
	QP     int
	Msg    int
	// MsgPSN is the packet's index within message Msg
	// (config.ExpandedEvent.PSN).
	MsgPSN int
	RelPSN int
	// Params are the event's direction and delay/reorder/duplicate
	// parameters.
	Params config.EventParams
}

// Action returns the event_table action of e and its parameters, each
// with its width in bits (P4Info order).
func (e *EventEntry) Action() (name string, params []ActionParam) {
	switch e.Type {
	case config.EventDrop:
		return "Ingress.drop_event", nil
	case config.EventECN:
		return "Ingress.mark_ecn", nil
	case config.EventCorrupt:
		return "Ingress.corrupt", nil
	case config.EventDelay:
		return "Ingress.delay_event", []ActionParam{{uint64(e.Params.DelayNs), 32}}
	case config.EventReorder:
		return "Ingress.reorder_event", []ActionParam{{uint64(e.Params.Overtakers), 8}, {uint64(e.Params.MaxHoldNs), 32}}
	case config.EventDuplicate:
		return "Ingress.duplicate_event", []ActionParam{{uint64(e.Params.Copies), 8}}
	}
	return "", nil
}

// ActionParam is an action parameter's value and width in bits.
type ActionParam struct {
	Value uint64
	Bits  int
}

// Action returns conn_lookup's action for c and its parameters.
func (c *ConnEntry) Action() (name string, params []ActionParam) {
	scope, rsp := uint64(0), uint64(0)
	if c.Scope == config.IterScopeConnection {
		scope = 1
	}
	if c.Responses {
		rsp = 1
	}
	return "Ingress.set_conn", []ActionParam{{uint64(c.Index), 16}, {scope, 1}, {rsp, 1}}
}

// MaxConnEntries is the size of the switch's per-connection registers:
// data entries plus response entries.
const MaxConnEntries = 16384

// Session is a clone session to one dumper port.
type Session struct {
	ID     uint32
	Port   uint32
	Dumper string
	// Truncate is the copies' length limit in bytes (P4Runtime
	// CloneSessionEntry.packet_length_bytes), the dumper's SnapLen; 0
	// keeps whole copies.
	Truncate int
}

// Errors of Translate.
var (
	ErrMetadata = errors.New("controlplane: inconsistent connection metadata")
	ErrIntent   = errors.New("controlplane: intent does not fit the connections")
)

// Translate combines the intent with the runtime connection list (the
// generator's metadata, every flow's connections numbered globally) and
// the port map into a Plan: forwarding and ARP for every host, and each
// connection's entry from its own requester and responder hosts, found by
// the endpoints' addresses. It is pure and deterministic. PSN keys are
// computed modulo 2^24.
func Translate(in Intent, conns []generator.Connection, ports Ports) (*Plan, error) {
	if len(conns) == 0 {
		return nil, fmt.Errorf("%w: no connections", ErrMetadata)
	}
	if len(conns) > MaxConnEntries {
		return nil, fmt.Errorf("%w: %d connections, the switch tracks at most %d", ErrMetadata, len(conns), MaxConnEntries)
	}
	if len(ports.Dumpers) == 0 || len(ports.Dumpers) > 16 {
		return nil, fmt.Errorf("controlplane: %d dumpers, want 1..16", len(ports.Dumpers))
	}
	p := &Plan{MirrorPort: in.MirrorPort}
	if p.MirrorPort == 0 {
		p.MirrorPort = roce.DefaultMirrorPort
	}
	if len(ports.Hosts) < 2 {
		return nil, fmt.Errorf("controlplane: %d traffic hosts, want 2 or more", len(ports.Hosts))
	}
	for _, h := range ports.Hosts {
		p.Forward = append(p.Forward, ForwardEntry{h.MAC, h.Port})
		p.CountPorts = append(p.CountPorts, h.Port)
		for _, ip := range h.IPs {
			p.ARP = append(p.ARP, ARPEntry{ip, h.MAC})
		}
	}
	var fp *fabricPlan
	if ports.Fabric != nil {
		var err error
		if fp, err = planFabric(ports.Fabric, &ports, &in, p); err != nil {
			return nil, err
		}
	}
	// The requester and responder host of each connection.
	reqHost, rspHost := make([]int, len(conns)), make([]int, len(conns))
	// inPort is the port by which connection i's frames from host a to
	// host b enter the switch where they are looked up: a's port on one
	// switch, the in-port of the connection's observed switch on the
	// route from a to b in a fabric.
	inPort := func(i, a, b int) (uint32, error) {
		if fp == nil {
			return ports.Hosts[a].Port, nil
		}
		sw, err := fp.observed(conns[i].Flow, reqHost[i], rspHost[i])
		if err != nil {
			return 0, err
		}
		return fp.inPort(&ports, a, b, sw)
	}
	seenQPN := map[[2]uint32]int{}
	for i, c := range conns {
		if c.Index != i {
			return nil, fmt.Errorf("%w: connection %d has index %d", ErrMetadata, i, c.Index)
		}
		req, err := endpoint(c.Requester, "requester", i)
		if err != nil {
			return nil, err
		}
		rsp, err := endpoint(c.Responder, "responder", i)
		if err != nil {
			return nil, err
		}
		rq, rs := ports.hostOf(req.ip), ports.hostOf(rsp.ip)
		if rq < 0 || rs < 0 || rq == rs {
			return nil, fmt.Errorf("%w: connection %d: %v → %v is not between two hosts of the test (%s)",
				ErrMetadata, i, req.ip, rsp.ip, ports.hostList())
		}
		reqHost[i], rspHost[i] = rq, rs
		ce := ConnEntry{Index: uint16(i), Scope: in.IterScope, QP: i}
		switch c.Verb {
		case generator.VerbWrite, generator.VerbSend:
			// Data flows requester → responder, addressed to the responder's QP.
			ce.DestQP, ce.IPSN, ce.DataFrom = rsp.qpn, req.ipsn, "requester"
			ce.Port, err = inPort(i, rq, rs)
		case generator.VerbRead:
			// READ responses flow responder → requester in the requester's PSN space.
			ce.DestQP, ce.IPSN, ce.DataFrom = req.qpn, req.ipsn, "responder"
			ce.Port, err = inPort(i, rs, rq)
		default:
			return nil, fmt.Errorf("%w: connection %d: verb %q", ErrMetadata, i, c.Verb)
		}
		if err != nil {
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
		k := [2]uint32{ce.Port, ce.DestQP}
		if j, dup := seenQPN[k]; dup {
			return nil, fmt.Errorf("%w: connections %d and %d both receive data on QPN %#x from port %d", ErrMetadata, j, i, ce.DestQP, ce.Port)
		}
		seenQPN[k] = i
		p.Conns = append(p.Conns, ce)
	}
	type key struct {
		port, qpn uint32
		psn       roce.PSN
		iter      uint16
	}
	seen := map[key]int{}
	extraConn := map[[2]int]int{} // (QP, direction) → index in p.Conns of its entry
	for _, e := range in.Events {
		if e.QP < 0 || e.QP >= len(conns) {
			return nil, fmt.Errorf("%w: event on QP %d, but only %d connections", ErrIntent, e.QP, len(conns))
		}
		if e.Iter < 1 || e.Iter > 0xFFFF || e.RelPSN < 0 || e.RelPSN > roce.PSNMask {
			return nil, fmt.Errorf("%w: event QP %d psn %d iter %d out of range", ErrIntent, e.QP, e.RelPSN, e.Iter)
		}
		if err := checkParams(e); err != nil {
			return nil, err
		}
		ce := p.Conns[e.QP]
		if e.Direction != config.DirData {
			var rc ConnEntry
			var err error
			switch {
			case e.Direction == config.DirResponse && ce.DataFrom == "requester":
				// The responder's ACK/NAK packets: from the responder's
				// port to the requester's QP, in the requester's PSN
				// space. ACKs are coalesced, so ITER counts per connection.
				rc = ConnEntry{DestQP: conns[e.QP].Requester.QPN, DataFrom: "responder", Responses: true}
				rc.Port, err = inPort(e.QP, rspHost[e.QP], reqHost[e.QP])
			case e.Direction == config.DirRequest && ce.DataFrom == "responder":
				// The READ requests: from the requester's port to the
				// responder's QP; a re-issued request repeats a PSN, so
				// ITER counts per connection.
				rc = ConnEntry{DestQP: conns[e.QP].Responder.QPN, DataFrom: "requester"}
				rc.Port, err = inPort(e.QP, reqHost[e.QP], rspHost[e.QP])
			default:
				return nil, fmt.Errorf("%w: event with direction %v on QP %d, whose data flows from the %s", ErrIntent, e.Direction, e.QP, ce.DataFrom)
			}
			if err != nil {
				return nil, fmt.Errorf("QP %d: %w", e.QP, err)
			}
			k2 := [2]int{e.QP, int(e.Direction)}
			j, ok := extraConn[k2]
			if !ok {
				if len(p.Conns) >= MaxConnEntries {
					return nil, fmt.Errorf("%w: %d connection entries, the switch tracks at most %d", ErrIntent, len(p.Conns)+1, MaxConnEntries)
				}
				rc.Index, rc.IPSN, rc.Scope, rc.QP = uint16(len(p.Conns)), ce.IPSN, config.IterScopeConnection, e.QP
				k := [2]uint32{rc.Port, rc.DestQP}
				if o, dup := seenQPN[k]; dup {
					return nil, fmt.Errorf("%w: QP %d's %v packets and connection %d both arrive on QPN %#x from port %d", ErrMetadata, e.QP, e.Direction, o, rc.DestQP, rc.Port)
				}
				seenQPN[k] = e.QP
				j = len(p.Conns)
				extraConn[k2] = j
				p.Conns = append(p.Conns, rc)
			}
			ce = p.Conns[j]
		}
		ee := EventEntry{Port: ce.Port, DestQP: ce.DestQP, PSN: ce.IPSN.Add(e.RelPSN), Iter: uint16(e.Iter), Type: e.Type,
			QP: e.QP, Msg: e.Msg, MsgPSN: e.PSN, RelPSN: e.RelPSN, Params: e.EventParams}
		k := key{ee.Port, ee.DestQP, ee.PSN, ee.Iter}
		if j, dup := seen[k]; dup {
			if p.Events[j].Type != ee.Type {
				return nil, fmt.Errorf("%w: QP %d relative PSN %d iter %d is both %v and %v", ErrIntent, e.QP, e.RelPSN, e.Iter, p.Events[j].Type, ee.Type)
			}
			continue
		}
		seen[k] = len(p.Events)
		p.Events = append(p.Events, ee)
	}
	sort.SliceStable(p.Events, func(i, j int) bool {
		a, b := p.Events[i], p.Events[j]
		if a.QP != b.QP {
			return a.QP < b.QP
		}
		if a.RelPSN != b.RelPSN {
			return a.RelPSN < b.RelPSN
		}
		return a.Iter < b.Iter
	})
	weights := make([]int, len(ports.Dumpers))
	for i, d := range ports.Dumpers {
		if d.Weight < 1 || d.Weight > 255 {
			return nil, fmt.Errorf("controlplane: dumper %s weight %d out of 1..255", d.Name, d.Weight)
		}
		weights[i] = d.Weight
		if d.SnapLen < 0 {
			return nil, fmt.Errorf("controlplane: dumper %s snap length %d is negative", d.Name, d.SnapLen)
		}
		p.Sessions = append(p.Sessions, Session{ID: uint32(i + 1), Port: d.Port, Dumper: d.Name, Truncate: d.SnapLen})
		p.Forward = append(p.Forward, ForwardEntry{d.MAC, d.Port})
		p.CountPorts = append(p.CountPorts, d.Port)
	}
	slots, err := SmoothWRR(weights)
	if err != nil {
		return nil, err
	}
	for _, s := range slots {
		p.WRR = append(p.WRR, uint32(s+1))
	}
	p.ECNRed = ECNRed(in.ECN, in.DSCPToPriority, in.CellBytes)
	return p, nil
}

// checkParams checks an event's parameters against the widths of the
// switch's action parameters.
func checkParams(e config.ExpandedEvent) error {
	bad := func(what string, v int64, lo, hi int64) error {
		if v < lo || v > hi {
			return fmt.Errorf("%w: %v event on QP %d relative PSN %d: %s %d out of %d..%d", ErrIntent, e.Type, e.QP, e.RelPSN, what, v, lo, hi)
		}
		return nil
	}
	switch e.Type {
	case config.EventDrop, config.EventECN, config.EventCorrupt:
		return nil
	case config.EventDelay:
		return bad("delay_ns", e.DelayNs, 1, 1<<32-1)
	case config.EventReorder:
		if err := bad("overtakers", int64(e.Overtakers), 1, 255); err != nil {
			return err
		}
		return bad("max_hold_ns", e.MaxHoldNs, 1, 1<<32-1)
	case config.EventDuplicate:
		return bad("copies", int64(e.Copies), 1, 255)
	}
	return fmt.Errorf("%w: event type %v", ErrIntent, e.Type)
}

type ep struct {
	ip   netip.Addr
	mac  [6]byte
	qpn  uint32
	ipsn roce.PSN
}

func endpoint(e generator.Endpoint, side string, i int) (ep, error) {
	if !e.IP.Is4() {
		return ep{}, fmt.Errorf("%w: connection %d %s IP %q is not IPv4", ErrMetadata, i, side, e.IP)
	}
	if e.MAC.IsZero() {
		return ep{}, fmt.Errorf("%w: connection %d %s has no MAC address", ErrMetadata, i, side)
	}
	if e.QPN == 0 || e.QPN > roce.PSNMask {
		return ep{}, fmt.Errorf("%w: connection %d %s QPN %#x is not a 24-bit QPN", ErrMetadata, i, side, e.QPN)
	}
	if e.IPSN > roce.PSNMask {
		return ep{}, fmt.Errorf("%w: connection %d %s IPSN %#x exceeds 24 bits", ErrMetadata, i, side, e.IPSN)
	}
	return ep{e.IP, e.MAC, e.QPN, roce.PSN(e.IPSN)}, nil
}

// hostList names the hosts with their addresses, for errors.
func (ps *Ports) hostList() string {
	var parts []string
	for _, h := range ps.Hosts {
		parts = append(parts, fmt.Sprintf("%s %v", h.Name, h.IPs))
	}
	return strings.Join(parts, ", ")
}

func hasIP(ips []netip.Addr, a netip.Addr) bool {
	for _, x := range ips {
		if x == a {
			return true
		}
	}
	return false
}

// SmoothWRR returns the slot sequence of smooth weighted round robin: each
// index i appears weights[i] times in sum(weights) slots, spread so that
// over any prefix every index is within one of its share. At most 256 slots.
func SmoothWRR(weights []int) ([]int, error) {
	total := 0
	for _, w := range weights {
		total += w
	}
	if total == 0 || total > 256 {
		return nil, fmt.Errorf("controlplane: dumper weights sum to %d, want 1..256", total)
	}
	cur := make([]int, len(weights))
	out := make([]int, 0, total)
	for range total {
		best := -1
		for i, w := range weights {
			cur[i] += w
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out = append(out, best)
	}
	return out, nil
}

// Installer is the part of Switch that Intake needs.
type Installer interface {
	Install(ctx context.Context, p *Plan) error
}

// Intake returns the callback the traffic generator calls with its
// connection list (generator.RequesterConfig.OnConnections): it translates
// the intent and installs the plan, returning only when every entry is in
// place, so traffic never starts early. Malformed or inconsistent metadata
// is an error, never a crash. The installed plan is passed to done (may be
// nil) for the run's report.
func Intake(sw Installer, in Intent, ports Ports, done func(*Plan)) func(context.Context, []generator.Connection) error {
	return func(ctx context.Context, conns []generator.Connection) error {
		p, err := Translate(in, conns, ports)
		if err != nil {
			return err
		}
		if err := sw.Install(ctx, p); err != nil {
			return err
		}
		if done != nil {
			done(p)
		}
		return nil
	}
}
