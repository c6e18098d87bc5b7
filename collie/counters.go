package collie

import (
	"math"
	"strings"
)

// DiagCounters lists the model's diagnostic counters.
var DiagCounters = []string{DiagQPCMiss, DiagMTTMiss, DiagRWQEMiss, DiagPCIeBP, DiagOrderingStall, DiagRxBuffer,
	DiagPacketEngine, DiagDoorbell}

// sat is a smooth saturating response: 0 at 0, 1/2 at 1, → 1.
func sat(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return x / (1 + x)
}

// counters computes the diagnostic counters of host B (percent of the
// subsystem's capacity in use; rx_buffer_occupancy is a share of the RX
// buffer). Each counter is the load one modelled NIC subsystem carries,
// summed over the traffics that involve host B; each traffic's share is a
// product of workload quantities, every one of which pushes that subsystem
// in one direction (a saturating response sat(x) = x/(1+x) of a physical
// ratio: working set over cache size, burst over prefetch depth, packets
// per byte, memory latency). None of them refers to a planted region: the
// planted anomalies are placed where their subsystem is loaded (Planted.Load).
//
// Per traffic, with ρ = 1024/(1024 + mean message size) (the message rate
// relative to 1 KiB messages at line rate), q, d, b, g the QPs, WQ depth,
// WQE batch and SGEs, q_B the QPs on host B (doubled for bi and loopback):
//
//   - rx_wqe_cache_miss: SEND traffics B receives. Receive-WQE misses per
//     message: 1 − (1 − overrun)(1 − scatter), where the prefetch overrun
//     sat(b/2p)·sat(d/16p) grows with the sender's burst b against the
//     per-QP prefetch p and with the ring depth d, and the working-set
//     scatter sat(q·min(d, 64p)/2C)·(1 − sat(b/p)) grows with the posted
//     receive WQEs against the cache C when unbatched senders spread
//     messages over every QP. Times ρ and a transport factor (UD 1: one
//     receive WQE per packet-sized message; RC 1024/MTU, UC 0.8·1024/MTU:
//     receive WQEs held across the packets of a message).
//   - doorbell_wqe_fetch_util: traffics where B posts requests (bi,
//     loopback). WQE fetch load ρ·sat(b/16)·sat(g/2)·sat(q/64), halved for
//     WRITE/SEND (READ fetches request WQEs and tracks responses).
//   - mtt_cache_miss: MTT/MPT misses ρ·sat(E/(M/2))·(1 − sat(b/2)) with E
//     the translation entries num_mrs·(1 + ⌈mr_size/page⌉) against the
//     cache M; unbatched small requests expose each miss (Appendix A root
//     cause #2: large or batched requests hide it in the pipeline). WRITE
//     1, READ/SEND 0.5; RC 1, UC/UD 0.5.
//   - qpc_cache_miss: QP-context misses: small unbatched requests over
//     many shallow QPs, ρ·sat(q_B/(Q/8))·(1 − sat(b/2))·(1 − sat(d/16))
//     (WRITE 1 else 0.5; RC 1 else 0.5), plus, unless the profile's
//     contexts are compact, bidirectional RC contexts with large MTUs and
//     long SG lists, (MTU/4096)·sat(g/4)·sat(q_B/(Q/1.6)), with Q the QPC
//     cache.
//   - packet_engine_util: RC traffics, per direction B handles:
//     √(1024/MTU)·sat(b/16)·sat(q_B/256) (bursts over many connections at
//     small MTUs) plus, for READ responses B sends, (1024/MTU)·sat(min
//     message/16 KiB) (long responses cut into small packets).
//   - pcie_ordering_stall: bidirectional traffic whose writes could wait
//     behind reads: sat(log2(max/min message)/6)·sat(g/3).
//   - pcie_backpressure: PCIe latency of the memory B's DMA goes to, per
//     direction: 0.2 + 0.8·min(1, 10·(1 − memory efficiency)), for GPU
//     memory times (0.5 + 0.5·sat(g/3)) and 0.6 unless WRITE; times
//     (0.5 + 0.5·sat(max message/64 KiB)).
//   - rx_buffer_occupancy: the RX buffer share of the physical model (a
//     drain slower than the sender), or the in-NIC incast of every stream
//     into B together (loopback 0.5, uni WRITE/SEND 0.5, bi 0.35 each),
//     whichever is larger.
func (m *Model) counters(w Workload) map[string]float64 {
	total, _ := m.trafficCounters(w)
	return total
}

// trafficCounters returns the counters and each traffic's share of them.
func (m *Model) trafficCounters(w Workload) (map[string]float64, []map[string]float64) {
	p := &m.Profile
	total := map[string]float64{}
	shares := make([]map[string]float64, len(w.Traffics))
	incast := 0.0
	for i := range w.Traffics {
		t := &w.Traffics[i]
		c := map[string]float64{}
		shares[i] = c
		var sum, pk float64
		for _, s := range t.MessageSizes {
			sum += float64(s)
			pk += float64(packets(s, t.MTU))
		}
		n := float64(len(t.MessageSizes))
		mean := sum / n
		rho := 1024 / (1024 + mean)
		q, d, b, g := float64(t.NumQPs), float64(t.WQDepth), float64(t.WQEBatch), float64(t.SGEPerWQE)
		mtu := float64(t.MTU)
		mn, mx := float64(t.MinMsg()), float64(t.MaxMsg())
		// Host B's role.
		var rx, tx, req float64
		qB := q
		switch t.Direction {
		case Bi:
			rx, tx, req, qB = 1, 1, 1, 2*q
		case Loopback:
			rx, tx, req, qB = 1, 1, 1, 2*q
		default:
			if t.Opcode == "READ" {
				tx = 1
			} else {
				rx = 1
			}
		}
		half := func(cond bool) float64 {
			if cond {
				return 1
			}
			return 0.5
		}
		// Receive WQEs.
		if t.Opcode == "SEND" && rx > 0 {
			pf := p.RWQEPrefetch
			over := sat(b/(2*pf)) * sat(d/(16*pf))
			scatter := sat(q*math.Min(d, 64*pf)/(2*p.RWQECache)) * (1 - sat(b/pf))
			tf := 1.0
			switch t.QPType {
			case "RC":
				tf = 1024 / mtu
			case "UC":
				tf = 0.8 * 1024 / mtu
			}
			c[DiagRWQEMiss] += 100 * rho * tf * (1 - (1-over)*(1-scatter))
		}
		// WQE fetch.
		if req > 0 {
			c[DiagDoorbell] += 100 * half(t.Opcode == "READ") * rho * sat(b/16) * sat(g/2) * sat(q/64)
		}
		if rx+tx > 0 {
			ent := float64(t.NumMRs) * (1 + math.Ceil(float64(t.MRSize)/p.MTTPage))
			expose := 1 - sat(b/2)
			c[DiagMTTMiss] += 100 * rho * sat(ent/(p.MTTCache/2)) * expose * half(t.Opcode == "WRITE") * half(t.QPType == "RC")
			qpc := rho * sat(qB/(p.QPCCache/8)) * expose * (1 - sat(d/16)) * half(t.Opcode == "WRITE") * half(t.QPType == "RC")
			if t.Direction == Bi && t.QPType == "RC" && !p.CompactQPC {
				qpc += mtu / 4096 * sat(g/4) * sat(qB/(p.QPCCache/1.6))
			}
			c[DiagQPCMiss] += 100 * qpc
		}
		if t.QPType == "RC" {
			pe := (rx + tx) * math.Sqrt(1024/mtu) * sat(b/16) * sat(qB/256)
			if t.Opcode == "READ" && tx > 0 {
				pe += 1024 / mtu * sat(mn/16384)
			}
			c[DiagPacketEngine] += 100 * pe
		}
		if t.Direction == Bi {
			c[DiagOrderingStall] += 100 * sat(math.Log2(mx/mn)/6) * sat(g/3)
		}
		eff := p.Memory[t.Memory]
		if eff == 0 {
			eff = 1
		}
		lat := 0.2 + 0.8*math.Min(1, 10*math.Max(0, 1-eff))
		if strings.HasPrefix(t.Memory, "gpu") {
			lat *= (0.5 + 0.5*sat(g/3)) * half(t.Opcode == "WRITE")
		}
		c[DiagPCIeBP] += 100 * (rx + tx) / 2 * lat * (0.5 + 0.5*sat(mx/65536))
		in := 0.0
		switch {
		case t.Direction == Loopback:
			in = 0.5
		case t.Direction == Bi:
			in = 0.35
		case t.Opcode != "READ":
			in = 0.5
		}
		incast += in
		c[DiagRxBuffer] = 100 * in
		for k, v := range c {
			if k != DiagRxBuffer {
				total[k] += v
			}
		}
	}
	for _, k := range DiagCounters {
		total[k] += 0 // every counter is reported
	}
	total[DiagRxBuffer] = 100 * math.Min(1, incast)
	return total, shares
}
