// Package integrity decides whether a merged mirror trace is complete: the
// Lumina paper's integrity check (§3.6) plus the dumpers' own counters.
// Only a trace that passes may be analyzed; a failed check means the test
// is invalid and should be run again, not that the RNIC misbehaved.
//
// # Inputs
//
// The injector mirrors every RoCE packet at ingress, before its own drops,
// and writes into each copy its switch and mirror sequence number (source
// MAC: a 40-bit number below the switch id, roce.MirrorSeqField),
// its ingress timestamp in ns (destination MAC, 48 bits) and the event
// (IPv4 TTL). It also mirrors the PFC and PAUSE frames it receives from or
// sends to the hosts, as wrapped copies (EtherType 0x88B5,
// trace.IsMACMirror) whose first 12 bytes carry the timestamp and sequence
// number at the same places: one sequence covers both kinds, so a lost
// PFC copy is a gap like a lost RoCE copy. The dumpers' files are merged by sequence number
// (trace.Merge). The check reads the sequence number and timestamp of each
// packet of the merged trace, in order, and compares the trace with the
// Counters collected after the test: the switch's RoCE ingress and mirror
// counters and each dumper's captured and dropped counts.
//
// # Conditions
//
// They are checked in this order, and a Verdict reports the first one that
// fails, precisely (Verdict.Check, Reason, FirstBadIndex); Verdict.Checks
// has the outcome of each, "pass", "fail" or "skipped".
//
//  1. seq: the sequence numbers are consecutive (modulo the counter's
//     wrap, see Options.Seq), each switch's separately: in a fabric every
//     logical switch counts its own copies from 1 (AddSwitch; AddFrame
//     reads the switch from the copy), and a reason then starts with the
//     switch's name (Counters.Switches) or id: "switch tor2: gap: …". A missing number is a packet lost between
//     the switch and the disk: in the mirror path, in a dumper's NIC or
//     kernel, in its buffers. A duplicate or a step backwards means a
//     corrupt dumper file or a broken merge. With Options.ExpectFirstSeq,
//     the first number must be 1, which catches losses at the start.
//  2. timestamp: timestamps never decrease, except where the 48-bit ns
//     counter wraps (about every 78 hours), beyond Options.TimeToleranceNs.
//     A decrease means packets are in the wrong order even though their
//     numbers look right, or the copies were rewritten wrongly; latency
//     analysis would be wrong.
//  3. mirrored: the number of packets equals the number of copies the
//     switch mirrored to the dumpers. Condition 1 cannot see packets lost
//     after the last captured one; this can. With Counters.Switches, each
//     switch's copies in the trace also equal the last sequence number it
//     assigned ("count: trace has 41 copies of switch tor2, its last seq
//     is 42").
//  4. received: the number of packets, less the duplicate copies, equals
//     the number of RoCE packets the switch received from the generators.
//     A difference means the switch did not mirror every packet (a
//     missing mirror session, a packet on a port that is not mirrored).
//     A duplicate event forwards the original, mirrored untagged, and then
//     its copies, each mirrored with event duplicate (roce.EventDuplicate,
//     read from the copy's TTL bits 0..2): the copies are in the trace and in the
//     mirrored count (condition 3) but not in the received count, so the
//     packets tagged duplicate (Stats.Copies) are subtracted here. Any
//     other event counts as a received
//     packet. Delayed and reordered packets are mirrored once, when they
//     leave the switch, and count once. Wrapped PFC/PAUSE copies
//     (Stats.MACCopies) are mirrored but are no RoCE packets: they are
//     subtracted too, whatever their event.
//  5. dumpers: no dumper dropped anything, and each dumper's captured
//     count equals the packets from it in the trace (in total when the
//     trace does not say which dumper each packet came from). This names
//     the dumper to blame, and catches a dumper file that lost packets at
//     its end, or that holds packets of another run.
//
// Conditions 3-5 need counters; a Count that is not Known skips the
// condition, and the Verdict lists it as skipped (Verdict.Skipped). A
// foreign pcap without counters can still be checked for 1 and 2.
//
// An empty trace fails condition 1 with "empty trace" unless
// Options.AllowEmpty; then it passes if the counters are zero (or unknown).
//
// # Reasons
//
// Reasons are stable; scripts may match them. Packets are located by their
// source and index within it ("dumper-2 #517", 0-based) when the sources
// are known (CheckSources, CheckFiles, a Checker with names), otherwise by
// their trace index ("index 1039", 0-based, in merged order).
//
//	empty trace
//	start: first packet has seq 5 (dumper-0 #0), want 1
//	range: seq 0 at trace index 301 (dumper-1 #100) is outside 1..2147483647
//	gap: seq 1041 missing (between dumper-2 #517 and dumper-0 #520)
//	gap: seq 1041..1043 missing (3 packets) (between dumper-2 #517 and dumper-0 #520)
//	duplicate: seq 77 appears twice (dumper-1 #38 and dumper-1 #39)
//	out of order: seq 500 after seq 612 at trace index 610 (dumper-1 #305)
//	timestamp: trace index 88 (seq 89, dumper-0 #44) at 1200 ns is before index 87 at 1350 ns
//	count: trace has 999 packets, switch mirrored 1000
//	count: trace has 1000 packets, switch received 1002 RoCE packets
//	count: trace has 1003 packets less 3 duplicate copies, switch received 1002 RoCE packets
//	count: trace has 1012 packets less 10 PFC/PAUSE copies, switch received 1000 RoCE packets
//	count: trace has 1015 packets less 3 duplicate copies and 10 PFC/PAUSE copies, switch received 1000 RoCE packets
//	dumper-1 dropped 3 packets (kernel drops or buffer overflow)
//	dumper-0 dropped 40 packets (a worker wrote its num-pkts (Capacity) and dropped the rest: …)
//	dumper-1 captured 500 packets, trace has 499 from it
//	dumpers captured 1000 packets in total, trace has 999
//	dumpers: counters for 2 dumpers, trace has 3 sources
//	switch tor2: gap: seq 2 missing (between dumper-0 #1 and dumper-1 #4)
//	switch 1: duplicate: seq 3 appears twice (dumper-0 #3 and dumper-1 #3)
//	count: trace has 2 copies of switch spine, its last seq is 3
//
// The first received reason is used when the trace holds neither
// duplicate nor wrapped copies; the others name what it holds. Without sources, the parenthesized "(dumper-1 #305)" of "range" and "out
// of order" is left out and "timestamp" reads "(seq 89)". Skipped
// conditions have reasons too ("switch mirrored count unknown", "no dumper
// counters", …), for display only. The verdict's reason is the first
// failed condition's; when a dumper reports drops and another condition
// failed first (a gap, a short count), the dumpers reason follows it after
// "; ", since it is the cause. A dumper's DumperCounters.Cause replaces the
// generic "kernel drops or buffer overflow".
//
// # Use
//
// CheckFiles and CheckSources merge the dumpers' files and check them in
// one pass, with sources known. Check and CheckFile check an already
// merged trace. For anything else, a Checker takes packets one at a time
// (Add, AddFrame, or Observe as trace.Merge's callback, which lets one merge
// both write the merged file and check it) and Finish gives the verdict.
// All of them stream: memory does not grow with the trace, and no
// allocation is made per packet.
//
// # Pitfalls
//
//   - Use the sequence space of the switch that wrote the trace, in both
//     the merge and the check. The public Lumina tool's 31-bit counter goes
//     from 0x7FFFFFFF to 1 (trace.SeqSpaceLumina31); read as 48-bit numbers
//     its wrap is a step backwards, and read with a 2^31-1 mask it is a gap
//     at seq 0. The public tool handles neither.
//   - Serial arithmetic compares numbers less than half the cycle apart;
//     a timestamp that jumps forward by more than 2^47 ns (39 hours) looks
//     like a decrease.
//   - The public tool's wrap check on timestamps compares seconds with a
//     nanosecond constant and never fires, and it allows 50 ns of
//     "hardware deviation". Here the wrap is detected in nanoseconds and
//     the tolerance is 0 unless Options.TimeToleranceNs says otherwise.
//   - Condition 1 stops at the first violation; Verdict.Stats counts all
//     anomalies, relative to the highest number seen so far, so one late
//     packet counts as both a gap and an out-of-order packet.
//   - Counters are taken as exact. The public tool's per-port registers
//     wrap from 0x7FFFFFFF to 1 like its sequence number; convert them
//     before filling Counters.
//   - Dumpers[i] describes the i-th source of the merge, in order.
//
// # Concurrency
//
// A Checker is not safe for concurrent use. The Check functions share
// nothing and may run concurrently on different inputs.
package integrity
