package dumper

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ealRuntimeDir is where DPDK's EAL keeps a file prefix's runtime files:
// /var/run/dpdk for root, else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk. The dpdk
// backend removes its prefix's directory when it closes.
func ealRuntimeDir() string {
	if os.Geteuid() == 0 {
		return "/var/run/dpdk"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "dpdk")
	}
	return "/tmp/dpdk"
}

// afPacketIface returns the iface= of the first net_af_packet vdev in EAL
// arguments args, or "".
func afPacketIface(args []string) string {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--vdev=")
		if !ok && a == "--vdev" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if !ok || !strings.HasPrefix(v, "net_af_packet") {
			continue
		}
		for _, kv := range strings.Split(v, ",")[1:] {
			if s, ok := strings.CutPrefix(kv, "iface="); ok {
				return s
			}
		}
	}
	return ""
}

// ifaceRxPackets reads the kernel's count of frames interface name
// received (sysfs); false if name is empty or unreadable.
func ifaceRxPackets(name string) (uint64, bool) {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "statistics", "rx_packets"))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
