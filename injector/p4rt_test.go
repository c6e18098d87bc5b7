package injector_test

import (
	"context"
	"io"
	"net"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/p4src"
	"github.com/netlumina/lumina/sim"
)

// p4c is a raw P4Runtime client for conformance tests.
type p4c struct {
	t      *testing.T
	c      p4v1.P4RuntimeClient
	stream p4v1.P4Runtime_StreamChannelClient
	eid    uint64
}

func startServer(t *testing.T) string {
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(injector.New(sim.NewEventLoop(), injector.Config{}), 7).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}

// connect opens a stream, sends arbitration with election ID eid and returns
// the status code of the first arbitration answer.
func connect(t *testing.T, addr string, eid uint64) (*p4c, codes.Code) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &p4c{t: t, c: p4v1.NewP4RuntimeClient(conn), eid: eid}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if c.stream, err = c.c.StreamChannel(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: 7, ElectionId: &p4v1.Uint128{Low: eid}}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return c, codes.Code(resp.GetArbitration().GetStatus().GetCode())
}

func (c *p4c) setPipeline(info *p4configv1.P4Info) error {
	_, err := c.c.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 7,
		ElectionId: &p4v1.Uint128{Low: c.eid}, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 5}}})
	return err
}

func (c *p4c) write(atom p4v1.WriteRequest_Atomicity, ups ...*p4v1.Update) error {
	_, err := c.c.Write(context.Background(), &p4v1.WriteRequest{DeviceId: 7, ElectionId: &p4v1.Uint128{Low: c.eid}, Updates: ups, Atomicity: atom})
	return err
}

func (c *p4c) read(e *p4v1.Entity) ([]*p4v1.Entity, error) {
	rc, err := c.c.Read(context.Background(), &p4v1.ReadRequest{DeviceId: 7, Entities: []*p4v1.Entity{e}})
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for {
		r, err := rc.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.GetEntities()...)
	}
}

// updateCodes returns the per-update canonical codes of a batch error.
func updateCodes(t *testing.T, err error) []codes.Code {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Unknown {
		t.Fatalf("batch error code %v, want UNKNOWN with details (%v)", st.Code(), err)
	}
	var out []codes.Code
	for _, d := range st.Proto().GetDetails() {
		var pe p4v1.Error
		if err := d.UnmarshalTo(&pe); err != nil {
			t.Fatal(err)
		}
		out = append(out, codes.Code(pe.GetCanonicalCode()))
	}
	return out
}

func fwdEntry(mac []byte, port []byte) *p4v1.Update {
	return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: 0x02000001,
		Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: mac}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000002,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: port}}}}}}}}}
}

func TestP4RuntimeConformance(t *testing.T) {
	addr := startServer(t)
	backup, code := connect(t, addr, 1)
	if code != codes.OK {
		t.Fatalf("first client: arbitration %v, want OK (primary)", code)
	}
	primary, code := connect(t, addr, 2)
	if code != codes.OK {
		t.Fatalf("higher election ID: arbitration %v, want OK", code)
	}
	// The former primary is told it is a backup now.
	if r, err := backup.stream.Recv(); err != nil || codes.Code(r.GetArbitration().GetStatus().GetCode()) != codes.AlreadyExists {
		t.Errorf("backup notification = %v, %v; want ALREADY_EXISTS", r, err)
	}
	info, _ := p4src.P4Info()
	if err := backup.setPipeline(info); status.Code(err) != codes.PermissionDenied {
		t.Errorf("backup SetForwardingPipelineConfig: %v, want PERMISSION_DENIED", err)
	}
	if err := primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, fwdEntry([]byte{2, 0, 0, 0, 0, 1}, []byte{1})); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("write before a pipeline: %v, want FAILED_PRECONDITION", err)
	}
	bad := proto.Clone(info).(*p4configv1.P4Info)
	bad.Tables[0].MatchFields[0].Bitwidth = 47
	if err := primary.setPipeline(bad); status.Code(err) != codes.InvalidArgument {
		t.Errorf("wrong P4Info: %v, want INVALID_ARGUMENT", err)
	}
	if err := primary.setPipeline(info); err != nil {
		t.Fatal(err)
	}
	if err := backup.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, fwdEntry([]byte{2, 0, 0, 0, 0, 1}, []byte{1})); status.Code(err) != codes.PermissionDenied {
		t.Errorf("backup write: %v, want PERMISSION_DENIED", err)
	}

	// Padded values are accepted; reads return canonical ones.
	if err := primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, fwdEntry([]byte{0, 0, 0, 0, 0, 9}, []byte{0, 3})); err != nil {
		t.Fatal(err)
	}
	got, err := primary.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 0x02000001}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("read = %v, %v", got, err)
	}
	te := got[0].GetTableEntry()
	if v := te.GetMatch()[0].GetExact().GetValue(); string(v) != "\x09" {
		t.Errorf("read match value %x, want canonical 09", v)
	}
	if v := te.GetAction().GetAction().GetParams()[0].GetValue(); string(v) != "\x03" {
		t.Errorf("read param %x, want canonical 03", v)
	}

	type upd = *p4v1.Update
	unknownTable := fwdEntry([]byte{1}, []byte{1})
	unknownTable.Entity.GetTableEntry().TableId = 0x02000099
	unknownAction := fwdEntry([]byte{2}, []byte{1})
	unknownAction.Entity.GetTableEntry().Action.GetAction().ActionId = 0x01000099
	wrongAction := fwdEntry([]byte{3}, []byte{1})
	wrongAction.Entity.GetTableEntry().Action.GetAction().ActionId = 0x01000006 // drop_event: not an l2_forward action
	wrongAction.Entity.GetTableEntry().Action.GetAction().Params = nil
	tooWide := fwdEntry([]byte{1, 0, 0, 0, 0, 0, 0}, []byte{1}) // 49+ bits for a 48-bit field
	wideParam := fwdEntry([]byte{4}, []byte{2, 0})              // 10 bits for a 9-bit port
	noMatch := fwdEntry([]byte{5}, []byte{1})
	noMatch.Entity.GetTableEntry().Match = nil
	dup := fwdEntry([]byte{0, 0, 0, 0, 0, 9}, []byte{1})
	missing := fwdEntry([]byte{0x77}, []byte{1})
	missing.Type = p4v1.Update_DELETE
	err = primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, []upd{unknownTable, unknownAction, wrongAction, tooWide, wideParam, noMatch, dup, missing,
		fwdEntry([]byte{0xAA}, []byte{5})}...)
	// An unknown action ID is an invalid argument, not a missing entity (#24).
	want := []codes.Code{codes.NotFound, codes.InvalidArgument, codes.InvalidArgument, codes.InvalidArgument, codes.InvalidArgument,
		codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.OK}
	if got := updateCodes(t, err); len(got) != len(want) {
		t.Fatalf("per-update codes %v, want %v", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("update %d: %v, want %v", i, got[i], want[i])
			}
		}
	}
	// CONTINUE_ON_ERROR applied the good one.
	got, _ = primary.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 0x02000001}}})
	if len(got) != 2 {
		t.Errorf("after the mixed batch %d entries, want 2", len(got))
	}
	// ROLLBACK_ON_ERROR: one bad update, nothing applied.
	err = primary.write(p4v1.WriteRequest_ROLLBACK_ON_ERROR, fwdEntry([]byte{0xBB}, []byte{1}), tooWide)
	if c := updateCodes(t, err); len(c) != 2 || c[0] != codes.Aborted || c[1] != codes.InvalidArgument {
		t.Errorf("rollback batch codes %v, want [ABORTED INVALID_ARGUMENT]", c)
	}
	got, _ = primary.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 0x02000001}}})
	if len(got) != 2 {
		t.Errorf("after a rolled-back batch %d entries, want 2", len(got))
	}
	// Wildcard read of all tables includes nothing else; default entry read.
	all, _ := primary.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if len(all) != 2 {
		t.Errorf("wildcard read of all tables: %d entries, want 2", len(all))
	}
	def, err := primary.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 0x02000007, IsDefaultAction: true}}})
	if err != nil || len(def) != 1 || string(def[0].GetTableEntry().GetAction().GetAction().GetParams()[0].GetValue()) != "\x26\x0d" {
		t.Errorf("default entry of mirror_rewrite = %v, %v; want rewrite_mirror(9741)", def, err)
	}
	// Counters and registers: read, modify, wildcard.
	cnt, err := primary.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: 0x12000001}}})
	if err != nil || len(cnt) != 512 {
		t.Errorf("counter wildcard read: %d cells, %v; want 512", len(cnt), err)
	}
	reg := &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: 0x16000001, Index: &p4v1.Index{Index: 3}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{0, 0xff, 0xff, 0xfe}}}}}}}
	if err := primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, reg); err != nil {
		t.Fatal(err)
	}
	r, err := primary.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: 0x16000001, Index: &p4v1.Index{Index: 3}}}})
	if err != nil || len(r) != 1 || string(r[0].GetRegisterEntry().GetData().GetBitstring()) != "\xff\xff\xfe" {
		t.Errorf("register read-after-write = %v, %v", r, err)
	}
	oob := proto.Clone(reg).(*p4v1.Update)
	oob.Entity.GetRegisterEntry().Index.Index = 16384
	if c := updateCodes(t, primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, oob)); c[0] != codes.OutOfRange {
		t.Errorf("register index out of range: %v, want OUT_OF_RANGE", c)
	}
	// Clone sessions.
	cs := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
		PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
			CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: 5, Replicas: []*p4v1.Replica{{EgressPort: 10, Instance: 1}}}}}}}}
	if err := primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, cs); err != nil {
		t.Fatal(err)
	}
	if c := updateCodes(t, primary.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, cs)); c[0] != codes.AlreadyExists {
		t.Errorf("duplicate clone session: %v", c)
	}
	// Wrong device.
	if _, err := primary.c.Write(context.Background(), &p4v1.WriteRequest{DeviceId: 99, ElectionId: &p4v1.Uint128{Low: 2}}); status.Code(err) != codes.NotFound {
		t.Errorf("wrong device: %v, want NOT_FOUND", err)
	}
	// The primary leaves: the backup, the only live stream with an
	// election ID, is promoted and hears it (the primary is the live
	// stream with the highest election ID, #38.3).
	primary.stream.CloseSend()
	for {
		r, err := backup.stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c := codes.Code(r.GetArbitration().GetStatus().GetCode()); c == codes.OK {
			if got := r.GetArbitration().GetElectionId().GetLow(); got != backup.eid {
				t.Errorf("promotion notice names election ID %d, want the backup's %d", got, backup.eid)
			}
			break
		} else if c != codes.AlreadyExists {
			t.Fatalf("the backup's notice when the primary left: %v, want OK (promoted)", r.GetArbitration())
		}
	}
}
