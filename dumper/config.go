package dumper

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// Errors returned by the dumper, to be matched with errors.Is.
var (
	// ErrInvalidConfig wraps every configuration error from New.
	ErrInvalidConfig = errors.New("dumper: invalid config")
	// ErrState means Start or Stop was called out of order (Start twice,
	// Stop before Start, anything after Stop).
	ErrState = errors.New("dumper: wrong state")
	// ErrNotSupported means the backend does not exist on this platform or
	// in this build (dpdk without the dpdk build tag, afpacket off Linux).
	ErrNotSupported = errors.New("dumper: backend not supported")
)

// Limits and defaults of Config.
const (
	DefaultSnapLen  = 128
	MinSnapLen      = 64
	MaxSnapLen      = 9216
	DefaultCapacity = 0 // no limit but the disk
	DefaultWorkers  = 1

	DefaultBlockSize    = 1 << 20
	DefaultBlockCount   = 64
	DefaultBlockTimeout = 10 * time.Millisecond
)

// Config configures a Dumper. The zero value is usable for the afpacket
// backend once Interface is set; every field documents its default.
type Config struct {
	// Name names the dumper in reports and integrity reasons. Default
	// "dumper".
	Name string

	// Backend is "afpacket" (TPACKET_V3 rings, Linux), "dpdk" (needs a
	// binary built with -tags dpdk) or "sim" (frames from SimPort).
	// Default "afpacket" on Linux, "sim" elsewhere.
	Backend string

	// Interface is the network interface to capture on (afpacket). For
	// dpdk it is informational: the port is the first one EAL probes
	// (EALArgs, e.g. --vdev=net_af_packet0,iface=eth1). Required for
	// afpacket.
	Interface string

	// Workers is the number of capture workers: afpacket sockets in one
	// fanout group, or DPDK lcores with one RX queue each. Default 1.
	Workers int

	// SnapLen is how many bytes of each frame are kept, 64..9216. Frames
	// longer than that are cut; the pcap records their original length.
	// Default 128 (DefaultSnapLen), as the public Lumina dumper.
	SnapLen int

	// Capacity is how many frames each worker may write to disk: a disk
	// budget of about Capacity*(SnapLen+16) bytes per worker. Frames
	// beyond it are counted as BufferDropped and Report.Full is set.
	// Memory does not depend on it. Default 0: no limit but the disk.
	Capacity int

	// MirrorPort is the UDP destination port of mirror copies (the
	// injector's rewrite-udp-dst-port). Only frames to this port are
	// captured and written. Default 9741 (roce.DefaultMirrorPort).
	MirrorPort uint16

	// FanoutMode spreads frames over afpacket workers: "lb" (round
	// robin, per packet, the paper's design), "hash" (kernel flow hash;
	// the injector's random UDP source port spreads it) or "cpu" (the
	// CPU that received the frame, i.e. the NIC's RSS). Default "lb".
	// Ignored by other backends.
	FanoutMode string

	// EALArgs are the DPDK EAL arguments (dpdk backend), e.g.
	// {"--no-huge", "-m", "256", "--no-pci",
	// "--vdev=net_af_packet0,iface=veth1,qpairs=2"}. The dumper adds
	// "-l 0-(Workers-1)" unless -l, --lcores or -c is given, and
	// "--file-prefix=lumina-<pid>" unless --file-prefix or --in-memory is
	// given. Default none.
	EALArgs []string

	// OutPath is the pcap file written by Stop (nanosecond pcap, written
	// atomically). Default Name + ".pcap" in the current directory.
	OutPath string

	// BlockSize and BlockCount size each afpacket worker's TPACKET_V3
	// ring: BlockCount blocks of BlockSize bytes (a multiple of the page
	// size). Defaults 1 MiB and 64 (64 MiB per worker). A dpdk worker's
	// ring between its lcore and its file has the same size in bytes.
	// The ring is what absorbs the disk's stalls: at 100 Gb/s of 1 KiB
	// frames cut to 128 bytes, 64 MiB last about 45 ms.
	BlockSize, BlockCount int

	// BlockTimeout is how long the kernel keeps a partly filled afpacket
	// block before handing it to the worker; it bounds capture latency
	// and Stop's drain time. Default 10ms.
	BlockTimeout time.Duration

	// SimPort is the port the sim backend receives mirror copies on.
	// Required for "sim". Frames are spread over workers round robin.
	SimPort sim.Port
}

// withDefaults returns c with zero fields set to their defaults, or an
// error wrapping ErrInvalidConfig.
func (c Config) withDefaults() (Config, error) {
	if c.Name == "" {
		c.Name = "dumper"
	}
	if c.Backend == "" {
		c.Backend = "afpacket"
		if runtime.GOOS != "linux" {
			c.Backend = "sim"
		}
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.SnapLen == 0 {
		c.SnapLen = DefaultSnapLen
	}
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	if c.MirrorPort == 0 {
		c.MirrorPort = roce.DefaultMirrorPort
	}
	if c.FanoutMode == "" {
		c.FanoutMode = "lb"
	}
	if c.OutPath == "" {
		c.OutPath = filepath.Clean(c.Name + ".pcap")
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.BlockCount == 0 {
		c.BlockCount = DefaultBlockCount
	}
	if c.BlockTimeout == 0 {
		c.BlockTimeout = DefaultBlockTimeout
	}
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch c.Backend {
	case "afpacket", "dpdk":
	case "sim":
		if c.SimPort == nil {
			return bad("backend sim needs SimPort")
		}
	default:
		return bad("unknown backend %q (want afpacket, dpdk or sim)", c.Backend)
	}
	if c.Backend == "afpacket" && c.Interface == "" {
		return bad("backend afpacket needs Interface")
	}
	if c.Workers < 1 || c.Workers > 128 {
		return bad("workers %d out of range 1..128", c.Workers)
	}
	if c.SnapLen < MinSnapLen || c.SnapLen > MaxSnapLen {
		return bad("snaplen %d out of range %d..%d", c.SnapLen, MinSnapLen, MaxSnapLen)
	}
	if c.Capacity < 0 || int64(c.Capacity) > 1<<40 {
		return bad("capacity %d out of range", c.Capacity)
	}
	switch c.FanoutMode {
	case "lb", "hash", "cpu":
	default:
		return bad("unknown fanout mode %q (want lb, hash or cpu)", c.FanoutMode)
	}
	if c.BlockSize < 4096 || c.BlockSize%4096 != 0 || c.BlockSize < c.SnapLen+256 {
		return bad("block size %d: want a multiple of 4096 larger than snaplen+256", c.BlockSize)
	}
	if c.BlockCount < 2 {
		return bad("block count %d: want at least 2", c.BlockCount)
	}
	if c.BlockTimeout < time.Millisecond {
		return bad("block timeout %v: want at least 1ms", c.BlockTimeout)
	}
	return c, nil
}
