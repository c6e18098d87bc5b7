package controlplane

import (
	"fmt"
	"math"
	"slices"

	"github.com/netlumina/lumina/config"
)

// DefaultCellBytes is the size of a traffic-manager queue cell on
// Tofino 1, the unit of eg_intr_md.enq_qdepth and of Egress.ecn_red's
// thresholds (lumina.p4's LUMINA_CELL_BYTES; 176 on Tofino 2, assumed:
// docs/tofino.md).
const DefaultCellBytes = 80

// MaxQDepthCells is the largest queue depth Tofino reports
// (eg_intr_md.enq_qdepth is 19 bits): a threshold above it can never be
// crossed, so ECNRed saturates there.
const MaxQDepthCells = 1<<19 - 1

// ECNRedEntry is one entry of lumina.p4's Egress.ecn_red: ECT RoCE
// packets with IPv4 DSCP DSCP are marked CE by the depth q (cells) of the
// egress queue they join: never for q ≤ KminCells, always for
// q > KmaxCells, and in between when (random & RandMask) < q − KminCells,
// that is with probability (q − KminCells)/(RandMask + 1), capped at 1.
type ECNRedEntry struct {
	DSCP                 uint8
	KminCells, KmaxCells uint32
	RandMask             uint32
}

// Action returns ecn_red's action for e and its parameters (P4Info order
// and widths).
func (e *ECNRedEntry) Action() (name string, params []ActionParam) {
	return "Egress.set_red", []ActionParam{{uint64(e.KminCells), 19}, {uint64(e.KmaxCells), 19}, {uint64(e.RandMask), 32}}
}

// ECNRed returns the Egress.ecn_red entries of switch.ecn e (nil: none)
// for a switch whose DSCP → priority map is dscpToPrio and whose queue
// cells hold cellBytes bytes (0: DefaultCellBytes): one entry per DSCP
// whose priority e marks, in DSCP order, all with the same thresholds.
//
// switch.ecn asks for DCQCN's RED on a depth of d bytes: probability 0
// for d ≤ kmin, pmax·(d−kmin)/(kmax−kmin) for kmin < d ≤ kmax and 1
// above (kmin, kmax = kmin-kb, kmax-kb × 1024). The entry approximates it
// on a depth of q cells, as lumina.p4 and the software switch (which
// reads these entries: injector, ecn.go) run it:
//
//   - KminCells = ⌊kmin/cellBytes⌋ and KmaxCells = ⌊kmax/cellBytes⌋. For a
//     depth of whole cells this is exact: q > ⌊K/c⌋ ⇔ q·c > K. Both
//     saturate at MaxQDepthCells, the largest depth enq_qdepth reports.
//   - RandMask + 1 = 2^k, the power of two nearest (in ratio: k =
//     round(log2 x)) to x = (KmaxCells − KminCells)/pmax, within 1..2^32:
//     lumina.p4 cannot divide at line rate. The probability between the
//     thresholds is (q − KminCells)/2^k, so the probability reached at
//     KmaxCells is pmax' = pmax·x/2^k with x/2^k in [1/√2, √2]: pmax' is
//     within −29 % and +41 % of pmax (exact when x is a power of two), and
//     the slope keeps that ratio all the way (capped at 1: with pmax' > 1
//     every packet above KminCells + 2^k cells is marked).
//
// docs/pfc.md ("ECN by queue depth") and docs/fidelity.md.
func ECNRed(e *config.ECN, dscpToPrio [64]uint8, cellBytes int) []ECNRedEntry {
	if e == nil {
		return nil
	}
	if cellBytes <= 0 {
		cellBytes = DefaultCellBytes
	}
	cells := func(kb int) uint32 {
		return uint32(min(int64(kb)*1024/int64(cellBytes), MaxQDepthCells))
	}
	kmin, kmax := cells(e.KminKB), cells(e.KmaxKB)
	var mask uint32
	if x := float64(kmax-min(kmin, kmax)) / e.Pmax; x > 1 && e.Pmax > 0 {
		k := math.Round(math.Log2(x))
		mask = uint32(math.Exp2(min(k, 32)) - 1)
	} else if e.Pmax <= 0 {
		mask = math.MaxUint32
	}
	var out []ECNRedEntry
	for d, p := range dscpToPrio {
		if slices.Contains(e.Priorities, int(p)) {
			out = append(out, ECNRedEntry{DSCP: uint8(d), KminCells: kmin, KmaxCells: kmax, RandMask: mask})
		}
	}
	return out
}

// planECNRed is the plan's ecn_red entries as describeEntry renders them.
func planECNRed(p *Plan) map[string]string {
	m := map[string]string{}
	for _, e := range p.ECNRed {
		act, params := e.Action()
		m[fmt.Sprintf("hdr.ipv4.dscp=%d", e.DSCP)] = describeAction(act, params)
	}
	return m
}
