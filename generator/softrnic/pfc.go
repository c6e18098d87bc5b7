package softrnic

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// PFCConfig turns on Priority-based Flow Control (802.1Qbb) on a NIC: it
// honours PFC frames from its link peer and generates them when its receive
// buffer fills (pfc.go). The zero value enables the receive buffer model
// but no lossless priority.
type PFCConfig struct {
	// Priorities is the bitmap of lossless priorities (PFC enabled, mlnx_qos
	// --pfc): bit p for priority p. PFC frames are honoured and generated
	// only for these; per-priority counters exist only for these. Default 0:
	// none.
	Priorities uint8
	// DSCPToPriority is the NIC's DSCP→priority map (mlnx_qos --trust dscp
	// --dscp2prio): a frame's priority is DSCPToPriority[TOS>>2] & 7, for the
	// QPs' traffic class and for ACKs and CNPs alike. Default: all 0.
	DSCPToPriority [64]uint8
	// PageSize is the size in bytes of the pages backing registered memory,
	// for the MTT model: one translation-cache entry per page (Guo et al., SIGCOMM 2016,
	// §4.4). Default 0: DefaultPageSize (4 KiB); 2 MiB models huge pages.
	PageSize int
}

// DefaultPageSize is the page size of registered memory when
// PFCConfig.PageSize is zero.
const DefaultPageSize = 4096

// DefaultRxBufferBytes is the receive buffer when Personality.RxBufferBytes
// is zero: mlx5 lossless buffer 0 of a 262016-byte port buffer (the
// MLNX_OFED "tune receive buffers" note's buffer_size listing, 130944 bytes).
const DefaultRxBufferBytes = 130944

// pfcXoffQuanta is the pause time of the XOFF frames the NIC sends: the
// maximum, refreshed at half its duration while the buffer stays above XON
// (docs/pfc.md: implementations send a large value and an explicit XON).
const pfcXoffQuanta = 0xFFFF

// pfcLogSize bounds the PFC log (PFCLog); later entries are not kept.
const pfcLogSize = 1 << 20

// PFCEvent is the kind of a PFCLogEntry. The zero value is invalid.
type PFCEvent uint8

// PFC log events.
const (
	PFCSent         PFCEvent = iota + 1 // a PFC frame started on the wire
	PFCReceived                         // a PFC frame arrived
	PFCStormWarning                     // the receive pipeline stalled past the minor watermark (tx_pause_storm_warning_events)
	PFCStormError                       // the storm watchdog fired: pause generation disabled for good (tx_pause_storm_error_events)
)

// String returns "sent", "received", "storm-warning", "storm-error" or "PFCEvent(N)".
func (e PFCEvent) String() string {
	switch e {
	case PFCSent:
		return "sent"
	case PFCReceived:
		return "received"
	case PFCStormWarning:
		return "storm-warning"
	case PFCStormError:
		return "storm-error"
	}
	return fmt.Sprintf("PFCEvent(%d)", uint8(e))
}

// PFCLogEntry is one PFC event of a NIC, on its clock.
type PFCLogEntry struct {
	TimeNs int64
	Event  PFCEvent
	// Enable and Quanta are the frame's priority enable vector (low octet)
	// and time[0..7], for PFCSent and PFCReceived.
	Enable uint8
	Quanta [roce.PFCPriorities]uint16
}

// String formats the entry as "12345ns sent enable=0x08 p3=65535".
func (e PFCLogEntry) String() string {
	s := fmt.Sprintf("%dns %v", e.TimeNs, e.Event)
	if e.Event == PFCSent || e.Event == PFCReceived {
		s += fmt.Sprintf(" enable=0x%02x", e.Enable)
		for p, q := range e.Quanta {
			if e.Enable&(1<<p) != 0 {
				s += fmt.Sprintf(" p%d=%d", p, q)
			}
		}
	}
	return s
}

// PauseReactionBound returns the 802.3 bound on the time from receiving a
// PAUSE/PFC frame to the last start of a frame of the paused priority at
// gbps (roce.PauseReactionBoundNs: IEEE 802.3 Table 31B-1), rounded down to
// the nanosecond, and false for a speed the table does not list (e.g.
// 100 Gb/s: 394 quanta = 2017 ns).
func PauseReactionBound(gbps float64) (time.Duration, bool) {
	bps := int64(gbps * 1e9)
	if bps <= 0 {
		return 0, false
	}
	ns, ok := roce.PauseReactionBoundNs(bps)
	if !ok {
		return 0, false
	}
	return time.Duration(ns), true
}

// rxThresholds returns the receive buffer size and XOFF/XON thresholds of
// p, zero fields replaced by their defaults (Personality.RxXoffBytes).
func (p *Personality) rxThresholds() (size, xoff, xon int) {
	size, xoff, xon = p.RxBufferBytes, p.RxXoffBytes, p.RxXonBytes
	if size == 0 {
		size = DefaultRxBufferBytes
	}
	if xoff == 0 {
		// mlx5 port_buffer.c, integer arithmetic, 7 m cable, MTU 1500;
		// speed in Gb/s floored at 40.
		speed := max(int(p.LineRateGbps), 40)
		xoff = size - ((301+216*7/100)*speed + 272*1500/100)
	}
	if xon == 0 {
		xon = xoff - 9216
	}
	return size, max(xoff, 0), max(xon, 0)
}

func (p *Personality) validatePFC() error {
	switch {
	case p.RxBufferBytes < 0 || p.RxBufferBytes > 1<<30:
		return fieldErrorf([]string{"rx-buffer-bytes"}, "rx-buffer-bytes %d out of range 0..2^30", p.RxBufferBytes)
	case p.RxXoffBytes < 0:
		return fieldErrorf([]string{"rx-xoff-bytes"}, "rx-xoff-bytes %d must not be negative", p.RxXoffBytes)
	case p.RxXonBytes < 0:
		return fieldErrorf([]string{"rx-xon-bytes"}, "rx-xon-bytes %d must not be negative", p.RxXonBytes)
	case p.RxPipelineGbps < 0 || p.RxPipelineGbps > 1600:
		return fieldErrorf([]string{"rx-pipeline-gbps"}, "rx-pipeline-gbps %v out of range [0, 1600]", p.RxPipelineGbps)
	case p.MTTCacheEntries < 0 || p.MTTCacheEntries > 1<<24:
		return fieldErrorf([]string{"mtt-cache-entries"}, "mtt-cache-entries %d out of range 0..2^24", p.MTTCacheEntries)
	}
	size, xoff, xon := p.rxThresholds()
	if xoff > size || xon > xoff {
		return fieldErrorf([]string{"rx-xon-bytes", "rx-xoff-bytes", "rx-buffer-bytes", "line-rate-gbps"},
			"rx thresholds: want rx-xon-bytes (%d) <= rx-xoff-bytes (%d) <= rx-buffer-bytes (%d)", xon, xoff, size)
	}
	return nil
}

// PFCCounters are the PFC counters of a NIC with PFC configured, named
// after the mlx5 ethtool counters (Linux
// Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst). Per-priority entries
// are exported only for the lossless priorities.
type PFCCounters struct {
	Enabled    bool  // PFC is configured: Map exports these counters
	Priorities uint8 // lossless priorities

	RxPause           [roce.PFCPriorities]uint64 // rx_prio<p>_pause: PFC frames received naming p (XON included)
	RxPauseDuration   [roce.PFCPriorities]uint64 // rx_prio<p>_pause_duration: µs the NIC did not start frames of p
	RxPauseTransition [roce.PFCPriorities]uint64 // rx_prio<p>_pause_transition: XOFF→XON transitions of that state
	TxPause           [roce.PFCPriorities]uint64 // tx_prio<p>_pause: PFC frames sent naming p (XON included)
	TxPauseDuration   [roce.PFCPriorities]uint64 // tx_prio<p>_pause_duration: µs the NIC kept its peer paused on p

	StormWarningEvents uint64 // tx_pause_storm_warning_events
	StormErrorEvents   uint64 // tx_pause_storm_error_events
	RxDiscardsPhy      uint64 // rx_discards_phy: frames dropped at a full receive buffer
}

func (c *PFCCounters) addTo(m map[string]uint64) {
	for p := range roce.PFCPriorities {
		if c.Priorities&(1<<p) == 0 {
			continue
		}
		pre := fmt.Sprintf("_prio%d_pause", p)
		m["rx"+pre] = c.RxPause[p]
		m["rx"+pre+"_duration"] = c.RxPauseDuration[p]
		m["rx"+pre+"_transition"] = c.RxPauseTransition[p]
		m["tx"+pre] = c.TxPause[p]
		m["tx"+pre+"_duration"] = c.TxPauseDuration[p]
	}
	m["tx_pause_storm_warning_events"] = c.StormWarningEvents
	m["tx_pause_storm_error_events"] = c.StormErrorEvents
	m["rx_discards_phy"] = c.RxDiscardsPhy
}

// pauseTimeline integrates one paused state (a priority paused by the peer,
// or the peer paused by us) over time.
type pauseTimeline struct {
	on          bool
	start, end  int64 // current pause: [start, end)
	total       int64 // ns of closed pauses
	transitions uint64
}

// settle closes the current pause if it expired by now.
func (t *pauseTimeline) settle(now int64) {
	if t.on && t.end <= now {
		t.total += t.end - t.start
		t.on = false
		t.transitions++
	}
}

// set records a pause frame taking effect at at, pausing until until
// (until <= at: XON).
func (t *pauseTimeline) set(at, until int64) {
	t.settle(at)
	if until <= at {
		if t.on {
			t.total += at - t.start
			t.on = false
			t.transitions++
		}
		return
	}
	if !t.on {
		t.on, t.start = true, at
	}
	t.end = until
}

// read returns the paused µs and the transitions as of now.
func (t pauseTimeline) read(now int64) (us, transitions uint64) {
	t.settle(now)
	ns := t.total
	if t.on {
		ns += now - t.start
	}
	return uint64(ns / 1000), t.transitions
}

// pendingPause is a received PFC frame waiting for the reaction delay.
type pendingPause struct {
	at     int64
	mask   uint8
	quanta [roce.PFCPriorities]uint16
}

// pfcState is the PFC machinery of a NIC (nil when PFC is off).
type pfcState struct {
	cfg     PFCConfig
	lineBps int64
	delay   int64

	// Transmitter: pauses from the peer.
	pausedUntil [roce.PFCPriorities]int64
	pending     []pendingPause // FIFO: the reaction delay is constant
	applyArmed  bool
	applyFn     func()
	// lateMax is the largest delay between a pause's due time (arrival +
	// reaction delay) and the NIC applying it: 0 on a virtual clock. Written
	// on the loop, read from any goroutine (PFCApplyLateness).
	lateMax  atomic.Int64
	rxPause  [roce.PFCPriorities]pauseTimeline
	rxFrames [roce.PFCPriorities]uint64
	macQ     [][]byte // PFC frames to send, ahead of everything

	// Receiver: buffer and pipeline.
	size, xoff, xon int
	rxq             [][]byte // frames in the buffer; rxq[rxHead] is in service when busy
	rxHead          int
	occ             int
	rxFree          [][]byte
	busy            bool
	donePending     bool // the frame in service finished during a stall
	doneFn          func()
	rxNsPerByte     float64
	missNs          int64
	mtt             *mttCache
	pageSize        uint64
	parser          roce.Parser
	cursor          map[uint32]uint64 // QPN → VA of the next SEND/WRITE packet

	// Generation and the storm watchdog.
	asserting    bool
	disabled     bool
	refresh      time.Duration
	refreshTimer sim.Timer
	refreshFn    func()
	stallSince   int64 // last pipeline progress, or when the buffer became non-empty
	warned       bool
	watchdog     int64
	minor        int64
	txPause      [roce.PFCPriorities]pauseTimeline
	txFrames     [roce.PFCPriorities]uint64

	warnEvents, errEvents, discards uint64
	log                             []PFCLogEntry
}

func newPFCState(n *NIC, cfg PFCConfig) *pfcState {
	p := &n.pers
	s := &pfcState{
		cfg:      cfg,
		lineBps:  int64(p.LineRateGbps * 1e9),
		delay:    int64(p.PauseReactionDelay),
		missNs:   int64(p.MTTMissPenalty),
		watchdog: int64(p.StormWatchdog),
		cursor:   map[uint32]uint64{},
	}
	s.size, s.xoff, s.xon = p.rxThresholds()
	rate := p.RxPipelineGbps
	if rate == 0 {
		rate = p.LineRateGbps
	}
	s.rxNsPerByte = 8 / rate
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
		s.cfg.PageSize = DefaultPageSize
	}
	s.pageSize = uint64(cfg.PageSize)
	if p.MTTCacheEntries > 0 {
		s.mtt = newMTTCache(p.MTTCacheEntries)
	}
	s.refresh = roce.QuantaToDuration(pfcXoffQuanta, s.lineBps) / 2
	s.minor = max(int64(80*time.Millisecond), s.watchdog*85/100)
	s.applyFn = n.pfcApplyDue
	s.doneFn = n.pfcServiceDone
	s.refreshFn = n.pfcRefresh
	return s
}

func (s *pfcState) logEvent(e PFCLogEntry) {
	if len(s.log) < pfcLogSize {
		s.log = append(s.log, e)
	}
}

// PFCApplyLateness returns the largest delay so far between a received
// pause being due (its arrival plus the reaction delay) and the NIC
// applying it: how much later than the personality's reaction time a
// software NIC on a real clock may have stopped (0 on a virtual clock, or
// with PFC off). Safe from any goroutine.
func (n *NIC) PFCApplyLateness() time.Duration {
	if n.pfc == nil {
		return 0
	}
	return time.Duration(n.pfc.lateMax.Load())
}

// PFCLog returns the PFC frames the NIC sent and received and its storm
// watchdog events, oldest first (up to 2^20 entries); nil when PFC is off.
// Call it on the NIC's Loop.
func (n *NIC) PFCLog() []PFCLogEntry {
	if n.pfc == nil {
		return nil
	}
	return append([]PFCLogEntry(nil), n.pfc.log...)
}

// StallRx stops the NIC's receive pipeline at start (on the NIC's clock,
// Now; a past start means now) for duration, or until the end with
// duration 0: the rx-stall event, the malfunctioning NIC of Guo et al., SIGCOMM 2016, §4.3. With PFC the
// receive buffer fills, the NIC pauses its peer until the storm watchdog
// gives up, then drops; without PFC every frame received during the stall
// is dropped (rx_discards).
func (n *NIC) StallRx(start, duration time.Duration) {
	d := time.Duration(max(0, int64(start)-n.loop.Now()))
	n.loop.AfterFunc(d, func() { n.setRxStall(true) })
	if duration > 0 {
		n.loop.AfterFunc(d+duration, func() { n.setRxStall(false) })
	}
}

func (n *NIC) setRxStall(on bool) {
	n.rxStalled = on
	s := n.pfc
	if on || s == nil {
		return
	}
	if s.donePending {
		s.donePending = false
		n.pfcServiceDone()
		return
	}
	n.pfcStartService()
}

// ---- transmitter: honouring pauses ----

// prio returns the priority of traffic with IP TOS tos.
func (s *pfcState) prio(tos uint8) int { return int(s.cfg.DSCPToPriority[tos>>2] & 7) }

// paused reports whether priority prio may not start a frame at now.
func (s *pfcState) paused(prio int, now int64) bool { return now < s.pausedUntil[prio] }

// pfcHonour handles a PFC frame that arrived at rxNs (handled at now ≥
// rxNs): its enabled lossless priorities pause for their time (0: resume)
// from the reaction delay after its arrival. A software NIC on a real clock
// may handle the frame after that time; it then applies the pause at once
// and the lateness is counted (PFCApplyLateness).
func (n *NIC) pfcHonour(f *roce.MACControlFrame, rxNs, now int64) {
	s := n.pfc
	s.logEvent(PFCLogEntry{TimeNs: rxNs, Event: PFCReceived, Enable: f.Enable(), Quanta: f.Time})
	mask := f.Enable() & s.cfg.Priorities
	if mask == 0 {
		return // lossy priorities or an empty vector: no pause, not counted
	}
	for p := range roce.PFCPriorities {
		if mask&(1<<p) != 0 {
			s.rxFrames[p]++
		}
	}
	at := rxNs + s.delay
	if k := len(s.pending); k > 0 {
		at = max(at, s.pending[k-1].at) // FIFO, whatever the arrival stamps' jitter
	}
	s.pending = append(s.pending, pendingPause{at: at, mask: mask, quanta: f.Time})
	if at <= now {
		n.pfcApplyDue()
		return
	}
	if !s.applyArmed {
		s.applyArmed = true
		n.loop.AfterFunc(time.Duration(at-now), s.applyFn)
	}
}

// pfcApplyDue applies the pauses whose reaction delay has passed and wakes
// the transmitter.
func (n *NIC) pfcApplyDue() {
	s := n.pfc
	s.applyArmed = false
	now := n.loop.Now()
	if !s.applyPending(now) {
		return
	}
	if len(s.pending) > 0 {
		s.applyArmed = true
		n.loop.AfterFunc(time.Duration(s.pending[0].at-now), s.applyFn)
	}
	n.rekick()
}

// applyPending applies pending pauses due by now; it reports whether any was.
func (s *pfcState) applyPending(now int64) bool {
	k := 0
	for k < len(s.pending) && s.pending[k].at <= now {
		e := &s.pending[k]
		if late := now - e.at; late > s.lateMax.Load() {
			s.lateMax.Store(late)
		}
		for p := range roce.PFCPriorities {
			if e.mask&(1<<p) == 0 {
				continue
			}
			until := e.at + int64(roce.QuantaToDuration(e.quanta[p], s.lineBps))
			s.rxPause[p].set(e.at, until)
			s.pausedUntil[p] = until
		}
		k++
	}
	if k > 0 {
		s.pending = s.pending[:copy(s.pending, s.pending[k:])]
	}
	return k > 0
}

// rekick reschedules the transmitter now (or when the wire is free), even
// if it was waiting for a later time.
func (n *NIC) rekick() {
	if n.txScheduled {
		n.txTimer.Stop()
		n.txScheduled = false
	}
	n.kick()
}

// pfcTxTick is txTick with PFC: PFC frames first, then the first control
// frame and the first committed data frame whose priority is not paused.
func (n *NIC) pfcTxTick(now int64) {
	s := n.pfc
	s.applyPending(now)
	var frame []byte
	var dataQP *QP
	mac := false
	if len(s.macQ) > 0 {
		frame, mac = s.macQ[0], true
		s.macQ = shift(s.macQ)
	} else if i := n.sendableCtrl(now); i >= 0 {
		frame = n.ctrlQ[i]
		n.ctrlQ = removeAt(n.ctrlQ, i)
	} else {
		i := n.sendableData(now)
		if i < 0 {
			n.fillPipeline(len(n.pipeline) + 1)
			i = n.sendableData(now)
		}
		if i >= 0 {
			tf := n.pipeline[i]
			n.pipeline = removeAt(n.pipeline, i)
			frame, dataQP = tf.b, tf.qp
			if tf.dupEnd {
				defer tf.qp.dupServed()
			}
		}
	}
	if frame != nil {
		// A PFC frame pauses the peer from when it leaves: on a real-time
		// testbed the write may return well after now (a starved process),
		// and the port's transmit timestamp (the kernel's, as the switch
		// stamps its own PFC frames) puts the tx pause counters on the
		// departure the switch sees. On virtual time the port has none.
		sent := now
		if tp, ok := n.port.(sim.TxTimedPort); ok && mac {
			if tx, ok := tp.SendTimed(frame); ok {
				sent = max(now, tx)
			}
		} else {
			n.port.Send(frame)
		}
		if mac {
			n.pfcSent(frame, sent)
		} else {
			if dataQP != nil {
				dataQP.onWire(n.loop.Now())
			}
			n.ctr.TxPackets++
			n.ctr.TxBytes += uint64(len(frame))
		}
		n.wireFree = now + int64(float64(len(frame)+20)*n.nsPerByte+0.5)
		if mac {
			s.rxFree = append(s.rxFree, frame)
		} else {
			n.free = append(n.free, frame)
		}
	}
	blocked := 0
	for _, tf := range n.pipeline {
		if s.paused(s.prio(tf.qp.attr.TrafficClass), now) {
			blocked++
		}
	}
	n.fillPipeline(n.pers.TxPipelinePackets + blocked)
	if len(s.macQ) > 0 || n.sendableCtrl(now) >= 0 || n.sendableData(now) >= 0 {
		n.kick()
		return
	}
	// Nothing sendable now: wake up when a pause ends or a rate-limited
	// QP becomes ready.
	t, ok := int64(0), false
	early := func(x int64) {
		if !ok || x < t {
			t, ok = x, true
		}
	}
	for _, b := range n.ctrlQ {
		early(s.pausedUntil[s.prio(roce.FrameTOS(b))])
	}
	for _, tf := range n.pipeline {
		early(s.pausedUntil[s.prio(tf.qp.attr.TrafficClass)])
	}
	for _, qp := range n.qpOrder {
		if qp.hasDataFrame() {
			early(max(qp.readyAt(), s.pausedUntil[s.prio(qp.attr.TrafficClass)]))
		}
	}
	if ok {
		n.txScheduled = true
		n.txTimer = n.loop.AfterFunc(time.Duration(max(t, n.wireFree)-now), n.tickFn)
	}
}

func (n *NIC) sendableCtrl(now int64) int {
	for i, b := range n.ctrlQ {
		if !n.pfc.paused(n.pfc.prio(roce.FrameTOS(b)), now) {
			return i
		}
	}
	return -1
}

func (n *NIC) sendableData(now int64) int {
	for i, tf := range n.pipeline {
		if !n.pfc.paused(n.pfc.prio(tf.qp.attr.TrafficClass), now) {
			return i
		}
	}
	return -1
}

func removeAt[T any](s []T, i int) []T {
	copy(s[i:], s[i+1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// pfcSent accounts for a PFC frame that started on the wire at now.
func (n *NIC) pfcSent(frame []byte, now int64) {
	s := n.pfc
	var f roce.MACControlFrame
	if roce.ParseMACControl(frame, &f) != nil {
		return
	}
	s.logEvent(PFCLogEntry{TimeNs: now, Event: PFCSent, Enable: f.Enable(), Quanta: f.Time})
	for p := range roce.PFCPriorities {
		if f.Enabled(p) {
			s.txFrames[p]++
			s.txPause[p].set(now, now+int64(roce.QuantaToDuration(f.Time[p], s.lineBps)))
		}
	}
}

// ---- receiver: buffer, pipeline, pause generation ----

// pfcReceive handles a frame arriving with PFC on: PFC frames act at once,
// other frames enter the receive buffer (or are dropped when it is full).
func (n *NIC) pfcReceive(frame []byte, rxNs int64) {
	s := n.pfc
	now := n.loop.Now()
	if len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:]) == roce.EtherTypeMACControl {
		var f roce.MACControlFrame
		if roce.ParseMACControl(frame, &f) == nil && f.Opcode == roce.MACControlPFC {
			n.pfcHonour(&f, min(rxNs, now), now)
			return
		}
		n.ctr.RxDiscards++
		return
	}
	if s.occ+len(frame) > s.size {
		s.discards++
		return
	}
	var b []byte
	if k := len(s.rxFree); k > 0 {
		b = s.rxFree[k-1][:0]
		s.rxFree = s.rxFree[:k-1]
	}
	b = append(b, frame...)
	if s.rxHead == len(s.rxq) {
		s.stallSince = now
	}
	s.rxq = append(s.rxq, b)
	s.occ += len(b)
	if !s.asserting && !s.disabled && s.cfg.Priorities != 0 && s.occ >= s.xoff {
		s.asserting = true
		n.pfcSendPause(pfcXoffQuanta)
		s.refreshTimer = n.loop.AfterFunc(s.refresh, s.refreshFn)
	}
	n.pfcStartService()
}

// pfcStartService starts the receive pipeline on the buffer's head frame.
func (n *NIC) pfcStartService() {
	s := n.pfc
	if s.busy || n.rxStalled || s.rxHead == len(s.rxq) {
		return
	}
	f := s.rxq[s.rxHead]
	cost := int64(float64(len(f)+20)*s.rxNsPerByte + 0.5)
	if s.mtt != nil {
		cost += int64(n.mttMisses(f)) * s.missNs
	}
	s.busy = true
	n.loop.AfterFunc(time.Duration(cost), s.doneFn)
}

// pfcServiceDone finishes the frame in service: it leaves the buffer and
// is processed (executed, acknowledged...).
func (n *NIC) pfcServiceDone() {
	s := n.pfc
	if n.rxStalled {
		s.donePending = true
		return
	}
	s.busy = false
	f := s.rxq[s.rxHead]
	s.rxq[s.rxHead] = nil
	s.rxHead++
	if s.rxHead == len(s.rxq) {
		s.rxq, s.rxHead = s.rxq[:0], 0
	} else if s.rxHead >= 1024 && 2*s.rxHead >= len(s.rxq) {
		s.rxq = s.rxq[:copy(s.rxq, s.rxq[s.rxHead:])]
		s.rxHead = 0
	}
	s.occ -= len(f)
	now := n.loop.Now()
	s.stallSince, s.warned = now, false
	n.process(f)
	s.rxFree = append(s.rxFree, f)
	if s.asserting && s.occ <= s.xon {
		s.asserting = false
		if s.refreshTimer != nil {
			s.refreshTimer.Stop()
			s.refreshTimer = nil
		}
		n.pfcSendPause(0)
	}
	n.pfcStartService()
}

// pfcRefresh re-sends XOFF while the buffer stays above XON, unless the
// storm watchdog finds the pipeline stopped for StormWatchdog: then pause
// generation stops for good.
func (n *NIC) pfcRefresh() {
	s := n.pfc
	s.refreshTimer = nil
	if !s.asserting || s.disabled {
		return
	}
	now := n.loop.Now()
	if s.watchdog > 0 && s.rxHead < len(s.rxq) {
		stalled := now - s.stallSince
		if !s.warned && stalled >= s.minor {
			s.warned = true
			s.warnEvents++
			s.logEvent(PFCLogEntry{TimeNs: now, Event: PFCStormWarning})
		}
		if stalled >= s.watchdog {
			s.disabled, s.asserting = true, false
			s.errEvents++
			s.logEvent(PFCLogEntry{TimeNs: now, Event: PFCStormError})
			return
		}
	}
	n.pfcSendPause(pfcXoffQuanta)
	s.refreshTimer = n.loop.AfterFunc(s.refresh, s.refreshFn)
}

// pfcSendPause queues a PFC frame for the lossless priorities with time q
// (0: XON) ahead of all other frames.
func (n *NIC) pfcSendPause(q uint16) {
	s := n.pfc
	var quanta [roce.PFCPriorities]uint16
	for p := range quanta {
		if s.cfg.Priorities&(1<<p) != 0 {
			quanta[p] = q
		}
	}
	var b []byte
	if k := len(s.rxFree); k > 0 {
		b = s.rxFree[k-1][:0]
		s.rxFree = s.rxFree[:k-1]
	}
	s.macQ = append(s.macQ, roce.BuildPFC(b, n.cfg.MAC, s.cfg.Priorities, quanta))
	n.rekick()
}

// pfcCounters returns the PFC counters as of now.
func (s *pfcState) counters(now int64) PFCCounters {
	c := PFCCounters{Enabled: true, Priorities: s.cfg.Priorities,
		StormWarningEvents: s.warnEvents, StormErrorEvents: s.errEvents, RxDiscardsPhy: s.discards}
	for p := range roce.PFCPriorities {
		if s.cfg.Priorities&(1<<p) == 0 {
			continue
		}
		c.RxPause[p], c.TxPause[p] = s.rxFrames[p], s.txFrames[p]
		c.RxPauseDuration[p], c.RxPauseTransition[p] = s.rxPause[p].read(now)
		c.TxPauseDuration[p], _ = s.txPause[p].read(now)
	}
	return c
}

// ---- memory translation ----

// mttMisses returns how many translation misses frame f causes: the pages
// of registered memory its payload is written to (WRITE, SEND, READ
// response) or its READ request reads, looked up in the MTT cache.
func (n *NIC) mttMisses(f []byte) int {
	s := n.pfc
	var p roce.Packet
	if s.parser.Parse(f, 0, &p) != nil {
		return 0
	}
	qp := n.qps[p.BTH.DestQP()]
	if qp == nil {
		return 0
	}
	op := p.Opcode
	var va uint64
	length := p.PayloadLen
	switch {
	case op.IsWrite() || op.IsSend():
		switch {
		case op.IsFirst() && op.IsWrite():
			va = p.RETH.VirtualAddress()
		case op.IsFirst():
			if len(qp.rq) == 0 {
				return 0
			}
			va = qp.rq[0].MR.Addr + uint64(qp.rq[0].Offset)
		default:
			va = s.cursor[qp.qpn]
		}
		s.cursor[qp.qpn] = va + uint64(length)
	case op.IsReadRequest():
		va, length = p.RETH.VirtualAddress(), int(p.RETH.DMALength())
	case op.IsReadResponse():
		psn := p.BTH.PSN()
		for _, w := range qp.sq {
			if w.wr.Op == WRRead && w.assigned && psn.InWindow(w.firstPSN, uint32(w.npkts)) {
				va = w.wr.Local.Addr + uint64(w.wr.Offset+psn.Sub(w.firstPSN)*qp.mtu)
				break
			}
		}
		if va == 0 {
			return 0
		}
	default:
		return 0
	}
	if length <= 0 {
		return 0
	}
	misses := 0
	for pg := va / s.pageSize; pg <= (va+uint64(length)-1)/s.pageSize; pg++ {
		if !s.mtt.touch(pg) {
			misses++
		}
	}
	return misses
}

// mttCache is an LRU cache of page translations (Guo et al., SIGCOMM
// 2016, §4.4; the real
// cache's associativity is not public).
type mttCache struct {
	idx        map[uint64]int32
	page       []uint64
	prev, next []int32
	head, tail int32 // most and least recently used; -1 when empty
}

func newMTTCache(entries int) *mttCache {
	return &mttCache{idx: make(map[uint64]int32, entries), page: make([]uint64, 0, entries),
		prev: make([]int32, 0, entries), next: make([]int32, 0, entries), head: -1, tail: -1}
}

// touch looks page up, makes it the most recently used and reports whether
// it was cached (a hit).
func (c *mttCache) touch(page uint64) bool {
	if i, ok := c.idx[page]; ok {
		c.unlink(i)
		c.pushFront(i)
		return true
	}
	var i int32
	if len(c.page) < cap(c.page) {
		i = int32(len(c.page))
		c.page, c.prev, c.next = append(c.page, page), append(c.prev, -1), append(c.next, -1)
	} else {
		i = c.tail
		c.unlink(i)
		delete(c.idx, c.page[i])
		c.page[i] = page
	}
	c.idx[page] = i
	c.pushFront(i)
	return false
}

func (c *mttCache) unlink(i int32) {
	p, nx := c.prev[i], c.next[i]
	if p >= 0 {
		c.next[p] = nx
	} else {
		c.head = nx
	}
	if nx >= 0 {
		c.prev[nx] = p
	} else {
		c.tail = p
	}
}

func (c *mttCache) pushFront(i int32) {
	c.prev[i], c.next[i] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = i
	}
	c.head = i
	if c.tail < 0 {
		c.tail = i
	}
}
