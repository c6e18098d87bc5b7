package nic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctlEthtool reads driver statistics with the SIOCETHTOOL ioctl, as
// `ethtool -S` does: the count from ETHTOOL_GDRVINFO, the names from
// ETHTOOL_GSTRINGS (ETH_SS_STATS), the values from ETHTOOL_GSTATS.
// Ethtool's netlink interface has only the standard statistics groups,
// not these driver-private ones (rx_discards_phy, rx_prio3_pause, …).
type ioctlEthtool struct{}

const (
	ethSSStats     = 1  // ETH_SS_STATS
	ethGStringLen  = 32 // ETH_GSTRING_LEN
	ethtoolSlack   = 64 // extra entries in case the count grows between calls
	maxEthtoolStat = 1 << 16
)

// ifreqData is struct ifreq with ifr_data: 40 bytes on 64-bit Linux.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// Stats implements EthtoolSource.
func (ioctlEthtool) Stats(ifname string) (map[string]uint64, error) {
	if len(ifname) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("%w: interface name %q too long", ErrNoDevice, ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
	if err != nil {
		return nil, fmt.Errorf("ETHTOOL_GDRVINFO %s: %w", ifname, err)
	}
	n := int(info.N_stats)
	if n == 0 {
		return map[string]uint64{}, nil
	}
	if n > maxEthtoolStat {
		return nil, fmt.Errorf("ETHTOOL_GDRVINFO %s: %d statistics", ifname, n)
	}
	room := n + ethtoolSlack

	// struct ethtool_gstrings { u32 cmd, string_set, len; u8 data[]; }
	strs := make([]byte, 12+room*ethGStringLen)
	ne := binary.NativeEndian
	ne.PutUint32(strs[0:], unix.ETHTOOL_GSTRINGS)
	ne.PutUint32(strs[4:], ethSSStats)
	ne.PutUint32(strs[8:], uint32(n))
	if err := ethtoolIoctl(fd, ifname, unsafe.Pointer(&strs[0])); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS %s: %w", ifname, err)
	}
	runtime.KeepAlive(strs)
	ns := int(ne.Uint32(strs[8:]))

	// struct ethtool_stats { u32 cmd, n_stats; u64 data[]; }
	vals := make([]byte, 8+room*8)
	ne.PutUint32(vals[0:], unix.ETHTOOL_GSTATS)
	ne.PutUint32(vals[4:], uint32(n))
	if err := ethtoolIoctl(fd, ifname, unsafe.Pointer(&vals[0])); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSTATS %s: %w", ifname, err)
	}
	runtime.KeepAlive(vals)
	nv := int(ne.Uint32(vals[4:]))
	if ns != nv || ns > room {
		return nil, fmt.Errorf("ethtool %s: %d names but %d values (statistics changed while reading)", ifname, ns, nv)
	}
	m := make(map[string]uint64, ns)
	for i := range ns {
		name := strs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		m[string(name)] = ne.Uint64(vals[8+i*8:])
	}
	return m, nil
}

func ethtoolIoctl(fd int, ifname string, data unsafe.Pointer) error {
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = data
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ifr)
	if errno != 0 {
		return errno
	}
	return nil
}
