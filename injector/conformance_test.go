package injector_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/p4src"
	"github.com/netlumina/lumina/sim"
)

// The conformance cases of issue #24: each drives the server through the
// standard p4runtime Go API (p4v1.P4RuntimeClient) and names the section
// of the P4Runtime specification (v1.4.x) whose rule it checks. Point n of
// the issue is "#24.n"; "pass" marks checks that passed before the issue
// and must keep passing.

const (
	tL2      = 0x02000001 // Ingress.l2_forward, key bit<48>
	tWRR     = 0x02000005 // Ingress.wrr_config, keyless
	aForward = 0x01000002 // Ingress.forward(bit<9> port)
	aDrop    = 0x01000003 // Ingress.drop_frame
	cRx      = 0x12000001 // Ingress.rx_roce[512]
	rPSN     = 0x16000001 // Ingress.expected_psn[16384]
)

// ctl is one controller: a stream and its election ID (nil: unset).
type ctl struct {
	t   *testing.T
	c   p4v1.P4RuntimeClient
	st  p4v1.P4Runtime_StreamChannelClient
	eid *p4v1.Uint128
}

func eid(low uint64) *p4v1.Uint128 { return &p4v1.Uint128{Low: low} }

// open opens a stream on c and arbitrates with e; it returns the first
// arbitration answer.
func open(t *testing.T, c p4v1.P4RuntimeClient, e *p4v1.Uint128) (*ctl, *p4v1.MasterArbitrationUpdate) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := c.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k := &ctl{t: t, c: c, st: st, eid: e}
	return k, k.arbitrate(e)
}

func (k *ctl) arbitrate(e *p4v1.Uint128) *p4v1.MasterArbitrationUpdate {
	k.t.Helper()
	k.eid = e
	if err := k.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: 7, ElectionId: e}}}); err != nil {
		k.t.Fatal(err)
	}
	return k.next()
}

// next returns the next arbitration update of the stream.
func (k *ctl) next() *p4v1.MasterArbitrationUpdate {
	k.t.Helper()
	r, err := k.st.Recv()
	if err != nil {
		k.t.Fatalf("stream: %v", err)
	}
	return r.GetArbitration()
}

func arbCode(a *p4v1.MasterArbitrationUpdate) codes.Code { return codes.Code(a.GetStatus().GetCode()) }

func (k *ctl) write(ups ...*p4v1.Update) error {
	_, err := k.c.Write(context.Background(), &p4v1.WriteRequest{DeviceId: 7, ElectionId: k.eid, Updates: ups})
	return err
}

func (k *ctl) setPipe(act p4v1.SetForwardingPipelineConfigRequest_Action, cookie uint64) error {
	var cfg *p4v1.ForwardingPipelineConfig
	if act != p4v1.SetForwardingPipelineConfigRequest_COMMIT {
		info, err := p4src.P4Info()
		if err != nil {
			k.t.Fatal(err)
		}
		cfg = &p4v1.ForwardingPipelineConfig{P4Info: info, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}}
	}
	_, err := k.c.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: 7, ElectionId: k.eid, Action: act, Config: cfg})
	return err
}

// read returns the entities read and the RPC's final error.
func (k *ctl) read(es ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	rc, err := k.c.Read(context.Background(), &p4v1.ReadRequest{DeviceId: 7, Entities: es})
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
			return out, err
		}
		out = append(out, r.GetEntities()...)
	}
}

// primaryWithPipe starts a server and returns its primary (election ID
// 10) with lumina's pipeline committed.
func primaryWithPipe(t *testing.T) *ctl {
	t.Helper()
	k, a := open(t, rawClient(t, startServer(t)), eid(10))
	if arbCode(a) != codes.OK {
		t.Fatalf("arbitration %v, want OK", a)
	}
	if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
		t.Fatal(err)
	}
	return k
}

// detailCodes returns the p4.v1.Error codes of a batch error (UNKNOWN).
func detailCodes(t *testing.T, err error) []codes.Code {
	t.Helper()
	return updateCodes(t, err)
}

func l2(typ p4v1.Update_Type, mac byte, act *p4v1.Action) *p4v1.Update {
	te := &p4v1.TableEntry{TableId: tL2, Match: []*p4v1.FieldMatch{{FieldId: 1,
		FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{2, 0, 0, 0, 0, mac}}}}}}
	if act != nil {
		te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: act}}
	}
	return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
}

func fwd(port byte) *p4v1.Action {
	return &p4v1.Action{ActionId: aForward, Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{port}}}}
}

func tableQuery(te *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// withUnknown appends a field the p4runtime release the server is built
// on does not know (as a client built on a later release sends it).
func withUnknown(m interface{ ProtoReflect() protoreflect.Message }, num protowire.Number, b []byte) {
	r := m.ProtoReflect()
	raw := protowire.AppendTag(nil, num, protowire.BytesType)
	raw = protowire.AppendBytes(raw, b)
	r.SetUnknown(append(r.GetUnknown(), raw...))
}

func withUnknownVarint(m interface{ ProtoReflect() protoreflect.Message }, num protowire.Number, v uint64) {
	r := m.ProtoReflect()
	raw := protowire.AppendTag(nil, num, protowire.VarintType)
	raw = protowire.AppendVarint(raw, v)
	r.SetUnknown(append(r.GetUnknown(), raw...))
}

// TestConformanceNoWedge (#24.1, spec: Client Arbitration Update, "Unset Election ID"): a stream
// arbitrating without an election ID while a primary is connected is a
// backup, and the server keeps answering: the primary writes, pushes the
// pipeline, and new streams arbitrate, all within a deadline.
func TestConformanceNoWedge(t *testing.T) {
	p := primaryWithPipe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		unset, a := open(t, p.c, nil)
		if c := arbCode(a); c != codes.AlreadyExists {
			t.Errorf("unset election ID: arbitration %v, want ALREADY_EXISTS (backup)", c)
		}
		if err := unset.write(l2(p4v1.Update_INSERT, 1, fwd(1))); status.Code(err) != codes.PermissionDenied {
			t.Errorf("Write without an election ID: %v, want PERMISSION_DENIED", err)
		}
		unset.st.CloseSend()
		if _, err := p.c.Write(ctx, &p4v1.WriteRequest{DeviceId: 7, ElectionId: p.eid, Updates: []*p4v1.Update{l2(p4v1.Update_INSERT, 2, fwd(1))}}); err != nil {
			t.Errorf("primary Write after an unset election ID: %v", err)
		}
		if err := p.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 2); err != nil {
			t.Errorf("primary SetForwardingPipelineConfig after an unset election ID: %v", err)
		}
		if _, a := open(t, p.c, eid(3)); arbCode(a) != codes.AlreadyExists {
			t.Errorf("new stream after an unset election ID: %v, want ALREADY_EXISTS", a)
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the server is wedged: no answer within 10 s after an arbitration without election ID")
	}
}

// TestConformanceArbitration (#24.2, #38.3; spec: "Client Arbitration
// Update" and "Rules for Handling MasterArbitrationUpdate Messages"): the
// primary is the live stream with the highest election ID; when it
// leaves, the live stream with the next highest ID is promoted.
func TestConformanceArbitration(t *testing.T) {
	c := rawClient(t, startServer(t))
	hi, a := open(t, c, eid(200))
	if arbCode(a) != codes.OK {
		t.Fatalf("first controller: %v, want OK", a)
	}
	mid, a := open(t, c, eid(150))
	if arbCode(a) != codes.AlreadyExists || a.GetElectionId().GetLow() != 200 {
		t.Fatalf("lower controller: %v, want ALREADY_EXISTS naming 200", a)
	}
	t.Run("pass/lower id refused writes (spec: Write RPC)", func(t *testing.T) {
		if err := hi.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
			t.Fatal(err)
		}
		if err := mid.write(l2(p4v1.Update_INSERT, 1, fwd(1))); status.Code(err) != codes.PermissionDenied {
			t.Errorf("backup Write: %v, want PERMISSION_DENIED", err)
		}
	})
	t.Run("pass/duplicate election id (spec: Rules for Handling MasterArbitrationUpdate, 1.2)", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		st, _ := c.StreamChannel(ctx)
		st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: 7, ElectionId: eid(150)}}})
		if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
			t.Errorf("election ID in use: %v, want INVALID_ARGUMENT", err)
		}
	})
	t.Run("#38.3/primary leaves: the highest live backup is promoted (spec: Client Arbitration Notifications)", func(t *testing.T) {
		hi.st.CloseSend()
		if a := mid.next(); arbCode(a) != codes.OK || a.GetElectionId().GetLow() != 150 {
			t.Fatalf("after the primary left: %v, want OK (primary) with election ID 150", a)
		}
		if err := mid.write(l2(p4v1.Update_INSERT, 1, fwd(1))); err != nil {
			t.Errorf("promoted backup (150) Write after the primary (200) left: %v", err)
		}
		low, a := open(t, c, eid(1))
		if arbCode(a) != codes.AlreadyExists || a.GetElectionId().GetLow() != 150 {
			t.Errorf("fresh controller (1): %v, want ALREADY_EXISTS naming 150", a)
		}
		if err := low.write(l2(p4v1.Update_INSERT, 2, fwd(1))); status.Code(err) != codes.PermissionDenied {
			t.Errorf("fresh lower controller Write: %v, want PERMISSION_DENIED", err)
		}
	})
}

// TestConformancePipeline (#24.3, spec: "SetForwardingPipelineConfig RPC"
// and "GetForwardingPipelineConfig RPC").
func TestConformancePipeline(t *testing.T) {
	k, _ := open(t, rawClient(t, startServer(t)), eid(10))
	t.Run("#24.3/Get before any pipeline: unset config (spec: GetForwardingPipelineConfig RPC)", func(t *testing.T) {
		r, err := k.c.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 7})
		if err != nil || r.GetConfig() != nil {
			t.Errorf("GetForwardingPipelineConfig = %v, %v; want OK with config unset", r, err)
		}
	})
	t.Run("#24.3/COMMIT without a saved config: NOT_FOUND (spec: SetForwardingPipelineConfig RPC)", func(t *testing.T) {
		if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_COMMIT, 0); status.Code(err) != codes.NotFound {
			t.Errorf("COMMIT: %v, want NOT_FOUND", err)
		}
	})
	t.Run("pass/Read before a pipeline: FAILED_PRECONDITION (spec: Read RPC)", func(t *testing.T) {
		if _, err := k.read(tableQuery(&p4v1.TableEntry{})); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("Read: %v, want FAILED_PRECONDITION", err)
		}
	})
	if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
		t.Fatal(err)
	}
	if err := k.write(l2(p4v1.Update_INSERT, 1, fwd(1))); err != nil {
		t.Fatal(err)
	}
	t.Run("#24.3/VERIFY_AND_SAVE keeps the forwarding state (spec: SetForwardingPipelineConfig RPC)", func(t *testing.T) {
		if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE, 2); err != nil {
			t.Fatal(err)
		}
		if es, err := k.read(tableQuery(&p4v1.TableEntry{TableId: tL2})); err != nil || len(es) != 1 {
			t.Errorf("entries after VERIFY_AND_SAVE: %d, %v; want 1", len(es), err)
		}
		// Writes between SAVE and COMMIT refer to the saved config.
		if err := k.write(l2(p4v1.Update_INSERT, 2, fwd(2))); err != nil {
			t.Errorf("Write after VERIFY_AND_SAVE: %v", err)
		}
	})
	t.Run("#24.3/COMMIT with a config: INVALID_ARGUMENT (spec: SetForwardingPipelineConfig RPC)", func(t *testing.T) {
		info, _ := p4src.P4Info()
		_, err := k.c.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 7, ElectionId: k.eid,
			Action: p4v1.SetForwardingPipelineConfigRequest_COMMIT, Config: &p4v1.ForwardingPipelineConfig{P4Info: info}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("COMMIT with a config: %v, want INVALID_ARGUMENT", err)
		}
	})
	t.Run("#24.3/COMMIT realizes the saved config (spec: SetForwardingPipelineConfig RPC)", func(t *testing.T) {
		if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_COMMIT, 0); err != nil {
			t.Fatalf("COMMIT after VERIFY_AND_SAVE: %v", err)
		}
		r, err := k.c.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 7,
			ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY})
		if err != nil || r.GetConfig().GetCookie().GetCookie() != 2 {
			t.Errorf("cookie after COMMIT = %v, %v; want 2", r, err)
		}
		if es, _ := k.read(tableQuery(&p4v1.TableEntry{TableId: tL2})); len(es) != 2 {
			t.Errorf("entries after COMMIT: %d, want 2", len(es))
		}
		if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_COMMIT, 0); status.Code(err) != codes.NotFound {
			t.Errorf("second COMMIT: %v, want NOT_FOUND (nothing saved)", err)
		}
	})
	t.Run("pass/VERIFY_AND_COMMIT clears the state (spec: SetForwardingPipelineConfig RPC)", func(t *testing.T) {
		if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 3); err != nil {
			t.Fatal(err)
		}
		if es, _ := k.read(tableQuery(&p4v1.TableEntry{TableId: tL2})); len(es) != 0 {
			t.Errorf("entries after VERIFY_AND_COMMIT: %d, want 0", len(es))
		}
	})
}

// TestConformanceTableEntries (#24.4, spec: "TableEntry", "Default Entry",
// "Wildcard Reads" of tables, "Idle-timeout").
func TestConformanceTableEntries(t *testing.T) {
	k := primaryWithPipe(t)
	def := func() *p4v1.TableEntry {
		t.Helper()
		es, err := k.read(tableQuery(&p4v1.TableEntry{TableId: tL2, IsDefaultAction: true}))
		if err != nil || len(es) != 1 {
			t.Fatalf("default entry read: %v, %v", es, err)
		}
		return es[0].GetTableEntry()
	}
	t.Run("#24.4/MODIFY without action resets the default entry (spec: Default Entry)", func(t *testing.T) {
		set := &p4v1.TableEntry{TableId: tL2, IsDefaultAction: true, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: fwd(4)}}}
		if err := k.write(&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: tableQuery(set)}); err != nil {
			t.Fatal(err)
		}
		if got := def().GetAction().GetAction().GetActionId(); got != aForward {
			t.Fatalf("default action %#x, want forward", got)
		}
		reset := &p4v1.TableEntry{TableId: tL2, IsDefaultAction: true}
		if err := k.write(&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: tableQuery(reset)}); err != nil {
			t.Fatalf("reset: %v", err)
		}
		if got := def().GetAction().GetAction().GetActionId(); got != aDrop {
			t.Errorf("default action after reset %#x, want drop_frame (the P4 default)", got)
		}
	})
	t.Run("pass/INSERT or DELETE of the default entry: INVALID_ARGUMENT (spec: Default Entry)", func(t *testing.T) {
		d := &p4v1.TableEntry{TableId: tL2, IsDefaultAction: true, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: fwd(4)}}}
		if c := detailCodes(t, k.write(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: tableQuery(d)})); c[0] != codes.InvalidArgument {
			t.Errorf("INSERT default: %v", c)
		}
	})
	t.Run("#24.4/INSERT into a keyless table: INVALID_ARGUMENT (spec: TableEntry)", func(t *testing.T) {
		te := &p4v1.TableEntry{TableId: tWRR, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000009,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{2}}}}}}}
		if c := detailCodes(t, k.write(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: tableQuery(te)})); c[0] != codes.InvalidArgument {
			t.Errorf("keyless INSERT: %v, want INVALID_ARGUMENT", c)
		}
	})
	t.Run("#24.4/metadata and controller_metadata read back (spec: TableEntry)", func(t *testing.T) {
		u := l2(p4v1.Update_INSERT, 5, fwd(5))
		//lint:ignore SA1019 deprecated in favour of metadata, but the spec still requires storing and returning it
		u.Entity.GetTableEntry().Metadata, u.Entity.GetTableEntry().ControllerMetadata = []byte("note"), 77
		if err := k.write(u); err != nil {
			t.Fatal(err)
		}
		q := l2(0, 5, nil).Entity
		es, err := k.read(q)
		if err != nil || len(es) != 1 {
			t.Fatalf("read: %v, %v", es, err)
		}
		te := es[0].GetTableEntry()
		//lint:ignore SA1019 deprecated in favour of metadata, but the spec still requires storing and returning it
		if cm := te.GetControllerMetadata(); !bytes.Equal(te.GetMetadata(), []byte("note")) || cm != 77 {
			t.Errorf("read back metadata %q, controller_metadata %d; want \"note\", 77", te.GetMetadata(), cm)
		}
	})
	t.Run("#24.4/a read's action filter (spec: Table Wildcard Reads)", func(t *testing.T) {
		drop := l2(p4v1.Update_INSERT, 6, &p4v1.Action{ActionId: aDrop})
		if err := k.write(drop); err != nil {
			t.Fatal(err)
		}
		es, err := k.read(tableQuery(&p4v1.TableEntry{TableId: tL2, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: aDrop}}}}))
		if err != nil || len(es) != 1 || es[0].GetTableEntry().GetAction().GetAction().GetActionId() != aDrop {
			t.Errorf("read filtered on drop_frame = %v, %v; want the one drop_frame entry", es, err)
		}
	})
	t.Run("#24.4/is_const in a write: INVALID_ARGUMENT (spec: TableEntry)", func(t *testing.T) {
		u := l2(p4v1.Update_INSERT, 7, fwd(1))
		withUnknownVarint(u.Entity.GetTableEntry(), 13, 1) // is_const = true (a 1.4.0 field)
		if c := detailCodes(t, k.write(u)); c[0] != codes.InvalidArgument {
			t.Errorf("is_const: %v, want INVALID_ARGUMENT", c)
		}
	})
	t.Run("#24.4/idle_timeout_ns on a table without idle timeout: INVALID_ARGUMENT (spec: Idle-timeout)", func(t *testing.T) {
		u := l2(p4v1.Update_INSERT, 8, fwd(1))
		u.Entity.GetTableEntry().IdleTimeoutNs = 1e9
		if c := detailCodes(t, k.write(u)); c[0] != codes.InvalidArgument {
			t.Errorf("idle_timeout_ns: %v, want INVALID_ARGUMENT", c)
		}
	})
	t.Run("#24.4/unknown action ID: INVALID_ARGUMENT (spec: TableEntry)", func(t *testing.T) {
		if c := detailCodes(t, k.write(l2(p4v1.Update_INSERT, 9, &p4v1.Action{ActionId: 0x01000099}))); c[0] != codes.InvalidArgument {
			t.Errorf("unknown action: %v, want INVALID_ARGUMENT", c)
		}
	})
	t.Run("pass/insert, modify, delete, ALREADY_EXISTS, NOT_FOUND (spec: Write RPC)", func(t *testing.T) {
		if err := k.write(l2(p4v1.Update_INSERT, 10, fwd(1))); err != nil {
			t.Fatal(err)
		}
		if c := detailCodes(t, k.write(l2(p4v1.Update_INSERT, 10, fwd(1)), l2(p4v1.Update_MODIFY, 10, fwd(3)), l2(p4v1.Update_MODIFY, 11, fwd(3)))); c[0] != codes.AlreadyExists || c[1] != codes.OK || c[2] != codes.NotFound {
			t.Errorf("batch codes %v, want [ALREADY_EXISTS OK NOT_FOUND]", c)
		}
		if err := k.write(l2(p4v1.Update_DELETE, 10, nil)); err != nil {
			t.Errorf("DELETE: %v", err)
		}
	})
}

// TestConformanceReads (#24.5, spec: "Read RPC", its "Wildcard Reads"
// and "Batch Processing").
func TestConformanceReads(t *testing.T) {
	k := primaryWithPipe(t)
	if err := k.write(l2(p4v1.Update_INSERT, 1, fwd(1))); err != nil {
		t.Fatal(err)
	}
	t.Run("#24.5/empty Entity: INVALID_ARGUMENT (spec: Read RPC, Wildcard Reads)", func(t *testing.T) {
		_, err := k.read(&p4v1.Entity{})
		if c := detailCodes(t, err); len(c) != 1 || c[0] != codes.InvalidArgument {
			t.Errorf("empty entity: %v, want [INVALID_ARGUMENT]", c)
		}
	})
	t.Run("#24.5/one bad request: the others answered, per-request errors (spec: Read RPC, Batch Processing)", func(t *testing.T) {
		es, err := k.read(tableQuery(&p4v1.TableEntry{TableId: tL2}), tableQuery(&p4v1.TableEntry{TableId: 0x02000099}))
		if c := detailCodes(t, err); len(c) != 2 || c[0] != codes.OK || c[1] != codes.NotFound {
			t.Errorf("codes %v, want [OK NOT_FOUND]", c)
		}
		if len(es) != 1 {
			t.Errorf("%d entities, want the good request's 1", len(es))
		}
	})
	t.Run("pass/wildcard read of all tables (spec: Read RPC, Wildcard Reads)", func(t *testing.T) {
		if es, err := k.read(tableQuery(&p4v1.TableEntry{})); err != nil || len(es) != 1 {
			t.Errorf("wildcard read: %d entities, %v; want 1", len(es), err)
		}
	})
}

// TestConformanceVersionAndClones (#24.6, spec: "Capabilities RPC",
// "CloneSessionEntry"): the server reports the version it
// implements and refuses Replica.port, a field that version lacks.
func TestConformanceVersionAndClones(t *testing.T) {
	k := primaryWithPipe(t)
	t.Run("#24.6/Capabilities names the implemented version (spec: Capabilities RPC)", func(t *testing.T) {
		r, err := k.c.Capabilities(context.Background(), &p4v1.CapabilitiesRequest{})
		if err != nil || r.GetP4RuntimeApiVersion() != injector.APIVersion || injector.APIVersion != "1.4.0-rc.5" {
			t.Errorf("Capabilities = %v, %v; want %q", r, err, "1.4.0-rc.5")
		}
	})
	clone := func(r *p4v1.Replica) *p4v1.Update {
		return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
			PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
				CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: 5, Replicas: []*p4v1.Replica{r}}}}}}}
	}
	t.Run("#24.6/Replica.port refused: UNIMPLEMENTED (spec: CloneSessionEntry)", func(t *testing.T) {
		r := &p4v1.Replica{Instance: 1}
		withUnknown(r, 3, []byte{0, 10}) // bytes port = 3 (P4Runtime 1.4.0)
		err := k.write(clone(r))
		if c := detailCodes(t, err); c[0] != codes.Unimplemented {
			t.Errorf("replica with port: %v, want UNIMPLEMENTED", c)
		}
		if es, err := k.read(&p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{}}}}}); err != nil || len(es) != 0 {
			t.Errorf("clone sessions after the refused write: %v, %v; want none", es, err)
		}
	})
	t.Run("pass/clone session with egress_port (spec: CloneSessionEntry)", func(t *testing.T) {
		if err := k.write(clone(&p4v1.Replica{EgressPort: 10, Instance: 1})); err != nil {
			t.Fatal(err)
		}
		if c := detailCodes(t, k.write(clone(&p4v1.Replica{EgressPort: 10, Instance: 1}))); c[0] != codes.AlreadyExists {
			t.Errorf("duplicate session: %v, want ALREADY_EXISTS", c)
		}
	})
}

// TestConformanceIndex (#24.7, spec: "CounterEntry", "RegisterEntry"): a
// negative index is INVALID_ARGUMENT, one beyond the array OUT_OF_RANGE.
func TestConformanceIndex(t *testing.T) {
	k := primaryWithPipe(t)
	ctr := func(i int64) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: cRx, Index: &p4v1.Index{Index: i},
			Data: &p4v1.CounterData{PacketCount: 1}}}}
	}
	reg := func(i int64) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: rPSN, Index: &p4v1.Index{Index: i},
			Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{1}}}}}}
	}
	for _, tt := range []struct {
		name string
		e    *p4v1.Entity
		want codes.Code
	}{
		{"#24.7/counter index -1 (spec: CounterEntry)", ctr(-1), codes.InvalidArgument},
		{"pass/counter index 512 (spec: CounterEntry)", ctr(512), codes.OutOfRange},
		{"#24.7/register index -1 (spec: RegisterEntry)", reg(-1), codes.InvalidArgument},
		{"pass/register index 16384 (spec: RegisterEntry)", reg(16384), codes.OutOfRange},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if c := detailCodes(t, k.write(&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: tt.e})); c[0] != tt.want {
				t.Errorf("write: %v, want %v", c, tt.want)
			}
			if _, err := k.read(tt.e); detailCodes(t, err)[0] != tt.want {
				t.Errorf("read: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestConformanceClientCert (#24.8, spec: "Security concerns"; issue
// #24 point 8): a server
// configured with agent.ServerOptionsClientCerts accepts a client that
// presents a certificate signed by the configured CA (mutual TLS, no
// token), still accepts the token, and refuses a client with neither.
func TestConformanceClientCert(t *testing.T) {
	dir := t.TempDir()
	srvCert, err := agent.EnsureCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	srvPEM, _ := agent.ReadCert(dir)
	ca, caKey, caPEM := newCA(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	const token = "0123456789abcdef-token"
	opts, err := agent.ServerOptionsClientCerts(srvCert, token, pool)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(append(opts, injector.ServerOption())...)
	injector.NewServer(injector.New(sim.NewEventLoop(), injector.Config{}), 7).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	dial := func(t *testing.T, o []grpc.DialOption) p4v1.P4RuntimeClient {
		conn, err := grpc.NewClient(ln.Addr().String(), o...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return p4v1.NewP4RuntimeClient(conn)
	}
	t.Run("#24.8/client certificate signed by the CA (mutual TLS)", func(t *testing.T) {
		o, err := agent.ClientCertDialOptions(srvPEM, leaf(t, ca, caKey))
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, o)
		if _, err := c.Capabilities(context.Background(), &p4v1.CapabilitiesRequest{}); err != nil {
			t.Fatalf("Capabilities over mutual TLS: %v", err)
		}
		k, a := open(t, c, eid(1))
		if arbCode(a) != codes.OK {
			t.Fatalf("arbitration over mutual TLS: %v", a)
		}
		if err := k.setPipe(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
			t.Errorf("SetForwardingPipelineConfig over mutual TLS: %v", err)
		}
	})
	t.Run("#24.8/token still accepted", func(t *testing.T) {
		o, err := agent.DialOptions(srvPEM, token)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dial(t, o).Capabilities(context.Background(), &p4v1.CapabilitiesRequest{}); err != nil {
			t.Errorf("Capabilities with the token: %v", err)
		}
	})
	t.Run("#24.8/neither certificate nor token refused", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(srvPEM)
		o := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "lumina-agent"}))}
		if _, err := dial(t, o).Capabilities(context.Background(), &p4v1.CapabilitiesRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("Capabilities without credentials: %v, want UNAUTHENTICATED", err)
		}
	})
	t.Run("#24.8/certificate of another CA refused", func(t *testing.T) {
		other, otherKey, _ := newCA(t)
		o, _ := agent.ClientCertDialOptions(srvPEM, leaf(t, other, otherKey))
		if _, err := dial(t, o).Capabilities(context.Background(), &p4v1.CapabilitiesRequest{}); err == nil {
			t.Error("Capabilities with a certificate of an unknown CA succeeded")
		}
	})
	t.Run("#24.8/ReadCertPool", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(p, caPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := agent.ReadCertPool(p); err != nil {
			t.Error(err)
		}
	})
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func leaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "p4runtime-shell"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
