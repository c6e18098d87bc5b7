package flows

import "github.com/netlumina/lumina/analyzers/model"

// Result is the flows analysis (report.json analysis.flows; its verdict
// and reason are also analysis.checks.flows).
type Result struct {
	Verdict model.Verdict `json:"verdict"`
	Reason  string        `json:"reason,omitempty"`
	// BinNs is the width of the time bins; Bins their number (the rates
	// and depths below have one value per bin); StartNs the switch
	// timestamp where bin 0 starts (the trace's first RoCE packet).
	BinNs   int64 `json:"bin_ns"`
	Bins    int   `json:"bins"`
	StartNs int64 `json:"start_ns"`
	// Tolerance is the convergence band ±X; CongestedBytes the depth from
	// which an egress queue counts as congested (victims).
	Tolerance      float64 `json:"tolerance"`
	CongestedBytes int64   `json:"congested_bytes"`
	Flows          []Flow  `json:"flows"`
	// Ports are the egress queues toward each host that forwarded packets
	// carried a depth for, in host order.
	Ports []Port `json:"ports"`
	// DepthRecorded says some mirror copy carried a non-zero queue depth
	// (a switch without a queue model writes 0).
	DepthRecorded bool `json:"depth_recorded"`
	// Bottleneck names the host whose egress queue was the deepest; ""
	// without recorded depth.
	Bottleneck string `json:"bottleneck,omitempty"`
	// Groups are the receivers of two or more flows: the flows sharing
	// that bottleneck, their convergence and fairness.
	Groups []Group `json:"groups,omitempty"`
	// Victims are the flows stalled by pauses another flow's congestion
	// caused; VictimsDropped counts those beyond MaxVictims.
	Victims        []Victim `json:"victims,omitempty"`
	VictimsDropped int      `json:"victims_dropped,omitempty"`
	Notes          []string `json:"notes,omitempty"`
	// Hops are, in a fabric (model.Fabric), the latency of each hop of
	// each flow's route, per direction (see HopLatency); HopStops the
	// connections whose copies stopped matching between two switches.
	// Absent with one switch.
	Hops     []HopLatency `json:"hops,omitempty"`
	HopStops []HopStop    `json:"hop_stops,omitempty"`
}

// Flow is one flow of the test: its connections' data.
type Flow struct {
	Name  string `json:"name"`
	Conns []int  `json:"conns"`
	// From sends the data, To receives it (for READ: the responder, the
	// requester).
	From string `json:"from"`
	To   string `json:"to"`
	// Bytes and Packets are the data its receivers accepted: payload of
	// WRITE/SEND requests (READ responses) delivered in PSN order (see the
	// package doc).
	Bytes   int64 `json:"bytes"`
	Packets int64 `json:"packets"`
	// FirstNs and LastNs are its first and last such packet; GoodputGbps
	// is Bytes over that span (0 for one packet).
	FirstNs     int64   `json:"first_ns"`
	LastNs      int64   `json:"last_ns"`
	GoodputGbps float64 `json:"goodput_gbps"`
	// RateGbps is the goodput in each bin.
	RateGbps []float64 `json:"rate_gbps"`
	// CNPs are the CNPs the trace shows addressed to the flow's
	// connections (to its data sender).
	CNPs int `json:"cnps"`
	// SenderRateCuts is the sender NIC's rp_cnp_handled (CNPs that
	// throttled a QP: DCQCN rate cuts) over the test; nil: unknown. A host
	// sending several flows reports one count for them all (Result.Notes).
	SenderRateCuts *int64 `json:"sender_rate_cuts,omitempty"`
	// Victim says the flow is among Victims.
	Victim bool `json:"victim,omitempty"`
}

// Port is the egress queue toward one host.
type Port struct {
	Host string `json:"host"`
	// Port is the host's switch port; 0 when unknown.
	Port uint16 `json:"port"`
	// Samples counts the packets to the host that carried a depth.
	Samples int64 `json:"samples"`
	// MaxDepth and P99Depth (the least depth of the mirror format's unit
	// holding the 99th percentile sample) are in bytes.
	MaxDepth int64 `json:"max_depth_bytes"`
	P99Depth int64 `json:"p99_depth_bytes"`
	// DepthBytes is the greatest depth seen in each bin (0: none).
	DepthBytes []int64 `json:"depth_bytes"`
}

// Group is the flows of one receiver: they share its egress queue.
type Group struct {
	To    string   `json:"to"`
	Port  uint16   `json:"port"`
	Flows []string `json:"flows"`
	// WindowStartNs and WindowEndNs bound the common window: the full
	// bins in which every flow of the group sent (ending with the last
	// full step). StepNs is the width of the convergence steps.
	WindowStartNs int64 `json:"window_start_ns,omitempty"`
	WindowEndNs   int64 `json:"window_end_ns,omitempty"`
	StepNs        int64 `json:"step_ns,omitempty"`
	// Converged says the flows converged; ConvergedAtNs is the start of
	// the convergence bin and ConvergeNs the time from the last flow's
	// first packet to it (see the package doc).
	Converged     bool   `json:"converged"`
	ConvergedAtNs *int64 `json:"converged_at_ns,omitempty"`
	ConvergeNs    *int64 `json:"converge_ns,omitempty"`
	// MeanGbps are the flows' mean rates after convergence (over the whole
	// common window if they did not converge), in Flows order; Jain is
	// their Jain index.
	MeanGbps []float64 `json:"mean_gbps,omitempty"`
	Jain     float64   `json:"jain"`
	// MaxDepth and P99Depth are the receiver's egress queue depth.
	MaxDepth int64  `json:"max_depth_bytes"`
	P99Depth int64  `json:"p99_depth_bytes"`
	Note     string `json:"note,omitempty"`
}

// Victim is a flow stalled by pauses another flow's congestion caused:
// the switch paused its sender (Host, on Port and Priority) while the
// flow's own egress queue (Dest) stayed below CongestedBytes and another
// one (Congested, fed by CongestingFlows and by the paused host) was
// congested.
type Victim struct {
	Flow     string `json:"flow"`
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	Priority int    `json:"priority"`
	// Episode is the first such pause episode (pfc episodes[].id);
	// Episodes counts them, PausedNs sums their durations.
	Episode           int      `json:"episode"`
	Episodes          int      `json:"episodes"`
	StartNs           int64    `json:"start_ns"`
	PausedNs          int64    `json:"paused_ns"`
	Dest              string   `json:"dest"`
	DestMaxDepth      int64    `json:"dest_max_depth_bytes"`
	Congested         string   `json:"congested"`
	CongestedPort     uint16   `json:"congested_port"`
	CongestedMaxDepth int64    `json:"congested_max_depth_bytes"`
	CongestingFlows   []string `json:"congesting_flows"`
	// Origin is the pfc causality chain's origin of the first episode.
	Origin string `json:"origin,omitempty"`
}
