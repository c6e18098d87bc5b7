// Package injector is lumina's software switch target: the pipeline of
// p4src/lumina.p4 in Go over sim.Ports (sim links, or AF_PACKET sockets in
// real time), served through the standard P4Runtime gRPC API for lumina's
// P4Info. It is what users run when they have no Tofino, and what the
// controlplane package programs, unchanged, in every testbed.
//
// # Pipeline (lumina.p4, Ingress then Egress)
//
//   - proxy ARP for the hosts' addresses; L2 forwarding by destination MAC
//     (no entry: drop);
//   - for every RoCEv2 packet: rx_roce[ingress port]++; if (ingress port,
//     destination QPN) is a tracked connection and the packet is a data
//     packet (not ACK/ATOMIC_ACK/CNP), update its ITER, then look up
//     event_table[(port, QPN, PSN, ITER)]: drop (event 1), mark_ecn (CE,
//     event 2) or corrupt (IP identification ^= 0xFFFF, IP checksum kept
//     valid, so the ICRC fails: event 3);
//   - mirror every RoCE packet to the clone session of the next weighted
//     round robin slot, with a 40-bit sequence number counting mirrored
//     copies and the packet's ingress time as the ns timestamp (see
//     Timestamps); the copy is the packet as forwarded (CE mark and
//     corruption included) and egress rewrites it with roce.ApplyMirror
//     (event in TTL bits 0..2, sequence in source MAC, timestamp in
//     destination MAC, UDP ports, and the queue depth, below).
//
// # Logical switches (a fabric on one switch)
//
// As Hawkeye emulates a fabric on one Tofino, the ports of one Switch can
// be partitioned into up to MaxSwitches logical switches, a link between
// two of them being a link between two of its ports (a sim link, or a
// veth pair with both ends in the switch's namespace): one P4Runtime
// server, one clock. Ingress.port_switch names the logical switch of each
// ingress port (no entry: switch 0). Forwarding looks up
// Ingress.fabric_forward (switch, source MAC, destination MAC) first, then
// l2_forward. The mirror sequence, the WRR slot and the stamp raising of
// Timestamps are per logical switch (registers indexed by switch id); a
// RoCE copy names its ingress port's switch and a wrapped PFC copy its
// port's (roce.MirrorMeta.Switch), so each switch's copies form one
// sequence from 1 whose stamps never decrease. PFC, the watchdog
// (PFCConfig.WatchdogPorts) and RED (Egress.ecn_red_port) are per port, on
// switch-to-switch ports as on host ports: a pause a switch sends on a
// link port reaches its peer port and pauses that queue. A Switch with no
// port_switch entry is the one switch of before, byte for byte.
//
// # Timestamps
//
// A mirror timestamp is on the Loop's clock. For a port that is a
// sim.TimedPort (an AF_PACKET port on the netns or remote testbed) it is
// the packet's arrival time as the port reports it (the kernel's receive
// timestamp), not the time the pipeline got round to the packet: a
// RealLoop under CPU load runs milliseconds late, and a timestamp taken
// then would shorten the intervals the analyzers measure. For other ports
// (sim links) it is the Loop's time at processing, which on virtual time
// is the arrival.
//
// Packets of different ports can be processed in another order than they
// arrived, so each timestamp is max(arrival, previous mirror timestamp):
// timestamps never decrease in mirror-sequence order, as the integrity
// check requires. The price is that a timestamp can be later than its
// packet's arrival; Switch.Timing reports the largest such clamp (the
// switch's timestamp uncertainty) and how late the pipeline ran (also over
// the Injector service's Timing RPC).
//
// ITER: expected_psn[c] holds the connection's next PSN and iter_reg[c] its
// round. Message scope (public tool): a FIRST/ONLY/READ-request/READ-response
// FIRST|ONLY packet with PSN == expected restarts at 1; any other PSN !=
// expected increments. Connection scope (paper §3.4): a PSN not after the
// previous one increments. Both then set expected = PSN + 1 modulo 2^24 —
// before the event lookup, so a dropped packet still advances it.
//
// # PFC
//
// With Config.PFC or Config.ECN set (both nil: off, and the switch behaves
// exactly as without the model) the switch models a lossless fabric's switch. It is
// the job of the Tofino's traffic manager and MACs, not of lumina.p4, so the
// P4Info does not change; the model is configured by PFCConfig only.
//
//   - Forwarded frames wait in per (egress port, priority) queues; each
//     port starts a frame when the previous one's serialization at its
//     PFCConfig.PortBps is over (ceil(bytes×8e9/bps) ns, as sim links), so
//     with PortBps equal to the link speed the backlog is in the switch,
//     not the link, and with no pause the hosts see the same times as with
//     PFC off. The next frame is the oldest one of an unpaused priority; PFC
//     frames the switch sends go first and are never paused, but never
//     pre-empt a frame being sent. Priority: VLAN PCP, else the IPv4 DSCP
//     map, else 0.
//   - A PFC frame received on port p pauses p's queues of the enabled
//     lossless priorities for quanta × 512 bit times at p's speed from its
//     arrival (a new value replaces the timer; 0 resumes now); PFC for a
//     lossy priority is counted but not honoured (IEEE 802.1Q Clause 36), PAUSE
//     pauses every priority. Received MAC Control frames are consumed,
//     never forwarded.
//   - Ingress accounting: bytes received on (port, lossless priority) and
//     still queued. Above XOFFBytes the switch sends that port an XOFF
//     (0xFFFF quanta) and repeats it every half of its duration; at or
//     below XONBytes an XON (0 quanta). Beyond XOFFBytes + HeadroomBytes a
//     lossless frame is dropped (LosslessDrops). Lossy queues drop beyond
//     LossyQueueBytes. Bytes leave the accounting when their frame starts
//     transmission (or is flushed).
//   - Mirroring: every PFC/PAUSE frame received and every PFC frame sent
//     is mirrored, wrapped (roce.AppendMACMirror: port, sent flag; event
//     roce.EventPause for injected pauses), with the same WRR, clone
//     sessions, sequence register and timestamp rule as RoCE copies, and
//     counted in mirrored (not in rx_roce/tx_roce). A received frame is
//     stamped at its arrival, a sent one when it starts transmission.
//   - Watchdog (PFCWatchdog, SONiC pfcwd action drop; Guo et al., SIGCOMM 2016, §4.3): a
//     lossless egress queue paused without interruption for Detection
//     (empty or not, as SONiC) is declared stormed at exactly pause start +
//     Detection: its queue is flushed, new lossless frames to and from the
//     port on that priority are dropped (WatchdogDrops), its pauses are
//     counted and mirrored but ignored; exactly Restoration after the last
//     pause frame for that priority it is restored. Events: Switch.PFCLog.
//   - Pause injection: Switch.SchedulePauses.
//   - Queue depth in the mirror (admit): every copy of a forwarded RoCE
//     packet carries the bytes of the (egress port, priority) queue the
//     packet joins, measured before it joins (Tofino: enq_qdepth), as a
//     roce.DepthCode (MirrorMeta.QDepth): a held packet's when it is
//     released, a duplicate's copy after the original joined; 0 for a
//     dropped packet and for every copy when the model is off.
//   - ECN by queue depth (ecn.go): RED as lumina.p4's egress runs it, from
//     the installed Egress.ecn_red entries (DSCP → set_red(kmin_cells,
//     kmax_cells, rand_mask), which the control plane writes from
//     switch.ecn) on the queue's depth in cells (⌈len/Config.CellBytes⌉
//     per queued frame, as enq_qdepth) for ECT RoCE packets, marked CE
//     before the copy is made, with event none. The entries are the only
//     source of the thresholds; without the queue model (Config.PFC nil)
//     nothing is marked. A PFCConfig with no lossless priority is the
//     queue model without PFC (the orchestrator's choice for switch.ecn
//     and for more than two hosts).
//
// Bounds: mirror copies and ARP replies bypass the queues (a dumper
// port's link queues them); there is no shared buffer pool (each (port,
// priority) has its own thresholds); Stats.Forwarded and tx_roce count a
// queued frame when it starts transmission; timers are exact (no polling
// interval), so detection and restoration are not delayed by up to a poll
// as on SONiC. While an XOFF is asserted its refresh timer keeps an
// EventLoop busy: run it with RunUntil. Frames the model drops are counted
// in PFCCounters, not in Stats.Dropped.
//
// # P4Runtime
//
// Server implements P4Runtime 1.4.0-rc.5 (APIVersion; fields the rc.5
// protos lack, such as Replica.port, are UNIMPLEMENTED). Arbitration is for
// the default role only (another role is NOT_FOUND): the primary is the
// live stream with the highest election ID; when it leaves the live stream
// with the next highest ID becomes primary (an ID that left is forgotten,
// except as election_id_past in a no-primary notice); an unset election ID
// is a backup that never becomes primary; backups get ALREADY_EXISTS in
// their arbitration update and PERMISSION_DENIED on Write and
// SetForwardingPipelineConfig. A write is accepted only with the primary's
// election ID and on the gRPC connection of the primary's open stream
// (install ServerOption on the gRPC server; without it every write is
// refused). SetForwardingPipelineConfig: the P4Info must describe the objects
// the Go pipeline implements — names and bit widths; IDs are mapped;
// VERIFY_AND_SAVE keeps the state until COMMIT. It also implements
// Write (INSERT/MODIFY/DELETE of table entries, default entries, indirect
// counters, registers and clone sessions; CONTINUE_ON_ERROR applies what it
// can, ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC all or nothing; failures are
// UNKNOWN with one p4.v1.Error per update as the spec says) and Read (one
// error per bad entity, the good ones still answered; table
// ID 0, empty match, missing index and session 0 are wildcards; values come
// back canonical; Read copies entry pointers and counter/register cells
// under the switch lock and sorts, encodes and streams without it, so the
// packet pipeline never waits on a reader, however large the read or slow
// the client). Packet I/O is not supported.
//
// Pitfalls: exact match only; the sequence register counts mirrored copies,
// so a WRR slot without a clone session makes copies (and sequence numbers)
// disappear; all state is lost on SetForwardingPipelineConfig.
package injector
