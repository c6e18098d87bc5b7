// Package bfrtfake is a fake BfRuntime gRPC server for tests without a
// Tofino, and `lumina injector --bfrt`'s BfRt endpoint (the software
// switch standing in for a Tofino on the remote testbed): it serves the fixed-function tables lumina uses (pktgen.port_cfg,
// pktgen.app_cfg, pktgen.pkt_buffer, $PORT, $PORT_STAT) with the names,
// ids and field types of open-p4studio's bf_rt_pktgen_tf{1,2}.json and
// bf_rt_port_tf1.json (only the fields lumina touches), keeps what is
// written, and turns each pktgen app that is enabled into the pause
// injection the packet generator would make (OnPause), so that a test can
// drive the software switch's pause injection from the app entries.
//
// It checks what the hardware needs and a wrong plan would miss: the
// pipe's pktgen port enabled before an app of the pipe is, the template in
// the pipe's buffer, 16-byte aligned, at least the chip's minimum length,
// app fields in range. A request is applied whole or not at all: a
// refused update leaves every entry as it was before the request.
package bfrtfake

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
	"github.com/netlumina/lumina/roce"
)

// PauseApp is what an enabled one-shot timer app generates: Frames copies
// of Template (after the hardware's 6-byte pktgen header), the first
// Start after the enable, then one every Interval.
type PauseApp struct {
	Pipe, App       uint32
	Template        []byte
	Start, Interval time.Duration
	Frames          int64
}

// Server is the fake. Set the hooks before Start.
type Server struct {
	Chip   bfrt.Chip
	P4Name string // the program the device runs (default "lumina")
	Pipes  int    // pipes of the device (default 4)
	// OnPause is called, from the Write that enables the app, for each
	// app that starts.
	OnPause func(PauseApp) error
	// Counters answers $PORT_STAT reads (nil: zeros).
	Counters func(port uint32) bfrt.PortPFC
	// Listen is the address Start listens on (default 127.0.0.1:0).
	Listen string

	mu      sync.Mutex
	tables  map[string]*tableState // by table name
	info    []byte
	writes  []*pb.WriteRequest
	srv     *grpc.Server
	addr    string
	clients map[uint32]bool
}

type tableState struct {
	t       *bfrt.Table
	entries map[string]*entry // by pipe and key bytes
}

type entry struct {
	pipe   uint32
	keys   [][]byte
	action uint32
	data   map[uint32]*pb.DataField
}

// table and field ids: those of open-p4studio's fixed-function JSON.
type jfield struct {
	ID        uint32         `json:"id"`
	Name      string         `json:"name"`
	MatchType string         `json:"match_type,omitempty"`
	ReadOnly  bool           `json:"read_only,omitempty"`
	Type      map[string]any `json:"type"`
}
type jdata struct {
	ReadOnly  bool   `json:"read_only"`
	Singleton jfield `json:"singleton"`
}
type jaction struct {
	ID   uint32   `json:"id"`
	Name string   `json:"name"`
	Data []jfield `json:"data"`
}
type jtable struct {
	Name    string    `json:"name"`
	ID      uint32    `json:"id"`
	Type    string    `json:"table_type"`
	Size    int       `json:"size"`
	Key     []jfield  `json:"key"`
	Actions []jaction `json:"action_specs,omitempty"`
	Data    []jdata   `json:"data"`
}

func typ(t string, width int) map[string]any {
	m := map[string]any{"type": t}
	if width > 0 {
		m["width"] = width
	}
	return m
}

// fixedInfo is the fixed-function info the fake serves for chip.
func fixedInfo(chip bfrt.Chip) []byte {
	prefix, u16 := "tf1", typ("uint16", 0)
	if chip == bfrt.Tofino2 {
		prefix, u16 = "tf2", typ("bytes", 16)
	}
	u32, u64, boolean := typ("uint32", 0), typ("uint64", 0), typ("bool", 0)
	d := func(id uint32, name string, t map[string]any) jdata {
		return jdata{Singleton: jfield{ID: id, Name: name, Type: t}}
	}
	key := func(name string) jfield { return jfield{ID: 1, Name: name, MatchType: "Exact", Type: u32} }
	app := jtable{Name: prefix + ".pktgen.app_cfg", ID: 0xFF020002, Type: "PktgenAppCfg", Size: chip.Apps(), Key: []jfield{key("app_id")},
		Actions: []jaction{
			{ID: 1, Name: "trigger_timer_one_shot", Data: []jfield{{ID: 1, Name: "timer_nanosec", Type: u32}}},
			{ID: 2, Name: "trigger_timer_periodic", Data: []jfield{{ID: 1, Name: "timer_nanosec", Type: u32}}},
		},
		Data: []jdata{d(12, "app_enable", boolean), d(13, "pkt_len", u16), d(14, "pkt_buffer_offset", u16),
			d(15, "pipe_local_source_port", u32), d(16, "increment_source_port", boolean), d(17, "batch_count_cfg", u16),
			d(18, "packets_per_batch_cfg", u16), d(19, "ibg", u32), d(20, "ibg_jitter", u32), d(21, "ipg", u32),
			d(22, "ipg_jitter", u32), d(23, "batch_counter", u64), d(24, "pkt_counter", u64), d(25, "trigger_counter", u64)}}
	if chip == bfrt.Tofino2 {
		app.Data = append(app.Data, d(28, "assigned_chnl_id", typ("bytes", 8)))
	}
	tables := []jtable{
		{Name: prefix + ".pktgen.port_cfg", ID: 0xFF020001, Type: "PktgenPortCfg", Size: 256, Key: []jfield{key("dev_port")},
			Data: []jdata{d(1, "recirculation_enable", boolean), d(2, "pktgen_enable", boolean),
				d(3, "pattern_matching_enable", boolean), d(4, "clear_port_down_enable", boolean)}},
		app,
		{Name: prefix + ".pktgen.pkt_buffer", ID: 0xFF020003, Type: "PktgenPktBufferCfg", Size: 1024,
			Key:  []jfield{key("pkt_buffer_offset"), {ID: 2, Name: "pkt_buffer_size", MatchType: "Exact", Type: u32}},
			Data: []jdata{d(1, "buffer", typ("bytes", 8))}},
		{Name: "$PORT", ID: 0xFF000001, Type: "PortConfigure", Size: 256, Key: []jfield{key("$DEV_PORT")},
			Data: []jdata{d(4, "$PORT_ENABLE", boolean), d(9, "$TX_PFC_EN_MAP", u32), d(10, "$RX_PFC_EN_MAP", u32)}},
	}
	stat := jtable{Name: "$PORT_STAT", ID: 0xFF000002, Type: "PortStat", Size: 256, Key: []jfield{key("$DEV_PORT")}}
	for p := range uint32(8) {
		stat.Data = append(stat.Data, d(56+p, fmt.Sprintf("$Pri%dFramesTransmitted", p), u64), d(64+p, fmt.Sprintf("$Pri%dFramesReceived", p), u64))
	}
	tables = append(tables, stat)
	b, err := json.Marshal(map[string]any{"schema_version": "1.0.0", "tables": tables})
	if err != nil {
		panic(err)
	}
	return b
}

// Start serves on Listen until ctx ends.
func (s *Server) Start(ctx context.Context) (string, error) {
	if s.P4Name == "" {
		s.P4Name = "lumina"
	}
	if s.Pipes == 0 {
		s.Pipes = 4
	}
	s.info = fixedInfo(s.Chip)
	in, err := bfrt.ParseInfo(s.info)
	if err != nil {
		return "", err
	}
	s.tables = map[string]*tableState{}
	for _, t := range in.Tables {
		s.tables[t.Name] = &tableState{t: t, entries: map[string]*entry{}}
	}
	s.clients = map[uint32]bool{}
	if s.Listen == "" {
		s.Listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return "", err
	}
	s.srv = grpc.NewServer()
	pb.RegisterBfRuntimeServer(s.srv, &service{s: s})
	go s.srv.Serve(ln)
	go func() { <-ctx.Done(); s.srv.Stop() }()
	s.addr = ln.Addr().String()
	return s.addr, nil
}

// Stop stops serving.
func (s *Server) Stop() { s.srv.Stop() }

// Client starts s and connects a BfRt client to it as lumina does
// (device 0, client 1, program "lumina"); done closes the client and its
// connection. s stops with ctx.
func (s *Server) Client(ctx context.Context) (c *bfrt.Client, done func(), err error) {
	addr, err := s.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Stop()
		return nil, nil, err
	}
	if c, err = bfrt.Connect(ctx, conn, 0, 1, "lumina"); err != nil {
		conn.Close()
		s.Stop()
		return nil, nil, err
	}
	return c, func() { c.Close(); conn.Close() }, nil
}

// Writes returns the write requests received, in order.
func (s *Server) Writes() []*pb.WriteRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*pb.WriteRequest(nil), s.writes...)
}

// PFCMaps returns each port's $TX_PFC_EN_MAP and $RX_PFC_EN_MAP written.
func (s *Server) PFCMaps() map[uint32][2]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint32][2]uint64{}
	for _, e := range s.tables["$PORT"].entries {
		port := uint32(beUint(e.keys[0]))
		out[port] = [2]uint64{beUint(e.data[9].GetStream()), beUint(e.data[10].GetStream())}
	}
	return out
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

type service struct {
	pb.UnimplementedBfRuntimeServer
	s *Server
}

func (v *service) StreamChannel(st pb.BfRuntime_StreamChannelServer) error {
	for {
		m, err := st.Recv()
		if err != nil {
			return nil
		}
		if sub := m.GetSubscribe(); sub != nil {
			v.s.mu.Lock()
			v.s.clients[m.GetClientId()] = true
			v.s.mu.Unlock()
			if err := st.Send(&pb.StreamMessageResponse{Update: &pb.StreamMessageResponse_Subscribe{Subscribe: &pb.Subscribe{DeviceId: sub.GetDeviceId()}}}); err != nil {
				return err
			}
		}
	}
}

func (v *service) SetForwardingPipelineConfig(_ context.Context, r *pb.SetForwardingPipelineConfigRequest) (*pb.SetForwardingPipelineConfigResponse, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.clients[r.GetClientId()] {
		return nil, status.Errorf(codes.FailedPrecondition, "client %d has not subscribed", r.GetClientId())
	}
	if r.GetAction() != pb.SetForwardingPipelineConfigRequest_BIND || len(r.GetConfig()) != 1 || r.GetConfig()[0].GetP4Name() != s.P4Name {
		return nil, status.Errorf(codes.InvalidArgument, "the fake binds to program %s only", s.P4Name)
	}
	return &pb.SetForwardingPipelineConfigResponse{}, nil
}

func (v *service) GetForwardingPipelineConfig(context.Context, *pb.GetForwardingPipelineConfigRequest) (*pb.GetForwardingPipelineConfigResponse, error) {
	s := v.s
	return &pb.GetForwardingPipelineConfigResponse{
		Config:      []*pb.ForwardingPipelineConfig{{P4Name: s.P4Name, BfruntimeInfo: []byte(`{"schema_version":"1.0.0","tables":[]}`)}},
		NonP4Config: &pb.NonP4Config{BfruntimeInfo: s.info}}, nil
}

func (s *Server) tableByID(id uint32) *tableState {
	for _, ts := range s.tables {
		if ts.t.ID == id {
			return ts
		}
	}
	return nil
}

func entryKey(pipe uint32, keys [][]byte) string {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, pipe)
	for _, k := range keys {
		b.WriteByte(byte(len(k)))
		b.Write(k)
	}
	return b.String()
}

func (v *service) Write(_ context.Context, r *pb.WriteRequest) (*pb.WriteResponse, error) {
	s := v.s
	s.mu.Lock()
	s.writes = append(s.writes, r)
	var starts []PauseApp
	// A request is applied all or nothing (ROLLBACK_ON_ERROR): undo puts
	// back what its earlier updates changed when a later one is refused.
	var undo []func()
	err := func() error {
		if !s.clients[r.GetClientId()] {
			return status.Errorf(codes.FailedPrecondition, "client %d has not subscribed", r.GetClientId())
		}
		for _, u := range r.GetUpdates() {
			te := u.GetEntity().GetTableEntry()
			ts := s.tableByID(te.GetTableId())
			if ts == nil {
				return status.Errorf(codes.NotFound, "table id %#x", te.GetTableId())
			}
			if u.GetType() != pb.Update_MODIFY {
				return status.Errorf(codes.Unimplemented, "%s: %s (fixed tables are written with MODIFY)", ts.t.Name, u.GetType())
			}
			pipes := []uint32{r.GetTarget().GetPipeId()}
			if pipes[0] == bfrt.AllPipes {
				pipes = pipes[:0]
				for p := range uint32(s.Pipes) {
					pipes = append(pipes, p)
				}
			} else if pipes[0] >= uint32(s.Pipes) {
				return status.Errorf(codes.InvalidArgument, "%s: pipe %d of %d", ts.t.Name, pipes[0], s.Pipes)
			}
			if ts.t.Type == "PortConfigure" || ts.t.Type == "PktgenPortCfg" {
				pipes = []uint32{0} // keyed by device port
			}
			for _, pipe := range pipes {
				st, err := s.modify(ts, pipe, te, &undo)
				if err != nil {
					return err
				}
				if st != nil {
					starts = append(starts, *st)
				}
			}
		}
		return nil
	}()
	if err != nil {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	on := s.OnPause
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, st := range starts {
		if on != nil {
			if err := on(st); err != nil {
				return nil, status.Errorf(codes.Internal, "app %d of pipe %d: %v", st.App, st.Pipe, err)
			}
		}
	}
	return &pb.WriteResponse{}, nil
}

// modify merges te into ts's entry; it returns the app that starts when
// app_enable goes from false to true.
func (s *Server) modify(ts *tableState, pipe uint32, te *pb.TableEntry, undo *[]func()) (*PauseApp, error) {
	t := ts.t
	var keys [][]byte
	for i, kf := range te.GetKey().GetFields() {
		if i >= len(t.Keys) || kf.GetFieldId() != t.Keys[i].ID {
			return nil, status.Errorf(codes.InvalidArgument, "%s: key field %d out of order", t.Name, kf.GetFieldId())
		}
		v := kf.GetExact().GetValue()
		if len(v) != 4 {
			return nil, status.Errorf(codes.InvalidArgument, "%s key %s: %d bytes, want 4", t.Name, t.Keys[i].Name, len(v))
		}
		keys = append(keys, v)
	}
	if len(keys) != len(t.Keys) {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %d key fields, want %d", t.Name, len(keys), len(t.Keys))
	}
	if t.Type == "PortStat" {
		return nil, status.Errorf(codes.Unimplemented, "%s is read-only here", t.Name)
	}
	if t.Type == "PktgenAppCfg" && beUint(keys[0]) >= uint64(t.Size) {
		return nil, status.Errorf(codes.InvalidArgument, "%s: app %d of %d", t.Name, beUint(keys[0]), t.Size)
	}
	k := entryKey(pipe, keys)
	// The update is checked on a copy of the entry and stored only when
	// every check passes: a refused write leaves the entry as it was.
	e := &entry{pipe: pipe, keys: keys, data: map[uint32]*pb.DataField{}}
	if old := ts.entries[k]; old != nil {
		e.action = old.action
		for id, df := range old.data {
			e.data[id] = df
		}
	}
	wasOn := e.data[12].GetBoolVal()
	if a := te.GetData().GetActionId(); a != 0 {
		if t.ActionByID(a) == nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: action id %d", t.Name, a)
		}
		e.action = a
	}
	for _, df := range te.GetData().GetFields() {
		f := t.DataFieldByID(t.ActionByID(e.action), df.GetFieldId())
		if f == nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: data field id %d", t.Name, df.GetFieldId())
		}
		switch f.Type {
		case "bool":
			if _, ok := df.GetValue().(*pb.DataField_BoolVal); !ok {
				return nil, status.Errorf(codes.InvalidArgument, "%s field %s: not a bool", t.Name, f.Name)
			}
		default:
			v := df.GetStream()
			if f.Name != "buffer" && len(v) != (f.Width+7)/8 {
				return nil, status.Errorf(codes.InvalidArgument, "%s field %s: %d bytes, want %d", t.Name, f.Name, len(v), (f.Width+7)/8)
			}
		}
		e.data[df.GetFieldId()] = df
	}
	if t.Type == "PktgenPktBufferCfg" {
		off, size := beUint(keys[0]), beUint(keys[1])
		if off%16 != 0 || off+size > 16*1024 || uint64(len(e.data[1].GetStream())) != size {
			return nil, status.Errorf(codes.InvalidArgument, "%s: offset %d size %d with %d bytes", t.Name, off, size, len(e.data[1].GetStream()))
		}
	}
	var st *PauseApp
	if t.Type == "PktgenAppCfg" && !wasOn && e.data[12].GetBoolVal() {
		var err error
		if st, err = s.start(t, pipe, uint32(beUint(keys[0])), e); err != nil {
			return nil, err
		}
	}
	old := ts.entries[k]
	*undo = append(*undo, func() {
		if old == nil {
			delete(ts.entries, k)
		} else {
			ts.entries[k] = old
		}
	})
	ts.entries[k] = e
	return st, nil
}

// start checks an app being enabled and returns what it generates.
func (s *Server) start(t *bfrt.Table, pipe, app uint32, e *entry) (*PauseApp, error) {
	if a := t.ActionByID(e.action); a == nil || a.Name != "trigger_timer_one_shot" {
		return nil, status.Errorf(codes.FailedPrecondition, "%s app %d: enabled without a one-shot timer action", t.Name, app)
	}
	if e.data[15] == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%s app %d: pipe_local_source_port never written (its packets would not enter on the pktgen port)", t.Name, app)
	}
	local := uint32(beUint(e.data[15].GetStream()))
	if err := s.Chip.CheckPktgenPort(local); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s app %d: %v", t.Name, app, err)
	}
	port := pipe<<7 | local
	pc := s.tables[t.Name[:len(t.Name)-len("app_cfg")]+"port_cfg"].entries[entryKey(0, [][]byte{be32(port)})]
	if pc == nil || !pc.data[2].GetBoolVal() {
		return nil, status.Errorf(codes.FailedPrecondition, "%s app %d of pipe %d enabled before pktgen on port %d", t.Name, app, pipe, port)
	}
	for _, id := range []uint32{1, 13, 14, 17, 18, 19, 21} {
		if e.data[id] == nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%s app %d: field id %d never written", t.Name, app, id)
		}
	}
	get := func(id uint32) uint64 { return beUint(e.data[id].GetStream()) }
	if get(18) != 0 || get(21) != 0 {
		return nil, status.Errorf(codes.Unimplemented, "%s app %d: the fake generates one packet per batch, no ipg", t.Name, app)
	}
	off, n := get(14), get(13)
	min := uint64(11)
	if s.Chip == bfrt.Tofino2 {
		min = 59
		if e.data[28] == nil || uint32(get(28)) != local {
			return nil, status.Errorf(codes.FailedPrecondition, "%s app %d: assigned_chnl_id is not its pipe_local_source_port %d", t.Name, app, local)
		}
	}
	if n < min {
		return nil, status.Errorf(codes.InvalidArgument, "%s app %d: pkt_len %d below the chip's %d", t.Name, app, n, min)
	}
	var tmpl []byte
	for _, be := range s.tables[t.Name[:len(t.Name)-len("app_cfg")]+"pkt_buffer"].entries {
		b, k0 := be.data[1].GetStream(), beUint(be.keys[0])
		// Bounds on the stored bytes too, not only on the key's size.
		if be.pipe == pipe && k0 <= off && off+n <= k0+beUint(be.keys[1]) && off-k0+n <= uint64(len(b)) {
			tmpl = append([]byte(nil), b[off-k0:off-k0+n]...)
		}
	}
	if tmpl == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%s app %d: no template at offset %d (%d bytes) in pipe %d's buffer", t.Name, app, off, n, pipe)
	}
	return &PauseApp{Pipe: pipe, App: app, Template: tmpl, Start: time.Duration(get(1)), Interval: time.Duration(get(19)), Frames: int64(get(17)) + 1}, nil
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func (v *service) Read(r *pb.ReadRequest, st pb.BfRuntime_ReadServer) error {
	s := v.s
	var out []*pb.Entity
	for _, en := range r.GetEntities() {
		te := en.GetTableEntry()
		s.mu.Lock()
		ts := s.tableByID(te.GetTableId())
		s.mu.Unlock()
		if ts == nil {
			return status.Errorf(codes.NotFound, "table id %#x", te.GetTableId())
		}
		if ts.t.Type == "PortStat" {
			kf := te.GetKey().GetFields()
			if len(kf) != 1 {
				return status.Errorf(codes.InvalidArgument, "$PORT_STAT is read by $DEV_PORT")
			}
			port := uint32(beUint(kf[0].GetExact().GetValue()))
			var c bfrt.PortPFC
			if s.Counters != nil {
				c = s.Counters(port)
			}
			data := &pb.TableData{}
			for p := range uint32(8) {
				data.Fields = append(data.Fields, &pb.DataField{FieldId: 56 + p, Value: &pb.DataField_Stream{Stream: binary.BigEndian.AppendUint64(nil, c.Tx[p])}},
					&pb.DataField{FieldId: 64 + p, Value: &pb.DataField_Stream{Stream: binary.BigEndian.AppendUint64(nil, c.Rx[p])}})
			}
			out = append(out, &pb.Entity{Entity: &pb.Entity_TableEntry{TableEntry: &pb.TableEntry{TableId: ts.t.ID, Value: te.Value, Data: data}}})
			continue
		}
		s.mu.Lock()
		var keys []string
		for k := range ts.entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := ts.entries[k]
			want := te.GetKey().GetFields()
			match := len(want) == 0 || len(want) == len(e.keys)
			for i := range want {
				if match && !bytes.Equal(want[i].GetExact().GetValue(), e.keys[i]) {
					match = false
				}
			}
			if p := r.GetTarget().GetPipeId(); p != bfrt.AllPipes && p != e.pipe && ts.t.Type != "PortConfigure" && ts.t.Type != "PktgenPortCfg" {
				match = false
			}
			if !match {
				continue
			}
			key := &pb.TableKey{}
			for i, kb := range e.keys {
				key.Fields = append(key.Fields, &pb.KeyField{FieldId: ts.t.Keys[i].ID, MatchType: &pb.KeyField_Exact_{Exact: &pb.KeyField_Exact{Value: kb}}})
			}
			data := &pb.TableData{ActionId: e.action}
			var ids []uint32
			for id := range e.data {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				data.Fields = append(data.Fields, e.data[id])
			}
			out = append(out, &pb.Entity{Entity: &pb.Entity_TableEntry{TableEntry: &pb.TableEntry{TableId: ts.t.ID, Value: &pb.TableEntry_Key{Key: key}, Data: data}}})
		}
		s.mu.Unlock()
	}
	return st.Send(&pb.ReadResponse{Entities: out})
}

// Injection is the software switch's equivalent of app: lumina.p4 sends
// each generated packet, without the pktgen header and pause_gen_h, out
// of pause_gen_h's port (docs/tofino.md §8), so the frames are the
// template's PFC frame from Start, one every Interval, Frames of them. It
// returns the port, the PFC frame's priority and quanta and the times; an
// error when the template is not lumina's pause template.
func (app PauseApp) Injection() (port uint32, prio int, quanta uint16, start, duration, interval time.Duration, err error) {
	b := app.Template
	if len(b) != bfrt.TemplateLen {
		return 0, 0, 0, 0, 0, 0, fmt.Errorf("template of %d bytes, want %d", len(b), bfrt.TemplateLen)
	}
	port = uint32(binary.BigEndian.Uint16(b) & 0x1FF)
	frame := b[bfrt.PauseGenLen:]
	var m roce.MACControl
	if binary.BigEndian.Uint16(frame[12:]) != roce.EtherTypeMACControl {
		return 0, 0, 0, 0, 0, 0, fmt.Errorf("template frame is not MAC Control")
	}
	m = roce.MACControl(frame[roce.EthernetLen:])
	en := m.PriorityEnableVector()
	for p := range roce.PFCPriorities {
		if en == 1<<p {
			prio = p
			quanta = m.Time(p)
			break
		}
		if p == roce.PFCPriorities-1 {
			return 0, 0, 0, 0, 0, 0, fmt.Errorf("template PFC frame enables %#x, want one priority", en)
		}
	}
	var t [roce.PFCPriorities]uint16
	t[prio] = quanta
	if want := roce.BuildPFC(nil, [6]byte(frame[6:12]), 1<<prio, t); !bytes.Equal(want, frame) {
		return 0, 0, 0, 0, 0, 0, fmt.Errorf("template frame is not lumina's PFC frame")
	}
	start, interval = app.Start, app.Interval
	if app.Frames > 1 {
		duration = time.Duration(app.Frames) * app.Interval
	}
	return port, prio, quanta, start, duration, interval, nil
}
