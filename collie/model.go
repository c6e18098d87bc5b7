package collie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/internal/yamlbound"
)

// ErrProfile reports an invalid NIC profile or planted-anomaly file.
var ErrProfile = errors.New("collie: invalid profile")

// Profile describes the RDMA subsystem the model engine simulates: one NIC
// model on both hosts. Zero fields take the documented defaults (a
// 200 Gbps CX-6-like NIC on PCIe 4.0 x16).
type Profile struct {
	// Name identifies the profile; planted anomalies can be restricted to it.
	Name string `yaml:"name"`
	// LineGbps and LineMpps are the wire bounds per direction. Default 200
	// and 200.
	LineGbps float64 `yaml:"line_gbps"`
	LineMpps float64 `yaml:"line_mpps"`
	// LoopbackGbps bounds loopback traffic inside the NIC. Default LineGbps.
	LoopbackGbps float64 `yaml:"loopback_gbps"`
	// PCIeGbps is the usable PCIe bandwidth per direction. Default 252 (PCIe 4.0 x16).
	PCIeGbps float64 `yaml:"pcie_gbps"`
	// LoopbackArbitration makes the NIC throttle loopback traffic in favour
	// of traffic from the wire instead of pausing the wire (the in-NIC
	// incast of the paper's anomaly #13 needs it off). Default false.
	LoopbackArbitration bool `yaml:"loopback_arbitration"`
	// RelaxedOrdering; without it, bidirectional traffic of mixed sizes
	// stalls PCIe writes behind reads. Default false (the zero value).
	RelaxedOrdering bool `yaml:"relaxed_ordering"`
	// OrderingPenalty is the largest fraction of PCIe write bandwidth lost
	// to ordering stalls. Default 0.35.
	OrderingPenalty float64 `yaml:"ordering_penalty"`
	// DoorbellMops bounds doorbells plus WQE fetches (millions per second).
	// Default 120.
	DoorbellMops float64 `yaml:"doorbell_mops"`
	// QPCCache is the number of QP contexts the NIC caches. Default 4096.
	QPCCache float64 `yaml:"qpc_cache"`
	// CompactQPC: bidirectional RC contexts keep one size whatever the MTU
	// and SG list length. Without it (the default) large MTUs and long SG
	// lists enlarge them and they crowd the QPC cache (the root cause of
	// the paper's #14 on subsystem H, never seen on subsystem F).
	CompactQPC bool `yaml:"compact_qpc"`
	// MTTCache is the number of MPT/MTT entries cached. Default 65536.
	MTTCache float64 `yaml:"mtt_cache"`
	// MTTPage is the bytes one MTT entry maps. Default 2 MiB (huge pages).
	MTTPage float64 `yaml:"mtt_page"`
	// RWQECache is the number of receive WQEs cached. Default 8192.
	RWQECache float64 `yaml:"rwqe_cache"`
	// RWQEPrefetch is how many receive WQEs the NIC prefetches per QP.
	// Default 16.
	RWQEPrefetch float64 `yaml:"rwqe_prefetch"`
	// MissNs is the PCIe round trip of a cache miss; MissParallel the
	// misses in flight. Default 700 ns and 32.
	MissNs       float64 `yaml:"miss_ns"`
	MissParallel float64 `yaml:"miss_parallel"`
	// PacketMpps is the RC packet/ACK processing rate shared by both
	// directions. Default 300.
	PacketMpps float64 `yaml:"packet_mpps"`
	// RxBufferKB and PFCThreshold (fraction of the buffer) shape the
	// reported RX buffer occupancy. Default 2048 and 0.7.
	RxBufferKB   float64 `yaml:"rx_buffer_kb"`
	PFCThreshold float64 `yaml:"pfc_threshold"`
	// Memory scales PCIe/DMA efficiency per memory kind. Defaults:
	// dram-local 1, dram-remote 0.9, gpu 0.9; unknown kinds 1.
	Memory map[string]float64 `yaml:"memory"`
	// Noise is the relative standard deviation of each of the 4 samples.
	// Default 0.005.
	Noise float64 `yaml:"noise"`
	// IdealDatapath makes the throughput and pause metrics those of a NIC
	// without internal bottlenecks (every flow at its wire and loopback
	// bounds), so that the planted anomalies are the only anomalies. The
	// diagnostic counters stay those of the modelled subsystems. Use it to
	// evaluate search algorithms against a known anomaly set, as the paper
	// evaluates them against the anomalies of one subsystem. Default false.
	IdealDatapath bool `yaml:"ideal_datapath"`
}

func (p *Profile) setDefaults() {
	d := func(v *float64, x float64) {
		if *v == 0 {
			*v = x
		}
	}
	if p.Name == "" {
		p.Name = "default"
	}
	d(&p.LineGbps, 200)
	d(&p.LineMpps, 200)
	d(&p.LoopbackGbps, p.LineGbps)
	d(&p.PCIeGbps, 252)
	d(&p.OrderingPenalty, 0.35)
	d(&p.DoorbellMops, 120)
	d(&p.QPCCache, 4096)
	d(&p.MTTCache, 65536)
	d(&p.MTTPage, 2<<20)
	d(&p.RWQECache, 8192)
	d(&p.RWQEPrefetch, 16)
	d(&p.MissNs, 700)
	d(&p.MissParallel, 32)
	d(&p.PacketMpps, 300)
	d(&p.RxBufferKB, 2048)
	d(&p.PFCThreshold, 0.7)
	d(&p.Noise, 0.005)
	mem := map[string]float64{"dram-local": 1, "dram-remote": 0.9, "gpu": 0.9}
	for k, v := range p.Memory {
		mem[k] = v
	}
	p.Memory = mem
}

// Planted is an anomaly region planted into the model: workloads matching
// Conditions show Symptom, and Counter rises as a workload approaches the
// region.
type Planted struct {
	ID string `yaml:"id" json:"id"`
	// NIC restricts the anomaly to profiles of that name. Empty: every
	// profile.
	NIC string `yaml:"nic" json:"nic,omitempty"`
	// Symptom is pause or low_throughput.
	Symptom string `yaml:"symptom" json:"symptom"`
	// Severity is the pause duration ratio (pause) or the fraction of
	// throughput lost (low_throughput). Default 0.1 / 0.5.
	Severity float64 `yaml:"severity" json:"severity,omitempty"`
	// Counter is the model's diagnostic counter of the root-cause
	// subsystem (one of the Diag* names). Required.
	Counter string `yaml:"counter" json:"counter,omitempty"`
	// Load is the value Counter must reach for the anomaly to appear: the
	// Table-2 conditions are necessary, the subsystem must also be loaded
	// (Appendix A's concrete triggers all are). 0: the conditions suffice.
	Load float64 `yaml:"load" json:"load,omitempty"`
	// Conditions on one traffic, or Traffics for several (each matched by a
	// distinct traffic), in the MFS form.
	Conditions Conds   `yaml:"conditions" json:"conditions,omitempty"`
	Traffics   []Conds `yaml:"traffics" json:"traffics,omitempty"`
	// Note is free text (e.g. the paper's anomaly).
	Note string `yaml:"note" json:"note,omitempty"`
}

// Region returns the planted region as an MFS.
func (p *Planted) Region() MFS {
	if len(p.Traffics) > 0 {
		return MFS(p.Traffics)
	}
	return MFS{p.Conditions}
}

// ModelFile is the YAML of a NIC profile, optionally with planted
// anomalies; a planted-anomaly file holds only "planted".
type ModelFile struct {
	Profile `yaml:",inline"`
	Planted []Planted `yaml:"planted"`
}

// maxMappingKeys bounds the keys of one mapping of a profile or
// planted-anomaly file: yaml.v3 decodes a mapping into a Go map (a
// profile's memory) in time quadratic in its keys.
const maxMappingKeys = 4096

func decodeStrict(data []byte, v any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return err
	}
	if k := yamlbound.FirstKeyBeyond(&root, maxMappingKeys); k != nil {
		return fmt.Errorf("line %d, column %d: more than %d keys in one mapping", k.Line, k.Column, maxMappingKeys)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// ParseProfile reads a NIC profile (with optional planted anomalies).
func ParseProfile(data []byte) (*Profile, []Planted, error) {
	var f ModelFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrProfile, err)
	}
	f.Profile.setDefaults()
	if err := checkPlanted(f.Planted); err != nil {
		return nil, nil, err
	}
	return &f.Profile, f.Planted, nil
}

// ParsePlanted reads a planted-anomaly file: {planted: [...]}.
func ParsePlanted(data []byte) ([]Planted, error) {
	var f struct {
		Planted []Planted `yaml:"planted"`
	}
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProfile, err)
	}
	return f.Planted, checkPlanted(f.Planted)
}

func checkPlanted(ps []Planted) error {
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		if p.ID == "" || seen[p.ID] {
			return fmt.Errorf("%w: planted anomaly %d: missing or duplicate id %q", ErrProfile, i, p.ID)
		}
		seen[p.ID] = true
		switch p.Symptom {
		case SymptomPause:
			if p.Severity == 0 {
				p.Severity = 0.1
			}
		case SymptomLowThroughput:
			if p.Severity == 0 {
				p.Severity = 0.5
			}
		default:
			return fmt.Errorf("%w: planted anomaly %s: symptom %q (want pause or low_throughput)", ErrProfile, p.ID, p.Symptom)
		}
		if !slices.Contains(DiagCounters, p.Counter) {
			return fmt.Errorf("%w: planted anomaly %s: counter %q is not a model counter (%v)", ErrProfile, p.ID, p.Counter, DiagCounters)
		}
		if len(p.Conditions) > 0 && len(p.Traffics) > 0 {
			return fmt.Errorf("%w: planted anomaly %s: conditions and traffics together", ErrProfile, p.ID)
		}
		for _, c := range p.Region() {
			for k := range c {
				if !knownDim(k) {
					return fmt.Errorf("%w: planted anomaly %s: unknown dimension %q", ErrProfile, p.ID, k)
				}
			}
		}
	}
	return nil
}

// LoadProfile reads a profile file.
func LoadProfile(path string) (*Profile, []Planted, error) {
	b, err := safefile.ReadFile(path, safefile.MaxYAMLSize, safefile.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("collie: %w", err)
	}
	p, pl, err := ParseProfile(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, pl, nil
}

// LoadPlanted reads a planted-anomaly file.
func LoadPlanted(path string) ([]Planted, error) {
	b, err := safefile.ReadFile(path, safefile.MaxYAMLSize, safefile.Options{})
	if err != nil {
		return nil, fmt.Errorf("collie: %w", err)
	}
	pl, err := ParsePlanted(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pl, nil
}

// Model is the built-in RDMA subsystem performance model: two hosts with
// the same NIC, connected through an uncongested switch. It is
// deterministic for (Seed, experiment id, workload) and safe for concurrent
// use.
//
// Per flow (a traffic's data stream in one direction) it bounds the message
// rate by the sender's wire (bps, pps), PCIe reads (payload, WQEs with their
// SGEs, doorbells amortised over the WQE batch), doorbell/WQE-fetch rate,
// QPC and MTT/MPT cache misses, and RC packet processing (data and ACKs of
// both directions share one engine); and the receiver's drain by PCIe
// writes (memory kind, ordering stalls for bidirectional mixed sizes
// without relaxed ordering), receive-WQE cache misses (SEND; prefetch per
// QP), its own cache misses and packet processing. A drain slower than the
// sender fills the RX buffer past the PFC threshold: the pause duration
// ratio is 1 − drain/send. Flows sharing a resource share it equally.
type Model struct {
	Profile Profile
	// Planted anomalies; those whose NIC names another profile are ignored.
	Planted []Planted
	// Seed seeds the sample noise.
	Seed uint64
}

var _ Engine = (*Model)(nil)

// NewModel returns a model with the profile's defaults applied.
func NewModel(p Profile, planted []Planted, seed uint64) *Model {
	p.setDefaults()
	var pl []Planted
	for _, x := range planted {
		if x.NIC == "" || x.NIC == p.Name {
			pl = append(pl, x)
		}
	}
	return &Model{Profile: p, Planted: pl, Seed: seed}
}

type flow struct {
	t        *Traffic
	src, dst int // host 0 = A, 1 = B
	loop     bool
	bi       bool
	// per message
	payload, pkts, wireBits float64
	rate                    float64 // achieved messages per second
	send, drain             float64
}

// Diagnostic counters the model reports.
const (
	DiagQPCMiss       = "qpc_cache_miss"          // M misses/s
	DiagMTTMiss       = "mtt_cache_miss"          // M misses/s
	DiagRWQEMiss      = "rx_wqe_cache_miss"       // M misses/s
	DiagPCIeBP        = "pcie_backpressure"       // offered/usable PCIe, %
	DiagOrderingStall = "pcie_ordering_stall"     // % of PCIe writes stalled
	DiagRxBuffer      = "rx_buffer_occupancy"     // % of the RX buffer
	DiagPacketEngine  = "packet_engine_util"      // % of the packet engine
	DiagDoorbell      = "doorbell_wqe_fetch_util" // % of doorbell/WQE fetch rate
)

// Evaluate computes the noiseless metrics of w.
func (m *Model) Evaluate(w Workload) *Metrics {
	met := m.physical(w)
	active := m.active(w, met.Diag)
	for i := range m.Planted {
		pl := &m.Planted[i]
		if !active[i] {
			continue
		}
		met.RxGbps *= 1 - pl.Severity
		met.RxMpps *= 1 - pl.Severity
		met.TxGbps *= 1 - pl.Severity
		met.TxMpps *= 1 - pl.Severity
		if pl.Symptom == SymptomPause {
			met.PauseDurationRatio = math.Max(met.PauseDurationRatio, pl.Severity)
			met.Diag[DiagRxBuffer] = math.Max(met.Diag[DiagRxBuffer], 100*m.Profile.PFCThreshold)
		}
	}
	return met
}

// ideal returns the model without internal bottlenecks: unlimited PCIe,
// doorbells, caches and packet engine, relaxed ordering, every memory kind
// at full efficiency.
func (m *Model) ideal() *Model {
	p := m.Profile
	inf := math.Inf(1)
	p.PCIeGbps, p.DoorbellMops, p.PacketMpps, p.MissParallel = inf, inf, inf, inf
	p.RelaxedOrdering, p.IdealDatapath = true, false
	p.Memory = map[string]float64{}
	return &Model{Profile: p, Seed: m.Seed}
}

// physical computes the metrics of the performance model, without planted
// anomalies: the rates and the diagnostic counters. With IdealDatapath the
// rates and the RX buffer they fill are those of the ideal datapath.
func (m *Model) physical(w Workload) *Metrics {
	dp := m
	if m.Profile.IdealDatapath {
		dp = m.ideal()
	}
	met, occ := dp.rates(w)
	met.Diag = m.counters(w)
	met.Diag[DiagRxBuffer] = math.Max(met.Diag[DiagRxBuffer], 100*occ)
	return met
}

// rates computes the throughput and pause of the performance model and the
// RX buffer occupancy (a share of the buffer) its flows cause on host B.
func (m *Model) rates(w Workload) (*Metrics, float64) {
	p := &m.Profile
	var flows []*flow
	for i := range w.Traffics {
		t := &w.Traffics[i]
		add := func(src, dst int) {
			f := &flow{t: t, src: src, dst: dst, loop: src == dst, bi: t.Direction == Bi}
			var pay, pk float64
			for _, s := range t.MessageSizes {
				pay += float64(s)
				pk += float64(packets(s, t.MTU))
			}
			n := float64(len(t.MessageSizes))
			f.payload, f.pkts = pay/n, pk/n
			hdr := 82.0
			if t.QPType == "UD" {
				hdr += 8
			}
			f.wireBits = (f.payload + f.pkts*hdr + 16) * 8
			flows = append(flows, f)
		}
		switch t.Direction {
		case Bi:
			add(0, 1)
			add(1, 0)
		case Loopback:
			add(1, 1)
		default:
			if t.Opcode == "READ" {
				add(1, 0)
			} else {
				add(0, 1)
			}
		}
	}
	// Per-host working sets.
	var qps, mtt [2]float64
	var rwqeWS [2]float64
	for _, f := range flows {
		t := f.t
		q := float64(t.NumQPs)
		qps[f.src] += q
		if !f.loop {
			qps[f.dst] += q
		} else {
			qps[f.dst] += q // the loopback peer QPs live on the same NIC
		}
		ent := float64(t.NumMRs) * (1 + math.Ceil(float64(t.MRSize)/p.MTTPage))
		mtt[f.src] += ent
		mtt[f.dst] += ent
		if t.Opcode == "SEND" {
			rwqeWS[f.dst] += q * math.Min(float64(t.WQDepth), p.RWQEPrefetch)
		}
	}
	miss := func(cache, ws float64) float64 {
		if ws <= cache {
			return 0
		}
		return 1 - cache/ws
	}
	var mQPC, mMTT, mRWQE [2]float64
	for h := range 2 {
		mQPC[h] = miss(p.QPCCache, qps[h])
		mMTT[h] = miss(p.MTTCache, mtt[h])
		mRWQE[h] = miss(p.RWQECache, rwqeWS[h])
	}
	// Flows sharing the wire, the loopback path and the doorbell unit.
	var txWire, rxWire, loops, txUsers [2]float64
	for _, f := range flows {
		txUsers[f.src]++
		if f.loop {
			loops[f.src]++
		} else {
			txWire[f.src]++
			rxWire[f.dst]++
		}
	}
	// Bidirectional traffic of mixed sizes stalls PCIe writes without
	// relaxed ordering.
	var biMix [2]float64
	for _, f := range flows {
		if !f.bi {
			continue
		}
		lo, hi := float64(f.t.MinMsg()), float64(f.t.MaxMsg())
		if hi > 4*lo {
			biMix[f.dst] = math.Max(biMix[f.dst], math.Min(1, math.Log2(hi/lo)/10))
		}
	}
	var stall [2]float64
	if !p.RelaxedOrdering {
		for h := range 2 {
			stall[h] = p.OrderingPenalty * biMix[h]
		}
	}
	missRate := func(accesses float64) float64 {
		if accesses <= 0 {
			return math.Inf(1)
		}
		return p.MissParallel / (accesses * p.MissNs * 1e-9)
	}
	n := len(flows)
	readBits, writeBits, pktCost, mem := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	s0 := make([]float64, n)
	for i, f := range flows {
		t := f.t
		mem[i] = p.Memory[t.Memory]
		if mem[i] == 0 {
			mem[i] = 1
		}
		batch := float64(t.WQEBatch)
		wqeBytes := 64 + 16*float64(t.SGEPerWQE)
		readBits[i] = (f.payload*(1+24.0/256) + wqeBytes + 64/batch) * 8 / mem[i]
		writeBits[i] = (f.payload*(1+24.0/256) + 64/batch) * 8 / mem[i]
		if t.Opcode == "SEND" {
			writeBits[i] += 64 * 8 / mem[i] // receive completion
		}
		pktCost[i] = f.pkts
		if t.QPType == "RC" {
			pktCost[i] += math.Ceil(f.pkts / 16) // ACKs
		}
		var wire, pps float64
		if f.loop {
			wire = p.LoopbackGbps * 1e9 / loops[f.src] / f.wireBits
			pps = p.LineMpps * 1e6 / loops[f.src] / f.pkts
		} else {
			u := math.Max(txWire[f.src], rxWire[f.dst])
			wire = p.LineGbps * 1e9 / u / f.wireBits
			pps = p.LineMpps * 1e6 / u / f.pkts
		}
		db := p.DoorbellMops * 1e6 / txUsers[f.src] / (1/batch + 1/math.Min(batch, 8))
		s0[i] = min(wire, pps, db, missRate(mQPC[f.src]), missRate(mMTT[f.src]*(1+f.payload/p.MTTPage)))
	}
	// Two passes: loopback traffic throttled inside the NIC in the first
	// pass frees its share of the sender's PCIe reads in the second.
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			again := false
			for i, f := range flows {
				if f.loop && f.rate < s0[i] {
					s0[i], again = f.rate, true
				}
			}
			if !again {
				break
			}
		}
		// PCIe reads at the sender (payload, WQEs, doorbells), shared max-min.
		s1 := slices.Clone(s0)
		for h := range 2 {
			var idx []int
			var dem []float64
			for i, f := range flows {
				if f.src == h {
					idx = append(idx, i)
					dem = append(dem, s0[i]*readBits[i])
				}
			}
			for k, a := range waterFill(dem, p.PCIeGbps*1e9) {
				s1[idx[k]] = math.Min(s1[idx[k]], a/readBits[idx[k]])
			}
		}
		// The RC packet engine is shared by both directions of a host.
		send := slices.Clone(s1)
		pktDrain := make([]float64, n)
		for i := range pktDrain {
			pktDrain[i] = math.Inf(1)
		}
		for h := range 2 {
			type use struct {
				i   int
				rcv bool
			}
			var uses []use
			var dem []float64
			for i, f := range flows {
				if f.t.QPType != "RC" {
					continue
				}
				if f.src == h {
					uses = append(uses, use{i, f.loop})
					dem = append(dem, s1[i]*pktCost[i])
				} else if f.dst == h {
					uses = append(uses, use{i, true})
					dem = append(dem, s1[i]*pktCost[i])
				}
			}
			for k, a := range waterFill(dem, p.PacketMpps*1e6) {
				u := uses[k]
				r := a / pktCost[u.i]
				if u.rcv {
					pktDrain[u.i] = math.Min(pktDrain[u.i], r)
				} else {
					send[u.i] = math.Min(send[u.i], r)
				}
			}
		}
		// Receiver drain: PCIe writes (shared max-min), receive-WQE, QPC and
		// MTT misses, packet engine.
		for h := range 2 {
			var idx []int
			var dem []float64
			for i, f := range flows {
				if f.dst == h {
					idx = append(idx, i)
					dem = append(dem, send[i]*writeBits[i])
				}
			}
			capW := p.PCIeGbps * 1e9 * (1 - stall[h])
			var alloc []float64
			if p.LoopbackArbitration {
				// Wire traffic first; loopback traffic takes what is left and
				// is throttled inside the NIC (no pause).
				var wireDem, loopDem []float64
				for k, i := range idx {
					if flows[i].loop {
						loopDem = append(loopDem, dem[k])
					} else {
						wireDem = append(wireDem, dem[k])
					}
				}
				wa := waterFill(wireDem, capW)
				used := 0.0
				for _, a := range wa {
					used += a
				}
				la := waterFill(loopDem, math.Max(0, capW-used))
				for _, i := range idx {
					if flows[i].loop {
						alloc, la = append(alloc, la[0]), la[1:]
					} else {
						alloc, wa = append(alloc, wa[0]), wa[1:]
					}
				}
			} else {
				alloc = waterFill(dem, capW)
			}
			for k, i := range idx {
				f := flows[i]
				rw := math.Inf(1)
				if f.t.Opcode == "SEND" {
					rw = missRate(mRWQE[h])
				}
				f.send = send[i]
				f.drain = min(alloc[k]/writeBits[i], rw, missRate(mQPC[h]), missRate(mMTT[h]*(1+f.payload/p.MTTPage)), pktDrain[i])
				if f.loop && p.LoopbackArbitration {
					f.send = math.Min(f.send, f.drain)
				}
				f.rate = math.Min(f.send, f.drain)
			}
		}
	}
	met := &Metrics{}
	const B = 1
	var pause, occ float64
	for _, f := range flows {
		if f.src == B || f.dst == B {
			if f.drain < f.send {
				pause = math.Max(pause, 1-f.drain/f.send)
			}
			occ = math.Max(occ, math.Min(1, p.PFCThreshold*math.Pow(f.send/f.drain, 4)))
		}
		gbps := f.rate * f.wireBits / 1e9
		mpps := f.rate * f.pkts / 1e6
		ack := 0.0
		if f.t.QPType == "RC" {
			ack = f.rate * math.Ceil(f.pkts/16) / 1e6
		}
		if f.src == B {
			met.TxGbps += gbps
			met.TxMpps += mpps
			met.RxMpps += ack
		}
		if f.dst == B {
			met.RxGbps += gbps
			met.RxMpps += mpps
			met.TxMpps += ack
		}
	}
	met.PauseDurationRatio = pause
	return met, occ
}

// Run implements Engine: Evaluate plus four noisy samples.
func (m *Model) Run(ctx context.Context, id int, w Workload) (*Metrics, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(w.Traffics) == 0 {
		return nil, fmt.Errorf("%w: empty workload", ErrEngine)
	}
	met := m.Evaluate(w)
	r := rand.New(rand.NewPCG(m.Seed, uint64(id)))
	for range 4 {
		n := func(v float64) float64 { return math.Max(0, v*(1+m.Profile.Noise*r.NormFloat64())) }
		met.Samples = append(met.Samples, Sample{
			TxGbps: n(met.TxGbps), RxGbps: n(met.RxGbps), TxMpps: n(met.TxMpps), RxMpps: n(met.RxMpps),
			PauseDurationRatio: n(met.PauseDurationRatio),
		})
	}
	met.Sample = mean4(met.Samples)
	return met, nil
}

// PlantedHits returns the ids of the planted anomalies active at w: w
// matches the region and the root-cause counter reaches the load.
func (m *Model) PlantedHits(w Workload) []string {
	var out []string
	for i, a := range m.active(w, nil) {
		if a {
			out = append(out, m.Planted[i].ID)
		}
	}
	return out
}

// active reports which planted anomalies are active at w: the region's
// conditions hold and the root-cause counter (before any planted effect)
// reaches the load. For a one-traffic region the traffic that meets the
// conditions must carry the load itself (its share of the counter); for a
// region of several traffics the host's counter counts. diag is the
// physical model's counters of w (nil: computed).
func (m *Model) active(w Workload, diag map[string]float64) []bool {
	out := make([]bool, len(m.Planted))
	var shares []map[string]float64
	for i := range m.Planted {
		pl := &m.Planted[i]
		region := pl.Region()
		if !region.Match(w) {
			continue
		}
		if pl.Load <= 0 {
			out[i] = true
			continue
		}
		if len(region) > 1 {
			if diag == nil {
				diag = m.physical(w).Diag
			}
			out[i] = diag[pl.Counter] >= pl.Load
			continue
		}
		if shares == nil {
			_, shares = m.trafficCounters(w)
		}
		for j := range w.Traffics {
			if region[0].MatchTraffic(&w.Traffics[j]) && shares[j][pl.Counter] >= pl.Load {
				out[i] = true
				break
			}
		}
	}
	return out
}

// waterFill shares capacity among demands max-min fairly.
func waterFill(dem []float64, capacity float64) []float64 {
	out := make([]float64, len(dem))
	left := capacity
	idx := make([]int, len(dem))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return dem[idx[a]] < dem[idx[b]] })
	for k, i := range idx {
		share := left / float64(len(idx)-k)
		out[i] = math.Min(dem[i], share)
		left -= out[i]
	}
	return out
}
