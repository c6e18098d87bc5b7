package generator_test

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/sim"
)

// fakeDevice is a Device that only keeps its completion handler.
type fakeDevice struct {
	generator.Device
	handler func(generator.Completion)
}

func (d *fakeDevice) SetCompletionHandler(fn func(generator.Completion)) { d.handler = fn }

// TestMuxDispatch: a Mux hands each completion to the handler of its QP,
// and those of QPs without one to SetCompletionHandler's (or drops them).
func TestMuxDispatch(t *testing.T) {
	dev := &fakeDevice{}
	m := generator.NewMux(dev)
	got := map[string][]uint64{}
	on := func(name string) func(generator.Completion) {
		return func(c generator.Completion) { got[name] = append(got[name], c.WRID) }
	}
	m.HandleQP(0x11, on("a"))
	m.HandleQP(0x22, on("b"))
	deliver := func(qpn uint32, wrid uint64) { dev.handler(generator.Completion{QPN: qpn, WRID: wrid}) }
	deliver(0x11, 1)
	deliver(0x22, 2)
	deliver(0x33, 3) // no handler, no fallback: dropped
	m.SetCompletionHandler(on("other"))
	deliver(0x33, 4)
	deliver(0x11, 5)
	m.HandleQP(0x11, nil) // removed: to the fallback
	deliver(0x11, 6)
	want := map[string][]uint64{"a": {1, 5}, "b": {2}, "other": {4, 6}}
	for name, w := range want {
		if g := got[name]; !equalU64(g, w) {
			t.Errorf("handler %s got WRIDs %v, want %v", name, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("handlers called: %v, want only %v", got, want)
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMuxTwoRolesPerNIC (#30): two RNICs on one link, each requester of
// one flow and responder of the other at once (A SENDs to B while B READs
// from A), each through a Mux. Every message of both flows completes with
// its bytes, and each responder counts only its own flow's receives.
// (With the device's one completion handler, the role set up last took
// every completion and the other requester never finished.)
func TestMuxTwoRolesPerNIC(t *testing.T) {
	loop := sim.NewEventLoop()
	pa, pb := sim.NewNetwork(loop).NewLink(sim.LinkConfig{})
	nicA, err := softrnic.New(loop, pa, softrnic.Config{Name: "a", MAC: [6]byte{2, 0, 0, 0, 0, 0xa}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	nicB, err := softrnic.New(loop, pb, softrnic.Config{Name: "b", MAC: [6]byte{2, 0, 0, 0, 0, 0xb}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	exec := func(fn func()) { mu.Lock(); defer mu.Unlock(); fn() }
	var devA, devB *generator.Mux
	exec(func() { devA, devB = generator.NewMux(nicA.Device()), generator.NewMux(nicB.Device()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	flows := []struct {
		name     string
		from, to *generator.Mux
		tr       generator.Traffic
		recvs    int // the responder's receive completions
	}{
		{"a→b send", devA, devB, generator.Traffic{Verb: generator.VerbSend, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(4096), TxDepth: 2}, 6},
		{"b→a read", devB, devA, generator.Traffic{Verb: generator.VerbRead, NumQPs: 1, MsgsPerQP: 4, MsgSize: new(8192)}, 0},
	}
	reqs := make([]*generator.Requester, len(flows))
	served := make([]chan *generator.ResponderStats, len(flows))
	for i, f := range flows {
		c1, c2 := net.Pipe()
		defer c1.Close()
		defer c2.Close()
		served[i] = make(chan *generator.ResponderStats, 1)
		go func() {
			st, err := generator.Serve(ctx, generator.ResponderConfig{Device: f.to, Exec: exec, Verify: true}, c2)
			if err != nil {
				t.Errorf("%s: Serve: %v", f.name, err)
			}
			served[i] <- st
		}()
		if reqs[i], err = generator.NewRequester(generator.RequesterConfig{Device: f.from, Clock: loop, Exec: exec, Traffic: f.tr}); err != nil {
			t.Fatal(err)
		}
		if _, err := reqs[i].Handshake(ctx, c1); err != nil {
			t.Fatalf("%s: Handshake: %v", f.name, err)
		}
	}
	for _, r := range reqs {
		r.Start()
	}
	exec(func() { loop.RunUntil(int64(time.Second)) })
	for i, f := range flows {
		select {
		case <-reqs[i].Done():
		default:
			t.Errorf("%s: requester not done after 1 s of virtual time", f.name)
		}
		res, err := reqs[i].Finish(ctx)
		if err != nil {
			t.Fatalf("%s: Finish: %v", f.name, err)
		}
		want := int64(f.tr.NumQPs * f.tr.MsgsPerQP * *f.tr.MsgSize)
		if res.Bytes != want || len(res.Errors) != 0 {
			t.Errorf("%s: %d bytes, errors %v; want %d bytes, no errors", f.name, res.Bytes, res.Errors, want)
		}
		for _, q := range res.QPs {
			if q.Completed != f.tr.MsgsPerQP || len(q.MCTNs) != f.tr.MsgsPerQP {
				t.Errorf("%s: QP %d completed %d (%d MCTs), want %d", f.name, q.Index, q.Completed, len(q.MCTNs), f.tr.MsgsPerQP)
			}
		}
		st := <-served[i]
		if st == nil || st.RecvCompletions != f.recvs || st.RecvErrors != 0 || !st.Verified {
			t.Errorf("%s: responder stats %+v, want %d receive completions, none failed, verified", f.name, st, f.recvs)
		}
	}
}
