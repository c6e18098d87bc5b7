//go:build verbs && linux && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include "lumina_verbs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/nic"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// Device is an RDMA device port opened with Open: a generator.Device.
//
// Concurrency: every method but Close must run on the Loop; the fields
// below the poller's are touched only there. The poller goroutine uses
// cq, loop and stop.
type Device struct {
	cfg  Config
	plan devicePlan
	loop sim.Loop
	caps devCaps
	abi  ibvABI

	ctx *C.struct_ibv_context
	pd  *C.struct_ibv_pd
	cq  *C.struct_ibv_cq

	stop       atomic.Bool
	pollerDone chan struct{}
	closeOnce  sync.Once

	cqDepth, maxSend, maxRecv int
	gidIdx                    []int
	psn                       *psnSource
	tr                        tracker
	qps                       map[uint32]*qp
	allQPs                    []*qp
	mrs                       map[*generator.MR]*mrEntry
	onComp                    func(generator.Completion)
	err                       error // first RegMR/NewQP failure
	pollErr                   atomic.Value
}

type mrEntry struct {
	mr  *C.struct_ibv_mr
	mem []byte // the mmap'd region (page multiple)
}

var _ generator.Device = (*Device)(nil)

// Open opens the RDMA device cfg selects, checks that the port is an
// active Ethernet port, allocates the PD and the CQ and starts polling.
func Open(cfg Config) (*Device, error) {
	if cfg.Loop == nil {
		return nil, fmt.Errorf("%w: no Loop", ErrConfig)
	}
	p, err := plan(cfg)
	if err != nil {
		return nil, err
	}
	d := &Device{cfg: cfg, plan: p, loop: cfg.Loop, abi: headerABI(), psn: newPSNSource(cfg.Seed), qps: map[uint32]*qp{},
		mrs: map[*generator.MR]*mrEntry{}, pollerDone: make(chan struct{})}
	for _, g := range p.GIDs {
		d.gidIdx = append(d.gidIdx, g.Index)
	}
	name := C.CString(p.Name)
	defer C.free(unsafe.Pointer(name))
	ctx, errno := C.lv_open(name)
	if ctx == nil {
		return nil, fmt.Errorf("%w: ibv_open_device %s: %v", ErrNoDevice, p.Name, errnoOr(errno, syscall.ENODEV))
	}
	d.ctx = ctx
	fail := func(err error) (*Device, error) {
		d.free()
		return nil, err
	}
	var caps C.struct_lv_caps
	if rc := C.lv_query(ctx, C.uint8_t(p.Port), &caps); rc != 0 {
		return fail(fmt.Errorf("verbs: querying %s port %d: %w", p.Name, p.Port, syscall.Errno(rc)))
	}
	d.caps = devCaps{MaxQPWR: int(caps.max_qp_wr), MaxCQE: int(caps.max_cqe), MaxQPRdAtom: int(caps.max_qp_rd_atom),
		MaxQPInitRdAtom: int(caps.max_qp_init_rd_atom), ActiveMTU: int(caps.active_mtu)}
	if caps.link_layer != C.IBV_LINK_LAYER_ETHERNET {
		return fail(fmt.Errorf("%w: %s port %d is not Ethernet (not RoCE)", ErrPort, p.Name, p.Port))
	}
	if caps.state != C.IBV_PORT_ACTIVE {
		return fail(fmt.Errorf("%w: %s port %d is not active (state %d; is the link up?)", ErrPort, p.Name, p.Port, int(caps.state)))
	}
	if cfg.ODP {
		var general C.uint64_t
		var rc C.uint32_t
		if ret := C.lv_query_odp(ctx, &general, &rc); ret != 0 {
			return fail(fmt.Errorf("verbs: ibv_query_device_ex %s: %w", p.Name, syscall.Errno(ret)))
		}
		if err := checkODP(p.Name, d.abi, odpCaps{General: uint64(general), RC: uint32(rc)}); err != nil {
			return fail(err)
		}
	}
	d.maxSend, d.maxRecv, d.cqDepth = queueSizes(cfg, d.caps)
	if d.pd, errno = C.ibv_alloc_pd(ctx); d.pd == nil {
		return fail(fmt.Errorf("verbs: ibv_alloc_pd: %v", errnoOr(errno, syscall.ENOMEM)))
	}
	if d.cq, errno = C.ibv_create_cq(ctx, C.int(d.cqDepth), nil, nil, 0); d.cq == nil {
		return fail(fmt.Errorf("verbs: ibv_create_cq(%d): %v", d.cqDepth, errnoOr(errno, syscall.ENOMEM)))
	}
	go d.poll()
	return d, nil
}

// queueSizes applies the Config defaults against the device limits.
func queueSizes(cfg Config, c devCaps) (send, recv, cq int) {
	def := 4096
	if c.MaxQPWR > 0 {
		def = min(def, c.MaxQPWR/4)
	}
	send, recv, cq = cfg.MaxSendWR, cfg.MaxRecvWR, cfg.CQDepth
	if send <= 0 {
		send = def
	}
	if recv <= 0 {
		recv = def
	}
	if cq <= 0 {
		cq = 65536
		if c.MaxCQE > 0 {
			cq = min(cq, c.MaxCQE)
		}
	}
	return send, recv, cq
}

func errnoOr(err error, def syscall.Errno) error {
	if err == nil {
		return def
	}
	return err
}

// poll runs until Close: it drains the CQ and posts each batch onto the
// Loop.
func (d *Device) poll() {
	defer close(d.pollerDone)
	var wcs [C.LV_MAX_POLL]C.struct_lv_wc
	for !d.stop.Load() {
		n := int(C.lv_poll_cq(d.cq, C.LV_MAX_POLL, &wcs[0]))
		if n < 0 {
			d.pollErr.CompareAndSwap(nil, fmt.Errorf("verbs: ibv_poll_cq: %d", n))
			time.Sleep(time.Millisecond)
			continue
		}
		if n == 0 {
			if d.cfg.PollIdle > 0 {
				time.Sleep(d.cfg.PollIdle)
			} else {
				runtime.Gosched()
			}
			continue
		}
		batch := make([]rawWC, n)
		for i := range batch {
			w := &wcs[i]
			batch[i] = rawWC{WRID: uint64(w.wr_id), Status: uint32(w.status), Opcode: uint32(w.opcode), VendorErr: uint32(w.vendor_err),
				ByteLen: uint32(w.byte_len), Imm: uint32(w.imm_data), QPN: uint32(w.qp_num), Flags: uint32(w.wc_flags)}
		}
		d.loop.Post(func() { d.deliver(batch) })
	}
}

// deliver runs on the Loop.
func (d *Device) deliver(batch []rawWC) {
	for _, w := range batch {
		p, known := d.tr.take(w.WRID)
		c := completionOf(w, p, known)
		c.TimeNs = d.loop.Now()
		q := d.qps[p.qpn]
		if q != nil && known {
			if w.Status != wcSuccess {
				q.state = generator.QPError
			}
			if p.recv {
				q.recvPosted--
			} else {
				q.sendOut--
			}
		}
		if d.onComp != nil {
			d.onComp(c)
		}
		if q != nil && known && p.recv {
			q.drainBacklog()
		}
	}
}

// Name returns the verbs device name.
func (d *Device) Name() string { return d.plan.Name }

// MAC returns the port's interface MAC.
func (d *Device) MAC() [6]byte { return d.plan.MAC }

// IPs returns the device's addresses, one per selected GID.
func (d *Device) IPs() []netip.Addr { return d.plan.IPs }

// SetCompletionHandler sets the function completions are delivered to, on
// the Loop.
func (d *Device) SetCompletionHandler(fn func(generator.Completion)) { d.onComp = fn }

// Err returns the first RegMR or NewQP failure, or a CQ polling failure.
func (d *Device) Err() error {
	if d.err != nil {
		return d.err
	}
	if e, ok := d.pollErr.Load().(error); ok {
		return e
	}
	return nil
}

// CounterMap reads the port's hw_counters and counters (and the
// interface's ethtool statistics as "ethtool.<name>") from sysfs; see
// package nic. With Config.ODP it adds the device's ODP MR statistics
// (page_faults, page_faults_handled, page_invalidations, page_prefetch…,
// summed over its MRs: nic.Host.ReadMRCounters). Unreadable counters are
// left out.
func (d *Device) CounterMap() map[string]uint64 {
	h := nic.Host{FS: nic.OSFS{Root: d.cfg.Root}}
	m, _ := h.ReadCounters(nic.Device{IfName: d.plan.NetDev, IBDev: d.plan.Name, Port: d.plan.Port})
	if d.cfg.ODP {
		mr, _ := h.ReadMRCounters(d.plan.Name)
		for k, v := range mr {
			m[k] = v
		}
	}
	return m
}

// RegMR registers a copy of buf (see the package doc: use the returned
// MR's Buf). With Config.ODP the MR is ODP memory and, with
// Config.ODPPrefetch, mapped for the NIC before RegMR returns; a failed
// prefetch fails the registration.
func (d *Device) RegMR(buf []byte) *generator.MR {
	n := max(len(buf), 1)
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, (n+page-1)/page*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		d.setErr(fmt.Errorf("verbs: RegMR: mmap %d bytes: %w", n, err))
		return &generator.MR{Buf: buf}
	}
	copy(mem, buf)
	access := mrAccess(d.abi, d.cfg.ODP)
	mr, errno := C.lv_reg_mr(d.pd, unsafe.Pointer(&mem[0]), C.size_t(n), C.uint(access))
	if mr == nil {
		unix.Munmap(mem)
		d.setErr(fmt.Errorf("verbs: ibv_reg_mr %d bytes (access %#x): %v", n, access, errnoOr(errno, syscall.ENOMEM)))
		return &generator.MR{Buf: buf}
	}
	if d.cfg.ODP && d.cfg.ODPPrefetch {
		if err := d.advise(prefetchReq(d.abi, uint64(uintptr(unsafe.Pointer(&mem[0]))), n, uint32(mr.lkey))); err != nil {
			C.ibv_dereg_mr(mr)
			unix.Munmap(mem)
			d.setErr(fmt.Errorf("verbs: RegMR: prefetching the ODP MR (%d bytes) on %s: %w", n, d.plan.Name, err))
			return &generator.MR{Buf: buf}
		}
	}
	g := &generator.MR{Buf: mem[:len(buf):len(buf)], Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))), LKey: uint32(mr.lkey), RKey: uint32(mr.rkey)}
	d.mrs[g] = &mrEntry{mr: mr, mem: mem}
	return g
}

// advise runs one ibv_advise_mr request.
func (d *Device) advise(r adviseReq) error {
	if len(r.SGEs) == 0 {
		return nil
	}
	sg := make([]C.struct_ibv_sge, len(r.SGEs))
	for i, e := range r.SGEs {
		sg[i] = C.struct_ibv_sge{addr: C.uint64_t(e.Addr), length: C.uint32_t(e.Length), lkey: C.uint32_t(e.LKey)}
	}
	if rc := C.lv_advise_mr(d.pd, C.uint32_t(r.Advice), C.uint32_t(r.Flags), &sg[0], C.uint32_t(len(sg))); rc != 0 {
		return fmt.Errorf("ibv_advise_mr: %w", syscall.Errno(rc))
	}
	return nil
}

func (d *Device) setErr(err error) {
	if d.err == nil {
		d.err = err
	}
}

// qp is an RC QP of a Device. Used on the Loop only.
type qp struct {
	d          *Device
	q          *C.struct_ibv_qp
	qpn        uint32
	psn        roce.PSN
	local      netip.Addr
	state      generator.QPState
	sendOut    int
	recvPosted int
	backlog    backlog
	err        error // creation failure
}

var _ generator.QP = (*qp)(nil)

// NewQP creates an RC QP in INIT with a random initial PSN.
func (d *Device) NewQP() generator.QP {
	q := &qp{d: d, psn: roce.PSN(d.psn.next()), local: d.plan.IPs[0]}
	cq, errno := C.lv_create_qp(d.pd, d.cq, C.int(d.maxSend), C.int(d.maxRecv))
	if cq == nil {
		q.err = fmt.Errorf("verbs: ibv_create_qp: %v", errnoOr(errno, syscall.ENOMEM))
		d.setErr(q.err)
		return q
	}
	q.q, q.qpn = cq, uint32(cq.qp_num)
	if rc := C.lv_modify_init(cq, C.uint8_t(d.plan.Port)); rc != 0 {
		q.err = fmt.Errorf("verbs: QP %#x to INIT: %w", q.qpn, syscall.Errno(rc))
		d.setErr(q.err)
	}
	d.qps[q.qpn] = q
	d.allQPs = append(d.allQPs, q)
	return q
}

func (q *qp) QPN() uint32         { return q.qpn }
func (q *qp) PSN() roce.PSN       { return q.psn }
func (q *qp) LocalIP() netip.Addr { return q.local }

// Connect moves the QP to RTR and RTS (see resolveAttrs for defaults).
func (q *qp) Connect(a generator.ConnectAttr) error {
	if q.err != nil {
		return q.err
	}
	if q.state != generator.QPReset {
		return fmt.Errorf("%w: QP %#x already connected", generator.ErrBadConnect, q.qpn)
	}
	r, err := resolveAttrs(a, q.d.plan.IPs, q.d.gidIdx, q.d.caps, q.psn)
	if err != nil {
		return err
	}
	rc := C.lv_modify_rtr(q.q, C.int(r.MTU), C.uint32_t(r.DestQPN), C.uint32_t(r.RQPSN), C.int(r.MaxDestRdAtomic),
		C.int(r.MinRNRTimer), (*C.uint8_t)(unsafe.Pointer(&r.DGID[0])), C.int(r.SGIDIndex), C.int(r.HopLimit),
		C.int(r.TrafficClass), C.uint8_t(q.d.plan.Port), C.int(rtrMask(q.d.abi)))
	if rc != 0 {
		return fmt.Errorf("verbs: QP %#x to RTR (dest %v QPN %#x): %w", q.qpn, a.RemoteIP, r.DestQPN, syscall.Errno(rc))
	}
	rc = C.lv_modify_rts(q.q, C.int(r.Timeout), C.int(r.RetryCnt), C.int(r.RNRRetry), C.uint32_t(r.SQPSN), C.int(r.MaxRdAtomic),
		C.int(rtsMask(q.d.abi)))
	if rc != 0 {
		return fmt.Errorf("verbs: QP %#x to RTS: %w", q.qpn, syscall.Errno(rc))
	}
	q.local, q.state = r.LocalIP, generator.QPRTS
	return nil
}

func (d *Device) lookupMR(mr *generator.MR) (*mrEntry, error) {
	e := d.mrs[mr]
	if e == nil {
		if d.err != nil {
			return nil, fmt.Errorf("%w: MR not registered (%v)", generator.ErrBadWR, d.err)
		}
		return nil, fmt.Errorf("%w: MR not registered on %s", generator.ErrBadWR, d.plan.Name)
	}
	return e, nil
}

// PostSend posts a signaled WRITE, READ or SEND (with immediate).
func (q *qp) PostSend(wr generator.SendWR) error {
	if q.err != nil {
		return q.err
	}
	if q.state != generator.QPRTS {
		return generator.ErrQPState
	}
	if err := checkSendWR(wr); err != nil {
		return err
	}
	e, err := q.d.lookupMR(wr.Local)
	if err != nil {
		return err
	}
	if q.sendOut >= q.d.maxSend || q.d.tr.len() >= q.d.cqDepth {
		return generator.ErrQueueFull
	}
	op, comp, _ := wrOpcode(wr.Op)
	id := q.d.tr.add(pending{userID: wr.ID, qpn: q.qpn, comp: comp, length: wr.Length})
	laddr := wr.Local.Addr + uint64(wr.Offset)
	rc := C.lv_post_send(q.q, C.uint64_t(id), C.int(op), C.uint64_t(laddr), C.uint32_t(wr.Length), e.mr.lkey,
		C.uint64_t(wr.RemoteAddr), C.uint32_t(wr.RKey), C.uint32_t(wr.Imm))
	if rc != 0 {
		q.d.tr.take(id)
		if syscall.Errno(rc) == syscall.ENOMEM {
			return generator.ErrQueueFull
		}
		return fmt.Errorf("verbs: ibv_post_send on QP %#x: %w", q.qpn, syscall.Errno(rc))
	}
	q.sendOut++
	return nil
}

// PostRecv posts a RECV, or queues it in the backlog when the receive
// queue (or the CQ) is full.
func (q *qp) PostRecv(wr generator.RecvWR) error {
	if q.err != nil {
		return q.err
	}
	if q.state == generator.QPError {
		return generator.ErrQPState
	}
	if err := checkRecvWR(wr); err != nil {
		return err
	}
	if _, err := q.d.lookupMR(wr.MR); err != nil {
		return err
	}
	if q.backlog.len() > 0 || q.recvPosted >= q.d.maxRecv || q.d.tr.len() >= q.d.cqDepth {
		q.backlog.push(wr)
		return nil
	}
	return q.postRecv(wr)
}

func (q *qp) postRecv(wr generator.RecvWR) error {
	e, err := q.d.lookupMR(wr.MR)
	if err != nil {
		return err
	}
	id := q.d.tr.add(pending{userID: wr.ID, qpn: q.qpn, recv: true, comp: generator.CompRecv, length: wr.Length})
	rc := C.lv_post_recv(q.q, C.uint64_t(id), C.uint64_t(wr.MR.Addr+uint64(wr.Offset)), C.uint32_t(wr.Length), e.mr.lkey)
	if rc != 0 {
		q.d.tr.take(id)
		return fmt.Errorf("verbs: ibv_post_recv on QP %#x: %w", q.qpn, syscall.Errno(rc))
	}
	q.recvPosted++
	return nil
}

// drainBacklog posts backlogged RECVs while there is room. A RECV that
// cannot be posted completes with WR_FLUSH_ERR, as the NIC would.
func (q *qp) drainBacklog() {
	for q.backlog.len() > 0 && q.recvPosted < q.d.maxRecv && q.d.tr.len() < q.d.cqDepth {
		wr, _ := q.backlog.pop()
		if q.state == generator.QPError || q.postRecv(wr) != nil {
			if q.d.onComp != nil {
				q.d.onComp(generator.Completion{QPN: q.qpn, WRID: wr.ID, Status: generator.StatusWRFlushErr, Op: generator.CompRecv,
					TimeNs: q.d.loop.Now()})
			}
		}
	}
}

// Close stops polling and frees the QPs, MRs, CQ, PD and the device
// context. Call it after the last device call returned.
func (d *Device) Close() error {
	var err error
	d.closeOnce.Do(func() {
		d.stop.Store(true)
		<-d.pollerDone
		err = d.free()
	})
	return err
}

func (d *Device) free() error {
	var errs []error
	for _, q := range d.allQPs {
		if q.q != nil {
			if rc := C.ibv_destroy_qp(q.q); rc != 0 {
				errs = append(errs, fmt.Errorf("ibv_destroy_qp %#x: %w", q.qpn, syscall.Errno(rc)))
			}
			q.q, q.err, q.state = nil, ErrClosed, generator.QPError
		}
	}
	for g, e := range d.mrs {
		if rc := C.ibv_dereg_mr(e.mr); rc != 0 {
			errs = append(errs, fmt.Errorf("ibv_dereg_mr: %w", syscall.Errno(rc)))
		}
		unix.Munmap(e.mem)
		delete(d.mrs, g)
	}
	if d.cq != nil {
		if rc := C.ibv_destroy_cq(d.cq); rc != 0 {
			errs = append(errs, fmt.Errorf("ibv_destroy_cq: %w", syscall.Errno(rc)))
		}
		d.cq = nil
	}
	if d.pd != nil {
		if rc := C.ibv_dealloc_pd(d.pd); rc != 0 {
			errs = append(errs, fmt.Errorf("ibv_dealloc_pd: %w", syscall.Errno(rc)))
		}
		d.pd = nil
	}
	if d.ctx != nil {
		if rc := C.ibv_close_device(d.ctx); rc != 0 {
			errs = append(errs, fmt.Errorf("ibv_close_device: %w", syscall.Errno(rc)))
		}
		d.ctx = nil
	}
	if len(errs) > 0 {
		return fmt.Errorf("verbs: closing %s: %w", d.plan.Name, errors.Join(errs...))
	}
	return nil
}

// headerABI returns the libibverbs values the pure-Go code computes with,
// from the headers.
func headerABI() ibvABI {
	return ibvABI{
		AccessLocalWrite: C.IBV_ACCESS_LOCAL_WRITE, AccessRemoteWrite: C.IBV_ACCESS_REMOTE_WRITE,
		AccessRemoteRead: C.IBV_ACCESS_REMOTE_READ, AccessOnDemand: C.IBV_ACCESS_ON_DEMAND,
		ODPSupport: C.IBV_ODP_SUPPORT,
		ODPSend:    C.IBV_ODP_SUPPORT_SEND, ODPRecv: C.IBV_ODP_SUPPORT_RECV, ODPWrite: C.IBV_ODP_SUPPORT_WRITE, ODPRead: C.IBV_ODP_SUPPORT_READ,
		AdvisePrefetchWrite: C.IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, AdviseFlagFlush: C.IBV_ADVISE_MR_FLAG_FLUSH,
		QPState: C.IBV_QP_STATE, QPAV: C.IBV_QP_AV, QPPathMTU: C.IBV_QP_PATH_MTU, QPDestQPN: C.IBV_QP_DEST_QPN,
		QPRQPSN: C.IBV_QP_RQ_PSN, QPMaxDestRdAtomic: C.IBV_QP_MAX_DEST_RD_ATOMIC, QPMinRNRTimer: C.IBV_QP_MIN_RNR_TIMER,
		QPTimeout: C.IBV_QP_TIMEOUT, QPRetryCnt: C.IBV_QP_RETRY_CNT, QPRNRRetry: C.IBV_QP_RNR_RETRY, QPSQPSN: C.IBV_QP_SQ_PSN,
		QPMaxQPRdAtomic: C.IBV_QP_MAX_QP_RD_ATOMIC,
	}
}

// cConstants returns the libibverbs values the pure-Go code hard-codes,
// for the verbs-build test that compares them.
func cConstants() map[string][2]int {
	return map[string][2]int{
		"IBV_WC_SUCCESS":             {wcSuccess, int(C.IBV_WC_SUCCESS)},
		"IBV_WC_LOC_LEN_ERR":         {wcLocLenErr, int(C.IBV_WC_LOC_LEN_ERR)},
		"IBV_WC_LOC_PROT_ERR":        {wcLocProtErr, int(C.IBV_WC_LOC_PROT_ERR)},
		"IBV_WC_WR_FLUSH_ERR":        {wcWRFlushErr, int(C.IBV_WC_WR_FLUSH_ERR)},
		"IBV_WC_BAD_RESP_ERR":        {wcBadRespErr, int(C.IBV_WC_BAD_RESP_ERR)},
		"IBV_WC_REM_INV_REQ_ERR":     {wcRemInvReqErr, int(C.IBV_WC_REM_INV_REQ_ERR)},
		"IBV_WC_REM_ACCESS_ERR":      {wcRemAccessErr, int(C.IBV_WC_REM_ACCESS_ERR)},
		"IBV_WC_REM_OP_ERR":          {wcRemOpErr, int(C.IBV_WC_REM_OP_ERR)},
		"IBV_WC_RETRY_EXC_ERR":       {wcRetryExcErr, int(C.IBV_WC_RETRY_EXC_ERR)},
		"IBV_WC_RNR_RETRY_EXC_ERR":   {wcRNRRetryExcErr, int(C.IBV_WC_RNR_RETRY_EXC_ERR)},
		"IBV_WC_REM_INV_RD_REQ_ERR":  {wcRemInvRdReqErr, int(C.IBV_WC_REM_INV_RD_REQ_ERR)},
		"IBV_WC_REM_ABORT_ERR":       {wcRemAbortErr, int(C.IBV_WC_REM_ABORT_ERR)},
		"IBV_WC_RESP_TIMEOUT_ERR":    {wcRespTimeoutErr, int(C.IBV_WC_RESP_TIMEOUT_ERR)},
		"IBV_WC_GENERAL_ERR":         {wcGeneralErr, int(C.IBV_WC_GENERAL_ERR)},
		"IBV_WC_TM_RNDV_INCOMPLETE":  {wcTMRndvIncomplte, int(C.IBV_WC_TM_RNDV_INCOMPLETE)},
		"IBV_WC_SEND":                {wcOpSend, int(C.IBV_WC_SEND)},
		"IBV_WC_RDMA_WRITE":          {wcOpRDMAWrite, int(C.IBV_WC_RDMA_WRITE)},
		"IBV_WC_RDMA_READ":           {wcOpRDMARead, int(C.IBV_WC_RDMA_READ)},
		"IBV_WC_RECV":                {wcOpRecv, int(C.IBV_WC_RECV)},
		"IBV_WC_RECV_RDMA_WITH_IMM":  {wcOpRecvRDMAImm, int(C.IBV_WC_RECV_RDMA_WITH_IMM)},
		"IBV_WC_WITH_IMM":            {wcFlagWithImm, int(C.IBV_WC_WITH_IMM)},
		"IBV_WR_RDMA_WRITE":          {wrOpRDMAWrite, int(C.IBV_WR_RDMA_WRITE)},
		"IBV_WR_RDMA_WRITE_WITH_IMM": {wrOpRDMAWriteImm, int(C.IBV_WR_RDMA_WRITE_WITH_IMM)},
		"IBV_WR_SEND":                {wrOpSend, int(C.IBV_WR_SEND)},
		"IBV_WR_SEND_WITH_IMM":       {wrOpSendImm, int(C.IBV_WR_SEND_WITH_IMM)},
		"IBV_WR_RDMA_READ":           {wrOpRDMARead, int(C.IBV_WR_RDMA_READ)},
		"IBV_MTU_256":                {1, int(C.IBV_MTU_256)},
		"IBV_MTU_4096":               {5, int(C.IBV_MTU_4096)},
		"sizeof(struct lv_wc)":       {int(unsafe.Sizeof(rawWC{})), int(C.sizeof_struct_lv_wc)},
	}
}
