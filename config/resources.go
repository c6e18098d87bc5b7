package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/roce"
)

// Resources are the limits of the machine a test is validated for (the one
// that runs it: `lumina validate` and `lumina run` pass the same ones, so
// they agree). The zero value checks nothing machine-dependent; the dumper
// capacity check (num-pkts) is always made.
type Resources struct {
	// MemoryBytes is the most memory a run on this machine may need (sim
	// and netns testbeds, where every component runs here). 0: not
	// checked. `lumina` sets it to DefaultMemoryFraction of the physical
	// memory unless --memory-limit is given.
	MemoryBytes int64
	// DiskFree returns the free bytes under the results directory of a
	// test whose result-path is resultPath (the caller applies its own
	// override, such as `lumina run -o`), and ok false when unknown. nil:
	// not checked.
	DiskFree func(resultPath string) (free int64, ok bool)
	// SpoolFree returns, for the sim and netns testbeds, the spool
	// directory where the dumpers write their files during a repeat
	// before the merge (the temporary directory: $TMPDIR, else /tmp), the
	// free bytes on its file system, and shared true when that is also the
	// file system of the results directory of resultPath (then both needs
	// add up there); ok false when unknown. nil: not checked.
	SpoolFree func(resultPath string) (dir string, free int64, shared, ok bool)
}

// DefaultMemoryFraction is the share of physical memory a run may plan to
// use by default: half, leaving the rest to the kernel's page cache (the
// trace is written through it) and to whatever else the machine runs.
const DefaultMemoryFraction = 0.5

// MaxNetnsWallTime is the longest wall-clock time a netns test may
// certainly take because of its holds and PFC events: the longest delay
// or reorder hold, or the end of the last PFC event, times netns-slowdown
// (the switch holds the packet, and the driver waits for it after
// traffic, that long on the wall clock; docs/run.md#netns-slowdown).
// Validation refuses a test above it.
const MaxNetnsWallTime = 24 * time.Hour

// Estimate is what a test needs, as validation computes it before the run.
type Estimate struct {
	// MinPackets is the fewest RoCE packets the switch certainly mirrors
	// in one repeat: every data packet of every message once (for READ,
	// the request too), no acknowledgement, no retransmission.
	MinPackets int64
	// EventPackets is what the data-pkt-events add at most: each copy of
	// a duplicated packet and its acknowledgement, and for each event
	// that loses or holds a packet (drop, corrupt, delay, reorder) a
	// go-back-N resend of the rest of the message and its
	// acknowledgements.
	EventPackets int64
	// Packets is the expected upper end: MinPackets, one acknowledgement
	// per data packet (responders coalesce, so usually fewer), 10% for
	// retransmissions, and EventPackets.
	Packets int64
	// PFCFrames is the PFC frames the switch mirrors at most: every frame
	// of every pause event (duration-us / interval-us + 1), and for an
	// rx-stall the stalled NIC's pause refreshes and the switch's pauses
	// to the other host over the stall.
	PFCFrames int64
	// TraceBytes is one repeat's merged trace: Packets and PFCFrames as
	// pcap records cut at the snap length.
	TraceBytes int64
	// MinTraceBytes is the smallest one repeat's merged trace certainly
	// is: MinPackets as pcap records cut at the snap length.
	MinTraceBytes int64
	// DiskBytes is the disk one repeat's results take: the merged trace,
	// and as much again for the dumper files when keep-dumper-files is
	// true.
	DiskBytes int64
	// SpoolBytes is what the dumpers write into the spool directory
	// during a repeat on the sim and netns testbeds (TraceBytes), before
	// the merge copies it under the results directory.
	SpoolBytes int64
	// GeneratorBytes is the message memory of the generators: per flow, a
	// message buffer per QP on each of its hosts and the software RNICs'
	// work on them (measured about 2.5 × num-qps × message-size; 3 × is
	// counted), summed over the flows.
	GeneratorBytes int64
	// DumperBytes is the capture memory of every dumper: per worker, the
	// afpacket/dpdk ring (64 MiB) and a 4 MiB write buffer.
	DumperBytes int64
	// HoldBytes is what the switch may hold at once for delay and reorder
	// events: every packet an event matches, at most what a 400 Gb/s link
	// carries during the hold.
	HoldBytes int64
	// PlotBytes is report.html's graph data: PlotPacketMemory a packet
	// and PFC frame (Packets, PFCFrames), at most PlotMemory however long the trace.
	PlotBytes int64
	// RecordBytes is what the run keeps of the traffic until its
	// analysis ends (the generators' and analyzers' records): PlotBytes
	// for report.html's graph data; PacketMemory
	// per packet the events add (EventPackets: each one a loss, a hold or
	// a copy the analyzers may keep a result for) and per PFC frame;
	// MessageMemory per message. Nothing is kept per packet of the
	// traffic itself: the run streams the trace (docs/run.md#tests-of-any-length).
	RecordBytes int64
	// MemoryBytes is the most memory the run needs on one machine on the
	// sim and netns testbeds: GeneratorBytes, DumperBytes, HoldBytes,
	// RecordBytes and BaseMemory.
	MemoryBytes int64
}

// Capture memory of a dumper worker (the dumper package's defaults: a
// 64 MiB kernel or DPDK ring and a 4 MiB write buffer; the sim backend
// needs only the buffer).
const (
	dumperRingBytes   = 64 << 20
	dumperWriteBuffer = 4 << 20
)

// BaseMemory is what a run needs besides message buffers, dumpers, holds
// and records: the processes, the merge (a read buffer per dumper) and the
// sim's packets in flight.
const BaseMemory = 256 << 20

// PacketMemory and MessageMemory are the memory a run keeps per packet an
// event adds (and per PFC frame) and per message until its analysis ends.
// Measured with /usr/bin/time -v on sim (peak RSS of `lumina run`) when
// the run still kept every packet: about 140 B per packet (4 QPs × 512
// messages of 1 MiB: 2.1 M packets, 432 MiB) and 640 B per message (4 QPs
// × 131072 messages of 1 KiB: 1 M packets, 553 MiB). The run now keeps
// nothing per packet of the traffic (the same test at 1 M, 10 M and 100 M
// packets peaks at the same RSS, docs/run.md#tests-of-any-length), so
// PacketMemory is counted only for the packets that may each leave a
// result (a loss, a hold, a copy, a PFC frame): an upper bound.
const (
	PacketMemory  = 128
	MessageMemory = 768
)

// PlotPacketMemory is report.html's graph data per packet of the trace:
// the analyzers keep one packet record of report.RecordBytes (64 B) for
// each of the first report.MaxPlotPackets packets, and as much again while
// the page encodes it. PlotMemory bounds it whatever the trace's length:
// at most 64 MiB of packet records (report.MaxPlotBytes) and as much again
// while the page encodes them. (config does not import the analyzers;
// TestPlotMemoryIsReports checks both against analyzers/report.)
const (
	PlotPacketMemory = 2 * 64
	PlotMemory       = 128 << 20
)

// pcapRecordOverhead is a pcap record header.
const pcapRecordOverhead = 16

// roceOverhead is the bytes of a RoCEv2 data packet around its payload:
// Ethernet, IPv4, UDP, BTH, RETH and ICRC, plus the frame check sequence.
const roceOverhead = 14 + 20 + 8 + 12 + 16 + 4 + 4

// pfcMirrorBytes is a PFC frame's mirror copy: the 18-byte wrapping
// header (roce.MACMirrorHeaderLen) and the 64-byte frame.
const pfcMirrorBytes = 18 + 64

// fastestRefreshUs is the shortest interval between a NIC's PFC pause
// refreshes that the estimate assumes: half of 65535 quanta at 400 Gb/s
// (IEEE 802.1Qbb: a quantum is 512 bit times), about 42 µs.
const fastestRefreshUs = 65535 * 512 / 400_000 / 2

// holdBytesPerUs is what a 400 Gb/s link carries in a microsecond.
const holdBytesPerUs = 400_000 / 8

// Estimate returns what t needs (see Estimate): the sum over its flows,
// which share the switches, one trace and (on sim and netns) one machine.
func (t *Test) Estimate() Estimate {
	var e Estimate
	var data, minData, qpMsgs int64 // bytes of data packets in the trace (at most, at least); messages of all QPs
	var snap int64
	for _, dm := range t.Dumpers {
		snap = max(snap, int64(dm.SnapLen))
	}
	cut := func(n int64) int64 {
		if snap > 0 {
			n = min(n, snap)
		}
		return n + pcapRecordOverhead
	}
	for _, fl := range t.flows() {
		fe := fl.Traffic.estimate()
		// In a fabric every switch on the flow's route mirrors each of its
		// packets (docs/fabric.md).
		hops := int64(t.routeLen(fl))
		e.MinPackets += fe.MinPackets * hops
		e.EventPackets += fe.EventPackets * hops
		e.Packets += fe.Packets * hops
		e.HoldBytes += fe.HoldBytes
		e.GeneratorBytes += fe.GeneratorBytes
		data += fe.Packets * hops * cut(int64(fl.mtuOrDefault()+roceOverhead))
		minData += fl.Traffic.minDataBytes(cut) * hops
		qpMsgs += int64(max(fl.NumQPs, 1)) * int64(max(fl.NumMsgsPerQP, 1))
	}
	for _, pe := range t.pfcEvents() {
		switch pe.Type {
		case PFCPause:
			e.PFCFrames++
			if pe.DurationUs > 0 && pe.IntervalUs > 0 {
				e.PFCFrames += int64(pe.DurationUs / pe.IntervalUs)
			}
		case PFCRxStall:
			// The stalled NIC's refreshes and the switch's own to the other
			// host (the pause spreads).
			e.PFCFrames += 2 * (int64(pe.DurationUs)/fastestRefreshUs + 1)
		}
	}
	if t.Fabric() {
		// A pause spreads: any switch port may pause its peer, every
		// pause is mirrored by the switch that sends it and the one that
		// receives it, and with deadlock-ms the pauses of a deadlocked
		// cycle go on for that long after traffic.
		ports := int64(len(t.Topology().Ports))
		e.PFCFrames *= 2 * ports
		e.PFCFrames += 2 * ports * (int64(t.DeadlockMs)*1000/fastestRefreshUs + 1)
	}
	e.TraceBytes = data + e.PFCFrames*cut(pfcMirrorBytes)
	e.MinTraceBytes = minData
	e.DiskBytes = e.TraceBytes
	if t.KeepDumperFiles {
		e.DiskBytes *= 2
	}
	e.SpoolBytes = e.TraceBytes
	for _, dm := range t.Dumpers {
		per := int64(dumperWriteBuffer)
		if dm.Backend != BackendSim {
			per += dumperRingBytes
		}
		e.DumperBytes += int64(max(dm.Workers, 1)) * per
	}
	e.PlotBytes = min(PlotMemory, (e.Packets+e.PFCFrames)*PlotPacketMemory)
	e.RecordBytes = e.PlotBytes + (e.EventPackets+e.PFCFrames)*PacketMemory + qpMsgs*MessageMemory
	e.MemoryBytes = e.GeneratorBytes + e.DumperBytes + e.HoldBytes + e.RecordBytes + BaseMemory
	return e
}

// estimate returns one flow's MinPackets, EventPackets, Packets,
// HoldBytes and GeneratorBytes.
func (tr *Traffic) estimate() Estimate {
	ppm := int64(tr.PacketsPerMessage())
	msgs := int64(max(tr.NumMsgsPerQP, 1))
	qps := int64(max(tr.NumQPs, 1))
	var e Estimate
	for qp := range max(tr.NumQPs, 1) {
		n := ppm
		if tr.QPVerb(qp) == VerbRead {
			n++ // the request
		}
		e.MinPackets += n * msgs
	}
	frame := int64(tr.mtuOrDefault() + roceOverhead)
	for _, ev := range tr.Events {
		evMsgs, evPkts := int64(1), int64(1)
		if ev.Msg == AllMessages {
			evMsgs = msgs
		}
		if ev.PSN == AllPackets {
			evPkts = ppm
		}
		matched := evMsgs * evPkts
		switch ev.Type {
		case EventDuplicate:
			e.EventPackets += 2 * matched * int64(max(ev.Copies, 1))
		case EventDrop, EventCorrupt, EventDelay, EventReorder:
			e.EventPackets += 2 * evMsgs * ppm
		}
		hold := int64(0)
		switch ev.Type {
		case EventDelay:
			hold = int64(ev.DelayUs)
		case EventReorder:
			hold = int64(ev.MaxHoldUs)
		}
		if hold > 0 {
			e.HoldBytes += min(matched*frame, max(hold*holdBytesPerUs, frame))
		}
	}
	e.Packets = e.MinPackets*2*11/10 + e.EventPackets
	e.GeneratorBytes = 3 * qps * int64(max(tr.MessageSize, 1))
	return e
}

// minDataBytes returns the fewest bytes the data packets of one flow take
// in the trace, each cut by cut: every message once, in full packets of the
// MTU and a last one of the rest (READ requests not counted).
func (tr *Traffic) minDataBytes(cut func(int64) int64) int64 {
	mtu := int64(tr.mtuOrDefault())
	size := int64(max(tr.MessageSize, 0))
	per := size / mtu * cut(mtu+roceOverhead)
	if rest := size % mtu; rest > 0 || size == 0 {
		per += cut(rest + roceOverhead)
	}
	return per * int64(max(tr.NumMsgsPerQP, 1)) * int64(max(tr.NumQPs, 1))
}

// TrafficDeadline bounds a run's traffic on the testbed's clock (virtual
// on sim; the models' clock on netns, netns-slowdown times slower than
// the wall clock): the time to send everything at 1 Gb/s plus, per
// message, every retry at the longest timeout any personality uses
// (8·T_tr, or the adaptive stages), plus slack. A flow with
// post-interval-us adds its post schedule, (num-msgs-per-qp − 1) ×
// post-interval-us; one whose hosts use ODP adds its page faults (odpWait).
func (t *Test) TrafficDeadline() time.Duration {
	// The flows share the switch: all their bytes at 1 Gb/s, then the
	// slowest flow's retries after its start.
	var send, rest time.Duration
	for _, fl := range t.flows() {
		tr := fl.Traffic
		bytes := float64(tr.NumQPs) * float64(tr.NumMsgsPerQP) * float64(max(tr.MessageSize, 64))
		send += time.Duration(bytes * 8) // ns at 1 Gb/s
		retry := time.Duration(tr.MaxRetransmitRetry+1) * 8 * roce.TransportTimeout(uint8(tr.MinRetransmitTimeout))
		retry = max(retry, 14*time.Second) // adaptive stages: 13 retries up to 0.67 s each
		msgs := time.Duration(tr.NumMsgsPerQP)
		if tr.TxDepth > 0 && !tr.BarrierSync {
			msgs = (msgs + time.Duration(tr.TxDepth) - 1) / time.Duration(tr.TxDepth)
		}
		sched := time.Duration(max(tr.NumMsgsPerQP-1, 0)) * time.Duration(tr.PostIntervalUs) * time.Microsecond
		rest = max(rest, time.Duration(fl.StartUs)*time.Microsecond+msgs*retry+sched+t.odpWait(fl))
	}
	return send + rest + time.Second
}

// Bounds that odpWait assumes of a personality (softrnic.Validate holds
// every personality to them).
const (
	maxRNRWaitFactor    = softrnic.MaxRNRWaitFactor
	maxDefaultPageFault = softrnic.MaxODPDelay
	// odpPageSize is the page size of ODP memory regions.
	odpPageSize = softrnic.ODPPageSize
)

// odpWait bounds what the page faults of flow fl cost: nothing unless one
// of its hosts uses ODP. A page, once mapped, stays mapped (lumina never
// evicts), and each QP reuses one message buffer per host, so each host
// faults at most once per page of a buffer, pages(message-size) + 1 for
// an unaligned one; the QPs fault in parallel. Each fault costs at most
// its resolution time and an RNR wait (maxRNRWaitFactor × the
// min-rnr-timer's time). A request lost while a fault is pending costs a
// transport timeout, which the deadline's retries already count.
func (t *Test) odpWait(fl Flow) time.Duration {
	var fault time.Duration
	for _, name := range []string{fl.From, fl.To} {
		h := t.Host(name)
		if h == nil && !t.HostsForm && len(t.Hosts) == 0 {
			// A two-host Test built by hand, never normalized.
			h = &NamedHost{Host: t.Requester}
			if name == ResponderName {
				h = &NamedHost{Host: t.Responder}
			}
		}
		if h == nil || !h.NIC.ODPOn() {
			continue
		}
		pf := maxDefaultPageFault
		if us := h.NIC.ODP.PageFaultUs; us > 0 {
			pf = time.Duration(us) * time.Microsecond
		}
		fault = max(fault, pf)
	}
	if fault == 0 {
		return 0
	}
	pages := time.Duration(max(fl.MessageSize-1, 0)/odpPageSize + 2)
	rnr := maxRNRWaitFactor * roce.RNRTimer(uint8(fl.MinRNRTimer))
	return 2 * pages * (fault + rnr)
}

// warnNetnsLimit warns, on netns, when the traffic's limit
// (TrafficDeadline) times netns-slowdown exceeds MaxNetnsWallTime: the
// run may then take that long on the wall clock before it is stopped.
func (d *decoder) warnNetnsLimit(t *Test, warn func(Error)) {
	if t.Testbed != TestbedNetns {
		return
	}
	k := time.Duration(max(t.NetnsSlowdown, 1))
	limit := t.TrafficDeadline()
	if limit <= MaxNetnsWallTime/k {
		return
	}
	at := d.firstPos("netns-slowdown", "testbed")
	wall := time.Duration(1 << 62)
	if limit < wall/k {
		wall = limit * k
	}
	warn(Error{File: d.file, Line: at.Line, Col: at.Col, Msg: fmt.Sprintf("warning: on netns the traffic's limit of %v on the models' clock takes up to %v of wall-clock time at netns-slowdown %d (more than %v): a run that does not complete holds the testbed that long; lower netns-slowdown, num-msgs-per-qp or the retransmission timeout and retries (docs/run.md#netns-slowdown)",
		limit.Round(time.Second), wall.Round(time.Second), int64(k), MaxNetnsWallTime)})
}

// netnsWallTime returns how long, at least, t keeps the netns testbed
// busy on the wall clock: its longest hold or the end of its last PFC
// event, times netns-slowdown; and the position of the entry responsible.
func (d *decoder) netnsWallTime(t *Test) (time.Duration, Pos) {
	var longest time.Duration
	var at Pos
	for _, ev := range t.allEvents() {
		us := 0
		switch ev.Type {
		case EventDelay:
			us = ev.DelayUs
		case EventReorder:
			us = ev.MaxHoldUs
		}
		if d := time.Duration(us) * time.Microsecond; d > longest {
			longest, at = d, ev.Pos
		}
	}
	for _, pe := range t.pfcEvents() {
		if d := time.Duration(pe.StartUs+pe.DurationUs) * time.Microsecond; d > longest {
			longest, at = d, pe.Pos
		}
	}
	k := time.Duration(max(t.NetnsSlowdown, 1))
	if longest > time.Duration(1<<62)/k {
		return time.Duration(1 << 62), at
	}
	return longest * k, at
}

// minPacketsPerWorker returns the fewest packets a worker of dumper i
// certainly receives: the injector spreads the copies over dumpers by
// weight, and a dumper over its workers evenly.
func (t *Test) minPacketsPerWorker(i int, e Estimate) int64 {
	total := 0
	for _, dm := range t.Dumpers {
		total += max(dm.Weight, 1)
	}
	dm := t.Dumpers[i]
	return e.MinPackets * int64(max(dm.Weight, 1)) / int64(total) / int64(max(dm.Workers, 1))
}

// checkNICModels refuses, off the remote testbed, a host whose nic.type
// the software RNIC has no personality for (softrnic.CheckNICType: e810
// without a personality file), where the run would otherwise fail, or
// worse, silently stand in another NIC.
func (d *decoder) checkNICModels(t *Test) {
	if t.Testbed == TestbedRemote {
		return
	}
	for i := range t.Hosts {
		h := &t.Hosts[i]
		if err := softrnic.CheckNICType(h.NIC.Type, h.NIC.Personality); err != nil {
			hp := hostPath(t, i)
			d.errorAt(d.firstPos(hp+".nic.type", hp), fmt.Sprintf("%v (testbed %s)", err, t.Testbed))
		}
	}
}

// checkResources refuses a test that cannot run as configured: a dumper
// whose num-pkts the test certainly exceeds (always), and, with the
// limits of r, one that needs more memory or disk than the machine has.
// Each error names the fix.
func (d *decoder) checkResources(t *Test, r Resources) {
	e := t.Estimate()
	for i, dm := range t.Dumpers {
		p := d.dumperPath(i)
		if p == "" || dm.NumPkts == 0 {
			continue
		}
		need := t.minPacketsPerWorker(i, e)
		if need <= int64(dm.NumPkts) {
			continue
		}
		at := d.firstPos(p+".num-pkts", p+".pkt-dump-conf.num-pkts", p)
		d.errorAt(at, fmt.Sprintf("num-pkts: each worker of dumper %q will receive at least %d packets (the test mirrors at least %d), more than num-pkts %d; raise num-pkts to at least %d (about twice that with acknowledgements), or remove it: without it the disk is the limit",
			dm.Name, need, e.MinPackets, dm.NumPkts, need))
	}
	fp := "traffic" // where to point: the two-host form's traffic, or flows
	if t.HostsForm {
		fp = "flows"
	}
	if r.MemoryBytes > 0 && t.Testbed != TestbedRemote && e.MemoryBytes > r.MemoryBytes {
		at := d.firstPos(fp+".message-size", fp+".num-qps", fp+".num-connections", fp)
		if e.DumperBytes > e.GeneratorBytes && e.DumperBytes > e.RecordBytes {
			at = d.firstPos("dumpers", fp)
		} else if e.RecordBytes > e.GeneratorBytes {
			at = d.firstPos(fp+".num-msgs-per-qp", fp+".data-pkt-events", pfcEventsPath(t), fp)
		}
		var msgs string
		qps, qpMsgs := 0, int64(0)
		for _, fl := range t.Flows {
			qps += max(fl.NumQPs, 1)
			qpMsgs += int64(max(fl.NumQPs, 1)) * int64(max(fl.NumMsgsPerQP, 1))
		}
		if t.HostsForm {
			msgs = fmt.Sprintf("messages 3 × %d QPs of %d flows × their message-size = %s", qps, len(t.Flows), Bytes(e.GeneratorBytes))
		} else {
			msgs = fmt.Sprintf("messages 3 × %d QPs × %d B = %s", qps, max(t.Flows[0].MessageSize, 1), Bytes(e.GeneratorBytes))
		}
		d.errorAt(at, fmt.Sprintf("the test needs about %s of memory on this machine (%s, dumpers %s, held packets %s, records %s: graph data %s, %d packets of events and PFC frames, %d messages, base %s), more than the limit of %s; use fewer QPs, messages or events, smaller messages or fewer dumper workers, or raise the limit with --memory-limit",
			Bytes(e.MemoryBytes), msgs, Bytes(e.DumperBytes), Bytes(e.HoldBytes),
			Bytes(e.RecordBytes), Bytes(e.PlotBytes), e.EventPackets+e.PFCFrames, qpMsgs, Bytes(BaseMemory), Bytes(r.MemoryBytes)))
	}
	// What the disk need is counted in, and where to point: the PFC
	// frames' entry when they are most of it, else the repeats.
	at := d.firstPos("num-repeats", fp+".num-msgs-per-qp", fp)
	what := fmt.Sprintf("up to %d packets", e.Packets)
	lower := "num-msgs-per-qp"
	if e.PFCFrames > 0 {
		what += fmt.Sprintf(" and %d PFC frames", e.PFCFrames)
		lower += ", the PFC frames"
		if e.PFCFrames > e.Packets {
			at = d.firstPos(pfcEventsPath(t), fp)
		}
	}
	spool := r.SpoolFree != nil && t.Testbed != TestbedRemote
	var spoolDir string
	var spoolFree int64
	var shared bool
	if spool {
		spoolDir, spoolFree, shared, spool = r.SpoolFree(t.ResultPath)
	}
	// The results' disk peaks during the last repeat: the earlier
	// repeats' results (DiskBytes each), then its dumper files and their
	// copy under the results directory (while they are fetched, when the
	// spool shares the file system; the spool is removed before the
	// merge), or that copy and the merged trace (during the merge; the
	// copy is removed after it unless kept): twice the trace either way.
	// A test that certainly does not fit (its trace at its smallest,
	// MinTraceBytes) is refused; one that fits only if its trace stays
	// below the upper end (TraceBytes: an acknowledgement per data packet,
	// 10% retransmitted) is run with a warning.
	reps := int64(max(t.NumRepeats, 1))
	diskNeed := func(traceBytes int64) int64 {
		per := traceBytes
		if t.KeepDumperFiles {
			per *= 2
		}
		return (reps-1)*per + 2*traceBytes
	}
	if r.DiskFree != nil {
		free, ok := r.DiskFree(t.ResultPath)
		need, least := diskNeed(e.TraceBytes), diskNeed(e.MinTraceBytes)
		keep := ""
		if t.KeepDumperFiles {
			keep = ", keep-dumper-files: false (halves it)"
		}
		switch {
		case !ok || need <= free:
		case least > free:
			d.errorAt(at, fmt.Sprintf("the results need at least %s of disk (%d repeats × at least %d packets, traces and dumper files), %s are free under the results directory; free some, choose another with -o%s, or lower snap-len, %s or num-repeats",
				Bytes(least), t.NumRepeats, e.MinPackets, Bytes(free), keep, lower))
		default:
			d.warnAt(at, fmt.Sprintf("warning: the results need %s to %s of disk (%d repeats × %s, traces and dumper files), %s are free under the results directory: the run fails if the trace grows past what fits; free some, choose another with -o%s, or lower snap-len, %s or num-repeats",
				Bytes(least), Bytes(need), t.NumRepeats, what, Bytes(free), keep, lower))
		}
	}
	if spool && !(shared && r.DiskFree != nil) { // shared: the results' need counts it
		switch {
		case e.SpoolBytes <= spoolFree:
		case e.MinTraceBytes > spoolFree:
			d.errorAt(at, fmt.Sprintf("a repeat's dumper files need at least %s (at least %d packets, before the merge) in the spool directory %s, where %s are free; set TMPDIR to a larger file system, or lower snap-len or %s",
				Bytes(e.MinTraceBytes), e.MinPackets, spoolDir, Bytes(spoolFree), lower))
		default:
			d.warnAt(at, fmt.Sprintf("warning: a repeat's dumper files need %s to %s (%s, before the merge) in the spool directory %s, where %s are free: the run fails if they grow past it; set TMPDIR to a larger file system, or lower snap-len or %s",
				Bytes(e.MinTraceBytes), Bytes(e.SpoolBytes), what, spoolDir, Bytes(spoolFree), lower))
		}
	}
	if t.Testbed == TestbedNetns {
		if wall, pos := d.netnsWallTime(t); wall > MaxNetnsWallTime {
			d.errorAt(pos, fmt.Sprintf("on netns this entry takes at least %v of wall-clock time (its hold or end × netns-slowdown %d), more than the limit of %v; shorten it or lower netns-slowdown (docs/run.md#netns-slowdown)",
				wall.Round(time.Second), max(t.NetnsSlowdown, 1), MaxNetnsWallTime))
		}
	}
}

// Bytes renders a byte count with a binary unit: 512 B, 1.5 KiB, 64 MiB,
// 2.3 GiB, 1.1 TiB.
func Bytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u:u+1] + "iB"
}

// ParseBytes parses a size such as 8GiB, 512M, 1.5T or 1073741824 (bytes;
// the suffixes K, M, G, T with an optional "i" and "B" are binary).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 || v*float64(mult) >= 1<<62 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, optionally with K, M, G or T (binary), e.g. 8GiB", s)
	}
	return int64(v * float64(mult)), nil
}

// allEvents returns the data-pkt-events of every flow, in flow order.
func (t *Test) allEvents() []Event {
	var out []Event
	for _, fl := range t.flows() {
		out = append(out, fl.Events...)
	}
	return out
}

// routeLen is how many switches mirror each packet of fl: the switches on
// its route (1 without a fabric, or when its hosts are unknown).
func (t *Test) routeLen(fl Flow) int {
	if !t.Fabric() {
		return 1
	}
	from, to := t.HostIndex(fl.From), t.HostIndex(fl.To)
	if from < 0 || to < 0 {
		return 1
	}
	return max(len(t.Route(from, to)), 1)
}
