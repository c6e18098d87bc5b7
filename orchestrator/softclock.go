package orchestrator

import (
	"context"
	"fmt"
	"strconv"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/injector"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// remoteSlowdownProblem says why ro.Slowdown cannot run: out of range, or
// above 1 with hardware in the testbed (verbs NICs, a Tofino's pipeline
// pushed with --p4info or --device-config), which runs in real time.
// Whether the switch runs at that slowdown is checked when lumina
// connects (checkSwitchClock).
func remoteSlowdownProblem(ro RemoteOptions) error {
	k := ro.Slowdown
	switch {
	case k < 0 || k > config.MaxNetnsSlowdown:
		return fmt.Errorf("%w: remote: slowdown %d (1..%d)", ErrTestbed, k, config.MaxNetnsSlowdown)
	case k <= 1:
		return nil
	case ro.RNIC != "softrnic":
		return fmt.Errorf("%w: remote: slowdown %d needs the software RNIC (--rnic softrnic): the hosts' NICs (--rnic %s) run in real time", ErrTestbed, k, ro.RNIC)
	case ro.P4Info != "" || ro.DeviceConfig != "":
		return fmt.Errorf("%w: remote: slowdown %d needs lumina's software switch: a Tofino (--p4info, --device-config) runs in real time", ErrTestbed, k)
	}
	return nil
}

// checkSwitchClock asks the remote switch at addr (P4Runtime
// Capabilities) how much slower than the wall clock it runs: `lumina
// injector` states it in the injector.SlowdownHeader header, other
// targets (a Tofino) state nothing and run in real time. It must be the
// run's slowdown: RNICs and a switch on different clocks would model
// links at different speeds and timestamp the trace on a clock the
// RNICs' timers and the analyzers' bounds are not on.
func checkSwitchClock(ctx context.Context, addr string, dial []grpc.DialOption, want int64) error {
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return err
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var md metadata.MD
	_, err = p4v1.NewP4RuntimeClient(conn).Capabilities(cctx, &p4v1.CapabilitiesRequest{}, grpc.Header(&md))
	got, stated := int64(1), false
	if v := md.Get(injector.SlowdownHeader); len(v) == 1 {
		k, perr := strconv.ParseInt(v[0], 10, 64)
		if perr != nil || k < 1 {
			return fmt.Errorf("switch %s: %s %q: not a slowdown", addr, injector.SlowdownHeader, v[0])
		}
		got, stated = k, true
	}
	switch {
	case got == want:
		return nil
	case want > 1 && !stated:
		why := "it states no slowdown (a Tofino, or not lumina's software switch): it runs in real time"
		if err != nil {
			why = fmt.Sprintf("its Capabilities failed (%v): lumina cannot tell that it runs slowed", err)
		}
		return fmt.Errorf("%w: remote: slowdown %d: the switch at %s must be `lumina injector --slowdown %d`, but %s", ErrTestbed, want, addr, want, why)
	default:
		return fmt.Errorf("%w: remote: the switch at %s runs its clock %d× slower than the wall clock (lumina injector --slowdown %d), this run %d×: give lumina run --slowdown %d (with --rnic softrnic) or restart the injector with --slowdown %d",
			ErrTestbed, addr, got, got, want, got, want)
	}
}

// startSoftTiming connects, on a remote run on the models' clock (whose
// switch checkSwitchClock found to be `lumina injector` at the run's
// slowdown), to the injector's Timing on its P4Runtime address and takes
// the timing so far, which starts it afresh: collect's Timing is then
// this run's, and the analyzers allow for the switch's measured
// timestamp uncertainty as on netns. (A real-time remote run keeps
// switch.timestamp-uncertainty-ns, as on a Tofino.)
func (d *driver) startSoftTiming(ctx context.Context) error {
	conn, err := grpc.NewClient(d.p4addr, d.pl.p4rtDial...)
	if err != nil {
		return err
	}
	d.softTiming = conn
	if _, err := luminav1.NewInjectorClient(conn).Timing(ctx, &luminav1.InjectorTimingRequest{}); err != nil {
		return fmt.Errorf("injector timing at %s: %w", d.p4addr, err)
	}
	return nil
}
