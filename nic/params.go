package nic

import (
	"fmt"
	"strings"
)

// Vendor is an RNIC family: it decides which knobs exist.
type Vendor uint8

// Vendors. The zero value means "detect from the driver".
const (
	VendorAuto     Vendor = iota
	VendorMellanox        // ConnectX-4/5/6 (mlx5_core)
	VendorIntel           // E810 (ice + irdma)
)

// String names the vendor.
func (v Vendor) String() string {
	switch v {
	case VendorAuto:
		return "auto"
	case VendorMellanox:
		return "mellanox"
	case VendorIntel:
		return "intel"
	}
	return fmt.Sprintf("Vendor(%d)", uint8(v))
}

// VendorOf maps a config NIC type (cx4, cx5, cx6, e810) or a kernel driver
// name (mlx5_core, ice, irdma) to its vendor; VendorAuto when unknown.
func VendorOf(s string) Vendor {
	switch strings.ToLower(s) {
	case "cx4", "cx5", "cx6", "cx7", "mlx5_core", "mlx5_ib", "mlx4_core", "mellanox", "nvidia":
		return VendorMellanox
	case "e810", "ice", "irdma", "intel":
		return VendorIntel
	}
	return VendorAuto
}

// Device names one RNIC port.
type Device struct {
	// IfName is the kernel network interface. Required.
	IfName string
	// IBDev is the verbs device (mlx5_0, irdma0). Default: the device
	// whose GID table lists IfName, or /sys/class/net/IfName/device/infiniband/*.
	IBDev string
	// Port is the verbs port. Default 1.
	Port int
	// PCIAddr is the PCI function (0000:3b:00.0), which mlxreg addresses.
	// Default: the target of /sys/class/net/IfName/device.
	PCIAddr string
	// Vendor selects the knobs. Default: from the driver bound to the PCI
	// function (/sys/class/net/IfName/device/driver).
	Vendor Vendor
}

// Params are the RoCE knobs Configure sets. The zero value turns every
// feature off; Trust and DSCP2Prio at their zero values are left alone.
type Params struct {
	// DCQCNRPEnable enables the DCQCN reaction point on all 8 priorities
	// (Mellanox ecn/roce_rp/enable/*). Default false.
	DCQCNRPEnable bool
	// DCQCNNPEnable enables the DCQCN notification point on all 8
	// priorities (Mellanox ecn/roce_np/enable/*). Default false.
	DCQCNNPEnable bool
	// MinTimeBetweenCNPs is the NP's CNP pacing in µs (Mellanox
	// ecn/roce_np/min_time_between_cnps). Default 0.
	MinTimeBetweenCNPs int
	// AdaptiveRetrans sets ROCE_ACCL.roce_adp_retrans_en (Mellanox).
	// Default false.
	AdaptiveRetrans bool
	// SlowRestart sets ROCE_ACCL.roce_slow_restart_en (Mellanox). Default
	// false.
	SlowRestart bool
	// DCQCNEnable sets irdma's roce_dcqcn_enable (Intel). Default false.
	DCQCNEnable bool
	// Trust is the Mellanox priority trust state, "dscp" or "pcp"
	// (mlnx_qos --trust). Default "": unchanged.
	Trust string
	// DSCP2Prio maps DSCP values (0..63) to priorities (0..7) (mlnx_qos
	// --dscp2prio). Only entries that differ from the NIC's map are set.
	// Default nil: unchanged.
	DSCP2Prio map[int]int
}

// DSCP2Prio inverts a prio-dscp-map (priority → DSCPs) into a full
// DSCP → priority map. DSCPs the map does not name keep the default
// priority DSCP/8.
func DSCP2Prio(prioDSCP map[int][]int) map[int]int {
	m := make(map[int]int, 64)
	for d := range 64 {
		m[d] = d / 8
	}
	for p, ds := range prioDSCP {
		for _, d := range ds {
			m[d] = p
		}
	}
	return m
}

func (p Params) validate() error {
	if p.MinTimeBetweenCNPs < 0 {
		return fmt.Errorf("%w: min-time-between-cnps %d < 0", ErrBadParams, p.MinTimeBetweenCNPs)
	}
	switch p.Trust {
	case "", "dscp", "pcp":
	default:
		return fmt.Errorf("%w: trust %q (want dscp or pcp)", ErrBadParams, p.Trust)
	}
	for d, prio := range p.DSCP2Prio {
		if d < 0 || d > 63 || prio < 0 || prio > 7 {
			return fmt.Errorf("%w: dscp2prio %d→%d out of range", ErrBadParams, d, prio)
		}
	}
	return nil
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
