// Package sim is lumina's in-process testbed: a virtual clock, an event
// loop, and point-to-point links between ports, in the manner of
// tailscale's natlab. The software RoCEv2 NIC and the software switch are
// written against two small interfaces defined here, Loop and Port, so the
// same component code runs on a deterministic virtual clock (the sim
// testbed) and in real time over veth/AF_PACKET (the netns testbed).
//
// # Concepts
//
// Loop is time plus serialized execution. A component never calls time.Now
// or starts goroutines; it asks its Loop for Now, schedules work with
// AfterFunc (cancellable through the returned Timer) and Post, and does all
// its work inside callbacks the Loop runs one at a time. It therefore needs
// no locks. There are two Loops:
//
//   - EventLoop runs on virtual time: a discrete-event scheduler whose clock
//     jumps from one event to the next. Events run in order of (due time,
//     scheduling order), so ties run first-scheduled first. Run, RunUntil,
//     RunFor and Step drive it from the caller's goroutine; nothing happens
//     between calls. A microsecond of simulated 100 Gb/s traffic costs what
//     its events cost, not a microsecond.
//   - RealLoop runs on wall-clock time: one goroutine executes posted
//     callbacks in order; AfterFunc uses time.AfterFunc to post onto it.
//     Now is the time since NewRealLoop, from the monotonic clock.
//
// Port is one end of a link as a component sees it: Send a frame, receive
// frames through a callback, and a Name. A NIC port and a switch port are
// Ports; so is a veth/AF_PACKET socket in the real-time testbed.
//
// Network, on an EventLoop, creates links. NewLink returns the link's two
// Endpoints, a and b; each implements Port. A link is full duplex: each
// direction (AtoB for frames sent on a, BtoA for frames sent on b) has its
// own transmit queue and wire, configured by LinkConfig (bandwidth,
// propagation delay, queue bound, MTU, hook), whose zero value is a
// 100 Gb/s link with 500 ns of delay.
//
// # Timing model of a link
//
// Each direction transmits one frame at a time, first in, first out. A
// frame of n bytes starts when the previous one has finished (or at Send,
// if the wire is idle), occupies the wire for
//
//	ser = ceil(n * 8 * 1e9 / BandwidthBps) ns
//
// and is delivered to the other end's receiver at start + ser + Delay.
// There is no inter-frame gap, preamble or FCS: n is len(frame). Frames
// are dropped and counted (LinkStats) when they are longer than the MTU,
// when the bytes queued plus the frame on the wire would exceed QueueBytes
// (both checked at Send), when the Hook returns Drop (at transmission
// start; a dropped frame takes no wire time), and when they arrive at an
// endpoint that has no receiver.
//
// Frames are cloned at Send into buffers from the Network's pool; the
// Hook modifies that private copy, taps record it, and the receiver sees
// it. The buffer goes back to the pool when the receiver returns, so
// steady-state forwarding allocates nothing (the tests check this).
//
// Network.Tap records every frame a link puts on the wire, both
// directions, into a pcap file whose timestamps are the virtual times of
// transmission start (epoch 0 written as the Unix epoch). Network.Close
// flushes the taps.
//
// # Determinism rules
//
// A simulation is repeatable if the code under test follows three rules:
//
//   - No goroutines in sim components: all work runs in Loop callbacks.
//     (EventLoop.Post may be called from other goroutines, but then when
//     the callback runs depends on the Go scheduler.)
//   - No time.Now, time.Sleep or time.After: ask the Loop.
//   - Randomness comes from a generator seeded explicitly (math/rand/v2
//     with a recorded seed), never from the global source or map order.
//
// Under these rules two runs produce identical event orders, including
// ties, and identical traces; TestDeterminism checks it.
//
// # Pitfalls
//
//   - A received frame is valid only during the receive callback: its
//     buffer is reused afterwards. Copy it (bytes.Clone or append) to keep
//     it. Passing it to Send is fine, since Send copies.
//   - The Hook runs when a frame starts transmission, not when it is sent:
//     a frame queued behind others meets the hook later, at a virtual time
//     the hook can read from the loop. On an idle link transmission starts
//     inside Send, so the hook and taps run before Send returns. The hook
//     must not call Send.
//   - Endpoints and Networks are not safe for concurrent use. Drive them
//     from loop callbacks, or from the goroutine that drives the EventLoop
//     between calls to Run.
//   - RealLoop callbacks must not block: a blocked callback stalls every
//     timer and frame on the loop. Hand blocking work to another goroutine
//     and Post the result back.
//   - Virtual time does not wait for real goroutines: if the EventLoop's
//     queue empties, Run returns even if another goroutine is about to
//     Post.
//   - EventLoop.AfterFunc allocates one event per call (amortized by slabs
//     of 64), because the event doubles as the Timer and cannot be reused.
//     Post, and the links' own scheduling, reuse events and do not allocate.
package sim
