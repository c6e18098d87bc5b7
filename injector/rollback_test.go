package injector_test

import (
	"fmt"
	"slices"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/p4src"
)

// Issue #38, point 13: a ROLLBACK_ON_ERROR batch that fails restores
// exactly the entries, cells and clone sessions it had changed, and what
// it saves to do so follows the batch (6 entries and cells here), not the
// switch's state (10 or 1000 entries installed): counted, not timed.
func TestRollbackProportional(t *testing.T) {
	var saved []int
	injector.SetUndoHook(func(n int) { saved = append(saved, n) })
	t.Cleanup(func() { injector.SetUndoHook(nil) })
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			addr := startServer(t)
			c, code := connect(t, addr, 1)
			if code != codes.OK {
				t.Fatalf("arbitration %v, want OK", code)
			}
			info, _ := p4src.P4Info()
			if err := c.setPipeline(info); err != nil {
				t.Fatal(err)
			}
			mac := func(i int) []byte { return []byte{2, 0, 0, 0, byte(i >> 8), byte(i)} }
			var ups []*p4v1.Update
			for i := range n {
				ups = append(ups, fwdEntry(mac(i), []byte{byte(i % 7)}))
			}
			if err := c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, ups...); err != nil {
				t.Fatal(err)
			}
			clone := func(typ p4v1.Update_Type, port uint32) *p4v1.Update {
				return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
					Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: 5,
						Replicas: []*p4v1.Replica{{EgressPort: port, Instance: 1}}}}}}}}
			}
			if err := c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, clone(p4v1.Update_INSERT, 3)); err != nil {
				t.Fatal(err)
			}
			before := dumpState(t, c)

			modify := fwdEntry(mac(0), []byte{9})
			modify.Type = p4v1.Update_MODIFY
			del := fwdEntry(mac(1), []byte{1})
			del.Type = p4v1.Update_DELETE
			reg := &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
				RegisterId: 0x16000001, Index: &p4v1.Index{Index: 3}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{0, 0xff, 0xff, 0xfe}}}}}}}
			ctr := &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
				CounterId: 0x12000001, Index: &p4v1.Index{Index: 4}, Data: &p4v1.CounterData{PacketCount: 77, ByteCount: 7777}}}}}
			tooWide := fwdEntry([]byte{1, 0, 0, 0, 0, 0, 0}, []byte{1})
			saved = nil
			err := c.write(p4v1.WriteRequest_ROLLBACK_ON_ERROR, modify, del, fwdEntry([]byte{0xBB}, []byte{1}), reg, ctr, clone(p4v1.Update_MODIFY, 4), tooWide)
			want := []codes.Code{codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.InvalidArgument}
			if got := updateCodes(t, err); !slices.Equal(got, want) {
				t.Errorf("rollback batch codes %v, want %v", got, want)
			}
			if after := dumpState(t, c); after != before {
				t.Errorf("state after the rolled-back batch differs from before:\n%s\nwant\n%s", after, before)
			}
			if !slices.Equal(saved, []int{6}) {
				t.Errorf("saved for rollback %v, want [6] (the batch's entries and cells, whatever the table holds)", saved)
			}
		})
	}
}

// dumpState reads every table entry, the register and counter cells the
// test changes and the clone sessions, as sorted text.
func dumpState(t *testing.T, c *p4c) string {
	t.Helper()
	var lines []string
	for _, e := range []*p4v1.Entity{
		{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}},
		{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: 0x16000001}}},
		{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: 0x12000001}}},
		{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{}}}}},
	} {
		got, err := c.read(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			lines = append(lines, prototext.MarshalOptions{}.Format(g))
		}
	}
	slices.Sort(lines)
	return fmt.Sprint(len(lines), " entities\n", lines)
}
