package tests

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// ipv4DSCPs reads a little-endian pcap (as lumina writes its traces) and
// returns the DSCPs seen per source IPv4 address of the Ethernet/IPv4
// frames in it.
func ipv4DSCPs(t *testing.T, path string) map[netip.Addr]map[int]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 || (binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 && binary.LittleEndian.Uint32(b) != 0xa1b23c4d) {
		t.Fatalf("%s: not a little-endian pcap", path)
	}
	got := map[netip.Addr]map[int]int{}
	for off := 24; off+16 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		f := b[off+16 : min(off+16+n, len(b))]
		off += 16 + n
		eth := 14
		if len(f) >= 18 && binary.BigEndian.Uint16(f[12:]) == 0x8100 {
			eth = 18
		}
		if len(f) < eth+20 || binary.BigEndian.Uint16(f[eth-2:]) != 0x0800 {
			continue
		}
		src := netip.AddrFrom4([4]byte(f[eth+12 : eth+16]))
		if got[src] == nil {
			got[src] = map[int]int{}
		}
		got[src][int(f[eth+1]>>2)]++
	}
	return got
}

// TestDSCPListOnWire: a test file's dscp-list, in the public Lumina's
// string form, puts each QP's DSCP on its packets, both directions.
func TestDSCPListOnWire(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dscp.yaml")
	writeFile(t, file, `name: dscp
seed: 1
requester:
  nic: {personality: cx5, ip-list: [10.0.0.1/24, 10.0.0.11/24]}
responder:
  nic: {personality: cx5, ip-list: [10.0.0.2/24, 10.0.0.12/24]}
traffic:
  num-qps: 2
  rdma-verb: write
  num-msgs-per-qp: 2
  mtu: 1024
  message-size: 4096
  multi-gid: true
  dscp-list: "26,28"
`)
	out := filepath.Join(dir, "out")
	luminaExit(t, 0, "run", file, "--testbed", "sim", "-q", "-o", out) // flags after the file
	got := ipv4DSCPs(t, filepath.Join(out, "dscp", "0", "trace.pcap"))
	want := map[string]int{"10.0.0.1": 26, "10.0.0.2": 26, "10.0.0.11": 28, "10.0.0.12": 28}
	for ip, dscp := range want {
		m := got[netip.MustParseAddr(ip)]
		if len(m) != 1 || m[dscp] == 0 {
			t.Errorf("DSCPs of %s's packets = %v, want only %d", ip, m, dscp)
		}
	}
	if len(got) != len(want) {
		t.Errorf("packets from %d addresses (%s), want %d", len(got), fmt.Sprint(got), len(want))
	}
}
