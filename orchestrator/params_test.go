package orchestrator

import (
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/nic"
)

func TestNICFromConfig(t *testing.T) {
	h := config.Host{
		NIC:  config.NIC{Type: "cx6", IfName: "enp4s0", PCIAddr: "0000:3b:00.0", IBDevice: "mlx5_1", IBPort: 1, PrioDSCPMap: map[int][]int{5: {1}}},
		RoCE: config.RoCEParameters{DCQCNRPEnable: false, DCQCNNPEnable: true, MinTimeBetweenCNPs: 0, SlowRestart: true, DCQCNEnable: true},
	}
	d, p := nicFromConfig(h)
	if want := (nic.Device{IfName: "enp4s0", IBDev: "mlx5_1", Port: 1, PCIAddr: "0000:3b:00.0", Vendor: nic.VendorMellanox}); d != want {
		t.Errorf("device = %+v, want %+v", d, want)
	}
	if !p.DCQCNNPEnable || p.DCQCNRPEnable || !p.SlowRestart || p.AdaptiveRetrans || !p.DCQCNEnable || p.Trust != "dscp" {
		t.Errorf("params = %+v", p)
	}
	if p.DSCP2Prio[1] != 5 || p.DSCP2Prio[0] != 0 || p.DSCP2Prio[63] != 7 || len(p.DSCP2Prio) != 64 {
		t.Errorf("DSCP2Prio = %v", p.DSCP2Prio)
	}
	h.NIC.Type = "e810"
	if d, p := nicFromConfig(h); d.Vendor != nic.VendorIntel || p.Trust != "" || p.DSCP2Prio != nil {
		t.Errorf("e810: %+v %+v", d, p)
	}
}
