package generator_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/sim"
)

// simBed is two software RNICs on a sim link. Device calls from the control
// goroutines and the event loop are serialized by mu, as the sim testbed
// does.
type simBed struct {
	loop     *sim.EventLoop
	req, rsp *softrnic.NIC
	mu       sync.Mutex
	// wrapReq and wrapRsp, if set, wrap the requester's and the
	// responder's Device (to watch their calls).
	wrapReq, wrapRsp func(generator.Device) generator.Device
}

// device returns d wrapped by wrap, if set.
func device(d generator.Device, wrap func(generator.Device) generator.Device) generator.Device {
	if wrap != nil {
		return wrap(d)
	}
	return d
}

func newSimBed(t *testing.T, reqIPs, rspIPs []string) *simBed {
	b := &simBed{loop: sim.NewEventLoop()}
	n := sim.NewNetwork(b.loop)
	a, z := n.NewLink(sim.LinkConfig{})
	addrs := func(s []string) (out []netip.Addr) {
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	var err error
	if b.req, err = softrnic.New(b.loop, a, softrnic.Config{Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: addrs(reqIPs), Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if b.rsp, err = softrnic.New(b.loop, z, softrnic.Config{Name: "rsp", MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: addrs(rspIPs), Seed: 8}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *simBed) exec(fn func()) { b.mu.Lock(); defer b.mu.Unlock(); fn() }

// run drives a whole test: responder served over a real TCP connection on
// loopback, requester handshake, traffic on the virtual clock, finish.
func (b *simBed) run(t *testing.T, tr generator.Traffic) (*generator.Result, []generator.Connection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type served struct {
		st  *generator.ResponderStats
		err error
	}
	ch := make(chan served, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- served{nil, err}
			return
		}
		defer c.Close()
		st, err := generator.Serve(ctx, generator.ResponderConfig{Device: device(b.rsp.Device(), b.wrapRsp), Exec: b.exec, Verify: true}, c)
		ch <- served{st, err}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var reported []generator.Connection
	r, err := generator.NewRequester(generator.RequesterConfig{
		Device: device(b.req.Device(), b.wrapReq), Clock: b.loop, Exec: b.exec, Traffic: tr,
		After: func(d time.Duration, fn func()) { b.loop.AfterFunc(d, fn) },
		OnConnections: func(_ context.Context, cs []generator.Connection) error {
			reported = append([]generator.Connection(nil), cs...)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Handshake(ctx, conn); err != nil {
		t.Fatal(err)
	}
	r.Start()
	b.exec(func() { b.loop.RunUntil(int64(10 * time.Second)) })
	select {
	case <-r.Done():
	default:
		t.Fatal("traffic did not finish in 10 s of virtual time")
	}
	res, err := r.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := <-ch
	if s.err != nil {
		t.Fatalf("responder: %v", s.err)
	}
	return res, reported
}

func TestGeneratorVerbs(t *testing.T) {
	tests := []generator.Traffic{
		{Verb: generator.VerbWrite, NumQPs: 3, MsgsPerQP: 4, MsgSize: new(10240)},
		{Verb: generator.VerbWrite, NumQPs: 2, MsgsPerQP: 5, MsgSize: new(3000), TxDepth: 3, WithImm: true},
		{Verb: generator.VerbSend, NumQPs: 2, MsgsPerQP: 6, MsgSize: new(2500), Barrier: true},
		{Verb: generator.VerbRead, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(8192), TxDepth: 2},
		{Verb: generator.VerbSendRead, NumQPs: 3, NumReadQPs: 1, MsgsPerQP: 2, MsgSize: new(4096)},
		{Verb: generator.VerbWrite, NumQPs: 1, MsgsPerQP: 1, MsgSize: new(0)},
	}
	for _, tr := range tests {
		t.Run(string(tr.Verb), func(t *testing.T) {
			b := newSimBed(t, []string{"10.0.0.1"}, []string{"10.0.0.2"})
			res, conns := b.run(t, tr)
			if len(res.Errors) != 0 {
				t.Fatalf("errors: %v", res.Errors)
			}
			for _, q := range res.QPs {
				if q.Completed != tr.MsgsPerQP || len(q.MCTNs) != tr.MsgsPerQP {
					t.Errorf("QP %d: %d completions, %d MCTs; want %d", q.Index, q.Completed, len(q.MCTNs), tr.MsgsPerQP)
				}
			}
			if *tr.MsgSize > 0 && !(res.GoodputGbps > 0 && res.GoodputGbps < 100) {
				t.Errorf("goodput %v Gb/s, want in (0, 100)", res.GoodputGbps)
			}
			if !res.Responder.Verified {
				t.Errorf("responder memory not verified: %+v", res.Responder)
			}
			if len(conns) != tr.NumQPs || conns[0].Requester.IP.String() != "10.0.0.1" || conns[0].Responder.IP.String() != "10.0.0.2" ||
				conns[0].Requester.QPN == 0 || conns[0].Responder.QPN == 0 {
				t.Errorf("reported connections %+v", conns)
			}
		})
	}
}

func TestGeneratorMultiGID(t *testing.T) {
	b := newSimBed(t, []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"}, []string{"10.0.0.1"})
	_, conns := b.run(t, generator.Traffic{NumQPs: 4, MultiGID: true, MsgSize: new(1024)})
	want := []string{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.11"}
	for i, c := range conns {
		if c.Requester.IP.String() != want[i] || c.Responder.IP.String() != "10.0.0.1" {
			t.Errorf("connection %d: %s → %s, want %s → 10.0.0.1", i, c.Requester.IP, c.Responder.IP, want[i])
		}
	}
}

func TestGeneratorControlPlaneRefuses(t *testing.T) {
	b := newSimBed(t, []string{"10.0.0.1"}, []string{"10.0.0.2"})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		_, err = generator.Serve(context.Background(), generator.ResponderConfig{Device: b.rsp.Device(), Exec: b.exec}, c)
		errc <- err
	}()
	conn, _ := net.Dial("tcp", ln.Addr().String())
	r, _ := generator.NewRequester(generator.RequesterConfig{Device: b.req.Device(), Clock: b.loop, Exec: b.exec,
		OnConnections: func(context.Context, []generator.Connection) error { return context.DeadlineExceeded }})
	if _, err := r.Handshake(context.Background(), conn); err == nil {
		t.Fatal("handshake succeeded although the control plane refused")
	}
	if err := <-errc; err == nil {
		t.Error("responder did not see the abort")
	}
}

// TestAuthenticate: the first line must be {"auth": secret}; what follows
// it is left for Serve; anything else is refused.
func TestAuthenticate(t *testing.T) {
	const secret = "0123456789abcdef-s"
	long := `{"auth":"` + strings.Repeat("x", 2000) + `"}` + "\n"
	for _, tc := range []struct {
		name, secret, sent string
		ok                 bool
	}{
		{"right secret", secret, `{"auth":"` + secret + `"}` + "\nNEXT", true},
		{"wrong secret", secret, `{"auth":"0123456789abcdef-t"}` + "\n", false},
		{"hello first", secret, `{"hello":{"version":1}}` + "\n", false},
		{"not JSON", secret, "hello\n", false},
		{"line too long", secret, long, false},
		{"empty secret configured", "", `{"auth":""}` + "\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			go a.Write([]byte(tc.sent))
			err := generator.Authenticate(b, tc.secret, time.Now().Add(5*time.Second))
			if (err == nil) != tc.ok {
				t.Fatalf("Authenticate(%.30q) = %v, want ok %v", tc.sent, err, tc.ok)
			}
			if tc.ok {
				rest := make([]byte, 4)
				if _, err := io.ReadFull(b, rest); err != nil || string(rest) != "NEXT" {
					t.Errorf("after Authenticate the connection reads %q, %v; want NEXT", rest, err)
				}
			}
		})
	}
}
