package orchestrator

import (
	"fmt"
	"strconv"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/nic"
)

// Switch port numbers the sim and netns testbeds use (P4 PortId_t):
// host i on config.HostPort(i) (1, 2, then 32..93 for 64 hosts), dumper
// i on portDumper0+i (at most 16 dumpers: 10..25), the switch-to-switch
// links of a fabric on config.FirstLinkPort and up.
const portDumper0 = 10

// hostPort is the switch port of host i (t.Hosts order): config.HostPort.
func hostPort(i int) uint32 { return config.HostPort(i) }

// macHost is the MAC of host i's software RNIC: 02:4c:00:00:00:01 for the
// first (the requester), 02:4c:00:00:00:02 for the second, and so on.
func macHost(i int) [6]byte { return [6]byte{0x02, 0x4c, 0x00, 0x00, 0x00, byte(i + 1)} }

func macDumper(i int) [6]byte { return [6]byte{0x02, 0x4c, 0x00, 0x00, 0x01, byte(i)} }

// traffic maps a flow's traffic to the generator's parameters.
func traffic(f config.Flow) generator.Traffic {
	tr := f.Traffic
	g := generator.Traffic{
		NumQPs: tr.NumQPs, NumReadQPs: tr.NumReadQPs, MsgsPerQP: tr.NumMsgsPerQP, MsgSize: new(tr.MessageSize),
		MTU: tr.MTU, TxDepth: tr.TxDepth, Barrier: tr.BarrierSync, MultiGID: tr.MultiGID,
		Timeout: new(uint8(tr.MinRetransmitTimeout)), RetryCnt: new(uint8(tr.MaxRetransmitRetry)),
		MinRNRTimer: new(uint8(tr.MinRNRTimer)), RNRRetry: new(uint8(tr.RNRRetry)),
		PostIntervalNs: int64(tr.PostIntervalUs) * int64(time.Microsecond),
		DSCP:           tr.DSCPList,
		Verb:           tr.Verb,
	}
	return g
}

// personality loads a host's software-RNIC personality; a file path is
// relative to the test file.
func personality(t *config.Test, h config.Host) (softrnic.Personality, error) {
	name := h.NIC.Personality
	if name == "" {
		name = "spec"
	}
	if err := softrnic.CheckNICType(h.NIC.Type, name); err != nil && t.Testbed != config.TestbedRemote {
		return softrnic.Personality{}, err // no silent fallback to spec (issue 25)
	}
	if path := config.PersonalityPath(t, name); path != "" {
		name = path
	}
	return softrnic.LoadPersonality(name)
}

// nicConfig is the software RNIC configuration of host i (Listing 1's
// roce-parameters).
func (r *Run) nicConfig(i int) softrnic.Config {
	nh := r.Test.Hosts[i]
	h, name := nh.Host, nh.Name
	return softrnic.Config{
		Name: name, MAC: macHost(i), IPs: r.IPs[name], Personality: r.Personality[name], Seed: r.Seeds.Hosts[name],
		DisableRP: !h.RoCE.DCQCNRPEnable, DisableNP: !h.RoCE.DCQCNNPEnable,
		MinTimeBetweenCNPs: time.Duration(h.RoCE.MinTimeBetweenCNPs) * time.Microsecond,
		AdaptiveRetrans:    h.RoCE.AdaptiveRetrans, SlowRestart: h.RoCE.SlowRestart,
		PFC: r.nicPFC(i),
		ODP: nicODP(h.NIC), ODPInTest: r.Test.ODPInTest(),
	}
}

// nicODP is a host's software-RNIC ODP configuration (nic.odp): nil
// without ODP; a page-fault-us of 0 leaves the personality's default.
func nicODP(n config.NIC) *softrnic.ODPConfig {
	if !n.ODPOn() {
		return nil
	}
	return &softrnic.ODPConfig{PageFault: time.Duration(n.ODP.PageFaultUs) * time.Microsecond, Prefetch: n.ODP.Prefetch}
}

// nicDevice is a real RNIC's identity and the RoCE parameters to set on it.
func (r *Run) nicDevice(i int) (nic.Device, nic.Params) {
	return nicFromConfig(r.Test.Hosts[i].Host)
}

// nicFromConfig returns the device and parameters of a traffic host in a
// test config: roce-parameters, plus DSCP trust and the prio-dscp-map (the
// default map, priority p ← DSCP 8p..8p+7, when empty) on Mellanox NICs,
// as the public tool's config_traffic_gen does.
func nicFromConfig(h config.Host) (nic.Device, nic.Params) {
	n, r := h.NIC, h.RoCE
	d := nic.Device{IfName: n.IfName, IBDev: n.IBDevice, Port: n.IBPort, PCIAddr: n.PCIAddr, Vendor: nic.VendorOf(n.Type)}
	p := nic.Params{DCQCNRPEnable: r.DCQCNRPEnable, DCQCNNPEnable: r.DCQCNNPEnable, MinTimeBetweenCNPs: r.MinTimeBetweenCNPs,
		AdaptiveRetrans: r.AdaptiveRetrans, SlowRestart: r.SlowRestart, DCQCNEnable: r.DCQCNEnable}
	if d.Vendor == nic.VendorMellanox {
		p.Trust = "dscp"
		p.DSCP2Prio = nic.DSCP2Prio(n.PrioDSCPMap)
	}
	return d, p
}

// dumperConfig is dumper i's configuration: it captures on iface and
// writes path on its host.
func dumperConfig(t *config.Test, i int, iface, path string) dumper.Config {
	d := t.Dumpers[i]
	return dumper.Config{Name: d.Name, Backend: d.Backend.String(), Interface: iface, Workers: d.Workers, SnapLen: d.SnapLen,
		Capacity: d.NumPkts, MirrorPort: uint16(t.RewriteUDPDstPort), EALArgs: d.EALArgs, OutPath: path}
}

// trafficDeadline bounds a run on the virtual (or real) clock
// (config.Test.TrafficDeadline).
func trafficDeadline(t *config.Test) time.Duration { return t.TrafficDeadline() }

// hostSeed is host i's RNIC seed for repeat rep of t: the two-host form's
// requester and responder seeds for the first two hosts; for the others
// seedFor of "host i" through SplitMix64's finalizer (Steele et al.,
// "Fast splittable pseudorandom number generators", OOPSLA 2014), whose
// avalanche spreads the roles' one-character difference over all bits.
func hostSeed(t *config.Test, rep, i int) uint64 {
	switch i {
	case 0:
		return seedFor(t, rep, "requester")
	case 1:
		return seedFor(t, rep, "responder")
	}
	z := seedFor(t, rep, "host "+strconv.Itoa(i))
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func seedFor(t *config.Test, repeat int, role string) uint64 {
	h := t.Seed*0x9E3779B97F4A7C15 + uint64(repeat)*0xBF58476D1CE4E5B9
	for _, c := range role {
		h = (h ^ uint64(c)) * 0x100000001B3
	}
	return h
}

func errorf(format string, a ...any) error { return fmt.Errorf("orchestrator: "+format, a...) }
