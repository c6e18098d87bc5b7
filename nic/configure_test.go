package nic

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// listing1 is Lumina's Listing 1 (roce-parameters) on a Mellanox NIC, with
// DSCP trust as the public tool sets it.
var listing1 = Params{DCQCNRPEnable: false, DCQCNNPEnable: true, MinTimeBetweenCNPs: 0, AdaptiveRetrans: false, SlowRestart: true,
	Trust: "dscp", DSCP2Prio: DSCP2Prio(nil)}

var mlxDev = Device{IfName: "enp4s0"}

func TestResolve(t *testing.T) {
	tests := []struct {
		tree string
		in   Device
		want Device
	}{
		{"mlx5", Device{IfName: "enp4s0"}, Device{IfName: "enp4s0", IBDev: "mlx5_0", Port: 1, PCIAddr: "0000:3b:00.0", Vendor: VendorMellanox}},
		{"mlx5", Device{IfName: "enp4s0", Port: 2, Vendor: VendorIntel}, Device{IfName: "enp4s0", IBDev: "mlx5_0", Port: 2, PCIAddr: "0000:3b:00.0", Vendor: VendorIntel}},
		{"e810", Device{IfName: "ens1f0"}, Device{IfName: "ens1f0", IBDev: "irdma0", Port: 1, PCIAddr: "0000:5e:00.0", Vendor: VendorIntel}},
	}
	for _, tt := range tests {
		t.Run(tt.tree+"/"+tt.in.IfName, func(t *testing.T) {
			h := &Host{FS: OSFS{Root: filepath.Join("testdata", tt.tree)}}
			got, err := h.Resolve(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("Resolve(%+v) = %+v, %v, want %+v", tt.in, got, err, tt.want)
			}
		})
	}
	h := &Host{FS: OSFS{Root: "testdata/mlx5"}}
	// The cause stays matchable beside the package's error (%w twice).
	if _, err := h.Resolve(Device{IfName: "eth9"}); !errors.Is(err, ErrNoDevice) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Resolve(eth9) error = %v, want ErrNoDevice wrapping fs.ErrNotExist", err)
	}
}

func TestConfigureMellanox(t *testing.T) {
	root := fakeTree(t, "mlx5")
	tools := newFakeTools()
	h := &Host{FS: OSFS{Root: root}, Run: tools}
	before := snapshot(t, root)
	a, err := h.Configure(context.Background(), mlxDev, listing1)
	if err != nil {
		t.Fatal(err)
	}
	ecn := "sys/class/net/enp4s0/ecn/"
	if got := readT(t, root, ecn+"roce_np/min_time_between_cnps"); got != "0" {
		t.Errorf("min_time_between_cnps = %s, want 0", got)
	}
	for p := range 8 {
		if got := readT(t, root, fmt.Sprintf("%sroce_rp/enable/%d", ecn, p)); got != "0" {
			t.Errorf("roce_rp/enable/%d = %s, want 0", p, got)
		}
		if got := readT(t, root, fmt.Sprintf("%sroce_np/enable/%d", ecn, p)); got != "1" {
			t.Errorf("roce_np/enable/%d = %s, want 1", p, got)
		}
	}
	if tools.reg["roce_adp_retrans_en"] != 0 || tools.reg["roce_slow_restart_en"] != 1 || tools.trust != "dscp" {
		t.Errorf("after Configure: adp %d slow %d trust %s, want 0 1 dscp", tools.reg["roce_adp_retrans_en"], tools.reg["roce_slow_restart_en"], tools.trust)
	}
	wantSets := []string{
		"mlnx_qos -i enp4s0 --trust=dscp",
		"mlxreg -d 0000:3b:00.0 --reg_name ROCE_ACCL --set roce_adp_retrans_en=0 --yes",
		"mlxreg -d 0000:3b:00.0 --reg_name ROCE_ACCL --set roce_slow_restart_en=1 --yes",
	}
	if got := tools.sets(); !slices.Equal(got, wantSets) {
		t.Errorf("commands that set = %q, want %q", got, wantSets)
	}
	// 1 CNP pacing + 8 RP enables + trust + 2 register fields; the NP
	// enables and the DSCP map were already right.
	if n := len(a.Changes()); n != 12 {
		t.Errorf("len(Changes()) = %d, want 12: %+v", n, a.Changes())
	}
	if a.Ignored != nil {
		t.Errorf("Ignored = %q, want none", a.Ignored)
	}

	if err := a.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(before, snapshot(t, root)); len(d) > 0 {
		t.Errorf("after Restore the tree differs:\n%s", strings.Join(d, "\n"))
	}
	if tools.reg["roce_adp_retrans_en"] != 1 || tools.reg["roce_slow_restart_en"] != 0 || tools.trust != "pcp" {
		t.Errorf("after Restore: adp %d slow %d trust %s, want 1 0 pcp", tools.reg["roce_adp_retrans_en"], tools.reg["roce_slow_restart_en"], tools.trust)
	}
	wantSets = append(wantSets,
		"mlxreg -d 0000:3b:00.0 --reg_name ROCE_ACCL --set roce_slow_restart_en=0 --yes",
		"mlxreg -d 0000:3b:00.0 --reg_name ROCE_ACCL --set roce_adp_retrans_en=1 --yes",
		"mlnx_qos -i enp4s0 --trust=pcp")
	if got := tools.sets(); !slices.Equal(got, wantSets) {
		t.Errorf("commands after Restore = %q, want %q", got, wantSets)
	}
	n := len(tools.calls)
	if err := a.Restore(context.Background()); err != nil || len(tools.calls) != n {
		t.Errorf("second Restore = %v with %d new commands, want nil and none", err, len(tools.calls)-n)
	}
}

func TestConfigureDSCPMap(t *testing.T) {
	root := fakeTree(t, "mlx5")
	tools := newFakeTools()
	h := &Host{FS: OSFS{Root: root}, Run: tools}
	p := Params{Trust: "dscp", DSCP2Prio: DSCP2Prio(map[int][]int{5: {26, 24}})}
	a, err := h.Configure(context.Background(), mlxDev, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mlnx_qos -i enp4s0 --trust=dscp", "mlnx_qos -i enp4s0 --dscp2prio=set,24,5", "mlnx_qos -i enp4s0 --dscp2prio=set,26,5"}
	if got := tools.sets()[:3]; !slices.Equal(got, want) {
		t.Errorf("mlnx_qos calls = %q, want %q", got, want)
	}
	if err := a.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tools.dscp[24] != 3 || tools.dscp[26] != 3 || tools.dscp[25] != 3 {
		t.Errorf("after Restore DSCP 24, 25, 26 → %d %d %d, want 3 3 3", tools.dscp[24], tools.dscp[25], tools.dscp[26])
	}
}

func TestConfigureDSCPMapAssumedDefault(t *testing.T) {
	root := fakeTree(t, "mlx5")
	tools := newFakeTools()
	tools.noQoS = true // mlnx_qos prints no dscp2prio table: the default map is assumed
	h := &Host{FS: OSFS{Root: root}, Run: tools}
	p := listing1
	p.DSCP2Prio = DSCP2Prio(map[int][]int{6: {0}})
	a, err := h.Configure(context.Background(), mlxDev, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.sets(); !slices.Contains(got, "mlnx_qos -i enp4s0 --dscp2prio=set,0,6") || len(got) != 4 {
		t.Errorf("commands = %q", got)
	}
	if err := a.Restore(context.Background()); err != nil || tools.dscp[0] != 0 {
		t.Errorf("Restore = %v, DSCP 0 → %d", err, tools.dscp[0])
	}
}

func TestConfigureNothingChangedOnPreflightError(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, root string, tools *fakeTools)
		want    error
		wantMsg string
	}{
		{"read-only rp enable", func(t *testing.T, root string, _ *fakeTools) {
			chmod(t, root, "sys/class/net/enp4s0/ecn/roce_rp/enable/5", 0o444)
		}, ErrReadOnly, "roce_rp/enable/5"},
		{"missing min_time_between_cnps (upstream mlx5_core)", func(t *testing.T, root string, _ *fakeTools) {
			rm(t, root, "sys/class/net/enp4s0/ecn/roce_np/min_time_between_cnps")
		}, ErrUnsupported, "min_time_between_cnps does not exist"},
		{"missing ecn directory", func(t *testing.T, root string, _ *fakeTools) {
			if err := os.RemoveAll(filepath.Join(root, "sys/class/net/enp4s0/ecn")); err != nil {
				t.Fatal(err)
			}
		}, ErrUnsupported, "ecn/roce_rp/enable/0 does not exist"},
		{"slow restart not configurable", func(t *testing.T, _ string, tools *fakeTools) {
			tools.reg["roce_slow_restart_field_select"] = 0
		}, ErrUnsupported, "roce_slow_restart_field_select = 0"},
		{"old firmware without ROCE_ACCL field", func(t *testing.T, _ string, tools *fakeTools) {
			delete(tools.reg, "roce_adp_retrans_en")
		}, ErrUnsupported, "no field roce_adp_retrans_en"},
		{"mlxreg missing", func(t *testing.T, _ string, tools *fakeTools) {
			tools.failOn = func(c string) error {
				if strings.HasPrefix(c, "mlxreg") {
					return errors.New(`exec: "mlxreg": executable file not found in $PATH`)
				}
				return nil
			}
		}, ErrCommand, "executable file not found"},
		{"mlnx_qos without a trust state", func(t *testing.T, _ string, tools *fakeTools) {
			tools.trust = ""
		}, ErrCommand, "no \"Priority trust state\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, "mlx5")
			tools := newFakeTools()
			tt.prepare(t, root, tools)
			before := snapshot(t, root)
			h := &Host{FS: OSFS{Root: root}, Run: tools}
			a, err := h.Configure(context.Background(), mlxDev, listing1)
			if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.wantMsg) || a != nil {
				t.Fatalf("Configure error = %v, want %v mentioning %q", err, tt.want, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), "nothing changed") {
				t.Errorf("error %q does not say nothing changed", err)
			}
			if d := diffSnap(before, snapshot(t, root)); len(d) > 0 {
				t.Errorf("files changed:\n%s", strings.Join(d, "\n"))
			}
			if s := tools.sets(); len(s) > 0 {
				t.Errorf("commands that set ran: %q", s)
			}
		})
	}
}

func TestConfigureRollback(t *testing.T) {
	tests := []struct {
		name     string
		failFile string // a sysfs write the "kernel" rejects
		failCmd  string // a command that fails
		wantMsg  string
	}{
		{"kernel rejects np enable 3", "/sys/class/net/enp4s0/ecn/roce_rp/enable/3", "", "roce_rp/enable/3 to 0"},
		{"mlxreg set fails", "", "roce_slow_restart_en=1", "ROCE_ACCL.roce_slow_restart_en to 1"},
		{"first knob fails", "", "--trust=dscp", "trust to dscp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, "mlx5")
			tools := newFakeTools()
			tools.failOn = func(c string) error {
				if tt.failCmd != "" && strings.Contains(c, tt.failCmd) {
					return errors.New("-E- Failed to send access register")
				}
				return nil
			}
			fsys := faultFS{FS: OSFS{Root: root}, fail: func(name, data string) error {
				if name == tt.failFile && data == "0" {
					return syscall.EINVAL
				}
				return nil
			}}
			before := snapshot(t, root)
			h := &Host{FS: fsys, Run: tools}
			_, err := h.Configure(context.Background(), mlxDev, listing1)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Configure error = %v, want one mentioning %q", err, tt.wantMsg)
			}
			if d := diffSnap(before, snapshot(t, root)); len(d) > 0 {
				t.Errorf("files not restored:\n%s", strings.Join(d, "\n"))
			}
			if tools.reg["roce_adp_retrans_en"] != 1 || tools.reg["roce_slow_restart_en"] != 0 || tools.trust != "pcp" {
				t.Errorf("register/trust not restored: adp %d slow %d trust %s", tools.reg["roce_adp_retrans_en"], tools.reg["roce_slow_restart_en"], tools.trust)
			}
			if errors.Is(err, ErrRestore) {
				t.Errorf("error %v wraps ErrRestore, but the restore succeeded", err)
			}
		})
	}
}

func TestConfigureRestoreFails(t *testing.T) {
	root := fakeTree(t, "mlx5")
	tools := newFakeTools()
	tools.failOn = func(c string) error {
		if strings.Contains(c, "roce_slow_restart_en=1") || strings.Contains(c, "roce_adp_retrans_en=1") {
			return errors.New("-E- device busy")
		}
		return nil
	}
	h := &Host{FS: OSFS{Root: root}, Run: tools}
	_, err := h.Configure(context.Background(), mlxDev, listing1)
	if !errors.Is(err, ErrRestore) || !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "roce_adp_retrans_en back to 1") {
		t.Fatalf("Configure error = %v, want ErrRestore naming roce_adp_retrans_en", err)
	}
	// Everything else was restored.
	if got := readT(t, root, "sys/class/net/enp4s0/ecn/roce_rp/enable/0"); got != "1" {
		t.Errorf("roce_rp/enable/0 = %s, want 1 (restored)", got)
	}
	if tools.trust != "pcp" {
		t.Errorf("trust = %s, want pcp (restored)", tools.trust)
	}
}

func TestConfigureIntel(t *testing.T) {
	root := fakeTree(t, "e810")
	fsys := &configfsFS{OSFS: OSFS{Root: root}, state: map[string]string{"roce_dcqcn_enable": "0", "roce_cwnd": "4"}}
	h := &Host{FS: fsys, Run: newFakeTools()}
	p := Params{DCQCNEnable: true, DCQCNRPEnable: true, DCQCNNPEnable: true, MinTimeBetweenCNPs: 4}
	a, err := h.Configure(context.Background(), Device{IfName: "ens1f0"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if fsys.state["roce_dcqcn_enable"] != "1" {
		t.Errorf("roce_dcqcn_enable = %s, want 1", fsys.state["roce_dcqcn_enable"])
	}
	if want := []string{"DCQCNRPEnable", "DCQCNNPEnable", "MinTimeBetweenCNPs"}; !slices.Equal(a.Ignored, want) {
		t.Errorf("Ignored = %q, want %q", a.Ignored, want)
	}
	g := irdmaConfigfs + "/irdma0"
	if want := []string{"mkdir " + g, "rmdir " + g, "mkdir " + g, "rmdir " + g}; !slices.Equal(fsys.log, want) {
		t.Errorf("configfs operations = %q, want %q", fsys.log, want)
	}
	if err := a.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fsys.state["roce_dcqcn_enable"] != "0" || fsys.state["roce_cwnd"] != "4" {
		t.Errorf("after Restore state = %v, want roce_dcqcn_enable 0, roce_cwnd 4", fsys.state)
	}
	if _, err := os.Stat(filepath.Join(root, g)); !os.IsNotExist(err) {
		t.Errorf("configfs group left behind: %v", err)
	}

	// Without irdma's configfs.
	root = fakeTree(t, "e810")
	if err := os.RemoveAll(filepath.Join(root, irdmaConfigfs)); err != nil {
		t.Fatal(err)
	}
	h = &Host{FS: OSFS{Root: root}}
	if _, err := h.Configure(context.Background(), Device{IfName: "ens1f0"}, p); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Configure without configfs: error = %v, want ErrUnsupported", err)
	}
}

func TestConfigureBadInput(t *testing.T) {
	h := &Host{FS: OSFS{Root: "testdata/mlx5"}, Run: newFakeTools()}
	tests := []struct {
		name string
		dev  Device
		p    Params
		want error
	}{
		{"negative pacing", mlxDev, Params{MinTimeBetweenCNPs: -1}, ErrBadParams},
		{"bad trust", mlxDev, Params{Trust: "vlan"}, ErrBadParams},
		{"bad dscp", mlxDev, Params{DSCP2Prio: map[int]int{64: 1}}, ErrBadParams},
		{"no interface", Device{}, Params{}, ErrNoDevice},
		{"unknown interface", Device{IfName: "eth7"}, Params{}, ErrNoDevice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.Configure(context.Background(), tt.dev, tt.p); !errors.Is(err, tt.want) {
				t.Errorf("Configure = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestPackageConfigureRestoreFunc(t *testing.T) {
	root := fakeTree(t, "mlx5")
	tools := newFakeTools()
	var log strings.Builder
	h := &Host{FS: OSFS{Root: root}, Run: tools, Log: &log}
	restore, err := h.configureFunc(context.Background(), mlxDev, listing1)
	if err != nil {
		t.Fatal(err)
	}
	tools.failOn = func(c string) error {
		if strings.Contains(c, "--trust=pcp") {
			return errors.New("boom")
		}
		return nil
	}
	restore()
	if !strings.HasPrefix(log.String(), "lumina: nic: ") || !strings.Contains(log.String(), "trust back to pcp") {
		t.Errorf("restore log = %q", log.String())
	}
}

func chmod(t *testing.T, root, name string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(root, name), mode); err != nil {
		t.Fatal(err)
	}
}

func rm(t *testing.T, root, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, name)); err != nil {
		t.Fatal(err)
	}
}
