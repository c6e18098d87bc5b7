package injector

import (
	"context"
	"math/big"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// Server is the P4Runtime service of a Switch: arbitration (election IDs,
// primary and backups of the default role, the only role configured),
// SetForwardingPipelineConfig for lumina's P4Info (VERIFY, VERIFY_AND_SAVE
// then COMMIT, VERIFY_AND_COMMIT, RECONCILE_AND_COMMIT),
// GetForwardingPipelineConfig, Write (insert/modify/delete;
// CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches), Read
// with wildcards and filters, indirect counters, registers and clone
// sessions. Status codes follow the P4Runtime specification; Capabilities
// reports APIVersion, the p4runtime release the server is built on, and
// fields of later releases are refused with UNIMPLEMENTED.
//
// A Write or SetForwardingPipelineConfig is accepted only from the
// primary: its (device ID, role, election ID) must be the primary's, and
// it must arrive on the gRPC connection that carries the primary's open
// StreamChannel (the spec ties a Write to the client's arbitration,
// P4Runtime §"Client Arbitration Update" and §"Write RPC"; a client that
// only copies the primary's election ID, with no stream of its own, is
// refused with PERMISSION_DENIED). The connection is known through the
// stats handler of ServerOption, which every gRPC server serving a Server
// must install; without it every write is refused.
//
// The primary of a role is the live stream with the highest election ID
// (P4Runtime §"Client Arbitration Update"): when it closes, the live
// stream with the next highest ID becomes primary, and a controller that
// connected once with a high ID and left does not lock out later ones.
//
// Concurrency: Server is safe for concurrent use. mu guards streams and
// past; the Switch's mutex guards the pipeline, its state, the entry
// metadata (meta) and the saved config (saved). mu is never taken while
// holding the Switch's mutex.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer
	sw       *Switch
	deviceID uint64

	mu      sync.Mutex
	streams map[*arbStream]bool
	past    map[string]*big.Int // per role: the highest election ID ever seen (election_id_past), reported when there is no primary

	meta  metaStore    // guarded by sw.mu
	saved *savedConfig // guarded by sw.mu: VERIFY_AND_SAVE's config awaiting COMMIT
}

// APIVersion is the P4Runtime API version the server implements: that of
// the github.com/p4lang/p4runtime release it is built on. Fields added by
// later releases (e.g. Replica.port of 1.4.0) are unknown to it and
// refused with UNIMPLEMENTED.
const APIVersion = "1.4.0-rc.5"

type arbStream struct {
	send     chan *p4v1.StreamMessageResponse
	conn     uint64 // the gRPC connection carrying the stream (connOf); 0: unknown
	role     string
	election *big.Int // nil: unset, a backup that never becomes primary
	valid    bool     // the stream has arbitrated
}

// ServerOption returns the gRPC server option a Server needs: a stats
// handler that tags each connection, so that a Write is accepted only on
// the connection of the primary's stream. Install it on every gRPC server
// a Server is registered with.
func ServerOption() grpc.ServerOption { return grpc.StatsHandler(connTagger{}) }

// connTagger gives each server connection a distinct non-zero number in
// its context, from which gRPC derives every call's context on it.
type connTagger struct{}

type connKey struct{}

var connSeq atomic.Uint64

func (connTagger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, connSeq.Add(1))
}
func (connTagger) HandleConn(context.Context, stats.ConnStats)                     {}
func (connTagger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTagger) HandleRPC(context.Context, stats.RPCStats)                       {}

// connOf returns the number ServerOption's handler gave ctx's connection,
// 0 if it is not installed.
func connOf(ctx context.Context) uint64 {
	n, _ := ctx.Value(connKey{}).(uint64)
	return n
}

// NewServer returns the P4Runtime service for sw as device deviceID.
func NewServer(sw *Switch, deviceID uint64) *Server {
	return &Server{sw: sw, deviceID: deviceID, streams: map[*arbStream]bool{}, past: map[string]*big.Int{},
		meta: newMetaStore()}
}

// Register adds the service to a gRPC server.
func (s *Server) Register(g *grpc.Server) { p4v1.RegisterP4RuntimeServer(g, s) }

func u128(v *p4v1.Uint128) *big.Int {
	if v == nil {
		return nil
	}
	x := new(big.Int).SetUint64(v.GetHigh())
	x.Lsh(x, 64)
	return x.Or(x, new(big.Int).SetUint64(v.GetLow()))
}

func toU128(x *big.Int) *p4v1.Uint128 {
	if x == nil {
		return nil
	}
	lo := new(big.Int).And(x, new(big.Int).SetUint64(^uint64(0)))
	hi := new(big.Int).Rsh(x, 64)
	return &p4v1.Uint128{High: hi.Uint64(), Low: lo.Uint64()}
}

// primaryLocked returns the primary stream of role: the live arbitrated
// stream with the highest election ID (P4Runtime §"Client Arbitration
// Update"; election IDs of a role's streams are unique), or nil if no
// stream of role has one.
func (s *Server) primaryLocked(role string) *arbStream {
	var p *arbStream
	for st := range s.streams {
		if st.valid && st.role == role && st.election != nil && (p == nil || st.election.Cmp(p.election) > 0) {
			p = st
		}
	}
	return p
}

// isPrimaryLocked reports whether st is the primary of its role.
func (s *Server) isPrimaryLocked(st *arbStream) bool {
	return st.valid && st.election != nil && s.primaryLocked(st.role) == st
}

// notifyLocked sends the arbitration advisory (P4Runtime §"Client
// Arbitration Notifications") to the streams of role, or to only when it
// is not nil.
func (s *Server) notifyLocked(role string, only *arbStream) {
	primary := s.primaryLocked(role)
	// The primary's election ID; with no primary, the highest ever seen
	// (election_id_past).
	reported := s.past[role]
	if primary != nil {
		reported = primary.election
	}
	for st := range s.streams {
		if !st.valid || st.role != role || (only != nil && st != only) {
			continue
		}
		c, msg := code.Code_NOT_FOUND, "no primary"
		switch {
		case st == primary:
			c, msg = code.Code_OK, "primary"
		case primary != nil:
			c, msg = code.Code_ALREADY_EXISTS, "backup"
		}
		resp := &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
			DeviceId: s.deviceID, Role: &p4v1.Role{Name: role}, ElectionId: toU128(reported),
			Status: &rpcstatus.Status{Code: int32(c), Message: msg},
		}}}
		select {
		case st.send <- resp:
		default: // a client that does not read its stream misses updates
		}
	}
}

// arbitrate applies one MasterArbitrationUpdate received on st (P4Runtime
// §"Rules for Handling MasterArbitrationUpdate Messages"). A non-nil error
// ends the stream with that status.
func (s *Server) arbitrate(st *arbStream, arb *p4v1.MasterArbitrationUpdate) error {
	if arb.GetDeviceId() != s.deviceID {
		if st.valid {
			return status.Errorf(codes.FailedPrecondition, "device %d differs from this stream's device %d", arb.GetDeviceId(), s.deviceID)
		}
		return status.Errorf(codes.NotFound, "device %d not found (this is device %d)", arb.GetDeviceId(), s.deviceID)
	}
	role := arb.GetRole().GetName()
	eid := u128(arb.GetElectionId())
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.valid && st.role != role {
		return status.Error(codes.FailedPrecondition, "a stream cannot change its role")
	}
	if err := checkRole(role); err != nil {
		return err
	}
	if eid != nil {
		for o := range s.streams {
			if o != st && o.valid && o.role == role && o.election != nil && o.election.Cmp(eid) == 0 {
				return status.Errorf(codes.InvalidArgument, "election ID %v already used by another client of role %q", eid, role)
			}
		}
	}
	wasPrimary := s.isPrimaryLocked(st)
	st.role, st.election, st.valid = role, eid, true
	if h := s.past[role]; eid != nil && (h == nil || eid.Cmp(h) >= 0) {
		s.past[role] = eid
	}
	switch {
	case s.isPrimaryLocked(st), wasPrimary: // a new or same primary, or a primary that downgraded itself
		s.notifyLocked(role, nil)
	default: // a backup: only it hears
		s.notifyLocked(role, st)
	}
	return nil
}

// leave removes st; if it was the primary, the others of its role hear
// who the new primary is (the live stream with the highest election ID),
// or that there is none.
func (s *Server) leave(st *arbStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wasPrimary := s.isPrimaryLocked(st)
	delete(s.streams, st)
	if wasPrimary {
		s.notifyLocked(st.role, nil)
	}
}

// StreamChannel implements arbitration. Packet I/O is not supported.
func (s *Server) StreamChannel(stream p4v1.P4Runtime_StreamChannelServer) error {
	st := &arbStream{send: make(chan *p4v1.StreamMessageResponse, 16), conn: connOf(stream.Context())}
	s.mu.Lock()
	s.streams[st] = true
	s.mu.Unlock()
	defer s.leave(st)
	errc := make(chan error, 1)
	go func() {
		for {
			select {
			case m := <-st.send:
				if err := stream.Send(m); err != nil {
					errc <- err
					return
				}
			case <-stream.Context().Done():
				return
			}
		}
	}()
	for {
		req, err := stream.Recv()
		if err != nil {
			return nil
		}
		select {
		case err := <-errc:
			return err
		default:
		}
		arb := req.GetArbitration()
		if arb == nil {
			if req.GetPacket() != nil {
				return status.Error(codes.Unimplemented, "packet-out is not supported by the software target")
			}
			continue
		}
		if err := s.arbitrate(st, arb); err != nil {
			return err
		}
	}
}

// checkRole returns NOT_FOUND for a role the device does not have: only
// the default role ("", full access) is configured (P4Runtime §5: a role
// that matches none of the device's roles is NOT_FOUND).
func checkRole(role string) error {
	if role != "" {
		return status.Errorf(codes.NotFound, "role %q is not configured on this device (only the default role is)", role)
	}
	return nil
}

// checkPrimary returns NOT_FOUND for a role that is not configured and
// PERMISSION_DENIED unless eid is the election ID of the role's primary,
// whose stream is open, and the call arrived on that stream's connection:
// a departed primary's election ID, a backup's, one no stream arbitrated
// with, or the primary's used from another connection writes nothing.
func (s *Server) checkPrimary(ctx context.Context, role string, eid *p4v1.Uint128) error {
	if err := checkRole(role); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.primaryLocked(role)
	if p == nil || eid == nil || u128(eid).Cmp(p.election) != 0 {
		return status.Errorf(codes.PermissionDenied, "election ID %v is not the primary of role %q", u128(eid), role)
	}
	if c := connOf(ctx); c == 0 || c != p.conn {
		return status.Errorf(codes.PermissionDenied, "election ID %v is the primary's of role %q, but this call is not on the connection of its stream "+
			"(a write must come from the client that arbitrated)", u128(eid), role)
	}
	return nil
}

// SlowdownHeader is the gRPC response header of Capabilities in which
// the server states how many times slower than the wall clock its
// switch's clock runs (the loop's Slowdown; "1": real time). Standard
// P4Runtime clients ignore it; `lumina run` on the remote testbed checks
// it against its --slowdown (docs/run.md#remote-slowdown), since a switch
// and RNICs on different clocks would model nonsense.
const SlowdownHeader = "lumina-slowdown"

// Capabilities reports the P4Runtime version implemented (APIVersion),
// and the switch's clock in the SlowdownHeader header.
func (s *Server) Capabilities(ctx context.Context, _ *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	k := int64(1)
	if l, ok := s.sw.loop.(interface{ Slowdown() int64 }); ok {
		k = l.Slowdown()
	}
	// Outside a gRPC call (a test calling the method) there is no header
	// to set: that error is not the caller's.
	_ = grpc.SetHeader(ctx, metadata.Pairs(SlowdownHeader, strconv.FormatInt(k, 10)))
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}

// savedConfig is a VERIFY_AND_SAVE config awaiting COMMIT.
type savedConfig struct {
	cookie uint64
	devCfg []byte
}

// SetForwardingPipelineConfig installs lumina's pipeline (P4Runtime
// §"SetForwardingPipelineConfig RPC"). The software target realizes only
// lumina.p4's objects, so a config it accepts differs from the installed
// one at most in IDs, cookie and device config:
//   - VERIFY checks the config;
//   - VERIFY_AND_SAVE saves it: Reads and Writes refer to its IDs at once,
//     the forwarding state (entries, registers, counters, clone sessions)
//     is kept, and COMMIT then realizes it (its cookie and device config);
//   - COMMIT without a config realizes the saved one (NOT_FOUND if none,
//     INVALID_ARGUMENT if a config is attached);
//   - VERIFY_AND_COMMIT installs it and clears the forwarding state;
//   - RECONCILE_AND_COMMIT installs it keeping the forwarding state.
func (s *Server) SetForwardingPipelineConfig(ctx context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	if req.GetDeviceId() != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	if err := s.checkPrimary(ctx, req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	act := req.GetAction()
	cfg := req.GetConfig()
	var sch *schema
	switch act {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE,
		p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		if cfg == nil || cfg.GetP4Info() == nil {
			return nil, status.Error(codes.InvalidArgument, "config with a P4Info is required")
		}
		var err error
		if sch, err = newSchema(cfg.GetP4Info()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "P4Info rejected: %v", err)
		}
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		if cfg != nil {
			return nil, status.Error(codes.InvalidArgument, "COMMIT takes no config (it realizes the one VERIFY_AND_SAVE saved)")
		}
		s.sw.mu.Lock()
		defer s.sw.mu.Unlock()
		if s.saved == nil {
			return nil, status.Error(codes.NotFound, "COMMIT without a saved config (no VERIFY_AND_SAVE preceded it)")
		}
		s.sw.cookie, s.sw.devCfg, s.saved = s.saved.cookie, s.saved.devCfg, nil
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unsupported action %v", act)
	}
	if act == p4v1.SetForwardingPipelineConfigRequest_VERIFY {
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	}
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	cookie, devCfg := cfg.GetCookie().GetCookie(), cfg.GetP4DeviceConfig()
	oldCookie, oldDev := s.sw.cookie, s.sw.devCfg
	switch {
	case act == p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		s.sw.install(sch, cookie, devCfg)
		s.meta = newMetaStore()
		s.saved = nil
	case s.sw.sch == nil:
		// Nothing to keep: an empty pipeline forwards as no pipeline
		// does (l2_forward's default drops every frame).
		s.sw.install(sch, cookie, devCfg)
		s.meta = newMetaStore()
	default:
		s.reconcile(sch, cookie, devCfg)
	}
	if act == p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE {
		// The saved config's cookie and device config are realized by COMMIT.
		s.sw.cookie, s.sw.devCfg = oldCookie, oldDev
		s.saved = &savedConfig{cookie: cookie, devCfg: devCfg}
	} else {
		s.saved = nil
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// reconcile installs sch keeping the forwarding state: entries, default
// entries, registers, counters, clone sessions and held packets move to
// sch's IDs (sch describes the same objects, newSchema checked it).
// Called with sw.mu held.
func (s *Server) reconcile(sch *schema, cookie uint64, devCfg []byte) {
	sw := s.sw
	old, oldTables, oldRegs, oldCtrs, oldClones, oldHeld := sw.sch, sw.tables, sw.regs, sw.ctrs, sw.clones, sw.reorders
	sw.install(sch, cookie, devCfg)
	action := func(id uint32) uint32 { return sch.byName[old.actions[id].name] }
	meta := newMetaStore()
	for oid, ot := range oldTables {
		nid := sch.byName[old.tables[oid].name]
		nt := sw.tables[nid]
		for k, e := range ot.entries {
			ne := &entry{key: e.key, action: action(e.action), params: e.params}
			nt.entries[k] = ne
			if m, ok := s.meta.entries[e]; ok {
				meta.entries[ne] = m
			}
		}
		nt.def = entry{action: action(ot.def.action), params: ot.def.params}
		nt.defSet = ot.defSet
		if m, ok := s.meta.defs[oid]; ok {
			meta.defs[nid] = m
		}
	}
	for oid, cells := range oldRegs {
		copy(sw.regs[sch.byName[old.registers[oid].name]], cells)
	}
	for oid, cells := range oldCtrs {
		copy(sw.ctrs[sch.byName[old.counters[oid].name]], cells)
	}
	sw.clones, sw.reorders = oldClones, oldHeld
	s.meta = meta
}

// GetForwardingPipelineConfig returns what was set: an unset config before
// any pipeline (P4Runtime §"GetForwardingPipelineConfig RPC").
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if req.GetDeviceId() != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	if s.sw.sch == nil {
		return &p4v1.GetForwardingPipelineConfigResponse{}, nil
	}
	cfg := &p4v1.ForwardingPipelineConfig{Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: s.sw.cookie}}
	switch req.GetResponseType() {
	case p4v1.GetForwardingPipelineConfigRequest_ALL:
		cfg.P4Info, cfg.P4DeviceConfig = s.sw.sch.info, s.sw.devCfg
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		cfg.P4Info = s.sw.sch.info
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		cfg.P4DeviceConfig = s.sw.devCfg
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: cfg}, nil
}

// Write applies a batch of updates.
func (s *Server) Write(ctx context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if req.GetDeviceId() != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	if err := s.checkPrimary(ctx, req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	sw := s.sw
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.sch == nil {
		return nil, status.Error(codes.FailedPrecondition, "no forwarding pipeline set")
	}
	ups := req.GetUpdates()
	errs := make([]error, len(ups))
	failed := false
	switch req.GetAtomicity() {
	case p4v1.WriteRequest_CONTINUE_ON_ERROR:
		for i, u := range ups {
			if errs[i] = s.apply(u); errs[i] != nil {
				failed = true
			}
		}
	case p4v1.WriteRequest_ROLLBACK_ON_ERROR, p4v1.WriteRequest_DATAPLANE_ATOMIC:
		// All or nothing: each update records what it changes, and a
		// failed batch is undone in reverse, at a cost proportional to
		// the batch, not to the switch's state (the pipeline waits on
		// sw.mu meanwhile).
		sw.undo = &undoLog{}
		for i, u := range ups {
			if errs[i] = s.apply(u); errs[i] != nil {
				failed = true
			}
		}
		undo := sw.undo
		sw.undo = nil
		if undoHook != nil {
			undoHook(undo.saved)
		}
		if failed {
			undo.rollback()
			for i := range errs {
				if errs[i] == nil {
					errs[i] = status.Error(codes.Aborted, "not applied: another update of the batch failed")
				}
			}
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown atomicity %v", req.GetAtomicity())
	}
	if !failed {
		return &p4v1.WriteResponse{}, nil
	}
	return nil, batchError(errs)
}

// apply performs one update, refusing fields this server's P4Runtime
// version does not know. Called with sw.mu held.
func (s *Server) apply(u *p4v1.Update) error {
	if err := unknownFields(u.ProtoReflect()); err != nil {
		return err
	}
	return s.sw.apply(u, s.meta)
}

// unknownFields returns UNIMPLEMENTED when m or a message in it carries
// fields unknown to APIVersion's protos: a client built on a later
// P4Runtime sent them (e.g. Replica.port of 1.4.0, field 3), and ignoring
// them would store something other than what was asked.
func unknownFields(m protoreflect.Message) error {
	if raw := m.GetUnknown(); len(raw) > 0 {
		num, _, _ := protowire.ConsumeTag(raw)
		name := m.Descriptor().FullName()
		hint := ""
		switch {
		case name == "p4.v1.TableEntry" && num == 13:
			// is_const, added in 1.4.0: only ever sent when true, which
			// a write must not be (P4Runtime §"Table Entry").
			return status.Error(codes.InvalidArgument, "TableEntry.is_const must be false in a write")
		case name == "p4.v1.Replica" && num == 3:
			hint = " (Replica.port of P4Runtime 1.4.0; use egress_port)"
		}
		return status.Errorf(codes.Unimplemented, "%s field %d%s is not part of P4Runtime %s, which this server implements",
			name, num, hint, APIVersion)
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = unknownFields(l.Get(i).Message())
			}
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					err = unknownFields(mv.Message())
					return err == nil
				})
			}
		case fd.Message() != nil:
			err = unknownFields(v.Message())
		}
		return err == nil
	})
	return err
}

// batchError is the spec's batch error: UNKNOWN with one p4.v1.Error per
// update, in order.
func batchError(errs []error) error {
	st := &rpcstatus.Status{Code: int32(code.Code_UNKNOWN), Message: "some updates failed"}
	for _, e := range errs {
		pe := &p4v1.Error{CanonicalCode: int32(code.Code_OK)}
		if e != nil {
			s := status.Convert(e)
			pe.CanonicalCode, pe.Message = int32(s.Code()), s.Message()
			if len(errs) == 1 {
				st.Message = s.Message()
			}
		}
		a, err := anypb.New(pe)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		st.Details = append(st.Details, a)
	}
	return status.ErrorProto(st)
}

// Read streams the requested entities (wildcards allowed). A request that
// fails (an empty entity, an unknown ID, a bad index) does not stop the
// others: their entities are sent, then the RPC ends with UNKNOWN and one
// p4.v1.Error per request, in order (P4Runtime §"Read RPC", "Batch
// Processing").
func (s *Server) Read(req *p4v1.ReadRequest, stream p4v1.P4Runtime_ReadServer) error {
	if req.GetDeviceId() != s.deviceID {
		return status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	if err := checkRole(req.GetRole()); err != nil {
		return err
	}
	// Snapshot under the lock (pointer and cell copies only), then sort,
	// encode and stream without it: the packet pipeline shares sw.mu and
	// must never wait on a reader, however large the read or slow the
	// client (#17.12).
	sw := s.sw
	sw.mu.Lock()
	if sw.sch == nil {
		sw.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "no forwarding pipeline set")
	}
	var encs []encodeFn
	errs := make([]error, len(req.GetEntities()))
	failed := false
	for i, e := range req.GetEntities() {
		var enc encodeFn
		if errs[i] = unknownFields(e.ProtoReflect()); errs[i] == nil {
			enc, errs[i] = sw.read(e, s.meta)
		}
		if errs[i] != nil {
			failed = true
			continue
		}
		encs = append(encs, enc)
	}
	sw.mu.Unlock()
	if readEncodeHook != nil {
		readEncodeHook(sw)
	}
	var out []*p4v1.Entity
	for _, enc := range encs {
		out = append(out, enc()...)
	}
	const batch = 1000
	for i := 0; i < len(out); i += batch {
		if err := stream.Send(&p4v1.ReadResponse{Entities: out[i:min(i+batch, len(out))]}); err != nil {
			return err
		}
	}
	if failed {
		return batchError(errs)
	}
	if len(out) == 0 {
		return stream.Send(&p4v1.ReadResponse{})
	}
	return nil
}

// readEncodeHook, when set (tests), runs in Read between the snapshot and
// the encoding.
var readEncodeHook func(*Switch)

// ---- value encoding ----

// decodeValue reads a P4Runtime bytestring of a width-bit field: padded or
// canonical, but the value must fit.
func decodeValue(b []byte, width int, what string) (uint64, error) {
	if len(b) == 0 {
		return 0, status.Errorf(codes.InvalidArgument, "%s: empty bytestring", what)
	}
	var v uint64
	for i, x := range b {
		if len(b)-i > 8 && x != 0 {
			return 0, status.Errorf(codes.InvalidArgument, "%s: value does not fit bit<%d>", what, width)
		}
		v = v<<8 | uint64(x)
	}
	if width < 64 && v>>width != 0 {
		return 0, status.Errorf(codes.InvalidArgument, "%s: value %#x does not fit bit<%d>", what, v, width)
	}
	return v, nil
}

// canonical encodes v as the shortest bytestring (zero is one 0x00 byte).
func canonical(v uint64) []byte {
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	i := 0
	for i < 7 && b[i] == 0 {
		i++
	}
	return append([]byte(nil), b[i:]...)
}

func sortEntries(es []*entry) {
	sort.Slice(es, func(i, j int) bool {
		for k := range 4 {
			if es[i].key[k] != es[j].key[k] {
				return es[i].key[k] < es[j].key[k]
			}
		}
		return false
	})
}
