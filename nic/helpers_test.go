package nic

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fakeTree copies testdata/<name> (a fake root with sys/ and proc/) into a
// temporary directory, keeping symlinks, and returns its path.
func fakeTree(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func readT(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// snapshot returns every regular file under root with its content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return nil
	})
	return m
}

func diffSnap(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q → %q", k, v, b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "new "+k)
		}
	}
	slices.Sort(d)
	return d
}

// fakeTools simulates mlxreg (the ROCE_ACCL register) and mlnx_qos (trust
// state and DSCP map) and records every argument vector.
type fakeTools struct {
	mu     sync.Mutex
	reg    map[string]uint64
	trust  string
	dscp   map[int]int
	calls  []string
	failOn func(call string) error // non-nil result fails the call
	noQoS  bool                    // mlnx_qos prints no dscp2prio table
}

func newFakeTools() *fakeTools {
	f := &fakeTools{
		reg: map[string]uint64{
			"roce_adp_retrans_field_select": 1, "roce_tx_window_field_select": 1, "roce_slow_restart_field_select": 1,
			"roce_adp_retrans_en": 1, "roce_tx_window_en": 0, "roce_slow_restart_en": 0, "adp_retx_base_timeout_min": 0xfa0,
		},
		trust: "pcp",
		dscp:  DSCP2Prio(nil),
	}
	return f
}

var regOrder = []string{"roce_adp_retrans_field_select", "roce_tx_window_field_select", "roce_slow_restart_field_select",
	"roce_adp_retrans_en", "roce_tx_window_en", "roce_slow_restart_en", "adp_retx_base_timeout_min"}

func (f *fakeTools) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := name + " " + strings.Join(args, " ")
	f.calls = append(f.calls, call)
	if f.failOn != nil {
		if err := f.failOn(call); err != nil {
			return nil, err
		}
	}
	switch name {
	case "mlxreg":
		if len(args) == 6 && args[4] == "--get" {
			var b strings.Builder
			b.WriteString("Sending access register...\n\nField Name                    | Data\n==========================================\n")
			for _, k := range regOrder {
				if v, ok := f.reg[k]; ok {
					fmt.Fprintf(&b, "%-30s| 0x%08x\n", k, v)
				}
			}
			b.WriteString("==========================================\n")
			return []byte(b.String()), nil
		}
		if len(args) == 7 && args[4] == "--set" && args[6] == "--yes" {
			k, v, _ := strings.Cut(args[5], "=")
			n, err := strconv.ParseUint(v, 0, 64)
			if _, ok := f.reg[k]; !ok || err != nil {
				return nil, fmt.Errorf("-E- unknown field %s", k)
			}
			f.reg[k] = n
			return []byte("Sending access register...\n"), nil
		}
	case "mlnx_qos":
		if len(args) == 2 {
			var b strings.Builder
			fmt.Fprintf(&b, "DCBX mode: OS controlled\nPriority trust state: %s\n", f.trust)
			if !f.noQoS {
				b.WriteString("dscp2prio mapping:\n")
				for p := range 8 {
					fmt.Fprintf(&b, "\tprio:%d dscp:", p)
					for d := 63; d >= 0; d-- {
						if f.dscp[d] == p {
							fmt.Fprintf(&b, "%02d,", d)
						}
					}
					b.WriteString("\n")
				}
			}
			b.WriteString("default priority:\nReceive buffer size (bytes): 130944,130944,0,0,0,0,0,0,\n")
			return []byte(b.String()), nil
		}
		if v, ok := strings.CutPrefix(args[2], "--trust="); ok {
			f.trust = v
			return nil, nil
		}
		if v, ok := strings.CutPrefix(args[2], "--dscp2prio=set,"); ok {
			ds, ps, _ := strings.Cut(v, ",")
			d, _ := strconv.Atoi(ds)
			p, _ := strconv.Atoi(ps)
			f.dscp[d] = p
			return nil, nil
		}
	}
	return nil, fmt.Errorf("fake: unexpected command %q", call)
}

func (f *fakeTools) sets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.Contains(c, "--set") || strings.Contains(c, "--trust") || strings.Contains(c, "--dscp2prio") {
			out = append(out, c)
		}
	}
	return out
}

// faultFS wraps an FS and fails writes for which fail returns an error,
// as the kernel does when it rejects a value.
type faultFS struct {
	FS
	fail func(name, data string) error
}

func (f faultFS) WriteFile(name string, data []byte) error {
	if err := f.fail(name, strings.TrimSpace(string(data))); err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	return f.FS.WriteFile(name, data)
}

// configfsFS makes the irdma configfs directory behave like configfs:
// mkdir of a group creates its attributes with the driver's current
// values, rmdir of the group stores them.
type configfsFS struct {
	OSFS
	mu    sync.Mutex
	state map[string]string // attribute name → value, kept by the "driver"
	log   []string
}

func (c *configfsFS) Mkdir(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, "mkdir "+name)
	if err := c.OSFS.Mkdir(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, irdmaConfigfs+"/") {
		for k, v := range c.state {
			if err := os.WriteFile(c.path(name+"/"+k), []byte(v+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *configfsFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, "rmdir "+name)
	if strings.HasPrefix(name, irdmaConfigfs+"/") {
		for k := range c.state {
			b, err := os.ReadFile(c.path(name + "/" + k))
			if err != nil {
				return err
			}
			c.state[k] = strings.TrimSpace(string(b))
			os.Remove(c.path(name + "/" + k))
		}
	}
	return c.OSFS.Remove(name)
}

type fakeEthtool map[string]map[string]uint64

func (f fakeEthtool) Stats(ifname string) (map[string]uint64, error) {
	m, ok := f[ifname]
	if !ok {
		return nil, syscall.ENODEV
	}
	return m, nil
}
