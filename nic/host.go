package nic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// Host is a machine whose RNICs the package configures and reads. The zero
// Host is the local machine. A Host is safe for concurrent use if its FS,
// Runner and Ethtool are; Configure calls on the same Device must not
// overlap.
type Host struct {
	// FS reaches sysfs, configfs and procfs. Default OSFS{} (the real
	// root).
	FS FS
	// Run runs mlxreg and mlnx_qos. Default ExecRunner{}.
	Run Runner
	// Ethtool reads `ethtool -S` statistics. Default: the SIOCETHTOOL
	// ioctl on Linux; ErrUnsupported elsewhere.
	Ethtool EthtoolSource
	// Log receives restore failures of the package-level Configure's
	// restore function. Default os.Stderr.
	Log io.Writer
}

func (h *Host) fs() FS {
	if h.FS == nil {
		return OSFS{}
	}
	return h.FS
}

func (h *Host) runner() Runner {
	if h.Run == nil {
		return ExecRunner{}
	}
	return h.Run
}

func (h *Host) ethtool() EthtoolSource {
	if h.Ethtool == nil {
		return ioctlEthtool{}
	}
	return h.Ethtool
}

func (h *Host) log() io.Writer {
	if h.Log == nil {
		return os.Stderr
	}
	return h.Log
}

var local Host

// Configure sets p on dev of the local machine (see Host.Configure). The
// restore function puts the previous values back; it reports its failures
// on stderr, prefixed "lumina: nic:".
func Configure(ctx context.Context, dev Device, p Params) (restore func(), err error) {
	return local.configureFunc(ctx, dev, p)
}

// ReadCounters reads dev's counters on the local machine (see
// Host.ReadCounters).
func ReadCounters(dev Device) (map[string]uint64, error) { return local.ReadCounters(dev) }

func (h *Host) configureFunc(ctx context.Context, dev Device, p Params) (func(), error) {
	a, err := h.Configure(ctx, dev, p)
	if err != nil {
		return func() {}, err
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.Restore(rctx); err != nil {
			fmt.Fprintf(h.log(), "lumina: nic: %v\n", err)
		}
	}, nil
}

// Resolve fills in dev's defaults from sysfs: the PCI function, the vendor
// (from the bound driver), the verbs device and port.
func (h *Host) Resolve(dev Device) (Device, error) {
	fsys := h.fs()
	if dev.IfName == "" || strings.ContainsAny(dev.IfName, "/") {
		return dev, fmt.Errorf("%w: interface name %q", ErrNoDevice, dev.IfName)
	}
	netdir := "/sys/class/net/" + dev.IfName
	if _, err := fsys.Stat(netdir); err != nil {
		return dev, fmt.Errorf("%w: %s: %w", ErrNoDevice, dev.IfName, err)
	}
	if dev.Port == 0 {
		dev.Port = 1
	}
	if dev.PCIAddr == "" {
		if l, err := fsys.Readlink(netdir + "/device"); err == nil {
			dev.PCIAddr = path.Base(l)
		}
	}
	if dev.Vendor == VendorAuto {
		if l, err := fsys.Readlink(netdir + "/device/driver"); err == nil {
			dev.Vendor = VendorOf(path.Base(l))
		}
	}
	if dev.IBDev == "" {
		dev.IBDev = h.ibdevOf(dev.IfName)
	}
	return dev, nil
}

// ibdevOf finds the verbs device of a netdev: the PCI function's
// infiniband/ directory, else a GID table entry naming it.
func (h *Host) ibdevOf(ifname string) string {
	fsys := h.fs()
	if es, err := fsys.ReadDir("/sys/class/net/" + ifname + "/device/infiniband"); err == nil && len(es) > 0 {
		return es[0].Name()
	}
	devs, _ := fsys.ReadDir("/sys/class/infiniband")
	for _, d := range devs {
		ports, _ := fsys.ReadDir("/sys/class/infiniband/" + d.Name() + "/ports")
		for _, p := range ports {
			dir := "/sys/class/infiniband/" + d.Name() + "/ports/" + p.Name() + "/gid_attrs/ndevs"
			nds, _ := fsys.ReadDir(dir)
			for _, nd := range nds {
				if b, err := fsys.ReadFile(dir + "/" + nd.Name()); err == nil && strings.TrimSpace(string(b)) == ifname {
					return d.Name()
				}
			}
		}
	}
	return ""
}

// Change is one knob Configure changed.
type Change struct {
	What string `json:"what"` // file path or "mlxreg ROCE_ACCL.<field>" / "mlnx_qos <what>"
	From string `json:"from"`
	To   string `json:"to"`
}

// Applied is a successful Configure: what changed and how to undo it.
type Applied struct {
	Device Device
	// Ignored names the Params fields with a non-zero value that dev's
	// vendor has no knob for.
	Ignored []string
	steps   []step // changed steps, in application order
	done    bool
}

// Changes lists the knobs Configure changed (those already at the wanted
// value are not listed).
func (a *Applied) Changes() []Change {
	out := make([]Change, len(a.steps))
	for i, s := range a.steps {
		out[i] = Change{What: s.what, From: s.prev, To: s.want}
	}
	return out
}

// Restore puts every changed knob back to its previous value, in reverse
// order. It tries every knob even after a failure and reports all failures
// (wrapping ErrRestore). A second call does nothing.
func (a *Applied) Restore(ctx context.Context) error {
	if a.done {
		return nil
	}
	a.done = true
	return restoreSteps(ctx, a.steps)
}

// step is one knob: its previous and wanted values and how to set it.
type step struct {
	what       string
	prev, want string
	set        func(ctx context.Context, v string) error
}

// Configure sets p on dev, all or nothing. It resolves dev, reads every
// knob's current value and checks that it can be written; any problem is
// reported before anything changes. It then sets the knobs whose value
// differs, in the public tool's order (trust, DSCP map, CNP pacing, RP
// enables, NP enables, ROCE_ACCL fields); if one fails, the ones already
// set are restored and the error says so.
//
// Which knobs exist depends on dev.Vendor: Mellanox takes every field but
// DCQCNEnable (its DCQCN is the per-priority RP/NP enables); Intel takes
// only DCQCNEnable. Applied.Ignored lists the fields the vendor has no knob
// for, so a run can record that they had no effect.
func (h *Host) Configure(ctx context.Context, dev Device, p Params) (*Applied, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	dev, err := h.Resolve(dev)
	if err != nil {
		return nil, err
	}
	var steps []step
	var ignored []string
	switch dev.Vendor {
	case VendorMellanox:
		steps, err = h.planMellanox(ctx, dev, p)
		if p.DCQCNEnable {
			ignored = append(ignored, "DCQCNEnable")
		}
	case VendorIntel:
		steps, err = h.planIntel(dev, p)
		for _, f := range []struct {
			name string
			set  bool
		}{{"DCQCNRPEnable", p.DCQCNRPEnable}, {"DCQCNNPEnable", p.DCQCNNPEnable}, {"MinTimeBetweenCNPs", p.MinTimeBetweenCNPs != 0},
			{"AdaptiveRetrans", p.AdaptiveRetrans}, {"SlowRestart", p.SlowRestart}, {"Trust", p.Trust != ""}, {"DSCP2Prio", p.DSCP2Prio != nil}} {
			if f.set {
				ignored = append(ignored, f.name)
			}
		}
	default:
		return nil, fmt.Errorf("%w: %s: unknown NIC vendor (set nic.type: cx4, cx5, cx6 or e810)", ErrUnsupported, dev.IfName)
	}
	if err != nil {
		return nil, fmt.Errorf("nic: %s: nothing changed: %w", dev.IfName, err)
	}
	var applied []step
	for _, s := range steps {
		if s.prev == s.want {
			continue
		}
		if err := s.set(ctx, s.want); err != nil {
			err = fmt.Errorf("nic: %s: setting %s to %s: %w", dev.IfName, s.what, s.want, err)
			if rerr := restoreSteps(ctx, applied); rerr != nil {
				return nil, errors.Join(err, rerr)
			}
			if len(applied) > 0 {
				err = fmt.Errorf("%w (the %d knobs already set were restored)", err, len(applied))
			}
			return nil, err
		}
		applied = append(applied, s)
	}
	return &Applied{Device: dev, Ignored: ignored, steps: applied}, nil
}

func restoreSteps(ctx context.Context, steps []step) error {
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		// A cancelled context must not stop a restore.
		if err := s.set(context.WithoutCancel(ctx), s.prev); err != nil {
			errs = append(errs, fmt.Errorf("%s back to %s: %w", s.what, s.prev, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrRestore, errors.Join(errs...))
	}
	return nil
}

// sysfsStep plans writing want to name: it reads the current value and
// checks the file is writable.
func (h *Host) sysfsStep(name, want string) (step, error) {
	fsys := h.fs()
	b, err := fsys.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return step{}, fmt.Errorf("%w: %s does not exist", ErrUnsupported, name)
	}
	if err != nil {
		return step{}, fmt.Errorf("reading %s: %w", name, err)
	}
	if err := writable(fsys, name); err != nil {
		if isPerm(err) {
			return step{}, fmt.Errorf("%w: %s: %w", ErrReadOnly, name, err)
		}
		return step{}, err
	}
	s := step{what: name, prev: strings.TrimSpace(string(b)), want: want}
	s.set = func(_ context.Context, v string) error {
		err := fsys.WriteFile(name, []byte(v+"\n"))
		if isPerm(err) {
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return err
	}
	return s, nil
}
