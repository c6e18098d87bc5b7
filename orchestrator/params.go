package orchestrator

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/nic"
)

// Switch port numbers the testbeds use (P4 PortId_t).
const (
	portRequester = 1
	portResponder = 2
	portDumper0   = 10
)

var (
	macRequester = [6]byte{0x02, 0x4c, 0x00, 0x00, 0x00, 0x01}
	macResponder = [6]byte{0x02, 0x4c, 0x00, 0x00, 0x00, 0x02}
)

func macDumper(i int) [6]byte { return [6]byte{0x02, 0x4c, 0x00, 0x00, 0x01, byte(i)} }

// hostIPs returns the addresses of a host: its ip-list, or a default.
func hostIPs(h config.Host, def string) []netip.Addr {
	var out []netip.Addr
	for _, p := range h.NIC.IPList {
		out = append(out, p.Addr())
	}
	if len(out) == 0 {
		out = []netip.Addr{netip.MustParseAddr(def)}
	}
	return out
}

// traffic maps the test's traffic section to the generator's parameters.
func traffic(t *config.Test) generator.Traffic {
	tr := t.Traffic
	g := generator.Traffic{
		NumQPs: tr.NumQPs, NumReadQPs: tr.NumReadQPs, MsgsPerQP: tr.NumMsgsPerQP, MsgSize: tr.MessageSize, MsgSizeSet: true,
		MTU: tr.MTU, TxDepth: tr.TxDepth, Barrier: tr.BarrierSync, MultiGID: tr.MultiGID,
		Timeout: uint8(tr.MinRetransmitTimeout), TimeoutSet: true, RetryCnt: uint8(tr.MaxRetransmitRetry), RetryCntSet: true,
		DSCP: tr.DSCPList,
		Verb: tr.Verb,
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

// nicConfig is the software RNIC configuration of a traffic host
// (Listing 1's roce-parameters).
func (r *Run) nicConfig(s Side) softrnic.Config {
	h := r.host(s)
	mac := macRequester
	if s == Responder {
		mac = macResponder
	}
	return softrnic.Config{
		Name: string(s), MAC: mac, IPs: r.IPs[s], Personality: r.Personality[s], Seed: r.seed(s),
		DisableRP: !h.RoCE.DCQCNRPEnable, DisableNP: !h.RoCE.DCQCNNPEnable,
		MinTimeBetweenCNPs: time.Duration(h.RoCE.MinTimeBetweenCNPs) * time.Microsecond,
		AdaptiveRetrans:    h.RoCE.AdaptiveRetrans, SlowRestart: h.RoCE.SlowRestart,
		PFC: r.nicPFC(s),
	}
}

// nicDevice is a real RNIC's identity and the RoCE parameters to set on it.
func (r *Run) nicDevice(s Side) (nic.Device, nic.Params) {
	return nic.FromConfig(r.host(s))
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

func seedFor(t *config.Test, repeat int, role string) uint64 {
	h := t.Seed*0x9E3779B97F4A7C15 + uint64(repeat)*0xBF58476D1CE4E5B9
	for _, c := range role {
		h = (h ^ uint64(c)) * 0x100000001B3
	}
	return h
}

func errorf(format string, a ...any) error { return fmt.Errorf("orchestrator: "+format, a...) }
