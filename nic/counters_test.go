package nic

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCountersMellanox(t *testing.T) {
	eth := fakeEthtool{"enp4s0": {"rx_discards_phy": 3, "tx_prio3_pause": 0, "rx_prio3_pause": 11}}
	h := &Host{FS: OSFS{Root: "testdata/mlx5"}, Ethtool: eth}
	got, err := h.ReadCounters(mlxDev)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{
		"out_of_sequence": 1, "packet_seq_err": 2, "implied_nak_seq_err": 3, "duplicate_request": 4, "local_ack_timeout_err": 5,
		"rnr_nak_retry_err": 6, "out_of_buffer": 7, "rx_write_requests": 8, "rx_read_requests": 9, "np_ecn_marked_roce_packets": 10,
		"np_cnp_sent": 11, "rp_cnp_handled": 12, "rp_cnp_ignored": 13, "rx_icrc_encapsulated": 14, "roce_adp_retrans": 15,
		"roce_slow_restart": 16,
		"port_rcv_packets":  1000, "port_xmit_packets": 2000, "port_rcv_data": 256000, "port_xmit_data": 512000, "port_rcv_errors": 0,
		"ethtool.rx_discards_phy": 3, "ethtool.tx_prio3_pause": 0, "ethtool.rx_prio3_pause": 11,
	}
	if !maps.Equal(got, want) {
		t.Errorf("ReadCounters =\n%v\nwant\n%v", got, want)
	}
	// By IB device only: no ethtool.
	c, err := h.ReadCounterSet(Device{IBDev: "mlx5_0"})
	if err != nil || len(c.Ethtool) != 0 || c.HW["np_cnp_sent"] != 11 {
		t.Errorf("ReadCounterSet(mlx5_0) = %+v, %v", c, err)
	}
}

func TestReadCountersMissingAndBroken(t *testing.T) {
	tests := []struct {
		name    string
		tree    string
		dev     Device
		prepare func(t *testing.T, root string)
		eth     fakeEthtool
		want    []error
		wantMsg []string
		wantKey string // still read
	}{
		{"e810 has no port counters", "e810", Device{IfName: "ens1f0"}, nil, fakeEthtool{"ens1f0": {"rx_dropped": 1}}, nil, nil, "cnpSent"},
		{"no counters at all", "e810", Device{IfName: "ens1f0"}, func(t *testing.T, root string) {
			os.RemoveAll(filepath.Join(root, "sys/class/infiniband/irdma0/ports/1/hw_counters"))
		}, fakeEthtool{"ens1f0": {"rx_dropped": 1}}, []error{ErrNoCounters}, []string{"neither hw_counters nor counters"}, "ethtool.rx_dropped"},
		{"unparsable counter", "mlx5", mlxDev, func(t *testing.T, root string) {
			os.WriteFile(filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent"), []byte("N/A\n"), 0o644)
		}, fakeEthtool{"enp4s0": {}}, []error{ErrCounter}, []string{"hw_counters/np_cnp_sent: not a counter"}, "out_of_sequence"},
		{"ethtool fails", "mlx5", mlxDev, nil, fakeEthtool{}, []error{ErrCounter}, []string{"ethtool -S enp4s0"}, "port_rcv_packets"},
		{"both", "e810", Device{IfName: "ens1f0"}, func(t *testing.T, root string) {
			os.RemoveAll(filepath.Join(root, "sys/class/infiniband/irdma0/ports/1/hw_counters"))
		}, fakeEthtool{}, []error{ErrNoCounters, ErrCounter}, []string{"neither", "ethtool -S ens1f0"}, ""},
		{"unknown port", "mlx5", Device{IfName: "enp4s0", Port: 2}, nil, fakeEthtool{}, []error{ErrNoDevice}, []string{"ports/2"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, tt.tree)
			if tt.prepare != nil {
				tt.prepare(t, root)
			}
			h := &Host{FS: OSFS{Root: root}, Ethtool: tt.eth}
			got, err := h.ReadCounters(tt.dev)
			if len(tt.want) == 0 && err != nil {
				t.Fatalf("ReadCounters error = %v", err)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("ReadCounters error = %v, want %v", err, w)
				}
			}
			for _, m := range tt.wantMsg {
				if err == nil || !strings.Contains(err.Error(), m) {
					t.Errorf("ReadCounters error = %v, want it to mention %q", err, m)
				}
			}
			if _, ok := got[tt.wantKey]; tt.wantKey != "" && !ok {
				t.Errorf("ReadCounters lost %s: %v", tt.wantKey, got)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	tests := []struct {
		tree string
		dev  Device
		want Versions
	}{
		{"mlx5", mlxDev, Versions{IfName: "enp4s0", IBDev: "mlx5_0", PCIAddr: "0000:3b:00.0", Driver: "mlx5_core", DriverVersion: "23.10-1.1.9",
			Firmware: "16.35.2000", HCAType: "MT4119", BoardID: "MT_0000000012", Kernel: "6.1.0-18-amd64"}},
		{"e810", Device{IfName: "ens1f0"}, Versions{IfName: "ens1f0", IBDev: "irdma0", PCIAddr: "0000:5e:00.0", Driver: "ice",
			Firmware: "1.70", Kernel: "6.1.0-18-amd64"}},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			h := &Host{FS: OSFS{Root: filepath.Join("testdata", tt.tree)}}
			got, err := h.Versions(tt.dev)
			if err != nil || got != tt.want {
				t.Errorf("Versions = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}
