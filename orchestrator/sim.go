package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/sim"
)

// collected is what a testbed hands back after traffic.
type collected struct {
	Conns      []generator.Connection
	Plan       *controlplane.Plan
	Generator  *generator.Result
	Switch     *controlplane.Counters
	NICs       map[string]map[string]uint64
	Dumpers    []dumper.Report
	DumperPcap []string
	Personas   map[string]string
	Stopped    string // why traffic stopped early ("" if it completed)
	// Switch ports of the traffic hosts (for the integrity counters).
	ReqPort, RspPort uint32
	// Versions is each traffic host's NIC identity (driver, firmware; the
	// personality for the software RNIC), as its agent reported it.
	Versions map[string]json.RawMessage
}

// runSim runs one repeat on the sim testbed: every component in this
// process on one virtual clock. Control still crosses real sockets on
// loopback: P4Runtime (gRPC) between control plane and injector, the
// generator's TCP control connection.
func runSim(ctx context.Context, t *config.Test, repeat int, dir string, progress func(string)) (*collected, error) {
	loop := sim.NewEventLoop()
	net0 := sim.NewNetwork(loop)
	var mu sync.Mutex // serializes device calls from control goroutines with the event loop
	exec := func(fn func()) { mu.Lock(); defer mu.Unlock(); fn() }
	out := &collected{NICs: map[string]map[string]uint64{}, Personas: map[string]string{}, ReqPort: portRequester, RspPort: portResponder}

	reqP, err := personality(t, t.Requester)
	if err != nil {
		return nil, errorf("requester personality: %w", err)
	}
	rspP, err := personality(t, t.Responder)
	if err != nil {
		return nil, errorf("responder personality: %w", err)
	}
	out.Personas["requester"], out.Personas["responder"] = reqP.Name, rspP.Name
	out.Versions = map[string]json.RawMessage{}
	for role, p := range map[string]string{"requester": reqP.Name, "responder": rspP.Name} {
		out.Versions[role], _ = json.Marshal(map[string]string{"personality": p, "driver": "lumina softrnic"})
	}

	// The switch and its P4Runtime server.
	progress("injector: start software switch, P4Runtime on loopback")
	sw := injector.New(loop, injector.Config{Seed: seedFor(t, repeat, "switch")})
	g := grpc.NewServer()
	injector.NewServer(sw, 0).Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errorf("listening for P4Runtime: %w", err)
	}
	go g.Serve(ln)
	defer g.Stop()

	link := func(name string, gbps float64) (host, swp *sim.Endpoint) {
		return net0.NewLink(sim.LinkConfig{Name: name, BandwidthBps: int64(gbps * 1e9)})
	}
	reqHost, reqSw := link("requester", reqP.LineRateGbps)
	rspHost, rspSw := link("responder", rspP.LineRateGbps)
	if err := sw.AddPort(portRequester, reqSw); err != nil {
		return nil, err
	}
	if err := sw.AddPort(portResponder, rspSw); err != nil {
		return nil, err
	}

	// Dumpers.
	progress(fmt.Sprintf("dumpers: start %d (sim backend)", len(t.Dumpers)))
	var dumpers []*dumper.Dumper
	var dports []controlplane.Dumper
	for i, d := range t.Dumpers {
		host, swp := link(d.Name, 400)
		if err := sw.AddPort(uint32(portDumper0+i), swp); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "dumpers", d.DumpFilename)
		dp, err := dumper.New(dumper.Config{Name: d.Name, Backend: "sim", SimPort: host, Workers: d.Workers, SnapLen: d.SnapLen,
			Capacity: d.NumPkts, MirrorPort: uint16(t.RewriteUDPDstPort), OutPath: path})
		if err != nil {
			return nil, errorf("dumper %s: %w", d.Name, err)
		}
		if err := dp.Start(ctx); err != nil {
			return nil, errorf("dumper %s: %w", d.Name, err)
		}
		dumpers = append(dumpers, dp)
		dports = append(dports, controlplane.Dumper{Name: d.Name, Port: uint32(portDumper0 + i), MAC: macDumper(i), Weight: d.Weight})
		out.DumperPcap = append(out.DumperPcap, path)
	}
	stopDumpers := func() {
		for _, dp := range dumpers {
			r, err := dp.Stop()
			if err != nil {
				r.Name = dp.Config().Name
			}
			out.Dumpers = append(out.Dumpers, r)
		}
		dumpers = nil
	}
	defer stopDumpers()

	// Control plane: arbitrate, push the pipeline.
	progress("control plane: connect, push pipeline")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cp, err := controlplane.Dial(cctx, ln.Addr().String(), controlplane.DialOptions{})
	if err != nil {
		return nil, err
	}
	defer cp.Close()
	if err := cp.SetPipeline(cctx, nil, uint64(repeat+1)); err != nil {
		return nil, err
	}

	// NICs.
	reqIPs, rspIPs := hostIPs(t.Requester, "10.0.0.1"), hostIPs(t.Responder, "10.0.0.2")
	reqNIC, err := softrnic.New(loop, reqHost, nicConfig("requester", macRequester, reqIPs, reqP, t.Requester, seedFor(t, repeat, "requester")))
	if err != nil {
		return nil, err
	}
	rspNIC, err := softrnic.New(loop, rspHost, nicConfig("responder", macResponder, rspIPs, rspP, t.Responder, seedFor(t, repeat, "responder")))
	if err != nil {
		return nil, err
	}

	// Generator: responder served over TCP, requester handshake, metadata
	// to the control plane, then traffic.
	progress("generator: responder, requester, metadata handshake")
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errorf("generator listener: %w", err)
	}
	defer gl.Close()
	type served struct {
		st  *generator.ResponderStats
		err error
	}
	rspDone := make(chan served, 1)
	go func() {
		c, err := gl.Accept()
		if err != nil {
			rspDone <- served{nil, err}
			return
		}
		defer c.Close()
		st, err := generator.Serve(ctx, generator.ResponderConfig{Device: rspNIC.Device(), Exec: exec, Verify: true}, c)
		rspDone <- served{st, err}
	}()
	conn, err := net.Dial("tcp", gl.Addr().String())
	if err != nil {
		return nil, errorf("generator control connection: %w", err)
	}
	defer conn.Close()
	ports := controlplane.Ports{
		Requester: controlplane.Host{Port: portRequester, MAC: macRequester, IPs: reqIPs},
		Responder: controlplane.Host{Port: portResponder, MAC: macResponder, IPs: rspIPs},
		Dumpers:   dports,
	}
	intent := controlplane.Intent{Events: t.ExpandEvents(), IterScope: t.IterScope, MirrorPort: uint16(t.RewriteUDPDstPort)}
	req, err := generator.NewRequester(generator.RequesterConfig{
		Device: reqNIC.Device(), Clock: loop, Exec: exec, Traffic: traffic(t),
		OnConnections: controlplane.Intake(cp, intent, ports, func(p *controlplane.Plan) { out.Plan = p }),
	})
	if err != nil {
		return nil, err
	}
	hctx, hcancel := context.WithTimeout(ctx, 60*time.Second)
	defer hcancel()
	if out.Conns, err = req.Handshake(hctx, conn); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("control plane: %d connections, %d event entries installed", len(out.Conns), len(out.Plan.Events)))

	// Traffic on the virtual clock.
	limit := trafficDeadline(t)
	progress(fmt.Sprintf("traffic: run (virtual time limit %v)", limit))
	req.Start()
	start := time.Now()
	exec(func() {
		for loop.Pending() > 0 && loop.Now() < int64(limit) {
			if ctx.Err() != nil {
				return
			}
			loop.RunUntil(min(loop.Now()+int64(100*time.Millisecond), int64(limit)))
		}
	})
	select {
	case <-req.Done():
		progress(fmt.Sprintf("traffic: done at %v virtual (%v wall)", time.Duration(loop.Now()), time.Since(start).Round(time.Millisecond)))
	default:
		out.Stopped = fmt.Sprintf("traffic did not complete within %v of virtual time", limit)
		if ctx.Err() != nil {
			out.Stopped = "interrupted: " + ctx.Err().Error()
		}
		progress("traffic: " + out.Stopped)
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	res, err := req.Finish(fctx)
	out.Generator = res
	if err != nil && out.Stopped == "" {
		return out, err
	}
	if s := <-rspDone; s.err != nil && out.Stopped == "" {
		return out, errorf("responder: %w", s.err)
	}

	// Collect: switch counters, NIC counters, dumps.
	progress("collect: switch and NIC counters, stop dumpers")
	if out.Switch, err = cp.ReadCounters(fctx); err != nil {
		return out, err
	}
	exec(func() {
		out.NICs["requester"] = reqNIC.Counters().Map()
		out.NICs["responder"] = rspNIC.Counters().Map()
	})
	stopDumpers()
	return out, nil
}
