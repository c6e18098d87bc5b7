package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/p4src"
)

// Switch is a P4Runtime connection to the event injector (the software
// target or a Tofino), as the primary controller.
type Switch struct {
	conn     *grpc.ClientConn
	c        *client.Client
	deviceID uint64
	election *p4v1.Uint128
	stop     chan struct{}
	runErr   chan error
	info     *p4configv1.P4Info // the pushed P4Info (IDs of registers and counters)
	arb      arbitration        // what the stream said about our primary status
	// BatchSize is the number of updates per Write. Default 1000.
	BatchSize int
}

// DialOptions configure Dial. Zero values are defaults.
type DialOptions struct {
	DeviceID uint64 // default 0
	// ElectionID is the election ID to arbitrate with, used as is: if
	// another controller holds a higher one, Dial fails. Default (0):
	// Dial picks one, 1 first, then (up to MaxElectionTries times) one
	// above the election ID the device reports in its answer when another
	// controller is primary (P4Runtime §"Client Arbitration Update": the
	// primary is the live controller with the highest election ID).
	ElectionID uint64
	Timeout    time.Duration // arbitration timeout, default 10 s
	GRPC       []grpc.DialOption
}

// MaxElectionTries bounds how often Dial arbitrates with a higher
// election ID when it picks the ID itself.
const MaxElectionTries = 3

func init() {
	// p4runtime-go-client logs through logrus, including an error on every
	// normal stream close; our errors travel as return values.
	logrus.SetLevel(logrus.PanicLevel)
}

// ErrNotPrimary is returned when another controller holds a higher
// election ID.
var ErrNotPrimary = errors.New("controlplane: not the primary controller")

// Dial connects to a P4Runtime server and becomes primary (see
// DialOptions.ElectionID for the election ID it uses).
func Dial(ctx context.Context, addr string, o DialOptions) (*Switch, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	eid := &p4v1.Uint128{Low: max(o.ElectionID, 1)}
	inUse := time.Now().Add(o.Timeout)
	for try := 1; ; try++ {
		s, reported, err := dial(ctx, addr, o, eid)
		if electionIDInUse(err) && time.Now().Before(inUse) {
			// Our ID is still held by a stream that just closed (a
			// previous run's, or a previous try's): the server drops it
			// once it sees the close (the P4Runtime specification's
			// client arbitration: election IDs are unique among a
			// role's live clients).
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			try--
			continue
		}
		if !errors.Is(err, ErrNotPrimary) {
			return s, err
		}
		next, ok := above(eid, reported)
		switch {
		case o.ElectionID != 0:
			return nil, fmt.Errorf("%w at %s: another controller is primary with election ID %s, ours is %s (configured; leave it unset to let lumina pick one above)",
				ErrNotPrimary, addr, u128String(reported), u128String(eid))
		case !ok:
			return nil, fmt.Errorf("%w at %s: the device reports election ID %s, there is none above it to take (ours %s)",
				ErrNotPrimary, addr, u128String(reported), u128String(eid))
		case try == MaxElectionTries:
			return nil, fmt.Errorf("%w at %s: after %d tries another controller is still primary, with election ID %s (ours %s): "+
				"something outbids lumina; stop it or give lumina a higher election ID",
				ErrNotPrimary, addr, try, u128String(reported), u128String(eid))
		}
		eid = next
	}
}

// electionIDInUse reports whether err is a server's refusal of an
// election ID another live client of the role holds.
func electionIDInUse(err error) bool {
	st := status.Convert(err)
	return err != nil && st.Code() == codes.InvalidArgument && strings.Contains(strings.ToLower(st.Message()), "election")
}

// above returns one more than the larger of a and b (b may be nil), and
// false if that does not fit 128 bits.
func above(a, b *p4v1.Uint128) (*p4v1.Uint128, bool) {
	m := a
	if b != nil && (b.GetHigh() > a.GetHigh() || b.GetHigh() == a.GetHigh() && b.GetLow() > a.GetLow()) {
		m = b
	}
	hi, lo := m.GetHigh(), m.GetLow()+1
	if lo == 0 {
		if hi == ^uint64(0) {
			return nil, false
		}
		hi++
	}
	return &p4v1.Uint128{High: hi, Low: lo}, true
}

// dial connects with election ID eid. When the device answers that
// another controller is primary, it returns ErrNotPrimary and the
// election ID the device reported.
func dial(ctx context.Context, addr string, o DialOptions, eid *p4v1.Uint128) (*Switch, *p4v1.Uint128, error) {
	opts := o.GRPC
	if opts == nil {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("controlplane: dialing %s: %w", addr, err)
	}
	s := &Switch{conn: conn, deviceID: o.DeviceID, election: eid,
		stop: make(chan struct{}), runErr: make(chan error, 1), BatchSize: 1000}
	s.c = client.NewClient(watchedClient{p4v1.NewP4RuntimeClient(conn), s}, o.DeviceID, s.election)
	arb := make(chan bool, 4)
	msgs := make(chan *p4v1.StreamMessageResponse, 16)
	go func() { s.runErr <- s.c.Run(s.stop, arb, msgs) }()
	go func() {
		for range msgs { // packet-ins and other stream messages are not used
		}
	}()
	t := time.NewTimer(o.Timeout)
	defer t.Stop()
	for {
		select {
		case primary := <-arb:
			if primary {
				// Keep reading the client's arbitration channel: the
				// stream (watchedStream) records a lost primary.
				go func() {
					for {
						select {
						case <-arb:
						case <-s.stop:
							return
						}
					}
				}()
				return s, nil, nil
			}
			s.arb.mu.Lock()
			reported := s.arb.lastID
			s.arb.mu.Unlock()
			s.Close()
			return nil, reported, fmt.Errorf("%w (election ID %s) at %s", ErrNotPrimary, u128String(eid), addr)
		case err := <-s.runErr:
			s.Close()
			return nil, nil, fmt.Errorf("controlplane: P4Runtime stream to %s: %w", addr, err)
		case <-t.C:
			s.Close()
			return nil, nil, fmt.Errorf("controlplane: no arbitration answer from %s within %v", addr, o.Timeout)
		case <-ctx.Done():
			s.Close()
			return nil, nil, ctx.Err()
		}
	}
}

// ElectionID returns the election ID the Switch arbitrated with.
func (s *Switch) ElectionID() string { return u128String(s.election) }

// Close ends the stream and the connection.
func (s *Switch) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	return s.conn.Close()
}

// Client exposes the underlying p4runtime-go-client.
func (s *Switch) Client() *client.Client { return s.c }

// SetPipeline pushes lumina's P4Info and the target device config (empty
// for the software target).
func (s *Switch) SetPipeline(ctx context.Context, deviceConfig []byte, cookie uint64) error {
	return s.SetPipelineWith(ctx, p4src.P4InfoText, deviceConfig, cookie)
}

// SetPipelineWith pushes a P4Info (text format) and device config: on a
// Tofino, the P4Info bf-p4c emitted for p4src/lumina.p4 (same names,
// other IDs) and the packed device config (p4src/tofino, docs/tofino.md).
func (s *Switch) SetPipelineWith(ctx context.Context, p4info, deviceConfig []byte, cookie uint64) error {
	cfg, err := s.c.SetFwdPipeFromBytes(ctx, deviceConfig, p4info, cookie)
	if err != nil {
		return fmt.Errorf("controlplane: SetForwardingPipelineConfig: %w", err)
	}
	s.info = cfg.P4Info
	return nil
}

// objectID finds a register's or counter's ID in the pushed P4Info.
func (s *Switch) objectID(kind, name string) (uint32, error) {
	info := s.info
	if info == nil {
		var err error
		if info, err = p4src.P4Info(); err != nil {
			return 0, err
		}
	}
	switch kind {
	case "register":
		for _, r := range info.GetRegisters() {
			if r.GetPreamble().GetName() == name {
				return r.GetPreamble().GetId(), nil
			}
		}
	case "counter":
		for _, c := range info.GetCounters() {
			if c.GetPreamble().GetName() == name {
				return c.GetPreamble().GetId(), nil
			}
		}
	}
	return 0, fmt.Errorf("controlplane: the P4Info has no %s %s", kind, name)
}

func u16(v uint64) []byte { return []byte{byte(v >> 8), byte(v)} }

// paramBytes encodes action parameters big-endian in whole bytes.
func paramBytes(ps []ActionParam) [][]byte {
	out := make([][]byte, len(ps))
	for i, p := range ps {
		out[i] = be(p.Value, (p.Bits+7)/8)
	}
	return out
}

func be(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// Updates renders the plan as P4Runtime updates, in installation order:
// clone sessions and mirror config first, then a fabric's logical switches
// (port_switch), forwarding (l2_forward, a fabric's fabric_forward),
// connections and their registers, ECN marking by depth (ecn_red, a
// fabric's ecn_red_port), events last.
func (s *Switch) Updates(p *Plan) ([]*p4v1.Update, error) {
	c := s.c
	var ups []*p4v1.Update
	ins := func(e *p4v1.TableEntry) {
		ups = append(ups, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: e}}})
	}
	mod := func(e *p4v1.Entity) { ups = append(ups, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: e}) }
	exact := func(v []byte) client.MatchInterface { return &client.ExactMatch{Value: v} }
	for _, ss := range p.Sessions {
		ups = append(ups, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
			PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
				CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: ss.ID, Replicas: []*p4v1.Replica{{EgressPort: ss.Port, Instance: 1}},
					PacketLengthBytes: int32(ss.Truncate)}}}}}})
	}
	for slot, sess := range p.WRR {
		ins(c.NewTableEntry("Ingress.mirror_select", map[string]client.MatchInterface{"meta.wrr_slot": exact(be(uint64(slot), 1))},
			c.NewTableActionDirect("Ingress.set_mirror", [][]byte{u16(uint64(sess))}), nil))
	}
	mod(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: c.NewTableEntry("Ingress.wrr_config", nil,
		c.NewTableActionDirect("Ingress.set_wrr_size", [][]byte{be(uint64(len(p.WRR)%256), 1)}), nil)}})
	if len(p.WRR) == 256 {
		return nil, errors.New("controlplane: 256 WRR slots do not fit the 8-bit slot size; use at most 255")
	}
	mod(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: c.NewTableEntry("Egress.mirror_rewrite", nil,
		c.NewTableActionDirect("Egress.rewrite_mirror", [][]byte{u16(uint64(p.MirrorPort))}), nil)}})
	for _, t := range []struct {
		name string
		n    int
	}{{"Ingress.port_switch", len(p.PortSwitch)}, {"Ingress.fabric_forward", len(p.FabricForward)}, {"Egress.ecn_red_port", len(p.ECNRedPort)}} {
		if t.n > 0 && s.info != nil && !hasTable(s.info, t.name) {
			return nil, fmt.Errorf("controlplane: a fabric needs %s, which the pushed P4Info lacks (a lumina.p4 built before issue #31?)", t.name)
		}
	}
	for _, e := range p.PortSwitch {
		ins(c.NewTableEntry("Ingress.port_switch", map[string]client.MatchInterface{"ig_intr_md.ingress_port": exact(u16(uint64(e.Port)))},
			c.NewTableActionDirect("Ingress.set_switch", [][]byte{{e.Switch}}), nil))
	}
	for _, f := range p.FabricForward {
		ins(c.NewTableEntry("Ingress.fabric_forward", map[string]client.MatchInterface{"meta.switch_id": exact([]byte{f.Switch}),
			"hdr.ethernet.src_addr": exact(f.Src[:]), "hdr.ethernet.dst_addr": exact(f.Dst[:])},
			c.NewTableActionDirect("Ingress.forward", [][]byte{u16(uint64(f.Port))}), nil))
	}
	for _, f := range p.Forward {
		ins(c.NewTableEntry("Ingress.l2_forward", map[string]client.MatchInterface{"hdr.ethernet.dst_addr": exact(f.MAC[:])},
			c.NewTableActionDirect("Ingress.forward", [][]byte{u16(uint64(f.Port))}), nil))
	}
	for _, a := range p.ARP {
		ip := a.IP.As4()
		ins(c.NewTableEntry("Ingress.arp_proxy", map[string]client.MatchInterface{"hdr.arp.target_proto_addr": exact(ip[:])},
			c.NewTableActionDirect("Ingress.arp_reply", [][]byte{a.MAC[:]}), nil))
	}
	regID := func(name string) (uint32, error) { return s.objectID("register", name) }
	expID, err := regID("Ingress.expected_psn")
	if err != nil {
		return nil, err
	}
	iterID, err := regID("Ingress.iter_reg")
	if err != nil {
		return nil, err
	}
	for _, ce := range p.Conns {
		mod(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: expID,
			Index: &p4v1.Index{Index: int64(ce.Index)}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: be(uint64(ce.IPSN), 4)}}}}})
		mod(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: iterID,
			Index: &p4v1.Index{Index: int64(ce.Index)}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: be(1, 2)}}}}})
		act, params := ce.Action()
		ins(c.NewTableEntry("Ingress.conn_lookup", map[string]client.MatchInterface{
			"ig_intr_md.ingress_port": exact(u16(uint64(ce.Port))), "hdr.bth.dest_qp": exact(be(uint64(ce.DestQP), 3))},
			c.NewTableActionDirect(act, paramBytes(params)), nil))
	}
	if len(p.ECNRed) > 0 && s.info != nil && !hasTable(s.info, "Egress.ecn_red") {
		return nil, errors.New("controlplane: switch.ecn needs Egress.ecn_red, which the pushed P4Info lacks (a lumina.p4 built before issue #30?)")
	}
	for _, e := range p.ECNRed {
		act, params := e.Action()
		ins(c.NewTableEntry("Egress.ecn_red", map[string]client.MatchInterface{"hdr.ipv4.dscp": exact([]byte{e.DSCP})},
			c.NewTableActionDirect(act, paramBytes(params)), nil))
	}
	for _, e := range p.ECNRedPort {
		act, params := e.Action()
		ins(c.NewTableEntry("Egress.ecn_red_port", map[string]client.MatchInterface{"eg_intr_md.egress_port": exact(u16(uint64(e.Port))),
			"hdr.ipv4.dscp": exact([]byte{e.DSCP})}, c.NewTableActionDirect(act, paramBytes(params)), nil))
	}
	for _, e := range p.Events {
		act, params := e.Action()
		if act == "" {
			return nil, fmt.Errorf("controlplane: event type %v", e.Type)
		}
		ins(c.NewTableEntry("Ingress.event_table", map[string]client.MatchInterface{
			"ig_intr_md.ingress_port": exact(u16(uint64(e.Port))), "hdr.bth.dest_qp": exact(be(uint64(e.DestQP), 3)),
			"hdr.bth.psn": exact(be(uint64(e.PSN), 3)), "meta.iter": exact(u16(uint64(e.Iter)))},
			c.NewTableActionDirect(act, paramBytes(params)), nil))
	}
	return ups, nil
}

// Install writes the plan in batches of BatchSize updates. It returns when
// every entry is installed, so traffic never starts early.
func (s *Switch) Install(ctx context.Context, p *Plan) error {
	ups, err := s.Updates(p)
	if err != nil {
		return err
	}
	return s.write(ctx, ups)
}

func (s *Switch) write(ctx context.Context, ups []*p4v1.Update) error {
	n := max(1, s.BatchSize)
	for i := 0; i < len(ups); i += n {
		req := &p4v1.WriteRequest{DeviceId: s.deviceID, ElectionId: s.election, Updates: ups[i:min(i+n, len(ups))],
			Atomicity: p4v1.WriteRequest_CONTINUE_ON_ERROR}
		if _, err := s.c.Write(ctx, req); err != nil {
			return fmt.Errorf("controlplane: writing updates %d..%d: %w", i, min(i+n, len(ups))-1, describe(err))
		}
	}
	return nil
}

// Cleanup deletes every table entry and clone session and zeroes the
// counters (Egress.ecn_red's entries only when the pushed P4Info has the
// table). Deleting what is not there is not an error: it is idempotent.
func (s *Switch) Cleanup(ctx context.Context) error {
	var ups []*p4v1.Update
	tables := []string{"Ingress.event_table", "Ingress.conn_lookup", "Ingress.mirror_select", "Ingress.l2_forward", "Ingress.arp_proxy"}
	for _, t := range []string{"Egress.ecn_red", "Ingress.port_switch", "Ingress.fabric_forward", "Egress.ecn_red_port"} {
		if info := s.info; info == nil || hasTable(info, t) {
			tables = append(tables, t)
		}
	}
	for _, t := range tables {
		es, err := s.c.ReadTableEntryWildcard(ctx, t)
		if err != nil {
			return fmt.Errorf("controlplane: reading %s: %w", t, err)
		}
		for _, e := range es {
			e.Action = nil
			ups = append(ups, &p4v1.Update{Type: p4v1.Update_DELETE, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: e}}})
		}
	}
	sessions, err := s.readAll(ctx, &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{}}}}})
	if err != nil {
		return err
	}
	for _, e := range sessions {
		ups = append(ups, &p4v1.Update{Type: p4v1.Update_DELETE, Entity: e})
	}
	for _, cname := range []string{"Ingress.rx_roce", "Ingress.event_drops", "Ingress.mirrored", "Egress.tx_roce"} {
		id, err := s.objectID("counter", cname)
		if err != nil {
			return err
		}
		ups = append(ups, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
			CounterId: id, Data: &p4v1.CounterData{}}}}})
	}
	return s.write(ctx, ups)
}

// hasTable reports whether info has the table.
func hasTable(info *p4configv1.P4Info, name string) bool {
	_, err := tableID(info, name)
	return err == nil
}

func (s *Switch) readAll(ctx context.Context, q *p4v1.Entity) ([]*p4v1.Entity, error) {
	ch := make(chan *p4v1.Entity, 64)
	var out []*p4v1.Entity
	done := make(chan struct{})
	go func() {
		for e := range ch {
			out = append(out, e)
		}
		close(done)
	}()
	err := s.c.ReadEntityWildcard(ctx, q, ch)
	<-done
	if err != nil {
		return nil, fmt.Errorf("controlplane: read: %w", err)
	}
	return out, nil
}

// Counters are the switch's per-port RoCE counters after a test (not a
// NIC's: model.Counters).
type Counters struct {
	RxRoCE      map[uint32]uint64 `json:"rx_roce"`      // RoCE packets received, by ingress port
	EventDrops  map[uint32]uint64 `json:"event_drops"`  // dropped by events, by ingress port
	TxRoCE      map[uint32]uint64 `json:"tx_roce"`      // RoCE packets forwarded, by egress port
	MirroredBy  map[uint32]uint64 `json:"mirrored"`     // copies mirrored, by WRR slot
	RxTotal     uint64            `json:"rx_total"`     // sum of RxRoCE
	MirrorTotal uint64            `json:"mirror_total"` // sum of MirroredBy
	// LastSeq is, by logical switch id, the last mirror sequence number
	// the switch gave a copy (the registers Ingress.mirror_seq_hi ++
	// mirror_seq_lo): how many copies each logical switch made, to which
	// each switch's sequence in the trace must run. Up to the highest
	// switch that made a copy (one entry for a test without a fabric);
	// nil when the pipeline has no such registers.
	LastSeq []uint64 `json:"last_seq,omitempty"`
}

// ReadCounters reads every counter cell.
func (s *Switch) ReadCounters(ctx context.Context) (*Counters, error) {
	c := &Counters{RxRoCE: map[uint32]uint64{}, EventDrops: map[uint32]uint64{}, TxRoCE: map[uint32]uint64{}, MirroredBy: map[uint32]uint64{}}
	for name, dst := range map[string]map[uint32]uint64{"Ingress.rx_roce": c.RxRoCE, "Ingress.event_drops": c.EventDrops,
		"Egress.tx_roce": c.TxRoCE, "Ingress.mirrored": c.MirroredBy} {
		cells, err := s.c.ReadCounterEntryWildcard(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("controlplane: reading %s: %w", name, err)
		}
		for i, d := range cells {
			if d.GetPacketCount() != 0 {
				dst[uint32(i)] = uint64(d.GetPacketCount())
			}
		}
	}
	for _, v := range c.RxRoCE {
		c.RxTotal += v
	}
	for _, v := range c.MirroredBy {
		c.MirrorTotal += v
	}
	seq, err := s.readLastSeq(ctx)
	if err != nil {
		return nil, err
	}
	c.LastSeq = seq
	return c, nil
}

// readLastSeq reads every logical switch's last mirror sequence number
// (Counters.LastSeq).
func (s *Switch) readLastSeq(ctx context.Context) ([]uint64, error) {
	var parts [2][]uint64 // lo, hi
	for i, name := range []string{"Ingress.mirror_seq_lo", "Ingress.mirror_seq_hi"} {
		id, err := s.objectID("register", name)
		if err != nil {
			return nil, nil // a pipeline without them (none before the mirror sequence registers were named so)
		}
		es, err := s.readAll(ctx, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id}}})
		if err != nil {
			return nil, fmt.Errorf("controlplane: reading %s: %w", name, err)
		}
		for _, e := range es {
			re := e.GetRegisterEntry()
			idx := re.GetIndex().GetIndex()
			if idx < 0 || idx >= MaxSwitches {
				continue
			}
			for int64(len(parts[i])) <= idx {
				parts[i] = append(parts[i], 0)
			}
			parts[i][idx] = beUint(re.GetData().GetBitstring())
		}
	}
	var out []uint64
	for sw := range max(len(parts[0]), len(parts[1])) {
		var lo, hi uint64
		if sw < len(parts[0]) {
			lo = parts[0][sw]
		}
		if sw < len(parts[1]) {
			hi = parts[1][sw]
		}
		out = append(out, hi<<32|lo)
	}
	last := len(out)
	for last > 1 && out[last-1] == 0 {
		last--
	}
	return out[:last], nil
}
