package injector_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/p4src"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// fakePort records what the switch sends and lets the test deliver frames.
type fakePort struct {
	name string
	recv func([]byte)
	sent [][]byte
}

func (p *fakePort) Send(f []byte)               { p.sent = append(p.sent, append([]byte(nil), f...)) }
func (p *fakePort) SetReceiver(fn func([]byte)) { p.recv = fn }
func (p *fakePort) Name() string                { return p.name }

// fakeTimedPort is a sim.TimedPort whose frames arrive at times the test
// chooses.
type fakeTimedPort struct {
	fakePort
	timedRecv func([]byte, int64)
}

func (p *fakeTimedPort) SetTimedReceiver(fn func([]byte, int64)) { p.timedRecv = fn }

var _ sim.TimedPort = (*fakeTimedPort)(nil)

// mirrorRig is a switch on an EventLoop, programmed over P4Runtime to
// mirror every RoCE packet to port 10.
type mirrorRig struct {
	loop   *sim.EventLoop
	sw     *injector.Switch
	dumper *fakePort
}

func newMirrorRig(t *testing.T, ports map[uint32]sim.Port) *mirrorRig {
	t.Helper()
	r := &mirrorRig{loop: sim.NewEventLoop(), dumper: &fakePort{name: "dumper"}}
	r.sw = injector.New(r.loop, injector.Config{Seed: 1})
	ports[10] = r.dumper
	for id, p := range ports {
		if err := r.sw.AddPort(id, p); err != nil {
			t.Fatal(err)
		}
	}
	c := servePrimary(t, r.sw)
	exact := func(v []byte) []*p4v1.FieldMatch {
		return []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}}
	}
	mirrorSelect := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: 0x02000006, Match: exact([]byte{0}), // Ingress.mirror_select, slot 0
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x0100000a, // set_mirror(session 1)
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{1}}}}}}}}}}
	session := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
		PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
			CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: 1, Replicas: []*p4v1.Replica{{EgressPort: 10, Instance: 1}}}}}}}}
	if err := c.write(p4v1.WriteRequest_CONTINUE_ON_ERROR, mirrorSelect, session); err != nil {
		t.Fatal(err)
	}
	return r
}

func rocePacket(t *testing.T, psn roce.PSN) []byte {
	t.Helper()
	spec := roce.FrameSpec{SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		Opcode: roce.RCWriteOnly, DestQP: 0x222, PSN: psn, RETH: roce.RETHFields{VA: 0x1000, RKey: 1, Length: 64},
		Payload: make([]byte, 64)}
	b, err := spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mirrorMeta returns the (sequence, timestamp) of each mirror copy.
func (r *mirrorRig) mirrorMeta() (seqs, stamps []uint64) {
	mac48 := func(b []byte) uint64 {
		return uint64(binary.BigEndian.Uint16(b))<<32 | uint64(binary.BigEndian.Uint32(b[2:]))
	}
	for _, f := range r.dumper.sent {
		stamps = append(stamps, mac48(f[0:6]))
		seqs = append(seqs, mac48(f[6:12]))
	}
	return seqs, stamps
}

// TestMirrorTimestampsFromArrival delivers packets on two timed ports with
// arrival times that are out of order across the ports: each mirror
// timestamp is its packet's arrival, raised to the previous timestamp when
// that is later, and Timing reports how late the pipeline ran and the
// largest raise.
func TestMirrorTimestampsFromArrival(t *testing.T) {
	p1, p2 := &fakeTimedPort{fakePort: fakePort{name: "p1"}}, &fakeTimedPort{fakePort: fakePort{name: "p2"}}
	r := newMirrorRig(t, map[uint32]sim.Port{1: p1, 2: p2})
	if p1.timedRecv == nil || p1.recv != nil {
		t.Fatal("AddPort of a TimedPort did not use SetTimedReceiver")
	}
	deliveries := []struct {
		port      *fakeTimedPort
		procNs    int64 // loop time of processing
		rxNs      int64 // arrival
		wantStamp uint64
	}{
		{p1, 1_000_000, 900_000, 900_000},     // late 100 µs
		{p2, 1_000_000, 950_000, 950_000},     // late 50 µs
		{p1, 1_200_000, 920_000, 950_000},     // arrived before the previous one: clamp 30 µs, late 280 µs
		{p2, 1_200_000, 1_100_000, 1_100_000}, // late 100 µs
		{p1, 1_300_000, 1_000_000, 1_100_000}, // clamp 100 µs, late 300 µs
		{p1, 2_000_000, 1_999_000, 1_999_000}, // late 1 µs
	}
	for i, d := range deliveries {
		frame := rocePacket(t, roce.PSN(i))
		r.loop.AfterFunc(time.Duration(d.procNs), func() { d.port.timedRecv(frame, d.rxNs) })
	}
	r.loop.Run()
	seqs, stamps := r.mirrorMeta()
	if len(stamps) != len(deliveries) {
		t.Fatalf("%d mirror copies, want %d", len(stamps), len(deliveries))
	}
	for i, d := range deliveries {
		if seqs[i] != uint64(i+1) || stamps[i] != d.wantStamp {
			t.Errorf("mirror copy %d: seq %d, timestamp %d; want %d, %d", i, seqs[i], stamps[i], i+1, d.wantStamp)
		}
		if i > 0 && stamps[i] < stamps[i-1] {
			t.Errorf("mirror copy %d: timestamp %d before the previous %d", i, stamps[i], stamps[i-1])
		}
	}
	got := r.sw.Timing()
	// Lateness sorted: 1, 50, 100, 100, 280, 300 µs. Nearest rank: p50 is
	// the 3rd (100 µs), p99 the 6th (300 µs, the max).
	wantP50 := 100 * time.Microsecond
	if got.Frames != 6 || got.LateMax != 300*time.Microsecond || got.LateP99 != 300*time.Microsecond || got.ClampMax != 100*time.Microsecond ||
		got.LateP50 < wantP50 || got.LateP50 > wantP50+wantP50/16 {
		t.Errorf("Timing() = %+v, want Frames 6, LateP50 100µs (+1/16), LateP99 300µs, LateMax 300µs, ClampMax 100µs", got)
	}
}

// TestMirrorTimestampsUntimedPort: on a plain Port (a sim link) the
// timestamp is the loop's time at processing, as before TimedPort, and
// Timing stays zero.
func TestMirrorTimestampsUntimedPort(t *testing.T) {
	p1 := &fakePort{name: "p1"}
	r := newMirrorRig(t, map[uint32]sim.Port{1: p1})
	procs := []int64{1_000, 1_000, 5_000, 7_500}
	for i, at := range procs {
		frame := rocePacket(t, roce.PSN(i))
		r.loop.AfterFunc(time.Duration(at), func() { p1.recv(frame) })
	}
	r.loop.Run()
	_, stamps := r.mirrorMeta()
	if len(stamps) != len(procs) {
		t.Fatalf("%d mirror copies, want %d", len(stamps), len(procs))
	}
	for i, at := range procs {
		if stamps[i] != uint64(at) {
			t.Errorf("mirror copy %d: timestamp %d, want the loop time %d", i, stamps[i], at)
		}
	}
	if got := r.sw.Timing(); got != (injector.Timing{}) {
		t.Errorf("Timing() = %+v, want zero on untimed ports", got)
	}
}

// servePrimary serves sw's P4Runtime on loopback and returns a client that
// is primary and has pushed lumina's P4Info.
func servePrimary(t *testing.T, sw *injector.Switch) *p4c {
	t.Helper()
	g := grpc.NewServer(injector.ServerOption())
	injector.NewServer(sw, 7).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	c, code := connect(t, ln.Addr().String(), 1)
	if code != codes.OK {
		t.Fatalf("arbitration %v", code)
	}
	info, _ := p4src.P4Info()
	if err := c.setPipeline(info); err != nil {
		t.Fatal(err)
	}
	return c
}
