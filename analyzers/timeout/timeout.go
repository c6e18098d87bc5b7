package timeout

import (
	"fmt"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/retransmission"
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
	// PSN is the oldest unacknowledged PSN when the first timeout fired.
	PSN    uint32 `json:"psn"`
	RelPSN int    `json:"rel_psn"`
	Index  int    `json:"index"`
	// IntervalsNs are the measured timeout intervals, in order.
	IntervalsNs []int64 `json:"intervals_ns"`
	// Retries counts the timeout go-backs; NAKRetries the NAK-triggered
	// go-backs in the same episode.
	Retries    int `json:"retries"`
	NAKRetries int `json:"nak_retries,omitempty"`
	// OutOfBound says some interval is outside [T_tr, 4·T_tr];
	// OutOfBoundIntervals lists their positions in IntervalsNs.
	OutOfBound          bool   `json:"out_of_bound"`
	OutOfBoundIntervals []int  `json:"out_of_bound_intervals,omitempty"`
	RetryExceeded       bool   `json:"retry_exceeded,omitempty"`
	Outcome             string `json:"outcome"`
}

// Result is the outcome of the check.
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	// TransportTimeoutNs is T_tr (0 if unknown); LowerNs/UpperNs the bound
	// applied.
	TransportTimeoutNs int64     `json:"transport_timeout_ns,omitempty"`
	LowerNs            int64     `json:"lower_ns,omitempty"`
	UpperNs            int64     `json:"upper_ns,omitempty"`
	RetryCnt           int       `json:"retry_cnt"`
	Timeouts           []Timeout `json:"timeouts"`
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
	res := Result{RetryCnt: retry, Timeouts: []Timeout{}}
	if opt.TransportTimeoutNs > 0 {
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
	type key struct{ conn, epoch int }
	open := map[key]int{} // episode index in res.Timeouts
	naks := map[key]int{}
	var epochs []int
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
			res.Timeouts = append(res.Timeouts, Timeout{Conn: g.Conn, PSN: uint32(g.Una),
				RelPSN: g.Una.Sub(ipsn[g.Conn].IPSN), Index: g.Index, NAKRetries: naks[k]})
		}
		to := &res.Timeouts[i]
		to.IntervalsNs = append(to.IntervalsNs, g.IdleNs)
		to.Retries++
	}
	fails := 0
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
				if v < res.LowerNs || v > res.UpperNs {
					to.OutOfBound = true
					to.OutOfBoundIntervals = append(to.OutOfBoundIntervals, j)
				}
			}
		}
		if to.OutOfBound || to.RetryExceeded {
			fails++
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
	default:
		res.Verdict = model.Pass
	}
	return res
}
