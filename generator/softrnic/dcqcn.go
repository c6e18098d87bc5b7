package softrnic

import "time"

// DCQCN reaction point (Zhu et al., SIGCOMM 2015, §3.1) with the ConnectX
// firmware defaults NVIDIA documents ("DCQCN CC Parameters": rpg_*,
// dce_tcp_g, dce_tcp_rtt, initial_alpha_value, rate_reduce_monitor_period;
// docs/personality.md): rates in Mb/s, α in units of 1/1024. The α
// update period is dce_tcp_rtt, 1 µs, not the paper's K = 55 µs (the
// DCQCN authors' simulator value).
const (
	rpMinRateMbps     = 1
	rpAIRateMbps      = 5
	rpHAIRateMbps     = 50
	rpThreshold       = 1 // F
	rpTimeReset       = 300 * time.Microsecond
	rpByteReset       = 32767 * 64 // bytes (64-byte granules, as NVIDIA's rpg_byte_reset counts)
	rpGD              = 11
	rpDceTCPG         = 1019
	rpInitialAlpha    = 1023
	rpReduceMonitor   = 4 * time.Microsecond
	rpMinDecFacPct    = 50
	rpAlphaUpdateTime = 1 * time.Microsecond // dce_tcp_rtt
)

// reactionPoint is a QP's DCQCN rate limiter. Its zero value is "no CNP
// seen": line rate, no limiting.
type reactionPoint struct {
	active     bool
	lineMbps   float64
	rc, rt     float64 // current and target rate, Mb/s
	alpha      float64 // 0..1024
	t, bc      int     // timer and byte stages
	bytes      int64   // bytes since the last byte-counter event
	lastCut    int64   // ns, for the rate-reduce monitor period
	lastTimer  int64   // ns of the last timer increase
	lastAlpha  int64   // ns of the last α update
	cnpInPer   bool    // CNP seen in the current α period
	nextSendNs int64
}

// onCNP cuts the rate (at most once per monitor period).
func (r *reactionPoint) onCNP(now int64) {
	r.cnpInPer = true
	if !r.active {
		r.active = true
		r.rc, r.rt, r.alpha = r.lineMbps, r.lineMbps, rpInitialAlpha
		r.lastTimer, r.lastAlpha = now, now
	} else if now-r.lastCut < int64(rpReduceMonitor) {
		return
	}
	r.lastCut = now
	r.rt = r.rc
	cut := r.rc * r.alpha / 1024 / 2 // α/2 with rpg_gd 11 and α in 1/1024
	r.rc = max(r.rc-cut, r.rc*rpMinDecFacPct/100, rpMinRateMbps)
	r.t, r.bc, r.bytes = 0, 0, 0
}

// advance applies α decay and timer increases up to now.
func (r *reactionPoint) advance(now int64) {
	if !r.active {
		return
	}
	for now-r.lastAlpha >= int64(rpAlphaUpdateTime) {
		r.lastAlpha += int64(rpAlphaUpdateTime)
		if r.cnpInPer {
			r.alpha = r.alpha*rpDceTCPG/1024 + (1024 - rpDceTCPG)
		} else {
			r.alpha = r.alpha * rpDceTCPG / 1024
		}
		r.cnpInPer = false
	}
	for now-r.lastTimer >= int64(rpTimeReset) {
		r.lastTimer += int64(rpTimeReset)
		r.t++
		r.increase()
	}
}

func (r *reactionPoint) increase() {
	switch {
	case max(r.t, r.bc) < rpThreshold:
	case min(r.t, r.bc) >= rpThreshold:
		r.rt += rpHAIRateMbps * float64(min(r.t, r.bc)-rpThreshold+1)
	default:
		r.rt += rpAIRateMbps
	}
	r.rt = min(r.rt, r.lineMbps)
	r.rc = min((r.rt+r.rc)/2, r.lineMbps)
	if r.rc >= r.lineMbps-1e-9 {
		r.active = false // back at line rate
	}
}

// sent accounts a transmitted frame of n bytes at now and returns when the
// QP may send again.
func (r *reactionPoint) sent(n int, now int64) {
	if !r.active {
		return
	}
	r.advance(now)
	r.bytes += int64(n)
	if r.bytes >= rpByteReset {
		r.bytes = 0
		r.bc++
		r.increase()
	}
	if r.active {
		r.nextSendNs = now + int64(float64(n)*8*1000/r.rc)
	}
}

func (r *reactionPoint) readyAt() int64 {
	if !r.active {
		return 0
	}
	return r.nextSendNs
}
