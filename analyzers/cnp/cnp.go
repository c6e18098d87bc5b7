package cnp

import (
	"fmt"
	"net/netip"

	"github.com/netlumina/lumina/analyzers/model"
)

// Expected are expected CNP counts under each pacing scope.
type Expected struct {
	PerQP     int `json:"per_qp"`
	PerPort   int `json:"per_port"`
	PerDestIP int `json:"per_dest_ip"`
	PerIPPair int `json:"per_ip_pair"`
}

func (e *Expected) get(scope int) int {
	return [...]int{e.PerQP, e.PerPort, e.PerDestIP, e.PerIPPair}[scope]
}

func (e *Expected) inc(scope int) {
	switch scope {
	case 0:
		e.PerQP++
	case 1:
		e.PerPort++
	case 2:
		e.PerDestIP++
	default:
		e.PerIPPair++
	}
}

// ConnCNP are the counts of one connection.
type ConnCNP struct {
	Conn        int      `json:"conn"`
	Observed    int      `json:"observed"`
	Expected    Expected `json:"expected"`
	ECNTriggers int      `json:"ecn_triggers"`
	NAKTriggers int      `json:"nak_triggers,omitempty"`
}

// Result is the outcome of the check.
type Result struct {
	Verdict          model.Verdict `json:"verdict"`
	Reason           string        `json:"reason,omitempty"`
	Observed         int           `json:"observed"`
	Expected         Expected      `json:"expected"`
	ConsistentScopes []string      `json:"consistent_scopes"`
	// MinTimeBetweenCNPsUs is the pacing interval used.
	MinTimeBetweenCNPsUs float64   `json:"min_time_between_cnps_us"`
	NAKTriggersCNP       bool      `json:"nak_triggers_cnp,omitempty"`
	Conns                []ConnCNP `json:"conns,omitempty"`
	// Unattributed counts CNPs addressed to no known connection.
	Unattributed int `json:"unattributed,omitempty"`
}

// Options configure an Analyzer.
type Options struct {
	// MinTimeBetweenCNPsNs is the pacing interval. Known says it was given;
	// otherwise the verdict is skip.
	MinTimeBetweenCNPsNs int64
	Known                bool
	// NAKTriggers makes NAKs CNP triggers. Default false.
	NAKTriggers bool
	// ExpectScope, if set, is the scope that must be consistent.
	ExpectScope string
}

type last struct {
	t     int64
	valid bool
}

type pairKey struct{ np, rp netip.Addr }

// Analyzer counts triggers and CNPs in one pass. Observe does not allocate
// once every pacing domain has been seen.
type Analyzer struct {
	opt   Options
	table *model.Table
	conns []ConnCNP
	port  []string // per conn: port of [requester, responder]

	perQP   []last // conn*2 + side
	perPort map[string]*last
	perDst  map[netip.Addr]*last
	perPair map[pairKey]*last
	unattr  int
}

// New returns an Analyzer for the connections of t.
func New(t *model.Table, opt Options) *Analyzer {
	a := &Analyzer{opt: opt, table: t, conns: make([]ConnCNP, len(t.Conns)), perQP: make([]last, 2*len(t.Conns)),
		port: make([]string, 2*len(t.Conns)), perPort: map[string]*last{}, perDst: map[netip.Addr]*last{}, perPair: map[pairKey]*last{}}
	for i, c := range t.Conns {
		a.conns[i].Conn = c.ID
		a.port[2*i] = portOf(c.Requester)
		a.port[2*i+1] = portOf(c.Responder)
	}
	return a
}

func portOf(e model.Endpoint) string {
	if e.Port != "" {
		return e.Port
	}
	return e.IP.String()
}

// Observe feeds one packet.
func (a *Analyzer) Observe(p *model.Pkt) {
	if p.Kind == model.KindCNP {
		if p.Conn < 0 {
			a.unattr++
			return
		}
		a.conns[p.Conn].Observed++
		return
	}
	if p.Conn < 0 {
		return
	}
	var npIP, rpIP netip.Addr
	var npSide int // 0 requester, 1 responder
	switch {
	case p.CE:
		npIP, rpIP = p.DstIP, p.SrcIP
		npSide = 0
		if p.Dir == model.ToResponder {
			npSide = 1
		}
		a.conns[p.Conn].ECNTriggers++
	case a.opt.NAKTriggers && p.Kind == model.KindNak:
		npIP, rpIP = p.SrcIP, p.DstIP
		npSide = 1
		if p.Dir == model.ToResponder {
			npSide = 0
		}
		a.conns[p.Conn].NAKTriggers++
	default:
		return
	}
	c := &a.conns[p.Conn]
	if a.fire(&a.perQP[2*p.Conn+npSide], p.TimeNs) {
		c.Expected.inc(0)
	}
	port := a.port[2*p.Conn+npSide]
	lp := a.perPort[port]
	if lp == nil {
		lp = &last{}
		a.perPort[port] = lp
	}
	if a.fire(lp, p.TimeNs) {
		c.Expected.inc(1)
	}
	ld := a.perDst[rpIP]
	if ld == nil {
		ld = &last{}
		a.perDst[rpIP] = ld
	}
	if a.fire(ld, p.TimeNs) {
		c.Expected.inc(2)
	}
	k := pairKey{npIP, rpIP}
	lk := a.perPair[k]
	if lk == nil {
		lk = &last{}
		a.perPair[k] = lk
	}
	if a.fire(lk, p.TimeNs) {
		c.Expected.inc(3)
	}
}

func (a *Analyzer) fire(l *last, t int64) bool {
	if l.valid && t-l.t <= a.opt.MinTimeBetweenCNPsNs {
		return false
	}
	l.t, l.valid = t, true
	return true
}

// Finish returns the result.
func (a *Analyzer) Finish() Result {
	res := Result{Conns: a.conns, Unattributed: a.unattr, ConsistentScopes: []string{},
		MinTimeBetweenCNPsUs: float64(a.opt.MinTimeBetweenCNPsNs) / 1000, NAKTriggersCNP: a.opt.NAKTriggers}
	for _, c := range a.conns {
		res.Observed += c.Observed
		res.Expected.PerQP += c.Expected.PerQP
		res.Expected.PerPort += c.Expected.PerPort
		res.Expected.PerDestIP += c.Expected.PerDestIP
		res.Expected.PerIPPair += c.Expected.PerIPPair
	}
	for s, name := range model.Scopes {
		ok := true
		for i := range a.conns {
			if a.conns[i].Expected.get(s) != a.conns[i].Observed {
				ok = false
			}
		}
		if ok {
			res.ConsistentScopes = append(res.ConsistentScopes, name)
		}
	}
	contains := func(s string) bool {
		for _, x := range res.ConsistentScopes {
			if x == s {
				return true
			}
		}
		return false
	}
	switch {
	case !a.opt.Known:
		res.Verdict = model.Skip
		res.Reason = "min_time_between_cnps unknown (--min-time-between-cnps or metadata): counts computed with 0"
	case a.opt.ExpectScope != "":
		res.Verdict = model.Pass
		if !contains(a.opt.ExpectScope) {
			res.Verdict = model.Fail
			res.Reason = fmt.Sprintf("CNPs are not consistent with the expected %s pacing", a.opt.ExpectScope)
		}
	case len(res.ConsistentScopes) == 0:
		res.Verdict = model.Fail
		res.Reason = "CNPs are consistent with no pacing scope"
	default:
		res.Verdict = model.Pass
	}
	return res
}
