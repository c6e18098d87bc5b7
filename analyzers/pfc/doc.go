// Package pfc analyzes the PFC (802.1Qbb) frames of a Lumina mirror trace:
// the wrapped mirror copies (roce.ParseMACMirror, EtherType 0x88B5) of every
// PFC/PAUSE frame the switch received from a host (Sent false) or sent to
// one (Sent true), with the switch port, interleaved with the RoCE copies.
//
// A host is tied to its switch port by Meta.SwitchPorts (JSON
// "switch_ports", e.g. {"requester": 1, "responder": 2}); without it ports
// are reported by number and reaction times, violations and stalled flows
// are not measured. A RoCE packet's priority is read from its DSCP with
// Params.PrioDSCPMap (default priority = DSCP >> 3).
//
// Per (port, priority) and direction (received: the host paused the
// switch; sent: the switch paused the host): PFC frames naming the
// priority, XOFF (time > 0) and XON (time 0), total quanta, and pause
// episodes. An episode runs from an XOFF to the XON or to the expiry of
// the last pause (time × 512 bit times at Params.LinkGbps, default 100; a
// new frame replaces the running timer). The pause duration ratio is the
// paused time within the trace over the trace span (first to last packet);
// above 0.1% it is a warning (Collie), never a failure.
//
// Reaction: for an episode the switch sent to a host starting at t (switch
// timestamp of the XOFF, taken when it starts on the wire), the reaction
// time is the time from t to the last RoCE frame of that priority from the
// host that reached the switch during the episode. In a refreshed episode t
// is the oldest XOFF whose quanta had not run out when the frame arrived:
// a host that applied one refresh late (L) may send once the previous
// refresh ran out, which is that refresh's reaction, not one from the
// episode's first pause (measured so, a 400 µs late refresh on netns
// failed a frame "3.9 ms after the pause"). A frame arriving at d
// with d − t beyond the bound B = D(s) (IEEE 802.3 Table 31B-1, roce.PauseReactionBoundNs:
// 394 quanta at 100 Gb/s; an unlisted speed takes the next listed one) +
// the PFC frame's serialization (84 bytes) + Params.RTTNs + the frame's
// own serialization (length + 24 bytes) is a violation: fail when
// d − t − B > U + L, inconclusive when within −W..U + L (U = the timestamp
// uncertainty: how much later than its arrival a frame's stamp may be; W =
// Options.SentUncertaintyNs: how much later than its departure the stamp
// of a pause the switch sent may be, U by default; L = Options.LatenessNs:
// how late a software host on a real clock applied a received pause,
// measured by the run). Held or duplicated copies (events delay, reorder,
// duplicate) are skipped: their timestamps are departures.
//
// Storms: an episode longer than Params.PFCDetectionNs (default 100 ms).
// Watchdog firings are inferred, not observed: switch-storm at the start
// of a received episode + the detection time (the switch turns lossless
// mode off), switch-restore the restoration time (Params.PFCRestorationNs,
// default 200 ms) after the last pause of a stormed port and priority,
// if within the trace; nic when a host's last received episode, refreshed
// at least once, ends by expiry without XON (it stopped pausing for good
// with its buffer still full: its storm watchdog). Received episodes are
// labelled storm, slow-receiver (ended by the host's XON: it drained, at
// the rate reported in slow_receivers), expired or open.
//
// Causality (Hawkeye-style): for each episode the switch sent to a host on
// port a, the chain: the switch paused a because its ingress buffer (a, p)
// crossed XOFF; the egress toward port b was paused by the received
// episode on b covering the start (the one with the most packets from a's
// host to b's); if b's host was itself paused by the switch then, the
// chain continues from that episode, else b's host is the origin (its
// episode's kind). Injected pauses (roce.EventPause) are their own origin;
// no covering received episode means egress contention ("congestion",
// naming the egress queue the paused host's packets waited in: the
// destination port of most of its flows' packets, Origin.EgressPort); a
// chain returning to itself is a "cycle" (deadlock). With many hosts on
// the switch, a received episode counts only if a's host sent packets to
// b's during it: another host's pause did not fill a's ingress buffer. Each hop lists the
// flows: for a sent episode the host's flows active within FlowActiveNs
// before it (last packet before, packets during, first after); for a
// received one the flows whose packets to the host arrived during it
// (queued at the switch).
//
// Verdict: fail on a violation or a malformed copy (not a PAUSE/PFC
// frame); inconclusive on violations within U; skip when the switch
// paused known hosts but none of them sent a RoCE frame of a priority it
// was paused on once paused (a flow on another priority, as without
// traffic.dscp-list, or none left): nothing was checked, and the reason
// says on which priority their frames were; pass otherwise (naming, in
// the reason, any paused priority that was not checked). A trace
// without wrapped copies gives the zero Result, omitted from the report.
//
// Fabric (Options.Fabric, a run with several switches; docs/analyze.md):
// ports are global, so the per-port analysis above runs unchanged, reading
// a host's RoCE frames at its own switch. In place of the one-switch
// chains, every episode a switch sent on port p is traced (Hawkeye, Fig.
// 1): when it opens, of the egress ports the flows whose last copy at that
// switch entered by p within FlowActiveNs leave by (Fabric.Routes), the
// one then paused by pauses received on it (most such flows), else the
// deepest queue; a paused egress cabled to another switch leads to that
// switch's episode sent on the link's other port, one cabled to a host
// ends the chain at the host (stalled-nic beyond the detection time, else
// slow-receiver: from the pause pattern), an unpaused one at congestion
// unless a pause of that egress began while the episode went on and
// either is a storm (longer than the detection time) or the episode is
// (then that pause sustained it).
// Victims: flows that waited in a paused queue of a chain and never cross
// its root port. Storms group the chains by root. Deadlock: from the last
// RoCE copy's stamp L, a cycle of switch ports, each sending pauses at
// min(L + DeadlockNs, trace end) because flows that entered by it leave by
// an egress the next one pauses, with frames sent in [L, L + DeadlockNs].
//
// Bounds: MaxEpisodes episodes, MaxViolations violations and MaxCauses
// chains are kept; beyond them only counts.
package pfc
