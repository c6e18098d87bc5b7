package injector_test

import (
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/sim"
)

// TestReadDoesNotStallPipeline (#17.12): a wildcard Read of a full switch
// sorts, encodes and sends its answer without the switch mutex, which the
// packet pipeline takes for every frame: while the read encodes (a hook
// stops it there), the mutex is free and frames are processed. Before the
// fix the whole answer was sorted and encoded under the mutex, and every
// frame arriving meanwhile waited for it (150–520 ms for 82k entries).
func TestReadDoesNotStallPipeline(t *testing.T) {
	sw := injector.New(sim.NewEventLoop(), injector.Config{})
	in := &fakePort{name: "p1"}
	if err := sw.AddPort(1, in); err != nil {
		t.Fatal(err)
	}
	c := servePrimary(t, sw)

	// Fill Ingress.event_table (65536) and Ingress.conn_lookup (16384).
	exact := func(vs ...uint64) []*p4v1.FieldMatch {
		var m []*p4v1.FieldMatch
		for i, v := range vs {
			b := []byte{byte(v >> 16), byte(v >> 8), byte(v)}
			m = append(m, &p4v1.FieldMatch{FieldId: uint32(i + 1), FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: b}}})
		}
		return m
	}
	noAction := &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000001}}}
	insert := func(table uint32, keys ...uint64) *p4v1.Update {
		return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: table, Match: exact(keys...), Action: noAction}}}}
	}
	var ups []*p4v1.Update
	flush := func() {
		if err := c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, ups...); err != nil {
			t.Fatal(err)
		}
		ups = ups[:0]
	}
	for i := range uint64(8192) {
		ups = append(ups, insert(0x02000004, 1, 0x100+i>>12, i&0xfff, 1))
		if len(ups) == 4096 {
			flush()
		}
	}
	for i := range uint64(4096) {
		ups = append(ups, insert(0x02000003, 1+i>>12, i&0xfff))
		if len(ups) == 4096 {
			flush()
		}
	}
	flush()
	const total = 8192 + 4096

	frame := rocePacket(t, 7)
	var free, processed bool
	injector.SetReadEncodeHook(func(sw *injector.Switch) {
		free = sw.MutexFree()
		before := sw.Stats().Frames
		in.recv(frame) // the pipeline runs now, in the middle of the read
		processed = sw.Stats().Frames == before+1
	})
	t.Cleanup(func() { injector.SetReadEncodeHook(nil) })
	all, err := c.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all); n != total {
		t.Fatalf("wildcard read returned %d entities, want %d", n, total)
	}
	if !free || !processed {
		t.Errorf("while the read encoded: switch mutex free %v, a frame processed %v; want both", free, processed)
	}
}
