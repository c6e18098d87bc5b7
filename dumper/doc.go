// Package dumper is lumina's traffic dumper: it captures the mirror copies
// the injector sends to a dumper host and writes them to disk while a test
// runs; on stop it makes them one nanosecond pcap, in mirror sequence
// order, atomically. `lumina dump` runs one; the orchestrator's Stop RPC
// wraps Dumper.Stop.
//
// # Concepts
//
// A Dumper has Config.Workers workers. Each owns a spool: a pcap file next
// to OutPath, written through a 4 MiB buffer in whole chunks. The afpacket
// and dpdk backends write with O_DIRECT where the file system allows it
// (Linux): a buffered write(2) would copy
// every byte once more into fresh page-cache pages, which cost more CPU
// than the rest of the capture (the buffer is in a transparent huge page,
// so pinning it for each direct write is cheap too). The sim backend
// writes through the page cache: its virtual clock waits for every write,
// and the page cache returns at memory speed. Per frame a worker
// copies at most SnapLen bytes into the buffer behind a pcap record header,
// restores a RoCE copy's UDP ports there and stamps the record with the
// switch timestamp; nothing is allocated or parsed beyond the port check. Memory
// does not grow with the test: a test may be as long as the disk allows.
// Config.Capacity, if set, caps the frames a worker writes (a disk budget);
// what is beyond it is counted as BufferDropped and Report.Full is set,
// never silently lost. A file that cannot be written (disk full) counts
// the rest as BufferDropped and fails Stop.
//
// Backends (Config.Backend), one interface (backend):
//
//   - afpacket: one AF_PACKET socket per worker with a TPACKET_V3 ring
//     (BlockCount blocks of BlockSize bytes), all in one PACKET_FANOUT group
//     (lb: per-packet round robin, the paper's design; hash; cpu). A
//     classic BPF filter keeps the mirror copies (below) and returns
//     SnapLen, so the kernel copies only SnapLen bytes into the ring. The
//     worker writes each block it is handed straight to its spool and gives
//     the block back: the kernel ring is the bounded buffer between the
//     wire and the disk, and frames that find it full are PACKET_STATISTICS
//     tp_drops, read at stop. The socket is non-blocking and registered
//     with the Go runtime's network poller: a worker waiting for a block
//     parks its goroutine (no OS thread sits in poll(2)), the kernel wakes
//     it when it retires a block, and Stop ends the wait with a read
//     deadline. The CLI runs with at least two Ps (GOMAXPROCS): with one,
//     every direct write of a spool chunk would hand the P to another
//     thread and set sysmon polling.
//   - dpdk (build tag dpdk, cgo, pkg-config libdpdk, Debian's DPDK 22.11):
//     EAL from Config.EALArgs, one RX queue per worker lcore (RSS over
//     IP/UDP when the port has it), a small C loop that copies SnapLen
//     bytes of each mirror copy into a single-producer single-consumer ring
//     of BlockSize*BlockCount bytes in Go memory (pinned with
//     runtime.Pinner) and frees every mbuf; a goroutine per worker drains
//     the ring into the spool. Kernel drops are imissed + rx_nombuf; a full
//     ring (the disk fell behind) is BufferDropped. Without a NIC:
//     --no-huge -m 256 --no-pci --vdev=net_af_packet0,iface=IF,qpairs=N.
//     On net_null (a benchmark source that hands out pool mbufs as they
//     are) the dumper first fills every mbuf with a mirror copy, so the
//     loop does its whole work: `lumina dump --bench` compares the loop's
//     packets per CPU-second there with dpdk-testpmd --forward-mode=rxonly.
//   - sim: frames from a sim.Port (Config.SimPort), spread round robin,
//     written on the sim loop (the virtual clock waits for the disk, so
//     nothing is lost for speed and the result is deterministic).
//
// Mirror copies are of two kinds, and every backend keeps both: RoCE
// copies, IPv4/IPv6 UDP to MirrorPort, and wrapped copies of the PFC and
// PAUSE frames the switch received or sent (EtherType 0x88B5,
// trace.IsMACMirror; roce.AppendMACMirror builds them). They share one
// sequence, so the pcap holds both in sequence order. Anything else is
// Foreign.
//
// Stop drains (afpacket waits three block timeouts so partly filled blocks
// are retired; dpdk polls until the queues stay empty for ~20 ms), flushes
// the spools and makes them OutPath. Arrival order is sequence order in
// the common case (one queue keeps the switch's order): one worker's sorted
// file is renamed into place, with no copy. Otherwise each spool is a list
// of sorted runs (a new run starts where a switch's sequence number goes
// back), and the runs of every worker are merged by trace.Merge (by
// sequence number; by timestamp across switches), at most
// 256 at a time through intermediate files, so memory stays bounded
// however disordered the capture. Frames that are not mirror copies are
// counted as Foreign and not written. The file appears atomically (temp
// file in the same directory, fsync, rename), and no spool is left behind.
//
// Report.Counters gives the integrity check's DumperCounters: Captured is
// what the file holds, wrapped copies included, Dropped is KernelDropped +
// BufferDropped, and Cause says which (a full Capacity, the disk, the
// kernel) and what to change.
//
// # Pitfalls
//
//   - Memory: per worker a 4 MiB write buffer, plus the afpacket or dpdk
//     ring (64 MiB by default, populated at Start).
//   - Direct I/O writes at the disk's pace: beyond the 64 MiB ring there is
//     no page cache to absorb a burst the disk cannot sustain. Size
//     BlockCount (or the DPDK ring) for such bursts. Disk: about
//     SnapLen+16 bytes per frame for the spools; a merge of several
//     workers writes the output once more before the spools are removed.
//   - A wrapped PFC copy is 78 bytes (18-byte wrapper, 60-byte frame): the
//     minimum SnapLen (64) cuts its pad, never its PFC fields.
//   - A frame that arrives after Stop began is not captured; stop the
//     traffic first. Foreign frames cost no disk (they are filtered
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
//     full and had no jumbo frames; none of that applies here. Its loop:
//     burst of 64, per packet a memcpy of min(data_len, snap) bytes into the
//     next of max_pkts preallocated mbufs and a free of the RX mbuf; no
//     filter, no timestamp (read from the MACs at dump time), no disk until
//     SIGTERM. Ours: burst of 64, per packet the mirror filter (lum_keep:
//     IPv4/IPv6 UDP to MirrorPort or EtherType 0x88B5) and a copy of
//     min(pkt_len, snap) bytes into the next slot of a fixed ring in Go
//     memory with non-temporal stores (the slots are cold and never read
//     back by the lcore; their 8-byte records too), the next packet's data
//     prefetched; per burst one bulk free, one fence and one release store
//     of the head, and the counters; the ring's head and tail on separate
//     cache lines. Timestamps are the switch's, taken by the spool from the
//     MACs. The disk is written concurrently by the drain goroutine, so the
//     capture is bounded by the disk, not by preallocated memory. On net_null
//     (2-vCPU VM) it ran at 0.74–0.96 of dpdk-testpmd rxonly's packets per
//     core, 50–65 Mpps: the rest is DRAM write bandwidth, 136 bytes per
//     frame into a ring far larger than the cache (about 7.5 GB/s at
//     55 Mpps, the non-temporal stores are where the loop waits), which
//     testpmd, touching no packet data, does not spend.
//     A source that never runs dry (net_null) ends the stop drain after
//     500 ms.
//   - Sequence numbers are 40-bit, one sequence per logical switch (the
//     copy's sequence field names its switch: roce.MirrorSeqField); runs
//     and the merge compare them per switch in 40-bit serial arithmetic.
//
// # Concurrency
//
// Start, Stop and Live may be called from any goroutine; mu serializes
// Start and Stop, and Live reads atomic counters. Each spool is written by
// one goroutine (its worker, or the drain of its dpdk ring) until Stop has
// waited for it. Blaster and MirrorStream are not safe for concurrent use.
package dumper
