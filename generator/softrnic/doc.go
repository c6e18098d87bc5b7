// Package softrnic is a software RoCEv2 RC NIC: the device under test of
// every hardware-free lumina run. It emits and consumes byte-exact RoCEv2
// frames (ICRC included) through a sim.Port, on a sim.Loop, so the same code
// runs on the sim testbed's virtual clock and in real time over veth.
//
// # Verbs
//
// New creates a NIC on a port; RegMR registers memory; CreateQP creates an RC
// QP with a random 24-bit QPN and initial PSN (seeded); QP.Connect moves it to
// RTS with the peer's QPN/PSN/IP/MAC and the attributes of ibv_modify_qp
// (MTU, timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic); PostSend
// posts WRITE/SEND (with immediate) and READ, PostRecv posts receive buffers;
// completions go to a handler or PollCQ, with ibv_wc_status-like statuses.
//
// # Behaviour (IBA Vol. 1 Ch. 9; Lumina §6; docs/personality.md)
//
// Requester: MTU segmentation with FIRST/MIDDLE/LAST/ONLY opcodes, RETH on
// the first WRITE packet, AckReq on the last packet (and every AckReqEvery),
// READ requests consuming one PSN per response packet, outstanding PSN and
// READ limits, coalesced ACKs, Go-back-N from the NAK'd PSN (resuming
// mid-message with MIDDLE/LAST opcodes), one retry sequence per NAK episode,
// implied NAK on READ response gaps (a re-issued READ for the remaining
// range), the retransmission timer (T_tr = 4.096 µs × 2^timeout, counted from
// the last transmission or progress) with retry_cnt, RNR NAK waits of
// RNRTimer × RNRWaitFactor with rnr_retry (7 = infinite; no request leaves
// during the wait), RETRY_EXC_ERR / RNR_RETRY_EXC_ERR / remote error
// completions that move the QP to ERROR and flush the rest.
//
// Responder: expected-PSN tracking, exactly one NAK (PSN sequence error,
// with the expected PSN) per loss episode, silent drop of further
// out-of-order packets, duplicate requests re-ACKed (SEND/WRITE with AckReq)
// or replayed (READ), ACK on AckReq with the MSN, READ responses with AETH on
// FIRST/LAST/ONLY, RNR NAK when a SEND finds no receive buffer, NAKs for
// invalid requests and remote access errors, silent drop and
// rx_icrc_encapsulated on a bad ICRC, data written to registered memory.
//
// DCQCN: the notification point sends a CNP (0x81, BECN, 16 zero bytes) for a
// CE-marked data packet unless one was sent within min_time_between_cnps in
// the same pacing domain (per QP, port, destination IP or IP pair), and with
// each NAK when slow restart is on and the personality does that. The
// reaction point is a DCQCN rate limiter with the Mellanox defaults; it can
// be disabled (CNPs are then only counted).
//
// Counters carry the Mellanox hw_counters names (Counters.Map).
//
// # Transmission and time
//
// The NIC transmits one frame at a time at its line rate: control frames
// (ACK, NAK, CNP) first, then data frames, which pass through a pipeline of
// TxPipelinePackets committed frames that a retransmission cannot preempt
// (the Lumina paper's hypothesis for Fig. 9(b)/10). QPs share the NIC round
// robin. Everything happens on the Loop: no goroutines, no time.Now, and all
// randomness comes from Config.Seed, so a sim run is deterministic.
//
// # PFC (Config.PFC; off by default, and then nothing below exists)
//
// Transmitter: a PFC frame for a lossless priority takes effect after the
// personality's PauseReactionDelay (within the 802.3 bound,
// PauseReactionBound): no frame of that priority starts for time×512 bit
// times (0: resume, a new frame replaces the timer); frames on the wire
// finish; other priorities keep flowing; PFC frames go before everything.
// Receiver: frames enter an RX buffer (RxBufferBytes) drained by a receive
// pipeline costing (len+20)·8/RxPipelineGbps ns per frame plus
// MTTMissPenalty per page of registered memory missing from an LRU MTT
// cache of MTTCacheEntries pages of PFCConfig.PageSize (Guo et al.,
// "RDMA over Commodity Ethernet at Scale", SIGCOMM 2016, §4.4: 2K
// entries cover 8 MB of 4 KB pages). At RxXoffBytes the NIC sends XOFF
// (0xFFFF quanta, refreshed every half pause while above XON), at
// RxXonBytes an XON; a full buffer drops (rx_discards_phy). StallRx stops
// the pipeline (rx-stall); the storm watchdog (StormWatchdog, Guo et al.
// §4.3) then stops pause generation for good. PFCLog records the frames
// and watchdog events; the counters carry the mlx5 ethtool names.
//
// Pitfalls: with RxPipelineGbps at the line rate any stall leaves a
// backlog that never drains while the link is busy; the MTT cursor of a
// go-back-N retransmission starting mid-message is approximate.
//
// # On-Demand Paging (Config.ODP; off by default, and then nothing below exists)
//
// Every MR is an ODP MR of 4096-byte pages, unmapped until accessed (or
// mapped at registration with Prefetch). The DMA range of a work request
// that finds an unmapped page faults; the fault resolves after the
// page-fault time. A responder fault answers with an RNR NAK (the QP's
// min_rnr_timer) ODPRNRNakDelay after the request, executes a READ when
// the fault resolves and discards a WRITE or SEND; a requester whose READ
// destination faults drops the responses until the fault resolves, then
// re-sends the READ; a WRITE or SEND source fault delays the WQE. After
// any RNR NAK the requester waits RNRTimer × RNRWaitFactor, sending no
// request and dropping READ responses from the NAK'd PSN on. With
// Config.ODPInTest a duplicate READ is answered after ODPDupReadDelay and
// a new request arriving meanwhile is dropped: the lost second READ of
// Fukuoka et al., Analyzing Performance Pitfalls of On-Demand Paging of
// InfiniBand, Figs. 6, 7. The counters page_faults, page_faults_handled,
// page_invalidations (always 0: no eviction) and page_prefetch appear
// with Config.ODP. odp.go has the details and the choices where the
// paper is silent.
//
// # Personalities
//
// A Personality is data: NACK generation and reaction delays, pipeline
// depth, timeout factors and adaptive-retransmission stages, CNP pacing
// scope, CNP-on-NAK. Builtins: spec (ideal IBA), cx4, cx5, cx6, each number
// documented with the Lumina figure or table it reproduces; user-defined
// personalities load from YAML (LoadPersonality), optionally on top of a
// builtin with `base:`. DecodePersonality walks the YAML nodes, so every
// problem in a file (unknown key, wrong type, a duration such as "12 us",
// a value out of range) is a PersonalityError at its FILE:LINE:COL; the
// format and its errors are documented in docs/personality.md, and
// config checks the files a test names before a run.
//
// Calibration: the paper measured the NACK delays at the switch, so the
// personality values are switch-measured. On a port with a link model
// (sim.PathModel: the sim testbed's links) the NIC subtracts the time its
// received and sent frames spend on the link, so the analyzers read the
// personality's value at the switch (calibrate.go); a value shorter than
// that path reads as the path. Real ports subtract nothing.
//
// Mechanisms beyond constants: adaptive retransmission picks its stage from
// the QP's loss history (timeout episodes so far), with intervals in units
// of T_tr, so they follow the timeout exponent; the first non-adaptive
// timeout of an episode is a seeded draw in [TimeoutFirstFactor,
// TimeoutFirstFactorMax]·T_tr; CX4's slow NACK covers the last
// NakGenSlowLastPackets packets of a WRITE (position from the RETH);
// QPStartJitter skews the QPs' starts. Each draw has its own stream of the
// NIC's seed. There is no E810 personality (CheckNICType).
//
// Pitfalls: the timer restarts on progress, so the measured retransmission
// time of a tail packet sent before the previous ACK arrived includes that
// wait; with no AckReq on earlier packets, a timeout goes back to the oldest
// unacknowledged PSN, which is the start of the message.
package softrnic
