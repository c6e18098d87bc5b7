//go:build dpdk && linux

package dumper

/*
#cgo pkg-config: libdpdk
#include <stdlib.h>
#include <string.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_prefetch.h>
#include <rte_memcpy.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <time.h>

// One worker: its queue and its capture ring, a single-producer
// single-consumer ring of slots in Go memory (pinned): the lcore fills
// slots and publishes ctl[0] (head); the Go goroutine that writes the
// worker's spool consumes them and publishes ctl[LUM_TAIL] (tail), a
// cache line away so the two sides do not write the same line. Counters are
// written by the lcore, read atomically by Go.
struct lum_rec { uint32_t orig_len, cap_len; };
#define LUM_TAIL 8 // ctl index of the tail (ringCtl in Go)
struct lum_worker {
	uint8_t *slab; struct lum_rec *recs; uint64_t *ctl;
	uint32_t snap, slots; uint16_t port, queue, mirror_port;
	uint64_t received, dropped, foreign;
	uint64_t loop_ns; // the lcore's CPU time in lum_loop (CLOCK_THREAD_CPUTIME_ID), written when it returns
};

// lum_copy copies n bytes of a frame into a ring slot. The slots are
// cold (the ring is far larger than the cache) and the loop never reads
// them back: on x86, whole 16-byte chunks go out as non-temporal stores,
// which neither read the line first nor evict the loop's working set. The
// caller fences (lum_fence) before it publishes the slots.
static inline void lum_copy(uint8_t *dst, const uint8_t *src, uint32_t n) {
#if defined(__x86_64__)
	if (((uintptr_t)dst & 15) == 0) {
		uint32_t i = 0;
		for (; i + 16 <= n; i += 16)
			_mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
		if (i < n) memcpy(dst + i, src + i, n - i);
		return;
	}
#endif
	rte_memcpy(dst, src, n);
}

// lum_rec_put writes a slot's record, non-temporally on x86 (see
// lum_copy).
static inline void lum_rec_put(struct lum_rec *r, uint32_t orig_len, uint32_t cap_len) {
#if defined(__x86_64__)
	_mm_stream_si64((long long *)r, (long long)((uint64_t)cap_len << 32 | orig_len));
#else
	*r = (struct lum_rec){orig_len, cap_len};
#endif
}

static inline void lum_fence(void) {
#if defined(__x86_64__)
	_mm_sfence();
#endif
}

static uint64_t lum_thread_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static volatile int lum_stop;

// lum_dst_port returns the UDP destination port of an Ethernet (one VLAN
// tag at most) IPv4/IPv6 UDP frame, or -1.
static int lum_dst_port(const uint8_t *p, uint32_t len) {
	uint32_t off = 12;
	if (len < 14) return -1;
	uint16_t et = p[12] << 8 | p[13];
	if (et == 0x8100 && len >= 18) { off = 16; et = p[16] << 8 | p[17]; }
	off += 2;
	if (et == 0x0800) {
		if (len < off + 20 || p[off + 9] != 17 || ((p[off + 6] << 8 | p[off + 7]) & 0x1fff)) return -1;
		off += (p[off] & 0xf) * 4;
	} else if (et == 0x86dd) {
		if (len < off + 40 || p[off + 6] != 17) return -1;
		off += 40;
	} else return -1;
	if (len < off + 4) return -1;
	return p[off + 2] << 8 | p[off + 3];
}

// lum_keep is the dumper's filter (isMirrorCopy in Go): a RoCE mirror copy
// (UDP to mirror_port) or a wrapped mirror copy of a PFC/PAUSE frame
// (EtherType 0x88B5 right after the MACs, at least 32 bytes:
// trace.EtherTypeMACMirror, trace.MACMirrorMinLen). len is what the first
// segment holds.
static int lum_keep(const uint8_t *p, uint32_t len, uint16_t mirror_port) {
	if (len >= 32 && (p[12] << 8 | p[13]) == 0x88b5) return 1;
	return lum_dst_port(p, len) == mirror_port;
}

// lum_loop is an lcore's receive loop: copy up to snap bytes of every
// mirror copy into the next free slot of the ring (counting a drop when
// the ring is full: the writer fell behind), free the burst's mbufs in
// bulk, publish the head and the counters once per burst, and sleep
// briefly when idle. After lum_stop it drains until the queue stays empty
// for ~20 ms, or for 500 ms at most. The next packet's data is prefetched
// while one is copied.
static int lum_loop(void *arg) {
	struct lum_worker *w = arg;
	struct rte_mbuf *pkts[64];
	uint32_t idle = 0, slot = (uint32_t)(w->ctl[0] % w->slots);
	uint64_t head = w->ctl[0], tail = __atomic_load_n(&w->ctl[LUM_TAIL], __ATOMIC_ACQUIRE);
	const uint32_t snap = w->snap, slots = w->slots;
	const uint16_t mport = w->mirror_port;
	uint64_t t0 = lum_thread_ns(), stop_at = 0;
	for (;;) {
		uint16_t nb = rte_eth_rx_burst(w->port, w->queue, pkts, 64);
		if (nb == 0) {
			idle++;
			if (__atomic_load_n(&lum_stop, __ATOMIC_ACQUIRE) && idle > 1000) break;
			if (idle > 64) rte_delay_us_sleep(20);
			continue;
		}
		idle = 0;
		// A source that never runs dry (net_null, or traffic that was not
		// stopped) ends the drain 500 ms after stop.
		if (!stop_at) {
			if (__atomic_load_n(&lum_stop, __ATOMIC_ACQUIRE)) stop_at = rte_get_timer_cycles() + rte_get_timer_hz() / 2;
		} else if (rte_get_timer_cycles() > stop_at) {
			rte_pktmbuf_free_bulk(pkts, nb);
			break;
		}
		uint64_t rcv = 0, drp = 0, frg = 0;
		rte_prefetch0(rte_pktmbuf_mtod(pkts[0], void *));
		for (uint16_t i = 0; i < nb; i++) {
			struct rte_mbuf *m = pkts[i];
			if (i + 1 < nb) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
			uint32_t len = rte_pktmbuf_pkt_len(m), seg = rte_pktmbuf_data_len(m);
			const uint8_t *hd = rte_pktmbuf_mtod(m, const uint8_t *);
			if (!lum_keep(hd, seg, mport)) {
				frg++;
			} else if (head - tail == slots &&
			           head - (tail = __atomic_load_n(&w->ctl[LUM_TAIL], __ATOMIC_ACQUIRE)) == slots) {
				rcv++; drp++;
			} else {
				rcv++;
				uint32_t c = len < snap ? len : snap;
				uint8_t *dst = w->slab + (uint64_t)slot * snap;
				if (c <= seg) {
					lum_copy(dst, hd, c);
				} else {
					const void *src = rte_pktmbuf_read(m, 0, c, dst);
					if (src != dst) memcpy(dst, src, c);
				}
				lum_rec_put(&w->recs[slot], len, c);
				head++;
				if (++slot == slots) slot = 0;
			}
		}
		rte_pktmbuf_free_bulk(pkts, nb);
		lum_fence(); // the slots' non-temporal stores before the head
		__atomic_store_n(&w->ctl[0], head, __ATOMIC_RELEASE);
		if (rcv) __atomic_fetch_add(&w->received, rcv, __ATOMIC_RELAXED);
		if (drp) __atomic_fetch_add(&w->dropped, drp, __ATOMIC_RELAXED);
		if (frg) __atomic_fetch_add(&w->foreign, frg, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&w->loop_ns, lum_thread_ns() - t0, __ATOMIC_RELEASE);
	return 0;
}

static int lum_init(int argc, char **argv) { return rte_eal_init(argc, argv); }

struct lum_tmpl { const uint8_t *p; uint32_t len; };

static void lum_fill(struct rte_mempool *mp, void *arg, void *obj, unsigned idx) {
	const struct lum_tmpl *t = arg;
	struct rte_mbuf *m = obj;
	(void)mp; (void)idx;
	uint32_t off = RTE_PKTMBUF_HEADROOM < m->buf_len ? RTE_PKTMBUF_HEADROOM : m->buf_len;
	if (off + t->len <= m->buf_len) memcpy((uint8_t *)m->buf_addr + off, t->p, t->len);
}

// lum_setup configures the first port with nq RX queues (RSS over IP/UDP
// when the device has it), jumbo-sized mbufs, promiscuous mode. On a
// net_null port (a benchmark source: it hands out pool mbufs as they are),
// every mbuf of the pool first gets a copy of tmpl, a mirror copy, so the
// loop does its whole work on what the vdev delivers.
static int lum_setup(uint16_t nq, uint32_t maxlen, const uint8_t *tmpl, uint32_t tmpl_len, uint16_t *port_out, char *msg, size_t msglen) {
	uint16_t port;
	int found = 0;
	RTE_ETH_FOREACH_DEV(port) { found = 1; break; }
	if (!found) { snprintf(msg, msglen, "no DPDK port (give --vdev=net_af_packet0,iface=IF or a PCI device)"); return -1; }
	*port_out = port;
	struct rte_eth_dev_info info;
	int ret = rte_eth_dev_info_get(port, &info);
	if (ret) { snprintf(msg, msglen, "dev_info_get: %s", rte_strerror(-ret)); return -1; }
	if (info.max_rx_queues < nq) { snprintf(msg, msglen, "port %u has %u RX queues, want %u (af_packet: add qpairs=%u to --vdev)", port, info.max_rx_queues, nq, nq); return -1; }
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof conf);
	uint64_t rss = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
	if (nq > 1 && rss) { conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS; conf.rx_adv_conf.rss_conf.rss_hf = rss; }
	// mbufs hold a whole frame of the largest size the port is configured
	// to deliver (the MTU below is at most maxlen), with room to spare for
	// tags. Not the device's maximum: net_null's is 4 GiB and a NIC's often
	// 64 KiB, mbufs that large spread the loop's data over many times the
	// memory (and the cache).
	uint32_t room = maxlen + 1024 + RTE_PKTMBUF_HEADROOM;
	if (info.max_rx_pktlen && maxlen > info.max_rx_pktlen) maxlen = info.max_rx_pktlen;
	uint32_t mtu = maxlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
	if (info.max_mtu && mtu > info.max_mtu) mtu = info.max_mtu;
	conf.rxmode.mtu = mtu;
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	ret = rte_eth_dev_configure(port, nq, 0, &conf);
	if (ret) { snprintf(msg, msglen, "dev_configure: %s", rte_strerror(-ret)); return -1; }
	uint16_t nrx = 2048, ntx = 0;
	rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	if (room > UINT16_MAX) room = UINT16_MAX;
	struct rte_mempool *mp = rte_pktmbuf_pool_create("lumina_rx", nq * (nrx + 1024) - 1, 256, 0, room, rte_socket_id());
	if (!mp) { snprintf(msg, msglen, "mbuf pool: %s (raise -m)", rte_strerror(rte_errno)); return -1; }
	if (info.driver_name && strcmp(info.driver_name, "net_null") == 0) {
		struct lum_tmpl t = {tmpl, tmpl_len};
		rte_mempool_obj_iter(mp, lum_fill, &t);
	}
	for (uint16_t q = 0; q < nq; q++) {
		ret = rte_eth_rx_queue_setup(port, q, nrx, rte_eth_dev_socket_id(port), NULL, mp);
		if (ret) { snprintf(msg, msglen, "rx_queue_setup %u: %s", q, rte_strerror(-ret)); return -1; }
	}
	rte_eth_promiscuous_enable(port);
	ret = rte_eth_dev_start(port);
	if (ret) { snprintf(msg, msglen, "dev_start: %s", rte_strerror(-ret)); return -1; }
	rte_eth_stats_reset(port);
	return 0;
}

// lum_launch starts workers 1..n-1 on the worker lcores; worker 0 runs on
// the main lcore (the caller's thread) through lum_run_main.
static int lum_launch(struct lum_worker *w, int n) {
	int i = 1;
	unsigned lc;
	__atomic_store_n(&lum_stop, 0, __ATOMIC_RELEASE);
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (i >= n) break;
		int ret = rte_eal_remote_launch(lum_loop, &w[i], lc);
		if (ret) return ret;
		i++;
	}
	return i == n ? 0 : -ENODEV;
}

static void lum_run_main(struct lum_worker *w) { lum_loop(w); }
static void lum_signal_stop(void) { __atomic_store_n(&lum_stop, 1, __ATOMIC_RELEASE); }
static void lum_wait(void) { rte_eal_mp_wait_lcore(); }

static int lum_is_af_packet(uint16_t port) {
	struct rte_eth_dev_info info;
	return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name && strcmp(info.driver_name, "net_af_packet") == 0;
}

static void lum_finish(uint16_t port, uint64_t *imissed, uint64_t *nombuf, uint64_t *ierrors, uint64_t *ipackets) {
	struct rte_eth_stats st;
	if (rte_eth_stats_get(port, &st) == 0) { *imissed = st.imissed; *nombuf = st.rx_nombuf; *ierrors = st.ierrors; *ipackets = st.ipackets; }
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
}

static uint64_t lum_load(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// DPDKAvailable reports whether this binary was built with the dpdk
// backend.
const DPDKAvailable = true

// ealUsed: EAL can be initialized once per process.
var ealUsed atomic.Bool

// dpdkBackend runs EAL on one locked OS thread (the main lcore, which
// also runs worker 0) and workers 1..n-1 on EAL worker lcores.
type dpdkBackend struct {
	cfg     *Config
	workers []*worker
	rings   []*ring
	ws      *C.struct_lum_worker  // C array of len(workers)
	last    []C.struct_lum_worker // counters at the last sync
	pin     runtime.Pinner
	drained sync.WaitGroup // the rings' drain goroutines
	lcores  chan struct{}  // closed when the lcores have stopped
	port    C.uint16_t
	started chan error
	done    chan struct{}
	doneErr error
	kd      uint64
	pollWG  sync.WaitGroup
	pollEnd chan struct{}
}

func newDPDK(cfg *Config) backend { return &dpdkBackend{cfg: cfg} }

// ealArgs adds lcores and the file prefix unless given.
func ealArgs(cfg *Config) []string {
	args := append([]string{"lumina"}, cfg.EALArgs...)
	has := func(names ...string) bool {
		for _, a := range cfg.EALArgs {
			for _, n := range names {
				if a == n || strings.HasPrefix(a, n+"=") || (len(n) == 2 && strings.HasPrefix(a, n)) {
					return true
				}
			}
		}
		return false
	}
	if !has("-l", "--lcores", "-c") {
		args = append(args, "-l", fmt.Sprintf("0-%d", cfg.Workers-1))
	}
	if !has("--file-prefix", "--in-memory") {
		args = append(args, "--file-prefix="+defaultFilePrefix())
	}
	return args
}

// defaultFilePrefix is the EAL file prefix the dumper chooses: one per
// process, so that dumpers in several processes do not collide.
func defaultFilePrefix() string { return fmt.Sprintf("lumina-%d", os.Getpid()) }

func (d *dpdkBackend) start(ctx context.Context, workers []*worker) error {
	if !ealUsed.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: DPDK EAL runs once per process", ErrState)
	}
	d.workers = workers
	n := len(workers)
	d.ws = (*C.struct_lum_worker)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_lum_worker{}))))
	d.last = make([]C.struct_lum_worker, n)
	ws := unsafe.Slice(d.ws, n)
	d.lcores = make(chan struct{})
	for i, w := range workers {
		r := newRing(d.cfg.BlockSize*d.cfg.BlockCount, d.cfg.SnapLen)
		d.rings = append(d.rings, r)
		d.pin.Pin(&r.slab[0])
		d.pin.Pin(&r.recs[0])
		d.pin.Pin(r.ctl)
		ws[i] = C.struct_lum_worker{
			slab: (*C.uint8_t)(unsafe.Pointer(&r.slab[0])), recs: (*C.struct_lum_rec)(unsafe.Pointer(&r.recs[0])),
			ctl:  (*C.uint64_t)(unsafe.Pointer(r.ctl)),
			snap: C.uint32_t(r.snap), slots: C.uint32_t(r.slots), queue: C.uint16_t(i), mirror_port: C.uint16_t(d.cfg.MirrorPort),
		}
		d.drained.Add(1)
		go func() {
			defer d.drained.Done()
			r.drain(w, d.lcores)
		}()
	}
	d.started = make(chan error, 1)
	d.done = make(chan struct{})
	go d.mainLcore(ealArgs(d.cfg), n)
	select {
	case err := <-d.started:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		C.lum_signal_stop()
		return ctx.Err()
	}
	d.pollEnd = make(chan struct{})
	d.pollWG.Add(1)
	go d.publish()
	return nil
}

// mainLcore is the EAL main thread: init, port setup, launch, run worker
// 0 until stop, wait for the other lcores, read stats, stop the port. The
// OS thread stays locked (EAL pinned it) and exits with the goroutine.
func (d *dpdkBackend) mainLcore(args []string, n int) {
	runtime.LockOSThread()
	defer close(d.done)
	// rte_eal_init reorders and overwrites argv: free from a copy.
	strs := make([]*C.char, len(args))
	for i, a := range args {
		strs[i] = C.CString(a)
	}
	defer func() {
		for _, p := range strs {
			C.free(unsafe.Pointer(p))
		}
	}()
	argv := (**C.char)(C.calloc(C.size_t(len(strs)+1), C.size_t(unsafe.Sizeof(strs[0]))))
	defer C.free(unsafe.Pointer(argv))
	copy(unsafe.Slice(argv, len(strs)), strs)
	if ret := C.lum_init(C.int(len(strs)), argv); ret < 0 {
		d.started <- fmt.Errorf("rte_eal_init(%s): %s", strings.Join(args[1:], " "), C.GoString(C.rte_strerror(C.rte_errno)))
		return
	}
	if int(C.rte_lcore_count()) < n {
		d.started <- fmt.Errorf("EAL has %d lcores, want %d (one per worker)", C.rte_lcore_count(), n)
		return
	}
	var msg [256]C.char
	tmpl := nullTemplate(d.cfg.MirrorPort)
	ctmpl := C.CBytes(tmpl)
	defer C.free(ctmpl)
	if C.lum_setup(C.uint16_t(n), C.uint32_t(MaxSnapLen+32), (*C.uint8_t)(ctmpl), C.uint32_t(len(tmpl)), &d.port, &msg[0], C.size_t(len(msg))) != 0 {
		d.started <- errors.New(C.GoString(&msg[0]))
		return
	}
	if ret := C.lum_launch(d.ws, C.int(n)); ret != 0 {
		C.lum_signal_stop()
		C.lum_wait()
		d.started <- fmt.Errorf("launching lcores: %d", ret)
		return
	}
	// net_af_packet (DPDK 22.11) does not report what its kernel ring
	// dropped (imissed stays 0): count it as the frames the interface
	// received that the port never delivered.
	iface := ""
	if C.lum_is_af_packet(d.port) != 0 {
		iface = afPacketIface(args[1:])
	}
	rx0, rxOK := ifaceRxPackets(iface)
	d.started <- nil
	C.lum_run_main(d.ws)
	C.lum_wait()
	var imissed, nombuf, ierrors, ipackets C.uint64_t
	C.lum_finish(d.port, &imissed, &nombuf, &ierrors, &ipackets)
	d.kd = uint64(imissed) + uint64(nombuf)
	if rx1, ok := ifaceRxPackets(iface); ok && rxOK && imissed == 0 && rx1-rx0 > uint64(ipackets) {
		d.kd += rx1 - rx0 - uint64(ipackets)
	}
}

// publish adds what the lcores counted since the last sync to the workers'
// counters, for Live.
func (d *dpdkBackend) publish() {
	defer d.pollWG.Done()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		d.sync()
		select {
		case <-d.pollEnd:
			return
		case <-t.C:
		}
	}
}

func (d *dpdkBackend) sync() {
	for i, w := range unsafe.Slice(d.ws, len(d.workers)) {
		c, l := &d.workers[i].c, &d.last[i]
		rcv, drp, frg := C.lum_load(&w.received), C.lum_load(&w.dropped), C.lum_load(&w.foreign)
		c.received.Add(uint64(rcv - l.received))
		c.dropped.Add(uint64(drp - l.dropped))
		c.foreign.Add(uint64(frg - l.foreign))
		l.received, l.dropped, l.foreign = rcv, drp, frg
	}
}

// nullTemplate is the frame a net_null port delivers: copy 1 of a stream
// of 130-byte mirror copies to port.
func nullTemplate(port uint16) []byte {
	s, err := NewMirrorStream(130, port)
	if err != nil {
		return nil
	}
	return s.Frame(nil, 1)
}

// loopStats sums the lcores' loop counters; valid after stop.
func (d *dpdkBackend) loopStats() LoopStats {
	var l LoopStats
	if d.ws != nil {
		for _, w := range unsafe.Slice(d.ws, len(d.workers)) {
			l.CPU += time.Duration(C.lum_load(&w.loop_ns))
			l.Received += uint64(C.lum_load(&w.received))
			l.RingFull += uint64(C.lum_load(&w.dropped))
		}
	}
	return l
}

func (d *dpdkBackend) stop() (uint64, []uint64, error) {
	C.lum_signal_stop()
	<-d.done
	close(d.pollEnd)
	d.pollWG.Wait()
	d.sync()
	d.stopDrains()
	return d.kd, nil, d.doneErr
}

// stopDrains lets the drain goroutines write what the rings still hold
// and waits for them; the lcores must have stopped.
func (d *dpdkBackend) stopDrains() {
	if d.lcores != nil {
		close(d.lcores)
		d.lcores = nil
	}
	d.drained.Wait()
}

func (d *dpdkBackend) close() error {
	if d.done != nil {
		C.lum_signal_stop()
		<-d.done
	}
	d.stopDrains()
	if args := ealArgs(d.cfg); slices.Contains(args, "--file-prefix="+defaultFilePrefix()) {
		// The EAL runs once per process and is not cleaned up: its runtime
		// files (3.3 MB) would stay behind for every dumper process.
		os.RemoveAll(filepath.Join(ealRuntimeDir(), defaultFilePrefix()))
	}
	d.pin.Unpin()
	if d.ws != nil {
		C.free(unsafe.Pointer(d.ws))
		d.ws = nil
	}
	return nil
}
