package injector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// PFCConfig turns on the switch's PFC model (Config.PFC): per-priority
// egress queues paced at each port's speed, honouring received PFC and
// PAUSE frames, ingress buffer accounting that sends PFC to the upstream
// port, an optional PFC watchdog and pause injection. See the package
// documentation, section PFC. The zero value is usable: every priority
// lossy, all traffic priority 0, 100 Gb/s ports, default thresholds.
type PFCConfig struct {
	// Lossless is the bitmap of lossless priorities (bit n: priority n):
	// PFC is on for them. Default 0: none.
	Lossless uint8

	// DSCPToPriority maps an untagged IPv4 frame's DSCP to its priority;
	// a VLAN-tagged frame takes its PCP. Other frames are priority 0.
	// Default all zero.
	DSCPToPriority [64]uint8

	// PortBps is the egress speed of each switch port, bits per second:
	// the pacing of its queues and the length of a pause quantum (512 bit
	// times). Missing or <= 0: DefaultPFCPortBps, 100 Gb/s. Set it to the
	// speed of the attached link (sim.LinkConfig.BandwidthBps) so that
	// the switch's queues, not the link's, hold the backlog.
	PortBps map[uint32]int64

	// XOFFBytes: when the bytes received on (ingress port, lossless
	// priority) and still queued in the switch exceed it, the switch sends
	// an XOFF (PFC, 0xFFFF quanta) to that port and refreshes it every half
	// of its duration. Default (0) DefaultXOFFBytes.
	XOFFBytes int
	// XONBytes: when those bytes fall to XONBytes or below, the switch
	// sends an XON (PFC, 0 quanta). Default (0) XOFFBytes − 9216 (floor 0),
	// as mlx5 sets xon = xoff − max MTU; negative: 0. Capped at XOFFBytes.
	XONBytes int
	// HeadroomBytes is what a (ingress port, lossless priority) may hold
	// beyond XOFFBytes, for the data in flight while the XOFF takes
	// effect; a lossless frame beyond XOFFBytes+HeadroomBytes is dropped
	// and counted (PFCCounters.LosslessDrops). Default (0)
	// DefaultHeadroomBytes; negative: none.
	HeadroomBytes int

	// Watchdog turns on the switch PFC watchdog on every port not in
	// WatchdogPorts. Default nil: none.
	Watchdog *PFCWatchdog
	// WatchdogPorts sets the watchdog of each port it lists, overriding
	// Watchdog: a nil entry is no watchdog on that port. A fabric's
	// logical switches each have their switch.pfc-watchdog: the run
	// driver lists every port of a switch with that switch's. Default
	// nil: Watchdog on every port.
	WatchdogPorts map[uint32]*PFCWatchdog

	// MAC is the source MAC of the PFC frames the switch sends. Default
	// zero (real switches send all-zero source addresses: SONiC issue 418).
	MAC [6]byte
}

// PFCWatchdog configures the switch PFC watchdog (Guo et al., "RDMA over Commodity Ethernet at Scale", SIGCOMM 2016, §4.3; SONiC
// pfcwd with action drop).
type PFCWatchdog struct {
	// Detection: a lossless egress queue paused without interruption for
	// this long is declared in a PFC storm. Default (0)
	// DefaultWatchdogDetection.
	Detection time.Duration
	// Restoration: a stormed queue is restored when no pause frame for its
	// priority has arrived on its port for this long. Default (0)
	// DefaultWatchdogRestoration.
	Restoration time.Duration
}

// PFC defaults.
const (
	// DefaultPFCPortBps is the speed of a port missing from
	// PFCConfig.PortBps: the sim links' default.
	DefaultPFCPortBps int64 = sim.DefaultBandwidthBps
	// DefaultXOFFBytes is a harness choice (no source gives one static
	// value; switches derive it from a shared buffer): four 9216-byte
	// jumbo frames.
	DefaultXOFFBytes = 4 * 9216
	// DefaultHeadroomBytes is mlx5's headroom formula (Linux
	// drivers/net/ethernet/mellanox/mlx5/core/en/port_buffer.c) at 100 Gb/s, 7 m of cable and MTU 9216:
	// (301 + 2.16×7)×100 + 2.72×9216 = 56,680 bytes. It covers the round
	// trip of the sim link (2 × 500 ns = 12,500 bytes at 100 Gb/s), a jumbo
	// frame on the wire each way, the PFC frame and the 802.3 reaction
	// time (394 quanta = 25,216 bytes at 100 Gb/s, IEEE 802.3 Table 31B-1).
	DefaultHeadroomBytes = 56680
	// DefaultWatchdogDetection is the NIC watchdog time of Guo et al. (§4.3) and the low
	// end of SONiC's detection range (100–5000 ms); Huawei's default is
	// 100 ms too (SONiC PFC watchdog HLD; Huawei CloudEngine PFC deadlock
	// detection documentation).
	DefaultWatchdogDetection = 100 * time.Millisecond
	// DefaultWatchdogRestoration is the switch watchdog default of Guo et
	// al. and SONiC's (SONiC PFC watchdog HLD).
	DefaultWatchdogRestoration = 200 * time.Millisecond
	// LossyQueueBytes bounds each (egress port, lossy priority) queue; a
	// frame that would exceed it is dropped (PFCCounters.LossyDrops): the
	// sim links' default queue (sim.DefaultQueueBytes), so that a lossy
	// queue moved from the link into the switch drops at the same depth.
	LossyQueueBytes = sim.DefaultQueueBytes

	pfcMaxMTU     = 9216
	pfcXOFFQuanta = 0xFFFF
)

// PFCCounters are a switch port's PFC counts for one priority. Names in
// parentheses are the stable ones for reports.
type PFCCounters struct {
	// RxPause (rx_pause): PFC frames received on the port with the
	// priority's enable bit set, and PAUSE frames (on every priority).
	RxPause uint64 `json:"rx_pause"`
	// TxPause (tx_pause): PFC frames the switch sent from the port with
	// the priority's enable bit set: XOFF, XON, refreshes and injected
	// ones.
	TxPause uint64 `json:"tx_pause"`
	// XOFF and XON (xoff, xon): transitions of the port's ingress
	// accounting for the priority across XOFFBytes (an XOFF sent) and back
	// to XONBytes (an XON sent).
	XOFF uint64 `json:"xoff"`
	XON  uint64 `json:"xon"`
	// RxPauseNs (rx_pause_ns): time the port's egress queue for the
	// priority spent paused by received frames, ns.
	RxPauseNs int64 `json:"rx_pause_ns"`
	// LosslessDrops (lossless_drops): lossless frames received on the port
	// dropped because its ingress accounting was beyond XOFF + headroom.
	LosslessDrops uint64 `json:"lossless_drops"`
	// LossyDrops (lossy_drops): lossy frames to the port dropped because
	// its egress queue was full (LossyQueueBytes).
	LossyDrops uint64 `json:"lossy_drops"`
	// WatchdogDrops (watchdog_drops): lossless frames to or from the port
	// dropped, and queued ones flushed, while the watchdog had lossless
	// mode off for the priority.
	WatchdogDrops uint64 `json:"watchdog_drops"`
	// Storms and Restores (storms, restores): watchdog detections and
	// restorations.
	Storms   uint64 `json:"storms"`
	Restores uint64 `json:"restores"`
}

// PFCEventKind is the kind of a PFCEvent. The zero value is invalid.
type PFCEventKind uint8

// PFC event kinds.
const (
	PFCStorm   PFCEventKind = iota + 1 // the watchdog turned lossless mode off
	PFCRestore                         // the watchdog turned it back on
)

// String returns "storm", "restore" or "PFCEventKind(N)".
func (k PFCEventKind) String() string {
	switch k {
	case PFCStorm:
		return "storm"
	case PFCRestore:
		return "restore"
	}
	return "PFCEventKind(" + strconv.Itoa(int(k)) + ")"
}

// PFCEvent is an entry of the watchdog log (Switch.PFCLog).
type PFCEvent struct {
	At       time.Duration // loop time (sim.Loop.Now)
	Port     uint32        // switch port of the egress queue
	Priority int
	Kind     PFCEventKind
}

// PauseInjection asks the switch to send PFC frames to a host
// (traffic.pfc-events type pause).
type PauseInjection struct {
	Port     uint32 // switch port the frames leave from (the host's port)
	Priority int    // 0-7: the one priority enabled in the frames
	Quanta   uint16 // time[Priority] of every frame
	// Start is when the first frame is sent, relative to the
	// SchedulePauses call, or to the packet that fires Trigger. Then one
	// frame every Interval while (frame index × Interval) < Duration:
	// Duration 1000 µs at Interval 20 µs sends 50 frames, the last at
	// Start + 980 µs. Duration 0 sends one frame. No XON follows: the
	// last pause lasts its Quanta.
	Start, Duration, Interval time.Duration
	// Trigger, if set, starts the injection when the switch sees that
	// RoCE packet, instead of at the call. Default nil.
	Trigger *PauseTrigger
}

// PauseTrigger names a RoCE packet by the event table's keys: ingress
// port, destination QP, PSN and ITER (0 for a packet of no tracked
// connection). It fires once, on the first match.
type PauseTrigger struct {
	Port, DestQP, PSN uint32
	Iter              uint16
}

// PFC errors.
var (
	// ErrPFCOff is returned by SchedulePauses on a switch without
	// Config.PFC.
	ErrPFCOff = errors.New("injector: PFC is off (Config.PFC is nil)")
	// ErrPauseInjection is returned, wrapped, for an invalid
	// PauseInjection.
	ErrPauseInjection = errors.New("injector: invalid pause injection")
)

// pfcState is the PFC model's state. Guarded by Switch.mu.
type pfcState struct {
	lossless            uint8
	dscp                [64]uint8
	mac                 [6]byte
	portBps             map[uint32]int64
	xoff, xon, headroom int
	watchdog            *PFCWatchdog            // Config.Watchdog
	watchdogPorts       map[uint32]*PFCWatchdog // Config.WatchdogPorts

	ecn       *ecnState // marking by depth (Egress.ecn_red, ecn.go)
	cellBytes int       // Config.CellBytes
	ports     map[uint32]*pfcPort
	seq       uint64 // enqueue order across queues
	log       []PFCEvent
	triggers  []PauseInjection
	parsed    roce.MACControlFrame
}

// pfcPort is one switch port's PFC state.
type pfcPort struct {
	id  uint32
	out sim.Port
	bps int64
	// The port's watchdog (PFCConfig.Watchdog, WatchdogPorts): on, and
	// its detection and restoration times (ns).
	watchdog             bool
	detection, restoring int64
	busyUntil            int64 // the last frame's serialization ends (loop ns)
	kickArmed            bool
	kickFn               func()      // pfcService at the end of a frame
	serveFn              func()      // pfcService when a pause expires
	ctrl                 []ctrlFrame // PFC frames to send, ahead of data, never paused
	q                    [roce.PFCPriorities]egressQueue
	ing                  [roce.PFCPriorities]ingressState
	ctr                  [roce.PFCPriorities]PFCCounters
}

type ctrlFrame struct {
	frame  []byte
	enable uint8
	event  roce.Event
}

type queuedFrame struct {
	frame  []byte
	in     uint32
	isRoCE bool
	seq    uint64
}

// egressQueue is one (egress port, priority) queue.
type egressQueue struct {
	items []queuedFrame
	head  int
	bytes int
	// cells is the queue's depth in buffer cells (each frame takes
	// ⌈len/cellBytes⌉, as in Tofino's traffic manager): the depth RED
	// compares with Egress.ecn_red's thresholds (ecn.go).
	cells int

	// Received pauses: [pauseFrom, pauseUntil) is the current or last
	// pause, pauseNs the earlier ones.
	pauseFrom, pauseUntil, pauseNs int64
	expiry                         sim.Timer

	// Watchdog.
	storm     bool
	lastPause int64 // arrival of the last pause frame naming the priority
	stallGen  uint64
	stall     sim.Timer
}

func (q *egressQueue) empty() bool { return q.head == len(q.items) }

// ingressState is the accounting of one (ingress port, lossless priority).
type ingressState struct {
	bytes   int
	xoff    bool
	refresh sim.Timer
}

func newPFC(c *PFCConfig) *pfcState {
	st := &pfcState{lossless: c.Lossless, dscp: c.DSCPToPriority, mac: c.MAC, portBps: map[uint32]int64{},
		ports: map[uint32]*pfcPort{}}
	for id, bps := range c.PortBps {
		st.portBps[id] = bps
	}
	st.xoff = c.XOFFBytes
	if st.xoff <= 0 {
		st.xoff = DefaultXOFFBytes
	}
	switch {
	case c.XONBytes == 0:
		st.xon = max(0, st.xoff-pfcMaxMTU)
	case c.XONBytes < 0:
		st.xon = 0
	default:
		st.xon = min(c.XONBytes, st.xoff)
	}
	switch {
	case c.HeadroomBytes == 0:
		st.headroom = DefaultHeadroomBytes
	case c.HeadroomBytes > 0:
		st.headroom = c.HeadroomBytes
	}
	st.watchdog = c.Watchdog
	if c.WatchdogPorts != nil {
		st.watchdogPorts = make(map[uint32]*PFCWatchdog, len(c.WatchdogPorts))
		for id, w := range c.WatchdogPorts {
			st.watchdogPorts[id] = w
		}
	}
	return st
}

// setWatchdog sets port pp's watchdog from the configuration.
func (st *pfcState) setWatchdog(pp *pfcPort) {
	w, listed := st.watchdogPorts[pp.id]
	if !listed {
		w = st.watchdog
	}
	if w == nil {
		return
	}
	pp.watchdog = true
	pp.detection, pp.restoring = int64(w.Detection), int64(w.Restoration)
	if pp.detection <= 0 {
		pp.detection = int64(DefaultWatchdogDetection)
	}
	if pp.restoring <= 0 {
		pp.restoring = int64(DefaultWatchdogRestoration)
	}
}

// cellsOf is the buffer cells frame takes.
func (st *pfcState) cellsOf(frame []byte) int { return (len(frame) + st.cellBytes - 1) / st.cellBytes }

func (st *pfcState) isLossless(prio int) bool { return st.lossless&(1<<prio) != 0 }

// classify returns a frame's priority: the PCP of a VLAN tag, else the
// DSCP map for IPv4, else 0.
func (st *pfcState) classify(frame []byte) int {
	if len(frame) < 16 {
		return 0
	}
	switch binary.BigEndian.Uint16(frame[12:]) {
	case roce.EtherTypeVLAN:
		return int(frame[14] >> 5)
	case roce.EtherTypeIPv4:
		if frame[14]>>4 == 4 {
			return int(st.dscp[frame[15]>>2] & 7)
		}
	}
	return 0
}

// pfcAddPort sets up the PFC state of a new port. Called with s.mu held.
func (s *Switch) pfcAddPort(id uint32, p sim.Port) {
	st := s.pfc
	pp := &pfcPort{id: id, out: p, bps: st.portBps[id]}
	if pp.bps <= 0 {
		pp.bps = DefaultPFCPortBps
	}
	st.setWatchdog(pp)
	pp.kickFn = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		pp.kickArmed = false
		s.pfcService(pp)
	}
	pp.serveFn = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.pfcService(pp)
	}
	st.ports[id] = pp
}

// pfcReceive consumes a MAC Control frame received on port in: it is
// mirrored and acted on, never forwarded. It reports false for other
// frames.
func (s *Switch) pfcReceive(in uint32, frame []byte, rxNs int64, timed bool) bool {
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	if et == roce.EtherTypeVLAN && len(frame) >= 18 {
		off += 4
		et = binary.BigEndian.Uint16(frame[off:])
	}
	if et != roce.EtherTypeMACControl {
		return false
	}
	st := s.pfc
	f := &st.parsed
	if roce.ParseMACControl(frame, f) != nil {
		return true // unknown opcode or truncated: consumed, ignored
	}
	s.mirrorMAC(in, frame, false, roce.EventNone, rxNs, timed, 0)
	pp := st.ports[in]
	if pp == nil {
		return true
	}
	// A pause counts from the frame's arrival (on a real clock the loop
	// may handle it later): what the trace's timestamps show, so that a
	// refresh handled late still continues the pause it refreshes.
	now := s.loop.Now()
	at := now
	if timed && rxNs < now {
		at = rxNs
	}
	switch f.Opcode {
	case roce.MACControlPause:
		for p := range roce.PFCPriorities {
			s.pfcPauseRx(pp, p, f.PauseTime, true, at, now)
		}
	case roce.MACControlPFC:
		for p := range roce.PFCPriorities {
			if f.Enabled(p) {
				s.pfcPauseRx(pp, p, f.Time[p], false, at, now)
			}
		}
	}
	s.pfcService(pp)
	return true
}

// pfcPauseRx applies a pause of quanta for priority p that arrived at at
// (handled at now ≥ at) to port pp's egress queue. A PFC frame for a lossy
// priority is counted but not acted on (IEEE 802.1Q Clause 36); PAUSE applies to
// every priority.
func (s *Switch) pfcPauseRx(pp *pfcPort, p int, quanta uint16, linkPause bool, at, now int64) {
	st := s.pfc
	pp.ctr[p].RxPause++
	q := &pp.q[p]
	q.lastPause = at
	if q.storm || !linkPause && !st.isLossless(p) {
		return
	}
	until := at + int64(roce.QuantaToDuration(quanta, pp.bps))
	if q.pauseUntil > at { // paused: the new value replaces the timer
		q.pauseUntil = until
	} else {
		if quanta == 0 {
			return
		}
		q.pauseNs += q.pauseUntil - q.pauseFrom
		q.pauseFrom, q.pauseUntil = at, until
		if pp.watchdog && st.isLossless(p) {
			s.pfcArmStall(pp, p, now-at)
		}
	}
	if q.expiry != nil {
		q.expiry.Stop()
		q.expiry = nil
	}
	if until > now {
		q.expiry = s.loop.AfterFunc(time.Duration(until-now), pp.serveFn)
	}
}

// pfcArmStall starts the watchdog's detection of a pause that began ago
// ns before now. The storm is declared when the detection time has passed
// and the pause, counted from the arrivals of its frames, lasted past it:
// on a real clock the check may run late, and a pause that lapsed after
// the detection time still made a storm.
func (s *Switch) pfcArmStall(pp *pfcPort, p int, ago int64) {
	q := &pp.q[p]
	q.stallGen++
	gen := q.stallGen
	if q.stall != nil {
		q.stall.Stop()
	}
	q.stall = s.loop.AfterFunc(time.Duration(pp.detection-ago), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if q.stallGen == gen && !q.storm && q.pauseUntil > q.pauseFrom+pp.detection {
			s.pfcStorm(pp, p)
		}
	})
}

// pfcStorm turns lossless mode off for (pp, p): its pauses are ignored,
// its queue flushed, lossless frames to and from it dropped until
// pfcRestore.
func (s *Switch) pfcStorm(pp *pfcPort, p int) {
	now := s.loop.Now()
	q := &pp.q[p]
	q.storm = true
	q.pauseUntil = min(q.pauseUntil, now)
	if q.expiry != nil {
		q.expiry.Stop()
		q.expiry = nil
	}
	pp.ctr[p].Storms++
	s.pfc.log = append(s.pfc.log, PFCEvent{At: time.Duration(now), Port: pp.id, Priority: p, Kind: PFCStorm})
	for q.head < len(q.items) {
		it := q.items[q.head]
		q.items[q.head] = queuedFrame{}
		q.head++
		q.bytes -= len(it.frame)
		q.cells -= s.pfc.cellsOf(it.frame)
		pp.ctr[p].WatchdogDrops++
		s.pfcReleaseIngress(it, p)
	}
	q.items, q.head = q.items[:0], 0
	s.pfcArmRestore(pp, p)
}

// pfcArmRestore schedules the restoration check for Restoration after
// the last pause frame.
func (s *Switch) pfcArmRestore(pp *pfcPort, p int) {
	q := &pp.q[p]
	d := q.lastPause + pp.restoring - s.loop.Now()
	s.loop.AfterFunc(time.Duration(d), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !q.storm {
			return
		}
		now := s.loop.Now()
		if now-q.lastPause < pp.restoring {
			s.pfcArmRestore(pp, p)
			return
		}
		q.storm = false
		pp.ctr[p].Restores++
		s.pfc.log = append(s.pfc.log, PFCEvent{At: time.Duration(now), Port: pp.id, Priority: p, Kind: PFCRestore})
		s.pfcService(pp)
	})
}

// bufferFull reports whether pfcEnqueue would drop an n-byte frame of
// priority p from port in queued on egress port pp for want of buffer: a
// lossless frame beyond its ingress port's XOFF plus headroom, a lossy one
// beyond LossyQueueBytes. It changes nothing. The mirror copy of such a
// frame is tagged roce.EventDrop (admit), so the trace does not show a
// packet its host never got as delivered (the switch_state check explains
// these copies by the switch's lossless_drops and lossy_drops). Watchdog
// drops are not tagged: the pfc analysis knows the stormed queues from
// the log.
func (st *pfcState) bufferFull(in uint32, pp *pfcPort, p, n int) bool {
	ip := st.ports[in]
	if !st.isLossless(p) {
		return pp.q[p].bytes+n > LossyQueueBytes
	}
	if pp.q[p].storm || ip == nil || ip.q[p].storm {
		return false
	}
	return ip.ing[p].bytes+n > st.xoff+st.headroom
}

// pfcEnqueue queues a forwarded frame from port in on egress port out and
// reports whether it was queued.
func (s *Switch) pfcEnqueue(in, out uint32, frame []byte, isRoCE bool) bool {
	st := s.pfc
	pp := st.ports[out]
	if pp == nil {
		s.stats.UnknownPort++
		return false
	}
	p := st.classify(frame)
	q := &pp.q[p]
	ip := st.ports[in]
	if st.isLossless(p) {
		switch {
		case q.storm:
			pp.ctr[p].WatchdogDrops++
			return false
		case ip != nil && ip.q[p].storm:
			ip.ctr[p].WatchdogDrops++
			return false
		}
		if ip != nil {
			g := &ip.ing[p]
			if g.bytes+len(frame) > st.xoff+st.headroom {
				ip.ctr[p].LosslessDrops++
				return false
			}
			g.bytes += len(frame)
			if !g.xoff && g.bytes > st.xoff {
				g.xoff = true
				ip.ctr[p].XOFF++
				s.pfcSendXOFF(ip, p)
			}
		}
	} else if q.bytes+len(frame) > LossyQueueBytes {
		pp.ctr[p].LossyDrops++
		return false
	}
	st.seq++
	if q.head > 0 && q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.items = append(q.items, queuedFrame{frame: append([]byte(nil), frame...), in: in, isRoCE: isRoCE, seq: st.seq})
	q.bytes += len(frame)
	q.cells += st.cellsOf(frame)
	s.pfcService(pp)
	return true
}

// pfcSendXOFF sends an XOFF for p to ip and keeps refreshing it, every
// half of its duration, while the accounting stays in XOFF.
func (s *Switch) pfcSendXOFF(ip *pfcPort, p int) {
	s.pfcSendFrame(ip, p, pfcXOFFQuanta, roce.EventNone)
	g := &ip.ing[p]
	if g.refresh != nil {
		g.refresh.Stop()
	}
	g.refresh = s.loop.AfterFunc(roce.QuantaToDuration(pfcXOFFQuanta, ip.bps)/2, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if g.xoff {
			s.pfcSendXOFF(ip, p)
		}
	})
}

// pfcReleaseIngress removes a frame leaving the switch (sent or dropped)
// from its ingress accounting, sending XON when it falls to XONBytes.
func (s *Switch) pfcReleaseIngress(it queuedFrame, p int) {
	st := s.pfc
	ip := st.ports[it.in]
	if ip == nil || !st.isLossless(p) {
		return
	}
	g := &ip.ing[p]
	g.bytes -= len(it.frame)
	if g.xoff && g.bytes <= st.xon {
		g.xoff = false
		if g.refresh != nil {
			g.refresh.Stop()
			g.refresh = nil
		}
		ip.ctr[p].XON++
		s.pfcSendFrame(ip, p, 0, roce.EventNone)
	}
}

// pfcSendFrame queues a PFC frame for priority p on port pp, ahead of data.
func (s *Switch) pfcSendFrame(pp *pfcPort, p int, quanta uint16, ev roce.Event) {
	var t [roce.PFCPriorities]uint16
	t[p] = quanta
	pp.ctrl = append(pp.ctrl, ctrlFrame{frame: roce.BuildPFC(nil, s.pfc.mac, 1<<p, t), enable: 1 << p, event: ev})
	s.pfcService(pp)
}

// pfcService starts the next frame on port pp if its wire is free: a PFC
// frame first, else the oldest frame of an unpaused priority.
func (s *Switch) pfcService(pp *pfcPort) {
	now := s.loop.Now()
	if now < pp.busyUntil {
		s.pfcArmKick(pp, now)
		return
	}
	if len(pp.ctrl) > 0 {
		c := pp.ctrl[0]
		pp.ctrl[0] = ctrlFrame{}
		pp.ctrl = pp.ctrl[1:]
		if len(pp.ctrl) == 0 {
			pp.ctrl = nil
		}
		for p := range roce.PFCPriorities {
			if c.enable&(1<<p) != 0 {
				pp.ctr[p].TxPause++
			}
		}
		pp.busyUntil = now + int64(sim.SerializationDelay(sim.LinkConfig{BandwidthBps: pp.bps}, len(c.frame)))
		s.pfcArmKick(pp, now)
		// Written first, stamped after: on a real-time port the write can
		// take milliseconds (the kernel runs pending receive work in it), and
		// a stamp taken before it would make the paused host's reaction look
		// late by that much. A port that knows when the frame left
		// (sim.TxTimedPort: the kernel's transmit timestamp) gives the
		// stamp; otherwise it is the time the write returned, and the write's
		// duration bounds how late that is (Timing.SentMax; 0 on a virtual
		// clock).
		departed, exact := int64(0), false
		if tp, ok := pp.out.(sim.TxTimedPort); ok {
			departed, exact = tp.SendTimed(c.frame)
		} else {
			pp.out.Send(c.frame)
		}
		from, at := departed, departed
		if !exact {
			from, at = now, s.loop.Now() // it left while it was written
		}
		s.mirrorMAC(pp.id, c.frame, true, c.event, from, false, at)
		return
	}
	best := -1
	for p := range pp.q {
		q := &pp.q[p]
		if q.empty() || q.pauseUntil > now {
			continue
		}
		if best < 0 || q.items[q.head].seq < pp.q[best].items[pp.q[best].head].seq {
			best = p
		}
	}
	if best < 0 {
		return // idle, or everything paused: expiries kick
	}
	q := &pp.q[best]
	it := q.items[q.head]
	q.items[q.head] = queuedFrame{}
	q.head++
	q.bytes -= len(it.frame)
	q.cells -= s.pfc.cellsOf(it.frame)
	pp.busyUntil = now + int64(sim.SerializationDelay(sim.LinkConfig{BandwidthBps: pp.bps}, len(it.frame)))
	s.pfcArmKick(pp, now)
	if it.isRoCE && s.c.tx != nil {
		s.c.tx[pp.id].packets++
		s.c.tx[pp.id].bytes += uint64(len(it.frame))
	}
	s.stats.Forwarded++
	pp.out.Send(it.frame)
	s.pfcReleaseIngress(it, best)
}

// pfcArmKick schedules pfcService at the end of the current frame.
func (s *Switch) pfcArmKick(pp *pfcPort, now int64) {
	if pp.kickArmed {
		return
	}
	pp.kickArmed = true
	s.loop.AfterFunc(time.Duration(pp.busyUntil-now), pp.kickFn)
}

// pfcTrigger starts the injections whose trigger is this RoCE packet.
func (s *Switch) pfcTrigger(in, qpn, psn uint32, iter uint16) {
	st := s.pfc
	for i := 0; i < len(st.triggers); {
		ev := st.triggers[i]
		tr := ev.Trigger
		if tr.Port != in || tr.DestQP != qpn || tr.PSN != psn || tr.Iter != iter {
			i++
			continue
		}
		st.triggers = append(st.triggers[:i], st.triggers[i+1:]...)
		s.pfcInject(ev, s.loop.Now(), 0)
	}
}

// pfcInject schedules frame k of ev, whose first frame is due at base +
// ev.Start.
func (s *Switch) pfcInject(ev PauseInjection, base int64, k int64) {
	at := base + int64(ev.Start) + k*int64(ev.Interval)
	s.loop.AfterFunc(time.Duration(at-s.loop.Now()), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if pp := s.pfc.ports[ev.Port]; pp != nil {
			s.pfcSendFrame(pp, ev.Priority, ev.Quanta, roce.EventPause)
		}
		if next := k + 1; ev.Interval > 0 && next*int64(ev.Interval) < int64(ev.Duration) {
			s.pfcInject(ev, base, next)
		}
	})
}

// SchedulePauses makes the switch send PFC frames to a host, mirrored as
// sent with event roce.EventPause (see PauseInjection). It is safe for
// concurrent use; the frames leave from the loop.
func (s *Switch) SchedulePauses(ev PauseInjection) error {
	switch {
	case ev.Priority < 0 || ev.Priority >= roce.PFCPriorities:
		return fmt.Errorf("%w: priority %d out of range 0..7", ErrPauseInjection, ev.Priority)
	case ev.Start < 0 || ev.Duration < 0 || ev.Interval < 0:
		return fmt.Errorf("%w: negative time", ErrPauseInjection)
	case ev.Duration > 0 && ev.Interval == 0:
		return fmt.Errorf("%w: duration %v with no interval", ErrPauseInjection, ev.Duration)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pfc == nil {
		return ErrPFCOff
	}
	if s.pfc.ports[ev.Port] == nil {
		return fmt.Errorf("%w: port %d not attached", ErrPauseInjection, ev.Port)
	}
	if ev.Trigger != nil {
		tr := *ev.Trigger
		ev.Trigger = &tr
		s.pfc.triggers = append(s.pfc.triggers, ev)
		return nil
	}
	base := s.loop.Now()
	s.loop.Post(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.pfcInject(ev, base, 0)
	})
	return nil
}

// PFCCounters returns the PFC counters of every port, by port and
// priority; nil when PFC is off.
func (s *Switch) PFCCounters() map[uint32][roce.PFCPriorities]PFCCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pfc == nil {
		return nil
	}
	now := s.loop.Now()
	out := make(map[uint32][roce.PFCPriorities]PFCCounters, len(s.pfc.ports))
	for id, pp := range s.pfc.ports {
		c := pp.ctr
		for p := range c {
			q := &pp.q[p]
			c[p].RxPauseNs = q.pauseNs + max(0, min(q.pauseUntil, now)-q.pauseFrom)
		}
		out[id] = c
	}
	return out
}

// PFCLog returns the watchdog's storm and restore events in order; nil
// when PFC is off.
func (s *Switch) PFCLog() []PFCEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pfc == nil {
		return nil
	}
	return append([]PFCEvent(nil), s.pfc.log...)
}

// mirrorMAC sends the wrapped mirror copy (roce.AppendMACMirror) of a MAC
// Control frame the switch received on or sent from port, with the next
// mirror sequence number, like a RoCE copy (see mirror). A received frame
// is stamped as mirror does (t, timed: its arrival); a sent one, already
// written, left within [t, at] (mirrorStampSent).
func (s *Switch) mirrorMAC(port uint32, frame []byte, sent bool, event roce.Event, t int64, timed bool, at int64) {
	if s.sch == nil {
		return
	}
	sw := s.switchOf(port)
	sess, seq, ok := s.mirrorSlot(sw, len(frame))
	if !ok {
		return
	}
	var stamp int64
	if sent {
		stamp = s.mirrorStampSent(sw, t, at)
	} else {
		stamp = s.mirrorStamp(sw, t, timed)
	}
	cp := roce.AppendMACMirror(s.scratch[:0], roce.MirrorMeta{Seq: seq, Switch: sw, TimestampNs: uint64(stamp) & roce.MirrorTimeMask, Event: event},
		sent, uint16(port), frame)
	if sess.truncate > 0 && len(cp) > sess.truncate {
		cp = cp[:sess.truncate]
	}
	for _, port := range sess.replicas {
		if p := s.ports[port]; p != nil {
			p.Send(cp)
			s.stats.Mirrored++
		}
	}
	s.scratch = cp[:0]
}
