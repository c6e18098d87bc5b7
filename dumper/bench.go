package dumper

import "time"

// BenchConfig configures RunBench. The zero value sends 2 M frames of 130
// bytes, captured with snap length 128 and one worker.
type BenchConfig struct {
	// Count is the number of frames sent per run. Default 2_000_000.
	Count int
	// FrameLen is the frame length (74+4k bytes). Default 130.
	FrameLen int
	// SnapLen is the snap length of every capture. Default 128.
	SnapLen int
	// Workers is the number of dumper workers. Default 1.
	Workers int
	// Exe is the lumina binary the captures run as (lumina dump). Default
	// the running executable.
	Exe string
	// Tools are the measurements to run, in this order: "afpacket",
	// "dpdk" (over net_af_packet), "tcpdump" (the three share the blaster
	// and the table), "null" (the dpdk receive loop and dpdk-testpmd
	// --forward-mode=rxonly on the net_null vdev). Default all four.
	Tools []string
	// NullDuration is how long each net_null measurement runs. Default 3s.
	NullDuration time.Duration
}

// BenchResult is one capture's line of the benchmark table.
type BenchResult struct {
	Tool         string  `json:"tool"`
	Sent         int     `json:"sent"`
	OfferedPPS   float64 `json:"offered_pps"`
	Captured     uint64  `json:"captured"`
	Lost         uint64  `json:"lost"`
	CPUNsPerPkt  float64 `json:"cpu_ns_per_pkt"`         // whole capture process (rusage), per captured packet
	CaptureNsPkt float64 `json:"capture_cpu_ns_per_pkt"` // capture phase only (ours; 0 for tcpdump)
	SetupNsPkt   float64 `json:"setup_cpu_ns_per_pkt"`   // buffer allocation, EAL init (ours)
	StopNsPkt    float64 `json:"stop_cpu_ns_per_pkt"`    // drain + restore + write + fsync (ours)
	// net_null ("null-lumina", "null-testpmd"): packets the receive loop
	// took, the CPU time of its thread, and their ratio.
	LoopPackets uint64  `json:"loop_packets,omitempty"`
	LoopCPUNs   int64   `json:"loop_cpu_ns,omitempty"`
	PPSPerCore  float64 `json:"pps_per_core,omitempty"`
	RingFull    uint64  `json:"ring_full,omitempty"` // null-lumina: frames the loop found no ring slot for
	Skipped     string  `json:"skipped,omitempty"`
}
