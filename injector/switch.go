package injector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// Switch is the software switch target: the pipeline of p4src/lumina.p4 in
// Go over Ports, programmed through P4Runtime (Server) or directly in tests.
//
// Concurrency: frames are processed on the Loop; the P4Runtime server
// changes state from gRPC goroutines. mu guards every piece of program
// state (tables, registers, counters, clone sessions, the pipeline itself)
// and the statistics (Stats, Timing).
type Switch struct {
	loop sim.Loop
	rng  *rand.Rand

	mu     sync.Mutex
	ports  map[uint32]sim.Port
	sch    *schema
	cookie uint64
	devCfg []byte
	tables map[uint32]*table
	regs   map[uint32][]uint64
	ctrs   map[uint32][]counterCell
	clones map[uint32]*cloneSession
	// undo, during an atomic Write batch, records what each update
	// changes (rollback.go); nil otherwise. Guarded by mu.
	undo *undoLog

	// Resolved for the fast path when a pipeline is set.
	t struct {
		l2, arp, conn, event, wrrCfg, mirSel, mirRw, red *table
		portSw, fabric, redPort                          *table
	}
	a struct {
		noAction, forward, dropFrame, arpReply, setConn, dropEvent, markECN, corrupt, setWRR, setMirror, rewrite uint32
		delayEvent, reorderEvent, duplicateEvent, setRed, setSwitch                                              uint32
	}
	r struct{ expected, iter, wrrIdx, seqLo, seqHi []uint64 }
	c struct{ rx, drops, mirrored, tx []counterCell }

	// halted: Halt stopped the pipeline (guarded by mu).
	halted bool

	parser  roce.Parser
	pkt     roce.Packet
	scratch []byte
	stats   Stats

	// The reorder holds waiting for overtakers, per connection index
	// (a connection has an entry while it has a hold waiting).
	reorders map[uint64]*overtakes

	// lastStamp is, per logical switch, the latest mirror timestamp (loop
	// ns): stamps never decrease in a switch's mirror-sequence order.
	lastStamp [MaxSwitches]int64
	timing    timingStats

	pfc *pfcState // nil: PFC off (Config.PFC)
}

// Stats are the software target's own counts (beyond the P4 counters).
type Stats struct {
	Frames      uint64 // frames received on any port
	RoCE        uint64 // frames with a BTH
	Mirrored    uint64 // mirror copies sent
	Forwarded   uint64
	Dropped     uint64 // by an event or for want of a forwarding entry
	NoPipeline  uint64 // frames received before a pipeline was set
	UnknownPort uint64 // forwarding entries naming a port that is not attached
	Held        uint64 // packets held by delay and reorder events
	Released    uint64 // held packets that left (forwarded or not)
	Copies      uint64 // extra copies sent by duplicate events
	ECNMarked   uint64 // packets marked CE by queue depth (Config.ECN)
}

type counterCell struct{ packets, bytes uint64 }

type entry struct {
	key    [4]uint64
	action uint32
	params []uint64
}

type table struct {
	info    *tableInfo
	entries map[[4]uint64]*entry
	def     entry
	defSet  bool // the default action was written by the controller
}

type cloneSession struct {
	id        uint32
	replicas  []uint32 // egress ports
	instances []uint32
	cos       uint32
	truncate  int
}

// Config configures a Switch.
type Config struct {
	// Seed seeds the random UDP source ports of mirror copies. Default 0.
	Seed uint64

	// PFC, if set, turns on the PFC model: per-priority egress queues
	// paced at each port's speed that honour received PFC/PAUSE frames,
	// ingress accounting that pauses upstream ports, the PFC watchdog and
	// pause injection (see the package documentation, section PFC).
	// Default nil: PFC frames are forwarded like any frame and forwarded
	// frames go straight to their port. PFCConfig with no lossless
	// priority is the egress queue model without PFC: lossy queues that
	// tail-drop at LossyQueueBytes.
	PFC *PFCConfig

	// CellBytes is the size of the queue model's buffer cells, in which
	// ECN marking by queue depth (Egress.ecn_red, ecn.go) measures a
	// queue. Default DefaultCellBytes.
	CellBytes int
}

// New creates a switch with no ports and no pipeline.
func New(loop sim.Loop, cfg Config) *Switch {
	s := &Switch{loop: loop, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5357)), ports: map[uint32]sim.Port{},
		scratch: make([]byte, 0, 9216+64)}
	if cfg.PFC != nil {
		s.pfc = newPFC(cfg.PFC)
		s.pfc.ecn = newECN(cfg.Seed)
		s.pfc.cellBytes = cfg.CellBytes
		if s.pfc.cellBytes <= 0 {
			s.pfc.cellBytes = DefaultCellBytes
		}
	}
	return s
}

// AddPort attaches p as switch port id (a P4 PortId_t, 0..511). If p is a
// sim.TimedPort, mirror copies of its packets are stamped with their
// arrival time (see Timing); otherwise with the Loop's time when the
// pipeline processes them.
func (s *Switch) AddPort(id uint32, p sim.Port) error {
	if id > 511 {
		return fmt.Errorf("injector: port %d out of range 0..511", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ports[id] != nil {
		return fmt.Errorf("injector: port %d already attached", id)
	}
	s.ports[id] = p
	if s.pfc != nil {
		s.pfcAddPort(id, p)
	}
	if tp, ok := p.(sim.TimedPort); ok {
		tp.SetTimedReceiver(func(frame []byte, rxNs int64) { s.receive(id, frame, rxNs, true) })
	} else {
		p.SetReceiver(func(frame []byte) { s.receive(id, frame, 0, false) })
	}
	return nil
}

// Stats returns the switch's own counts.
func (s *Switch) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ErrNoPipeline is returned by operations that need a forwarding pipeline
// before one was set.
var ErrNoPipeline = errors.New("injector: no forwarding pipeline set")

// install replaces the pipeline (and clears all state) with sch.
func (s *Switch) install(sch *schema, cookie uint64, devCfg []byte) {
	s.sch, s.cookie, s.devCfg = sch, cookie, devCfg
	s.tables = map[uint32]*table{}
	for id, ti := range sch.tables {
		t := &table{info: ti, entries: map[[4]uint64]*entry{}}
		d := defaultActions[ti.name]
		t.def = entry{action: sch.byName[d.action], params: append([]uint64(nil), d.params...)}
		s.tables[id] = t
	}
	s.regs = map[uint32][]uint64{}
	for id, r := range sch.registers {
		s.regs[id] = make([]uint64, r.size)
	}
	s.ctrs = map[uint32][]counterCell{}
	for id, c := range sch.counters {
		s.ctrs[id] = make([]counterCell, c.size)
	}
	s.clones = map[uint32]*cloneSession{}
	tb := func(n string) *table { return s.tables[sch.byName[n]] }
	s.t.l2, s.t.arp, s.t.conn, s.t.event = tb("Ingress.l2_forward"), tb("Ingress.arp_proxy"), tb("Ingress.conn_lookup"), tb("Ingress.event_table")
	s.t.wrrCfg, s.t.mirSel, s.t.mirRw, s.t.red = tb("Ingress.wrr_config"), tb("Ingress.mirror_select"), tb("Egress.mirror_rewrite"), tb("Egress.ecn_red")
	s.t.portSw, s.t.fabric, s.t.redPort = tb("Ingress.port_switch"), tb("Ingress.fabric_forward"), tb("Egress.ecn_red_port")
	a := func(n string) uint32 { return sch.byName[n] }
	s.a.noAction, s.a.forward, s.a.dropFrame, s.a.arpReply = a("NoAction"), a("Ingress.forward"), a("Ingress.drop_frame"), a("Ingress.arp_reply")
	s.a.setConn, s.a.dropEvent, s.a.markECN, s.a.corrupt = a("Ingress.set_conn"), a("Ingress.drop_event"), a("Ingress.mark_ecn"), a("Ingress.corrupt")
	s.a.setWRR, s.a.setMirror, s.a.rewrite, s.a.setRed = a("Ingress.set_wrr_size"), a("Ingress.set_mirror"), a("Egress.rewrite_mirror"), a("Egress.set_red")
	s.a.delayEvent, s.a.reorderEvent, s.a.duplicateEvent = a("Ingress.delay_event"), a("Ingress.reorder_event"), a("Ingress.duplicate_event")
	s.a.setSwitch = a("Ingress.set_switch")
	s.reorders = map[uint64]*overtakes{}
	r := func(n string) []uint64 { return s.regs[sch.byName[n]] }
	s.r.expected, s.r.iter, s.r.wrrIdx, s.r.seqLo, s.r.seqHi = r("Ingress.expected_psn"), r("Ingress.iter_reg"), r("Ingress.wrr_index"), r("Ingress.mirror_seq_lo"), r("Ingress.mirror_seq_hi")
	c := func(n string) []counterCell { return s.ctrs[sch.byName[n]] }
	s.c.rx, s.c.drops, s.c.mirrored, s.c.tx = c("Ingress.rx_roce"), c("Ingress.event_drops"), c("Ingress.mirrored"), c("Egress.tx_roce")
}

func (t *table) lookup(k [4]uint64) *entry {
	if e := t.entries[k]; e != nil {
		return e
	}
	return &t.def
}

func (t *table) hit(k [4]uint64) (*entry, bool) {
	e := t.entries[k]
	return e, e != nil
}

// MaxSwitches is how many logical switches the ports of one Switch can be
// partitioned into (lumina.p4's NUM_SWITCHES; ids 0..31, the ids a mirror
// copy can name: roce.MirrorMeta.Switch).
const MaxSwitches = roce.MaxSwitches

// switchOf is the logical switch of port (Ingress.port_switch; a port
// with no entry is in switch 0, the one switch of a test without a
// fabric). Called with s.mu held and a pipeline set.
func (s *Switch) switchOf(port uint32) uint8 {
	if len(s.t.portSw.entries) == 0 && !s.t.portSw.defSet {
		return 0
	}
	if e := s.t.portSw.lookup([4]uint64{uint64(port)}); e.action == s.a.setSwitch {
		return uint8(e.params[0] % MaxSwitches)
	}
	return 0
}

// route is the forwarding of lumina.p4 for a frame that came in on port
// in: Ingress.fabric_forward (the ingress port's logical switch, source
// MAC, destination MAC), and on a miss Ingress.l2_forward (destination
// MAC). It returns the egress port and whether the frame is forwarded.
func (s *Switch) route(in uint32, frame []byte) (egress uint32, forward bool) {
	if len(s.t.fabric.entries) > 0 {
		k := [4]uint64{uint64(s.switchOf(in)), roce.MAC(frame[6:12]).Uint64(), roce.MAC(frame[0:6]).Uint64()}
		if e, ok := s.t.fabric.hit(k); ok && e.action == s.a.forward {
			return uint32(e.params[0]), true
		}
	}
	if e := s.t.l2.lookup([4]uint64{roce.MAC(frame[0:6]).Uint64()}); e.action == s.a.forward {
		return uint32(e.params[0]), true
	}
	return 0, false
}

// Halt stops the pipeline for good: every frame the switch receives from
// now on is dropped before its counters, tables and mirroring, and nothing
// it sends (frames already queued, its PFC frames) is mirrored any more.
// The counters and the mirror copies stay as they are: the run driver
// halts a switch whose fabric may still be deadlocked (pausing forever) on
// a real-time testbed after the deadlock window, before it reads the
// counters, so that they and the trace describe the same frames.
func (s *Switch) Halt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halted = true
}

// receive is the pipeline (p4src/lumina.p4: Ingress, then Egress) for a
// frame arriving on port in; timed says whether rxNs is its arrival time
// (from a sim.TimedPort).
func (s *Switch) receive(in uint32, frame []byte, rxNs int64, timed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halted {
		return
	}
	s.stats.Frames++
	if s.sch == nil {
		s.stats.NoPipeline++
		return
	}
	if len(frame) < roce.EthernetLen {
		return
	}
	if s.pfc != nil && s.pfcReceive(in, frame, rxNs, timed) {
		return
	}
	l3 := 14
	et := binary.BigEndian.Uint16(frame[12:])
	if et == roce.EtherTypeVLAN && len(frame) >= 18 {
		et = binary.BigEndian.Uint16(frame[16:])
		l3 = 18
	}
	// Proxy ARP (requests only).
	if et == 0x0806 && len(frame) >= l3+28 && binary.BigEndian.Uint16(frame[l3+6:]) == 1 {
		target := uint64(binary.BigEndian.Uint32(frame[l3+24:]))
		if e, ok := s.t.arp.hit([4]uint64{target}); ok && e.action == s.a.arpReply {
			s.arpReply(in, frame, l3, e.params[0])
			return
		}
	}
	egress, forward := s.route(in, frame)
	var event roce.Event
	var hold *held            // set by delay and reorder events
	copies := 0               // set by duplicate events
	conn := uint64(0)         // the matched connection entry's index
	arrived := int64(0)       // the arrival on the mirror clock, when a hold, copy or reorder needs it
	matched := false          // the packet belongs to a connection entry
	tos, tosOff := byte(0), 0 // a duplicated packet's TOS before its admission (ECN by depth), and its offset
	isRoCE := et == roce.EtherTypeIPv4 && s.parser.Parse(frame, 0, &s.pkt) == nil && s.pkt.IPVersion == 4 && s.pkt.L4-s.pkt.L3 == 20
	if isRoCE {
		p := &s.pkt
		s.stats.RoCE++
		s.c.rx[in].packets++
		s.c.rx[in].bytes += uint64(len(frame))
		qpn, psn, op := p.BTH.DestQP(), p.BTH.PSN(), p.Opcode
		iter := uint64(0)
		if ce, ok := s.t.conn.hit([4]uint64{uint64(in), uint64(qpn)}); ok && ce.action == s.a.setConn && connMatches(ce, op) {
			conn, matched = ce.params[0], true
			iter = s.updateIter(int(conn), ce.params[1], psn, op)
			ev := s.t.event.lookup([4]uint64{uint64(in), uint64(qpn), uint64(psn), uint64(iter)})
			switch ev.action {
			case s.a.dropEvent:
				event = roce.EventDrop
				forward = false
				s.c.drops[in].packets++
				s.c.drops[in].bytes += uint64(len(frame))
			case s.a.markECN:
				event = roce.EventECN
				frame[p.L3+1] |= 3
				fixIPv4(frame[p.L3 : p.L3+20])
			case s.a.corrupt:
				event = roce.EventCorrupt
				frame[p.L3+4] ^= 0xFF
				frame[p.L3+5] ^= 0xFF
				fixIPv4(frame[p.L3 : p.L3+20])
			case s.a.delayEvent:
				event = roce.EventDelay
				hold = &held{delay: int64(ev.params[0])}
			case s.a.reorderEvent:
				event = roce.EventReorder
				hold = &held{overtakers: int(ev.params[0]), delay: int64(ev.params[1])}
			case s.a.duplicateEvent:
				copies = int(ev.params[0])
			}
		}
		if s.pfc != nil && len(s.pfc.triggers) > 0 {
			s.pfcTrigger(in, qpn, uint32(psn), uint16(iter))
		}
		if !forward && event != roce.EventDrop {
			// A packet with no forwarding entry leaves nowhere: it is
			// not held or copied, and mirrored untagged (as lumina.p4).
			event, hold, copies = roce.EventNone, nil, 0
		}
		if hold != nil || copies > 0 || s.reorders[conn] != nil {
			arrived = s.loop.Now()
			if timed {
				arrived = rxNs
			}
		}
		if hold != nil {
			// The packet leaves (and is mirrored) later: see release.
			hold.in, hold.egress, hold.event, hold.conn, hold.arrived = in, egress, event, conn, arrived
			hold.frame = append([]byte(nil), frame...)
			s.hold(hold)
			return
		}
		if copies > 0 {
			tos, tosOff = frame[p.L3+1], p.L3+1 // before the original's admission marks it
		}
		depth, full := s.admit(in, egress, forward, frame)
		if full && event == roce.EventNone {
			event = roce.EventDrop // its queue has no room: see admit
		}
		s.mirror(in, frame, event, rxNs, timed, depth)
	}
	if !s.forward(in, egress, forward, frame, isRoCE) {
		return
	}
	if matched {
		s.overtaken(conn, arrived)
	}
	for range copies {
		// Each copy leaves after the original and is mirrored, tagged,
		// stamped with the original's arrival.
		s.stats.Copies++
		// A copy joins the queue as the packet arrived: the original's
		// mark by depth is its own (lumina.p4 recirculates the copies
		// from ingress, before egress marks).
		if frame[tosOff] != tos {
			frame[tosOff] = tos
			fixIPv4(frame[tosOff-1 : tosOff+19])
		}
		depth, _ := s.admit(in, egress, forward, frame)
		s.mirrorAt(in, frame, roce.EventDuplicate, arrived, depth)
		if s.forward(in, egress, forward, frame, isRoCE) {
			s.overtaken(conn, arrived)
		}
	}
}

// connMatches reports whether a conn_lookup hit applies to a packet with
// opcode op: data entries match everything but ACK/NAK and CNP packets,
// response entries (set_conn's responses flag) everything but CNPs.
func connMatches(ce *entry, op roce.Opcode) bool {
	if op.IsCNP() {
		return false
	}
	return len(ce.params) > 2 && ce.params[2] == 1 || !op.IsAck()
}

// forward sends a frame that came in on port in out of the egress port the
// forwarding table chose, counting it, and reports whether it left (with
// PFC on: was queued); a frame that is not forwarded is counted as
// dropped.
func (s *Switch) forward(in, egress uint32, forward bool, frame []byte, isRoCE bool) bool {
	if !forward {
		s.stats.Dropped++
		return false
	}
	if s.pfc != nil {
		return s.pfcEnqueue(in, egress, frame, isRoCE)
	}
	out := s.ports[egress]
	if out == nil {
		s.stats.UnknownPort++
		return false
	}
	if isRoCE {
		s.c.tx[egress].packets++
		s.c.tx[egress].bytes += uint64(len(frame))
	}
	s.stats.Forwarded++
	out.Send(frame)
	return true
}

// held is a packet a delay or reorder event holds.
type held struct {
	frame      []byte
	in, egress uint32
	event      roce.Event
	conn       uint64
	arrived    int64 // arrival time on the mirror clock (rx timestamp if timed)
	delay      int64 // delay: the hold; reorder: the longest hold (ns)
	overtakers int   // reorder: how many packets of conn must pass it
	timer      sim.Timer
	gone       bool

	q      *overtakes // reorder: the queue it waits in
	target uint64     // reorder: the q.departed that releases it
}

// overtakes are the reorder holds of one connection waiting for their
// overtakers. Rather than counting down every hold at each departure (a
// scan of all holds per departure, and quadratic for a burst of holds),
// it counts the connection's departures and files each hold under the
// count that releases it: the departures counted when it was held plus its
// overtakers. A departure then finds the holds it releases in one lookup,
// in the order they were held, as a count-down over the holds in that
// order would find them. A hold that left before (its delay passed) stays
// filed, marked gone, until its count comes or the connection has no hold
// left.
type overtakes struct {
	departed uint64             // departures of the connection counted so far
	waiting  map[uint64][]*held // holds by the departure count that releases them
	live     int                // holds filed and not gone
}

// add files a reorder hold (h.overtakers > 0).
func (q *overtakes) add(h *held) {
	h.q, h.target = q, q.departed+uint64(h.overtakers)
	q.waiting[h.target] = append(q.waiting[h.target], h)
	q.live++
}

// depart counts a departure and returns the holds it releases, in the
// order they were held; some may be gone.
func (q *overtakes) depart() []*held {
	q.departed++
	ready := q.waiting[q.departed]
	delete(q.waiting, q.departed)
	return ready
}

// hold keeps h until its delay passes or, for a reorder, until enough
// later packets of its connection have passed (overtaken).
func (s *Switch) hold(h *held) {
	s.stats.Held++
	if h.overtakers > 0 {
		q := s.reorders[h.conn]
		if q == nil {
			q = &overtakes{waiting: map[uint64][]*held{}}
			s.reorders[h.conn] = q
		}
		q.add(h)
	}
	h.timer = s.loop.AfterFunc(time.Duration(h.delay), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.release(h, h.arrived+h.delay)
	})
}

// overtaken counts a packet of connection conn that left the switch (an
// original, a duplicate's copy or a released held packet, as lumina.p4's
// conn_forwarded register counts) against the reorder holds waiting on
// conn, releasing those whose count is reached right after it, with its
// departure time (on the mirror clock) left.
func (s *Switch) overtaken(conn uint64, left int64) {
	q := s.reorders[conn]
	if q == nil {
		return
	}
	for _, h := range q.depart() {
		if !h.gone {
			h.timer.Stop()
			s.release(h, left)
		}
	}
}

// release sends a held packet on: it is mirrored, tagged with its event,
// when it leaves, stamped left (its departure on the mirror clock: arrival
// plus the hold, or its last overtaker's arrival), so that on a real-time
// testbed its stamp is on the clock of the arrival stamps and not late by
// the pipeline's lag. A release of a packet already gone does nothing.
func (s *Switch) release(h *held, left int64) {
	if h.gone {
		return
	}
	h.gone = true
	s.stats.Released++
	if q := h.q; q != nil {
		if q.live--; q.live == 0 && s.reorders[h.conn] == q {
			delete(s.reorders, h.conn)
		}
	}
	if s.sch == nil {
		return // the pipeline was replaced while the packet was held
	}
	depth, _ := s.admit(h.in, h.egress, true, h.frame)
	s.mirrorCopy(h.in, h.frame, h.event, left, false, true, h.arrived, depth)
	if s.forward(h.in, h.egress, true, h.frame, true) {
		s.overtaken(h.conn, left)
	}
}

// updateIter is the ITER register logic of lumina.p4 for connection c.
func (s *Switch) updateIter(c int, scope uint64, psn roce.PSN, op roce.Opcode) uint64 {
	if c >= len(s.r.expected) {
		return 0
	}
	exp := roce.PSN(s.r.expected[c] & roce.PSNMask)
	s.r.expected[c] = uint64(psn.Next())
	iter := s.r.iter[c]
	if scope == 0 { // message
		first := op.IsFirst() && (op.IsRequest() || op.IsReadResponse())
		switch {
		case first && psn == exp:
			iter = 1
		case psn != exp:
			iter = (iter + 1) & 0xFFFF
		}
	} else if psn.Sub(exp) < 0 { // connection: PSN not larger than the previous one
		iter = (iter + 1) & 0xFFFF
	}
	s.r.iter[c] = iter
	return iter
}

// mirror sends the copy of a RoCE frame to the dumper chosen by weighted
// round robin, rewritten as the egress control does. The copy's timestamp
// is the frame's arrival (rxNs if timed, else the Loop's time), raised to
// the previous copy's if that is later; it carries qdepth, the depth of the
// egress queue the frame joins (admit).
func (s *Switch) mirror(in uint32, frame []byte, event roce.Event, rxNs int64, timed bool, qdepth int64) {
	s.mirrorCopy(in, frame, event, rxNs, timed, false, 0, qdepth)
}

// mirrorCopy is mirror (departed false: t and timed as mirror's rxNs and
// timed) and mirrorAt (departed true: t is the departure). A copy of a held
// packet (event.Held) carries its hold, the stamp minus arrived.
func (s *Switch) mirrorCopy(in uint32, frame []byte, event roce.Event, t int64, timed, departed bool, arrived, qdepth int64) {
	sw := s.switchOf(in)
	sess, seq, ok := s.mirrorSlot(sw, len(frame))
	if !ok {
		return
	}
	dport := uint16(9741)
	if s.t.mirRw.def.action == s.a.rewrite {
		dport = uint16(s.t.mirRw.def.params[0])
	}
	cp := append(s.scratch[:0], frame...)
	if sess.truncate > 0 && len(cp) > sess.truncate {
		cp = cp[:sess.truncate]
	}
	var stamp int64
	if departed {
		stamp = s.raiseStamp(sw, t)
	} else {
		stamp = s.mirrorStamp(sw, t, timed)
	}
	m := roce.MirrorMeta{Seq: seq, Switch: sw, TimestampNs: uint64(stamp) & roce.MirrorTimeMask, Event: event, QDepth: qdepth}
	if event.Held() {
		m.HoldNs = stamp - arrived
	}
	roce.ApplyMirror(cp, m, dport, uint16(s.rng.Uint32()))
	for _, port := range sess.replicas {
		if p := s.ports[port]; p != nil {
			p.Send(cp)
			s.stats.Mirrored++
		}
	}
	s.scratch = cp[:0]
}

// mirrorAt mirrors a frame that leaves at time at on the mirror clock (a
// duplicate's copy): as mirror, with at for its stamp (raised to the
// previous copy's if that is later), carrying qdepth.
func (s *Switch) mirrorAt(in uint32, frame []byte, event roce.Event, at, qdepth int64) {
	s.mirrorCopy(in, frame, event, at, false, true, 0, qdepth)
}

// mirrorSlot advances logical switch sw's weighted round robin and, if
// its slot has a clone session, sw's mirror sequence number and the slot's
// mirrored counter (a copy of a frame of n bytes); ok is false when the
// copy disappears for want of a session.
func (s *Switch) mirrorSlot(sw uint8, n int) (sess *cloneSession, seq uint64, ok bool) {
	if s.halted {
		return nil, 0, false
	}
	size := uint64(1)
	if s.t.wrrCfg.def.action == s.a.setWRR {
		size = max(1, s.t.wrrCfg.def.params[0])
	}
	slot := s.r.wrrIdx[sw]
	if slot+1 >= size {
		s.r.wrrIdx[sw] = 0
	} else {
		s.r.wrrIdx[sw] = slot + 1
	}
	ms, hit := s.t.mirSel.hit([4]uint64{slot})
	if !hit || ms.action != s.a.setMirror {
		return nil, 0, false
	}
	sess = s.clones[uint32(ms.params[0])]
	if sess == nil {
		return nil, 0, false
	}
	s.r.seqLo[sw] = (s.r.seqLo[sw] + 1) & 0xFFFFFFFF
	if s.r.seqLo[sw] == 0 {
		s.r.seqHi[sw] = (s.r.seqHi[sw] + 1) & 0xFF // 40 bits: roce.MirrorSeqMask
	}
	seq = s.r.seqHi[sw]<<32 | s.r.seqLo[sw]
	s.c.mirrored[slot].packets++
	s.c.mirrored[slot].bytes += uint64(n)
	return sess, seq, true
}

// mirrorStamp returns the timestamp of logical switch sw's next mirror
// copy: the frame's arrival (rxNs if timed, else the Loop's time), raised
// to sw's previous copy's if that is later.
func (s *Switch) mirrorStamp(sw uint8, rxNs int64, timed bool) int64 {
	now := s.loop.Now()
	arrival := now
	if timed {
		arrival = rxNs
	}
	stamp := s.raiseStamp(sw, arrival)
	if timed {
		s.timing.record(rxNs, now, stamp)
	}
	return stamp
}

// mirrorStampSent returns the timestamp of logical switch sw's mirror
// copy of a frame the switch has written, which left within [from, at]:
// at, raised to sw's previous copy's if that is later. The stamp is at or
// after the departure, by at most stamp − from (Timing.SentMax).
func (s *Switch) mirrorStampSent(sw uint8, from, at int64) int64 {
	stamp := s.raiseStamp(sw, at)
	s.timing.sentMax = max(s.timing.sentMax, uint64(max(0, stamp-from)))
	return stamp
}

// raiseStamp returns t raised to logical switch sw's previous mirror
// copy's timestamp if that is later, and makes it sw's previous one:
// stamps never decrease in a switch's mirror-sequence order.
func (s *Switch) raiseStamp(sw uint8, t int64) int64 {
	s.lastStamp[sw] = max(t, s.lastStamp[sw])
	return s.lastStamp[sw]
}

func (s *Switch) arpReply(in uint32, frame []byte, l3 int, mac uint64) {
	var m [6]byte
	binary.BigEndian.PutUint16(m[0:], uint16(mac>>32))
	binary.BigEndian.PutUint32(m[2:], uint32(mac))
	a := frame[l3:]
	copy(frame[0:6], frame[6:12])
	copy(frame[6:12], m[:])
	binary.BigEndian.PutUint16(a[6:], 2)
	var senderIP, targetIP [4]byte
	copy(senderIP[:], a[14:18])
	copy(targetIP[:], a[24:28])
	copy(a[18:24], a[8:14]) // target MAC = old sender MAC
	copy(a[24:28], senderIP[:])
	copy(a[8:14], m[:])
	copy(a[14:18], targetIP[:])
	if p := s.ports[in]; p != nil {
		p.Send(frame)
	}
}

func fixIPv4(h []byte) {
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], roce.IPv4Checksum(h))
}
