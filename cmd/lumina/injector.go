package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/orchestrator/agent"
	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	"github.com/netlumina/lumina/p4src/tofino/bfrt/bfrtfake"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/sim"
)

// portFlags collects --port N=IFACE.
type portFlags map[uint32]string

func (p portFlags) String() string { return fmt.Sprint(map[uint32]string(p)) }
func (p portFlags) Set(s string) error {
	n, ifname, ok := strings.Cut(s, "=")
	id, err := strconv.ParseUint(n, 10, 32)
	if !ok || err != nil || id > 511 || ifname == "" {
		return fmt.Errorf("want PORT=INTERFACE with PORT 0..511, got %q", s)
	}
	if _, dup := p[uint32(id)]; dup {
		return fmt.Errorf("port %d given twice", id)
	}
	p[uint32(id)] = ifname
	return nil
}

// injectorFlags: lumina injector.
type injectorFlags struct {
	listen, tokenFile, tlsDir, clientCA string
	ports                               portFlags
	device                              uint64
	bfrt                                string
	slowdown                            int
}

func (f *injectorFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", ":9559", "P4Runtime `address`: host:port or unix:///path.sock")
	f.ports = portFlags{}
	fs.Var(f.ports, "port", "switch `PORT=INTERFACE` (repeatable), e.g. --port 1=ens1f0")
	fs.StringVar(&f.tokenFile, "token-file", "", "require this `file`'s token and TLS (recommended)")
	fs.StringVar(&f.tlsDir, "tls-dir", "", "`dir` with the TLS certificate (generated on first use), with --token-file or --client-ca")
	fs.StringVar(&f.clientCA, "client-ca", "", "accept clients whose TLS certificate verifies against this PEM `file` "+
		"(CA or pinned self-signed client certificates): mutual TLS for standard P4Runtime clients, instead of or besides --token-file")
	fs.Uint64Var(&f.device, "device-id", 0, "P4Runtime device `id`")
	fs.StringVar(&f.bfrt, "bfrt", "", "also serve a BfRt `address` as a Tofino's bf_switchd would for lumina's pauses and PFC counters "+
		"(the packet generator's apps drive the switch's pause injection; plaintext; docs/tofino.md §8)")
	fs.IntVar(&f.slowdown, "slowdown", 1, "run the switch's clock `k` times slower than the wall clock, as netns-slowdown does on netns: "+
		"for a remote testbed of software RNICs, whose `lumina run --rnic softrnic --slowdown k` must give the same k (docs/run.md#remote-slowdown)")
}

func (f *injectorFlags) check(args []string) error {
	if len(args) != 0 || len(f.ports) == 0 {
		return usagef("injector needs at least one --port PORT=INTERFACE")
	}
	if secure := f.tokenFile != "" || f.clientCA != ""; secure != (f.tlsDir != "") {
		return usagef("injector: --tls-dir goes with --token-file, --client-ca or both")
	}
	if f.slowdown < 1 || f.slowdown > config.MaxNetnsSlowdown {
		return usagef("injector: --slowdown must be 1..%d, not %d", config.MaxNetnsSlowdown, f.slowdown)
	}
	return nil
}

// serverOptions returns the P4Runtime server's TLS and token options, or
// plaintext ones (with a warning on stderr) without --token-file and
// --client-ca.
func (f *injectorFlags) serverOptions(stderr io.Writer) ([]grpc.ServerOption, error) {
	if f.tokenFile == "" && f.clientCA == "" {
		fmt.Fprintln(stderr, "lumina: injector: P4Runtime without TLS or token; anyone who reaches the port can program the switch")
		return agent.PlaintextServerOptions(), nil
	}
	var token string
	if f.tokenFile != "" {
		var err error
		if token, err = agent.ReadToken(f.tokenFile); err != nil {
			return nil, fmt.Errorf("injector: %w", err)
		}
	}
	cert, err := agent.EnsureCert(f.tlsDir)
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	if f.clientCA == "" {
		return agent.ServerOptions(cert, token), nil
	}
	pool, err := agent.ReadCertPool(f.clientCA)
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	opts, err := agent.ServerOptionsClientCerts(cert, token, pool)
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	return opts, nil
}

// runInjector is lumina injector: the software switch on the given
// interfaces, serving P4Runtime until the context ends.
func runInjector(ctx context.Context, f *injectorFlags, _ []string, _, stderr io.Writer) error {
	opts, err := f.serverOptions(stderr)
	if err != nil {
		return err
	}
	// Listen before opening the ports: a bad address fails fast.
	ln, err := listenOn("injector", f.listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	// With --slowdown the switch's clock, its timestamps and the packet
	// generator's timers (--bfrt) are the models' clock, as on netns.
	loop := sim.NewRealLoopSlow(int64(f.slowdown))
	loop.Start()
	defer loop.Close()
	cfg := injector.Config{Seed: uint64(time.Now().UnixNano())}
	if f.bfrt != "" {
		// Pauses need the switch's PFC model; with no lossless
		// priority it sends no XOFF of its own.
		cfg.PFC = &injector.PFCConfig{}
	}
	sw := injector.New(loop, cfg)
	for id, ifname := range f.ports {
		p, err := sim.OpenAFPacket(ifname, loop)
		if err != nil {
			return err
		}
		defer p.Close()
		if err := sw.AddPort(id, p); err != nil {
			return err
		}
	}
	if f.bfrt != "" {
		addr, err := serveBfRt(ctx, sw, f.bfrt)
		if err != nil {
			return fmt.Errorf("injector: bfrt: %w", err)
		}
		fmt.Fprintf(stderr, "lumina: injector: BfRt (packet generator, $PORT, $PORT_STAT) on %s\n", addr)
	}
	g := grpc.NewServer(append(opts, injector.ServerOption())...)
	injector.NewServer(sw, f.device).Register(g)
	luminav1.RegisterInjectorServer(g, injectorTiming{sw: sw})
	if f.slowdown > 1 {
		fmt.Fprintf(stderr, "lumina: injector: the switch's clock runs %d× slower than the wall clock\n", f.slowdown)
	}
	fmt.Fprintf(stderr, "lumina: injector: %d ports, P4Runtime on %s\n", len(f.ports), ln.Addr())
	go func() { <-ctx.Done(); g.Stop() }()
	if err := g.Serve(ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// serveBfRt serves the BfRt endpoint of `lumina injector --bfrt`: a Tofino 1's
// fixed-function tables as lumina uses them (bfrtfake), each enabled
// pktgen app scheduled as the software switch's pause injection, $PORT_STAT
// answered from the switch's PFC counters.
func serveBfRt(ctx context.Context, sw *injector.Switch, listen string) (string, error) {
	srv := &bfrtfake.Server{Chip: bfrt.Tofino1, Listen: listen,
		OnPause: func(app bfrtfake.PauseApp) error {
			port, prio, quanta, start, dur, iv, err := app.Injection()
			if err != nil {
				return err
			}
			return sw.SchedulePauses(injector.PauseInjection{Port: port, Priority: prio, Quanta: quanta, Start: start, Duration: dur, Interval: iv})
		},
		Counters: func(port uint32) (c bfrt.PortPFC) {
			for p, pc := range sw.PFCCounters()[port] {
				c.Tx[p], c.Rx[p] = pc.TxPause, pc.RxPause
			}
			return c
		}}
	return srv.Start(ctx)
}

// injectorTiming is the Injector service of `lumina injector`: only
// Timing, which returns the switch's timing since the previous call and
// starts it afresh (Switch.TakeTiming): a remote run on the models' clock
// takes it at its start and after traffic, for its timestamp uncertainty
// as on netns (docs/run.md#remote-slowdown). The other methods are the
// agent's (it starts the switch); here they are unimplemented.
type injectorTiming struct {
	luminav1.UnimplementedInjectorServer
	sw *injector.Switch
}

func (s injectorTiming) Timing(context.Context, *luminav1.InjectorTimingRequest) (*luminav1.InjectorTimingResponse, error) {
	return agent.InjectorTimingToProto(s.sw.TakeTiming()), nil
}
