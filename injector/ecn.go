package injector

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/netlumina/lumina/roce"
)

// ECNConfig turns on ECN marking by egress queue depth (Config.ECN): RED
// as DCQCN's switch side runs it (Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments", SIGCOMM 2015, §3.1 and Fig. 5): an ECT(0)
// or ECT(1) RoCE packet that joins an egress queue of one of Priorities
// holding d bytes before it (the instantaneous depth, as Tofino's
// enq_qdepth) is marked CE with probability
//
//	0                              d ≤ KminBytes
//	Pmax·(d−KminBytes)/(KmaxBytes−KminBytes)   KminBytes < d ≤ KmaxBytes
//	1                              d > KmaxBytes
//
// drawn from a random stream seeded by Config.Seed (drawn only when the
// probability is strictly between 0 and 1, so a run with every queue below
// KminBytes draws nothing). A mark by depth is no injected event: the
// packet's mirror copy has event none and CE in its ECN bits. Not-ECT
// packets and packets already CE are left alone.
type ECNConfig struct {
	// Priorities is the bitmap of priorities marked (bit n: priority n).
	Priorities uint8
	// KminBytes and KmaxBytes are RED's thresholds, bytes; KmaxBytes >
	// KminBytes >= 0 (agent.ECNFromProto checks it; a KmaxBytes not above
	// KminBytes marks every packet above KminBytes).
	KminBytes, KmaxBytes int64
	// Pmax is the marking probability at KmaxBytes, 0..1.
	Pmax float64
}

// ecnSeedStream is the PCG stream of the ECN draws (the mirror source
// ports use another stream of the same seed, so marks do not shift them).
const ecnSeedStream = 0xEC4

// ecnState is the ECN marker's state. Guarded by Switch.mu.
type ecnState struct {
	cfg ECNConfig
	rng *rand.Rand
}

func newECN(c *ECNConfig, seed uint64) *ecnState {
	return &ecnState{cfg: *c, rng: rand.New(rand.NewPCG(seed, ecnSeedStream))}
}

// probability returns the RED marking probability at depth d.
func (e *ecnState) probability(d int64) float64 {
	c := &e.cfg
	switch {
	case d <= c.KminBytes:
		return 0
	case d > c.KmaxBytes:
		return 1
	}
	return c.Pmax * float64(d-c.KminBytes) / float64(c.KmaxBytes-c.KminBytes)
}

// mark decides whether a packet joining a queue of d bytes is marked.
func (e *ecnState) mark(d int64) bool {
	switch p := e.probability(d); {
	case p <= 0:
		return false
	case p >= 1:
		return true
	default:
		return e.rng.Float64() < p
	}
}

// admit is the egress admission of a RoCE packet (an IPv4 frame with a
// 20-byte header, untagged or with one VLAN tag, as receive parses it) about to be forwarded to port
// egress: it returns the depth in bytes of the (egress, priority) queue the
// packet will join, measured before it joins (0 without the queue model, for
// an unknown port, or when forward is false), and marks the frame CE by
// that depth when ECN is on for its priority. It is called before the
// packet is mirrored, so the copy carries the depth and the mark.
func (s *Switch) admit(egress uint32, forward bool, frame []byte) int64 {
	st := s.pfc
	if !forward || st == nil {
		return 0
	}
	pp := st.ports[egress]
	if pp == nil {
		return 0
	}
	prio := st.classify(frame)
	d := int64(pp.q[prio].bytes)
	e := st.ecn
	if e == nil || e.cfg.Priorities&(1<<prio) == 0 {
		return d
	}
	l3 := roce.EthernetLen
	if binary.BigEndian.Uint16(frame[12:]) == roce.EtherTypeVLAN {
		l3 += roce.VLANTagLen
	}
	if tos := frame[l3+1]; tos&3 == 1 || tos&3 == 2 { // ECT(1), ECT(0)
		if e.mark(d) {
			frame[l3+1] = tos | 3
			fixIPv4(frame[l3 : l3+roce.IPv4MinLen])
			s.stats.ECNMarked++
		}
	}
	return d
}
