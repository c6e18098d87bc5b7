package injector

import (
	"context"
	"math/big"
	"sort"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// Server is the P4Runtime service of a Switch: arbitration (election IDs,
// primary and backups of the default role, the only role configured),
// SetForwardingPipelineConfig for lumina's
// P4Info, Write (insert/modify/delete; CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR
// and DATAPLANE_ATOMIC batches), Read with wildcards, indirect counters,
// registers and clone sessions. Status codes follow the P4Runtime spec.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer
	sw       *Switch
	deviceID uint64

	mu      sync.Mutex // guards streams and primaries
	streams map[*arbStream]bool
}

type arbStream struct {
	send     chan *p4v1.StreamMessageResponse
	role     string
	election *big.Int
	valid    bool
}

// NewServer returns the P4Runtime service for sw as device deviceID.
func NewServer(sw *Switch, deviceID uint64) *Server {
	return &Server{sw: sw, deviceID: deviceID, streams: map[*arbStream]bool{}}
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

// primaryLocked returns the primary's election ID for role (nil if none).
func (s *Server) primaryLocked(role string) *big.Int {
	var best *big.Int
	for st := range s.streams {
		if st.valid && st.role == role && st.election != nil && (best == nil || st.election.Cmp(best) > 0) {
			best = st.election
		}
	}
	return best
}

// notifyLocked sends every stream of role its arbitration status.
func (s *Server) notifyLocked(role string) {
	primary := s.primaryLocked(role)
	for st := range s.streams {
		if !st.valid || st.role != role {
			continue
		}
		c, msg := code.Code_ALREADY_EXISTS, "backup"
		if primary != nil && st.election.Cmp(primary) == 0 {
			c, msg = code.Code_OK, "primary"
		}
		if primary == nil {
			c, msg = code.Code_NOT_FOUND, "no primary"
		}
		resp := &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
			DeviceId: s.deviceID, Role: &p4v1.Role{Name: role}, ElectionId: toU128(primary),
			Status: &rpcstatus.Status{Code: int32(c), Message: msg},
		}}}
		select {
		case st.send <- resp:
		default: // a client that does not read its stream misses updates
		}
	}
}

// StreamChannel implements arbitration. Packet I/O is not supported.
func (s *Server) StreamChannel(stream p4v1.P4Runtime_StreamChannelServer) error {
	st := &arbStream{send: make(chan *p4v1.StreamMessageResponse, 16)}
	s.mu.Lock()
	s.streams[st] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		if st.valid {
			s.notifyLocked(st.role)
		}
		s.mu.Unlock()
	}()
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
		if arb.GetDeviceId() != s.deviceID {
			return status.Errorf(codes.NotFound, "device %d not found (this is device %d)", arb.GetDeviceId(), s.deviceID)
		}
		eid := u128(arb.GetElectionId())
		role := arb.GetRole().GetName()
		if err := checkRole(role); err != nil {
			return err
		}
		s.mu.Lock()
		if st.valid && st.role != role {
			s.mu.Unlock()
			return status.Error(codes.FailedPrecondition, "a stream cannot change its role")
		}
		for o := range s.streams {
			if o != st && o.valid && o.role == role && eid != nil && o.election != nil && o.election.Cmp(eid) == 0 {
				s.mu.Unlock()
				return status.Errorf(codes.InvalidArgument, "election ID %v already used by another client of role %q", eid, role)
			}
		}
		st.role, st.election, st.valid = role, eid, true
		s.notifyLocked(role)
		s.mu.Unlock()
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
// PERMISSION_DENIED unless eid is the election ID of the default role's
// primary, whose stream is open: a departed primary's election ID, a
// backup's, or one no stream arbitrated with writes nothing.
func (s *Server) checkPrimary(role string, eid *p4v1.Uint128) error {
	if err := checkRole(role); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.primaryLocked(role)
	if p == nil || eid == nil || u128(eid).Cmp(p) != 0 {
		return status.Errorf(codes.PermissionDenied, "election ID %v is not the primary of role %q", u128(eid), role)
	}
	for st := range s.streams { // primaryLocked only counts open streams; say so explicitly
		if st.valid && st.role == role && st.election != nil && st.election.Cmp(p) == 0 {
			return nil
		}
	}
	return status.Errorf(codes.PermissionDenied, "election ID %v has no open stream", u128(eid))
}

// Capabilities reports the P4Runtime version implemented.
func (s *Server) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: "1.4.0"}, nil
}

// SetForwardingPipelineConfig installs lumina's pipeline.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	if req.GetDeviceId() != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	if err := s.checkPrimary(req.GetRole(), req.GetElectionId()); err != nil {
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
		s.sw.mu.Lock()
		defer s.sw.mu.Unlock()
		if s.sw.sch == nil {
			return nil, status.Error(codes.FailedPrecondition, "COMMIT without a saved config")
		}
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unsupported action %v", act)
	}
	if act == p4v1.SetForwardingPipelineConfigRequest_VERIFY {
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	}
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	if act == p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT && s.sw.sch != nil {
		// Same objects: keep the state, update the cookie.
		s.sw.cookie, s.sw.devCfg = cfg.GetCookie().GetCookie(), cfg.GetP4DeviceConfig()
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	}
	s.sw.install(sch, cfg.GetCookie().GetCookie(), cfg.GetP4DeviceConfig())
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// GetForwardingPipelineConfig returns what was set.
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if req.GetDeviceId() != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	if s.sw.sch == nil {
		return nil, status.Error(codes.FailedPrecondition, "no forwarding pipeline set")
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
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if req.GetDeviceId() != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.GetDeviceId())
	}
	if err := s.checkPrimary(req.GetRole(), req.GetElectionId()); err != nil {
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
			if errs[i] = sw.apply(u, false); errs[i] != nil {
				failed = true
			}
		}
	case p4v1.WriteRequest_ROLLBACK_ON_ERROR, p4v1.WriteRequest_DATAPLANE_ATOMIC:
		// Validate everything against a snapshot first: all or nothing.
		snap := sw.snapshot()
		for i, u := range ups {
			if errs[i] = sw.apply(u, false); errs[i] != nil {
				failed = true
			}
		}
		if failed {
			sw.restore(snap)
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

// Read streams the requested entities (wildcards allowed).
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
	var encs []encodeFn
	var err error
	if sw.sch == nil {
		err = status.Error(codes.FailedPrecondition, "no forwarding pipeline set")
	}
	for _, e := range req.GetEntities() {
		if err != nil {
			break
		}
		var enc encodeFn
		enc, err = sw.read(e)
		encs = append(encs, enc)
	}
	sw.mu.Unlock()
	if err != nil {
		return err
	}
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
	if len(out) == 0 {
		return stream.Send(&p4v1.ReadResponse{})
	}
	return nil
}

// readEncodeHook, when set (tests), runs in Read between the snapshot and
// the encoding.
var readEncodeHook func(*Switch)

// snapshot copies the mutable program state (for atomic batches).
type snapshot struct {
	tables map[uint32]map[[4]uint64]*entry
	defs   map[uint32]entry
	regs   map[uint32][]uint64
	ctrs   map[uint32][]counterCell
	clones map[uint32]*cloneSession
}

func (sw *Switch) snapshot() *snapshot {
	sn := &snapshot{tables: map[uint32]map[[4]uint64]*entry{}, defs: map[uint32]entry{}, regs: map[uint32][]uint64{},
		ctrs: map[uint32][]counterCell{}, clones: map[uint32]*cloneSession{}}
	for id, t := range sw.tables {
		m := make(map[[4]uint64]*entry, len(t.entries))
		for k, e := range t.entries {
			m[k] = e
		}
		sn.tables[id], sn.defs[id] = m, t.def
	}
	for id, r := range sw.regs {
		sn.regs[id] = append([]uint64(nil), r...)
	}
	for id, c := range sw.ctrs {
		sn.ctrs[id] = append([]counterCell(nil), c...)
	}
	for id, c := range sw.clones {
		sn.clones[id] = c
	}
	return sn
}

func (sw *Switch) restore(sn *snapshot) {
	for id, t := range sw.tables {
		t.entries, t.def = sn.tables[id], sn.defs[id]
	}
	for id := range sw.regs {
		copy(sw.regs[id], sn.regs[id])
	}
	for id := range sw.ctrs {
		copy(sw.ctrs[id], sn.ctrs[id])
	}
	sw.clones = sn.clones
}

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
