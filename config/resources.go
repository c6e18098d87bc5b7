package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/netlumina/lumina/generator/softrnic"
)

// Resources are the limits of the machine a test is validated for (the one
// that runs it: `lumina validate` and `lumina run` pass the same ones, so
// they agree). The zero value checks nothing machine-dependent; the dumper
// capacity check (num-pkts) is always made.
type Resources struct {
	// MemoryBytes is the most memory a run on this machine may need (sim
	// and netns testbeds, where every component runs here). 0: not
	// checked. `lumina` sets it to DefaultMemoryFraction of the physical
	// memory unless --memory-limit is given.
	MemoryBytes int64
	// DiskFree returns the free bytes under the results directory of a
	// test whose result-path is resultPath (the caller applies its own
	// override, such as `lumina run -o`), and ok false when unknown. nil:
	// not checked.
	DiskFree func(resultPath string) (free int64, ok bool)
}

// DefaultMemoryFraction is the share of physical memory a run may plan to
// use by default: half, leaving the rest to the kernel's page cache (the
// trace is written through it) and to whatever else the machine runs.
const DefaultMemoryFraction = 0.5

// Estimate is what a test needs, as validation computes it before the run.
type Estimate struct {
	// MinPackets is the fewest RoCE packets the switch certainly mirrors
	// in one repeat: every data packet of every message once (for READ,
	// the request too), no acknowledgement, no retransmission.
	MinPackets int64
	// Packets is the expected upper end: MinPackets, one acknowledgement
	// per data packet (responders coalesce, so usually fewer) and 10% for
	// retransmissions and events.
	Packets int64
	// DiskBytes is the disk one repeat's results take for Packets: the
	// merged trace, and as much again for the dumper files when
	// keep-dumper-files is true.
	DiskBytes int64
	// GeneratorBytes is the message buffers of both generators (one
	// message per QP on each side).
	GeneratorBytes int64
	// DumperBytes is the capture memory of every dumper: per worker, the
	// afpacket/dpdk ring (64 MiB) and a 4 MiB write buffer.
	DumperBytes int64
	// MemoryBytes is the most memory the run needs on one machine on the
	// sim and netns testbeds: GeneratorBytes, DumperBytes and BaseMemory.
	MemoryBytes int64
}

// Capture memory of a dumper worker (the dumper package's defaults: a
// 64 MiB kernel or DPDK ring and a 4 MiB write buffer; the sim backend
// needs only the buffer).
const (
	dumperRingBytes   = 64 << 20
	dumperWriteBuffer = 4 << 20
)

// BaseMemory is what a run needs besides message buffers and dumpers: the
// processes, the merge (a read buffer per dumper), the analyzers' state and
// the sim's packets in flight.
const BaseMemory = 256 << 20

// pcapRecordOverhead is a pcap record header.
const pcapRecordOverhead = 16

// roceOverhead is the bytes of a RoCEv2 data packet around its payload:
// Ethernet, IPv4, UDP, BTH, RETH and ICRC, plus the frame check sequence.
const roceOverhead = 14 + 20 + 8 + 12 + 16 + 4 + 4

// Estimate returns what t needs (see Estimate).
func (t *Test) Estimate() Estimate {
	tr := &t.Traffic
	ppm := int64(tr.PacketsPerMessage())
	msgs := int64(max(tr.NumMsgsPerQP, 1))
	var e Estimate
	for qp := range max(tr.NumQPs, 1) {
		n := ppm
		if tr.QPVerb(qp) == VerbRead {
			n++ // the request
		}
		e.MinPackets += n * msgs
	}
	e.Packets = e.MinPackets * 2 * 11 / 10
	frame := int64(tr.mtuOrDefault() + roceOverhead)
	var perPacket int64
	for _, dm := range t.Dumpers {
		perPacket = max(perPacket, min(frame, int64(dm.SnapLen))+pcapRecordOverhead)
	}
	if perPacket == 0 {
		perPacket = frame + pcapRecordOverhead
	}
	e.DiskBytes = e.Packets * perPacket
	if t.KeepDumperFiles {
		e.DiskBytes *= 2
	}
	e.GeneratorBytes = 2 * int64(max(tr.NumQPs, 1)) * int64(max(tr.MessageSize, 1))
	for _, dm := range t.Dumpers {
		per := int64(dumperWriteBuffer)
		if dm.Backend != BackendSim {
			per += dumperRingBytes
		}
		e.DumperBytes += int64(max(dm.Workers, 1)) * per
	}
	e.MemoryBytes = e.GeneratorBytes + e.DumperBytes + BaseMemory
	return e
}

// minPacketsPerWorker returns the fewest packets a worker of dumper i
// certainly receives: the injector spreads the copies over dumpers by
// weight, and a dumper over its workers evenly.
func (t *Test) minPacketsPerWorker(i int, e Estimate) int64 {
	total := 0
	for _, dm := range t.Dumpers {
		total += max(dm.Weight, 1)
	}
	dm := t.Dumpers[i]
	return e.MinPackets * int64(max(dm.Weight, 1)) / int64(total) / int64(max(dm.Workers, 1))
}

// checkNICModels refuses, off the remote testbed, a host whose nic.type
// the software RNIC has no personality for (softrnic.CheckNICType: e810
// without a personality file), where the run would otherwise fail, or
// worse, silently stand in another NIC.
func (d *decoder) checkNICModels(t *Test) {
	if t.Testbed == TestbedRemote {
		return
	}
	for _, h := range []struct {
		name string
		host *Host
	}{{"requester", &t.Requester}, {"responder", &t.Responder}} {
		if err := softrnic.CheckNICType(h.host.NIC.Type, h.host.NIC.Personality); err != nil {
			d.errorAt(d.firstPos(h.name+".nic.type", h.name), fmt.Sprintf("%v (testbed %s)", err, t.Testbed))
		}
	}
}

// checkResources refuses a test that cannot run as configured: a dumper
// whose num-pkts the test certainly exceeds (always), and, with the
// limits of r, one that needs more memory or disk than the machine has.
// Each error names the fix.
func (d *decoder) checkResources(t *Test, r Resources) {
	e := t.Estimate()
	for i, dm := range t.Dumpers {
		p := d.dumperPath(i)
		if p == "" || dm.NumPkts == 0 {
			continue
		}
		need := t.minPacketsPerWorker(i, e)
		if need <= int64(dm.NumPkts) {
			continue
		}
		at := d.firstPos(p+".num-pkts", p+".pkt-dump-conf.num-pkts", p)
		d.errorAt(at, fmt.Sprintf("num-pkts: each worker of dumper %q will receive at least %d packets (the test mirrors at least %d), more than num-pkts %d; raise num-pkts to at least %d (about twice that with acknowledgements), or remove it: without it the disk is the limit",
			dm.Name, need, e.MinPackets, dm.NumPkts, need))
	}
	if r.MemoryBytes > 0 && t.Testbed != TestbedRemote && e.MemoryBytes > r.MemoryBytes {
		at := d.firstPos("traffic.message-size", "traffic.num-qps", "traffic.num-connections", "traffic")
		if e.DumperBytes > e.GeneratorBytes {
			at = d.firstPos("dumpers", "traffic")
		}
		d.errorAt(at, fmt.Sprintf("the test needs about %s of memory on this machine (message buffers 2 × %d QPs × %d B = %s, dumpers %s, base %s), more than the limit of %s; use fewer QPs, smaller messages or fewer dumper workers, or raise the limit with --memory-limit",
			Bytes(e.MemoryBytes), max(t.Traffic.NumQPs, 1), max(t.Traffic.MessageSize, 1), Bytes(e.GeneratorBytes), Bytes(e.DumperBytes), Bytes(BaseMemory), Bytes(r.MemoryBytes)))
	}
	if r.DiskFree != nil {
		free, ok := r.DiskFree(t.ResultPath)
		need := e.DiskBytes * int64(t.NumRepeats)
		if ok && need > free {
			at := d.firstPos("num-repeats", "traffic.num-msgs-per-qp", "traffic")
			keep := ""
			if t.KeepDumperFiles {
				keep = ", keep-dumper-files: false (halves it)"
			}
			d.errorAt(at, fmt.Sprintf("the results need about %s of disk (%d repeats × up to %d packets, traces and dumper files), %s are free under the results directory; free some, choose another with -o%s, or lower snap-len, num-msgs-per-qp or num-repeats",
				Bytes(need), t.NumRepeats, e.Packets, Bytes(free), keep))
		}
	}
}

// Bytes renders a byte count with a binary unit: 512 B, 1.5 KiB, 64 MiB,
// 2.3 GiB, 1.1 TiB.
func Bytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u:u+1] + "iB"
}

// ParseBytes parses a size such as 8GiB, 512M, 1.5T or 1073741824 (bytes;
// the suffixes K, M, G, T with an optional "i" and "B" are binary).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 || v*float64(mult) >= 1<<62 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, optionally with K, M, G or T (binary), e.g. 8GiB", s)
	}
	return int64(v * float64(mult)), nil
}
