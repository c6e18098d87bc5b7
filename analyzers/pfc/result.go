package pfc

import (
	"net/netip"

	"github.com/netlumina/lumina/analyzers/model"
)

// Directions of PFC frames, from the switch's side (the copy's Sent flag).
const (
	// DirReceived: the switch received the frames from the host on the
	// port: the host paused the switch.
	DirReceived = "received"
	// DirSent: the switch sent the frames to the host: it paused the host.
	DirSent = "sent"
)

// How an episode ended.
const (
	EndXON      = "xon"       // a frame with time 0
	EndExpiry   = "expiry"    // the last pause ran out
	EndTraceEnd = "trace-end" // still paused at the end of the trace
)

// Kinds of received episodes (why the host paused).
const (
	KindSlowReceiver = "slow-receiver" // drained: ended with an XON
	KindExpired      = "expired"       // ended without XON, shorter than the detection time
	KindStorm        = "storm"         // longer than the detection time
	KindOpen         = "open"          // still paused at the end of the trace
)

// Origins of a causality chain.
const (
	OriginInjected   = "injected"   // a pause the test injected (roce.EventPause)
	OriginCongestion = "congestion" // no pause received on another port: egress contention
	OriginCycle      = "cycle"      // the chain comes back to itself (deadlock)
)

// Watchdog kinds.
const (
	WatchdogNIC           = "nic"            // a host stopped pausing for good without XON
	WatchdogSwitchStorm   = "switch-storm"   // the switch turns lossless mode off
	WatchdogSwitchRestore = "switch-restore" // and back on
)

// DirStats counts one direction of one (port, priority).
type DirStats struct {
	// Frames are the PFC frames with the priority enabled; XOFF those with
	// a non-zero time, XON those with time 0; Quanta the sum of the times.
	Frames int64  `json:"frames"`
	XOFF   int64  `json:"xoff"`
	XON    int64  `json:"xon"`
	Quanta uint64 `json:"quanta"`
	// PauseFrames are link-level PAUSE frames (they pause every priority).
	PauseFrames int64 `json:"pause_frames,omitempty"`
	// Injected are the frames the test injected (roce.EventPause).
	Injected int64 `json:"injected,omitempty"`
	Episodes int   `json:"episodes"`
	// PausedNs is the paused time within the trace; PausedUnclippedNs
	// counts an episode still running at the end up to its expiry, as a
	// NIC counter read after the test does.
	PausedNs          int64 `json:"paused_ns"`
	PausedUnclippedNs int64 `json:"paused_unclipped_ns"`
	// PauseRatio is PausedNs / the trace span (Collie's pause duration
	// ratio); above 0.001 (0.1%) it is a warning.
	PauseRatio float64 `json:"pause_ratio"`
	Storms     int     `json:"storms,omitempty"`
	// MaxReactionNs (sent) is the longest reaction time of the host.
	MaxReactionNs *int64 `json:"max_reaction_ns,omitempty"`
	Violations    int    `json:"violations,omitempty"`
	// SlowReceiver (received) counts the slow-receiver episodes.
	SlowReceiver int `json:"slow_receiver,omitempty"`
}

// PortStats are the PFC statistics of one switch port and priority.
type PortStats struct {
	Port     uint16       `json:"port"`
	Host     string       `json:"host,omitempty"`
	IPs      []netip.Addr `json:"ips,omitempty"`
	Priority int          `json:"priority"`
	Received DirStats     `json:"received"`
	Sent     DirStats     `json:"sent"`
	Warnings []string     `json:"warnings,omitempty"`
}

// Flow is a connection's flow in one direction around a pause episode.
type Flow struct {
	Conn      int    `json:"conn"`
	Direction string `json:"direction"`
	// LastBeforeNs: its last packet before the episode (sent episodes).
	LastBeforeNs *int64 `json:"last_before_ns,omitempty"`
	// During: its packets the switch received during the episode: for a
	// sent episode, sent by the paused host (in flight, or violations);
	// for a received episode, packets to the pausing host, queued.
	During int `json:"during"`
	// FirstAfterNs: its first packet after the episode (sent episodes),
	// before the next episode of the port and priority.
	FirstAfterNs *int64 `json:"first_after_ns,omitempty"`
	idx          int    // index in the Table
	depth        int64  // sent: the queue depth its last packet before joined
}

// Episode is one pause episode of a (port, priority, direction): from an
// XOFF to the XON or the expiry of the last pause.
type Episode struct {
	ID         int    `json:"id"`
	Port       uint16 `json:"port"`
	Host       string `json:"host,omitempty"`
	Priority   int    `json:"priority"`
	Direction  string `json:"direction"`
	StartNs    int64  `json:"start_ns"`
	EndNs      int64  `json:"end_ns"`
	DurationNs int64  `json:"duration_ns"`
	End        string `json:"end"`
	StartIndex int    `json:"start_index"`
	Frames     int    `json:"frames"`
	XOFF       int    `json:"xoff"`
	Injected   bool   `json:"injected,omitempty"`
	Storm      bool   `json:"storm,omitempty"`
	// Kind (received) says why the host paused (KindSlowReceiver...).
	Kind string `json:"kind,omitempty"`
	// ReactionNs (sent): from the pause to the host's last frame of the
	// priority the switch received during the episode; nil when none.
	ReactionNs      *int64 `json:"reaction_ns,omitempty"`
	LastFrameIndex  *int   `json:"last_frame_index,omitempty"`
	Violations      int    `json:"violations,omitempty"`
	Flows           []Flow `json:"flows,omitempty"`
	bytesToHost     int64  // received: bytes to the host during the episode
	reaction        int64
	lastIdx         int
	hasReaction     bool
	lastPauseNs     int64
	lastPauseQuanta uint16
	fc              *fcause // sent, with a fabric: what it waited on
}

// Violation is a frame of a paused priority the host sent later than the
// reaction bound after the pause.
type Violation struct {
	Port       uint16        `json:"port"`
	Host       string        `json:"host,omitempty"`
	Priority   int           `json:"priority"`
	Episode    int           `json:"episode"`
	PauseIndex int           `json:"pause_index"`
	PauseNs    int64         `json:"pause_ns"`
	Index      int           `json:"index"`
	TimeNs     int64         `json:"time_ns"`
	Conn       int           `json:"conn"`
	AfterNs    int64         `json:"after_ns"`
	BoundNs    int64         `json:"bound_ns"`
	Verdict    model.Verdict `json:"verdict"`
}

// Watchdog is a watchdog firing inferred from the trace.
type Watchdog struct {
	Kind     string `json:"kind"`
	Port     uint16 `json:"port"`
	Host     string `json:"host,omitempty"`
	Priority int    `json:"priority"`
	AtNs     int64  `json:"at_ns"`
	Episode  int    `json:"episode"`
	Detail   string `json:"detail"`
}

// SlowReceiver summarizes a host's slow-receiver episodes.
type SlowReceiver struct {
	Port     uint16 `json:"port"`
	Host     string `json:"host,omitempty"`
	Priority int    `json:"priority"`
	Episodes int    `json:"episodes"`
	PausedNs int64  `json:"paused_ns"`
	// RxGbps is the rate of the host's traffic the switch received during
	// them (it drains at about that rate); nil without a host mapping.
	RxGbps *float64 `json:"rx_gbps,omitempty"`
}

// Hop is one step of a causality chain.
type Hop struct {
	Episode   int    `json:"episode"`
	Direction string `json:"direction"`
	Port      uint16 `json:"port"`
	Host      string `json:"host,omitempty"`
	Priority  int    `json:"priority"`
	StartNs   int64  `json:"start_ns"`
	EndNs     int64  `json:"end_ns"`
	Why       string `json:"why"`
	Flows     []Flow `json:"flows,omitempty"`
}

// Origin is where a causality chain starts.
type Origin struct {
	Kind     string `json:"kind"`
	Port     uint16 `json:"port"`
	Host     string `json:"host,omitempty"`
	Priority int    `json:"priority"`
	Episode  int    `json:"episode"`
	Detail   string `json:"detail"`
	// EgressPort and EgressHost (congestion) name the egress queue the
	// paused host's packets waited in: of its flows' destinations, the
	// port whose queue its last packet before the episode found deepest
	// (model.Pkt.QDepth), else (no depth recorded) the one most of its
	// flows' packets during the episode went to. Absent when the hosts
	// are unknown.
	EgressPort *uint16 `json:"egress_port,omitempty"`
	EgressHost string  `json:"egress_host,omitempty"`
}

// Cause is the causality chain of one episode the switch sent.
type Cause struct {
	Episode int    `json:"episode"`
	Chain   []Hop  `json:"chain"`
	Origin  Origin `json:"origin"`
}

// Malformed is a wrapped copy whose frame is no valid PAUSE or PFC frame.
type Malformed struct {
	Index  int    `json:"index"`
	Detail string `json:"detail"`
}

// Result is the pfc section of the report. Its zero value (no PFC copies
// in the trace) is omitted.
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	// LinkGbps is the link speed quanta are measured at.
	LinkGbps float64 `json:"link_gbps"`
	// ReactionBoundNs is the reaction bound before the data frame's own
	// serialization: 802.3 D(s) + the PFC frame's serialization + RTT.
	ReactionBoundNs int64 `json:"reaction_bound_ns"`
	UncertaintyNs   int64 `json:"timestamp_uncertainty_ns,omitempty"`
	// SentUncertaintyNs is W (Options.SentUncertaintyNs, its default
	// applied).
	SentUncertaintyNs int64 `json:"sent_uncertainty_ns"`
	// LatenessNs is the hosts' pause lateness allowed (Options.LatenessNs).
	LatenessNs int64 `json:"pause_lateness_ns,omitempty"`
	SpanNs     int64 `json:"span_ns"`
	// Frames counts the wrapped copies of MAC Control frames.
	Frames          int            `json:"frames"`
	Malformed       []Malformed    `json:"malformed,omitempty"`
	Ports           []PortStats    `json:"ports"`
	Episodes        []Episode      `json:"episodes"`
	EpisodesDropped int            `json:"episodes_dropped,omitempty"`
	Violations      []Violation    `json:"violations"`
	SlowReceivers   []SlowReceiver `json:"slow_receivers,omitempty"`
	Watchdogs       []Watchdog     `json:"watchdogs,omitempty"`
	Causality       []Cause        `json:"causality,omitempty"`
	Warnings        []string       `json:"warnings,omitempty"`
	// Fabric is the fabric-wide analysis of a run with several switches
	// (Options.Fabric; nil with one switch): then Causality is empty.
	Fabric *FabricResult `json:"fabric,omitempty"`
	// Deadlock is the deadlock check of a run with several switches
	// (nil with one switch). In report.json it is checks.deadlock.
	Deadlock *Deadlock `json:"-"`
}

// Port returns the statistics of (port, prio), or nil.
func (r *Result) Port(port uint16, prio int) *PortStats {
	for i := range r.Ports {
		if r.Ports[i].Port == port && r.Ports[i].Priority == prio {
			return &r.Ports[i]
		}
	}
	return nil
}
