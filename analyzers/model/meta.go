package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/roce"
)

// ErrMeta is wrapped by every metadata decoding error.
var ErrMeta = errors.New("invalid run metadata")

// Endpoint is one side of a connection: its IP address, QPN and initial
// send PSN.
type Endpoint struct {
	IP   netip.Addr `json:"ip"`
	QPN  uint32     `json:"qpn"`
	IPSN uint32     `json:"ipsn"`
	// Port names the NIC port the endpoint sits on, for the CNP per-port
	// pacing domain. Default "": the IP address stands for the port.
	Port string `json:"port,omitempty"`
}

// Connection is one RC connection of a run, as its metadata (or inference)
// describes it. ID is its index in the run; reports name connections by it.
type Connection struct {
	ID        int      `json:"id"`
	Verb      Verb     `json:"verb"`
	Requester Endpoint `json:"requester"`
	Responder Endpoint `json:"responder"`
	// Inferred is set when the connection was inferred from the trace
	// rather than read from metadata. Inferred requester QPNs are 0 when
	// the responder never answered.
	Inferred bool `json:"inferred,omitempty"`
	// Flow names the test's flow the connection belongs to (the hosts
	// form's flows[].name; generator.Connection.Flow). Default "": a
	// two-host test, or a trace without metadata (the flows analysis
	// then does not run).
	Flow string `json:"flow,omitempty"`
}

// UnmarshalJSON accepts "index" as a synonym of "id" (generator.json of
// runs before 2026-11 spelled it so).
func (c *Connection) UnmarshalJSON(b []byte) error {
	type plain Connection
	var v struct {
		plain
		Index *int `json:"index"`
	}
	v.plain.ID = -1
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Connection(v.plain)
	if v.Index != nil && c.ID < 0 {
		c.ID = *v.Index
	}
	return nil
}

// Params are the test parameters the analyzers need. Pointers distinguish
// "not given" from zero.
type Params struct {
	// MTU is the path MTU in bytes (256..4096). Default: inferred from the
	// trace, else 1024.
	MTU int `json:"mtu,omitempty"`
	// Timeout is the QP's local ACK timeout exponent (ibv_qp_attr.timeout):
	// T_tr = 4.096 µs × 2^Timeout. Nil: unknown, the timeout bounds are
	// not checked.
	Timeout *uint8 `json:"timeout,omitempty"`
	// RetryCnt is the QP's retry_cnt. Nil: 7, the verbs default lumina uses.
	RetryCnt *int `json:"retry_cnt,omitempty"`
	// RNRRetry is the requester QP's rnr_retry (0..7; 7: infinite), the
	// test's traffic.rnr-retry. Nil: 7, the default (so that a run that
	// did not change it keeps its report.json; analyzers/rnr).
	RNRRetry *int `json:"rnr_retry,omitempty"`
	// ODP says some traffic host of the run used On-Demand Paging
	// (config.Test.ODPInTest): RNR NAKs and silent drops of READ
	// responses are expected; the rnr check then runs even without an
	// RNR NAK, and a READ requester may re-issue a READ whose responses
	// its page fault dropped. Default false: pinned memory.
	ODP bool `json:"odp,omitempty"`
	// ODPIPs are the addresses of the traffic hosts whose NIC uses ODP
	// (nic.odp.enabled; every address of their ip-lists): the checks
	// excuse a requester's page-fault restarts only on connections whose
	// requester has one of them (ODPAt). ODP is test-wide (every NIC of
	// the test takes the duplicate-READ path), the requester's page
	// faults are its own. Default nil: with ODP, every host may use ODP
	// (run records from before 2026-11).
	ODPIPs []netip.Addr `json:"odp_ips,omitempty"`
	// AdaptiveRetrans says adaptive retransmission was on (informational:
	// its timeouts are expected to leave the IB bound, Lumina §6.3).
	AdaptiveRetrans bool `json:"adaptive_retrans,omitempty"`
	// MinTimeBetweenCNPsUs is the notification point's CNP pacing interval
	// in µs. Nil: unknown, the CNP check is computed with 0 and skipped.
	MinTimeBetweenCNPsUs *float64 `json:"min_time_between_cnps_us,omitempty"`
	// NAKTriggersCNP says a NAK is also a CNP trigger (CX5/CX6 with slow
	// restart; softrnic.Personality.CNPOnNAK). Default false.
	NAKTriggersCNP bool `json:"nak_triggers_cnp,omitempty"`
	// CNPScope, when set, is the pacing scope the NIC is expected to use
	// (per-qp, per-port, per-dest-ip, per-ip-pair): the CNP check then
	// passes only if that scope is consistent with the trace. Default "":
	// it passes if any scope is.
	CNPScope string `json:"cnp_scope,omitempty"`
	// RTTNs is the pre-measured switch↔NIC round trip of the testbed, used
	// to correct NACK latencies by half of it (Lumina §4). Default 0.
	RTTNs int64 `json:"rtt_ns,omitempty"`
	// TimestampUncertaintyNs, U, is how much later than the packet's true
	// arrival any switch timestamp may be: the switch never stamps early,
	// but may stamp up to U late (queueing before the timestamping stage,
	// a software clock). An interval between two timestamps is therefore
	// uncertain by ±U. The bound checks (timeout bounds, CNP pacing)
	// widen their decisions by U and say inconclusive when the margin is
	// within it. Default 0: timestamps are exact, as on sim; measured on
	// netns; configured for hardware.
	TimestampUncertaintyNs int64 `json:"timestamp_uncertainty_ns,omitempty"`
	// TimerLatenessNs, L, is how late the requester RNIC's timers may have
	// run: a software RNIC on a real clock under load (measured by lumina
	// run on netns; 0 on sim and for hardware RNICs, whose timers are
	// their own). A timeout interval above the upper bound by at most U +
	// L is inconclusive, not a failure. Default 0.
	TimerLatenessNs int64 `json:"timer_lateness_ns,omitempty"`
	// PauseLatenessNs is how much later than its reaction time a software
	// RNIC on a real clock may have applied a received PFC pause (measured
	// by lumina run on netns, both hosts; 0 on sim and for hardware). A
	// frame sent while paused beyond the reaction bound by at most U + this
	// is inconclusive, not a failure (analyzers/pfc). Default 0.
	PauseLatenessNs int64 `json:"pause_lateness_ns,omitempty"`
	// CNPLatenessNs is how much later than its trigger's arrival at the
	// switch a notification point may have made its CNP pacing decision,
	// beyond the testbed's fixed delays: on netns, the software switch's
	// pipeline lateness (report timing.late_max_ns) plus the software
	// RNIC's receive lateness (timing.nic_rx_late_ns), measured by lumina
	// run; 0 on sim and for hardware. The NP paces on its own clock, so a
	// gap between two triggers' stamps is off from the gap the NP saw by
	// up to TimestampUncertaintyNs + this; the CNP check is inconclusive,
	// not failed, on decisions within that of min_time_between_cnps
	// (analyzers/cnp). The retransmission tracker applies the same bound
	// to ACKs: a WRITE/SEND requester re-sending on a timeout a PSN an ACK
	// stamped at most this much earlier acknowledged had not taken that
	// ACK yet (analyzers/retransmission Options.AckLatenessNs). Default 0.
	CNPLatenessNs int64 `json:"cnp_lateness_ns,omitempty"`
	// SentUncertaintyNs, W, is how much later than its departure the
	// switch's timestamp of a frame it sent (a PFC pause) may be, as lumina
	// run measured it: 0 when the switch stamps its frames with their
	// departure (the kernel's transmit timestamps on netns), else its
	// longest write of such a frame (it stamps once the write returned). A
	// frame sent while paused is within the reaction bound for certain when
	// it is by at least W (analyzers/pfc). Absent: TimestampUncertaintyNs.
	SentUncertaintyNs *int64 `json:"sent_uncertainty_ns,omitempty"`

	// MirrorHolds says the switch writes into the mirror copy of a packet
	// it held (delay, reorder) how long it held it (roce.MirrorMeta.HoldNs),
	// as lumina's switches do since 2026-11: the events and gbn checks
	// then measure a hold from the packet's own arrival. Default false:
	// the field is the sender's (traces of older runs), and a hold is
	// measured from the departure of the packet's predecessor.
	MirrorHolds bool `json:"mirror_holds,omitempty"`

	// LinkGbps is the speed of the host↔switch links in Gb/s: the length
	// of a pause quantum (512 bit times) and the 802.3 pause reaction
	// bound (analyzers/pfc). Default 0: 100.
	LinkGbps float64 `json:"link_gbps,omitempty"`
	// PrioDSCPMap maps a priority (0..7) to the DSCP values (0..63) that
	// carry it, as the test's prio-dscp-map (config.NIC.PrioDSCPMap): the
	// pfc analyzer reads a RoCE packet's priority from its DSCP. A DSCP the
	// map does not list keeps the default. Default nil: priority p ↔ DSCP
	// 8p..8p+7 (DSCP >> 3).
	PrioDSCPMap map[int][]int `json:"prio_dscp_map,omitempty"`
	// PFCDetectionNs is the PFC storm detection time: a pause lasting
	// this long without interruption is a storm episode, and the one the
	// switch watchdog (injector.PFCWatchdog.Detection) would fire on.
	// Default 0: 100 ms.
	PFCDetectionNs int64 `json:"pfc_detection_ns,omitempty"`
	// PFCRestorationNs is the switch PFC watchdog's restoration time:
	// lossless mode comes back this long after the last pause frame.
	// Default 0: 200 ms.
	PFCRestorationNs int64 `json:"pfc_restoration_ns,omitempty"`
	// DeadlockNs is the test's deadlock-ms in ns (a run with several
	// switches): the pfc analysis says deadlock fail when a cycle of switch
	// ports keeps sending PFC frames through [last RoCE copy, + DeadlockNs]
	// (sonic-mgmt's rule). Default 0: the deadlock check is skipped.
	DeadlockNs int64 `json:"deadlock_ns,omitempty"`

	// Hosts are the facts of each traffic host of a many-host test (the
	// hosts form), keyed by name and addresses: the checks take a
	// notification point's CNP settings from the host owning its address
	// (HostOf), and a host named in SwitchPorts or NICs gets its addresses
	// here. Default nil (the two-host form): MinTimeBetweenCNPsUs and
	// NAKTriggersCNP above hold for every notification point, and the
	// roles requester and responder name the hosts.
	Hosts []HostParams `json:"hosts,omitempty"`
}

// HostParams are one host's facts (Params.Hosts).
type HostParams struct {
	Name string       `json:"name"`
	IPs  []netip.Addr `json:"ips,omitempty"`
	// MinTimeBetweenCNPsUs is the host's CNP pacing interval as a
	// notification point; nil: unknown (the CNP check is then skipped).
	MinTimeBetweenCNPsUs *float64 `json:"min_time_between_cnps_us,omitempty"`
	// NAKTriggersCNP says a NAK the host sends is a CNP trigger (CX5/CX6
	// with slow restart).
	NAKTriggersCNP bool `json:"nak_triggers_cnp,omitempty"`
	// LinkGbps is the speed of the host's link to the switch (its NIC's
	// line rate): how fast the switch drains the host's egress queues
	// (analyzers/cnp). Default 0: Params.LinkGbps.
	LinkGbps float64 `json:"link_gbps,omitempty"`
}

// HostOf returns the host of Hosts owning ip, or nil.
func (p *Params) HostOf(ip netip.Addr) *HostParams {
	for i := range p.Hosts {
		for _, a := range p.Hosts[i].IPs {
			if a == ip {
				return &p.Hosts[i]
			}
		}
	}
	return nil
}

// Host returns the host of Hosts named name, or nil.
func (p *Params) Host(name string) *HostParams {
	for i := range p.Hosts {
		if p.Hosts[i].Name == name {
			return &p.Hosts[i]
		}
	}
	return nil
}

// PriorityOfDSCP returns the priority of DSCP dscp (0..63) under
// PrioDSCPMap (see there).
func (p Params) PriorityOfDSCP(dscp uint8) int {
	for prio, ds := range p.PrioDSCPMap {
		for _, d := range ds {
			if d == int(dscp) {
				return prio
			}
		}
	}
	return int(dscp>>3) & 7
}

// TransportTimeoutNs returns T_tr in ns and whether the timeout is known.
func (p Params) TransportTimeoutNs() (int64, bool) {
	if p.Timeout == nil || *p.Timeout == 0 {
		return 0, false
	}
	return int64(roce.TransportTimeout(*p.Timeout)), true
}

// Retries returns retry_cnt, generator.DefaultRetryCnt (7) when not given.
func (p Params) Retries() int {
	if p.RetryCnt == nil {
		return generator.DefaultRetryCnt
	}
	return *p.RetryCnt
}

// ODPAt reports whether the host at ip uses ODP memory: ip is one of
// ODPIPs, or, on a run with ODP that did not record ODPIPs, any host.
func (p Params) ODPAt(ip netip.Addr) bool {
	if !p.ODP {
		return false
	}
	return len(p.ODPIPs) == 0 || slices.Contains(p.ODPIPs, ip)
}

// RNRRetries returns RNRRetry, generator.DefaultRNRRetry (7, infinite)
// when nil.
func (p Params) RNRRetries() int {
	if p.RNRRetry == nil {
		return generator.DefaultRNRRetry
	}
	return *p.RNRRetry
}

// Counters are counter values under their Mellanox names: the one form the
// analyzers take of a NIC's counters, whatever read them (nic.Counters.Map
// on real hosts, softrnic's CounterMap). The switch's (controlplane.Counters)
// and the integrity check's inputs (integrity.Counters) count other things.
type Counters map[string]uint64

// NIC is one host's NIC: the IP addresses (GIDs) it owns and its counters
// before and after the test.
type NIC struct {
	Name   string       `json:"name"`
	IPs    []netip.Addr `json:"ips"`
	Before Counters     `json:"before"`
	After  Counters     `json:"after"`
}

// Delta returns after − before for a counter present in After, and whether
// it is.
func (n *NIC) Delta(name string) (int64, bool) {
	a, ok := n.After[name]
	if !ok {
		return 0, false
	}
	return int64(a) - int64(n.Before[name]), true
}

// Owns reports whether ip is one of the NIC's addresses.
func (n *NIC) Owns(ip netip.Addr) bool {
	for _, a := range n.IPs {
		if a == ip {
			return true
		}
	}
	return false
}

// Switch are the switch and dumper counters the integrity check uses.
// Nil fields are unknown.
type Switch struct {
	RoCEReceived *uint64  `json:"roce_received,omitempty"`
	Mirrored     *uint64  `json:"mirrored,omitempty"`
	Dumpers      []Dumper `json:"dumpers,omitempty"`
	// PFCDrops counts the frames the switch's PFC logic dropped after
	// mirroring them (watchdog, lossless beyond headroom, lossy queue
	// full): the trace shows them as forwarded. Nil: unknown or none.
	PFCDrops *uint64 `json:"pfc_drops,omitempty"`
	// LastSeq is, by logical switch id (Fabric.Switches), the last mirror
	// sequence number each switch assigned, read from the switch after the
	// test: each switch numbers its copies from 1, so the trace holds
	// LastSeq[id] copies of switch id (the integrity check's mirrored
	// condition). Nil: unknown.
	LastSeq []uint64 `json:"last_seq,omitempty"`
	// Watchdog is the switch's PFC watchdog log (a lumina run's
	// switch_pfc.watchdog): when it turned lossless mode off (storm) and
	// back on (restore) on a port and priority, on the switch clock. The
	// fabric analysis says a storm's spread stopped at the switch whose
	// watchdog fired on the root port. Nil: unknown (inferred from the
	// trace).
	Watchdog []WatchdogEvent `json:"watchdog,omitempty"`
}

// WatchdogEvent is one entry of a switch's PFC watchdog log.
type WatchdogEvent struct {
	AtNs     int64  `json:"at_ns"`
	Port     uint32 `json:"port"`
	Priority int    `json:"priority"`
	// Kind is "storm" (lossless mode off) or "restore".
	Kind string `json:"kind"`
}

// Dumper is one dumper's own counters.
type Dumper struct {
	Name     string  `json:"name,omitempty"`
	Captured *uint64 `json:"captured,omitempty"`
	Dropped  *uint64 `json:"dropped,omitempty"`
}

// Meta is the run metadata the analyzers accept (docs/analyze.md): the
// connections, the test parameters, the NIC counters and the switch
// counters. Every part is optional; missing connections are inferred from
// the trace.
type Meta struct {
	Connections []Connection `json:"connections,omitempty"`
	Params
	NICs   []NIC   `json:"nics,omitempty"`
	Switch *Switch `json:"switch,omitempty"`
	// Mirror says whether the trace carries Lumina mirror metadata
	// (timestamps, events in the MACs and TTL). Nil: detected from the first
	// RoCE packet (roce.Packet.LooksMirrored).
	Mirror *bool `json:"mirror,omitempty"`
	// Events are the events the switch was programmed with, one per packet
	// and ITER. Nil: unknown (the analyzers then judge events only by the
	// tags in the trace).
	Events []Event `json:"injected_events,omitempty"`
	// SwitchPorts maps a host to the switch port it is cabled to: a role
	// ("requester", "responder": the addresses of that side of the
	// connections) or the name of a NIC of NICs (its addresses), e.g.
	// {"requester": 1, "responder": 2}. The pfc analyzer uses it to tie
	// the PFC frames of a port to the RoCE packets of its host. Default
	// nil: PFC frames are reported by port number only.
	SwitchPorts map[string]uint32 `json:"switch_ports,omitempty"`
	// Fabric is the topology of a test with several switches (nil: one
	// switch).
	Fabric *Fabric `json:"fabric,omitempty"`
}

// Event is one injected event as the switch applies it: to the packet of
// connection Conn with absolute PSN and ITER, in the data direction (the
// packets carrying the data: requests of WRITE/SEND, responses of READ) or,
// with Direction "response", to the responder's ACK/NAK packets.
type Event struct {
	Conn      int    `json:"conn"`
	Direction string `json:"direction,omitempty"` // "" (data) or "response"
	PSN       uint32 `json:"psn"`
	Iter      int    `json:"iter"`
	// Type is drop, ecn, corrupt, delay, reorder or duplicate (in JSON,
	// roce.Event's text form).
	Type       roce.Event `json:"type"`
	DelayNs    int64      `json:"delay_ns,omitempty"`    // delay: hold time
	Overtakers int        `json:"overtakers,omitempty"`  // reorder: later packets of the flow that pass it
	MaxHoldNs  int64      `json:"max_hold_ns,omitempty"` // reorder: longest hold
	Copies     int        `json:"copies,omitempty"`      // duplicate: extra copies
}

// metaDoc is the JSON shape: Meta's fields at the top level, and
// optionally a "params" object (as report.json has) whose fields override
// them. "nics", "switch" and "dumpers" also accept the shapes of the
// orchestrator's counters.json (see rawNICs, rawSwitch).
type metaDoc struct {
	Connections []Connection `json:"connections,omitempty"`
	Params
	Mirror    *bool             `json:"mirror,omitempty"`
	Events    []Event           `json:"injected_events,omitempty"`
	Ports     map[string]uint32 `json:"switch_ports,omitempty"`
	SwitchPFC *rawSwitchPFC     `json:"switch_pfc,omitempty"`
	ParamsObj *Params           `json:"params,omitempty"`
	Analysis  *analysisDoc      `json:"analysis,omitempty"`
	NICs      json.RawMessage   `json:"nics,omitempty"`
	Switch    json.RawMessage   `json:"switch,omitempty"`
	Dumpers   []rawDumper       `json:"dumpers,omitempty"`
	Fabric    *Fabric           `json:"fabric,omitempty"`
}

// analysisDoc is the part of a `lumina run` report.json's "analysis" (the
// analyzers' report of the run) that ParseMeta reads: the timestamp
// uncertainty and latenesses the run was analyzed with and whether its
// switch wrote holds into the copies, which the run's config.yaml does
// not hold, and the hosts' facts as the run resolved
// them (NAK triggers from personality files; Params.Hosts). The others
// come from config.yaml.
type analysisDoc struct {
	Params struct {
		TimestampUncertaintyNs int64   `json:"timestamp_uncertainty_ns"`
		TimerLatenessNs        int64   `json:"timer_lateness_ns"`
		PauseLatenessNs        int64   `json:"pause_lateness_ns"`
		CNPLatenessNs          int64   `json:"cnp_lateness_ns"`
		SentUncertaintyNs      *int64  `json:"sent_uncertainty_ns"`
		LinkGbps               float64 `json:"link_gbps"`
		RTTNs                  int64   `json:"rtt_ns"`
		DeadlockNs             int64   `json:"deadlock_ns"`
		MirrorHolds            bool    `json:"mirror_holds"`
		// The run's facts of its hosts, as it resolved them (personality
		// files the run directory may lack).
		NAKTriggersCNP bool         `json:"nak_triggers_cnp"`
		Hosts          []HostParams `json:"hosts"`
	} `json:"params"`
}

// rawSwitchPFC is the part of a `lumina run` report.json's switch_pfc
// that ParseMeta reads: the drops of the switch's PFC logic.
type rawSwitchPFC struct {
	Ports []struct {
		LosslessDrops uint64 `json:"lossless_drops"`
		LossyDrops    uint64 `json:"lossy_drops"`
		WatchdogDrops uint64 `json:"watchdog_drops"`
	} `json:"ports"`
	Watchdog []WatchdogEvent `json:"watchdog"`
}

// rawDumper accepts our Dumper and the orchestrator's dumper report
// (kernel_dropped + buffer_dropped).
type rawDumper struct {
	Name          string  `json:"name,omitempty"`
	Captured      *uint64 `json:"captured,omitempty"`
	Dropped       *uint64 `json:"dropped,omitempty"`
	KernelDropped *uint64 `json:"kernel_dropped,omitempty"`
	BufferDropped *uint64 `json:"buffer_dropped,omitempty"`
}

func (d rawDumper) dumper() Dumper {
	out := Dumper{Name: d.Name, Captured: d.Captured, Dropped: d.Dropped}
	if d.KernelDropped != nil || d.BufferDropped != nil {
		var n uint64
		for _, v := range []*uint64{d.KernelDropped, d.BufferDropped} {
			if v != nil {
				n += *v
			}
		}
		out.Dropped = &n
	}
	return out
}

// decodeNICs accepts a list of NIC, or an object mapping a role
// ("requester", "responder") to its counters after the test (the
// orchestrator's counters.json; counters start at 0). Roles get their IP
// addresses from the connections (ResolveNICs).
func decodeNICs(b json.RawMessage) ([]NIC, error) {
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var list []NIC
	if err := json.Unmarshal(b, &list); err == nil {
		return list, nil
	}
	var byRole map[string]Counters
	if err := json.Unmarshal(b, &byRole); err != nil {
		return nil, fmt.Errorf("nics: want a list of {name, ips, before, after} or {role: counters}: %v", err)
	}
	roles := make([]string, 0, len(byRole))
	for r := range byRole {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		list = append(list, NIC{Name: r, Before: Counters{}, After: byRole[r]})
	}
	return list, nil
}

// decodeSwitch accepts our Switch or the orchestrator's switch counters
// (rx_total, mirror_total).
func decodeSwitch(b json.RawMessage) (*Switch, error) {
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("switch: %v", err)
	}
	num := func(names ...string) (*uint64, error) {
		for _, n := range names {
			raw, ok := fields[n]
			if !ok || len(raw) == 0 || raw[0] == '{' || string(raw) == "null" {
				continue // absent, or a per-port breakdown
			}
			var v uint64
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("switch: %s: %v", n, err)
			}
			return &v, nil
		}
		return nil, nil
	}
	s := &Switch{}
	var err error
	if s.RoCEReceived, err = num("roce_received", "rx_total"); err != nil {
		return nil, err
	}
	if s.Mirrored, err = num("mirrored", "mirror_total"); err != nil {
		return nil, err
	}
	if raw, ok := fields["last_seq"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s.LastSeq); err != nil {
			return nil, fmt.Errorf("switch: last_seq: %v", err)
		}
	}
	if raw, ok := fields["dumpers"]; ok {
		var ds []rawDumper
		if err := json.Unmarshal(raw, &ds); err != nil {
			return nil, fmt.Errorf("switch: dumpers: %v", err)
		}
		for _, d := range ds {
			s.Dumpers = append(s.Dumpers, d.dumper())
		}
	}
	return s, nil
}

// ParseMeta decodes run metadata. It accepts a metadata file, a
// report.json (connections and params; a `lumina run` report.json gives
// the timestamp uncertainty of its "analysis"), or a counters file (nics,
// switch, dumpers, also in the orchestrator's shapes), and checks the
// values.
// Unknown fields are ignored, so that a run's report.json can be read as
// is.
func ParseMeta(data []byte) (Meta, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// null (or an array, a number) decodes as an empty record and
		// would pass for a run without metadata.
		return Meta{}, fmt.Errorf("%w: want a JSON object", ErrMeta)
	}
	var d metaDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return Meta{}, fmt.Errorf("%w: %w", ErrMeta, err)
	}
	m := Meta{Connections: d.Connections, Params: d.Params, Mirror: d.Mirror, Events: d.Events, SwitchPorts: d.Ports, Fabric: d.Fabric}
	if d.ParamsObj != nil {
		m.Params = mergeParams(m.Params, *d.ParamsObj)
	}
	if d.Analysis != nil && m.TimestampUncertaintyNs == 0 {
		m.TimestampUncertaintyNs = d.Analysis.Params.TimestampUncertaintyNs
	}
	if d.Analysis != nil && m.TimerLatenessNs == 0 && d.Analysis.Params.TimerLatenessNs > 0 {
		m.TimerLatenessNs = d.Analysis.Params.TimerLatenessNs
	}
	if d.Analysis != nil && m.PauseLatenessNs == 0 && d.Analysis.Params.PauseLatenessNs > 0 {
		m.PauseLatenessNs = d.Analysis.Params.PauseLatenessNs
	}
	if d.Analysis != nil && m.CNPLatenessNs == 0 && d.Analysis.Params.CNPLatenessNs > 0 {
		m.CNPLatenessNs = d.Analysis.Params.CNPLatenessNs
	}
	if d.Analysis != nil && m.SentUncertaintyNs == nil && d.Analysis.Params.SentUncertaintyNs != nil {
		m.SentUncertaintyNs = d.Analysis.Params.SentUncertaintyNs
	}
	if d.Analysis != nil && m.DeadlockNs == 0 && d.Analysis.Params.DeadlockNs > 0 {
		m.DeadlockNs = d.Analysis.Params.DeadlockNs
	}
	if d.Analysis != nil && m.LinkGbps == 0 && d.Analysis.Params.LinkGbps > 0 {
		m.LinkGbps = d.Analysis.Params.LinkGbps
	}
	if d.Analysis != nil && m.RTTNs == 0 && d.Analysis.Params.RTTNs > 0 {
		m.RTTNs = d.Analysis.Params.RTTNs
	}
	if d.Analysis != nil {
		// The run's switch wrote holds into its copies (a lumina run's
		// analysis.params.mirror_holds): read them as the run did.
		m.MirrorHolds = m.MirrorHolds || d.Analysis.Params.MirrorHolds
		m.NAKTriggersCNP = m.NAKTriggersCNP || d.Analysis.Params.NAKTriggersCNP
		if m.Hosts == nil {
			m.Hosts = d.Analysis.Params.Hosts
		}
	}
	var err error
	if m.NICs, err = decodeNICs(d.NICs); err != nil {
		return Meta{}, fmt.Errorf("%w: %w", ErrMeta, err)
	}
	if m.Switch, err = decodeSwitch(d.Switch); err != nil {
		return Meta{}, fmt.Errorf("%w: %w", ErrMeta, err)
	}
	if d.SwitchPFC != nil {
		var n uint64
		for _, p := range d.SwitchPFC.Ports {
			n += p.LosslessDrops + p.LossyDrops + p.WatchdogDrops
		}
		if m.Switch == nil {
			m.Switch = &Switch{}
		}
		m.Switch.PFCDrops = &n
		m.Switch.Watchdog = d.SwitchPFC.Watchdog
	}
	if len(d.Dumpers) > 0 {
		if m.Switch == nil {
			m.Switch = &Switch{}
		}
		m.Switch.Dumpers = m.Switch.Dumpers[:0]
		for _, x := range d.Dumpers {
			m.Switch.Dumpers = append(m.Switch.Dumpers, x.dumper())
		}
	}
	if err := m.Validate(); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// ResolveNICs gives NICs without addresses named "requester" or
// "responder" the addresses of that side of the connections.
func ResolveNICs(nics []NIC, conns []Connection) []NIC {
	return ResolveHostNICs(nics, conns, nil)
}

// ResolveHostNICs is ResolveNICs that also gives a NIC without addresses
// named after a host of hosts (Params.Hosts) that host's addresses.
func ResolveHostNICs(nics []NIC, conns []Connection, hosts []HostParams) []NIC {
	out := append([]NIC(nil), nics...)
	for i := range out {
		n := &out[i]
		if len(n.IPs) > 0 {
			continue
		}
		if h := (&Params{Hosts: hosts}).Host(n.Name); h != nil {
			n.IPs = append([]netip.Addr(nil), h.IPs...)
			continue
		}
		seen := map[netip.Addr]bool{}
		for _, c := range conns {
			var ip netip.Addr
			switch n.Name {
			case "requester":
				ip = c.Requester.IP
			case "responder":
				ip = c.Responder.IP
			default:
				continue
			}
			if !seen[ip] {
				seen[ip] = true
				n.IPs = append(n.IPs, ip)
			}
		}
	}
	return out
}

// LoadMeta reads and decodes the metadata file at path.
func LoadMeta(path string) (Meta, error) {
	return LoadMetaWith(path, safefile.Options{})
}

// LoadMetaWith is LoadMeta with o (safefile.NoFollow for a file inside a
// result directory). The file is read with the limit of a run's records
// (safefile.MaxRecordSize); a FIFO or a device is refused. Its
// per-message lists are not kept (ReadRecord): the memory is that of the
// rest of the file.
func LoadMetaWith(path string, o safefile.Options) (Meta, error) {
	b, err := ReadRecord(path, safefile.MaxRecordSize, o)
	if err != nil {
		return Meta{}, err
	}
	m, err := ParseMeta(b)
	if err != nil {
		return Meta{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Merge returns m with the fields set in o (connections, params, NICs,
// switch) taking precedence.
func (m Meta) Merge(o Meta) Meta {
	if len(o.Connections) > 0 {
		m.Connections = o.Connections
	}
	m.Params = mergeParams(m.Params, o.Params)
	if len(o.NICs) > 0 {
		m.NICs = o.NICs
	}
	if o.Switch != nil {
		sw := *o.Switch
		if sw.PFCDrops == nil && m.Switch != nil {
			sw.PFCDrops = m.Switch.PFCDrops // report.json's, under counters.json's counters
		}
		if sw.LastSeq == nil && m.Switch != nil {
			sw.LastSeq = m.Switch.LastSeq
		}
		m.Switch = &sw
	}
	if o.Mirror != nil {
		m.Mirror = o.Mirror
	}
	if o.Events != nil {
		m.Events = o.Events
	}
	if o.SwitchPorts != nil {
		m.SwitchPorts = o.SwitchPorts
	}
	if o.Fabric != nil {
		m.Fabric = o.Fabric
	}
	return m
}

func mergeParams(a, b Params) Params {
	if b.MTU != 0 {
		a.MTU = b.MTU
	}
	if b.Timeout != nil {
		a.Timeout = b.Timeout
	}
	if b.RetryCnt != nil {
		a.RetryCnt = b.RetryCnt
	}
	if b.RNRRetry != nil {
		a.RNRRetry = b.RNRRetry
	}
	a.ODP = a.ODP || b.ODP
	for _, ip := range b.ODPIPs {
		if !slices.Contains(a.ODPIPs, ip) {
			a.ODPIPs = append(a.ODPIPs, ip)
		}
	}
	a.AdaptiveRetrans = a.AdaptiveRetrans || b.AdaptiveRetrans
	if b.MinTimeBetweenCNPsUs != nil {
		a.MinTimeBetweenCNPsUs = b.MinTimeBetweenCNPsUs
	}
	a.NAKTriggersCNP = a.NAKTriggersCNP || b.NAKTriggersCNP
	a.MirrorHolds = a.MirrorHolds || b.MirrorHolds
	if b.CNPScope != "" {
		a.CNPScope = b.CNPScope
	}
	if b.RTTNs != 0 {
		a.RTTNs = b.RTTNs
	}
	if b.TimestampUncertaintyNs != 0 {
		a.TimestampUncertaintyNs = b.TimestampUncertaintyNs
	}
	if b.TimerLatenessNs != 0 {
		a.TimerLatenessNs = b.TimerLatenessNs
	}
	if b.PauseLatenessNs != 0 {
		a.PauseLatenessNs = b.PauseLatenessNs
	}
	if b.CNPLatenessNs != 0 {
		a.CNPLatenessNs = b.CNPLatenessNs
	}
	if b.SentUncertaintyNs != nil {
		a.SentUncertaintyNs = b.SentUncertaintyNs
	}
	if b.LinkGbps != 0 {
		a.LinkGbps = b.LinkGbps
	}
	if b.PrioDSCPMap != nil {
		a.PrioDSCPMap = b.PrioDSCPMap
	}
	if b.PFCDetectionNs != 0 {
		a.PFCDetectionNs = b.PFCDetectionNs
	}
	if b.PFCRestorationNs != 0 {
		a.PFCRestorationNs = b.PFCRestorationNs
	}
	if b.DeadlockNs != 0 {
		a.DeadlockNs = b.DeadlockNs
	}
	if b.Hosts != nil {
		a.Hosts = b.Hosts
	}
	return a
}

// Scopes are the CNP pacing scopes, in report order.
var Scopes = []string{"per-qp", "per-port", "per-dest-ip", "per-ip-pair"}

// Validate checks the metadata's values.
func (m *Meta) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMeta, fmt.Sprintf(format, args...))
	}
	seen := map[int]bool{}
	for i := range m.Connections {
		c := &m.Connections[i]
		if c.ID < 0 {
			c.ID = i
		}
		if seen[c.ID] {
			return bad("connection id %d appears twice", c.ID)
		}
		seen[c.ID] = true
		switch c.Verb {
		case VerbWrite, VerbSend, VerbRead, VerbMixed:
		case "":
			c.Verb = VerbWrite
		case "send_read":
			c.Verb = VerbMixed
		default:
			return bad("connection %d: verb %q (want write, send, read or mixed)", c.ID, c.Verb)
		}
		for _, e := range []struct {
			name string
			ep   Endpoint
		}{{"requester", c.Requester}, {"responder", c.Responder}} {
			if !e.ep.IP.IsValid() {
				return bad("connection %d: %s ip missing", c.ID, e.name)
			}
			if e.ep.QPN > roce.PSNMask || e.ep.IPSN > roce.PSNMask {
				return bad("connection %d: %s qpn/ipsn beyond 24 bits", c.ID, e.name)
			}
		}
	}
	p := m.Params
	if p.MTU != 0 && (p.MTU < 256 || p.MTU > 4096) {
		return bad("mtu %d (want 256..4096)", p.MTU)
	}
	if p.Timeout != nil && *p.Timeout > 31 {
		return bad("timeout %d (want 0..31)", *p.Timeout)
	}
	if p.RetryCnt != nil && (*p.RetryCnt < 0 || *p.RetryCnt > 7) {
		return bad("retry_cnt %d (want 0..7)", *p.RetryCnt)
	}
	if p.RNRRetry != nil && (*p.RNRRetry < 0 || *p.RNRRetry > 7) {
		return bad("rnr_retry %d (want 0..7)", *p.RNRRetry)
	}
	if p.MinTimeBetweenCNPsUs != nil && *p.MinTimeBetweenCNPsUs < 0 {
		return bad("min_time_between_cnps_us must not be negative")
	}
	if p.TimerLatenessNs < 0 {
		return bad("timer_lateness_ns %d must not be negative", p.TimerLatenessNs)
	}
	if p.PauseLatenessNs < 0 {
		return bad("pause_lateness_ns %d must not be negative", p.PauseLatenessNs)
	}
	if p.CNPLatenessNs < 0 {
		return bad("cnp_lateness_ns %d must not be negative", p.CNPLatenessNs)
	}
	if p.SentUncertaintyNs != nil && *p.SentUncertaintyNs < 0 {
		return bad("sent_uncertainty_ns %d must not be negative", *p.SentUncertaintyNs)
	}
	if p.TimestampUncertaintyNs < 0 {
		return bad("timestamp_uncertainty_ns %d must not be negative", p.TimestampUncertaintyNs)
	}
	if p.LinkGbps < 0 || p.LinkGbps > 1600 {
		return bad("link_gbps %v (want 0..1600)", p.LinkGbps)
	}
	if p.PFCDetectionNs < 0 || p.PFCRestorationNs < 0 {
		return bad("pfc_detection_ns and pfc_restoration_ns must not be negative")
	}
	if p.DeadlockNs < 0 || p.DeadlockNs > MaxDeadlockNs {
		return bad("deadlock_ns %d (want 0..%d: deadlock-ms 1..60000)", p.DeadlockNs, int64(MaxDeadlockNs))
	}
	if err := m.Fabric.validate(); err != nil {
		return bad("fabric: %v", err)
	}
	if m.Switch != nil && len(m.Switch.LastSeq) > roce.MaxSwitches {
		return bad("switch: last_seq has %d switches (want at most %d)", len(m.Switch.LastSeq), roce.MaxSwitches)
	}
	for _, h := range p.Hosts {
		if h.MinTimeBetweenCNPsUs != nil && *h.MinTimeBetweenCNPsUs < 0 {
			return bad("hosts: %s: min_time_between_cnps_us must not be negative", h.Name)
		}
		if h.LinkGbps < 0 || h.LinkGbps > 1600 {
			return bad("hosts: %s: link_gbps %v (want 0..1600)", h.Name, h.LinkGbps)
		}
	}
	for prio, ds := range p.PrioDSCPMap {
		if prio < 0 || prio > 7 {
			return bad("prio_dscp_map: priority %d (want 0..7)", prio)
		}
		for _, d := range ds {
			if d < 0 || d > 63 {
				return bad("prio_dscp_map: priority %d: dscp %d (want 0..63)", prio, d)
			}
		}
	}
	if p.CNPScope != "" {
		ok := false
		for _, s := range Scopes {
			ok = ok || s == p.CNPScope
		}
		if !ok {
			return bad("cnp_scope %q (want %s)", p.CNPScope, strings.Join(Scopes, ", "))
		}
	}
	return nil
}
