package config

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// PFC is a traffic host NIC's priority flow control (YAML key nic.pfc).
// Absent (nil): PFC off on that NIC.
type PFC struct {
	// Priorities are the lossless priorities (0..7): the NIC honours PFC
	// frames for them and pauses the switch when its receive buffer
	// fills. YAML key priorities; required, not empty.
	Priorities []int
	// PageSize is the size in bytes of the pages backing the NIC's
	// registered memory (4096, or 2097152 for 2 MiB huge pages): what one
	// MTT entry covers. YAML key page-size; default 4096.
	PageSize int
}

// PrioritiesMask returns the priorities as a bitmap (bit p for priority p).
func (p *PFC) PrioritiesMask() uint8 {
	var m uint8
	for _, x := range p.Priorities {
		m |= 1 << uint(x)
	}
	return m
}

// PFCWatchdog is the switch's PFC watchdog (YAML key switch.pfc-watchdog).
// Absent (nil): no switch watchdog.
type PFCWatchdog struct {
	// DetectionMs is how long an egress queue must stay paused without
	// draining before lossless mode is turned off for it. YAML key
	// detection-ms; default 100.
	DetectionMs int
	// RestorationMs is how long pauses must have been gone before lossless
	// mode is turned on again. YAML key restoration-ms; default 200.
	RestorationMs int
}

// PFCEventType is what a pfc-events entry does.
type PFCEventType int

// PFC event types.
const (
	// PFCPause: the switch sends PFC frames to a host.
	PFCPause PFCEventType = 1
	// PFCRxStall: a host NIC's receive pipeline stops (software NIC only).
	PFCRxStall PFCEventType = 2
)

var pfcEventTypeNames = []string{"pause", "rx-stall"}

// String returns the YAML spelling.
func (e PFCEventType) String() string {
	if e >= PFCPause && int(e) <= len(pfcEventTypeNames) {
		return pfcEventTypeNames[e-1]
	}
	return fmt.Sprintf("PFCEventType(%d)", int(e))
}

// PFCEvent is one entry of traffic.pfc-events. Times count from the start
// of traffic.
type PFCEvent struct {
	// Type is pause or rx-stall. YAML key type; required.
	Type PFCEventType
	// To is the host the switch pauses (pause): requester or responder.
	// YAML key to.
	To string
	// Host is the host whose NIC stalls (rx-stall): requester or
	// responder. YAML key host.
	Host string
	// Priority is the paused priority (pause, 0..7). YAML key priority.
	Priority int
	// Quanta is each PFC frame's pause time in 512-bit-time quanta
	// (pause, 0..65535; 0 resumes). YAML key quanta; default 65535.
	Quanta int
	// StartUs is when the event starts. YAML key start-us; default 0.
	StartUs int
	// Start, instead of StartUs, starts a pause when the switch sees that
	// data packet. YAML key start: {qpn, psn, iter, msg}.
	Start *PacketRef
	// DurationUs is how long the event lasts: pause frames are sent from
	// the start for DurationUs, one every IntervalUs (0: one frame); a
	// stall lasts DurationUs (0: until the end). YAML key duration-us;
	// default 0.
	DurationUs int
	// IntervalUs is the time between pause frames (pause; required when
	// duration-us is not 0). YAML key interval-us.
	IntervalUs int
	// At is the switch that sees the start packet (with Start only), on
	// the start flow's route. YAML key at; default empty: the flow's
	// observed switch (Test.ObservedSwitch). Fabric form only.
	At string
	// Pos is where the entry starts in Test.File.
	Pos Pos
}

// PacketRef names a data packet as events do: the flow, its QP index,
// packet index in message Msg, transmission round.
type PacketRef struct {
	// Flow is the flow's name. YAML key flow; required in the hosts form;
	// in the two-host form it may only be "traffic" (the one flow), and
	// Test.PFCEvents (Normalize) has it set to that. Test.FlowIndex maps
	// it to the flow.
	Flow string
	QPN  int // YAML key qpn; required
	PSN  int // YAML key psn; required
	Iter int // YAML key iter; default 1
	Msg  int // YAML key msg; default 0
}

var pfcSection = sect[PFC]("`pfc` (traffic host `nic`)", []key{
	{name: "priorities", field: "Priorities", req: true, dec: decPriorities},
	{name: "page-size", field: "PageSize", dec: ints(512, 1<<30, "(page-size: bytes per page, 4096 or 2097152 for huge pages)"), def: 4096},
})

var pfcWatchdogSection = sect[PFCWatchdog]("`pfc-watchdog` (`switch`)", []key{
	{name: "detection-ms", field: "DetectionMs", dec: ints(1, 3_600_000, ""), def: 100},
	{name: "restoration-ms", field: "RestorationMs", dec: ints(1, 3_600_000, ""), def: 200},
})

var pfcEventSection = sect[PFCEvent]("PFC events", []key{
	{name: "type", field: "Type", req: true, dec: decPFCEventType},
	{name: "to", field: "To", dec: decSide, omit: true, doc: "– (required with `type: pause`)"},
	{name: "host", field: "Host", dec: decSide, omit: true, doc: "– (required with `type: rx-stall`)"},
	{name: "priority", field: "Priority", dec: ints(0, 7, ""), omit: true, doc: "– (required with `type: pause`)"},
	{name: "quanta", field: "Quanta", dec: ints(0, 65535, ""), def: 65535, omit: true},
	{name: "start-us", field: "StartUs", dec: ints(0, MaxStartUs, ""), omit: true},
	{name: "start", field: "Start", sub: packetRefSection, dec: decPacketRef, omit: true, doc: "– (instead of `start-us`)"},
	{name: "duration-us", field: "DurationUs", dec: ints(0, MaxStartUs, ""), omit: true},
	{name: "interval-us", field: "IntervalUs", dec: ints(1, MaxStartUs, ""), omit: true, doc: "– (required with `type: pause` and `duration-us`)"},
	{name: "at", field: "At", dec: decSwitchRef, omit: true, doc: "the start flow's observed switch (with `start`; `switches` only)"},
})

var packetRefSection = sect[PacketRef]("`start` (PFC events)", []key{
	{name: "flow", field: "Flow", dec: decFlowRef, omit: true, doc: "– (required in the hosts form)"},
	{name: "qpn", field: "QPN", req: true, dec: ints(0, inf, "(qpn is the 0-based QP index)")},
	{name: "psn", field: "PSN", req: true, dec: ints(0, inf, "(psn is the 0-based packet index within the message)")},
	{name: "iter", field: "Iter", def: 1, dec: ints(1, 0xFFFF, "")},
	{name: "msg", field: "Msg", omit: true, dec: ints(0, inf, "(msg is the 0-based message index)")},
})

var sideNames = []string{"requester", "responder"}

func decPriorities(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	elems, _ := d.seq(v, path)
	list := ptr[[]int](f)
	seen := map[int]bool{}
	for i, e := range elems {
		var x int
		p := fmt.Sprintf("%s[%d]", path, i)
		if !d.intIn(e, p, &x, 0, 7, "(a priority)") {
			d.bad[path] = true
			continue
		}
		if seen[x] {
			d.fail(e, p, "priority %d listed twice", x)
			continue
		}
		seen[x] = true
		*list = append(*list, x)
	}
	if len(elems) == 0 && v.Kind == yaml.SequenceNode {
		if lastKey(parentPath(path)) == "ecn" {
			d.fail(v, path, "want at least one priority 0..7 (omit ecn to turn marking by queue depth off)")
		} else {
			d.fail(v, path, "want at least one priority 0..7 (omit pfc to turn PFC off)")
		}
	}
}

// decPtrSection decodes a mapping into a new *T (absent: nil).
func decPtrSection[T any](sec *section) decodeFunc {
	return func(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
		p := new(T)
		rv := reflect.ValueOf(p).Elem()
		setDefaults(sec, rv)
		if d.section(v, path, sec, rv) {
			f.Set(reflect.ValueOf(p))
		}
	}
}

var (
	decPFC         = decPtrSection[PFC](pfcSection)
	decPFCWatchdog = decPtrSection[PFCWatchdog](pfcWatchdogSection)
	decPacketRef   = decPtrSection[PacketRef](packetRefSection)
)

func decPFCEventType(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	if i, ok := d.enum(v, path, pfcEventTypeNames); ok {
		f.SetInt(int64(i + 1))
	}
}

// decPFCEvents decodes traffic.pfc-events.
func decPFCEvents(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	elems, _ := d.seq(v, path)
	events := ptr[[]PFCEvent](f)
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		ev := PFCEvent{Pos: Pos{max(e.Line, 1), max(e.Column, 1)}}
		rv := reflect.ValueOf(&ev).Elem()
		setDefaults(pfcEventSection, rv)
		if d.section(e, p, pfcEventSection, rv) {
			*events = append(*events, ev)
		}
	}
}

// pfcEvents returns PFCEvents, or for a two-host Test that was never
// normalized (built by hand without Normalize) traffic.pfc-events.
func (t *Test) pfcEvents() []PFCEvent {
	if len(t.Flows) == 0 && !t.HostsForm {
		return t.Traffic.PFCEvents
	}
	return t.PFCEvents
}

// RemoteStartPause says why a pause that starts on a packet (start:
// {qpn, psn, iter}) cannot run on the remote testbed.
const RemoteStartPause = "a pause with start (on a packet) needs a data-plane trigger of the Tofino's packet generator that lumina.p4 does not program " +
	"(Tofino 2's deparser trigger; Tofino 1 has only a recirculated-packet pattern); give start-us (docs/tofino.md §8)"

// validatePFC checks the PFC keys that involve more than one key.
func (d *decoder) validatePFC(t *Test) {
	ep := pfcEventsPath(t)
	which := "requester or responder"
	if t.HostsForm {
		which = "a host of hosts"
	}
	for i := range t.PFCEvents {
		ev := &t.PFCEvents[i]
		path := fmt.Sprintf("%s[%d]", ep, i)
		if d.bad[path] || d.bad[path+".type"] || ev.Type == 0 {
			continue
		}
		if t.Testbed == TestbedRemote && ev.Type == PFCRxStall {
			d.errorAt(ev.Pos, "testbed remote: type rx-stall needs the software NIC (sim, netns)")
			continue
		}
		if t.Testbed == TestbedRemote && ev.Start != nil {
			// On a Tofino the pause is the packet generator's (docs/tofino.md §8).
			d.errorAt(d.pos(path+".start"), "testbed remote: "+RemoteStartPause)
		}
		given := func(k string) bool { return d.given(path + "." + k) }
		only := func(k string, typ PFCEventType) {
			if given(k) && ev.Type != typ {
				d.errorAt(d.pos(path+"."+k), fmt.Sprintf("%s applies to type %s only (this event is %s)", k, typ, ev.Type))
			}
		}
		// known reports whether name (of key k) names a host; it reports
		// the names that do not (two-host names are checked by decoding).
		known := func(k, name string) bool {
			if name == "" || d.bad[path+"."+k] {
				return false
			}
			if t.Host(name) == nil {
				if !d.bad["hosts"] {
					d.errorAt(d.pos(path+"."+k), noSuch(k, "host", name, hostNames(t)))
				}
				return false
			}
			return true
		}
		switch ev.Type {
		case PFCPause:
			if ev.To == "" {
				d.errorAt(ev.Pos, fmt.Sprintf("type pause needs to: the host the switch pauses (%s)", which))
			}
			toOK := known("to", ev.To)
			if !given("priority") {
				d.errorAt(ev.Pos, "type pause needs priority: the paused priority 0..7")
			} else if hi := t.HostIndex(ev.To); toOK && t.Hosts[hi].NIC.PFC == nil && !d.bad[hostPath(t, hi)+".nic.pfc"] {
				// Without PFC the NIC discards the pauses as unknown
				// frames: nothing pauses, and the counters check fails
				// the NIC for discards the test caused.
				hp := hostPath(t, hi)
				d.errorAt(d.pos(path+".to"), fmt.Sprintf("to: %[1]s has no nic.pfc, so its NIC would discard the pauses instead of pausing; "+
					"add nic.pfc with priority %[2]d to %[3]s (nic: {pfc: {priorities: [%[2]d]}})", ev.To, ev.Priority, hp))
			}
			if ev.DurationUs > 0 && ev.IntervalUs == 0 {
				d.errorAt(d.pos(path+".duration-us"), "duration-us needs interval-us: the time between pause frames")
			}
			if ev.Start != nil {
				d.checkStart(t, i, path)
			}
		case PFCRxStall:
			if ev.Host == "" {
				d.errorAt(ev.Pos, fmt.Sprintf("type rx-stall needs host: the host whose NIC stops receiving (%s)", which))
			}
			known("host", ev.Host)
			if ev.Start != nil {
				d.errorAt(d.pos(path+".start"), "start applies to type pause only: an rx-stall starts at start-us")
			}
		}
		if ev.Start != nil && given("start-us") {
			d.errorAt(d.pos(path+".start"), "give start-us or start, not both")
		}
		only("to", PFCPause)
		only("priority", PFCPause)
		only("quanta", PFCPause)
		only("interval-us", PFCPause)
		only("host", PFCRxStall)
	}
}

// checkStart checks the start packet of PFC event i (at path): its flow,
// and its qpn, psn and msg against that flow's traffic.
func (d *decoder) checkStart(t *Test, i int, path string) {
	sp := path + ".start"
	f := 0
	if t.HostsForm {
		name := t.PFCEvents[i].Start.Flow
		if d.bad[sp+".flow"] {
			return
		}
		if name == "" {
			d.errorAt(d.firstPos(sp), fmt.Sprintf("missing key %q in %s: in the hosts form the start packet names its flow", "flow", sp))
			return
		}
		if f = t.FlowIndex(name); f < 0 {
			d.errorAt(d.pos(sp+".flow"), noSuch("flow", "flow", name, flowNames(t)))
			return
		}
	} else if name := t.Traffic.PFCEvents[i].Start.Flow; name != "" && name != TrafficName {
		d.errorAt(d.pos(sp+".flow"), fmt.Sprintf("flow: want %s (the one flow of the two-host form), got %q; or omit flow", TrafficName, name))
		return
	}
	ref, tr, fp := t.PFCEvents[i].Start, &t.Flows[f].Traffic, flowPath(t, f)
	of := ""
	if t.HostsForm {
		of = " of flow " + t.Flows[f].Name
	}
	if !d.bad[fp+".num-qps"] && ref.QPN >= tr.NumQPs {
		d.errorAt(d.pos(sp+".qpn"), fmt.Sprintf("qpn: want 0..%d, got %d (num-qps%s is %d)", tr.NumQPs-1, ref.QPN, of, tr.NumQPs))
	}
	if ppm := tr.PacketsPerMessage(); ref.PSN >= ppm && !d.bad[fp+".mtu"] && !d.bad[fp+".message-size"] {
		d.errorAt(d.pos(sp+".psn"), fmt.Sprintf("psn: want 0..%d, got %d (a message%s is %s)", ppm-1, ref.PSN, of, plural(ppm, "packet")))
	}
	if !d.bad[fp+".num-msgs-per-qp"] && ref.Msg >= tr.NumMsgsPerQP {
		d.errorAt(d.pos(sp+".msg"), fmt.Sprintf("msg: want 0..%d, got %d", tr.NumMsgsPerQP-1, ref.Msg))
	}
}
