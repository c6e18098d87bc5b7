// Package dumper is lumina's traffic dumper: it captures the mirror copies
// the injector sends to a dumper host into preallocated memory while a test
// runs, and on stop restores their UDP ports and writes one nanosecond pcap,
// in mirror sequence order, atomically. `lumina dump` runs one; the
// orchestrator's Stop RPC will wrap Dumper.Stop.
//
// # Concepts
//
// A Dumper has Config.Workers workers. Each owns one buffer, allocated and
// touched by New: a slab of Capacity*SnapLen bytes and a fixed array of
// records (original length, captured length, capture time). Capturing
// copies at most SnapLen bytes of a frame into the next slot; nothing is
// allocated, parsed beyond the port check, or written to disk per packet.
// When a buffer is full the worker keeps draining its ring or queue and
// counts BufferDropped: a full buffer never blocks the kernel, never hangs,
// never leaks a DPDK mbuf.
//
// Backends (Config.Backend), one interface (backend):
//
//   - afpacket: one AF_PACKET socket per worker with a TPACKET_V3 ring
//     (BlockCount blocks of BlockSize bytes), all in one PACKET_FANOUT group
//     (lb: per-packet round robin, the paper's design; hash; cpu). A
//     classic BPF filter keeps the mirror copies (below) and returns
//     SnapLen, so the kernel copies only SnapLen bytes into the ring. Kernel
//     drops (ring full) are PACKET_STATISTICS tp_drops, read at stop.
//   - dpdk (build tag dpdk, cgo, pkg-config libdpdk, Debian's DPDK 22.11):
//     EAL from Config.EALArgs, one RX queue per worker lcore (RSS over
//     IP/UDP when the port has it), a small C loop that copies SnapLen
//     bytes into the same Go buffers (pinned with runtime.Pinner) and frees
//     every mbuf. Kernel drops are imissed + rx_nombuf. Without a NIC:
//     --no-huge -m 256 --no-pci --vdev=net_af_packet0,iface=IF,qpairs=N.
//   - sim: frames from a sim.Port (Config.SimPort), spread round robin.
//
// Mirror copies are of two kinds, and every backend keeps both: RoCE
// copies, IPv4/IPv6 UDP to MirrorPort, and wrapped copies of the PFC and
// PAUSE frames the switch received or sent (EtherType 0x88B5,
// trace.IsMACMirror; roce.AppendMACMirror builds them). They share one
// sequence, so the pcap holds both in sequence order. Anything else is
// Foreign.
//
// Stop drains (afpacket waits three block timeouts so partly filled blocks
// are retired; dpdk polls until the queues stay empty for ~20 ms), then
// writes: the workers' records are merged by mirror sequence number (a
// k-way merge; a worker whose records are out of order is sorted by an
// index first), each RoCE copy's UDP ports are restored in place with
// roce.RestoreMirror (MACs and TTL keep the metadata; a wrapped copy is
// written as it came, wrapper included), and the pcap record's timestamp
// is the switch timestamp in the first six bytes, not the capture time. Frames that are not mirror copies are counted as
// Foreign and not written. The file is a temp file in the same directory,
// fsynced and renamed, so a reader never sees half of it.
//
// Report.Counters gives the integrity check's DumperCounters: Captured is
// what the file holds, wrapped copies included, Dropped is KernelDropped +
// BufferDropped.
//
// # Pitfalls
//
//   - Memory: Capacity*SnapLen per worker is allocated up front (default
//     128 MiB per worker) and, by the real-time backends, touched; size
//     Capacity for the test, not for the line rate. Setup CPU grows with
//     it. The sim backend leaves pages to be mapped as frames fill them.
//   - A wrapped PFC copy is 78 bytes (18-byte wrapper, 60-byte frame): the
//     minimum SnapLen (64) cuts its pad, never its PFC fields.
//   - A frame that arrives after Stop began is not captured; stop the
//     traffic first. Foreign frames cost no buffer space (they are filtered
//     in the kernel or in the C loop) but do cost ring space.
//   - afpacket: the fanout group joins with a drop-all filter, and the
//     mirror filter replaces it once every socket is in the group, so
//     nothing is captured twice while Start runs. The kernel strips VLAN
//     tags into metadata on most NICs; the filter then sees untagged
//     frames, as written. hash fanout spreads only if the injector's
//     random source port varies; lb is exact round robin.
//   - dpdk: EAL can be initialized once per process (a second dpdk Dumper
//     fails with ErrState). --no-huge implies legacy memory, which
//     --in-memory rejects: use --file-prefix (added automatically). The
//     dumper adds -l 0-(Workers-1) unless lcores are given; worker 0 runs
//     on the main lcore, which is a locked Go thread. net_af_packet needs
//     qpairs=Workers, and for jumbo frames framesz ≤ 10240 (the mbufs hold
//     9216+1024 bytes). Live counters are refreshed every 20 ms.
//   - The public Lumina dumper wrote lcore by lcore in arrival order, with a
//     uint16 index (a hang past 65535 packets per lcore), leaked mbufs once
//     full and had no jumbo frames; none of that applies here.
//   - Sequence numbers are 48-bit (lumina's injector). A 31-bit public-tool
//     trace is written in arrival order per worker around its wrap.
//
// # Concurrency
//
// Start, Stop and Live may be called from any goroutine; mu serializes
// Start and Stop, and Live reads atomic counters. Each buffer is written by
// one worker until Stop has waited for it. Blaster and MirrorStream are not
// safe for concurrent use.
package dumper
