package timeout

import (
	"fmt"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/roce"
)

// Outcomes of a timeout episode.
const (
	Recovered  = "recovered"  // progress followed
	GaveUp     = "gave-up"    // the connection ended after retry_cnt go-backs without progress
	Unresolved = "unresolved" // the trace ended first
)

// Timeout is one episode of consecutive timeouts of a connection.
type Timeout struct {
	Conn int `json:"conn"`
	// PSN is the oldest unacknowledged PSN when the first timeout fired;
	// for an episode begun by a READ restart (RestartIntervals), the PSN
	// the READ was re-issued from: the requester had dropped its
	// responses. Outcome is then Recovered when the last re-issue was
	// answered.
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	Index  int    `json:"index"`
	// IntervalsNs are the measured timeout intervals, in order.
	IntervalsNs []int64 `json:"intervals_ns"`
	// Retries counts the timeout go-backs; NAKRetries the NAK-triggered
	// go-backs in the same episode.
	Retries    int `json:"retries"`
	NAKRetries int `json:"nak_retries,omitempty"`
	// OutOfBound says some interval is outside [T_tr, 4·T_tr] (the bound
	// applied, Result.LowerNs..UpperNs) by more than the timestamp
	// uncertainty; OutOfBoundIntervals lists their positions in
	// IntervalsNs.
	OutOfBound          bool  `json:"out_of_bound"`
	OutOfBoundIntervals []int `json:"out_of_bound_intervals,omitempty"`
	// Inconclusive says some interval is within the timestamp uncertainty
	// of a bound (either side); InconclusiveIntervals lists their
	// positions in IntervalsNs. Never set when the uncertainty is 0.
	Inconclusive          bool  `json:"inconclusive,omitempty"`
	InconclusiveIntervals []int `json:"inconclusive_intervals,omitempty"`
	// RestartIntervals (a READ connection whose requester uses ODP,
	// Options.RequesterODP)
	// lists the positions of intervals below the bound: the requester
	// re-issued the READ when its page fault resolved, no timer fired
	// (package rnr reports the stall). Not out of bound.
	RestartIntervals []int  `json:"restart_intervals,omitempty"`
	RetryExceeded    bool   `json:"retry_exceeded,omitempty"`
	Outcome          string `json:"outcome"`
}

// Result is the outcome of the check.
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	// TransportTimeoutNs is T_tr (0 if unknown); LowerNs/UpperNs the bound
	// applied.
	TransportTimeoutNs int64 `json:"transport_timeout_ns,omitempty"`
	LowerNs            int64 `json:"lower_ns,omitempty"`
	UpperNs            int64 `json:"upper_ns,omitempty"`
	RetryCnt           int   `json:"retry_cnt"`
	// TimestampUncertaintyNs is the uncertainty U applied to the bound (0:
	// exact, or no bound checked).
	TimestampUncertaintyNs int64 `json:"timestamp_uncertainty_ns,omitempty"`
	// TimerLatenessNs is the RNIC timer lateness L allowed above the upper
	// bound (Options.LatenessNs; 0: none).
	TimerLatenessNs int64     `json:"timer_lateness_ns,omitempty"`
	Timeouts        []Timeout `json:"timeouts"`
}

// Options configure Check.
type Options struct {
	// TransportTimeoutNs is T_tr; 0: unknown.
	TransportTimeoutNs int64
	// RetryCnt is the QP's retry_cnt. Default (0) 7; use -1 for 0.
	RetryCnt int
	// ToleranceNs widens the bound on both sides (clock granularity,
	// switch-to-NIC propagation). Default 0.
	ToleranceNs int64
	// UncertaintyNs is the timestamp uncertainty U
	// (model.Params.TimestampUncertaintyNs): an interval v is uncertain by
	// ±U, so it fails only when v < lower − U or v > upper + U, and is
	// inconclusive when within U of a bound (lower − U ≤ v < lower + U or
	// upper − U < v ≤ upper + U). Default 0: exact; negative counts as 0.
	UncertaintyNs int64
	// LatenessNs is how late the requester RNIC's timers may have run
	// (model.Params.TimerLatenessNs): an interval above upper + U by at
	// most LatenessNs is inconclusive, not a failure (a timer can only be
	// late, so the lower side is unchanged). Default 0; negative counts
	// as 0.
	LatenessNs int64
	// RequesterODP says whether the requester of connection c uses ODP
	// memory (model.Params.ODPAt of its address): a READ requester
	// re-issues a READ whose response its page fault dropped when the
	// fault resolves (Fukuoka et al., Analyzing Performance Pitfalls of
	// On-Demand Paging of InfiniBand, Fig. 2 middle), before any timer:
	// on its READ connections such an interval below the bound is a
	// restart (Timeout.RestartIntervals), not out of bound. Default nil:
	// no requester uses ODP.
	RequesterODP func(c model.Conn) bool
}

// Check groups the timeout go-backs of r into episodes and checks them.
// t gives the connections' IPSNs (for rel_psn).
func Check(r *retransmission.Result, t *model.Table, opt Options) Result {
	retry := opt.RetryCnt
	switch {
	case retry == 0:
		retry = 7
	case retry < 0:
		retry = 0
	}
	u := max(opt.UncertaintyNs, 0)
	late := max(opt.LatenessNs, 0)
	res := Result{RetryCnt: retry, Timeouts: []Timeout{}}
	if opt.TransportTimeoutNs > 0 {
		res.TimestampUncertaintyNs = u
		res.TimerLatenessNs = late
		res.TransportTimeoutNs = opt.TransportTimeoutNs
		res.LowerNs = opt.TransportTimeoutNs - opt.ToleranceNs
		res.UpperNs = 4*opt.TransportTimeoutNs + opt.ToleranceNs
	}
	stats := map[int]retransmission.ConnStats{}
	for _, c := range r.Conns {
		stats[c.Conn] = c
	}
	ipsn := map[int]model.Conn{}
	for _, c := range t.Conns {
		ipsn[c.ID] = c
	}
	restarts := 0
	type key struct{ conn, epoch int }
	open := map[key]int{} // episode index in res.Timeouts
	naks := map[key]int{}
	var epochs []int
	var first []roce.PSN // the episodes' first go-back PSN
	var answered []bool  // the episodes' last go-back was answered
	for _, g := range r.GoBacks {
		k := key{g.Conn, g.Epoch}
		if g.Kind != retransmission.KindTimeout {
			naks[k]++
			if i, ok := open[k]; ok {
				res.Timeouts[i].NAKRetries++
			}
			continue
		}
		i, ok := open[k]
		if !ok {
			i = len(res.Timeouts)
			open[k] = i
			epochs = append(epochs, g.Epoch)
			first, answered = append(first, g.PSN), append(answered, false)
			res.Timeouts = append(res.Timeouts, Timeout{Conn: g.Conn, PSN: uint32(g.Una),
				RelPSN: g.Una.Sub(ipsn[g.Conn].IPSN), Index: g.Index, NAKRetries: naks[k]})
		}
		to := &res.Timeouts[i]
		to.IntervalsNs = append(to.IntervalsNs, g.IdleNs)
		to.Retries++
		answered[i] = g.Answered
	}
	fails, unsure := 0, 0
	var near []string // the intervals within U of a bound, for the reason
	nearN := 0
	for i := range res.Timeouts {
		to := &res.Timeouts[i]
		st := stats[to.Conn]
		switch {
		case epochs[i] < st.Epochs:
			to.Outcome = Recovered
		case st.GaveUp:
			to.Outcome = GaveUp
		default:
			to.Outcome = Unresolved
		}
		if to.Retries+to.NAKRetries > retry {
			to.RetryExceeded = true
		}
		if res.TransportTimeoutNs > 0 {
			for j, v := range to.IntervalsNs {
				switch {
				case v < res.LowerNs-u && ipsn[to.Conn].Verb.IsRead() && opt.RequesterODP != nil && opt.RequesterODP(ipsn[to.Conn]):
					to.RestartIntervals = append(to.RestartIntervals, j)
					restarts++
				case v < res.LowerNs-u || v > res.UpperNs+u+late:
					to.OutOfBound = true
					to.OutOfBoundIntervals = append(to.OutOfBoundIntervals, j)
				case v < res.LowerNs+u || v > res.UpperNs-u: // never with u = 0
					to.Inconclusive = true
					to.InconclusiveIntervals = append(to.InconclusiveIntervals, j)
					nearN++
					if len(near) < maxReasonIntervals {
						near = append(near, nearString(to, j, v, &res))
					}
				}
			}
		}
		if len(to.RestartIntervals) > 0 && to.RestartIntervals[0] == 0 {
			// Begun by a restart: the requester re-issued the READ from
			// the response it dropped, which had been delivered (so no
			// progress in the trace follows): resolved when the last
			// re-issue was answered.
			to.PSN, to.RelPSN = uint32(first[i]), first[i].Sub(ipsn[to.Conn].IPSN)
			if to.Outcome == Unresolved && answered[i] {
				to.Outcome = Recovered
			}
		}
		switch {
		case to.OutOfBound || to.RetryExceeded:
			fails++
		case to.Inconclusive:
			unsure++
		}
	}
	switch {
	case fails > 0:
		res.Verdict = model.Fail
		res.Reason = fmt.Sprintf("%d of %d timeout episodes outside the bound or over retry_cnt", fails, len(res.Timeouts))
	case len(res.Timeouts) == 0:
		res.Verdict = model.Pass
	case res.TransportTimeoutNs == 0:
		res.Verdict = model.Skip
		res.Reason = "QP timeout unknown (--timeout or metadata): bounds not checked"
	case unsure > 0:
		res.Verdict = model.Inconclusive
		more := ""
		if nearN > len(near) {
			more = fmt.Sprintf("; %d more", nearN-len(near))
		}
		lateness := ""
		if late > 0 {
			lateness = fmt.Sprintf(", or above it by at most the RNIC's timer lateness (%s)", model.FormatMicros(late))
		}
		res.Reason = fmt.Sprintf("%d of %d timeout episodes within the timestamp uncertainty (±%s) of the bound%s: %s%s",
			unsure, len(res.Timeouts), model.FormatMicros(u), lateness, strings.Join(near, "; "), more)
	default:
		res.Verdict = model.Pass
	}
	if restarts > 0 && res.Verdict == model.Pass {
		res.Reason = fmt.Sprintf("%d READ re-issues below the bound on an ODP run: restarts after the requester's page faults, not timeouts (see rnr)", restarts)
	}
	return res
}

// maxReasonIntervals bounds the intervals an inconclusive reason lists.
const maxReasonIntervals = 3

// nearString describes interval j of to, within U of a bound: "conn 0 rel
// 5: interval 67,101,000 ns vs lower 67,107,864 ns".
func nearString(to *Timeout, j int, v int64, r *Result) string {
	which, b := "lower", r.LowerNs
	if v-r.LowerNs > r.UpperNs-v {
		which, b = "upper", r.UpperNs
	}
	ord := ""
	if len(to.IntervalsNs) > 1 || j > 0 {
		ord = fmt.Sprintf(" %d", j+1)
	}
	return fmt.Sprintf("conn %d rel %d: interval%s %s vs %s %s", to.Conn, to.RelPSN, ord, model.FormatNs(v), which, model.FormatNs(b))
}
