package retransmission

import (
	"strconv"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// Loss kinds and go-back triggers.
const (
	KindFast    = "fast"
	KindTimeout = "timeout"
	KindRNR     = "rnr"
	KindNone    = "none" // never retransmitted
)

// Loss is one lost packet and how it was recovered. Latency fields are nil
// where they do not apply.
type Loss struct {
	Conn   int    `json:"conn"`
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	Iter   int    `json:"iter"`
	Index  int    `json:"index"`
	TimeNs int64  `json:"time_ns"`
	// Event is "drop", "corrupt" or "gap" (not in the trace).
	Event string `json:"event"`
	Kind  string `json:"kind"`
	// NAKPSN is the PSN of the NAK (READ: re-issued request) that
	// triggered the retransmission, when there was one.
	NAKPSN                    *uint32 `json:"nak_psn,omitempty"`
	NACKGenerationNs          *int64  `json:"nack_generation_ns"`
	NACKReactionNs            *int64  `json:"nack_reaction_ns"`
	RetransmissionNs          *int64  `json:"retransmission_ns"`
	NextDeliveredNs           *int64  `json:"next_delivered_ns,omitempty"`
	NACKGenerationCorrectedNs *int64  `json:"nack_generation_corrected_ns,omitempty"`
	NACKReactionCorrectedNs   *int64  `json:"nack_reaction_corrected_ns,omitempty"`
	// ReissueResponseNs (READ, timeout) is the responder's answer time:
	// t(retransmitted response) − t(the READ request re-issued after the
	// timeout), the public tool's READ re-request latency.
	ReissueResponseNs *int64 `json:"reissue_response_ns,omitempty"`
	RetxIndex         int    `json:"retx_index"`
}

// GoBack is one go-back of a requester (WRITE/SEND: the first packet of a
// retransmission sequence; READ: a re-issued request).
type GoBack struct {
	Conn   int
	Kind   string // fast, rnr, timeout
	PSN    roce.PSN
	Una    roce.PSN // oldest unacknowledged PSN at the time
	Index  int
	TimeNs int64
	// IdleNs is the time since the requester's last transmission or the
	// last progress (timeouts: the measured timeout interval).
	IdleNs int64
	// Epoch counts the connection's progress events before this go-back:
	// go-backs with the same Epoch belong to one episode without progress.
	Epoch int
	// Spurious is the cause when nothing the go-back re-sends was lost
	// (CauseDelivered, CauseLate); "" otherwise.
	Spurious string
	// Implied (READ, Kind fast) says the re-issue followed a gap in the
	// responses, not a NAK in the trace (implied_nak_seq_err).
	Implied bool
	// Answered says an ACK or READ response at or past PSN reached the
	// requester after the go-back and before the connection's next one
	// (even when it was no progress: a READ the requester re-issued for
	// responses it had dropped, package timeout).
	Answered bool
}

// Causes of spurious retransmissions.
const (
	// CauseDelivered: every packet the go-back re-sends had been
	// delivered (a dropped, held or slow ACK; a timer that fired early).
	CauseDelivered = "delivered"
	// CauseLate: the packet re-sent was held by the switch (delay,
	// reorder) and delivered after, or while, it was re-sent.
	CauseLate = "late"
)

// Spurious is one spurious retransmission: a go-back whose first packet
// was not lost.
type Spurious struct {
	Conn   int    `json:"conn"`
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	// Kind is the go-back's trigger: fast, timeout or rnr.
	Kind   string `json:"kind"`
	Index  int    `json:"index"`
	TimeNs int64  `json:"time_ns"`
	// Cause is CauseDelivered or CauseLate.
	Cause string `json:"cause"`
	// OriginalIndex is, for CauseLate, the trace index of the held
	// original; -1 otherwise.
	OriginalIndex int `json:"original_index"`
}

// ConnStats count a connection's recoveries.
type ConnStats struct {
	Conn int `json:"conn"`
	// Fast counts NAK-triggered go-backs (WRITE/SEND; packet_seq_err),
	// Implied READs re-issued after a gap (implied_nak_seq_err), Timeouts
	// timer go-backs (local_ack_timeout_err), RNR go-backs after RNR NAKs.
	Fast     int `json:"fast"`
	Implied  int `json:"implied"`
	Timeouts int `json:"timeouts"`
	RNR      int `json:"rnr"`
	Losses   int `json:"losses"`
	// Spurious counts go-backs that re-sent nothing lost (see Spurious).
	Spurious int `json:"spurious,omitempty"`
	// Epochs is the number of progress events; GaveUp: the connection
	// ended after at least retry_cnt go-backs without progress.
	Epochs int  `json:"-"`
	GaveUp bool `json:"gave_up,omitempty"`
	Fatal  bool `json:"fatal,omitempty"`
}

// Result is the outcome of the analysis.
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	Losses  []Loss        `json:"losses"`
	Conns   []ConnStats   `json:"conns,omitempty"`
	// HalfRTTNs is the correction applied to *_corrected_ns.
	HalfRTTNs int64 `json:"half_rtt_ns,omitempty"`
	// Spurious lists the spurious retransmissions, in the order found.
	Spurious []Spurious `json:"spurious,omitempty"`
	GoBacks  []GoBack   `json:"-"`
}

// Options configure a Tracker.
type Options struct {
	// RetryCnt: a connection ending after this many go-backs without
	// progress gave up. Default (0) 7.
	RetryCnt int
	// RTTNs is the testbed's switch↔NIC round trip; half of it is
	// subtracted in the *_corrected_ns fields. Default 0: no correction.
	RTTNs int64
	// MinTimeoutNs is the earliest a requester's transport timer can
	// expire (T_tr less the timeout check's tolerance); 0 when the QP
	// timeout is unknown. A READ re-sent sooner than that after the
	// previous request of a go-back under way continues that go-back
	// (model.ContinuesGoBack).
	MinTimeoutNs int64
	// AckLatenessNs is how much later than its switch timestamp an ACK
	// may have reached the requester's RNIC (model.Params.CNPLatenessNs:
	// the software switch's pipeline lateness plus the software RNIC's
	// receive lateness, measured on netns; 0 on sim and for hardware). A
	// WRITE/SEND timeout go-back that re-sends a PSN an ACK stamped at most
	// this much earlier acknowledged shows the requester had not taken that
	// ACK yet: its timer ran from before it (unseenProgress).
	AckLatenessNs int64
}

const maxRounds = 32

// progressRec is the requester's state before one progress event of a
// WRITE/SEND connection (Options.AckLatenessNs > 0): what it knew if the
// ACK of that progress had not reached it yet.
type progressRec struct {
	t       int64    // the ACK's switch timestamp
	una     roce.PSN // before it
	lastAct int64    // before it
	epoch   int      // before it
}

const recentProgress = 8

type round struct{ start, reach roce.PSN }

// sentNew is a recent first transmission of a PSN, remembered in case the
// switch held an earlier one (then it was a retransmission).
type sentNew struct {
	idx          int
	t, idle      int64
	epoch        int
	psn          roce.PSN
	hasIdle, nak bool
}

const recentNew = 16

type openLoss struct {
	psn     roce.PSN
	iter    int
	t       int64
	idx     int
	event   string
	next    int64
	hasNext bool
	hasNak  bool
	nakRNR  bool
	nakPSN  roce.PSN
	nakT    int64
	// reissueT is when a READ request re-issued after a timeout asked
	// for this PSN again (reissued set).
	reissued bool
	reissueT int64
}

type connTrk struct {
	id   int
	verb model.Verb
	ipsn roce.PSN
	// write: verb is WRITE or SEND (the data flow to the responder);
	// read: verb is READ.
	write, read bool

	// Data stream as sent.
	sent        bool
	cur, sndNxt roce.PSN
	rounds      [maxRounds]round
	nr, rhead   int // rounds in use; index of the oldest
	curRound    int // index of the round being extended, -1 none

	// Receiver's view of the data stream.
	ePSN roce.PSN
	gap  bool // READ requester: a later response arrived since the last in-order one

	// Requester (timer owner).
	lastAct    int64
	actValid   bool
	una        roce.PSN
	reqNxt     roce.PSN // READ: next new request PSN (sent)
	rspReqNxt  roce.PSN // READ: next new request PSN (delivered)
	nakPending bool
	nakRNR     bool
	nakPSN     roce.PSN
	handled    bool
	handledPSN roce.PSN
	// lastGB is the index in Result.GoBacks of the connection's last
	// go-back while not yet Answered; -1 none.
	lastGB     int
	noProgress int
	fatal      bool

	open  []openLoss
	stats ConnStats

	recent  [recentNew]sentNew
	nrecent int
	// lateFix: a held READ response repaired the gap at lateFixPSN; the
	// requester's re-issue for it is still an implied NAK.
	lateFix    bool
	lateFixPSN roce.PSN
	// READ requester: rnrHold, after an RNR NAK for nakPSN until the
	// re-issue: the requester discards the responses from nakPSN on
	// (the responder may execute the READ once its page fault resolves,
	// Fukuoka et al., Analyzing Performance Pitfalls of On-Demand Paging
	// of InfiniBand, Fig. 2). reissueNxt: a go-back re-sends the
	// requests after the first as they follow (reissuing), one go-back:
	// see model.ContinuesGoBack. reissueEpoch is the progress count when it began,
	// reissueLastT when its last request was sent.
	rnrHold      bool
	reissuing    bool
	reissueNxt   roce.PSN
	reissueEpoch int
	reissueLastT int64

	// lastTx is when the requester last sent a data packet (WRITE/SEND);
	// progs the recent progress events (a ring, nprogs in it), kept only
	// with Options.AckLatenessNs > 0.
	lastTx int64
	progs  [recentProgress]progressRec
	nprogs int
}

// Tracker follows every connection of a Table. It does not allocate per
// packet in steady state: losses and go-backs are appended as they occur.
type Tracker struct {
	opt   Options
	table *model.Table
	conns []connTrk
	res   Result
}

// New returns a Tracker for the connections of t.
func New(t *model.Table, opt Options) *Tracker {
	if opt.RetryCnt <= 0 {
		opt.RetryCnt = 7
	}
	tr := &Tracker{opt: opt, table: t, conns: make([]connTrk, len(t.Conns))}
	for i, c := range t.Conns {
		ct := &tr.conns[i]
		ct.id, ct.verb, ct.ipsn = c.ID, c.Verb, c.IPSN
		ct.write = c.Verb == model.VerbWrite || c.Verb == model.VerbSend
		ct.read = c.Verb == model.VerbRead
		ct.cur, ct.sndNxt, ct.ePSN, ct.una = c.IPSN.Add(-1), c.IPSN, c.IPSN, c.IPSN
		ct.reqNxt, ct.rspReqNxt = c.IPSN, c.IPSN
		ct.curRound = -1
		ct.lastGB = -1
		ct.open = make([]openLoss, 0, 8)
		ct.stats.Conn = c.ID
	}
	return tr
}

// Observe feeds one packet and sets p.Retx on data packets that re-send a
// PSN.
func (tr *Tracker) Observe(p *model.Pkt) {
	if p.Conn < 0 {
		return
	}
	ct := &tr.conns[p.Conn]
	if ct.fatal {
		return
	}
	if p.Event == roce.EventNone && p.Delivered && ct.sent && p.PSN == ct.sndNxt && p.PSN == ct.ePSN && len(ct.open) == 0 {
		switch {
		case p.Kind == model.KindData && p.Dir == model.ToResponder && ct.write:
			tr.nextData(ct, p)
			return
		case p.Kind == model.KindReadResp && p.Dir == model.ToRequester && ct.read && ct.lastGB < 0 && !ct.rnrHold:
			tr.nextResponse(ct, p)
			return
		}
	}
	if ct.lastGB >= 0 && p.Dir == model.ToRequester && p.Delivered && !p.Copy() && (p.Kind == model.KindAck || p.Kind == model.KindReadResp) {
		if g := &tr.res.GoBacks[ct.lastGB]; p.PSN.Sub(g.PSN) >= 0 && p.Index > g.Index {
			g.Answered, ct.lastGB = true, -1
		}
	}
	if p.Kind == model.KindNakFatal {
		ct.fatal = true
		return
	}
	switch ct.verb {
	case model.VerbWrite, model.VerbSend:
		switch {
		case p.Dir == model.ToResponder && p.Kind == model.KindData:
			switch {
			case p.Copy(): // not sent by the requester
			case p.Late() && ct.sent && p.PSN.LessThan(ct.sndNxt):
				tr.late(ct, p)
			default:
				tr.remember(ct, p)
				tr.writeGoBack(ct, p)
				tr.data(ct, p)
				ct.lastAct, ct.actValid, ct.lastTx = p.TimeNs, true, p.TimeNs
			}
		case p.Dir == model.ToRequester && p.Delivered && (p.Kind == model.KindAck || p.Kind == model.KindNak || p.Kind == model.KindRNR):
			tr.writeFeedback(ct, p)
		}
	case model.VerbRead:
		switch {
		case p.Dir == model.ToResponder && p.Kind == model.KindReadReq:
			if p.Copy() {
				if p.Delivered && p.PSN.Sub(ct.rspReqNxt) >= 0 {
					ct.rspReqNxt = p.PSN.Add(p.NPkts)
				}
				break
			}
			tr.readRequest(ct, p)
			ct.lastAct, ct.actValid = p.TimeNs, true
		case p.Dir == model.ToRequester && p.Kind == model.KindReadResp:
			switch {
			case p.Copy():
			case p.Late() && ct.sent && p.PSN.LessThan(ct.sndNxt):
				tr.late(ct, p)
			default:
				tr.data(ct, p)
			}
		case p.Dir == model.ToRequester && p.Delivered && !p.Copy() && (p.Kind == model.KindNak || p.Kind == model.KindRNR):
			tr.readFeedback(ct, p)
		}
	}
}

// nextData is the common packet of a WRITE/SEND connection: the next new
// PSN, as the receiver expects it, no event, no loss open. It does what
// remember, writeGoBack (nothing: the PSN was not sent before), data and
// receive do with such a packet.
func (tr *Tracker) nextData(ct *connTrk, p *model.Pkt) {
	tr.remember(ct, p)
	psn := p.PSN
	ct.curRound = -1
	ct.cur, ct.sndNxt, ct.ePSN = psn, psn.Next(), psn.Next()
	ct.lastAct, ct.actValid, ct.lastTx = p.TimeNs, true, p.TimeNs
}

// nextResponse is the common packet of a READ connection: the next new
// response PSN, as the requester expects it, no event, no loss open, no
// go-back waiting for its answer. It does what data and receive do with
// such a packet: progress.
func (tr *Tracker) nextResponse(ct *connTrk, p *model.Pkt) {
	psn := p.PSN
	ct.curRound = -1
	ct.cur, ct.sndNxt, ct.ePSN = psn, psn.Next(), psn.Next()
	ct.gap = false
	tr.progress(ct, p.TimeNs)
	if ct.nr > 0 {
		tr.pruneRounds(ct)
	}
}

// writeGoBack detects the start of a retransmission sequence by the
// requester of a WRITE/SEND connection.
func (tr *Tracker) writeGoBack(ct *connTrk, p *model.Pkt) {
	psn := p.PSN
	if !ct.sent {
		return
	}
	jump := psn != ct.cur.Next() && psn.LessThan(ct.sndNxt)
	if !jump && !(ct.nakPending && psn == ct.nakPSN && psn.LessThan(ct.sndNxt)) {
		return
	}
	kind := KindTimeout
	if ct.nakPending {
		kind = KindFast
		if ct.nakRNR {
			kind = KindRNR
		}
		ct.nakPending = false
		ct.handled, ct.handledPSN = true, ct.nakPSN
	}
	if kind == KindTimeout && psn.LessThan(ct.una) {
		if e, ok := tr.unseenProgress(ct, psn, p.TimeNs); ok {
			tr.addGoBack(ct, p, kind, e.una, e.epoch, p.TimeNs-max(e.lastAct, ct.lastTx))
			return
		}
	}
	tr.goBack(ct, p, kind, ct.una)
}

// unseenProgress returns the requester's state before the progress that
// acknowledged psn, when that progress's ACK is stamped at most
// Options.AckLatenessNs before t: a requester re-sending psn on a timeout
// at t had not taken that ACK (nor any later one: it takes them in
// order), so its timer ran from its last transmission or the progress
// before. On netns the software switch can forward a frame milliseconds
// after stamping it when the machine is busy; on sim and hardware the
// lateness is 0 and a re-send of an acknowledged PSN is measured from the
// ACK, as any go-back.
func (tr *Tracker) unseenProgress(ct *connTrk, psn roce.PSN, t int64) (progressRec, bool) {
	for i := range min(ct.nprogs, recentProgress) {
		e := ct.progs[(ct.nprogs-1-i)%recentProgress] // newest first
		if t-e.t > tr.opt.AckLatenessNs {
			break
		}
		if !psn.LessThan(e.una) { // the requester knew psn unacknowledged then
			return e, true
		}
	}
	return progressRec{}, false
}

func (tr *Tracker) goBack(ct *connTrk, p *model.Pkt, kind string, una roce.PSN) {
	var idle int64
	if ct.actValid {
		idle = p.TimeNs - ct.lastAct
	}
	tr.addGoBack(ct, p, kind, una, ct.stats.Epochs, idle)
}

// addGoBack records a go-back of p with the requester's view una, epoch
// and idle time (0: unknown).
func (tr *Tracker) addGoBack(ct *connTrk, p *model.Pkt, kind string, una roce.PSN, epoch int, idle int64) {
	g := GoBack{Conn: ct.id, Kind: kind, PSN: p.PSN, Una: una, Index: p.Index, TimeNs: p.TimeNs, Epoch: epoch, IdleNs: idle}
	if kind != KindRNR && len(ct.open) == 0 {
		g.Spurious = CauseDelivered
		tr.spurious(ct, g, -1)
	}
	switch kind {
	case KindFast:
		if ct.verb == model.VerbRead && !ct.nakPending {
			ct.stats.Implied++
		} else {
			ct.stats.Fast++
		}
	case KindRNR:
		ct.stats.RNR++
	default:
		ct.stats.Timeouts++
	}
	ct.noProgress++
	ct.lastGB = len(tr.res.GoBacks)
	tr.res.GoBacks = append(tr.res.GoBacks, g)
}

func (tr *Tracker) progress(ct *connTrk, t int64) {
	ct.stats.Epochs++
	ct.noProgress = 0
	ct.handled = false
	ct.lastAct, ct.actValid = t, true
}

// writeFeedback: an ACK, NAK or RNR NAK delivered to a WRITE/SEND requester.
func (tr *Tracker) writeFeedback(ct *connTrk, p *model.Pkt) {
	if p.PSN.Sub(ct.sndNxt) >= 0 {
		return
	}
	acked := p.PSN.Next()
	if p.Kind != model.KindAck {
		acked = p.PSN
	}
	if acked.Sub(ct.una) > 0 {
		if tr.opt.AckLatenessNs > 0 {
			ct.progs[ct.nprogs%recentProgress] = progressRec{t: p.TimeNs, una: ct.una, lastAct: ct.lastAct, epoch: ct.stats.Epochs}
			ct.nprogs++
		}
		ct.una = acked
		tr.progress(ct, p.TimeNs)
		if ct.nakPending && ct.nakPSN.LessThan(ct.una) {
			ct.nakPending = false
		}
		tr.pruneRounds(ct)
	}
	if p.Kind == model.KindAck {
		return
	}
	rnr := p.Kind == model.KindRNR
	for i := range ct.open {
		o := &ct.open[i]
		if !o.hasNak && o.psn.Sub(p.PSN) >= 0 {
			o.hasNak, o.nakRNR, o.nakPSN, o.nakT = true, rnr, p.PSN, p.TimeNs
		}
	}
	// A NAK of an episode already pending or acted upon starts no second
	// go-back; an RNR NAK after the retry does (the responder was still
	// not ready: the next of RNR NAKs in a row).
	if ct.nakPending && ct.nakPSN == p.PSN || ct.handled && ct.handledPSN == p.PSN && !rnr {
		return
	}
	ct.nakPending, ct.nakRNR, ct.nakPSN = true, rnr, p.PSN
}

// spurious records a spurious go-back.
func (tr *Tracker) spurious(ct *connTrk, g GoBack, orig int) {
	ct.stats.Spurious++
	tr.res.Spurious = append(tr.res.Spurious, Spurious{Conn: ct.id, PSN: uint32(g.PSN), RelPSN: g.PSN.Sub(ct.ipsn),
		Kind: g.Kind, Index: g.Index, TimeNs: g.TimeNs, Cause: g.Spurious, OriginalIndex: orig})
}

// remember keeps a WRITE/SEND packet that is sent for the first time.
func (tr *Tracker) remember(ct *connTrk, p *model.Pkt) {
	if ct.sent && p.PSN.LessThan(ct.sndNxt) {
		return
	}
	// Field by field: a sentNew built on the stack and then copied is read
	// back in wider loads than it was written with, which stalls store
	// forwarding (Intel 64 and IA-32 Architectures Optimization Reference
	// Manual, "Store Forwarding") on every new packet.
	s := &ct.recent[uint(ct.nrecent)%recentNew]
	s.psn, s.idx, s.t, s.epoch, s.nak = p.PSN, p.Index, p.TimeNs, ct.stats.Epochs, ct.nakPending && ct.nakPSN == p.PSN
	s.idle, s.hasIdle = 0, false
	if ct.actValid {
		s.idle, s.hasIdle = p.TimeNs-ct.lastAct, true
	}
	ct.nrecent++
}

// late handles a data packet the switch held (delay, reorder) whose PSN
// the trace already showed later packets of: it was sent before them and
// is not a retransmission, and its PSN was not lost.
func (tr *Tracker) late(ct *connTrk, p *model.Pkt) {
	psn := p.PSN
	for i := range ct.open {
		if o := &ct.open[i]; o.psn == psn && o.event != "gap" {
			tr.data(ct, p) // a held retransmission of a lost packet
			return
		}
	}
	had := psn.LessThan(ct.ePSN)
	if p.Delivered {
		if ct.verb == model.VerbRead && psn == ct.ePSN && ct.gap {
			ct.lateFix, ct.lateFixPSN = true, psn
		}
		tr.receive(ct, p)
	}
	// A gap its absence opened is no loss.
	for i := range ct.open {
		if o := &ct.open[i]; o.psn == psn && o.event == "gap" {
			ct.open = append(ct.open[:i], ct.open[i+1:]...)
			ct.stats.Losses--
			return
		}
	}
	// A gap already repaired: its retransmission was spurious.
	for i := len(tr.res.Losses) - 1; i >= 0; i-- {
		l := &tr.res.Losses[i]
		if l.Conn != ct.id || l.PSN != uint32(psn) || l.Event != "gap" || l.RetxIndex < 0 {
			continue
		}
		g := GoBack{Conn: ct.id, Kind: l.Kind, PSN: psn, Index: l.RetxIndex, TimeNs: l.TimeNs + *l.RetransmissionNs, Spurious: CauseLate}
		for j := len(tr.res.GoBacks) - 1; j >= 0; j-- {
			if b := &tr.res.GoBacks[j]; b.Conn == ct.id && b.Index <= l.RetxIndex {
				if b.Spurious == "" && b.PSN == psn {
					b.Spurious = CauseLate
					g.Kind = b.Kind
					tr.spurious(ct, g, p.Index)
				}
				break
			}
		}
		tr.res.Losses = append(tr.res.Losses[:i], tr.res.Losses[i+1:]...)
		ct.stats.Losses--
		return
	}
	// The PSN was sent again before it left the switch, looking like new
	// data (the tail of a message, held past the timeout): that
	// transmission was a spurious retransmission.
	if ct.verb == model.VerbRead || !had {
		return
	}
	for k := 0; k < min(ct.nrecent, recentNew); k++ {
		s := ct.recent[(ct.nrecent-1-k)%recentNew]
		if s.psn != psn {
			continue
		}
		// Sent in the round of an earlier go-back that started below it
		// (a timeout resending the whole message): that go-back already
		// counts it.
		covered := false
		for j := len(tr.res.GoBacks) - 1; j >= 0; j-- {
			if b := &tr.res.GoBacks[j]; b.Conn == ct.id && b.Index < s.idx {
				covered = b.PSN.LessThan(psn)
				break
			}
		}
		if covered {
			ct.recent[(ct.nrecent-1-k)%recentNew].psn = psn.Add(-1 << 23) // used
			return
		}
		kind := KindTimeout
		if s.nak {
			kind = KindFast
		}
		g := GoBack{Conn: ct.id, Kind: kind, PSN: psn, Una: psn, Index: s.idx, TimeNs: s.t, IdleNs: s.idle, Epoch: s.epoch, Spurious: CauseLate}
		ct.recent[(ct.nrecent-1-k)%recentNew].psn = psn.Add(-1 << 23) // used
		if kind == KindFast {
			ct.stats.Fast++
		} else {
			ct.stats.Timeouts++
		}
		tr.res.GoBacks = append(tr.res.GoBacks, g)
		tr.spurious(ct, g, p.Index)
		return
	}
}

// readFeedback: a NAK (PSN sequence error) or an RNR NAK delivered to a
// READ requester: its next re-issue is that NAK's go-back.
func (tr *Tracker) readFeedback(ct *connTrk, p *model.Pkt) {
	if p.PSN.Sub(ct.reqNxt) >= 0 || p.PSN.LessThan(ct.ePSN) && p.Kind == model.KindNak {
		return // nothing requested there, or a stale NAK
	}
	rnr := p.Kind == model.KindRNR
	ct.nakPending, ct.nakRNR, ct.nakPSN = true, rnr, p.PSN
	if rnr {
		ct.rnrHold = true
		if p.PSN.LessThan(ct.ePSN) {
			ct.ePSN = p.PSN // responses from PSN on were discarded
		}
	}
}

// readRequest: a READ request from the requester (new or re-issued).
func (tr *Tracker) readRequest(ct *connTrk, p *model.Pkt) {
	psn := p.PSN
	switch {
	case psn.Sub(ct.reqNxt) >= 0:
		ct.reqNxt = psn.Add(p.NPkts)
		ct.reissuing = false
	case ct.reissuing && psn == ct.reissueNxt && model.ContinuesGoBack(p, (ct.nakPending || ct.rnrHold) && ct.nakPSN == psn,
		ct.stats.Epochs != ct.reissueEpoch, ct.ePSN, ct.reissueLastT, tr.opt.MinTimeoutNs):
		// The next request of a go-back under way (Fukuoka et al., Fig.
		// 11: the requester re-sends the 2nd and 3rd READs after one NAK).
		p.Retx = true
		ct.reissueNxt, ct.reissueLastT = psn.Add(p.NPkts), p.TimeNs
	default:
		p.Retx = true
		kind := KindTimeout
		implied := false
		switch {
		case ct.nakPending:
			kind = KindFast
			if ct.nakRNR {
				kind = KindRNR
			}
		case ct.gap || ct.lateFix && psn == ct.lateFixPSN:
			kind, implied = KindFast, true
		}
		tr.goBack(ct, p, kind, ct.ePSN)
		tr.res.GoBacks[len(tr.res.GoBacks)-1].Implied = implied
		ct.gap, ct.lateFix, ct.nakPending, ct.rnrHold = false, false, false, false
		ct.reissuing, ct.reissueNxt, ct.reissueEpoch, ct.reissueLastT = true, psn.Add(p.NPkts), ct.stats.Epochs, p.TimeNs
		if p.Delivered && kind == KindTimeout {
			for i := range ct.open {
				if o := &ct.open[i]; !o.reissued && o.psn.Sub(psn) >= 0 && o.psn.Sub(psn.Add(p.NPkts)) < 0 {
					o.reissued, o.reissueT = true, p.TimeNs
				}
			}
		}
		if p.Delivered && kind == KindFast {
			for i := range ct.open {
				o := &ct.open[i]
				if !o.hasNak && o.hasNext && o.psn.Sub(psn) >= 0 {
					o.hasNak, o.nakPSN, o.nakT = true, psn, p.TimeNs
				}
			}
		}
	}
	if p.Delivered && psn.Sub(ct.rspReqNxt) >= 0 {
		ct.rspReqNxt = psn.Add(p.NPkts)
	}
}

// data handles a data packet (WRITE/SEND request or READ response) as sent.
func (tr *Tracker) data(ct *connTrk, p *model.Pkt) {
	psn := p.PSN
	if !ct.sent {
		ct.sent = true
		ct.cur = psn.Add(-1)
	}
	// Rounds: a re-sent PSN that does not continue the previous packet
	// starts a new round.
	if psn.LessThan(ct.sndNxt) {
		p.Retx = true
		if psn != ct.cur.Next() || ct.curRound < 0 {
			tr.newRound(ct, psn)
		} else {
			ct.rounds[ct.curRound].reach = psn
		}
	} else {
		ct.curRound = -1
	}
	// A retransmission closes the open loss of its PSN.
	for i := 0; i < len(ct.open); i++ {
		if ct.open[i].psn == psn {
			tr.close(ct, &ct.open[i], p)
			ct.open = append(ct.open[:i], ct.open[i+1:]...)
			break
		}
	}
	if !p.Delivered {
		ev := "drop"
		if p.Event == roce.EventCorrupt {
			ev = "corrupt"
		}
		ct.open = append(ct.open, openLoss{psn: psn, iter: tr.iter(ct, psn), t: p.TimeNs, idx: p.Index, event: ev})
		ct.stats.Losses++
	} else if !ct.rnrHold || psn.LessThan(ct.nakPSN) {
		for i := range ct.open {
			if o := &ct.open[i]; !o.hasNext {
				o.hasNext, o.next = true, p.TimeNs
			}
		}
		tr.receive(ct, p)
	}
	ct.cur = psn
	if psn.Sub(ct.sndNxt) >= 0 {
		ct.sndNxt = psn.Next()
	}
}

// receive advances the receiver's expected PSN and records gaps that no
// dropped packet in the trace explains.
func (tr *Tracker) receive(ct *connTrk, p *model.Pkt) {
	switch d := p.PSN.Sub(ct.ePSN); {
	case d == 0:
		ct.ePSN = p.PSN.Next()
		if ct.verb == model.VerbRead {
			ct.gap = false
			tr.progress(ct, p.TimeNs)
			tr.pruneRounds(ct)
		}
	case d > 0:
		if ct.verb == model.VerbRead {
			ct.gap = true
		}
		for i := range ct.open {
			if ct.open[i].psn == ct.ePSN {
				return
			}
		}
		ct.open = append(ct.open, openLoss{psn: ct.ePSN, iter: tr.iter(ct, ct.ePSN), t: p.TimeNs, idx: p.Index,
			event: "gap", hasNext: true, next: p.TimeNs})
		ct.stats.Losses++
	}
}

func (tr *Tracker) newRound(ct *connTrk, psn roce.PSN) {
	var i int
	if ct.nr < maxRounds {
		i = (ct.rhead + ct.nr) % maxRounds
		ct.nr++
	} else {
		i = ct.rhead
		ct.rhead = (ct.rhead + 1) % maxRounds
	}
	ct.rounds[i] = round{psn, psn}
	ct.curRound = i
}

// pruneRounds forgets rounds entirely before the oldest unacknowledged
// PSN (WRITE) or the next expected response (READ).
func (tr *Tracker) pruneRounds(ct *connTrk) {
	low := ct.una
	if ct.verb == model.VerbRead {
		low = ct.ePSN
	}
	for ct.nr > 0 && ct.rounds[ct.rhead].reach.LessThan(low) && ct.rhead != ct.curRound {
		ct.rhead = (ct.rhead + 1) % maxRounds
		ct.nr--
	}
}

// iter returns the transmission round of psn just sent: 1 plus the
// retransmission rounds that covered it.
func (tr *Tracker) iter(ct *connTrk, psn roce.PSN) int {
	n := 1
	for k := 0; k < ct.nr; k++ {
		r := ct.rounds[(ct.rhead+k)%maxRounds]
		if psn.Sub(r.start) >= 0 && psn.Sub(r.reach) <= 0 {
			n++
		}
	}
	return n
}

func i64(v int64) *int64 { return &v }

func (tr *Tracker) close(ct *connTrk, o *openLoss, p *model.Pkt) {
	l := tr.lossOf(ct, o)
	l.RetxIndex = p.Index
	l.RetransmissionNs = i64(p.TimeNs - o.t)
	if o.reissued {
		l.ReissueResponseNs = i64(p.TimeNs - o.reissueT)
	}
	l.Kind = KindTimeout
	if o.hasNak {
		l.Kind = KindFast
		if o.nakRNR {
			l.Kind = KindRNR
		}
		np := uint32(o.nakPSN)
		l.NAKPSN = &np
		if o.nakPSN == o.psn && !o.nakRNR {
			if o.hasNext {
				l.NACKGenerationNs = i64(o.nakT - o.next)
			}
			l.NACKReactionNs = i64(p.TimeNs - o.nakT)
			if h := tr.opt.RTTNs / 2; h > 0 {
				if l.NACKGenerationNs != nil {
					l.NACKGenerationCorrectedNs = i64(*l.NACKGenerationNs - h)
				}
				l.NACKReactionCorrectedNs = i64(*l.NACKReactionNs - h)
			}
		}
	}
	tr.res.Losses = append(tr.res.Losses, l)
}

func (tr *Tracker) lossOf(ct *connTrk, o *openLoss) Loss {
	l := Loss{Conn: ct.id, PSN: uint32(o.psn), RelPSN: o.psn.Sub(ct.ipsn), Iter: o.iter, Index: o.idx,
		TimeNs: o.t, Event: o.event, RetxIndex: -1}
	if o.hasNext {
		l.NextDeliveredNs = i64(o.next - o.t)
	}
	return l
}

// Finish reports the losses never retransmitted and returns the result.
// Call it once.
func (tr *Tracker) Finish() Result {
	res := tr.res
	res.HalfRTTNs = tr.opt.RTTNs / 2
	bad := 0
	for i := range tr.conns {
		ct := &tr.conns[i]
		ct.stats.GaveUp = ct.noProgress >= tr.opt.RetryCnt
		ct.stats.Fatal = ct.fatal
		for j := range ct.open {
			l := tr.lossOf(ct, &ct.open[j])
			l.Kind = KindNone
			res.Losses = append(res.Losses, l)
			if !ct.stats.GaveUp && !ct.fatal {
				bad++
			}
		}
		res.Conns = append(res.Conns, ct.stats)
	}
	if res.Losses == nil {
		res.Losses = []Loss{}
	}
	res.Verdict = model.Pass
	if bad > 0 {
		res.Verdict = model.Fail
		res.Reason = plural(bad, "lost packet was", "lost packets were") + " never retransmitted"
	}
	return res
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
