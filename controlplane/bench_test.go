package controlplane_test

import (
	"context"
	"fmt"
	"github.com/netlumina/lumina/roce"
	"net/netip"
	"testing"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
)

// manyConns returns n write connections with distinct QPNs.
func manyConns(n int) []generator.Connection {
	cs := make([]generator.Connection, n)
	for i := range cs {
		cs[i] = generator.Connection{Index: i, Verb: generator.VerbWrite,
			Requester: generator.Endpoint{IP: reqIP, MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: uint32(0x1000 + i), IPSN: uint32(0xFFFF00+i) & 0xFFFFFF},
			Responder: generator.Endpoint{IP: rspIP, MAC: roce.MAC{2, 0, 0, 0, 0, 2}, QPN: uint32(0x2000 + i), IPSN: uint32(i)}}
	}
	return cs
}

func manyEvents(qps, perQP int) []config.ExpandedEvent {
	var ev []config.ExpandedEvent
	for q := range qps {
		for k := range perQP {
			ev = append(ev, config.ExpandedEvent{QP: q, RelPSN: k, PSN: k, Iter: 1, Type: config.EventDrop})
		}
	}
	return ev
}

// BenchmarkMetadataToReady: 512 QPs × 10 events, from the connection list
// to every entry installed on the software target over gRPC (Translate +
// batched Write of 512 conn entries, 1024 register writes, 5120 events).
func BenchmarkMetadataToReady(b *testing.B) {
	t := &testing.T{}
	r := newRig(t, 1, 1)
	conns, ev := manyConns(512), manyEvents(512, 10)
	ports := controlplane.Ports{
		Hosts: []controlplane.Host{{Name: "requester", Port: 1, MAC: reqMAC, IPs: []netip.Addr{reqIP}},
			{Name: "responder", Port: 2, MAC: rspMAC, IPs: []netip.Addr{rspIP}}}, Dumpers: r.dumpers}
	ctx := context.Background()
	b.ReportAllocs()
	var entries int
	for b.Loop() {
		if err := r.cp.Cleanup(ctx); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var plan *controlplane.Plan
		if err := controlplane.Intake(r.cp, controlplane.Intent{Events: ev}, ports, func(p *controlplane.Plan) { plan = p })(ctx, conns); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/ready")
		entries = len(plan.Events)
	}
	b.ReportMetric(float64(entries), "events")
}

// BenchmarkEventInstall measures batched event-entry installation rate.
func BenchmarkEventInstall(b *testing.B) {
	for _, batch := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			t := &testing.T{}
			r := newRig(t, 1)
			r.cp.BatchSize = batch
			n := 10000
			if batch == 1 {
				n = 1000
			}
			ev := manyEvents(1, n)
			ports := controlplane.Ports{
				Hosts: []controlplane.Host{{Name: "requester", Port: 1, MAC: reqMAC, IPs: []netip.Addr{reqIP}},
					{Name: "responder", Port: 2, MAC: rspMAC, IPs: []netip.Addr{rspIP}}}, Dumpers: r.dumpers}
			plan, err := controlplane.Translate(controlplane.Intent{Events: ev}, manyConns(1), ports)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var total time.Duration
			for b.Loop() {
				if err := r.cp.Cleanup(ctx); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := r.cp.Install(ctx, plan); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "entries/s")
		})
	}
}

// BenchmarkPipeline: frames per second through the software switch in sim
// (requester link → pipeline with connection tracking, an event lookup and
// a mirror copy → responder and dumper links).
func BenchmarkPipeline(b *testing.B) {
	t := &testing.T{}
	r := newRig(t, 1, 1)
	r.install(controlplane.Intent{Events: manyEvents(1, 100)}, manyConns(1))
	r.dumps[0], r.dumps[1] = nil, nil
	frames := make([][]byte, 64)
	for i := range frames {
		f := writePkt(0, 0)
		f.DestQP, f.PSN, f.Opcode = 0x2000, 0xFFFF00+1000+roce.PSN(i), roce.RCWriteMiddle
		frames[i], _ = f.Append(nil)
	}
	r.rsp.SetReceiver(func([]byte) {})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.req.Send(frames[i&63])
		r.loop.Run()
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}
