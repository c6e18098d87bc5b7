package injector

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/netlumina/lumina/roce"
)

// ECN marking by queue depth is lumina.p4's RED in egress, driven by the
// entries of its Egress.ecn_red table, the one source of its thresholds
// (the control plane writes them from switch.ecn: controlplane.ECNRed).
// With the queue model on (Config.PFC), an ECT(0) or ECT(1) RoCE packet
// whose IPv4 DSCP hits an entry set_red(kmin_cells, kmax_cells,
// rand_mask) and that joins an egress queue holding q cells before it
// (each queued frame takes ⌈len/Config.CellBytes⌉ cells, as Tofino's
// enq_qdepth counts them; q saturates at 2^19 − 1) is marked CE
//
//	never                                       q ≤ kmin_cells
//	when (r & rand_mask) < q − kmin_cells       kmin_cells < q ≤ kmax_cells
//	always                                      q > kmax_cells
//
// r a draw from a random stream seeded by Config.Seed (see mark), drawn only
// between the thresholds (so a run with every queue below kmin draws
// nothing): probability min(1, (q − kmin_cells)/(rand_mask + 1)), the
// RED of DCQCN's switch side (Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments", SIGCOMM 2015, §3.1 and Fig. 5) with its
// slope pmax/(kmax − kmin) rounded to a power of two as lumina.p4 must
// (controlplane.ECNRed; docs/pfc.md, docs/fidelity.md). A mark by depth
// is no injected event: the packet's mirror copy has event none and CE in
// its ECN bits. Not-ECT packets and packets already CE are left alone.

// DefaultCellBytes is Config.CellBytes's default: a Tofino 1 queue cell
// (lumina.p4's LUMINA_CELL_BYTES).
const DefaultCellBytes = 80

// maxQDepthCells is the largest depth enq_qdepth (19 bits) reports.
const maxQDepthCells = 1<<19 - 1

// ecnSeedStream is the PCG stream of the ECN draws (the mirror source
// ports use another stream of the same seed, so marks do not shift them).
const ecnSeedStream = 0xEC4

// ecnState is the ECN marker's state. Guarded by Switch.mu.
type ecnState struct {
	rng *rand.Rand
}

func newECN(seed uint64) *ecnState {
	return &ecnState{rng: rand.New(rand.NewPCG(seed, ecnSeedStream))}
}

// mark decides whether a packet joining a queue of q cells is marked by
// the entry set_red(kmin, kmax, mask).
func (e *ecnState) mark(q, kmin, kmax, mask uint64) bool {
	switch {
	case q <= kmin:
		return false
	case q > kmax:
		return true
	}
	// The random number is bits.Len32(mask) bits of the stream's next
	// 64-bit output, from the top of the 53 low bits rand.Float64 uses,
	// masked. For the masks the control plane writes (2^k − 1) the
	// decision is then exactly rand.Float64() < (q − kmin)/2^k on the
	// same output: a probability that is a multiple of 2^−k draws as an
	// exact RED comparing a float would.
	r := e.rng.Uint64() << 11 >> (64 - bits.Len32(uint32(mask)))
	return r&mask < q-kmin
}

// red returns the installed RED entry of a packet with dscp leaving by
// port egress: Egress.ecn_red_port's (egress, dscp) entry, else
// Egress.ecn_red's dscp entry (lumina.p4 applies them in that order);
// set_red's kmin_cells, kmax_cells and rand_mask, and whether there is
// one. A fabric's switches each have their own thresholds: the control
// plane writes them per port of the switch (controlplane.ECNRedPort).
func (s *Switch) red(egress uint32, dscp uint8) (kmin, kmax, mask uint64, ok bool) {
	if s.t.redPort != nil && len(s.t.redPort.entries) > 0 {
		if e, hit := s.t.redPort.hit([4]uint64{uint64(egress), uint64(dscp)}); hit {
			if e.action != s.a.setRed {
				return 0, 0, 0, false
			}
			return e.params[0], e.params[1], e.params[2], true
		}
	}
	if s.t.red == nil {
		return 0, 0, 0, false
	}
	e, hit := s.t.red.hit([4]uint64{uint64(dscp)})
	if !hit || e.action != s.a.setRed {
		return 0, 0, 0, false
	}
	return e.params[0], e.params[1], e.params[2], true
}

// admit is the egress admission of a RoCE packet (an IPv4 frame with a
// 20-byte header, untagged or with one VLAN tag, as receive parses it)
// from port in about to be forwarded to port egress: it returns the depth
// in bytes of the (egress, priority) queue the packet will join, measured
// before it joins (0 without the queue model, for an unknown port, or when
// forward is false), and whether the queue model will drop it for want of
// buffer (pfcState.bufferFull); and it marks the frame CE by that queue's
// depth in cells when its DSCP has an ecn_red entry. It is called before
// the packet is mirrored, so the copy carries the depth, the mark and,
// for a frame without room, the drop.
func (s *Switch) admit(in, egress uint32, forward bool, frame []byte) (depth int64, full bool) {
	st := s.pfc
	if !forward || st == nil {
		return 0, false
	}
	pp := st.ports[egress]
	if pp == nil {
		return 0, false
	}
	p := st.classify(frame)
	q := &pp.q[p]
	full = st.bufferFull(in, pp, p, len(frame))
	l3 := roce.EthernetLen
	if binary.BigEndian.Uint16(frame[12:]) == roce.EtherTypeVLAN {
		l3 += roce.VLANTagLen
	}
	if tos := frame[l3+1]; tos&3 == 1 || tos&3 == 2 { // ECT(1), ECT(0)
		if kmin, kmax, mask, ok := s.red(egress, tos>>2); ok && st.ecn.mark(uint64(min(q.cells, maxQDepthCells)), kmin, kmax, mask) {
			frame[l3+1] = tos | 3
			fixIPv4(frame[l3 : l3+roce.IPv4MinLen])
			s.stats.ECNMarked++
		}
	}
	return int64(q.bytes), full
}
