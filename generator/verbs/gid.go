package verbs

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// GID types as sysfs names them (gid_attrs/types/<index>).
const (
	GIDTypeRoCEv2 = "RoCE v2"
	GIDTypeRoCEv1 = "IB/RoCE v1"
)

// GID is one entry of a port's GID table.
type GID struct {
	Index  int
	Raw    [16]byte
	Type   string // GIDTypeRoCEv2, GIDTypeRoCEv1
	NetDev string // the interface the address belongs to ("" if unknown)
}

// Addr returns the IP address of a RoCE GID: IPv4 for IPv4-mapped GIDs
// (::ffff:a.b.c.d), else the IPv6 address.
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g.Raw).Unmap() }

// String formats the GID as sysfs does.
func (g GID) String() string {
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02x%02x", g.Raw[i], g.Raw[i+1])
	}
	return b.String()
}

// ParseGID parses the sysfs form "0000:0000:0000:0000:0000:ffff:0a00:0002".
func ParseGID(s string) ([16]byte, error) {
	var raw [16]byte
	h := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	if len(h) != 32 {
		return raw, fmt.Errorf("verbs: GID %q: want 8 groups of 4 hex digits", s)
	}
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return raw, fmt.Errorf("verbs: GID %q: %v", s, err)
	}
	return raw, nil
}

func ibDir(root string) string { return filepath.Join(rootOr(root), "sys/class/infiniband") }

func rootOr(root string) string {
	if root == "" {
		return "/"
	}
	return root
}

// Devices lists the RDMA devices under root (default "/") in name order.
// With none it returns ErrNoDevice ("no RDMA device: /sys/class/infiniband
// is empty").
func Devices(root string) ([]string, error) {
	dir := ibDir(root)
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: /sys/class/infiniband is empty", ErrNoDevice)
	}
	slices.Sort(names)
	return names, nil
}

// ReadGIDTable reads the non-empty GIDs of dev's port under root (default
// "/"): ports/<port>/gids/<i>, gid_attrs/types/<i>, gid_attrs/ndevs/<i>.
// Unused entries are all-zero GIDs, and the kernel refuses to read their
// type (EINVAL): both are skipped. The result is in index order.
func ReadGIDTable(root, dev string, port int) ([]GID, error) {
	base := filepath.Join(ibDir(root), dev, "ports", strconv.Itoa(port))
	es, err := os.ReadDir(filepath.Join(base, "gids"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s port %d: %w", ErrNoDevice, dev, port, err)
		}
		return nil, err
	}
	var out []GID
	for _, e := range es {
		idx, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(base, "gids", e.Name()))
		if err != nil {
			continue
		}
		raw, err := ParseGID(string(b))
		if err != nil || raw == [16]byte{} {
			continue
		}
		typ, err := os.ReadFile(filepath.Join(base, "gid_attrs", "types", e.Name()))
		if err != nil {
			continue
		}
		g := GID{Index: idx, Raw: raw, Type: strings.TrimSpace(string(typ))}
		if nd, err := os.ReadFile(filepath.Join(base, "gid_attrs", "ndevs", e.Name())); err == nil {
			g.NetDev = strings.TrimSpace(string(nd))
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b GID) int { return a.Index - b.Index })
	return out, nil
}

// maxGIDs bounds the default selection, as in the public tool.
const maxGIDs = 128

// SelectGIDs picks the RoCE v2 GID of each address in ips, in that order
// (multi-GID: QP i uses ips[i % len(ips)]). With no ips it returns every
// IPv4 RoCE v2 GID in index order (at most 128), as the public tool does.
// An address without a RoCE v2 GID is an ErrNoGID error naming it: the
// address is not configured on the RNIC's interface.
func SelectGIDs(table []GID, ips []netip.Addr) ([]GID, error) {
	if len(ips) == 0 {
		var out []GID
		seen := map[netip.Addr]bool{}
		for _, g := range table {
			if g.Type == GIDTypeRoCEv2 && g.Addr().Is4() && !seen[g.Addr()] && len(out) < maxGIDs {
				seen[g.Addr()] = true
				out = append(out, g)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: the port has no IPv4 RoCE v2 GID (add an address to its interface)", ErrNoGID)
		}
		return out, nil
	}
	out := make([]GID, 0, len(ips))
	var missing []string
	for _, ip := range ips {
		i := slices.IndexFunc(table, func(g GID) bool { return g.Type == GIDTypeRoCEv2 && g.Addr() == ip.Unmap() })
		if i < 0 {
			missing = append(missing, ip.String())
			continue
		}
		out = append(out, table[i])
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w for %s (ip addr add it to the RNIC's interface)", ErrNoGID, strings.Join(missing, ", "))
	}
	return out, nil
}

// devicePlan is what Open learns from sysfs before touching libibverbs.
type devicePlan struct {
	Name   string
	Port   int
	NetDev string
	MAC    [6]byte
	GIDs   []GID // one per address, in Config.IPs order
	IPs    []netip.Addr
}

// plan resolves cfg against the sysfs tree under cfg.Root: the device
// (Config.Device, else the one whose GIDs belong to Config.IfName, else
// the first), the port, the GID of each address, the MAC.
func plan(cfg Config) (devicePlan, error) {
	p := devicePlan{Name: cfg.Device, Port: cfg.Port, NetDev: cfg.IfName}
	if p.Port == 0 {
		p.Port = 1
	}
	devs, err := Devices(cfg.Root)
	if err != nil {
		return p, err
	}
	switch {
	case p.Name != "":
		if !slices.Contains(devs, p.Name) {
			return p, fmt.Errorf("%w: %s not in /sys/class/infiniband (have %s)", ErrNoDevice, p.Name, strings.Join(devs, ", "))
		}
	case cfg.IfName != "":
		for _, d := range devs {
			t, _ := ReadGIDTable(cfg.Root, d, p.Port)
			if slices.ContainsFunc(t, func(g GID) bool { return g.NetDev == cfg.IfName }) {
				p.Name = d
				break
			}
		}
		if p.Name == "" {
			return p, fmt.Errorf("%w: no device has GIDs on %s port %d", ErrNoDevice, cfg.IfName, p.Port)
		}
	default:
		p.Name = devs[0]
	}
	table, err := ReadGIDTable(cfg.Root, p.Name, p.Port)
	if err != nil {
		return p, err
	}
	if cfg.IfName != "" {
		table = slices.DeleteFunc(table, func(g GID) bool { return g.NetDev != "" && g.NetDev != cfg.IfName })
	}
	if p.GIDs, err = SelectGIDs(table, cfg.IPs); err != nil {
		return p, fmt.Errorf("%s port %d: %w", p.Name, p.Port, err)
	}
	for _, g := range p.GIDs {
		p.IPs = append(p.IPs, g.Addr())
	}
	if p.NetDev == "" {
		p.NetDev = p.GIDs[0].NetDev
	}
	if p.NetDev != "" {
		b, err := os.ReadFile(filepath.Join(rootOr(cfg.Root), "sys/class/net", p.NetDev, "address"))
		if err != nil {
			return p, fmt.Errorf("%w: MAC of %s: %w", ErrNoDevice, p.NetDev, err)
		}
		var mac [6]byte
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]); err != nil {
			return p, fmt.Errorf("verbs: MAC of %s: %q: %v", p.NetDev, b, err)
		}
		p.MAC = mac
	}
	return p, nil
}
