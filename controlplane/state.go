package controlplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/netlumina/lumina/p4src"
)

// arbitration is what the stream said about our primary status after we
// first became primary.
type arbitration struct {
	mu       sync.Mutex
	primary  bool          // we are primary now
	was      bool          // we have been primary
	lost     []string      // every time we stopped being primary, why
	received uint64        // arbitration updates received
	over     bool          // the stream ended
	changed  chan struct{} // closed (and replaced) when received grows
	lastID   *p4v1.Uint128 // the election ID of the last update received
}

// note counts a received update and wakes SyncArbitration; a.mu is held.
func (a *arbitration) note() {
	a.received++
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

func (a *arbitration) update(m *p4v1.MasterArbitrationUpdate, ours *p4v1.Uint128) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.note()
	a.lastID = m.GetElectionId()
	if m.GetStatus().GetCode() == int32(codes.OK) {
		a.primary, a.was = true, true
		return
	}
	if a.primary {
		e := m.GetElectionId()
		a.lost = append(a.lost, fmt.Sprintf("another controller became primary (election ID %s, ours %s): %s",
			u128String(e), u128String(ours), m.GetStatus().GetMessage()))
	}
	a.primary = false
}

func (a *arbitration) ended(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.over = true
	a.note()
	if a.primary {
		a.lost = append(a.lost, fmt.Sprintf("the P4Runtime stream ended: %v", err))
	}
	a.primary = false
}

func u128String(v *p4v1.Uint128) string {
	if v == nil {
		return "none"
	}
	if v.GetHigh() == 0 {
		return fmt.Sprint(v.GetLow())
	}
	return fmt.Sprintf("%#x%016x", v.GetHigh(), v.GetLow())
}

// watchedClient sees every arbitration update of the stream the
// p4runtime-go-client opens, so the Switch knows when it stops being the
// primary controller after Dial.
type watchedClient struct {
	p4v1.P4RuntimeClient
	s *Switch
}

func (w watchedClient) StreamChannel(ctx context.Context, opts ...grpc.CallOption) (p4v1.P4Runtime_StreamChannelClient, error) {
	st, err := w.P4RuntimeClient.StreamChannel(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &watchedStream{P4Runtime_StreamChannelClient: st, s: w.s}, nil
}

type watchedStream struct {
	p4v1.P4Runtime_StreamChannelClient
	s *Switch
}

func (w *watchedStream) Recv() (*p4v1.StreamMessageResponse, error) {
	m, err := w.P4Runtime_StreamChannelClient.Recv()
	if err != nil {
		select {
		case <-w.s.stop: // we closed it
		default:
			w.s.arb.ended(err)
		}
		return m, err
	}
	if a := m.GetArbitration(); a != nil {
		w.s.arb.update(a, w.s.election)
	}
	return m, err
}

// SyncArbitration sends our arbitration update again on the stream and
// waits for an arbitration update to come back. The server answers it
// after every notification it queued before (a stream is ordered), so
// once it returns, a loss of primary that happened before the call is in
// LostPrimary, however late the stream's reader was scheduled.
func (s *Switch) SyncArbitration(ctx context.Context) error {
	s.arb.mu.Lock()
	n, over := s.arb.received, s.arb.over
	s.arb.mu.Unlock()
	if over {
		return nil // nothing more will come; the end is in LostPrimary
	}
	msg := &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: s.deviceID, ElectionId: s.election}}}
	if err := s.c.SendMessage(ctx, msg); err != nil {
		return fmt.Errorf("controlplane: arbitration sync: %w", err)
	}
	for {
		s.arb.mu.Lock()
		if s.arb.received > n {
			s.arb.mu.Unlock()
			return nil
		}
		if s.arb.changed == nil {
			s.arb.changed = make(chan struct{})
		}
		ch := s.arb.changed
		s.arb.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("controlplane: arbitration sync: no answer: %w", ctx.Err())
		}
	}
}

// LostPrimary returns every time the Switch stopped being the primary
// controller since it first became primary (another controller with a
// higher election ID, or the stream ended), in order; nil if it stayed
// primary. Close does not count. Call SyncArbitration first to include
// notifications still in flight.
func (s *Switch) LostPrimary() []string {
	s.arb.mu.Lock()
	defer s.arb.mu.Unlock()
	return append([]string(nil), s.arb.lost...)
}

// CheckInstalled reads back every table lumina installed — forwarding
// (l2_forward), ARP (arp_proxy), mirroring (mirror_select, the default
// entries of wrr_config and Egress.mirror_rewrite, the clone sessions),
// connections (conn_lookup), events (event_table), ECN marking by queue
// depth (Egress.ecn_red) and a fabric's logical switches (port_switch,
// fabric_forward, Egress.ecn_red_port) — the last four when the pushed
// P4Info has them: a pipeline built before them cannot hold a plan with
// entries there, which is a difference — and returns how they
// differ from the plan, each difference naming its table: entries the plan
// does not have, entries it has that are missing, and entries whose action
// differs, sorted per table; nil if the switch holds exactly the plan.
// (Registers are not compared: the pipeline updates them per packet.)
func (s *Switch) CheckInstalled(ctx context.Context, p *Plan) ([]string, error) {
	info := s.info
	if info == nil {
		var err error
		if info, err = p4src.P4Info(); err != nil {
			return nil, err
		}
	}
	var diffs []string
	tables := []struct {
		table string
		want  map[string]string
	}{
		{"Ingress.l2_forward", planForward(p)}, {"Ingress.arp_proxy", planARP(p)}, {"Ingress.mirror_select", planWRR(p)},
		{"Ingress.conn_lookup", planConns(p)}, {"Ingress.event_table", planEvents(p)},
	}
	for _, opt := range []struct {
		table string
		want  map[string]string
	}{
		{"Egress.ecn_red", planECNRed(p)}, {"Ingress.port_switch", planPortSwitch(p)},
		{"Ingress.fabric_forward", planFabricForward(p)}, {"Egress.ecn_red_port", planECNRedPort(p)},
	} {
		// Tables a pipeline built before them lacks: compared when the
		// P4Info has them, a difference when the plan needs them.
		if hasTable(info, opt.table) {
			tables = append(tables, opt)
		} else if len(opt.want) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s: the pipeline's P4Info has no such table, the plan has %d entries", opt.table, len(opt.want)))
		}
	}
	for _, tc := range tables {
		es, err := s.c.ReadTableEntryWildcard(ctx, tc.table)
		if err != nil {
			return nil, fmt.Errorf("controlplane: reading %s back: %w", tc.table, err)
		}
		got := map[string]string{}
		for _, e := range es {
			k, a, err := describeEntry(info, e)
			if err != nil {
				return nil, fmt.Errorf("controlplane: reading %s back: %w", tc.table, err)
			}
			got[k] = a
		}
		diffs = append(diffs, compare(tc.table, got, tc.want)...)
	}
	// The keyless tables' default entries.
	for _, dc := range []struct {
		table string
		want  string
	}{
		{"Ingress.wrr_config", describeAction("Ingress.set_wrr_size", []ActionParam{{Value: uint64(len(p.WRR) % 256)}})},
		{"Egress.mirror_rewrite", describeAction("Egress.rewrite_mirror", []ActionParam{{Value: uint64(p.MirrorPort)}})},
	} {
		id, err := tableID(info, dc.table)
		if err != nil {
			return nil, err
		}
		es, err := s.readAll(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id, IsDefaultAction: true}}})
		if err != nil {
			return nil, fmt.Errorf("controlplane: reading %s's default entry back: %w", dc.table, err)
		}
		got := "(none)"
		for _, e := range es {
			if _, a, err := describeEntry(info, e.GetTableEntry()); err == nil {
				got = a
			}
		}
		if got != dc.want {
			diffs = append(diffs, fmt.Sprintf("%s: default entry → %s, the plan has %s", dc.table, got, dc.want))
		}
	}
	sessions, err := s.readAll(ctx, &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{}}}}})
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for _, e := range sessions {
		cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
		var reps []string
		for _, r := range cs.GetReplicas() {
			reps = append(reps, fmt.Sprintf("port %d instance %d", r.GetEgressPort(), r.GetInstance()))
		}
		got[fmt.Sprintf("session %d", cs.GetSessionId())] = strings.Join(reps, ", ")
	}
	want := map[string]string{}
	for _, ss := range p.Sessions {
		want[fmt.Sprintf("session %d", ss.ID)] = fmt.Sprintf("port %d instance 1", ss.Port)
	}
	diffs = append(diffs, compare("clone sessions", got, want)...)
	return diffs, nil
}

// compare returns how got differs from want (key → action) in table,
// sorted.
func compare(table string, got, want map[string]string) []string {
	var d []string
	for k, a := range got {
		w, ok := want[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s: entry not in the plan: %s → %s", table, k, a))
		case w != a:
			d = append(d, fmt.Sprintf("%s: %s → %s, the plan has %s", table, k, a, w))
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("%s: planned entry missing: %s → %s", table, k, w))
		}
	}
	sort.Strings(d)
	return d
}

// tableID finds a table's ID in info.
func tableID(info *p4configv1.P4Info, name string) (uint32, error) {
	for _, t := range info.GetTables() {
		if t.GetPreamble().GetName() == name {
			return t.GetPreamble().GetId(), nil
		}
	}
	return 0, fmt.Errorf("controlplane: the P4Info has no table %s", name)
}

// The plan's entries as describeEntry renders them.
func planForward(p *Plan) map[string]string {
	m := map[string]string{}
	for _, f := range p.Forward {
		m["hdr.ethernet.dst_addr="+net.HardwareAddr(f.MAC[:]).String()] = describeAction("Ingress.forward", []ActionParam{{Value: uint64(f.Port)}})
	}
	return m
}

func planARP(p *Plan) map[string]string {
	m := map[string]string{}
	for _, a := range p.ARP {
		m["hdr.arp.target_proto_addr="+a.IP.String()] = describeAction("Ingress.arp_reply", []ActionParam{{Value: beUint(a.MAC[:])}})
	}
	return m
}

func planWRR(p *Plan) map[string]string {
	m := map[string]string{}
	for slot, sess := range p.WRR {
		m[fmt.Sprintf("meta.wrr_slot=%d", slot)] = describeAction("Ingress.set_mirror", []ActionParam{{Value: uint64(sess)}})
	}
	return m
}

func planConns(p *Plan) map[string]string {
	m := map[string]string{}
	for _, c := range p.Conns {
		act, params := c.Action()
		m[fmt.Sprintf("ig_intr_md.ingress_port=%d hdr.bth.dest_qp=%#x", c.Port, c.DestQP)] = describeAction(act, params)
	}
	return m
}

func planEvents(p *Plan) map[string]string {
	m := map[string]string{}
	for _, e := range p.Events {
		act, params := e.Action()
		m[fmt.Sprintf("ig_intr_md.ingress_port=%d hdr.bth.dest_qp=%#x hdr.bth.psn=%#x meta.iter=%d", e.Port, e.DestQP, uint32(e.PSN), e.Iter)] = describeAction(act, params)
	}
	return m
}

// describeAction renders an action as describeEntry does.
func describeAction(name string, params []ActionParam) string {
	var b strings.Builder
	b.WriteString(name + "(")
	for i, p := range params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, p.Value)
	}
	return b.String() + ")"
}

// describeEntry renders an exact-match entry's key (fields in P4Info
// order; the QPN and PSN in hex) and its action with its parameters.
func describeEntry(info *p4configv1.P4Info, e *p4v1.TableEntry) (key, action string, err error) {
	var t *p4configv1.Table
	for _, x := range info.GetTables() {
		if x.GetPreamble().GetId() == e.GetTableId() {
			t = x
		}
	}
	if t == nil {
		return "", "", fmt.Errorf("table ID %#x not in the P4Info", e.GetTableId())
	}
	vals := map[uint32][]byte{}
	for _, m := range e.GetMatch() {
		vals[m.GetFieldId()] = m.GetExact().GetValue()
	}
	for i, f := range t.GetMatchFields() {
		if i > 0 {
			key += " "
		}
		v, ok := vals[f.GetId()]
		if !ok {
			key += f.GetName() + "=*"
			continue
		}
		n := beUint(v)
		switch f.GetName() {
		case "hdr.bth.dest_qp", "hdr.bth.psn":
			key += fmt.Sprintf("%s=%#x", f.GetName(), n)
		case "hdr.ethernet.dst_addr", "hdr.ethernet.src_addr":
			key += fmt.Sprintf("%s=%s", f.GetName(), net.HardwareAddr(be(n, 6)))
		case "hdr.arp.target_proto_addr":
			key += fmt.Sprintf("%s=%s", f.GetName(), netip.AddrFrom4([4]byte(be(n, 4))))
		default:
			key += fmt.Sprintf("%s=%d", f.GetName(), n)
		}
	}
	a := e.GetAction().GetAction()
	if a == nil {
		return key, "(no action)", nil
	}
	action = fmt.Sprintf("action %#x", a.GetActionId())
	for _, x := range info.GetActions() {
		if x.GetPreamble().GetId() == a.GetActionId() {
			action = x.GetPreamble().GetName()
		}
	}
	action += "("
	for i, p := range a.GetParams() {
		if i > 0 {
			action += ", "
		}
		action += fmt.Sprint(beUint(p.GetValue()))
	}
	return key, action + ")", nil
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}
