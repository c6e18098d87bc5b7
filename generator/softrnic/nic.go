package softrnic

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// Config configures a NIC. The zero value of each field is documented.
type Config struct {
	// Name labels the NIC in errors and counters. Default "rnic".
	Name string
	// MAC is the port's MAC address. Default 02:00:00:00:00:01.
	MAC [6]byte
	// IPs are the NIC's addresses (its RoCEv2 GIDs). QPs pick one with
	// ConnectAttr.LocalIP (multi-GID). At least one is required.
	IPs []netip.Addr
	// Personality is the behaviour model. Default (zero Name): "spec".
	Personality Personality
	// Seed seeds QPN, PSN, IP ID and jitter draws. Default 0 (a valid seed).
	Seed uint64

	// RoCE parameters (Lumina Listing 1).
	// DisableRP turns off the DCQCN reaction point (dcqcn-rp-enable: false):
	// CNPs are counted in rp_cnp_ignored and do not change the rate.
	DisableRP bool
	// DisableNP turns off the notification point (dcqcn-np-enable: false):
	// no CNPs are sent.
	DisableNP bool
	// MinTimeBetweenCNPs paces CNPs within the pacing scope. Default 0: a CNP
	// for every CE-marked packet.
	MinTimeBetweenCNPs time.Duration
	// CNPScope overrides the personality's pacing scope. Default 0: the
	// personality's.
	CNPScope CNPScope
	// AdaptiveRetrans enables adaptive retransmission (adaptive-retrans).
	AdaptiveRetrans bool
	// SlowRestart enables slow restart (slow-restart); with a personality
	// that has CNPOnNAK, NAKs are accompanied by CNPs.
	SlowRestart bool

	// PFC turns on Priority-based Flow Control: pauses honoured per
	// priority, a receive buffer and pipeline that pause the peer, the
	// storm watchdog and the PFC counters (pfc.go). Default nil: no PFC,
	// frames are processed as they arrive and PFC frames are discarded.
	PFC *PFCConfig

	// ODP turns on On-Demand Paging: every MR is an ODP MR whose pages
	// fault on first access, with RNR NAKs and dropped READ responses
	// (odp.go), and the ODP counters. Default nil: pinned memory.
	ODP *ODPConfig
	// ODPInTest is set on every NIC of a test in which any host uses ODP:
	// the responder answers duplicate READs after the personality's
	// ODPDupReadDelay and drops a new request that arrives meanwhile
	// (odp.go). Default false: duplicate READs are answered at once.
	ODPInTest bool
}

// NIC is a software RoCEv2 RC NIC attached to one Port. All its methods and
// callbacks must run on its Loop (the sim testbed's event loop, or a
// RealLoop): a NIC is not safe for concurrent use.
type NIC struct {
	cfg  Config
	pers Personality
	loop sim.Loop
	port sim.Port
	path sim.PathModel // port's link model, nil on a real interface (calibrate.go)
	rng  *rand.Rand
	trng *rand.Rand // first-timeout spread draws, a stream of their own
	srng *rand.Rand // QP start jitter draws, a stream of their own

	parser  roce.Parser
	qps     map[uint32]*QP
	qpOrder []*QP // creation order, for round-robin transmission
	mrs     map[uint32]*MR
	nextMR  uint64
	nextKey uint32
	ipID    uint16

	onComp func(Completion)
	cq     []Completion

	ctr Counters

	// Transmission: control frames (ACK/NAK/CNP) go first; data frames pass
	// through a pipeline of up to TxPipelinePackets committed frames.
	ctrlQ       [][]byte
	pipeline    []txFrame
	free        [][]byte
	rr          int
	wireFree    int64
	txScheduled bool
	txTimer     sim.Timer
	nsPerByte   float64

	cnpLast map[cnpKey]int64
	spec    roce.FrameSpec // scratch for building data frames
	tickFn  func()         // n.txTick, bound once (a method value allocates)

	// fires is a ring of the last timerLogSize retransmission timeouts;
	// nFires counts all of them.
	fires  []TimerFire
	nFires int

	pfc       *pfcState // nil: PFC off
	odp       *odpState // nil: ODP off (pinned memory)
	rxStalled bool      // StallRx: the receive pipeline is stopped

	// rxLateMax is the largest delay between a frame's arrival (its
	// port's receive timestamp) and the NIC receiving it on the loop: 0
	// on a virtual clock. Written on the loop, read from any goroutine
	// (RxLateness).
	rxLateMax atomic.Int64
}

// TimerFire is one expiry of a QP's retransmission timer, on the NIC's own
// clock: the timer counted Interval from the QP's last transmission (or
// progress) at LastSendNs and fired at FiredNs.
type TimerFire struct {
	QPN        uint32
	LastSendNs int64
	FiredNs    int64
	IntervalNs int64 // the timeout the QP was waiting for (T_tr × factor, or the adaptive stage's)
}

// timerLogSize bounds the timer log.
const timerLogSize = 1024

// TimerFires returns the last (up to 1024) retransmission timeouts, oldest
// first. Call it on the NIC's Loop.
func (n *NIC) TimerFires() []TimerFire {
	if n.nFires <= len(n.fires) {
		return append([]TimerFire(nil), n.fires...)
	}
	i := n.nFires % timerLogSize
	return append(append([]TimerFire(nil), n.fires[i:]...), n.fires[:i]...)
}

func (n *NIC) logFire(f TimerFire) {
	if len(n.fires) < timerLogSize {
		n.fires = append(n.fires, f)
	} else {
		n.fires[n.nFires%timerLogSize] = f
	}
	n.nFires++
}

// txFrame is a committed data frame and the QP that sent it.
type txFrame struct {
	b  []byte
	qp *QP
	// dupEnd: the last response packet of a duplicate READ served on the
	// ODP slow path (odp.go); the QP's window ends when it has left.
	dupEnd bool
}

type cnpKey struct {
	qpn      uint32
	src, dst netip.Addr
}

// New creates a NIC on port, driven by loop.
func New(loop sim.Loop, port sim.Port, cfg Config) (*NIC, error) {
	if len(cfg.IPs) == 0 {
		return nil, fmt.Errorf("softrnic: NIC %q has no IP address", cfg.Name)
	}
	if cfg.Name == "" {
		cfg.Name = "rnic"
	}
	if cfg.MAC == ([6]byte{}) {
		cfg.MAC = [6]byte{2, 0, 0, 0, 0, 1}
	}
	pers := cfg.Personality
	if pers.Name == "" {
		pers, _ = LoadPersonality("spec")
	}
	if err := pers.Validate(); err != nil {
		return nil, fmt.Errorf("softrnic: personality %q: %w", pers.Name, err)
	}
	if cfg.CNPScope == 0 {
		cfg.CNPScope = pers.CNPScope
	}
	n := &NIC{
		cfg: cfg, pers: pers, loop: loop, port: port,
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0x4c554d494e41)),
		trng:      rand.New(rand.NewPCG(cfg.Seed, 0x54494d45520a)),
		srng:      rand.New(rand.NewPCG(cfg.Seed, 0x5354415254)),
		parser:    roce.Parser{VerifyICRC: true},
		qps:       map[uint32]*QP{},
		mrs:       map[uint32]*MR{},
		nextMR:    0x7f00_0000_0000 + uint64(cfg.Seed%0x1000)<<24,
		cnpLast:   map[cnpKey]int64{},
		nsPerByte: 8 / pers.LineRateGbps,
	}
	n.tickFn = n.txTick
	n.path, _ = port.(sim.PathModel)
	if cfg.PFC != nil {
		n.pfc = newPFCState(n, *cfg.PFC)
	}
	if cfg.ODP != nil {
		n.odp = newODPState(n, *cfg.ODP)
	}
	n.ipID = uint16(n.rng.Uint32()) | 1
	n.nextKey = n.rng.Uint32()&0xFFFF00 | 0x10
	if tp, ok := port.(sim.TimedPort); ok {
		tp.SetTimedReceiver(n.receiveAt) // PFC pauses count from their arrival
	} else {
		port.SetReceiver(n.receive)
	}
	return n, nil
}

// Name returns the NIC's name.
func (n *NIC) Name() string { return n.cfg.Name }

// MAC returns the port's MAC address.
func (n *NIC) MAC() [6]byte { return n.cfg.MAC }

// IPs returns the NIC's addresses.
func (n *NIC) IPs() []netip.Addr { return n.cfg.IPs }

// Personality returns the behaviour model in use.
func (n *NIC) Personality() Personality { return n.pers }

// Now returns the NIC's clock.
func (n *NIC) Now() int64 { return n.loop.Now() }

// SetCompletionHandler makes completions call fn (on the Loop) instead of
// queueing for PollCQ.
func (n *NIC) SetCompletionHandler(fn func(Completion)) { n.onComp = fn }

// PollCQ returns and removes up to max queued completions.
func (n *NIC) PollCQ(max int) []Completion {
	k := min(max, len(n.cq))
	out := append([]Completion(nil), n.cq[:k]...)
	n.cq = n.cq[k:]
	return out
}

func (n *NIC) complete(c Completion) {
	c.TimeNs = n.loop.Now()
	if n.onComp != nil {
		n.onComp(c)
		return
	}
	n.cq = append(n.cq, c)
}

// RegMR registers buf for local and remote access and returns its keys and
// remote address.
func (n *NIC) RegMR(buf []byte) *MR {
	mr := &MR{Buf: buf, Addr: n.nextMR, LKey: n.nextKey, RKey: n.nextKey + 1}
	n.nextKey += 0x100
	n.nextMR += (uint64(len(buf)) + 0xFFFF) &^ 0xFFF
	n.mrs[mr.RKey] = mr
	if n.odp != nil {
		n.odp.register(mr, n.cfg.ODP.Prefetch)
	}
	return mr
}

// lookupMR returns the bytes [addr, addr+length) of the MR with rkey, the
// MR and the offset of addr in it, or nil if the range is not inside it.
func (n *NIC) lookupMR(rkey uint32, addr uint64, length int) ([]byte, *MR, int) {
	mr := n.mrs[rkey]
	if mr == nil || addr < mr.Addr || length < 0 {
		return nil, nil, 0
	}
	off := addr - mr.Addr
	if off+uint64(length) > uint64(len(mr.Buf)) {
		return nil, nil, 0
	}
	return mr.Buf[off : off+uint64(length)], mr, int(off)
}

// CreateQP creates an RC QP with a random 24-bit QPN and initial PSN.
func (n *NIC) CreateQP() *QP {
	var qpn uint32
	for qpn == 0 || n.qps[qpn] != nil {
		qpn = n.rng.Uint32() & roce.PSNMask
	}
	qp := &QP{nic: n, qpn: qpn, sqPSN: roce.PSN(n.rng.Uint32() & roce.PSNMask)}
	n.qps[qpn] = qp
	n.qpOrder = append(n.qpOrder, qp)
	return qp
}

// QP returns the QP with number qpn, or nil.
func (n *NIC) QP(qpn uint32) *QP { return n.qps[qpn] }

func (n *NIC) hasIP(a netip.Addr) bool {
	for _, ip := range n.cfg.IPs {
		if ip == a {
			return true
		}
	}
	return false
}

// jitter returns a seeded uniform duration in [0, d).
func (n *NIC) jitter(d Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(n.rng.Int64N(int64(d)))
}

// ---- transmission ----

func (n *NIC) buffer() []byte {
	if k := len(n.free); k > 0 {
		b := n.free[k-1]
		n.free = n.free[:k-1]
		return b[:0]
	}
	return make([]byte, 0, 9216+64)
}

// build appends the frame of spec to a pooled buffer.
func (n *NIC) build(f *roce.FrameSpec) []byte {
	f.IPID = n.ipID
	n.ipID++
	b, err := f.Append(n.buffer())
	if err != nil {
		panic(fmt.Sprintf("softrnic: building %v: %v", f.Opcode, err)) // programmer error: specs come from QP state
	}
	return b
}

// sendControl queues a control frame (ACK, NAK, CNP) ahead of data.
func (n *NIC) sendControl(f *roce.FrameSpec) {
	n.ctrlQ = append(n.ctrlQ, n.build(f))
	n.kick()
}

// kick makes sure a transmission opportunity is scheduled.
func (n *NIC) kick() {
	if n.txScheduled {
		return
	}
	n.txScheduled = true
	d := time.Duration(max(0, n.wireFree-n.loop.Now()))
	n.txTimer = n.loop.AfterFunc(d, n.tickFn)
}

// txTick runs when the wire is free: it sends one frame (control first),
// then refills the data pipeline.
func (n *NIC) txTick() {
	n.txScheduled = false
	now := n.loop.Now()
	if now < n.wireFree {
		n.kick()
		return
	}
	if n.pfc != nil {
		n.pfcTxTick(now)
		return
	}
	var frame []byte
	var dataQP *QP
	switch {
	case len(n.ctrlQ) > 0:
		frame = n.ctrlQ[0]
		n.ctrlQ = shift(n.ctrlQ)
	default:
		if len(n.pipeline) == 0 {
			n.fillPipeline(1)
		}
		if len(n.pipeline) > 0 {
			tf := n.pipeline[0]
			n.pipeline = shift(n.pipeline)
			frame, dataQP = tf.b, tf.qp
			if tf.dupEnd {
				defer tf.qp.dupServed()
			}
		}
	}
	if frame != nil {
		n.port.Send(frame)
		if dataQP != nil {
			// The retransmission timer counts from when the frame has left:
			// on a real-time port Send returns after the kernel took it, so
			// the timer never starts before the wire saw the frame (on the
			// virtual clock, no time passes).
			dataQP.onWire(n.loop.Now())
		}
		n.ctr.TxPackets++
		n.ctr.TxBytes += uint64(len(frame))
		n.wireFree = now + int64(float64(len(frame)+20)*n.nsPerByte+0.5) // + preamble, IFG
		n.free = append(n.free, frame)
	}
	n.fillPipeline(n.pers.TxPipelinePackets)
	if len(n.ctrlQ) > 0 || len(n.pipeline) > 0 {
		n.kick()
		return
	}
	// Nothing to send now; a rate-limited QP may become ready later.
	if t, ok := n.nextReady(); ok {
		n.txScheduled = true
		n.txTimer = n.loop.AfterFunc(time.Duration(max(t, n.wireFree)-now), n.tickFn)
	}
}

// fillPipeline commits data frames until the pipeline holds depth frames.
func (n *NIC) fillPipeline(depth int) {
	now := n.loop.Now()
	for len(n.pipeline) < depth {
		qp := n.pickQP(now)
		if qp == nil {
			return
		}
		if !qp.nextDataFrame(&n.spec) {
			return
		}
		b := n.build(&n.spec)
		n.pipeline = append(n.pipeline, txFrame{b: b, qp: qp, dupEnd: qp.takeDupEnd()})
		qp.rp.sent(len(b), now)
	}
}

// pickQP returns the next QP (round robin) that has a data frame ready now.
func (n *NIC) pickQP(now int64) *QP {
	for i := range n.qpOrder {
		qp := n.qpOrder[(n.rr+i)%len(n.qpOrder)]
		if qp.hasDataFrame() && qp.readyAt() <= now && (n.pfc == nil || !n.pfc.paused(n.pfc.prio(qp.attr.TrafficClass), now)) {
			n.rr = (n.rr + i + 1) % len(n.qpOrder)
			return qp
		}
	}
	return nil
}

// nextReady returns the earliest time a rate-limited QP with data may send.
func (n *NIC) nextReady() (int64, bool) {
	var t int64
	ok := false
	for _, qp := range n.qpOrder {
		if qp.hasDataFrame() {
			if r := qp.readyAt(); !ok || r < t {
				t, ok = r, true
			}
		}
	}
	return t, ok
}

// ---- reception ----

func (n *NIC) receive(frame []byte) { n.receiveAt(frame, n.loop.Now()) }

// receiveAt handles a frame that arrived at rxNs on the loop's clock.
func (n *NIC) receiveAt(frame []byte, rxNs int64) {
	if late := n.loop.Now() - rxNs; late > n.rxLateMax.Load() {
		n.rxLateMax.Store(late)
	}
	if n.pfc != nil {
		n.pfcReceive(frame, rxNs)
		return
	}
	if n.rxStalled {
		n.ctr.RxDiscards++
		return
	}
	n.process(frame)
}

// process handles a received frame (after the receive pipeline, with PFC).
func (n *NIC) process(frame []byte) {
	var p roce.Packet
	if err := n.parser.Parse(frame, 0, &p); err != nil {
		n.ctr.RxDiscards++
		return
	}
	if !n.hasIP(p.DstIP) {
		n.ctr.RxDiscards++
		return
	}
	n.ctr.RxPackets++
	n.ctr.RxBytes += uint64(len(frame))
	if p.ICRC != roce.ICRCOK {
		n.ctr.RxICRCEncapsulated++ // silent drop, no NAK
		return
	}
	if p.BTH.TVer() != 0 {
		n.ctr.RxDiscards++
		return
	}
	if p.Opcode == roce.CNP {
		n.receiveCNP(&p)
		return
	}
	qp := n.qps[p.BTH.DestQP()]
	if qp == nil || qp.state != QPRTS && qp.state != QPError || p.SrcIP != qp.attr.RemoteIP || p.DstIP != qp.localIP {
		n.ctr.RxDiscards++
		return
	}
	if qp.state == QPError {
		return
	}
	if p.Opcode.Transport() != roce.TransportRC {
		n.ctr.RxDiscards++
		return
	}
	if p.ECN() == 3 && p.Opcode.IsData() {
		n.ctr.NPECNMarkedRoCEPackets++
		n.maybeCNP(qp)
	}
	switch {
	case p.Opcode.IsAck() || p.Opcode.IsReadResponse():
		qp.requesterReceive(&p)
	case p.Opcode.IsRequest():
		qp.responderReceive(&p)
	default:
		n.ctr.RxDiscards++
	}
}

// RxLateness returns the largest delay so far between a frame's arrival
// (its port's receive timestamp) and the NIC handling it: how much later
// than the frame's arrival a software NIC on a real clock may have made a
// decision on it, such as a CNP pacing decision (0 on a virtual clock,
// where a frame is handled the instant it arrives). With PFC on, it is
// the delay to the frame entering the receive buffer; the buffer's
// modelled pipeline comes on top, as on a virtual clock. Safe from any
// goroutine.
func (n *NIC) RxLateness() time.Duration { return time.Duration(n.rxLateMax.Load()) }

// maybeCNP sends a CNP for qp unless one was sent within the pacing
// interval in qp's pacing domain (strictly greater than
// min_time_between_cnps since the last one, as Lumina's checker expects).
func (n *NIC) maybeCNP(qp *QP) {
	if n.cfg.DisableNP {
		return
	}
	var k cnpKey
	switch n.cfg.CNPScope {
	case CNPPerQP:
		k.qpn = qp.qpn
	case CNPPerPort:
	case CNPPerDestIP:
		k.dst = qp.attr.RemoteIP
	case CNPPerIPPair:
		k.src, k.dst = qp.localIP, qp.attr.RemoteIP
	}
	now := n.loop.Now()
	if last, ok := n.cnpLast[k]; ok && now-last <= int64(n.cfg.MinTimeBetweenCNPs) {
		return
	}
	n.cnpLast[k] = now
	n.ctr.NPCNPSent++
	f := roce.FrameSpec{
		SrcMAC: n.cfg.MAC, DstMAC: qp.attr.RemoteMAC, SrcIP: qp.localIP, DstIP: qp.attr.RemoteIP,
		TOS: 48<<2 | 2, Opcode: roce.CNP, BECN: true, DestQP: qp.attr.RemoteQPN,
	}
	n.sendControl(&f)
}

func (n *NIC) receiveCNP(p *roce.Packet) {
	qp := n.qps[p.BTH.DestQP()]
	if qp == nil {
		n.ctr.RxDiscards++
		return
	}
	if n.cfg.DisableRP {
		n.ctr.RPCNPIgnored++
		return
	}
	n.ctr.RPCNPHandled++
	qp.rp.onCNP(n.loop.Now())
}

// shift drops the first element, moving the rest down so the backing array
// is reused instead of creeping forward.
func shift[T any](s []T) []T {
	copy(s, s[1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1]
}
