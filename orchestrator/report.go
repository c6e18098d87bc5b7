package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/analyzers/model"
	areport "github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/nic"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
	"github.com/netlumina/lumina/trace"
)

// ReportSchema names the report.json format. Fields are only ever added.
const ReportSchema = "lumina.report/v1"

// Report is report.json: what a network engineer needs to know about one
// repeat. See docs/run.md for the schema. It is not the analyzers'
// report.Report (its Analysis): a repeat has facts a trace alone does not
// (seeds, NICs, the generator's results, the switch's state), and an
// invalid or failed repeat has a Report and no analysis. dumper.Report is
// a third, narrower thing: one dumper's numbers when it stops.
type Report struct {
	Schema  string `json:"schema"`
	Test    string `json:"test"`
	File    string `json:"file,omitempty"`
	Repeat  int    `json:"repeat"`
	Seed    uint64 `json:"seed"`
	Testbed string `json:"testbed"`
	// Seeds are every seed the repeat used (the switch's and each RNIC's,
	// derived from Seed and Repeat).
	Seeds       *Seeds            `json:"seeds,omitempty"`
	Personality map[string]string `json:"personality,omitempty"`
	// NICVersions is each traffic host's NIC identity: driver and firmware
	// on real hosts, the personality for the software RNIC.
	NICVersions map[string]nic.Versions `json:"nic_versions,omitempty"`
	// Valid is true when everything observed is what the test asked for:
	// the trace passed the integrity check and the switch did only what
	// the intent asked (SwitchState); otherwise no analyzer ran.
	Valid     bool            `json:"valid"`
	Error     string          `json:"error,omitempty"`
	Integrity IntegrityReport `json:"integrity"`
	// SwitchState says whether the switch did only what the intent asked
	// (also checks["switch_state"]).
	SwitchState *SwitchStateReport    `json:"switch_state,omitempty"`
	Connections []ConnectionReport    `json:"connections"`
	Events      []EventReport         `json:"events"`
	Checks      map[string]CheckEntry `json:"checks"`
	Generator   *GeneratorReport      `json:"generator,omitempty"`
	// Timing is how far the switch's timestamps may be from the packets'
	// arrivals, which the analyzers' timing bounds allow for.
	Timing    *TimingReport `json:"timing,omitempty"`
	TracePath string        `json:"trace,omitempty"`
	Packets   int           `json:"packets"`
	// DumperFilesRemoved is true when the dumpers' files were removed
	// after a valid merge (keep-dumper-files: false).
	DumperFilesRemoved bool  `json:"dumper_files_removed,omitempty"`
	WallNs             int64 `json:"wall_ns"`
	// Analysis is the one place of every check with its verdict, reason
	// and numbers (analysis.checks, schema in docs/run.md and
	// docs/analyze.md): the run's own checks (integrity, switch_state,
	// events_applied, generator) and the analyzers' (Go-back-N
	// violations, per-loss latencies, timeouts, CNP scopes, counter
	// cross-checks, events, pfc). Its verdicts are also in Checks, and
	// its checks.integrity is the run's (Integrity), which it does not
	// repeat at its top level. Of an invalid run or one
	// that did not complete, the analyzers' checks are skip with why.
	Analysis *areport.Report `json:"analysis,omitempty"`
	// InjectedEvents are the installed events as the analyzers take them
	// (model.Meta.Events), so that `lumina analyze RUN_DIR` checks the
	// delayed, reordered and duplicated packets against them.
	InjectedEvents []model.Event `json:"injected_events,omitempty"`
	// SwitchPorts (with PFC) names the switch port of each host, for the
	// pfc analyzer of `lumina analyze RUN_DIR`.
	SwitchPorts map[string]uint32 `json:"switch_ports,omitempty"`
	// Fabric is the topology of a test with several switches, for the
	// analyzers of `lumina analyze RUN_DIR` (model.Meta.Fabric; absent:
	// one switch).
	Fabric *model.Fabric `json:"fabric,omitempty"`
	// SwitchPFC is the software switch's PFC counters and watchdog log.
	SwitchPFC *SwitchPFCReport `json:"switch_pfc,omitempty"`

	// The run's own checks with their numbers, for Analysis (merge).
	eventsApplied *areport.EventsApplied
	generator     *areport.Generator
}

// SwitchPFCReport is the software switch's PFC state after traffic.
type SwitchPFCReport struct {
	Ports []SwitchPFCPort `json:"ports"`
	// Watchdog lists the watchdog's storms and restores.
	Watchdog []SwitchPFCEvent `json:"watchdog,omitempty"`
}

// SwitchPFCPort is one (port, priority)'s injector.PFCCounters (those with
// every count zero left out), its JSON names the counters' own.
type SwitchPFCPort struct {
	Port     uint32 `json:"port"`
	Priority int    `json:"priority"`
	injector.PFCCounters
}

// SwitchPFCEvent is a watchdog storm or restore on the switch clock.
type SwitchPFCEvent struct {
	AtNs     int64  `json:"at_ns"`
	Port     uint32 `json:"port"`
	Priority int    `json:"priority"`
	Kind     string `json:"kind"`
}

// analyze finishes the analysis of a valid run's trace (the stream saw
// every packet during the merge), adds the checks' verdicts and the
// analysis to the report, and writes report.html to dir.
func (r *Report) analyze(s *analyzers.Stream, dir string) error {
	a := s.Finish()
	for name, o := range a.Outcomes() {
		r.Checks[name] = CheckEntry{o.Verdict, o.Reason}
	}
	r.Analysis = a
	r.addRunChecks()
	// The page shows the run's integrity verdict, and its heading the
	// run's verdict: every check, the run's own (events applied,
	// generator, switch state) too.
	a.Integrity = *a.Checks.Integrity
	html, err := areport.HTMLRun(a, r.htmlRun())
	a.Integrity = areport.Integrity{} // report.json's integrity is the run's one verdict (checks.integrity repeat it)
	if err != nil {
		return err
	}
	return safefile.WriteFile(filepath.Join(dir, areport.FileHTML), html, 0o644)
}

// addRunChecks puts the run's own checks into r.Analysis (creating one
// whose analyzer checks are skipped, for a run that was not analyzed):
// its integrity verdict is the run's (analysis.checks.integrity; the
// analysis has no top-level integrity of its own), and switch_state, events_applied
// and generator are there with their numbers when the run evaluated them.
func (r *Report) addRunChecks() {
	a := r.Analysis
	if a == nil {
		why := "the run is invalid: no analyzer ran"
		switch {
		case r.Error != "":
			why = "the run did not complete: no analyzer ran"
		case r.Valid:
			why = "the run was not analyzed"
			if c, ok := r.Checks[areport.CheckAnalyzers]; ok {
				why += ": " + c.Detail
			}
		}
		a = &areport.Report{Trace: areport.TraceInfo{Path: r.TracePath, Packets: r.Packets}, Connections: []model.Connection{}}
		for _, c := range r.Connections {
			a.Connections = append(a.Connections, c.Model())
		}
		for _, c := range areport.AllChecks {
			a.Checks.Skip(c, why)
		}
		r.Analysis = a
	}
	a.Checks.Integrity = &areport.Integrity{Verdict: r.Integrity.Verdict, Reason: r.Integrity.Reason}
	a.Valid = r.Valid
	a.Checks.SwitchState = r.SwitchState
	a.Checks.EventsApplied = r.eventsApplied
	a.Checks.Generator = r.generator
	if !r.Valid { // merge evaluates them for a valid trace only
		why := "the run is invalid: not evaluated"
		if a.Checks.EventsApplied == nil {
			a.Checks.EventsApplied = &areport.EventsApplied{Verdict: model.Skip, Reason: why, Total: len(r.Events)}
		}
		if a.Checks.Generator == nil {
			a.Checks.Generator = &areport.Generator{Verdict: model.Skip, Reason: why}
		}
	}
}

// htmlRun describes the run for its report.html: test, seed, repeat, NICs
// and the run's verdict over all its checks.
func (r *Report) htmlRun() *areport.RunInfo {
	info := &areport.RunInfo{Test: r.Test, Seed: r.Seed, Repeat: r.Repeat, Result: areport.ResultPass,
		Failed: r.Verdicts(model.Fail), Testbed: r.Testbed}
	r.htmlDetails(info)
	switch {
	case !r.Valid || len(info.Failed) > 0:
		info.Result = areport.ResultFail
	case len(r.Verdicts(model.Inconclusive)) > 0:
		info.Result = areport.ResultInconclusive
	}
	for _, s := range r.NICHosts() {
		v, ok := r.NICVersions[s]
		name := r.Personality[s]
		if !ok && name == "" {
			continue
		}
		var parts []string
		for _, x := range []struct{ k, v string }{{"", name}, {"", v.Personality}, {"", v.HCAType}, {"driver ", v.Driver},
			{"firmware ", v.Firmware}} {
			if x.v != "" && !slices.Contains(parts, x.k+x.v) {
				parts = append(parts, x.k+x.v)
			}
		}
		switch {
		case v.Firmware != "":
		case v.Personality != "" || !ok:
			parts = append(parts, "software RNIC (no firmware)")
		default:
			parts = append(parts, "firmware unknown")
		}
		info.NICs = append(info.NICs, s+": "+strings.Join(parts, ", "))
	}
	return info
}

// meta is the run metadata the analyzers take: the runtime connections,
// the test's parameters and the NIC counters (from zero).
func (r *Run) meta() model.Meta {
	m := model.Meta{Params: analyzers.ParamsFromRun(r.Test, r.Personality)}
	m.TimestampUncertaintyNs = r.timestampUncertaintyNs()
	m.MirrorHolds = true // injector.Switch and lumina.p4 write them
	m.TimerLatenessNs = int64(r.NICTimerLate)
	m.PauseLatenessNs = int64(r.NICPauseLate)
	m.CNPLatenessNs = r.cnpLatenessNs()
	w := r.sentUncertaintyNs()
	m.SentUncertaintyNs = &w
	for _, c := range r.Connections {
		m.Connections = append(m.Connections, modelConnection(c))
	}
	if r.pfcOn() {
		// The pfc analyzer: which switch port is which host, the link
		// speed (quanta), and the switch↔host round trip of the reaction
		// bound (the sim links' 2 × 500 ns; on netns the timestamp
		// uncertainty covers the veth path).
		m.SwitchPorts = r.switchPorts()
		m.LinkGbps = r.Personality[r.Test.Hosts[0].Name].LineRateGbps
		if r.Test.Testbed == config.TestbedSim {
			m.RTTNs = int64(2 * sim.DefaultDelay)
		}
	}
	m.Fabric = r.fabricModel()
	if m.Fabric != nil && r.Switch != nil {
		m.Switch = &model.Switch{LastSeq: r.Switch.LastSeq}
	}
	if st := r.SwitchPFC; st != nil {
		var n uint64
		for _, cs := range st.Counters {
			for _, c := range cs {
				n += c.LosslessDrops + c.LossyDrops + c.WatchdogDrops
			}
		}
		if m.Switch == nil {
			m.Switch = &model.Switch{}
		}
		m.Switch.PFCDrops = &n
	}
	if r.Plan != nil {
		m.Events = []model.Event{}
		for _, e := range r.Plan.Events {
			m.Events = append(m.Events, modelEvent(e))
		}
	}
	for _, h := range r.Test.Hosts {
		if c, ok := r.NICs[h.Name]; ok {
			n := model.NIC{Name: h.Name, Before: model.Counters{}, After: c}
			if r.Test.HostsForm {
				// The two-host form's NICs take their connections' sides'
				// addresses (model.ResolveNICs); a host of the hosts form
				// has its own, whatever its role in each flow.
				n.IPs = r.IPs[h.Name]
			}
			m.NICs = append(m.NICs, n)
		}
	}
	return m
}

// fabricModel is the run's fabric as the run record keeps it (nil: one
// switch).
func (r *Run) fabricModel() *model.Fabric {
	if r.fabric == nil {
		return nil
	}
	var hosts []string
	var rates []float64 // each host's cable runs at its NIC's line rate
	for _, h := range r.Test.Hosts {
		hosts = append(hosts, h.Name)
		rates = append(rates, r.Personality[h.Name].LineRateGbps)
	}
	// Observe is keyed as the connections name their flow (model.Connection.Flow:
	// "" for the two-host form's one flow), which the analyzers look up.
	m := r.fabric.model(hosts, r.fabric.flows, rates, r.lineGbps())
	if r.Test.Testbed != config.TestbedSim {
		// Only sim applies a cable's delay: a veth (netns) and a cable
		// looped on a Tofino (remote) have their own, unknown to lumina.
		for i := range m.Ports {
			m.Ports[i].DelayNs = 0
		}
	}
	return m
}

// switchPorts names the switch port of each host (nil before the
// placement).
func (r *Run) switchPorts() map[string]uint32 {
	if len(r.HostPorts) != len(r.Test.Hosts) {
		return nil
	}
	m := map[string]uint32{}
	for i, h := range r.Test.Hosts {
		m[h.Name] = r.HostPorts[i]
	}
	return m
}

// modelEvent describes an installed event for the analyzers.
func modelEvent(e controlplane.EventEntry) model.Event {
	me := model.Event{Conn: e.QP, PSN: uint32(e.PSN), Iter: int(e.Iter), Type: e.Type,
		DelayNs: e.Params.DelayNs, Overtakers: e.Params.Overtakers, MaxHoldNs: e.Params.MaxHoldNs, Copies: e.Params.Copies}
	if e.Params.Direction != config.DirData {
		me.Direction = e.Params.Direction.String()
	}
	return me
}

func endpoint(e generator.Endpoint) model.Endpoint {
	return model.Endpoint{IP: e.IP, QPN: e.QPN, IPSN: e.IPSN}
}

// IntegrityReport is the integrity verdict of report.json's top level:
// the analysis's areport.Integrity (analysis.checks.integrity, which
// copies its verdict and reason) and each condition's status
// (integrity.Verdict.Checks). The two JSON forms are frozen by report.json
// v1 and differ (here the reason is left out when empty and the
// conditions are listed; there the reason is always present), so they are
// two types; integrity.Verdict is the analyzer's in-memory result.
type IntegrityReport struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	Checks  []string      `json:"checks,omitempty"` // "name: status" per condition
}

// SwitchStateReport is whether the switch did only what the test asked
// (report.json's switch_state, also analysis.checks.switch_state): it
// fails, and the run is invalid, when a mirror copy carries an event the
// intent did not ask for or an asked event more often than asked, when the
// switch's event_drops counters exceed the drop events installed, when the
// tables lumina installed (forwarding, ARP, mirroring, connections,
// events, clone sessions) read back after traffic differ from the plan, or
// when lumina lost primary arbitration during the run.
type SwitchStateReport = areport.SwitchState

// UnexpectedEvent is one (destination QPN, PSN, event) seen on more
// mirror copies than the intent asked for.
type UnexpectedEvent = areport.UnexpectedEvent

// maxListed bounds the lists of SwitchStateReport.
const maxListed = 20

// ConnectionReport is one QP connection of report.json's connections:
// model.Connection's fields (the same Endpoint and Verb), but for
// Inferred (a run's connections come from its metadata), in the order of
// report.json v1, which names the flow before the endpoints where
// model.Connection (analysis.connections) names it last. Both orders are
// frozen by the schema; Model and reportConnection convert.
type ConnectionReport struct {
	ID   int        `json:"id"`
	Verb model.Verb `json:"verb"`
	// Flow is the connection's flow (the hosts form only).
	Flow      string         `json:"flow,omitempty"`
	Requester model.Endpoint `json:"requester"`
	Responder model.Endpoint `json:"responder"`
}

// Model returns c as the analyzers take it.
func (c ConnectionReport) Model() model.Connection {
	return model.Connection{ID: c.ID, Verb: c.Verb, Flow: c.Flow, Requester: c.Requester, Responder: c.Responder}
}

func reportConnection(c model.Connection) ConnectionReport {
	return ConnectionReport{ID: c.ID, Verb: c.Verb, Flow: c.Flow, Requester: c.Requester, Responder: c.Responder}
}

// modelConnection is a run's connection as the analyzers take it.
func modelConnection(c generator.Connection) model.Connection {
	return model.Connection{ID: c.Index, Verb: c.Verb, Flow: c.Flow, Requester: endpoint(c.Requester), Responder: endpoint(c.Responder)}
}

// EventReport is one configured (expanded) event and whether the trace
// shows it applied.
type EventReport struct {
	QP     int        `json:"qp"`
	Msg    int        `json:"msg"`
	PSN    int        `json:"psn"`     // within the message
	RelPSN int        `json:"rel_psn"` // within the QP
	AbsPSN uint32     `json:"abs_psn"`
	DestQP uint32     `json:"dest_qp"`
	Iter   int        `json:"iter"`
	Type   roce.Event `json:"type"`
	// Direction is "response" for an event on the responder's ACK/NAK
	// packets; empty for data packets.
	Direction string `json:"direction,omitempty"`
	// The event's parameters (delay, reorder, duplicate).
	DelayNs    int64 `json:"delay_ns,omitempty"`
	Overtakers int   `json:"overtakers,omitempty"`
	MaxHoldNs  int64 `json:"max_hold_ns,omitempty"`
	Copies     int   `json:"copies,omitempty"`
	// Applied: the trace holds the packet tagged with the event (every
	// copy, for duplicate).
	Applied bool   `json:"applied"`
	TimeNs  uint64 `json:"time_ns,omitempty"` // switch timestamp of the affected packet
	// SeenCopies counts a duplicate event's tagged copies in the trace.
	SeenCopies int `json:"seen_copies,omitempty"`
}

// TimingReport is the switch's timestamping on one run.
type TimingReport struct {
	// UncertaintyNs is how much later than a packet's arrival its mirror
	// timestamp may be: the analyzers' timing bounds widen by it, and a
	// measurement within it of a bound is inconclusive. 0 on sim.
	UncertaintyNs int64 `json:"uncertainty_ns"`
	// The software switch's own measurements (0 on sim, absent for a
	// P4Runtime target of its own): frames timestamped, how late its
	// pipeline ran after their arrival (p50, p99, max: what timestamps
	// taken when the pipeline runs would be off by), and the largest
	// amount a timestamp was raised to keep timestamps in order.
	Frames     uint64 `json:"frames,omitempty"`
	LateP50Ns  int64  `json:"late_p50_ns,omitempty"`
	LateP99Ns  int64  `json:"late_p99_ns,omitempty"`
	LateMaxNs  int64  `json:"late_max_ns,omitempty"`
	ClampMaxNs int64  `json:"clamp_max_ns,omitempty"`
	// SentUncertaintyNs is how much later than its departure the
	// timestamp of a PFC frame the switch sent may be
	// (model.Params.SentUncertaintyNs), at least
	// switch.timestamp-uncertainty-ns: 0 on sim and where the software
	// switch's port gives the departure (the kernel's transmit timestamp,
	// netns); else its longest write of such a frame (it stamps once the
	// write returned).
	SentUncertaintyNs int64 `json:"sent_uncertainty_ns,omitempty"`
	// NICTimerLateNs is how late the requester's software RNIC ran its
	// timers during the traffic (model.Params.TimerLatenessNs): a timeout
	// interval may exceed the upper bound by that much and be inconclusive
	// rather than a failure. 0 on sim and with a hardware RNIC.
	NICTimerLateNs int64 `json:"nic_timer_late_ns,omitempty"`
	// NICPauseLateNs is how late a software RNIC applied a received PFC
	// pause past its reaction time (model.Params.PauseLatenessNs): a frame
	// sent while paused may exceed the reaction bound by that much and be
	// inconclusive rather than a failure. 0 on sim and with a hardware RNIC.
	NICPauseLateNs int64 `json:"nic_pause_late_ns,omitempty"`
	// NICRxLateNs is how late after a frame's arrival a software RNIC
	// (either host) handled it, CNP pacing decisions included. With the
	// switch pipeline's LateMaxNs it makes the CNP check's lateness
	// (model.Params.CNPLatenessNs): a pacing decision within the timestamp
	// uncertainty plus both of min_time_between_cnps is inconclusive. 0 on
	// sim and with a hardware RNIC.
	NICRxLateNs int64 `json:"nic_rx_late_ns,omitempty"`
	// Slowdown is how many times slower than the wall clock the software
	// RNICs and switch ran (netns-slowdown on netns, lumina run --slowdown
	// on a remote testbed of software components; absent: real time or
	// the sim's virtual clock). Every time in the report is on their clock.
	Slowdown int64 `json:"slowdown,omitempty"`
}

// checkAnalyzers is report.json's entry of a valid run whose analysis
// failed to run (areport.CheckAnalyzers).
const checkAnalyzers = areport.CheckAnalyzers

// CheckEntry is one check's verdict.
type CheckEntry struct {
	Verdict model.Verdict `json:"verdict"`
	Detail  string        `json:"detail,omitempty"`
}

// GeneratorReport summarizes the traffic generator's results.
type GeneratorReport struct {
	GoodputGbps float64              `json:"goodput_gbps"`
	DurationNs  int64                `json:"duration_ns"`
	Bytes       int64                `json:"bytes"`
	Errors      []string             `json:"errors,omitempty"`
	QPs         []generator.QPResult `json:"qps"`
	Verified    bool                 `json:"responder_verified"`
	Stopped     string               `json:"stopped,omitempty"`
	// Flows is each flow's own result (the hosts form only), flows order.
	Flows []FlowGeneratorReport `json:"flows,omitempty"`
}

// FlowGeneratorReport is one flow's generator result: its name, goodput
// over its own duration, bytes, whether its responder verified its
// memory, and why it stopped early ("" if it completed).
type FlowGeneratorReport struct {
	Name        string  `json:"name"`
	GoodputGbps float64 `json:"goodput_gbps"`
	DurationNs  int64   `json:"duration_ns"`
	Bytes       int64   `json:"bytes"`
	Verified    bool    `json:"responder_verified"`
	Stopped     string  `json:"stopped,omitempty"`
}

func newReport(t *config.Test, rep int, run *Run) *Report {
	r := &Report{Schema: ReportSchema, Test: t.Name, File: t.File, Repeat: rep, Seed: t.Seed, Testbed: t.Testbed.String(),
		Checks: map[string]CheckEntry{}, Integrity: IntegrityReport{Verdict: model.Skip}, Connections: []ConnectionReport{}, Events: []EventReport{}}
	if run == nil {
		return r
	}
	seeds := run.Seeds
	r.Seeds = &seeds
	r.Personality = map[string]string{}
	for s, p := range run.Personality {
		r.Personality[s] = p.Name
	}
	if len(run.NICVersions) > 0 {
		r.NICVersions = run.NICVersions
	}
	for _, c := range run.Connections {
		r.Connections = append(r.Connections, reportConnection(modelConnection(c)))
	}
	if g := run.Generator; g != nil {
		r.Generator = &GeneratorReport{GoodputGbps: g.GoodputGbps, DurationNs: g.DurationNs, Bytes: g.Bytes, Errors: g.Errors, QPs: g.QPs,
			Stopped: run.Stopped}
		if g.Responder != nil {
			r.Generator.Verified = g.Responder.Verified
		}
		if t.HostsForm {
			for _, fr := range run.Flows {
				fg := FlowGeneratorReport{Name: fr.Name, Stopped: fr.Stopped}
				if res := fr.Result; res != nil {
					fg.GoodputGbps, fg.DurationNs, fg.Bytes = res.GoodputGbps, res.DurationNs, res.Bytes
					fg.Verified = res.Responder != nil && res.Responder.Verified
				}
				r.Generator.Flows = append(r.Generator.Flows, fg)
			}
		}
	}
	tm := run.Timing
	r.Timing = &TimingReport{UncertaintyNs: run.timestampUncertaintyNs(), Frames: tm.Frames, LateP50Ns: int64(tm.LateP50),
		LateP99Ns: int64(tm.LateP99), LateMaxNs: int64(tm.LateMax), ClampMaxNs: int64(tm.ClampMax), SentUncertaintyNs: run.sentUncertaintyNs(),
		NICTimerLateNs: int64(run.NICTimerLate), NICPauseLateNs: int64(run.NICPauseLate),
		NICRxLateNs: int64(run.NICRxLate)}
	if k := run.slowdown(); k > 1 {
		r.Timing.Slowdown = k
	}
	if run.pfcOn() {
		r.SwitchPorts = run.switchPorts()
	}
	r.Fabric = run.fabricModel()
	if st := run.SwitchPFC; st != nil {
		sp := &SwitchPFCReport{Ports: []SwitchPFCPort{}}
		for _, port := range slices.Sorted(maps.Keys(st.Counters)) {
			for prio, c := range st.Counters[port] {
				if c == (injector.PFCCounters{}) {
					continue
				}
				sp.Ports = append(sp.Ports, SwitchPFCPort{Port: port, Priority: prio, PFCCounters: c})
			}
		}
		for _, e := range st.Log {
			sp.Watchdog = append(sp.Watchdog, SwitchPFCEvent{AtNs: int64(e.At), Port: e.Port, Priority: e.Priority, Kind: e.Kind.String()})
		}
		r.SwitchPFC = sp
	}
	if run.Plan != nil {
		for _, e := range run.Plan.Events {
			er := EventReport{QP: e.QP, Msg: e.Msg, PSN: e.MsgPSN, RelPSN: e.RelPSN, AbsPSN: uint32(e.PSN),
				DestQP: e.DestQP, Iter: int(e.Iter), Type: e.Type,
				DelayNs: e.Params.DelayNs, Overtakers: e.Params.Overtakers, MaxHoldNs: e.Params.MaxHoldNs, Copies: e.Params.Copies}
			if e.Params.Direction != config.DirData {
				er.Direction = e.Params.Direction.String()
			}
			r.Events = append(r.Events, er)
			if e.Type >= config.EventDelay {
				r.InjectedEvents = append(r.InjectedEvents, modelEvent(e))
			}
		}
	}
	return r
}

// merge merges the dumps into the run's trace, checks its integrity and,
// if the trace is complete, evaluates the run's own checks (events
// applied, generator).
//
// The analyzers see the trace in the same pass: merge returns their stream
// (nil, with the reason, when the run has no connections to analyze).
// Cancelling ctx stops the pass (trace.MergeOptions.Context).
func (r *Report) merge(ctx context.Context, run *Run) (*analyzers.Stream, error) {
	// One pass over the dumper files writes the trace, checks it, finds
	// the packets the events hit and feeds the analyzers; the integrity
	// verdict the analyzers report is the one this pass computes.
	applied, unexpected := r.applyObserver()
	stream, serr := analyzers.NewStream(run.meta(), analyzers.Options{Checked: &run.Integrity}, filepath.Base(run.TracePath))
	var tp trace.Packet // one variable for the whole pass: &tp escapes
	n := 0
	v, err := mergeAndCheck(ctx, run, func(p trace.Packet) {
		applied(p)
		if stream != nil {
			tp = p
			tp.Index = n // the index in the merged trace
			stream.Packet(&tp)
		}
		n++
	})
	if err != nil {
		r.switchState(run, unexpected())
		r.Valid, r.Error = false, "merging or checking the trace: "+err.Error()
		r.Integrity = IntegrityReport{Verdict: model.Fail, Reason: err.Error()}
		r.Checks[areport.CheckIntegrity] = CheckEntry{Verdict: model.Fail, Detail: err.Error()}
		return nil, nil
	}
	run.Integrity = v
	r.TracePath = run.Test.AggregatePcapFilename
	r.Packets = v.Stats.Packets
	r.Integrity = IntegrityReport{Verdict: model.Pass, Reason: v.Reason}
	for _, c := range v.Checks {
		r.Integrity.Checks = append(r.Integrity.Checks, c.Name+": "+c.Status.String())
	}
	if !v.Pass {
		r.Integrity.Verdict = model.Fail
	}
	r.Valid = v.Pass
	r.Checks[areport.CheckIntegrity] = CheckEntry{Verdict: r.Integrity.Verdict, Detail: v.Reason}
	if !r.switchState(run, unexpected()) {
		r.Valid = false
	}
	if !r.Valid {
		return nil, nil // an invalid trace is not analyzed
	}
	ea := &areport.EventsApplied{Verdict: model.Pass, Total: len(r.Events)}
	for _, e := range r.Events {
		if e.Applied {
			ea.Applied++
		} else if len(ea.Missing) < maxListed {
			d := ""
			if e.Direction != "" {
				d = " " + e.Direction
			}
			ea.Missing = append(ea.Missing, fmt.Sprintf("qp %d msg %d psn %d (abs %#x) iter %d %s%s", e.QP, e.Msg, e.PSN, e.AbsPSN, e.Iter, e.Type, d))
		}
	}
	ea.Reason = fmt.Sprintf("%d of %d events applied", ea.Applied, ea.Total)
	switch {
	case ea.Total == 0:
		// Nothing to check is a skip, never a pass.
		ea.Verdict, ea.Reason = model.Skip, "the test installs no data-pkt-events"
	case ea.Applied < ea.Total:
		ea.Verdict = model.Fail
	}
	r.eventsApplied = ea
	r.Checks[areport.CheckEventsApplied] = CheckEntry{Verdict: ea.Verdict, Detail: ea.Reason}
	gen := &areport.Generator{}
	if r.Generator != nil {
		gen = r.generatorNumbers()
	}
	gen.Verdict = model.Pass
	switch g := r.Generator; {
	case g == nil:
		gen.Verdict, gen.Reason = model.Fail, "no generator results"
	case g.Stopped != "":
		gen.Verdict, gen.Reason = model.Fail, g.Stopped
	case len(g.Errors) > 0:
		gen.Verdict, gen.Reason = model.Fail, strings.Join(g.Errors, "; ")
	case !g.Verified:
		gen.Verdict, gen.Reason = model.Fail, "the responder's memory does not hold the data sent"
	}
	r.generator = gen
	r.Checks[areport.CheckGenerator] = CheckEntry{Verdict: gen.Verdict, Detail: gen.Reason}
	return stream, serr
}

// mergeAndCheck merges the run's dumper files into its trace and checks
// integrity with the switch and dumper counters, in one pass; also, if
// set, sees every merged packet. Cancelling ctx stops it.
func mergeAndCheck(ctx context.Context, run *Run, also func(trace.Packet)) (integrity.Verdict, error) {
	c := integrity.Counters{}
	if run.Switch != nil {
		var rx uint64
		for _, p := range run.HostPorts {
			rx += run.Switch.RxRoCE[p]
		}
		if fb := run.fabric; fb != nil {
			// Every switch mirrors what enters it: by a host's port or by
			// a link from another switch.
			for _, l := range fb.links {
				rx += run.Switch.RxRoCE[l.ports[0]] + run.Switch.RxRoCE[l.ports[1]]
			}
			for _, name := range fb.switches {
				c.Switches = append(c.Switches, integrity.SwitchCounters{Name: name})
			}
			for id, n := range run.Switch.LastSeq {
				if id < len(c.Switches) {
					c.Switches[id].LastSeq = integrity.Known(n)
				}
			}
		}
		c.SwitchRoCEReceived = integrity.Known(rx)
		c.SwitchMirrored = integrity.Known(run.Switch.MirrorTotal)
	}
	names := make([]string, len(run.DumperFiles))
	for i, p := range run.DumperFiles {
		names[i] = filepath.Base(p)
	}
	for i, d := range run.Dumpers {
		c.Dumpers = append(c.Dumpers, d.Counters())
		if i < len(names) && d.Name != "" {
			names[i] = d.Name
		}
	}
	chk, err := integrity.NewChecker(analyzers.RunIntegrityFor(run.Test), names...)
	if err != nil {
		return integrity.Verdict{}, err
	}
	observe := func(src int, p trace.Packet) error {
		if also != nil {
			also(p)
		}
		return chk.Observe(src, p)
	}
	// A run without a fabric has one switch: every copy is switch 0's, so
	// the merge needs neither the per-switch split nor a pass over the
	// dumper files to find that out (trace.OnlySwitchZero).
	mo := trace.MergeOptions{Seq: analyzers.RunIntegrity.Seq, Observe: observe, Context: ctx, OneSwitch: run.fabric == nil}
	if _, err := mo.MergeFiles(run.TracePath, 0, run.DumperFiles...); err != nil {
		return integrity.Verdict{}, err
	}
	return chk.Finish(c), nil
}

// applyObserver returns a function that, fed the merged trace in order,
// finds the mirror copies carrying each event's type for its (destination
// QPN, PSN): the k-th such copy is the event with the k-th smallest ITER.
// It counts every event-carrying copy per (destination QPN, PSN, event);
// unexpected returns, sorted, the keys with more copies than the intent
// has events (an event it did not ask for has none).
func (r *Report) applyObserver() (observe func(trace.Packet), unexpected func() []UnexpectedEvent) {
	type key struct {
		qpn, psn uint32
		ev       roce.Event
	}
	want := map[key][]int{} // → indices into r.Events, by ITER
	asked := map[key]int{}  // tagged copies the intent asks for
	for i, e := range r.Events {
		k := key{e.DestQP, e.AbsPSN, e.Type}
		want[k] = append(want[k], i)
		asked[k] += max(1, e.Copies) // a duplicate's copies are tagged, its original not
	}
	for _, idx := range want {
		sort.Slice(idx, func(a, b int) bool { return r.Events[idx[a]].Iter < r.Events[idx[b]].Iter })
	}
	seen := map[key]int{}
	var p roce.Packet
	pr := roce.Parser{}
	observe = func(tp trace.Packet) {
		if roce.FrameEvent(tp.Data) == roce.EventNone { // most copies: no parse
			return
		}
		if pr.Parse(tp.Data, tp.OrigLen, &p) != nil {
			return
		}
		m := p.Mirror()
		if m.Event == roce.EventNone {
			return
		}
		k := key{p.BTH.DestQP(), uint32(p.BTH.PSN()), m.Event}
		seen[k]++
		if idx := want[k]; len(idx) > 0 {
			e := &r.Events[idx[0]]
			if e.SeenCopies == 0 {
				e.TimeNs = m.TimestampNs
			}
			if e.Copies > 0 {
				e.SeenCopies++
			}
			if e.SeenCopies >= e.Copies {
				e.Applied = true
				want[k] = idx[1:]
			}
		}
	}
	unexpected = func() []UnexpectedEvent {
		var out []UnexpectedEvent
		for k, n := range seen {
			if n > asked[k] {
				out = append(out, UnexpectedEvent{DestQP: k.qpn, PSN: k.psn, Type: k.ev.String(), Copies: n, Asked: asked[k]})
			}
		}
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i], out[j]
			if a.DestQP != b.DestQP {
				return a.DestQP < b.DestQP
			}
			if a.PSN != b.PSN {
				return a.PSN < b.PSN
			}
			return a.Type < b.Type
		})
		return out
	}
	return observe, unexpected
}

// bufferDrops takes out of unexpected the copies tagged drop that the
// switch's buffer drops explain: the software switch tags the copy of a
// frame its queues have no room for (injector Switch.admit), so their
// number must not exceed its lossless_drops plus lossy_drops. It returns
// the rest and how many copies it took out (none when they outnumber
// the counted drops: then all stay unexpected).
func bufferDrops(run *Run, unexpected []UnexpectedEvent) ([]UnexpectedEvent, int) {
	var counted uint64
	if st := run.SwitchPFC; st != nil {
		for _, cs := range st.Counters {
			for _, c := range cs {
				counted += c.LosslessDrops + c.LossyDrops
			}
		}
	}
	var copies int
	var rest []UnexpectedEvent
	for _, u := range unexpected {
		if u.Type == roce.EventDrop.String() {
			copies += u.Copies - u.Asked
		} else {
			rest = append(rest, u)
		}
	}
	if copies == 0 || uint64(copies) > counted {
		return unexpected, 0
	}
	return rest, copies
}

// switchState evaluates whether the switch did only what the intent
// asked: the unexpected event copies of the merge, the event_drops
// counters against the plan's drop events, the tables read back after
// traffic and lumina's arbitration. It sets SwitchState and
// checks["switch_state"] and reports whether the check passed.
func (r *Report) switchState(run *Run, unexpected []UnexpectedEvent) bool {
	ss := &SwitchStateReport{Verdict: model.Pass, LostPrimary: run.LostPrimary}
	r.SwitchState = ss
	unexpected, ss.BufferDropCopies = bufferDrops(run, unexpected)
	if len(unexpected) > 0 {
		var parts []string
		for _, u := range unexpected {
			ss.UnexpectedCopies += u.Copies - u.Asked
			if len(parts) < 5 {
				parts = append(parts, fmt.Sprintf("%s at dest QP %#x PSN %#x: %d copies, %d asked", u.Type, u.DestQP, u.PSN, u.Copies, u.Asked))
			}
		}
		if len(unexpected) > 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(unexpected)-5))
		}
		ss.Reasons = append(ss.Reasons, fmt.Sprintf("%d mirror copies carry an event the test did not ask for or more often than asked: %s",
			ss.UnexpectedCopies, strings.Join(parts, "; ")))
		ss.UnexpectedEvents = unexpected[:min(len(unexpected), maxListed)]
	}
	if run.Switch != nil {
		drops := map[uint32]uint64{} // drop events installed, by ingress port: each fires at most once
		if run.Plan != nil {
			for _, e := range run.Plan.Events {
				if e.Type == config.EventDrop {
					drops[e.Port]++
				}
			}
		}
		var parts []string
		for _, port := range slices.Sorted(maps.Keys(run.Switch.EventDrops)) {
			if n := run.Switch.EventDrops[port]; n > drops[port] {
				parts = append(parts, fmt.Sprintf("%d on port %d, the intent can cause at most %d", n, port, drops[port]))
			}
		}
		if len(parts) > 0 {
			ss.Reasons = append(ss.Reasons, "switch counter event_drops: "+strings.Join(parts, "; "))
		}
	}
	if d := run.TableDiff; len(d) > 0 {
		shown := d[:min(len(d), 5)]
		more := ""
		if len(d) > 5 {
			more = fmt.Sprintf("; and %d more", len(d)-5)
		}
		ss.Reasons = append(ss.Reasons, fmt.Sprintf("the tables lumina installed differ from the plan after traffic (%d differences): %s%s",
			len(d), strings.Join(shown, "; "), more))
		ss.TableDiff = d[:min(len(d), maxListed)]
	}
	if len(run.LostPrimary) > 0 {
		ss.Reasons = append(ss.Reasons, "lumina lost primary arbitration during the run: "+strings.Join(run.LostPrimary, "; "))
	}
	if len(ss.Reasons) == 0 {
		r.Checks[areport.CheckSwitchState] = CheckEntry{Verdict: model.Pass}
		return true
	}
	ss.Verdict, ss.Reason = model.Fail, strings.Join(ss.Reasons, " | ")
	r.Checks[areport.CheckSwitchState] = CheckEntry{Verdict: model.Fail, Detail: ss.Reason}
	return false
}

// Verdicts returns the names of the checks with verdict v, sorted.
func (r *Report) Verdicts(v model.Verdict) []string {
	var names []string
	for n, c := range r.Checks {
		if c.Verdict == v {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Passed reports whether no check failed (skipped and inconclusive checks
// do not fail).
func (r *Report) Passed() bool {
	for _, c := range r.Checks {
		if c.Verdict == model.Fail {
			return false
		}
	}
	return true
}

// Text is report.txt: the text report lumina analyze writes too
// (areport.TextRun), headed by the run's test, NICs and timing: every
// check with its reason and numbers, and the result line.
func (r *Report) Text() string {
	if r.Analysis == nil {
		r.addRunChecks()
	}
	return areport.TextRun(r.Analysis, r.textRun())
}

// textRun is the heading of report.txt.
func (r *Report) textRun() *areport.RunInfo {
	info := r.htmlRun()
	info.Testbed, info.Error = r.Testbed, firstLine(r.Error)
	add := func(format string, args ...any) { info.Notes = append(info.Notes, fmt.Sprintf(format, args...)) }
	if tm := r.Timing; tm != nil {
		if tm.Slowdown > 1 {
			key := "netns-slowdown"
			if r.Testbed == config.TestbedRemote.String() {
				key = "lumina run --slowdown"
			}
			add("clock: the software RNICs and switch ran %d× slower than the wall clock (%s); times are on their clock", tm.Slowdown, key)
		}
		if tm.UncertaintyNs > 0 || tm.Frames > 0 {
			add("timestamps: uncertainty %d ns; switch pipeline ran %d/%d/%d ns (p50/p99/max) after arrival over %d frames",
				tm.UncertaintyNs, tm.LateP50Ns, tm.LateP99Ns, tm.LateMaxNs, tm.Frames)
		}
		if tm.NICTimerLateNs > 0 {
			add("requester RNIC timers ran up to %d ns late (allowed above the timeout bound)", tm.NICTimerLateNs)
		}
		if tm.NICPauseLateNs > 0 {
			add("RNICs applied PFC pauses up to %d ns late (allowed above the reaction bound)", tm.NICPauseLateNs)
		}
		if tm.NICRxLateNs > 0 {
			add("RNICs handled frames up to %d ns after their arrival (with the switch pipeline's, allowed around the CNP pacing interval)", tm.NICRxLateNs)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.Checks)) {
		if c := r.Checks[n]; !slices.Contains(areport.CheckOrder, n) {
			add("check %s: %s %s", n, c.Verdict, c.Detail)
		}
	}
	return info
}

// firstLine is s's first line, trimmed.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// NICHosts returns, sorted, the hosts the report names a NIC of (a
// personality or versions): "requester" and "responder" in the two-host
// form, the host names in the hosts form.
func (r *Report) NICHosts() []string {
	hosts := slices.Collect(maps.Keys(r.Personality))
	for h := range r.NICVersions {
		if _, ok := r.Personality[h]; !ok {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts)
	return hosts
}
