// Package verbs is the traffic generator's RNIC backend for real hardware:
// a generator.Device over libibverbs (rdma-core), so the generator and the
// orchestrator drive a ConnectX or E810 exactly as they drive the software
// RNIC (generator/softrnic).
//
// Build: the libibverbs part is cgo behind the verbs build tag (Debian:
// apt-get install libibverbs-dev; go build -tags verbs). Without the tag
// Open returns ErrNotBuilt and everything else in the package (GID
// selection, status mapping, attribute defaults) still works, so the
// package compiles everywhere.
//
// # Concepts
//
//   - Device selection: Config.Device, else the device whose GID table
//     lists Config.IfName, else the first under /sys/class/infiniband.
//   - Addresses and GIDs: each address of the config's ip-list must have a
//     "RoCE v2" GID on the port (sysfs gid_attrs/types); IPs() returns them
//     in that order and a QP's LocalIP picks the source GID index. Without
//     an ip-list, every IPv4 RoCE v2 GID in index order (the public tool).
//   - One PD and one CQ per device, shared by all QPs (the public tool).
//     A goroutine polls the CQ and Posts batches of completions onto the
//     Loop, where they are translated (wr_id → the generator's WR ID, the
//     raw ibv_wc_status → generator.Status, see MapStatus) and handed to
//     the completion handler with TimeNs = Loop.Now().
//   - RC QPs go to INIT at NewQP (pkey 0, remote READ/WRITE) and to RTR and
//     RTS at Connect, with the generator's attributes and the public
//     tool's defaults: timeout 14, retry_cnt 7, rnr_retry 7, min_rnr_timer
//     12, MTU 1024, hop_limit 1, a GRH with the peer's IPv4-mapped GID.
//     The initial PSN is drawn from a PCG seeded with Config.Seed.
//   - Memory: RegMR copies the caller's buffer into page-aligned anonymous
//     memory outside the Go heap (mmap), registers that, and returns it as
//     MR.Buf; MR.Addr is its virtual address. Use MR.Buf afterwards, not
//     the slice passed in (the generator does).
//   - ODP (Config.ODP; Fukuoka et al., Analyzing Performance Pitfalls of
//     On-Demand Paging of InfiniBand): Open checks ibv_query_device_ex's
//     odp_caps (IBV_ODP_SUPPORT, and RC SEND, RECV, WRITE, READ) and fails
//     with ErrNoODP naming the device and what it lacks; every MR is then
//     registered with IBV_ACCESS_ON_DEMAND, and with Config.ODPPrefetch
//     mapped for the NIC by ibv_advise_mr (PREFETCH_WRITE, FLUSH) before
//     RegMR returns. CounterMap adds the device's ODP MR statistics
//     (nic.Host.ReadMRCounters: mlx5's page_faults, page_faults_handled,
//     page_invalidations, page_prefetch).
//   - libibverbs values: access flags, ODP capability bits, advise_mr's
//     advice and flag and the modify_qp masks come from the headers
//     (headerABI); the pure-Go code computes with them (mrAccess, rtrMask,
//     rtsMask, checkODP, prefetchReq), so it is tested without a device.
//
// # Concurrency
//
// As generator.Device requires, every method but Close runs on the Loop
// (through generator.Exec / PostAndWait on a sim.RealLoop). The polling
// goroutine touches only the CQ and Loop.Post. Close stops the poller and
// frees everything; call it after the last device call has returned.
//
// # Pitfalls
//
//   - ConnectAttr.RemoteMAC is not used: for RoCE the kernel resolves the
//     peer's MAC from its IP (the neighbour table), so the peer must be
//     reachable (the orchestrator's ping mesh fills the ARP cache).
//   - TrafficClass is the whole IP TOS byte, ECN bits included (the
//     generator's default is ECT(0), 0x02). The public tool passes
//     DSCP<<2 and lets the NIC set ECT; mlx5 firmware sets ECT itself on
//     priorities with DCQCN enabled.
//   - The generator's responder posts one RECV per message up front; RECVs
//     beyond the receive queue wait in a per-QP backlog and are posted as
//     receive completions free room. Sends beyond the send queue or the CQ
//     fail with generator.ErrQueueFull.
//   - RegMR and NewQP cannot return errors (generator.Device): on failure
//     the MR is unregistered (keys 0) and the QP has QPN 0; posting on or
//     connecting them returns the original error, and Err reports the
//     first one.
//   - Error completions carry only wr_id, status and qp_num; their kind
//     comes from the posted WR. Statuses the generator has no name for
//     map to the nearest one (MapStatus).
//   - ODP faults are the NIC's: RegMR's copy touches every page, so the
//     CPU's page tables are populated, but an ODP MR's pages are still
//     unmapped in the NIC until its first access (or the prefetch).
//   - Tests that need a device skip with "no RDMA device:
//     /sys/class/infiniband is empty". Soft-RoCE (rdma_rxe over a veth)
//     works as a device where the kernel has CONFIG_RDMA_RXE.
package verbs
