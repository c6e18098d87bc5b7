package agent

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/sim"
)

// TestServeNeedsSecret (#38.4): the responder's control listener (Serve,
// on a real TCP listener) is reached first by strangers — one that sends
// a hello without the secret, one with a wrong secret, one that sends
// nothing — and still hands its handshake to the requester that presents
// the secret, whose test then runs to the end. (Before, Serve took the
// first connection and closed its listener: the stranger took the
// handshake and the requester's connection was refused.)
func TestServeNeedsSecret(t *testing.T) {
	loop := sim.NewEventLoop()
	n := sim.NewNetwork(loop)
	pa, pz := n.NewLink(sim.LinkConfig{})
	req, err := softrnic.New(loop, pa, softrnic.Config{Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 1}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := softrnic.New(loop, pz, softrnic.Config{Name: "rsp", MAC: [6]byte{2, 0, 0, 0, 0, 2}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // serializes device calls, as the sim testbed does
	exec := func(fn func()) { mu.Lock(); defer mu.Unlock(); fn() }
	a := &Agent{dev: rsp.Device(), exec: exec, loop: loop}
	defer a.Close()
	const secret = "0123456789abcdef-responder"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := (generatorSvc{Agent: a}).Serve(ctx, &luminav1.ServeRequest{ListenAddr: "127.0.0.1:0", Token: "short"}); err == nil {
		t.Error("Serve with a 5-character token succeeded, want an error")
	}
	sr, err := (generatorSvc{Agent: a}).Serve(ctx, &luminav1.ServeRequest{ListenAddr: "127.0.0.1:0", Token: secret})
	if err != nil {
		t.Fatal(err)
	}
	tr := generator.Traffic{Verb: generator.VerbWrite, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(4096)}
	// The strangers, in order, each done before the next.
	for _, first := range []string{
		`{"hello":{"version":1,"traffic":{"verb":"write","num_qps":1},"qps":[{"ip":"10.0.0.9","mac":"02:00:00:00:00:09","qpn":5,"ipsn":1}]}}` + "\n",
		`{"auth":"fedcba9876543210-wrong"}` + "\n",
		"",
	} {
		c, err := net.Dial("tcp", sr.GetAddr())
		if err != nil {
			t.Fatalf("stranger: %v", err)
		}
		defer c.Close()
		if first != "" {
			c.Write([]byte(first))
			// The responder closes a stranger: it reads EOF (not a ready).
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if b, err := c.Read(make([]byte, 256)); err == nil {
				t.Errorf("the responder answered a stranger's %.20q… with %d bytes, want it closed", first, b)
			}
		}
	}
	conn, err := net.Dial("tcp", sr.GetAddr())
	if err != nil {
		t.Fatalf("requester: %v", err)
	}
	defer conn.Close()
	r, err := generator.NewRequester(generator.RequesterConfig{Device: req.Device(), Clock: loop, Exec: exec, Traffic: tr, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Handshake(ctx, conn); err != nil {
		t.Fatalf("the requester's handshake after strangers: %v", err)
	}
	r.Start()
	exec(func() { loop.RunUntil(int64(10 * time.Second)) })
	res, err := r.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Responder == nil || !res.Responder.Verified || res.Bytes != int64(tr.NumQPs*tr.MsgsPerQP**tr.MsgSize) {
		t.Errorf("result: %d bytes, responder %+v; want %d bytes and the responder's memory verified", res.Bytes, res.Responder, tr.NumQPs*tr.MsgsPerQP**tr.MsgSize)
	}
}
