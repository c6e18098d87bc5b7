package gbn

import (
	"fmt"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

// Sides.
const (
	SideRequester = "requester"
	SideResponder = "responder"
)

// Rule names (stable; see the package documentation).
const (
	RuleMissingNAK          = "missing-nak"
	RuleDuplicateNAK        = "duplicate-nak"
	RuleNAKWrongPSN         = "nak-wrong-psn"
	RuleUnexpectedNAK       = "unexpected-nak"
	RuleACKBackwards        = "ack-backwards"
	RuleACKUnreceived       = "ack-unreceived"
	RuleReissueWrongRange   = "reissue-wrong-range"
	RuleIncomplete          = "incomplete"
	RuleStartPSN            = "start-psn"
	RulePSNGap              = "psn-gap"
	RuleRetransmitWrongPSN  = "retransmit-wrong-psn"
	RuleSkippedRetransmit   = "skipped-retransmission"
	RuleMissingRetransmit   = "missing-retransmission"
	RuleUnsolicitedRetx     = "unsolicited-retransmission"
	RuleResponseUnrequested = "response-unrequested"
	RuleDuplicateUnanswered = "duplicate-unanswered"
	RuleDuplicateACKWrong   = "duplicate-ack-wrong-psn"
	RuleMSNJump             = "msn-jump"
)

// maxDupWaits bounds the duplicates awaiting their re-ACK per connection
// (the oldest is forgotten).
const maxDupWaits = 16

// MaxViolationsPerConn bounds the violations recorded per connection.
const MaxViolationsPerConn = 100

// Violation is one broken rule.
type Violation struct {
	Conn   int    `json:"conn"`
	Side   string `json:"side"`
	Rule   string `json:"rule"`
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	Index  int    `json:"index"`
	TimeNs int64  `json:"time_ns"`
	Detail string `json:"detail"`
}

// ConnStats are per-connection facts the counter check uses.
type ConnStats struct {
	Conn int `json:"conn"`
	// NAKs is the number of PSN-sequence-error NAKs the receiver sent
	// (READ: re-issued requests after a gap).
	NAKs int `json:"naks"`
	// NAKsDelivered counts those NAKs that reached the requester (not
	// dropped or corrupted on the way; switch copies not counted): the
	// requester's packet_seq_err. Two NAKs of back-to-back episodes (a
	// reordered packet) may start a single go-back.
	NAKsDelivered int `json:"-"`
	// Duplicates is the number of requests delivered to the responder with
	// a PSN it had already executed (duplicate_request).
	Duplicates int `json:"duplicates"`
	// Completed: all data sent was received and acknowledged.
	Completed bool `json:"completed"`
	// GaveUp: the requester stopped after retry_cnt go-backs without
	// progress; Fatal: a fatal NAK ended the connection.
	GaveUp bool `json:"gave_up,omitempty"`
	Fatal  bool `json:"fatal,omitempty"`
}

// Result is the outcome of the check.
type Result struct {
	Verdict    model.Verdict `json:"verdict"`
	Reason     string        `json:"reason,omitempty"`
	Violations []Violation   `json:"violations"`
	// Dropped counts violations not recorded (MaxViolationsPerConn).
	Dropped int         `json:"dropped,omitempty"`
	Conns   []ConnStats `json:"conns,omitempty"`
}

// Options configure a Checker.
type Options struct {
	// RetryCnt is the QP's retry_cnt: a connection that ends after at
	// least this many go-backs without progress gave up and need not
	// complete. Default (0) 7.
	RetryCnt int
	// Foreign says the trace has no mirror metadata: it may have been
	// captured after a loss, so new data skipping PSNs is a loss before the
	// capture point, not rule psn-gap. Default false. See also SetForeign.
	Foreign bool
	// CheckStartPSN requires the first PSN of each connection to be its
	// metadata IPSN (rule start-psn). Default false (inferred IPSNs are
	// the first PSN anyway).
	CheckStartPSN bool
	// ODP says the run used on-demand paging on some host
	// (model.Params.ODP): every NIC of such a test may drop a new READ
	// request that arrives while it serves a duplicate READ, so a READ
	// re-sent before the responder answered it at all is its first
	// execution, not a duplicate. Default false.
	ODP bool
	// MinTimeoutNs is the earliest a requester's transport timer can
	// expire (T_tr less the timeout check's tolerance); 0 when unknown.
	// See model.ContinuesGoBack.
	MinTimeoutNs int64
	// RequesterODP says whether the requester of connection c uses ODP
	// memory (model.Params.ODPAt of its address): a READ requester whose
	// response buffer page-faults drops the responses silently and
	// re-issues the READ once the fault resolved (Fukuoka et al.,
	// Analyzing Performance Pitfalls of On-Demand Paging of InfiniBand,
	// Fig. 2 middle), so on its connections a READ re-issued from a PSN
	// whose response was delivered is that restart, not rule
	// nak-wrong-psn (package rnr reports it as a silent stall). Default
	// nil: no requester uses ODP.
	RequesterODP func(c model.Conn) bool
}

// Checker runs the state machines of every connection of a Table.
type Checker struct {
	opt   Options
	table *model.Table
	conns []conn
	res   Result
	// deferred are violations that a packet the switch held may still
	// cancel (psn-gap, missing-nak); Finish inserts the live ones where
	// they would have been recorded.
	deferred []deferred
}

// deferred is a violation recorded provisionally: slot is the length of
// Result.Violations when it was found.
type deferred struct {
	slot   int
	v      Violation
	live   bool
	capped bool // counted in Result.Dropped instead
	cs     *conn
}

// hole is a range of PSNs new data skipped on a mirror trace: packets the
// switch held (delay, reorder) fill it when they leave; if they do not,
// psn-gap stands.
type hole struct {
	start roce.PSN
	mask  uint64 // bit i: start+i not yet seen
	def   int
}

// nakWait is a loss episode repaired by a packet before the responder's
// NAK appeared in the trace: the NAK may still come, because the repair
// was a held packet (late) or the NAK is held.
type nakWait struct {
	psn  roce.PSN
	late bool // the repairing packet was held by the switch
	def  int
}

// dupWait is a duplicate request (WRITE/SEND) waiting for its re-ACK: an
// ACK for want, the last PSN executed when it arrived.
type dupWait struct {
	want     roce.PSN
	psn      roce.PSN
	idx      int
	t        int64
	required bool // a duplicate with AckReq set arrived
	reqPSN   roce.PSN
	reqIdx   int
	reqT     int64
	seenAck  bool // an ACK came after it
	ackPSN   roce.PSN
	ackIdx   int
}

type conn struct {
	id    int
	verb  model.Verb
	ipsn  roce.PSN
	nviol int
	// reqODP: the requester uses ODP memory (Options.RequesterODP).
	reqODP bool
	fatal  bool
	// write: verb is WRITE or SEND; read: verb is READ.
	write, read bool

	// WRITE/SEND: responder = receiver, requester = sender.
	recv receiver
	snd  sender
	// READ: requester = receiver, responder = sender.
	rrecv readReceiver
	rsnd  readSender

	naks, dups int
	naksRx     int // NAKs delivered to the requester

	holes   []hole
	waits   []nakWait // WRITE/SEND responder or READ requester
	dupw    []dupWait
	dupNAK  bool // a late-resolved episode: a further NAK for dupNAKPSN is a second one
	dupNAKP roce.PSN
	// feedback seen from the responder (msn-jump)
	fbValid   bool
	fbThrough roce.PSN // last PSN the feedback says was executed
	fbMSN     roce.PSN
}

// receiver is the WRITE/SEND responder.
type receiver struct {
	ePSN     roce.PSN // expected PSN
	gap      bool     // an out-of-sequence packet arrived, no NAK yet
	gapPSN   roce.PSN
	gapIdx   int
	gapT     int64
	gapGot   roce.PSN // the out-of-sequence PSN that revealed the gap
	nakOut   bool     // NAK sent in this loss episode
	ackValid bool
	lastAck  roce.PSN
}

// sender is the WRITE/SEND requester.
type sender struct {
	sent       bool
	cur        roce.PSN // last PSN sent
	sndNxt     roce.PSN // one past the highest PSN sent
	una        roce.PSN // oldest unacknowledged PSN (as the trace shows)
	nakPending bool
	nakPSN     roce.PSN
	// nakAlt is the PSN of a pending NAK that a later NAK superseded
	// before the go-back began (valid if nakAltOK): the requester may have
	// started from it before the later NAK reached it (real time).
	nakAlt     roce.PSN
	nakAltOK   bool
	nakIdx     int
	nakT       int64
	handled    bool // a NAK episode at handledPSN was acted upon, no progress since
	handledPSN roce.PSN
	noProgress int // go-backs since the last progress
}

// readReceiver is the READ requester.
type readReceiver struct {
	reqNxt     roce.PSN // one past the highest PSN requested
	ePSN       roce.PSN // next expected response PSN
	ends       []rng    // requested ranges not yet fully received
	gap        bool
	gapPSN     roce.PSN
	gapIdx     int
	gapT       int64
	reissued   bool
	noProgress int
	// rnr: an RNR NAK for rnrPSN reached the requester, which discards
	// the responses from rnrPSN on until it re-issues the READ (the
	// responder may still execute it once its page fault resolves:
	// Fukuoka et al., Analyzing Performance Pitfalls of On-Demand Paging
	// of InfiniBand, Fig. 2 left).
	rnr    bool
	rnrPSN roce.PSN
	// reissuing: a go-back re-issued a READ and re-sends the requests
	// after it as they follow (from reissueNxt, Fig. 11; see
	// model.ContinuesGoBack); progress counted reissueProg when it began, its
	// last request left at reissueLastT.
	reissuing    bool
	reissueNxt   roce.PSN
	progress     int
	reissueProg  int
	reissueLastT int64
}

type rng struct{ start, end roce.PSN }

// readSender is the READ responder.
type readSender struct {
	reqNxt  roce.PSN // one past the highest PSN requested (delivered)
	cur     roce.PSN
	sndNxt  roce.PSN
	pending bool
	pendPSN roce.PSN
	pendIdx int
	pendT   int64
	// pendCopy: the pending request is a copy the switch made (a duplicate
	// READ request), not a re-issue.
	pendCopy bool
	// pendAnswered: responses for the pending request's PSN were sent
	// for the first time after it arrived (a responder that merges the
	// duplicate with the original); a replay may still follow.
	pendAnswered bool
}

// New returns a Checker for the connections of t.
func New(t *model.Table, opt Options) *Checker {
	if opt.RetryCnt <= 0 {
		opt.RetryCnt = 7
	}
	c := &Checker{opt: opt, table: t, conns: make([]conn, len(t.Conns))}
	for i, tc := range t.Conns {
		cs := &c.conns[i]
		cs.id, cs.verb, cs.ipsn = tc.ID, tc.Verb, tc.IPSN
		cs.write = tc.Verb == model.VerbWrite || tc.Verb == model.VerbSend
		cs.read = tc.Verb == model.VerbRead
		cs.reqODP = opt.RequesterODP != nil && opt.RequesterODP(tc)
		cs.recv.ePSN = tc.IPSN
		cs.snd.cur, cs.snd.sndNxt, cs.snd.una = tc.IPSN.Add(-1), tc.IPSN, tc.IPSN
		cs.rrecv.reqNxt, cs.rrecv.ePSN = tc.IPSN, tc.IPSN
		cs.rsnd.reqNxt, cs.rsnd.cur, cs.rsnd.sndNxt = tc.IPSN, tc.IPSN.Add(-1), tc.IPSN
		cs.rrecv.ends = make([]rng, 0, 8)
		cs.waits = make([]nakWait, 0, 2)
		cs.dupw = make([]dupWait, 0, 2)
	}
	return c
}

func (c *Checker) violate(cs *conn, side, rule string, psn roce.PSN, idx int, t int64, format string, args ...any) {
	if cs.nviol >= MaxViolationsPerConn {
		c.res.Dropped++
		return
	}
	cs.nviol++
	c.res.Violations = append(c.res.Violations, Violation{
		Conn: cs.id, Side: side, Rule: rule, PSN: uint32(psn), RelPSN: psn.Sub(cs.ipsn),
		Index: idx, TimeNs: t, Detail: fmt.Sprintf(format, args...),
	})
}

// deferViolation records a violation that may be cancelled later and
// returns its handle.
func (c *Checker) deferViolation(cs *conn, side, rule string, psn roce.PSN, idx int, t int64, format string, args ...any) int {
	d := deferred{slot: len(c.res.Violations), live: true, cs: cs,
		v: Violation{Conn: cs.id, Side: side, Rule: rule, PSN: uint32(psn), RelPSN: psn.Sub(cs.ipsn),
			Index: idx, TimeNs: t, Detail: fmt.Sprintf(format, args...)}}
	if cs.nviol >= MaxViolationsPerConn {
		c.res.Dropped++
		d.capped = true
	} else {
		cs.nviol++
	}
	c.deferred = append(c.deferred, d)
	return len(c.deferred) - 1
}

// cancel withdraws a deferred violation.
func (c *Checker) cancel(i int) {
	d := &c.deferred[i]
	if !d.live {
		return
	}
	d.live = false
	if d.capped {
		c.res.Dropped--
	} else {
		d.cs.nviol--
	}
}

// SetForeign sets Options.Foreign (before the first packet).
func (c *Checker) SetForeign(v bool) { c.opt.Foreign = v }

// Observe feeds one packet. Packets of no connection are ignored.
func (c *Checker) Observe(p *model.Pkt) {
	if p.Conn < 0 {
		return
	}
	cs := &c.conns[p.Conn]
	if cs.fatal {
		return
	}
	if p.Kind == model.KindData && p.Event == roce.EventNone && p.Delivered && p.Dir == model.ToResponder && cs.write {
		if s, r := &cs.snd, &cs.recv; s.sent && p.PSN == s.sndNxt && p.PSN == s.cur.Next() && p.PSN == r.ePSN && !r.gap {
			// The common packet: the requester's next new PSN, the one
			// the responder expects, no loss episode open. What sendData
			// and recvData do with it.
			s.cur, s.sndNxt = p.PSN, p.PSN.Next()
			r.nakOut, r.ePSN = false, p.PSN.Next()
			return
		}
	}
	if p.Kind == model.KindReadResp && p.Event == roce.EventNone && p.Delivered && p.Dir == model.ToRequester && cs.read {
		s, r, psn := &cs.rsnd, &cs.rrecv, p.PSN
		if psn == s.sndNxt && psn == s.cur.Next() && !s.pending && psn.LessThan(s.reqNxt) &&
			psn == r.ePSN && !r.rnr && !r.gap && psn.LessThan(r.reqNxt) {
			// The common packet: the responder's next new response, the
			// one the requester expects, requested and delivered. What
			// readResponseSent and readResponseDelivered do with it.
			s.cur, s.sndNxt = psn, psn.Next()
			r.progress++
			r.reissued, r.noProgress, r.ePSN = false, 0, psn.Next()
			for len(r.ends) > 0 && r.ends[0].end.LessThan(r.ePSN) {
				r.ends = append(r.ends[:0], r.ends[1:]...)
			}
			return
		}
	}
	if p.Kind == model.KindNakFatal {
		cs.fatal = true
		return
	}
	switch cs.verb {
	case model.VerbWrite, model.VerbSend:
		c.observeWrite(cs, p)
	case model.VerbRead:
		c.observeRead(cs, p)
	}
}

func (c *Checker) observeWrite(cs *conn, p *model.Pkt) {
	switch {
	case p.Dir == model.ToResponder && p.Kind == model.KindData:
		switch {
		case p.Copy(): // not sent by the requester
		case p.Late() && p.PSN.LessThan(cs.snd.sndNxt):
			c.fillHole(cs, p.PSN) // sent before what the trace shows before it
		default:
			c.sendData(cs, p)
		}
		if p.Delivered {
			c.recvData(cs, p)
		}
	case p.Dir == model.ToRequester && (p.Kind == model.KindAck || p.Kind == model.KindNak || p.Kind == model.KindRNR):
		c.recvFeedback(cs, p)
		if p.Delivered {
			c.sendFeedback(cs, p)
		}
	}
}

// recvData: the responder receives a request packet.
func (c *Checker) recvData(cs *conn, p *model.Pkt) {
	r := &cs.recv
	switch d := p.PSN.Sub(r.ePSN); {
	case d == 0:
		if r.gap && !r.nakOut {
			// The NAK may still be in the trace after the repair: the
			// repair was held by the switch, or the NAK is.
			def := c.deferViolation(cs, SideResponder, RuleMissingNAK, r.gapPSN, r.gapIdx, r.gapT,
				"PSN %d arrived out of sequence (expected %d) and the loss was repaired at index %d without a NAK",
				r.gapGot, r.gapPSN, p.Index)
			cs.waits = append(cs.waits, nakWait{psn: r.gapPSN, late: p.Late(), def: def})
		}
		r.gap, r.nakOut = false, false
		r.ePSN = p.PSN.Next()
	case d > 0:
		if !r.gap && !r.nakOut {
			r.gap, r.gapPSN, r.gapIdx, r.gapT, r.gapGot = true, r.ePSN, p.Index, p.TimeNs, p.PSN
		}
	default:
		cs.dups++
		c.duplicate(cs, p)
	}
}

// duplicate: a WRITE/SEND request the responder already executed. It must
// not be executed again, and is re-acknowledged with the last executed
// PSN (required when it has AckReq set).
func (c *Checker) duplicate(cs *conn, p *model.Pkt) {
	want := cs.recv.ePSN.Add(-1)
	n := len(cs.dupw)
	if n == 0 || cs.dupw[n-1].want != want || cs.dupw[n-1].seenAck {
		if n == maxDupWaits {
			c.dupUnanswered(cs, &cs.dupw[0])
			cs.dupw = append(cs.dupw[:0], cs.dupw[1:]...)
		}
		cs.dupw = append(cs.dupw, dupWait{want: want, psn: p.PSN, idx: p.Index, t: p.TimeNs})
		n = len(cs.dupw)
	}
	w := &cs.dupw[n-1]
	if p.AckReq && !w.required {
		w.required, w.reqPSN, w.reqIdx, w.reqT = true, p.PSN, p.Index, p.TimeNs
	}
}

// dupUnanswered reports a duplicate with AckReq that got no re-ACK.
func (c *Checker) dupUnanswered(cs *conn, w *dupWait) {
	if !w.required {
		return
	}
	if w.seenAck && w.ackPSN.LessThan(w.want) {
		c.violate(cs, SideResponder, RuleDuplicateACKWrong, w.ackPSN, w.ackIdx, w.reqT,
			"duplicate PSN %d (index %d, AckReq) was answered with an ACK for PSN %d; the last executed PSN is %d",
			w.reqPSN, w.reqIdx, w.ackPSN, w.want)
		return
	}
	c.violate(cs, SideResponder, RuleDuplicateUnanswered, w.reqPSN, w.reqIdx, w.reqT,
		"duplicate PSN %d (AckReq) was never re-acknowledged with an ACK for PSN %d, the last executed PSN", w.reqPSN, w.want)
}

// feedbackMSN checks that the MSN of a responder's ACK or NAK grew by no
// more than the messages it can have completed since its previous one:
// at most one per PSN executed in between (a duplicate executed again
// makes it jump).
func (c *Checker) feedbackMSN(cs *conn, p *model.Pkt) {
	through := p.PSN // ACK: executed up to PSN
	if p.Kind != model.KindAck {
		through = p.PSN.Add(-1) // NAK, RNR NAK: up to PSN-1
	}
	msn := roce.PSN(p.MSN & roce.PSNMask)
	if cs.fbValid {
		if through.LessThan(cs.fbThrough) {
			return // an older ACK the switch held
		}
		limit := cs.recv.ePSN.Add(-1).Sub(cs.fbThrough)
		if d := msn.Sub(cs.fbMSN); d > 0 && d > limit {
			c.violate(cs, SideResponder, RuleMSNJump, p.PSN, p.Index, p.TimeNs,
				"MSN %d after MSN %d (PSN %d): %d messages completed but only %d PSNs were executed since",
				msn, cs.fbMSN, cs.fbThrough, d, max(limit, 0))
		}
	}
	cs.fbValid, cs.fbThrough, cs.fbMSN = true, through, msn
}

// recvFeedback: the responder sent an ACK, NAK or RNR NAK.
func (c *Checker) recvFeedback(cs *conn, p *model.Pkt) {
	r := &cs.recv
	if p.Copy() {
		return // the responder did not send it
	}
	c.feedbackMSN(cs, p)
	switch p.Kind {
	case model.KindRNR:
		// The responder did not execute PSN and discarded what followed
		// it (not ready: no receive WQE, a page fault); the retry is
		// in sequence, not duplicates.
		if p.PSN.LessThan(r.ePSN) {
			r.ePSN = p.PSN
			r.gap, r.nakOut = false, false
		}
	case model.KindNak:
		cs.naks++
		if p.Delivered {
			cs.naksRx++
		}
		for i, w := range cs.waits {
			if w.psn == p.PSN {
				// The NAK of an episode already repaired (by a held packet,
				// or by a go-back while the responder's NAK was on its
				// way): once the PSN was executed a correct responder
				// cannot NAK it again, so it decided this NAK before the
				// repair; it is late, not missing and wrong.
				c.cancel(w.def)
				cs.waits = append(cs.waits[:i], cs.waits[i+1:]...)
				cs.dupNAK, cs.dupNAKP = true, p.PSN
				return
			}
		}
		if cs.dupNAK && p.PSN == cs.dupNAKP && p.PSN.LessThan(r.ePSN) {
			c.violate(cs, SideResponder, RuleDuplicateNAK, p.PSN, p.Index, p.TimeNs,
				"second NAK (PSN %d) in one loss episode: a NAK for PSN %d was already sent", p.PSN, p.PSN)
			return
		}
		switch {
		case r.nakOut:
			c.violate(cs, SideResponder, RuleDuplicateNAK, p.PSN, p.Index, p.TimeNs,
				"second NAK (PSN %d) in one loss episode: a NAK for PSN %d was already sent", p.PSN, r.ePSN)
		case p.PSN != r.ePSN:
			c.violate(cs, SideResponder, RuleNAKWrongPSN, p.PSN, p.Index, p.TimeNs,
				"NAK for PSN %d, expected PSN is %d", p.PSN, r.ePSN)
		case !r.gap:
			c.violate(cs, SideResponder, RuleUnexpectedNAK, p.PSN, p.Index, p.TimeNs,
				"NAK for PSN %d although no packet arrived out of sequence", p.PSN)
		}
		r.nakOut, r.gap = true, false
	case model.KindAck:
		for i := 0; i < len(cs.dupw); i++ {
			w := &cs.dupw[i]
			if p.PSN == w.want {
				cs.dupw = append(cs.dupw[:i], cs.dupw[i+1:]...)
				i--
			} else if !w.seenAck {
				w.seenAck, w.ackPSN, w.ackIdx = true, p.PSN, p.Index
			}
		}
		switch {
		case r.ackValid && p.PSN.LessThan(r.lastAck):
			if !p.Late() { // a held ACK may follow later ones
				c.violate(cs, SideResponder, RuleACKBackwards, p.PSN, p.Index, p.TimeNs,
					"ACK for PSN %d after an ACK for PSN %d", p.PSN, r.lastAck)
			}
		default:
			r.lastAck, r.ackValid = p.PSN, true
		}
		if p.PSN.Sub(r.ePSN) >= 0 {
			c.violate(cs, SideResponder, RuleACKUnreceived, p.PSN, p.Index, p.TimeNs,
				"ACK for PSN %d, but only PSNs before %d were received in order", p.PSN, r.ePSN)
		}
	}
}

// sendData: the requester sent a request packet.
func (c *Checker) sendData(cs *conn, p *model.Pkt) {
	s := &cs.snd
	psn := p.PSN
	if !s.sent {
		s.sent = true
		if c.opt.CheckStartPSN && psn != cs.ipsn {
			s.cur, s.sndNxt, s.una = psn.Add(-1), psn, psn
			if n := psn.Sub(cs.ipsn); n > 0 && n <= 64 && !c.opt.Foreign {
				// The IPSN.. may have been sent first and held by the
				// switch (delay, reorder): a gap a held packet can fill.
				d := c.deferViolation(cs, SideRequester, RuleStartPSN, psn, p.Index, p.TimeNs,
					"first PSN %d, the metadata's IPSN is %d, and PSNs %d..%d never left the switch", psn, cs.ipsn, cs.ipsn, psn.Add(-1))
				cs.addHole(cs.ipsn, n, d)
				s.una = cs.ipsn
			} else {
				c.violate(cs, SideRequester, RuleStartPSN, psn, p.Index, p.TimeNs,
					"first PSN %d, the metadata's IPSN is %d", psn, cs.ipsn)
			}
		}
	}
	if psn == s.cur.Next() {
		if s.nakPending && psn == s.nakPSN && psn.LessThan(s.sndNxt) {
			c.handleNAK(s) // an ongoing go-back reaches the NAK'd PSN by itself
		}
	} else {
		switch {
		case s.nakPending:
			if psn != s.nakPSN && (!s.nakAltOK || psn != s.nakAlt) {
				c.violate(cs, SideRequester, RuleRetransmitWrongPSN, psn, p.Index, p.TimeNs,
					"retransmission starts at PSN %d, the NAK (index %d) asked for PSN %d", psn, s.nakIdx, s.nakPSN)
			}
			c.handleNAK(s)
			s.noProgress++
		case psn.Sub(s.sndNxt) > 0:
			if c.opt.Foreign {
				break
			}
			if n := psn.Sub(s.sndNxt); n <= 64 {
				// Held packets (delay, reorder) may still fill the gap.
				d := c.deferViolation(cs, SideRequester, RulePSNGap, psn, p.Index, p.TimeNs,
					"sent PSN %d after %d: PSNs %d..%d were never sent", psn, s.cur, s.sndNxt, psn.Add(-1))
				cs.addHole(s.sndNxt, n, d)
				break
			}
			c.violate(cs, SideRequester, RulePSNGap, psn, p.Index, p.TimeNs,
				"sent PSN %d after %d: PSNs %d..%d were never sent", psn, s.cur, s.sndNxt, psn.Add(-1))
		case psn.Sub(s.cur) <= 0: // backwards without a NAK: timeout
			if psn.Sub(s.una) > 0 {
				c.violate(cs, SideRequester, RuleRetransmitWrongPSN, psn, p.Index, p.TimeNs,
					"timeout retransmission starts at PSN %d, PSN %d is the oldest unacknowledged", psn, s.una)
			}
			s.noProgress++
		default: // forward jump inside what was sent
			if psn.Sub(s.una) > 0 {
				from := s.cur.Next()
				if from.LessThan(s.una) {
					from = s.una
				}
				c.violate(cs, SideRequester, RuleSkippedRetransmit, psn, p.Index, p.TimeNs,
					"retransmission jumps from PSN %d to %d: PSNs %d..%d are neither retransmitted nor acknowledged",
					s.cur, psn, from, psn.Add(-1))
			}
		}
	}
	s.cur = psn
	if psn.Sub(s.sndNxt) >= 0 {
		s.sndNxt = psn.Next()
	}
}

// addHole records that PSNs start..start+n−1 (1 ≤ n ≤ 64) were not sent
// where the trace expects them, with the deferred violation d that a held
// packet filling all of them cancels (fillHole).
func (cs *conn) addHole(start roce.PSN, n int, d int) {
	mask := uint64(1)<<n - 1
	if n == 64 {
		mask = ^uint64(0)
	}
	cs.holes = append(cs.holes, hole{start: start, mask: mask, def: d})
}

// fillHole: a held packet with PSN psn left the switch; it was sent where
// a gap in new data is.
func (c *Checker) fillHole(cs *conn, psn roce.PSN) {
	for i := range cs.holes {
		h := &cs.holes[i]
		if k := psn.Sub(h.start); k >= 0 && k < 64 && h.mask&(1<<k) != 0 {
			h.mask &^= 1 << k
			if h.mask == 0 {
				c.cancel(h.def)
				cs.holes = append(cs.holes[:i], cs.holes[i+1:]...)
			}
			return
		}
	}
}

func (c *Checker) handleNAK(s *sender) {
	s.nakPending, s.nakAltOK = false, false
	s.handled, s.handledPSN = true, s.nakPSN
}

// sendFeedback: the requester received an ACK, NAK or RNR NAK.
func (c *Checker) sendFeedback(cs *conn, p *model.Pkt) {
	s := &cs.snd
	if p.PSN.Sub(s.sndNxt) >= 0 {
		return // acknowledges nothing sent: the responder side reports it
	}
	prevPending, prevPSN := s.nakPending, s.nakPSN
	acked := p.PSN.Next() // ACK: everything up to PSN
	if p.Kind != model.KindAck {
		acked = p.PSN // NAK/RNR: everything before PSN
	}
	if acked.Sub(s.una) > 0 {
		s.una = acked
		s.noProgress = 0
		s.handled = false
		if s.nakPending && s.nakPSN.LessThan(s.una) {
			s.nakPending = false
		}
	}
	if p.Kind == model.KindAck {
		return
	}
	if s.nakPending && s.nakPSN == p.PSN || s.handled && s.handledPSN == p.PSN && p.Kind != model.KindRNR {
		// A duplicate NAK for an episode already pending or handled; an
		// RNR NAK after the retry is the next of RNR NAKs in a row.
		return
	}
	if p.Copy() || p.PSN.LessThan(s.una) {
		// A copy of a NAK, or a stale one: a later ACK already covered its
		// PSN (a held NAK overtaken, or one the responder sent late), so
		// the requester ignores it and owes no retransmission.
		return
	}
	s.nakAlt, s.nakAltOK = prevPSN, prevPending && prevPSN != p.PSN
	s.nakPending, s.nakPSN, s.nakIdx, s.nakT = true, p.PSN, p.Index, p.TimeNs
}

func (c *Checker) observeRead(cs *conn, p *model.Pkt) {
	switch {
	case p.Dir == model.ToResponder && p.Kind == model.KindReadReq:
		if !p.Copy() {
			c.readRequestSent(cs, p)
		}
		if p.Delivered {
			c.readRequestDelivered(cs, p)
		}
	case p.Dir == model.ToRequester && p.Kind == model.KindReadResp:
		if !p.Copy() {
			c.readResponseSent(cs, p)
		}
		if p.Delivered {
			c.readResponseDelivered(cs, p)
		}
	case p.Dir == model.ToRequester && p.Kind == model.KindRNR && p.Delivered && !p.Copy():
		r := &cs.rrecv
		if p.PSN.Sub(r.reqNxt) >= 0 {
			return // nothing requested there: not the requester's to act on
		}
		r.rnr, r.rnrPSN = true, p.PSN
		if p.PSN.LessThan(r.ePSN) {
			r.ePSN = p.PSN // the responses from PSN on are discarded
		}
	}
}

// readRequestSent: the requester (data receiver) issued a READ request.
func (c *Checker) readRequestSent(cs *conn, p *model.Pkt) {
	r := &cs.rrecv
	psn, end := p.PSN, p.PSN.Add(p.NPkts-1)
	switch d := psn.Sub(r.reqNxt); {
	case d >= 0:
		r.reissuing = false
		if d > 0 {
			c.violate(cs, SideRequester, RulePSNGap, psn, p.Index, p.TimeNs,
				"READ request at PSN %d after PSN %d: PSNs %d..%d were never requested", psn, r.reqNxt.Add(-1), r.reqNxt, psn.Add(-1))
		}
		r.ends = append(r.ends, rng{psn, end})
		r.reqNxt = end.Next()
	case r.reissuing && psn == r.reissueNxt && model.ContinuesGoBack(p, r.rnr && r.rnrPSN == psn, r.progress != r.reissueProg,
		r.ePSN, r.reissueLastT, c.opt.MinTimeoutNs):
		r.reissueNxt, r.reissueLastT = end.Next(), p.TimeNs // the go-back re-sends the next READ
	default: // re-issued request: the NAK's role
		r.reissuing, r.reissueNxt, r.reissueProg, r.reissueLastT = true, end.Next(), r.progress, p.TimeNs
		rnr := r.rnr && psn == r.rnrPSN
		r.rnr = false
		cs.naks++
		for i, w := range cs.waits {
			if w.psn == psn && (w.late || p.Late()) {
				c.cancel(w.def) // re-issued for a gap a held response repaired
				cs.waits = append(cs.waits[:i], cs.waits[i+1:]...)
				r.noProgress++
				return
			}
		}
		switch {
		case psn == r.ePSN || rnr:
		case cs.reqODP && psn.LessThan(r.ePSN):
			r.ePSN = psn // the requester dropped the responses from PSN on
		default:
			c.violate(cs, SideRequester, RuleNAKWrongPSN, psn, p.Index, p.TimeNs,
				"READ re-issued from PSN %d, the first missing response is PSN %d", psn, r.ePSN)
		}
		for _, x := range r.ends {
			if psn.InWindow(x.start, uint32(x.end.Sub(x.start))+1) {
				if end != x.end {
					c.violate(cs, SideRequester, RuleReissueWrongRange, psn, p.Index, p.TimeNs,
						"re-issued READ covers PSNs %d..%d, the original request ends at %d", psn, end, x.end)
				}
				break
			}
		}
		r.gap, r.reissued = false, true
		r.noProgress++
	}
}

// readResponseDelivered: the requester received a READ response.
func (c *Checker) readResponseDelivered(cs *conn, p *model.Pkt) {
	r := &cs.rrecv
	if r.rnr && p.PSN.Sub(r.rnrPSN) >= 0 {
		return // discarded: the requester waits out an RNR NAK
	}
	switch d := p.PSN.Sub(r.ePSN); {
	case d == 0:
		r.progress++
		if p.PSN.Sub(r.reqNxt) >= 0 {
			return // unrequested: the responder side reports it
		}
		if r.gap && !r.reissued {
			def := c.deferViolation(cs, SideRequester, RuleMissingNAK, r.gapPSN, r.gapIdx, r.gapT,
				"READ response PSN %d missing and a later one arrived, but the READ was not re-issued before index %d", r.gapPSN, p.Index)
			cs.waits = append(cs.waits, nakWait{psn: r.gapPSN, late: p.Late(), def: def})
		}
		r.gap, r.reissued = false, false
		r.noProgress = 0
		r.ePSN = p.PSN.Next()
		for len(r.ends) > 0 && r.ends[0].end.LessThan(r.ePSN) {
			r.ends = append(r.ends[:0], r.ends[1:]...)
		}
	case d > 0:
		if !r.gap && !r.reissued {
			r.gap, r.gapPSN, r.gapIdx, r.gapT = true, r.ePSN, p.Index, p.TimeNs
		}
	}
}

// readRequestDelivered: the responder received a READ request.
func (c *Checker) readRequestDelivered(cs *conn, p *model.Pkt) {
	s := &cs.rsnd
	if d := p.PSN.Sub(s.reqNxt); d >= 0 {
		s.reqNxt = p.PSN.Add(p.NPkts)
		return
	}
	if c.opt.ODP && !p.Copy() && p.PSN.Sub(s.sndNxt) >= 0 {
		// Re-sent before the responder answered it at all: on an ODP run
		// the responder dropped the first copy silently (it arrived while
		// a duplicate READ was served, Fukuoka et al., Figs. 6, 11), so
		// this one is its first execution, not a duplicate. Test-wide,
		// not the responder's own ODP: the drop happens on a NIC without
		// ODP too (Fig. 6 middle: ODP at the requester only).
		return
	}
	cs.dups++
	if s.pending && !p.PSN.LessThan(s.pendPSN) {
		// Re-issued requests in a row (a go-back re-sends every READ from
		// the NAK'd one): the replay starts at the first.
		return
	}
	s.pending, s.pendPSN, s.pendIdx, s.pendT, s.pendCopy, s.pendAnswered = true, p.PSN, p.Index, p.TimeNs, p.Copy(), false
}

// readResponseSent: the responder sent a READ response.
func (c *Checker) readResponseSent(cs *conn, p *model.Pkt) {
	s := &cs.rsnd
	psn := p.PSN
	if psn.Sub(s.reqNxt) >= 0 {
		c.violate(cs, SideResponder, RuleResponseUnrequested, psn, p.Index, p.TimeNs,
			"READ response PSN %d, requests so far end at PSN %d", psn, s.reqNxt.Add(-1))
	}
	if p.Late() && psn.LessThan(s.sndNxt) {
		return // held by the switch: sent before what the trace shows before it
	}
	if psn == s.cur.Next() {
		// A replay continuing where the responses stand answers the
		// request; a first transmission does not (a request copied by the
		// switch can arrive before the responses it asks for again).
		if s.pending && psn == s.pendPSN {
			if psn.LessThan(s.sndNxt) {
				s.pending = false
			} else {
				s.pendAnswered = true
			}
		}
	} else {
		switch {
		case s.pending:
			if psn != s.pendPSN {
				c.violate(cs, SideResponder, RuleRetransmitWrongPSN, psn, p.Index, p.TimeNs,
					"READ responses replayed from PSN %d, the re-issued request (index %d) asked for PSN %d", psn, s.pendIdx, s.pendPSN)
			}
			s.pending = false
		case psn.Sub(s.cur) <= 0:
			c.violate(cs, SideResponder, RuleUnsolicitedRetx, psn, p.Index, p.TimeNs,
				"READ response PSN %d re-sent after PSN %d without a re-issued request", psn, s.cur)
		}
	}
	s.cur = psn
	if psn.Sub(s.sndNxt) >= 0 {
		s.sndNxt = psn.Next()
	}
}

// Finish applies the end-of-trace rules and returns the result. Rules
// that apply to several connections report each.
func (c *Checker) Finish() Result {
	stats := make([]ConnStats, len(c.conns))
	for i := range c.conns {
		cs := &c.conns[i]
		st := ConnStats{Conn: cs.id, NAKs: cs.naks, NAKsDelivered: cs.naksRx, Duplicates: cs.dups, Fatal: cs.fatal}
		switch cs.verb {
		case model.VerbWrite, model.VerbSend:
			st.Completed, st.GaveUp = c.finishWrite(cs)
		case model.VerbRead:
			st.Completed, st.GaveUp = c.finishRead(cs)
		}
		stats[i] = st
	}
	res := c.res
	res.Conns = stats
	if len(c.deferred) > 0 {
		res.Violations = c.mergeDeferred(res.Violations)
	}
	if res.Violations == nil {
		res.Violations = []Violation{}
	}
	res.Verdict = model.Pass
	if len(res.Violations) > 0 || res.Dropped > 0 {
		res.Verdict = model.Fail
	}
	return res
}

// mergeDeferred inserts the live deferred violations at their slots.
func (c *Checker) mergeDeferred(vs []Violation) []Violation {
	out := make([]Violation, 0, len(vs)+len(c.deferred))
	j := 0
	for i := 0; i <= len(vs); i++ {
		for ; j < len(c.deferred) && c.deferred[j].slot <= i; j++ {
			if d := c.deferred[j]; d.live && !d.capped {
				out = append(out, d.v)
			}
		}
		if i < len(vs) {
			out = append(out, vs[i])
		}
	}
	if len(out) == 0 {
		return vs
	}
	return out
}

func (c *Checker) finishWrite(cs *conn) (completed, gaveUp bool) {
	r, s := &cs.recv, &cs.snd
	if cs.fatal {
		return false, false
	}
	if r.gap && !r.nakOut {
		c.violate(cs, SideResponder, RuleMissingNAK, r.gapPSN, r.gapIdx, r.gapT,
			"PSN %d missing and a later PSN arrived, but no NAK was sent before the trace ended", r.gapPSN)
	}
	gaveUp = s.noProgress >= c.opt.RetryCnt
	if s.nakPending && !gaveUp {
		c.violate(cs, SideRequester, RuleMissingRetransmit, s.nakPSN, s.nakIdx, s.nakT,
			"NAK for PSN %d was never followed by a retransmission from it", s.nakPSN)
	}
	if !gaveUp {
		for i := range cs.dupw {
			c.dupUnanswered(cs, &cs.dupw[i])
		}
	}
	completed = r.ePSN == s.sndNxt && s.una == s.sndNxt && (!s.sent || r.ackValid && r.lastAck == s.sndNxt.Add(-1))
	if !completed && !gaveUp && s.sent {
		if r.ePSN != s.sndNxt {
			c.violate(cs, SideResponder, RuleIncomplete, r.ePSN, -1, 0,
				"trace ended with PSNs %d..%d sent but not received in order", r.ePSN, s.sndNxt.Add(-1))
		} else {
			c.violate(cs, SideRequester, RuleIncomplete, s.una, -1, 0,
				"trace ended with PSNs %d..%d received but not acknowledged", s.una, s.sndNxt.Add(-1))
		}
	}
	return completed, gaveUp
}

func (c *Checker) finishRead(cs *conn) (completed, gaveUp bool) {
	r, s := &cs.rrecv, &cs.rsnd
	if cs.fatal {
		return false, false
	}
	if r.gap && !r.reissued {
		c.violate(cs, SideRequester, RuleMissingNAK, r.gapPSN, r.gapIdx, r.gapT,
			"READ response PSN %d missing and a later one arrived, but the READ was not re-issued before the trace ended", r.gapPSN)
	}
	gaveUp = r.noProgress >= c.opt.RetryCnt
	if s.pending && !gaveUp && !s.pendAnswered {
		if s.pendCopy {
			c.violate(cs, SideResponder, RuleDuplicateUnanswered, s.pendPSN, s.pendIdx, s.pendT,
				"duplicate READ request at PSN %d was never answered (its responses were not sent again)", s.pendPSN)
		} else {
			c.violate(cs, SideResponder, RuleMissingRetransmit, s.pendPSN, s.pendIdx, s.pendT,
				"re-issued READ from PSN %d was never answered", s.pendPSN)
		}
	}
	completed = r.ePSN == r.reqNxt
	if !completed && !gaveUp {
		c.violate(cs, SideRequester, RuleIncomplete, r.ePSN, -1, 0,
			"trace ended with READ responses %d..%d requested but not received", r.ePSN, r.reqNxt.Add(-1))
	}
	return completed, gaveUp
}
