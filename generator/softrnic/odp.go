package softrnic

import (
	"time"

	"github.com/netlumina/lumina/roce"
)

// On-Demand Paging (Config.ODP). The model follows the ibdump traces of
// Fukuoka et al., Analyzing Performance Pitfalls of On-Demand Paging of
// InfiniBand, Figs. 2, 6 and 11 (a ConnectX-4 captured at the client);
// docs/odp.md describes it for users.
//
// Memory: with Config.ODP every MR the NIC registers is an ODP MR of
// ODPPageSize pages (MR.Addr is page-aligned), unmapped until accessed,
// or all mapped at registration with Prefetch (page_prefetch counts
// them, as ibv_advise_mr would). One access is the DMA range of one work
// request: a READ's source at the responder (its RETH range) or its
// destination at the requester (the WQE's local buffer), a WRITE's
// destination (the RETH range of its FIRST/ONLY packet), a SEND's receive
// buffer (the receive WQE's), a WRITE's or SEND's source at the
// requester. An access that finds an unmapped page faults (page_faults);
// the fault resolves after the page-fault time, mapping the whole range
// (page_faults_handled). An access that overlaps a pending fault joins
// it (no new fault). lumina never evicts a page, so page_invalidations
// stays 0.
//
// Responder fault: RNR NAK for the request's PSN (the QP's min_rnr_timer)
// ODPRNRNakDelay after it. A READ is executed when the fault has resolved
// and the NAK has left (its response sent then, the expected PSN
// advanced past it: Fig. 2 left); a WRITE or SEND packet is discarded
// (the expected PSN stays: the paper has no WRITE or SEND trace, our
// choice). While the fault is pending, the faulting request re-sent (an
// RNR wait shorter than the fault) gets another RNR NAK, and any other
// request is dropped silently (the paper is silent on both: our choice,
// made so that a short min_rnr_timer costs RNR waits, as the paper's
// two waves of Fig. 8 right with a 0.01 ms timer suggest, not a transport
// timeout).
//
// Requester: after an RNR NAK (any, not only ODP's) the QP waits
// RNRTimer(code) × RNRWaitFactor, sends no request meanwhile (posted WRs
// queue: Fig. 6, the second READ leaves right behind the retry) and
// discards READ responses at or after the NAK'd PSN (Fig. 2 left: the
// response the responder sends after its fault is dropped). A READ
// response whose destination faults is dropped without a NAK, and so is
// every READ response while that fault is pending; when it resolves the
// QP goes back to the first missing response PSN (re-sends the READ:
// Fig. 2 middle), holding new requests meanwhile as for RNR. A WRITE or
// SEND whose source faults waits for the fault before its first packet
// leaves (our choice, the paper is silent).
//
// Duplicate READs (Config.ODPInTest): a duplicate READ request is
// answered ODPDupReadDelay after it arrives instead of at once, and a new
// request (the expected PSN) that arrives from the duplicate's arrival
// until its response has left is dropped with no NAK and no change of
// the expected PSN: the paper's lost second READ (Figs. 6, 7). A later
// request then meets the usual PSN-sequence-error NAK (Fig. 11).

// ODPPageSize is the page size of ODP memory regions.
const ODPPageSize = 4096

// ODPConfig turns on On-Demand Paging: every MR the NIC registers is an
// ODP MR (odp.go). The zero value is usable.
type ODPConfig struct {
	// PageFault is how long a page fault takes to resolve. Default 0: the
	// personality's ODPPageFault.
	PageFault time.Duration
	// Prefetch maps every page of an MR at registration (ibv_advise_mr
	// with IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE), so that nothing faults.
	// Default false: pages are mapped on first access.
	Prefetch bool
}

// ODPCounters are the ODP counters of mlx5 (the RDMA resource statistics
// of the device, rdma statistic show: page_faults, page_faults_handled,
// page_invalidations, page_prefetch). Enabled is set when the NIC runs
// with Config.ODP; the counters are in Counters.Map only then.
type ODPCounters struct {
	Enabled           bool
	PageFaults        uint64 // accesses that found an unmapped page
	PageFaultsHandled uint64 // faults resolved
	PageInvalidations uint64 // always 0: lumina never evicts a page
	PagePrefetch      uint64 // pages mapped at registration (Prefetch)
}

func (c ODPCounters) addTo(m map[string]uint64) {
	m["page_faults"] = c.PageFaults
	m["page_faults_handled"] = c.PageFaultsHandled
	m["page_invalidations"] = c.PageInvalidations
	m["page_prefetch"] = c.PagePrefetch
}

// odpState is a NIC's ODP memory: the mapped pages of each MR and the
// pending faults.
type odpState struct {
	pageFault time.Duration
	mrs       map[*MR]*odpMR
	ctr       ODPCounters
}

type odpMR struct {
	mapped  []bool // by page index from MR.Addr
	pending []*odpFault
}

// odpFault is a pending page fault over pages [first, last] of an MR.
type odpFault struct {
	first, last int
	resolved    bool
	waiters     []func()
}

// wait runs fn when f resolves.
func (f *odpFault) wait(fn func()) { f.waiters = append(f.waiters, fn) }

func newODPState(n *NIC, c ODPConfig) *odpState {
	s := &odpState{pageFault: c.PageFault, mrs: map[*MR]*odpMR{}, ctr: ODPCounters{Enabled: true}}
	if s.pageFault <= 0 {
		s.pageFault = time.Duration(n.pers.ODPPageFault)
	}
	return s
}

// register makes mr an ODP MR.
func (s *odpState) register(mr *MR, prefetch bool) {
	pages := (len(mr.Buf) + ODPPageSize - 1) / ODPPageSize
	m := &odpMR{mapped: make([]bool, pages)}
	if prefetch {
		for i := range m.mapped {
			m.mapped[i] = true
		}
		s.ctr.PagePrefetch += uint64(pages)
	}
	s.mrs[mr] = m
}

// odpAccess is a DMA access to bytes [off, off+length) of mr: nil when
// every page is mapped (or ODP is off, or mr is not the NIC's), else the
// fault the access waits for (a new one, or the pending one it overlaps).
func (n *NIC) odpAccess(mr *MR, off, length int) *odpFault {
	s := n.odp
	if s == nil || length <= 0 {
		return nil
	}
	m := s.mrs[mr]
	if m == nil {
		return nil
	}
	first, last := off/ODPPageSize, (off+length-1)/ODPPageSize
	last = min(last, len(m.mapped)-1)
	for _, f := range m.pending {
		if f.first <= last && first <= f.last {
			f.first, f.last = min(f.first, first), max(f.last, last) // it maps this range too
			return f
		}
	}
	missing := false
	for i := first; i <= last; i++ {
		if !m.mapped[i] {
			missing = true
			break
		}
	}
	if !missing {
		return nil
	}
	f := &odpFault{first: first, last: last}
	m.pending = append(m.pending, f)
	s.ctr.PageFaults++
	n.loop.AfterFunc(s.pageFault, func() {
		for i := f.first; i <= f.last; i++ {
			m.mapped[i] = true
		}
		for i, p := range m.pending {
			if p == f {
				m.pending = append(m.pending[:i], m.pending[i+1:]...)
				break
			}
		}
		s.ctr.PageFaultsHandled++
		f.resolved = true
		for _, fn := range f.waiters {
			fn()
		}
		f.waiters = nil
	})
	return f
}

// ---- responder ----

// odpResponderFault handles a request at psn (a frame of rxLen bytes)
// whose DMA faulted on f: an RNR NAK ODPRNRNakDelay later, every request
// dropped until f has resolved and the NAK has left, then execute (nil
// for a WRITE or SEND, discarded).
func (qp *QP) odpResponderFault(f *odpFault, psn roce.PSN, rxLen int, execute func()) {
	qp.rspFault, qp.rspFaultPSN = f, psn
	nakSent := false
	finish := func() {
		if !nakSent || !f.resolved || qp.rspFault != f {
			return
		}
		qp.rspFault = nil
		if qp.state == QPRTS && execute != nil {
			execute()
		}
	}
	qp.odpRNRNak(psn, rxLen, qp.msn, nil, func() {
		nakSent = true
		finish()
	})
	f.wait(finish)
}

// odpRNRNak sends an RNR NAK for psn (the QP's min_rnr_timer)
// ODPRNRNakDelay after a request of rxLen bytes arrived, then calls sent
// (if not nil). With pending set, the NAK is sent only if that fault is
// still the QP's pending one then: a NAK for a re-sent request whose fault
// has meanwhile resolved (and whose READ was answered) would be stale.
func (qp *QP) odpRNRNak(psn roce.PSN, rxLen int, msn uint32, pending *odpFault, sent func()) {
	n := qp.nic
	n.loop.AfterFunc(n.atNIC(n.pers.ODPRNRNakDelay, rxLen, qp.ackLen()), func() {
		if qp.state != QPRTS || pending != nil && qp.rspFault != pending {
			return
		}
		qp.sendAck(roce.RNRSyndrome(qp.attr.MinRNRTimer), psn, msn)
		if sent != nil {
			sent()
		}
	})
}

// ---- requester ----

// requestsHeld reports whether the QP may not send requests now: it
// waits out an RNR NAK or a local page fault on a READ response.
func (qp *QP) requestsHeld() bool { return qp.rnrWaiting || qp.localFault != nil }

// sourceReady reports whether w's source pages are mapped, starting (or
// joining) the fault that maps them if not; the NIC is kicked when it
// resolves.
func (qp *QP) sourceReady(w *wqe) bool {
	if w.srcReady {
		return true
	}
	f := qp.nic.odpAccess(w.wr.Local, w.wr.Offset, w.wr.Length)
	if f == nil {
		w.srcReady = true
		return true
	}
	if !w.srcWaiting {
		w.srcWaiting = true
		f.wait(func() {
			w.srcWaiting = false
			qp.nic.kick()
		})
	}
	return false
}

// readDestFaults reports whether the destination of READ w faults for
// the response at psn; if so, the response is dropped, and so are the
// later ones until the fault resolves, when the QP goes back to psn.
func (qp *QP) readDestFaults(w *wqe, psn roce.PSN) bool {
	f := qp.nic.odpAccess(w.wr.Local, w.wr.Offset, w.wr.Length)
	if f == nil {
		return false
	}
	qp.localFault = f
	// Nothing can be re-sent before the fault resolves: the transport timer
	// waits for the go-back then (onTimer spends no retry while requests
	// are held).
	qp.stopTimer()
	f.wait(func() {
		if qp.localFault != f {
			return
		}
		qp.localFault = nil
		if qp.state != QPRTS {
			return
		}
		if qp.goBackTimer != nil {
			qp.goBackTimer.Stop()
		}
		// The responses from psn on were dropped: one go-back, which an
		// implied NAK for the same PSN must not repeat.
		qp.nakActive, qp.nakPSN = true, psn
		qp.goBack(psn)
	})
	return true
}

// rnrWait is how long the requester waits after an RNR NAK with timer
// code.
func (qp *QP) rnrWait(code uint8) time.Duration {
	d := roce.RNRTimer(code)
	if f := qp.nic.pers.RNRWaitFactor; f > 0 && f != 1 {
		d = time.Duration(float64(d)*f + 0.5)
	}
	return d
}
