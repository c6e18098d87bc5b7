package controlplane

import (
	"context"
	"fmt"
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

// CheckInstalled reads the event and connection tables back (wildcard
// reads) and returns how they differ from the plan: entries the plan does
// not have, entries it has that are missing, and entries whose action
// differs, sorted; nil if the tables hold exactly the plan's entries.
func (s *Switch) CheckInstalled(ctx context.Context, p *Plan) ([]string, error) {
	info := s.info
	if info == nil {
		var err error
		if info, err = p4src.P4Info(); err != nil {
			return nil, err
		}
	}
	var diffs []string
	for _, tc := range []struct {
		table string
		want  map[string]string
	}{{"Ingress.conn_lookup", planConns(p)}, {"Ingress.event_table", planEvents(p)}} {
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
		var d []string
		for k, a := range got {
			w, ok := tc.want[k]
			switch {
			case !ok:
				d = append(d, fmt.Sprintf("%s: entry not in the plan: %s → %s", tc.table, k, a))
			case w != a:
				d = append(d, fmt.Sprintf("%s: %s → %s, the plan has %s", tc.table, k, a, w))
			}
		}
		for k, w := range tc.want {
			if _, ok := got[k]; !ok {
				d = append(d, fmt.Sprintf("%s: planned entry missing: %s → %s", tc.table, k, w))
			}
		}
		sort.Strings(d)
		diffs = append(diffs, d...)
	}
	return diffs, nil
}

// The plan's entries as describeEntry renders them.
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
		if f.GetName() == "hdr.bth.dest_qp" || f.GetName() == "hdr.bth.psn" {
			key += fmt.Sprintf("%s=%#x", f.GetName(), n)
		} else {
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
