package dumper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/trace"
)

// Report is what a dumper reports when it stops: the numbers the
// orchestrator hands to the integrity check (see Counters; not a run's
// report, orchestrator.Report, nor an analysis, report.Report).
type Report struct {
	// Name is Config.Name.
	Name string `json:"name"`
	// Backend is the backend used.
	Backend string `json:"backend"`
	// Captured is the number of packets written to Path: RoCE and wrapped
	// (PFC/PAUSE) mirror copies.
	Captured uint64 `json:"captured"`
	// KernelDropped counts packets the kernel or NIC dropped before a
	// worker saw them: afpacket PACKET_STATISTICS tp_drops, DPDK imissed +
	// rx_nombuf; sim: copies the switch→dumper link dropped (its queue
	// full, or longer than its MTU).
	KernelDropped uint64 `json:"kernel_dropped"`
	// BufferDropped counts packets a worker received but could not keep:
	// its Capacity was reached (see Full), its file could not be written
	// (disk full; Stop returns the error), or (dpdk) the ring between the
	// lcore and the file was full.
	BufferDropped uint64 `json:"buffer_dropped"`
	// Full is true when a worker reached Capacity and dropped packets for
	// it: the same test would overflow again, so it is not worth retrying
	// with the same configuration.
	Full bool `json:"full,omitempty"`
	// Foreign counts frames that were not mirror copies (neither UDP to
	// MirrorPort nor wrapped copies, EtherType 0x88B5); they are not
	// written and are not losses.
	Foreign uint64 `json:"foreign"`
	// PerWorker has one entry per worker, in worker order.
	PerWorker []WorkerReport `json:"per_worker"`
	// Path is the pcap file written; empty if writing failed.
	Path string `json:"path"`
}

// WorkerReport is one worker's share of a Report.
type WorkerReport struct {
	Worker        int    `json:"worker"`
	Received      uint64 `json:"received"` // frames the worker saw
	Captured      uint64 `json:"captured"` // frames it wrote
	KernelDropped uint64 `json:"kernel_dropped"`
	BufferDropped uint64 `json:"buffer_dropped"`
	Foreign       uint64 `json:"foreign"`
}

// Dropped is KernelDropped + BufferDropped.
func (r Report) Dropped() uint64 { return r.KernelDropped + r.BufferDropped }

// Counters returns the report as the integrity check's dumper counters,
// with the cause of any drops.
func (r Report) Counters() integrity.DumperCounters {
	c := integrity.DumperCounters{Name: r.Name, Captured: integrity.Known(r.Captured), Dropped: integrity.Known(r.Dropped())}
	switch {
	case r.Full:
		c.Cause = "a worker wrote its num-pkts (Capacity) and dropped the rest: raise num-pkts or remove it, and the disk is the limit"
	case r.BufferDropped > 0 && r.KernelDropped > 0:
		c.Cause = "kernel or NIC drops and the disk fell behind: the capture could not keep up; add workers or dumpers, or offer less"
	case r.BufferDropped > 0:
		c.Cause = "its file could not be written fast enough, or not at all (disk full)"
	case r.KernelDropped > 0 && r.Backend == "sim":
		c.Cause = "the switch→dumper link dropped them: a burst of copies overflowed its queue; lower snap-len (the clone session cuts copies to it) or add dumpers"
	case r.KernelDropped > 0:
		c.Cause = "kernel or NIC drops: the capture could not keep up; add workers or dumpers, or offer less"
	}
	return c
}

// Live are counters read while the dumper runs.
type Live struct {
	Received, BufferDropped, Foreign uint64
}

// worker is what a backend's worker i writes to: its spool and its live
// counters.
type worker struct {
	sp *spool
	c  counters
}

// backend is a capture implementation. start launches one worker per
// element of ws; each worker writes only its own spool. stop makes the
// workers drain what the kernel or NIC already holds, waits for them to
// exit and returns the kernel/NIC drop counts (total and, if known, per
// worker). close releases everything (called once, after stop or after a
// failed start).
type backend interface {
	start(ctx context.Context, ws []*worker) error
	stop() (kernelDropped uint64, perWorker []uint64, err error)
	close() error
}

type state uint8

const (
	stateNew state = iota
	stateRunning
	stateStopped
)

// Dumper captures mirror copies to disk while the test runs and makes
// them one pcap on Stop. Start, Stop and Live are safe for concurrent use;
// mu serializes Start and Stop.
type Dumper struct {
	cfg Config
	ws  atomic.Pointer[[]*worker] // the workers once started (Live reads them without mu)

	mu    sync.Mutex // guards state, be and loop
	state state
	be    backend
	loop  LoopStats
}

// New validates cfg. It opens and allocates nothing: Start does.
func New(cfg Config) (*Dumper, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Dumper{cfg: c}, nil
}

// Config returns the configuration with defaults filled in.
func (d *Dumper) Config() Config { return d.cfg }

// Start opens the backend and starts the workers. When it returns nil,
// frames are being captured. ctx bounds the setup only; stop the capture
// with Stop.
func (d *Dumper) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != stateNew {
		return fmt.Errorf("%w: Start called twice", ErrState)
	}
	ws := make([]*worker, d.cfg.Workers)
	for i := range ws {
		sp, err := newSpool(d.cfg.OutPath, i, d.cfg.SnapLen, d.cfg.MirrorPort, uint64(d.cfg.Capacity), d.cfg.Backend != "sim")
		if err != nil {
			for _, w := range ws[:i] {
				w.sp.remove()
			}
			d.state = stateStopped
			return fmt.Errorf("dumper %s: %w", d.cfg.Name, err)
		}
		ws[i] = &worker{sp: sp}
	}
	var be backend
	switch d.cfg.Backend {
	case "afpacket":
		be = newAFPacket(&d.cfg)
	case "dpdk":
		be = newDPDK(&d.cfg)
	case "sim":
		be = newSimBackend(&d.cfg)
	}
	if err := be.start(ctx, ws); err != nil {
		be.close()
		for _, w := range ws {
			w.sp.remove()
		}
		d.state = stateStopped
		return fmt.Errorf("dumper %s: start %s: %w", d.cfg.Name, d.cfg.Backend, err)
	}
	d.be = be
	d.ws.Store(&ws)
	d.state = stateRunning
	return nil
}

// Live returns the counters so far, summed over workers.
func (d *Dumper) Live() Live {
	var l Live
	ws := d.ws.Load()
	if ws == nil {
		return l
	}
	for _, w := range *ws {
		l.Received += w.c.received.Load()
		l.BufferDropped += w.c.dropped.Load()
		l.Foreign += w.c.foreign.Load()
	}
	return l
}

// Stop stops capturing (after draining what the kernel already holds),
// makes the workers' spool files the pcap at OutPath, atomically, and
// reports. The Report is filled even when writing fails (Path is then
// empty). Stop may be called once.
func (d *Dumper) Stop() (Report, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != stateRunning {
		return Report{}, fmt.Errorf("%w: Stop without a running capture", ErrState)
	}
	d.state = stateStopped
	kd, perKD, stopErr := d.be.stop()
	if lc, ok := d.be.(interface{ loopStats() LoopStats }); ok {
		d.loop = lc.loopStats()
	}
	closeErr := d.be.close()
	ws := *d.ws.Load()
	r := Report{Name: d.cfg.Name, Backend: d.cfg.Backend, KernelDropped: kd, PerWorker: make([]WorkerReport, len(ws))}
	spools := make([]*spool, len(ws))
	for i, w := range ws {
		wr := WorkerReport{Worker: i, Received: w.c.received.Load(), BufferDropped: w.c.dropped.Load(),
			Foreign: w.c.foreign.Load(), Captured: w.sp.n}
		if i < len(perKD) {
			wr.KernelDropped = perKD[i]
		}
		r.BufferDropped += wr.BufferDropped
		r.Foreign += wr.Foreign
		r.Captured += wr.Captured
		r.Full = r.Full || w.sp.full
		r.PerWorker[i] = wr
		spools[i] = w.sp
	}
	werr := finish(d.cfg.OutPath, d.cfg.SnapLen, spools)
	if werr == nil {
		r.Path = d.cfg.OutPath
	} else {
		r.Captured = 0
		for i := range r.PerWorker {
			r.PerWorker[i].Captured = 0
		}
	}
	err := errors.Join(stopErr, closeErr, werr)
	if err != nil {
		err = fmt.Errorf("dumper %s: %w", d.cfg.Name, err)
	}
	return r, err
}

// LoopStats describes the dpdk backend's receive loops (the lcores), summed
// over workers.
type LoopStats struct {
	// CPU is the CPU time the lcores spent in their receive loops (their
	// threads' CPU clocks).
	CPU time.Duration
	// Received counts the mirror copies the loops took from the port.
	Received uint64
	// RingFull counts those of them the loops could not copy because the
	// ring to the disk was full (part of BufferDropped).
	RingFull uint64
}

// Loop returns the dpdk backend's LoopStats, known once Stop has
// returned: zero before, and for the other backends. Received per CPU
// second is the loop's rate per core, which lumina dump --bench compares
// with dpdk-testpmd's on the net_null vdev.
func (d *Dumper) Loop() LoopStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loop
}

// isMirrorCopy is the capture filter, as the sim backend applies it (the
// afpacket BPF program, mirrorFilter, and the DPDK C loop, lum_keep, are
// its copies): a RoCE mirror copy (UDP to
// mirrorPort) or a wrapped mirror copy of a PFC/PAUSE frame
// (trace.IsMACMirror).
func isMirrorCopy(frame []byte, mirrorPort uint16) bool {
	if trace.IsMACMirror(frame) {
		return true
	}
	p, ok := mirrorDstPort(frame)
	return ok && p == mirrorPort
}

// mirrorDstPort returns the UDP destination port of an Ethernet (up to two
// VLAN tags) / IPv4 or IPv6 / UDP frame; ok is false for anything else,
// including IPv4 fragments after the first.
func mirrorDstPort(frame []byte) (port uint16, ok bool) {
	off := 12
	for n := 0; ; n++ {
		if len(frame) < off+2 {
			return 0, false
		}
		et := binary.BigEndian.Uint16(frame[off:])
		if (et == 0x8100 || et == 0x88a8) && n < 2 {
			off += 4
			continue
		}
		off += 2
		switch et {
		case 0x0800:
			if len(frame) < off+20 || frame[off]>>4 != 4 || frame[off+9] != 17 ||
				binary.BigEndian.Uint16(frame[off+6:])&0x1fff != 0 {
				return 0, false
			}
			off += int(frame[off]&0x0f) * 4
		case 0x86dd:
			if len(frame) < off+40 || frame[off+6] != 17 {
				return 0, false
			}
			off += 40
		default:
			return 0, false
		}
		if len(frame) < off+4 {
			return 0, false
		}
		return binary.BigEndian.Uint16(frame[off+2:]), true
	}
}
