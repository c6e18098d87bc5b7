package dumper

import (
	"os"
	"path/filepath"
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
