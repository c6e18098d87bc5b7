package injector

import (
	"math/bits"
	"time"
)

// Timing is how the switch's mirror timestamps relate to the arrivals of
// the packets they stamp. It covers the mirror copies of packets that came
// in on a sim.TimedPort (an AF_PACKET port: the kernel's receive
// timestamp); on other ports (sim links, where a frame is processed the
// instant it arrives) the timestamp is the loop time and nothing is
// recorded, so on the sim testbed every field is zero.
//
// A mirror timestamp is the packet's arrival time, raised when needed to
// the previous mirror timestamp so that timestamps never decrease in
// mirror-sequence order (the integrity check requires it): packets of
// different ports can be processed in another order than they arrived.
type Timing struct {
	// Frames is the number of mirror copies stamped with their packet's
	// arrival time.
	Frames uint64
	// LateP50, LateP99 and LateMax describe how late the pipeline ran:
	// processing time − arrival time of each stamped packet. The
	// percentiles (nearest rank) come from a histogram with 16 buckets per
	// power of two: each is an upper bound at most 1/16 (6.25%) above the
	// exact value, and never above LateMax, which is exact.
	LateP50, LateP99, LateMax time.Duration
	// ClampMax is the largest amount by which a timestamp was raised above
	// its packet's arrival (stamp − arrival): no mirror timestamp is later
	// than its packet's arrival by more than this. It is the switch's
	// timestamp uncertainty, to which the conversion error of the kernel
	// timestamp to the loop clock (sub-µs, see sim.AFPacketPort) adds.
	ClampMax time.Duration
	// SentMax bounds how much later than its departure the timestamp of a
	// frame the switch sent (a PFC frame, stamped once its write returned)
	// is: the longest such write (stamp − start of the write). 0 on a
	// virtual clock.
	SentMax time.Duration
}

// Timing returns the timing statistics of every mirror copy so far. They
// are not reset by SetForwardingPipelineConfig.
func (s *Switch) Timing() Timing {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.timing
	return Timing{
		Frames:   t.late.n,
		LateP50:  time.Duration(t.late.quantile(50)),
		LateP99:  time.Duration(t.late.quantile(99)),
		LateMax:  time.Duration(t.late.max),
		ClampMax: time.Duration(t.clampMax),
		SentMax:  time.Duration(t.sentMax),
	}
}

// TakeTiming returns Timing and starts the statistics afresh: one run's,
// on a switch that serves one run after another (`lumina injector` on a
// remote testbed, whose Injector.Timing this is).
func (s *Switch) TakeTiming() Timing {
	t := s.Timing()
	s.mu.Lock()
	defer s.mu.Unlock()
	// What arrived between the two locks is dropped with the rest: the
	// caller takes the timing between runs, when the switch is idle.
	s.timing = timingStats{}
	return t
}

// timingStats accumulates Timing. Guarded by Switch.mu.
type timingStats struct {
	late     durationHist
	clampMax uint64
	sentMax  uint64
}

// record adds a mirror copy stamped at stamp for a packet that arrived at
// rxNs and was processed at nowNs (loop ns; stamp >= rxNs).
func (t *timingStats) record(rxNs, nowNs, stamp int64) {
	t.late.add(uint64(max(0, nowNs-rxNs)))
	t.clampMax = max(t.clampMax, uint64(stamp-rxNs))
}

// histSub is the number of buckets per power of two of durationHist: a
// value's bucket spans less than 1/histSub of it.
const histSub = 16

// histBuckets covers every uint64: values below histSub exactly, then
// histSub buckets for each bit length from 5 to 64.
const histBuckets = histSub + (64-4)*histSub

// durationHist is a fixed-size log-linear histogram of nanoseconds (in the
// manner of HdrHistogram): 7.7 KiB whatever the number of values, with a
// relative bucket width below 1/16.
type durationHist struct {
	n, max uint64
	counts [histBuckets]uint64
}

// histBucket returns the bucket of v: v itself below histSub, else
// histSub per bit length, indexed by the 4 bits after v's leading one.
func histBucket(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 5 // v>>shift is in [16, 32)
	return (shift+1)*histSub + int(v>>shift) - histSub
}

// histUpper returns the largest value of bucket i.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	m := uint64(i%histSub + histSub)
	return (m+1)<<shift - 1 // wraps to 1<<64 - 1 for the last bucket
}

func (h *durationHist) add(v uint64) {
	h.n++
	h.max = max(h.max, v)
	h.counts[histBucket(v)]++
}

// quantile returns the p-th percentile (nearest rank: the smallest value
// with at least p% of the values at or below it) as its bucket's upper
// bound, at most max; 0 if the histogram is empty.
func (h *durationHist) quantile(p int) uint64 {
	if h.n == 0 {
		return 0
	}
	rank := max(1, (h.n*uint64(p)+99)/100)
	var cum uint64
	for i, c := range h.counts {
		if cum += c; cum >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}
