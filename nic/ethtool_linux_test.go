package nic

import (
	"bufio"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
)

// TestEthtoolIoctl reads a veth pair's driver statistics in a scratch
// network namespace and compares them with `ethtool -S`.
func TestEthtoolIoctl(t *testing.T) {
	testutil.RequireTool(t, "ethtool", "ethtool")
	ns := testutil.NewNetns(t, "ethtool")
	ns.Run(t, "ip", "link", "add", "lt0", "type", "veth", "peer", "name", "lt1")
	ns.Run(t, "ip", "link", "set", "lt0", "up")
	ns.Run(t, "ip", "link", "set", "lt1", "up")
	var got map[string]uint64
	if err := ns.Do(func() (err error) { got, err = (ioctlEthtool{}).Stats("lt0"); return err }); err != nil {
		t.Fatal(err)
	}
	out := ns.Run(t, "ethtool", "-S", "lt0")
	want := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ": ")
		if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
			want[k] = n
		}
	}
	if len(want) == 0 {
		t.Fatalf("ethtool -S lt0 printed no statistics:\n%s", out)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("ioctl statistics lack %q (ethtool -S has it)", k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ioctl gave %d statistics, ethtool -S %d", len(got), len(want))
	}
	if got["peer_ifindex"] == 0 || got["peer_ifindex"] != want["peer_ifindex"] {
		t.Errorf("peer_ifindex = %d, ethtool -S says %d", got["peer_ifindex"], want["peer_ifindex"])
	}
	if err := ns.Do(func() error { _, err := (ioctlEthtool{}).Stats("nope0"); return err }); err == nil {
		t.Error("Stats(nope0) succeeded")
	}
}
