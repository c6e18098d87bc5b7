package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/nic"
	"github.com/netlumina/lumina/orchestrator/agent"
)

// Options control a run. Zero values are defaults.
type Options struct {
	// OutDir is where results go: OutDir/<test-name>/<repeat>/. Default:
	// the test's result-path.
	OutDir string
	// Testbed overrides the test's testbed (sim, netns, remote). Default:
	// the test's.
	Testbed string
	// Seed overrides the test's seed when SeedSet.
	Seed    uint64
	SeedSet bool
	// Retries is how many times an invalid repeat (failed integrity check)
	// is run again on netns and remote. Default 2. On sim an invalid
	// repeat is not run again: it is deterministic.
	Retries    int
	RetriesSet bool
	// Progress receives one line per phase. Default: discarded.
	Progress io.Writer
	// Now is the wall clock for result directory bookkeeping. Default time.Now.
	Now func() time.Time
	// Remote says how to reach the agents of the remote testbed.
	Remote RemoteOptions

	// hooks are the test hooks of each attempt's driver.
	hooks hooks
}

// RepeatResult is one repeat's outcome.
type RepeatResult struct {
	Dir      string
	Report   *Report
	Run      *Run
	Attempts int
}

// TestResult is one test file's outcome.
type TestResult struct {
	Name    string
	File    string
	Repeats []RepeatResult
	Err     error
}

// OK reports whether every repeat is valid and every check passed.
func (r *TestResult) OK() bool {
	if r.Err != nil || len(r.Repeats) == 0 {
		return false
	}
	for _, rep := range r.Repeats {
		if rep.Report == nil || !rep.Report.Valid || !rep.Report.Passed() {
			return false
		}
	}
	return true
}

// ErrTestbed is returned for a testbed this build or machine cannot run.
var ErrTestbed = errors.New("orchestrator: testbed not available")

// Side names a traffic host in report.json's per-host maps: its name in
// the test (Requester and Responder in the two-host form).
type Side = string

// The two-host form's hosts.
const (
	Requester Side = config.RequesterName
	Responder Side = config.ResponderName
)

// Seeds are every seed a repeat uses, derived from the test's seed and the
// repeat number; report.json records them: {"test", "switch", "requester",
// "responder"} in the two-host form, {"test", "switch", "hosts": {name:
// seed}} in the hosts form (whose host names may be any).
type Seeds struct {
	Test   uint64 // the test's
	Switch uint64 // the switch's mirror source ports
	// Hosts is each host's RNIC seed, by host name.
	Hosts map[string]uint64
}

// twoHostForm reports whether the hosts are the two-host form's.
func (s Seeds) twoHostForm() bool {
	for name := range s.Hosts {
		if name != Requester && name != Responder {
			return false
		}
	}
	return true
}

// MarshalJSON writes test, switch, then the hosts' seeds by name in name
// order: beside them in the two-host form, under "hosts" otherwise.
func (s Seeds) MarshalJSON() ([]byte, error) {
	var b []byte
	b = fmt.Appendf(b, `{"test":%d,"switch":%d`, s.Test, s.Switch)
	sep := ","
	if !s.twoHostForm() {
		b, sep = append(b, `,"hosts":{`...), ""
	}
	for _, name := range slices.Sorted(maps.Keys(s.Hosts)) {
		k, _ := json.Marshal(name)
		b = fmt.Appendf(b, "%s%s:%d", sep, k, s.Hosts[name])
		sep = ","
	}
	if !s.twoHostForm() {
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Seeds) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = Seeds{Hosts: map[string]uint64{}}
	for k, v := range m {
		var err error
		switch k {
		case "test":
			err = json.Unmarshal(v, &s.Test)
		case "switch":
			err = json.Unmarshal(v, &s.Switch)
		case "hosts":
			err = json.Unmarshal(v, &s.Hosts)
		default:
			var seed uint64
			err = json.Unmarshal(v, &seed)
			s.Hosts[k] = seed
		}
		if err != nil {
			return fmt.Errorf("seeds.%s: %w", k, err)
		}
	}
	return nil
}

// FlowRun is one flow's traffic as the driver saw it.
type FlowRun struct {
	// Name is the flow's name ("traffic" in the two-host form).
	Name string
	// Result is its generator's result (nil if it stopped without one).
	Result *generator.Result
	// Stopped is why its traffic stopped early; "" if it completed.
	Stopped string
	// NICTimerLate is how late its requester's software RNIC ran its
	// timers during the traffic.
	NICTimerLate time.Duration
}

// Run is one repeat as the driver saw it: the resolved test and what each
// phase produced, from the runtime metadata to the merged trace and its
// integrity verdict. The driver fills it and hands it to the analyzers;
// the results directory is written from it, once.
type Run struct {
	// Test is the resolved test (a copy: RunTest leaves its input alone).
	Test   *config.Test
	Repeat int
	Seeds  Seeds
	// Personality and IPs of each traffic host, by host name.
	Personality map[string]softrnic.Personality
	IPs         map[string][]netip.Addr
	// Intent is what the control plane installs; Limit bounds the traffic
	// on the testbed's clock.
	Intent controlplane.Intent
	Limit  time.Duration

	// fabric is the test's switches, cables and routes (nil: one switch);
	// deadlock its deadlock window (deadlock-ms; 0: none), how long the
	// switches keep running after the last flow ended.
	fabric   *fabric
	deadlock time.Duration
	// remoteSlowdown is RemoteOptions.Slowdown on the remote testbed
	// (0 elsewhere).
	remoteSlowdown int64

	// Filled by the driver.
	HostPorts   []uint32 // switch ports of the traffic hosts, t.Hosts order
	NICVersions map[string]nic.Versions
	// Connections are every flow's, numbered globally in flow order.
	Connections []generator.Connection
	Plan        *controlplane.Plan
	// Flows is each flow's traffic, t.Flows order; Generator all flows'
	// results as one (the one flow's in the two-host form).
	Flows     []FlowRun
	Generator *generator.Result
	Stopped   string // why traffic stopped early; "" if it completed
	// NICTimerLate is how late the requesters' software RNICs ran their
	// timers during the traffic (real-time testbeds; 0 on sim and with a
	// hardware RNIC).
	NICTimerLate time.Duration
	// NICPauseLate is how late a software RNIC (either host) applied a
	// received PFC pause past its reaction time (real-time testbeds; 0 on
	// sim, with a hardware RNIC or without pauses).
	NICPauseLate time.Duration
	// NICRxLate is how late after a frame's arrival a software RNIC
	// (either host) handled it, CNP pacing decisions included (real-time
	// testbeds; 0 on sim and with a hardware RNIC).
	NICRxLate time.Duration
	Switch    *controlplane.Counters
	// TableDiff is how the event and connection tables read back after
	// traffic differ from Plan; LostPrimary every time lumina stopped
	// being the switch's primary controller during the run.
	TableDiff    []string
	LostPrimary  []string
	NICs         map[string]map[string]uint64
	Dumpers      []dumper.Report
	DumperFiles  []string
	DumperErrors []string

	// Timing is how the software switch timestamped (zero for a P4Runtime
	// target of its own).
	Timing injector.Timing
	// SwitchPFC is the software switch's PFC counters and watchdog log
	// (nil when PFC is off).
	SwitchPFC *agent.SwitchPFCStatus

	// Filled by the merge: the merged trace and its one integrity check.
	TracePath string
	Integrity integrity.Verdict
}

// newRun resolves repeat rep of t.
func newRun(t *config.Test, rep int) (*Run, error) {
	r := &Run{Test: t, Repeat: rep,
		Seeds:       Seeds{Test: t.Seed, Switch: seedFor(t, rep, "switch"), Hosts: map[string]uint64{}},
		Personality: map[string]softrnic.Personality{}, IPs: map[string][]netip.Addr{},
		Intent: controlplane.Intent{Events: t.ExpandEvents(), IterScope: t.IterScope, MirrorPort: uint16(t.RewriteUDPDstPort),
			ECN: t.Switch.ECN},
		Limit: trafficDeadline(t), NICVersions: map[string]nic.Versions{}, NICs: map[string]map[string]uint64{}}
	r.fabric, r.deadlock = newFabric(t), time.Duration(t.DeadlockMs)*time.Millisecond
	if r.fabric != nil {
		// Each switch's ECN is on its own ports (controlplane.Fabric.ECN),
		// none for all.
		r.Intent.ECN = nil
	}
	if (t.Switch.ECN != nil || r.fabric != nil && r.fabric.ecnOn()) && len(t.Hosts) > 0 {
		// The switch classifies by the first host's DSCP map, as its
		// software queues do (switchPFC).
		r.Intent.DSCPToPriority = t.Hosts[0].NIC.DSCPToPriority()
	}
	for i, h := range t.Hosts {
		r.Seeds.Hosts[h.Name] = hostSeed(t, rep, i)
		r.IPs[h.Name] = config.HostIPs(h.Host, i)
		p, err := personality(t, h.Host)
		if err != nil {
			return nil, errorf("%s personality: %w", h.Name, err)
		}
		r.Personality[h.Name] = p
	}
	return r, nil
}

// mergeFlows sets the run's connections, generator result, Stopped and
// timer lateness from its flows': the one flow's as they are in the
// two-host form; every flow's together in the hosts form.
func (r *Run) mergeFlows() {
	t := r.Test
	perFlow := make([][]generator.Connection, len(r.Flows))
	var stopped []string
	for f, fr := range r.Flows {
		r.NICTimerLate = max(r.NICTimerLate, fr.NICTimerLate)
		if fr.Stopped != "" {
			if t.HostsForm {
				stopped = append(stopped, "flow "+fr.Name+": "+fr.Stopped)
			} else {
				stopped = append(stopped, fr.Stopped)
			}
		}
		if fr.Result != nil {
			perFlow[f] = fr.Result.Connections
		}
	}
	r.Stopped = strings.Join(stopped, "; ")
	if !t.HostsForm {
		if len(r.Flows) == 1 && r.Flows[0].Result != nil {
			r.Generator, r.Connections = r.Flows[0].Result, r.Flows[0].Result.Connections
		}
		return
	}
	r.Connections = globalConns(t, perFlow)
	r.Generator = combineResults(t, r.Flows, r.Connections)
}

// combineResults is the flows' results as one: bytes summed over the
// longest duration, every QP numbered globally, errors naming their flow,
// the responders verified when every one was; nil when no flow has one.
func combineResults(t *config.Test, flows []FlowRun, conns []generator.Connection) *generator.Result {
	var g *generator.Result
	for f, fr := range flows {
		res := fr.Result
		if res == nil {
			continue
		}
		if g == nil {
			g = &generator.Result{Verb: res.Verb, QPs: []generator.QPResult{}, Responder: &generator.ResponderStats{Verified: true}}
		}
		if res.Verb != g.Verb {
			g.Verb = ""
		}
		g.Bytes += res.Bytes
		g.DurationNs = max(g.DurationNs, res.DurationNs)
		for _, q := range res.QPs {
			q.Index += t.QPOffset(f)
			g.QPs = append(g.QPs, q)
		}
		for _, e := range res.Errors {
			g.Errors = append(g.Errors, "flow "+fr.Name+": "+e)
		}
		if rs := res.Responder; rs != nil {
			g.Responder.RecvCompletions += rs.RecvCompletions
			g.Responder.RecvErrors += rs.RecvErrors
			g.Responder.Verified = g.Responder.Verified && rs.Verified
			for _, q := range rs.BadQPs {
				g.Responder.BadQPs = append(g.Responder.BadQPs, q+t.QPOffset(f))
			}
		} else {
			g.Responder.Verified = false
		}
	}
	if g == nil {
		return nil
	}
	if g.DurationNs > 0 {
		g.GoodputGbps = float64(g.Bytes) * 8 / float64(g.DurationNs)
	}
	g.Connections = conns
	return g
}

// lineGbps is the hosts' line rate, the default speed of a fabric's
// links: the fastest host's.
func (r *Run) lineGbps() float64 {
	var g float64
	for _, p := range r.Personality {
		g = max(g, p.LineRateGbps)
	}
	return g
}

// deadlockWindow is how long the switches keep running after the last
// flow ended: the test's deadlock-ms (0: none).
func (r *Run) deadlockWindow() time.Duration { return r.deadlock }

// slowdown is how many times slower than the wall clock the testbed's
// software components run: netns-slowdown on netns, RemoteOptions.Slowdown
// on remote (software RNICs and `lumina injector` only), else 1.
func (r *Run) slowdown() int64 {
	if r.Test.Testbed == config.TestbedNetns {
		return int64(max(r.Test.NetnsSlowdown, 1))
	}
	return max(r.remoteSlowdown, 1)
}

// timestampUncertaintyNs is the timestamp uncertainty the analyzers
// apply: the larger of the software switch's largest clamp and the
// config's switch.timestamp-uncertainty-ns.
func (r *Run) timestampUncertaintyNs() int64 {
	return max(int64(r.Test.Switch.TimestampUncertaintyNs), int64(r.Timing.ClampMax))
}

// sentUncertaintyNs is how much later than its departure the timestamp
// of a frame the switch sent may be: the larger of the software switch's
// longest write of such a frame and switch.timestamp-uncertainty-ns.
func (r *Run) sentUncertaintyNs() int64 {
	return max(int64(r.Test.Switch.TimestampUncertaintyNs), int64(r.Timing.SentMax))
}

// cnpLatenessNs is how much later than its trigger's arrival at the
// switch a notification point may have made a CNP pacing decision, beyond
// the testbed's fixed delays (model.Params.CNPLatenessNs): the software
// switch's pipeline ran up to its late max after the arrival, and the
// software RNIC handled a frame up to NICRxLate after its own arrival. 0
// on sim.
func (r *Run) cnpLatenessNs() int64 {
	return int64(r.Timing.LateMax) + int64(r.NICRxLate)
}

// RunTest runs every repeat of one loaded test. It does not modify t.
func RunTest(ctx context.Context, t *config.Test, o Options) *TestResult {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if !o.RetriesSet {
		o.Retries = 2
	}
	res := &TestResult{Name: t.Name, File: t.File}
	t, err := resolve(t, o)
	if err != nil {
		res.Err = err
		return res
	}
	out := o.OutDir
	if out == "" {
		out = t.ResultPath
	}
	for rep := range t.NumRepeats {
		var rr RepeatResult
		for attempt := 1; attempt <= o.Retries+1; attempt++ {
			progress := func(msg string) {
				fmt.Fprintf(o.Progress, "lumina: %s [%d/%d]: %s\n", t.Name, rep+1, t.NumRepeats, msg)
			}
			if attempt > 1 {
				progress(fmt.Sprintf("invalid run, attempt %d of %d", attempt, o.Retries+1))
			}
			run, dir, report, err := runRepeat(ctx, t, rep, out, o, progress)
			rr = RepeatResult{Dir: dir, Report: report, Run: run, Attempts: attempt}
			if err != nil {
				res.Err = fmt.Errorf("%s repeat %d: %w", t.Name, rep, err)
				if dir != "" {
					res.Repeats = append(res.Repeats, rr)
				}
				return res
			}
			if report.Valid || ctx.Err() != nil {
				break
			}
			if d := fullDumper(run); d != "" {
				progress(fmt.Sprintf("invalid run not retried: dumper %s reached its num-pkts, and would again", d))
				break
			}
			if t.Testbed == config.TestbedSim {
				// One virtual clock and the same seeds: an attempt
				// again would be the same run, byte for byte.
				progress("invalid run not retried: the sim testbed is deterministic, and the same seed would fail again")
				break
			}
		}
		res.Repeats = append(res.Repeats, rr)
		if ctx.Err() != nil {
			res.Err = ctx.Err()
			return res
		}
	}
	return res
}

// fullDumper returns the name of a dumper of run that reached its capacity
// (a failure that repeats), or "".
func fullDumper(run *Run) string {
	if run == nil {
		return ""
	}
	for _, d := range run.Dumpers {
		if d.Full {
			return d.Name
		}
	}
	return ""
}

// resolve returns a copy of t with the options' overrides applied.
func resolve(in *config.Test, o Options) (*config.Test, error) {
	tb := in.Testbed
	if o.Testbed != "" {
		var err error
		if tb, err = config.ParseTestbed(o.Testbed); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTestbed, err)
		}
	}
	t := in.OnTestbed(tb) // a copy; dumpers use the testbed's backend
	if o.SeedSet {
		t.Seed = o.Seed
	}
	t.Normalize() // a Test built or changed by hand
	return t, nil
}

func newTestbed(t *config.Test, o Options) (testbed, error) {
	switch t.Testbed {
	case config.TestbedSim:
		return newSimBed(), nil
	case config.TestbedNetns:
		if o.Remote.Slowdown > 1 {
			return nil, fmt.Errorf("%w: netns: slowdown %d is the remote testbed's (lumina run --slowdown); on netns the test's netns-slowdown sets it", ErrTestbed, o.Remote.Slowdown)
		}
		return newNetnsBed()
	case config.TestbedRemote:
		return newRemoteBed(o.Remote)
	}
	return nil, fmt.Errorf("%w: %v", ErrTestbed, t.Testbed)
}

// runRepeat runs one attempt and publishes its directory atomically. It
// returns the published directory (also for failed runs, whose partial
// results are kept and marked invalid).
func runRepeat(ctx context.Context, t *config.Test, rep int, outDir string, o Options, progress func(string)) (*Run, string, *Report, error) {
	testDir := filepath.Join(outDir, t.Name)
	if err := os.MkdirAll(testDir, 0o755); err != nil {
		return nil, "", nil, errorf("results: %w", err)
	}
	tmp, err := os.MkdirTemp(testDir, ".run-"+strconv.Itoa(rep)+"-")
	if err != nil {
		return nil, "", nil, errorf("results: %w", err)
	}
	defer os.RemoveAll(tmp) // only does anything if we did not publish
	if err := os.MkdirAll(filepath.Join(tmp, "dumpers"), 0o755); err != nil {
		return nil, "", nil, errorf("results: %w", err)
	}
	resolved, err := t.Marshal()
	if err != nil {
		return nil, "", nil, errorf("resolved config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "config.yaml"), resolved, 0o644); err != nil {
		return nil, "", nil, errorf("results: %w", err)
	}

	started := time.Now()
	run, runErr := newRun(t, rep)
	var rpt *Report
	if runErr == nil {
		var tb testbed
		if tb, runErr = newTestbed(t, o); runErr == nil {
			rpt, runErr = drive(ctx, tb, run, tmp, progress, o.hooks)
		}
	}
	if runErr != nil {
		rpt = newReport(t, rep, run)
		rpt.Valid = false
		rpt.Error = runErr.Error()
	}
	if rpt.Valid && !t.KeepDumperFiles && run != nil {
		for _, p := range run.DumperFiles {
			if err := os.Remove(p); err != nil {
				return run, "", nil, errorf("results: keep-dumper-files: false: %w", err)
			}
		}
		rpt.DumperFilesRemoved = true
	}
	rpt.addRunChecks() // every check in analysis.checks, of an invalid run too
	rpt.WallNs = time.Since(started).Nanoseconds()
	if run != nil {
		if err := writeJSON(filepath.Join(tmp, "counters.json"), countersFile{Switch: run.Switch, NICs: run.NICs, Dumpers: run.Dumpers}); err != nil {
			return run, "", nil, err
		}
		if err := writeJSON(filepath.Join(tmp, "generator.json"), run.Generator); err != nil {
			return run, "", nil, err
		}
	}
	if err := writeJSON(filepath.Join(tmp, "report.json"), rpt); err != nil {
		return run, "", nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "report.txt"), []byte(rpt.Text()), 0o644); err != nil {
		return run, "", nil, errorf("results: %w", err)
	}
	final := filepath.Join(testDir, strconv.Itoa(rep))
	if _, err := os.Stat(final); err == nil {
		old := final + ".replaced-" + o.Now().UTC().Format("20060102T150405.000")
		if err := os.Rename(final, old); err != nil {
			return run, "", nil, errorf("results: keeping the previous %s: %w", final, err)
		}
		progress("results: previous results moved to " + old)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return run, "", nil, errorf("results: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return run, "", nil, errorf("results: %w", err)
	}
	if run != nil && run.TracePath != "" {
		run.TracePath = filepath.Join(final, t.AggregatePcapFilename)
	}
	progress(fmt.Sprintf("results: %s (valid=%v)", final, rpt.Valid))
	return run, final, rpt, runErr
}

// countersFile is counters.json.
type countersFile struct {
	Dumpers []dumper.Report              `json:"dumpers"`
	NICs    map[string]map[string]uint64 `json:"nics"`
	Switch  *controlplane.Counters       `json:"switch"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return errorf("results: %w", err)
	}
	return nil
}
