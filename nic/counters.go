package nic

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// EthtoolSource reads an interface's driver statistics, the list `ethtool
// -S IF` prints.
type EthtoolSource interface {
	Stats(ifname string) (map[string]uint64, error)
}

// Counters are one reading of a real port's counters, by source (sysfs hw
// and port counters, ethtool); Map flattens them to the name → value map
// the analyzers compare (model.Counters), as the software RNIC's typed
// softrnic.Counters do through CounterMap.
type Counters struct {
	// HW is /sys/class/infiniband/IBDEV/ports/PORT/hw_counters/*.
	HW map[string]uint64 `json:"hw_counters"`
	// Port is /sys/class/infiniband/IBDEV/ports/PORT/counters/* (the
	// *_data ones count 4-byte words).
	Port map[string]uint64 `json:"port_counters"`
	// Ethtool is `ethtool -S IF`.
	Ethtool map[string]uint64 `json:"ethtool"`
}

// Map flattens the counters: hw and port counters under their own names
// (the two sets do not overlap), ethtool statistics as "ethtool.<name>".
func (c *Counters) Map() map[string]uint64 {
	m := make(map[string]uint64, len(c.HW)+len(c.Port)+len(c.Ethtool))
	for k, v := range c.Port {
		m[k] = v
	}
	for k, v := range c.HW {
		m[k] = v
	}
	for k, v := range c.Ethtool {
		m["ethtool."+k] = v
	}
	return m
}

// ReadCounters reads dev's counters and flattens them (Counters.Map).
// Like ReadCounterSet, it returns what it could read along with an error.
func (h *Host) ReadCounters(dev Device) (map[string]uint64, error) {
	c, err := h.ReadCounterSet(dev)
	return c.Map(), err
}

// notCounters are hw_counters files that are settings, not counters.
var notCounters = map[string]bool{"lifespan": true}

// ReadCounterSet reads dev's verbs counters from sysfs and, when
// dev.IfName is set, its ethtool statistics. dev.IBDev is found from
// dev.IfName when empty.
//
// The result is never nil and holds every counter that could be read. The
// error, if any, wraps ErrNoDevice (unknown device), ErrNoCounters (the
// port has neither hw_counters nor counters) or ErrCounter (naming each
// file that could not be read or parsed, and an ethtool failure).
func (h *Host) ReadCounterSet(dev Device) (*Counters, error) {
	c := &Counters{HW: map[string]uint64{}, Port: map[string]uint64{}, Ethtool: map[string]uint64{}}
	if dev.IfName != "" {
		d, err := h.Resolve(dev)
		if err != nil {
			return c, err
		}
		dev = d
	}
	if dev.Port == 0 {
		dev.Port = 1
	}
	if dev.IBDev == "" {
		return c, fmt.Errorf("%w: %s has no verbs device", ErrNoDevice, dev.IfName)
	}
	fsys := h.fs()
	base := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d", dev.IBDev, dev.Port)
	if _, err := fsys.Stat(base); err != nil {
		return c, fmt.Errorf("%w: %s: %w", ErrNoDevice, base, err)
	}
	var bad []string
	missing := 0
	for _, src := range []struct {
		dir string
		m   map[string]uint64
	}{{base + "/hw_counters", c.HW}, {base + "/counters", c.Port}} {
		es, err := fsys.ReadDir(src.dir)
		if errors.Is(err, fs.ErrNotExist) {
			missing++
			continue
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", src.dir, err))
			continue
		}
		for _, e := range es {
			if e.IsDir() || notCounters[e.Name()] {
				continue
			}
			name := path.Join(src.dir, e.Name())
			b, err := fsys.ReadFile(name)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 64)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: not a counter: %q", name, trimOut(string(b))))
				continue
			}
			src.m[e.Name()] = v
		}
	}
	var errs []error
	if missing == 2 {
		errs = append(errs, fmt.Errorf("%w: %s has neither hw_counters nor counters", ErrNoCounters, base))
	}
	if dev.IfName != "" {
		st, err := h.ethtool().Stats(dev.IfName)
		if err != nil {
			bad = append(bad, fmt.Sprintf("ethtool -S %s: %v", dev.IfName, err))
		}
		for k, v := range st {
			c.Ethtool[k] = v
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		errs = append(errs, fmt.Errorf("%w: %s", ErrCounter, strings.Join(bad, "; ")))
	}
	switch len(errs) {
	case 0:
		return c, nil
	case 1:
		return c, errs[0]
	}
	return c, multiError(errs)
}

// Versions identifies the software and firmware of an RNIC, for the run's
// record.
type Versions struct {
	// Personality is the software RNIC's personality (lumina's softrnic).
	Personality string `json:"personality,omitempty"`
	IfName      string `json:"if_name,omitempty"`
	IBDev       string `json:"ib_device,omitempty"`
	PCIAddr     string `json:"pci_addr,omitempty"`
	// Driver is the kernel module bound to the PCI function
	// (/sys/class/net/IF/device/driver).
	Driver string `json:"driver,omitempty"`
	// DriverVersion is /sys/module/DRIVER/version: set by out-of-tree
	// drivers (MLNX_OFED, Intel's ice/irdma); in-tree drivers are versioned
	// by Kernel.
	DriverVersion string `json:"driver_version,omitempty"`
	// Firmware is /sys/class/infiniband/IBDEV/fw_ver.
	Firmware string `json:"firmware,omitempty"`
	// HCAType and BoardID are /sys/class/infiniband/IBDEV/{hca_type,board_id}.
	HCAType string `json:"hca_type,omitempty"`
	BoardID string `json:"board_id,omitempty"`
	// Kernel is /proc/sys/kernel/osrelease.
	Kernel string `json:"kernel,omitempty"`
}

// Versions reads dev's driver, firmware and kernel versions. Missing files
// leave their fields empty; only an unknown interface is an error.
func (h *Host) Versions(dev Device) (Versions, error) {
	dev, err := h.Resolve(dev)
	if err != nil {
		return Versions{}, err
	}
	fsys := h.fs()
	read := func(name string) string {
		b, err := fsys.ReadFile(name)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	v := Versions{IfName: dev.IfName, IBDev: dev.IBDev, PCIAddr: dev.PCIAddr, Kernel: read("/proc/sys/kernel/osrelease")}
	if l, err := fsys.Readlink("/sys/class/net/" + dev.IfName + "/device/driver"); err == nil {
		v.Driver = path.Base(l)
		v.DriverVersion = read("/sys/module/" + v.Driver + "/version")
	}
	if dev.IBDev != "" {
		ib := "/sys/class/infiniband/" + dev.IBDev
		v.Firmware, v.HCAType, v.BoardID = read(ib+"/fw_ver"), read(ib+"/hca_type"), read(ib+"/board_id")
	}
	return v, nil
}

// Versions reads dev's versions on the local machine (see Host.Versions).
func ReadVersions(dev Device) (Versions, error) { return local.Versions(dev) }
