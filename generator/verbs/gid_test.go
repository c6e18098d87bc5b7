package verbs

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

var ip = netip.MustParseAddr

var gidTests = []struct {
	in      string
	want    netip.Addr
	wantErr bool
}{
	{"0000:0000:0000:0000:0000:ffff:0a00:0002", ip("10.0.0.2"), false},
	{"fe80:0000:0000:0000:0e42:a1ff:fe00:0002", ip("fe80::e42:a1ff:fe00:2"), false},
	{"fd00:0000:0000:0000:0000:0000:0000:0002\n", ip("fd00::2"), false},
	{"0000:0000:0000:0000:0000:ffff:0a00", netip.Addr{}, true},
	{"zzzz:0000:0000:0000:0000:ffff:0a00:0002", netip.Addr{}, true},
	{"", netip.Addr{}, true},
}

func TestParseGID(t *testing.T) {
	for _, tt := range gidTests {
		raw, err := ParseGID(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseGID(%q) = %x, want an error", tt.in, raw)
			}
			continue
		}
		g := GID{Raw: raw}
		if err != nil || g.Addr() != tt.want {
			t.Errorf("ParseGID(%q) = %v, %v, want %v", tt.in, g.Addr(), err, tt.want)
		}
		if g.String() != strings.TrimSpace(tt.in) {
			t.Errorf("GID.String() = %q, want %q", g.String(), strings.TrimSpace(tt.in))
		}
	}
}

func FuzzParseGID(f *testing.F) {
	for _, tt := range gidTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := ParseGID(s)
		if err != nil {
			return
		}
		back, err := ParseGID(GID{Raw: raw}.String())
		if err != nil || back != raw {
			t.Fatalf("round trip of %q: %x, %v", s, back, err)
		}
	})
}

func TestReadGIDTable(t *testing.T) {
	got, err := ReadGIDTable("testdata", "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		idx  int
		addr string
		typ  string
		nd   string
	}
	want := []row{
		{0, "fe80::e42:a1ff:fe00:2", GIDTypeRoCEv1, "enp4s0"}, {1, "fe80::e42:a1ff:fe00:2", GIDTypeRoCEv2, "enp4s0"},
		{2, "10.0.0.2", GIDTypeRoCEv1, "enp4s0"}, {3, "10.0.0.2", GIDTypeRoCEv2, "enp4s0"},
		{4, "10.0.0.12", GIDTypeRoCEv1, "enp4s0"}, {5, "10.0.0.12", GIDTypeRoCEv2, "enp4s0"},
		{7, "192.168.1.5", GIDTypeRoCEv2, "enp4s0v1"}, {8, "10.0.0.22", GIDTypeRoCEv1, "enp4s0"},
		{9, "fd00::2", GIDTypeRoCEv2, "enp4s0"},
	}
	var rows []row
	for _, g := range got {
		rows = append(rows, row{g.Index, g.Addr().String(), g.Type, g.NetDev})
	}
	if !slices.Equal(rows, want) {
		t.Errorf("ReadGIDTable =\n%v\nwant\n%v", rows, want)
	}
	if _, err := ReadGIDTable("testdata", "mlx5_0", 2); !errors.Is(err, ErrNoDevice) {
		t.Errorf("ReadGIDTable(port 2) error = %v, want ErrNoDevice", err)
	}
}

func TestSelectGIDs(t *testing.T) {
	table, err := ReadGIDTable("testdata", "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ips     []netip.Addr
		want    []int
		wantErr string
	}{
		{"ip-list order", []netip.Addr{ip("10.0.0.12"), ip("10.0.0.2")}, []int{5, 3}, ""},
		{"one", []netip.Addr{ip("10.0.0.2")}, []int{3}, ""},
		{"ipv6", []netip.Addr{ip("fd00::2")}, []int{9}, ""},
		{"v4-mapped form", []netip.Addr{ip("::ffff:10.0.0.2")}, []int{3}, ""},
		{"default: every IPv4 RoCE v2 GID", nil, []int{3, 5, 7}, ""},
		{"RoCE v1 only", []netip.Addr{ip("10.0.0.2"), ip("10.0.0.22")}, nil, "10.0.0.22"},
		{"unknown", []netip.Addr{ip("10.9.9.9"), ip("10.9.9.8")}, nil, "10.9.9.9, 10.9.9.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SelectGIDs(table, tt.ips)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNoGID) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("SelectGIDs error = %v, want ErrNoGID naming %s", err, tt.wantErr)
				}
				return
			}
			var idx []int
			for _, g := range got {
				idx = append(idx, g.Index)
			}
			if err != nil || !slices.Equal(idx, tt.want) {
				t.Errorf("SelectGIDs = %v, %v, want %v", idx, err, tt.want)
			}
		})
	}
	if _, err := SelectGIDs(nil, nil); !errors.Is(err, ErrNoGID) {
		t.Errorf("SelectGIDs(empty table) error = %v, want ErrNoGID", err)
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		dev     string
		netdev  string
		mac     [6]byte
		ips     []netip.Addr
		gids    []int
		wantErr error
	}{
		{"by interface", Config{IfName: "enp4s0"}, "mlx5_0", "enp4s0", [6]byte{0x0c, 0x42, 0xa1, 0, 0, 2},
			[]netip.Addr{ip("10.0.0.2"), ip("10.0.0.12")}, []int{3, 5}, nil},
		{"by interface, other device", Config{IfName: "enp5s0"}, "mlx5_1", "enp5s0", [6]byte{0x0c, 0x42, 0xa1, 0, 0, 3},
			[]netip.Addr{ip("10.0.1.2")}, []int{1}, nil},
		{"by device with ip-list", Config{Device: "mlx5_0", IPs: []netip.Addr{ip("10.0.0.12")}}, "mlx5_0", "enp4s0",
			[6]byte{0x0c, 0x42, 0xa1, 0, 0, 2}, []netip.Addr{ip("10.0.0.12")}, []int{5}, nil},
		{"first device, all IPv4 GIDs", Config{}, "mlx5_0", "enp4s0", [6]byte{0x0c, 0x42, 0xa1, 0, 0, 2},
			[]netip.Addr{ip("10.0.0.2"), ip("10.0.0.12"), ip("192.168.1.5")}, []int{3, 5, 7}, nil},
		{"address on another interface", Config{IfName: "enp4s0", IPs: []netip.Addr{ip("192.168.1.5")}}, "", "", [6]byte{}, nil, nil, ErrNoGID},
		{"unknown device", Config{Device: "mlx5_9"}, "", "", [6]byte{}, nil, nil, ErrNoDevice},
		{"unknown interface", Config{IfName: "eth0"}, "", "", [6]byte{}, nil, nil, ErrNoDevice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Root = "testdata"
			p, err := plan(tt.cfg)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("plan error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gids []int
			for _, g := range p.GIDs {
				gids = append(gids, g.Index)
			}
			if p.Name != tt.dev || p.Port != 1 || p.NetDev != tt.netdev || p.MAC != tt.mac || !slices.Equal(p.IPs, tt.ips) || !slices.Equal(gids, tt.gids) {
				t.Errorf("plan = %+v (GIDs %v), want %s %s %x %v %v", p, gids, tt.dev, tt.netdev, tt.mac, tt.ips, tt.gids)
			}
		})
	}
}

func TestNoDevice(t *testing.T) {
	_, err := Devices(t.TempDir())
	if !errors.Is(err, ErrNoDevice) || err.Error() != "verbs: no RDMA device: /sys/class/infiniband is empty" {
		t.Errorf("Devices(empty) error = %v", err)
	}
}
