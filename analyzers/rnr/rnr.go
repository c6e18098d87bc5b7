package rnr

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/roce"
)

// Stall classes (Stall.Class).
const (
	ClassLoss          = "loss"           // an injected event hit the connection's packets
	ClassRNR           = "rnr"            // an RNR NAK triggered the re-send
	ClassNAK           = "nak"            // a PSN sequence error NAK triggered it
	ClassImplied       = "implied"        // a READ response gap (implied NAK)
	ClassSilentTimeout = "silent-timeout" // nothing in the trace explains it
	// ClassSilentRestart: nothing in the trace explains it either, but
	// the requester re-sent sooner than its transport timeout can expire
	// (T_tr, Options.TimeoutNs): a NIC dropped a packet and its requester
	// recovered by itself (an ODP requester once its page fault resolved).
	ClassSilentRestart = "silent-restart"
)

// Wait is one RNR NAK delivered to the requester and the wait it caused.
type Wait struct {
	Conn   int    `json:"conn"`
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	// Index and TimeNs are the RNR NAK's.
	Index  int   `json:"index"`
	TimeNs int64 `json:"time_ns"`
	// TimerCode is the NAK's minimum RNR timer code, TimerNs the delay it
	// encodes (roce.RNRTimer).
	TimerCode uint8 `json:"timer_code"`
	TimerNs   int64 `json:"timer_ns"`
	// InRow: the NAK is the InRow-th RNR NAK in a row for PSN (no
	// progress past it in between).
	InRow int `json:"in_row"`
	// RetryIndex is the trace index of the first re-sent request at or
	// after PSN (-1: none in the trace); WaitNs the time from the NAK to
	// it, Ratio WaitNs / TimerNs (rounded to 0.001).
	RetryIndex int     `json:"retry_index"`
	WaitNs     *int64  `json:"wait_ns"`
	Ratio      float64 `json:"ratio,omitempty"`
	// Verdict: fail when the wait is shorter than the timer by more than
	// the timestamp uncertainty, inconclusive within it, pass otherwise;
	// skip without a retry.
	Verdict model.Verdict `json:"verdict"`
	// RetryExceeded: the retry is one more than rnr_retry allows after
	// InRow RNR NAKs in a row.
	RetryExceeded bool `json:"retry_exceeded,omitempty"`
}

// Stall is one re-send of a request after a gap (a go-back of the
// retransmission tracker) and what explains it.
type Stall struct {
	Conn   int    `json:"conn"`
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	Index  int    `json:"index"`
	TimeNs int64  `json:"time_ns"`
	// StallNs is the time since the requester's last transmission or
	// last progress (retransmission.GoBack.IdleNs).
	StallNs int64 `json:"stall_ns"`
	// Trigger is the go-back's kind (fast, rnr, timeout).
	Trigger string `json:"trigger"`
	Class   string `json:"class"`
	Detail  string `json:"detail,omitempty"`
}

// CounterCheck is one comparison of a NIC counter with the trace.
type CounterCheck struct {
	NIC string `json:"nic"`
	// Relation is RelationResponder, RelationResponderNoODP or
	// RelationRequester.
	Relation string `json:"relation"`
	Trace    int64  `json:"trace"`
	NICValue int64  `json:"nic_value"`
	OK       bool   `json:"ok"`
}

// Result is the outcome of the check. Its zero value means the check
// did not apply (no RNR NAK, no ODP).
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	// RNRRetry is the rnr_retry applied (7: infinite).
	RNRRetry int `json:"rnr_retry"`
	// TimestampUncertaintyNs is U, by which wait decisions are widened.
	TimestampUncertaintyNs int64 `json:"timestamp_uncertainty_ns,omitempty"`
	// NAKs counts the RNR NAKs the responders sent (switch copies not
	// counted), delivered or not.
	NAKs int `json:"naks"`
	// Waits are the delivered RNR NAKs, in trace order.
	Waits []Wait `json:"waits"`
	// MinRatio and MaxRatio bound the waits' Ratio (0: no wait measured).
	MinRatio float64 `json:"min_ratio,omitempty"`
	MaxRatio float64 `json:"max_ratio,omitempty"`
	// Stalls are the go-backs, in trace order, classified.
	Stalls []Stall `json:"stalls"`
	// Counters are the counter comparisons; CountersSkipped says why some
	// or all were not made.
	Counters        []CounterCheck `json:"counters,omitempty"`
	CountersSkipped string         `json:"counters_skipped,omitempty"`
}

// Classes counts the stalls by class.
func (r *Result) Classes() map[string]int {
	m := map[string]int{}
	for _, s := range r.Stalls {
		m[s.Class]++
	}
	return m
}

// Options configure an Analyzer.
type Options struct {
	// UncertaintyNs is the timestamp uncertainty U
	// (model.Params.TimestampUncertaintyNs). Default 0; negative counts
	// as 0.
	UncertaintyNs int64
	// RNRRetry is the requester's rnr_retry, 0..7 (model.Params.RNRRetries;
	// 7: infinite). The zero value means 0: set it.
	RNRRetry int
	// ODP: the run used on-demand paging; the check applies even without
	// an RNR NAK. Default false.
	ODP bool
	// TimeoutNs is T_tr of the requester's local ACK timeout
	// (model.Params.Timeout), the least time a transport timeout takes
	// (IBA 9.7.6.1.3). An unexplained re-send sooner than it, on a
	// connection whose requester uses ODP (RequesterODP), is a
	// ClassSilentRestart, not a timeout. Default 0: unknown, every
	// unexplained re-send is a ClassSilentTimeout.
	TimeoutNs int64
	// RequesterODP says whether the requester of connection c uses ODP
	// memory (model.Params.ODPAt of its address): only such a requester
	// restarts by itself after a page fault. Default nil: none does.
	RequesterODP func(c model.Conn) bool
}

// evt is a packet of a connection that an injected event hit.
type evt struct {
	idx  int
	ev   roce.Event
	psn  roce.PSN
	kind model.Kind
}

type connState struct {
	open       int // index in waits of the wait awaiting its retry; -1 none
	runValid   bool
	runPSN     roce.PSN
	runN       int
	runRetries int
	events     []evt
	// nakRow, nakPSN: the responder's last RNR NAK was for nakPSN and it
	// has sent no ACK or READ response at or past it since (the same
	// request NAK'd again: counted once in naked).
	nakRow bool
	nakPSN roce.PSN
}

// Analyzer follows the RNR NAKs and the injected events of every
// connection of a Table. Observe must see each packet after the
// retransmission tracker (it reads Pkt.Retx). It does not allocate per
// packet in steady state (events and waits are appended as they occur).
type Analyzer struct {
	opt   Options
	table *model.Table
	conns []connState
	waits []Wait
	naks  int
	any   bool // an RNR NAK (or a copy of one) is in the trace
	// naked counts, by responder address, the requests it RNR NAK'd
	// (RNR NAKs in a row for one PSN count once); recv the RNR NAKs
	// delivered, by requester address.
	naked map[netip.Addr]int64
	recv  map[netip.Addr]int64
}

// New returns an Analyzer for the connections of t.
func New(t *model.Table, opt Options) *Analyzer {
	a := &Analyzer{opt: opt, table: t, conns: make([]connState, len(t.Conns)),
		naked: map[netip.Addr]int64{}, recv: map[netip.Addr]int64{}}
	for i := range a.conns {
		a.conns[i].open = -1
	}
	return a
}

// Applies reports whether the check applies: the trace had an RNR NAK
// so far, or the run used ODP.
func (a *Analyzer) Applies() bool { return a.any || a.opt.ODP }

// Observe feeds one packet. It is inlined: most packets are data
// packets sent for the first time with no event, which it does not look
// at further (no RNR NAK, no retry, no event to record).
func (a *Analyzer) Observe(p *model.Pkt) {
	if p.Kind == model.KindData && p.Event == roce.EventNone && !p.Retx {
		return
	}
	a.observe(p)
}

func (a *Analyzer) observe(p *model.Pkt) {
	if p.Kind == model.KindRNR {
		a.any = true
	}
	if p.Conn < 0 {
		return
	}
	cs := &a.conns[p.Conn]
	switch p.Event {
	case roce.EventDrop, roce.EventCorrupt, roce.EventDelay, roce.EventReorder:
		cs.events = append(cs.events, evt{p.Index, p.Event, p.PSN, p.Kind})
	}
	if cs.nakRow && p.Dir == model.ToRequester && !p.Copy() && (p.Kind == model.KindAck || p.Kind == model.KindReadResp) &&
		p.PSN.Sub(cs.nakPSN) >= 0 {
		cs.nakRow = false // the responder went past the NAK'd request
	}
	switch {
	case p.Kind == model.KindRNR && p.Dir == model.ToRequester:
		if p.Delivered {
			a.recv[p.DstIP.Addr()]++ // the requester receives a switch's copy too
		}
		if p.Copy() {
			return
		}
		a.naks++
		if !cs.nakRow || cs.nakPSN != p.PSN {
			a.naked[p.SrcIP.Addr()]++
			cs.nakRow, cs.nakPSN = true, p.PSN
		}
		if !p.Delivered {
			return
		}
		if cs.open >= 0 && a.waits[cs.open].PSN == uint32(p.PSN) {
			return // a second RNR NAK for the PSN before the retry: one wait
		}
		if cs.runValid && cs.runPSN == p.PSN {
			cs.runN++
		} else {
			cs.runValid, cs.runPSN, cs.runN, cs.runRetries = true, p.PSN, 1, 0
		}
		c := &a.table.Conns[p.Conn]
		cs.open = len(a.waits)
		a.waits = append(a.waits, Wait{Conn: c.ID, PSN: uint32(p.PSN), RelPSN: p.PSN.Sub(c.IPSN), Index: p.Index,
			TimeNs: p.TimeNs, TimerCode: p.RNRTimer, TimerNs: int64(roce.RNRTimer(p.RNRTimer)), InRow: cs.runN, RetryIndex: -1})
	case p.Dir == model.ToResponder && p.Kind.IsRequest() && !p.Copy():
		if cs.open < 0 || !p.Retx {
			return
		}
		w := &a.waits[cs.open]
		if p.PSN.Sub(roce.PSN(w.PSN)) < 0 {
			return
		}
		d := p.TimeNs - w.TimeNs
		w.RetryIndex, w.WaitNs = p.Index, &d
		cs.open = -1
		cs.runRetries++
		if a.opt.RNRRetry < 7 && cs.runRetries > a.opt.RNRRetry {
			w.RetryExceeded = true
		}
	case p.Dir == model.ToRequester && p.Delivered && cs.runValid && cs.open < 0 &&
		(p.Kind == model.KindAck || p.Kind == model.KindReadResp) && p.PSN.Sub(cs.runPSN) >= 0:
		cs.runValid = false // progress past the NAK'd PSN ends the row
	}
}

// Inputs are what Finish needs besides the packets.
type Inputs struct {
	// Retrans is the retransmission tracker's result: its go-backs are
	// the stalls.
	Retrans *retransmission.Result
	// NICs are the run's NICs with their counters (none: not compared).
	NICs []model.NIC
	// SkipCounters, when set, is why the counters are not compared (one
	// connection analyzed alone).
	SkipCounters string
}

// maxReason bounds the items a reason lists per kind.
const maxReason = 3

// Finish returns the result; the zero Result when the check does not
// apply. Call it once.
func (a *Analyzer) Finish(in Inputs) Result {
	if !a.Applies() {
		return Result{}
	}
	u := max(a.opt.UncertaintyNs, 0)
	res := Result{RNRRetry: a.opt.RNRRetry, TimestampUncertaintyNs: u, NAKs: a.naks, Waits: a.waits, Stalls: []Stall{}}
	if res.Waits == nil {
		res.Waits = []Wait{}
	}
	var short, unsure, exceeded, silent, mismatched []string
	for i := range res.Waits {
		w := &res.Waits[i]
		if w.WaitNs == nil {
			w.Verdict = model.Skip
			continue
		}
		v := *w.WaitNs
		w.Ratio = math.Round(float64(v)/float64(w.TimerNs)*1000) / 1000
		if res.MinRatio == 0 || w.Ratio < res.MinRatio {
			res.MinRatio = w.Ratio
		}
		res.MaxRatio = max(res.MaxRatio, w.Ratio)
		desc := fmt.Sprintf("conn %d psn %d: waited %s, timer %d is %s", w.Conn, w.PSN, dur(v), w.TimerCode, dur(w.TimerNs))
		switch {
		case v < w.TimerNs-u:
			w.Verdict = model.Fail
			short = append(short, desc)
		case v < w.TimerNs+u:
			w.Verdict = model.Inconclusive
			unsure = append(unsure, desc)
		default:
			w.Verdict = model.Pass
		}
		if w.RetryExceeded {
			exceeded = append(exceeded, fmt.Sprintf("conn %d psn %d: retry after %d RNR NAKs in a row, rnr_retry %d", w.Conn, w.PSN, w.InRow, a.opt.RNRRetry))
		}
	}
	if in.Retrans != nil {
		res.Stalls = a.stalls(in.Retrans.GoBacks)
	}
	for _, s := range res.Stalls {
		if s.Class == ClassSilentTimeout {
			silent = append(silent, fmt.Sprintf("conn %d psn %d (rel %d) stalled %s", s.Conn, s.PSN, s.RelPSN, dur(s.StallNs)))
		}
	}
	a.counters(&res, in)
	for _, c := range res.Counters {
		if !c.OK {
			op := "="
			if strings.Contains(c.Relation, "<=") {
				op = "≤"
			}
			mismatched = append(mismatched, fmt.Sprintf("%s: %s: trace %d, counters %d (want trace %s counters)", c.NIC, c.Relation, c.Trace, c.NICValue, op))
		}
	}
	var fails []string
	add := func(what string, items []string) {
		if len(items) == 0 {
			return
		}
		s := fmt.Sprintf("%d %s: %s", len(items), what, strings.Join(items[:min(len(items), maxReason)], "; "))
		if len(items) > maxReason {
			s += fmt.Sprintf("; %d more", len(items)-maxReason)
		}
		fails = append(fails, s)
	}
	add("RNR waits shorter than the timer", short)
	add("RNR retries over rnr_retry", exceeded)
	add("silent timeouts (no loss, NAK or RNR NAK in the trace: a NIC dropped a packet silently)", silent)
	add("counter relations broken", mismatched)
	switch {
	case len(fails) > 0:
		res.Verdict = model.Fail
		res.Reason = strings.Join(fails, " | ")
	case len(res.Waits) == 0 && len(res.Stalls) == 0 && len(res.Counters) == 0:
		res.Verdict = model.Skip
		res.Reason = "no RNR NAK, no stall and no counters to check"
	case len(unsure) > 0:
		res.Verdict = model.Inconclusive
		res.Reason = fmt.Sprintf("%d RNR waits within the timestamp uncertainty (±%s) of the timer: %s", len(unsure), model.FormatMicros(u),
			strings.Join(unsure[:min(len(unsure), maxReason)], "; "))
	default:
		res.Verdict = model.Pass
	}
	return res
}

// stalls classifies the go-backs gs (see the package documentation).
func (a *Analyzer) stalls(gs []retransmission.GoBack) []Stall {
	sorted := make([]retransmission.GoBack, len(gs))
	copy(sorted, gs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	byID := map[int]int{} // connection ID → index in the table
	for i, c := range a.table.Conns {
		byID[c.ID] = i
	}
	prev := map[int]int{} // connection index → index of its previous go-back
	out := []Stall{}
	for _, g := range sorted {
		ci, ok := byID[g.Conn]
		if !ok {
			continue
		}
		c := &a.table.Conns[ci]
		s := Stall{Conn: g.Conn, PSN: uint32(g.PSN), RelPSN: g.PSN.Sub(c.IPSN), Index: g.Index, TimeNs: g.TimeNs,
			StallNs: g.IdleNs, Trigger: g.Kind}
		from, seen := prev[ci]
		if !seen {
			from = -1
		}
		prev[ci] = g.Index
		switch {
		case g.Kind == retransmission.KindRNR:
			s.Class = ClassRNR
		case g.Kind == retransmission.KindFast && g.Implied:
			s.Class = ClassImplied
		case g.Kind == retransmission.KindFast:
			s.Class = ClassNAK
		default:
			s.Class = ClassSilentTimeout
			for _, e := range a.conns[ci].events {
				if e.idx > from && e.idx < g.Index {
					s.Class = ClassLoss
					s.Detail = fmt.Sprintf("%s of %s psn %d (index %d)", e.ev, e.kind, e.psn, e.idx)
					break
				}
			}
			if s.Class == ClassSilentTimeout {
				s.Detail = "no loss, NAK or RNR NAK in the trace since the connection's previous go-back"
				if t := a.opt.TimeoutNs; t > 0 && g.IdleNs < t && a.opt.RequesterODP != nil && a.opt.RequesterODP(*c) {
					s.Class = ClassSilentRestart
					s.Detail = fmt.Sprintf("no loss, NAK or RNR NAK in the trace, and re-sent after %s, sooner than any transport timeout (T_tr %s): "+
						"a NIC dropped a packet and the requester recovered by itself (an ODP requester after its page fault)", dur(g.IdleNs), dur(t))
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// Counter relations.
const (
	// RelationResponder: the requests a responder RNR NAK'd (RNR NAKs in
	// a row for one PSN of a connection, with no ACK or response past it
	// in between, count once: one fault is NAK'd again each time its
	// request is re-sent while it is pending) are at most its page faults
	// and missing receive WQEs (one fault may serve several requests, so
	// not equal).
	RelationResponder = "rnr_naked_requests <= page_faults + out_of_buffer"
	// RelationResponderNoODP is the responder's relation on a NIC without
	// ODP counters (page_faults ≥ 0 then holds it).
	RelationResponderNoODP = "rnr_naked_requests <= out_of_buffer"
	// RelationRequester: every RNR NAK a requester received is counted
	// once, in rnr_nak_retry_err when it retries, in
	// req_rnr_retries_exceeded when it exhausted rnr_retry (mlx5 and
	// lumina's software RNIC, generator/softrnic).
	RelationRequester = "rnr_nak_retry_err + req_rnr_retries_exceeded == rnr_naks_received"
)

// counters compares the NICs' counters with the trace (see the package
// documentation).
func (a *Analyzer) counters(res *Result, in Inputs) {
	if in.SkipCounters != "" {
		res.CountersSkipped = in.SkipCounters
		return
	}
	var skipped []string
	any := false
	for i := range in.NICs {
		n := &in.NICs[i]
		name := n.Name
		if name == "" {
			name = fmt.Sprintf("nic-%d", i)
		}
		if len(n.After) == 0 {
			continue
		}
		any = true
		req, rsp := false, false
		for _, c := range a.table.Conns {
			req = req || n.Owns(c.Requester.IP)
			rsp = rsp || n.Owns(c.Responder.IP)
		}
		var sent, recv int64
		for _, ip := range n.IPs {
			sent += a.naked[ip]
			recv += a.recv[ip]
		}
		if rsp {
			pf, okpf := n.Delta("page_faults")
			ob, okob := n.Delta("out_of_buffer")
			switch {
			case !okpf && !okob:
				skipped = append(skipped, name+" has no page_faults or out_of_buffer counter")
			case !okpf && sent > ob:
				// page_faults ≥ 0: at most out_of_buffer RNR NAKs holds
				// the relation, more cannot be judged without it.
				skipped = append(skipped, fmt.Sprintf("%s has no page_faults counter and RNR NAK'd %d requests, out_of_buffer %d", name, sent, ob))
			case !okpf:
				res.Counters = append(res.Counters, CounterCheck{NIC: name, Relation: RelationResponderNoODP, Trace: sent, NICValue: ob, OK: true})
			default:
				res.Counters = append(res.Counters, CounterCheck{NIC: name, Relation: RelationResponder, Trace: sent, NICValue: pf + ob, OK: sent <= pf+ob})
			}
		}
		if req {
			// A counter the NIC lacks is 0 only when it reports the other.
			retry, okr := n.Delta("rnr_nak_retry_err")
			exc, oke := n.Delta("req_rnr_retries_exceeded")
			if okr || oke {
				res.Counters = append(res.Counters, CounterCheck{NIC: name, Relation: RelationRequester, Trace: recv, NICValue: retry + exc, OK: retry+exc == recv})
			} else {
				skipped = append(skipped, name+" has no rnr_nak_retry_err or req_rnr_retries_exceeded counter")
			}
		}
	}
	if !any {
		skipped = append(skipped, "no NIC counters")
	}
	res.CountersSkipped = strings.Join(skipped, "; ")
}

func dur(ns int64) string { return time.Duration(ns).String() }
