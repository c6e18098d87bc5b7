//go:build !linux

package nic

import "fmt"

type ioctlEthtool struct{}

// Stats implements EthtoolSource: not supported outside Linux.
func (ioctlEthtool) Stats(ifname string) (map[string]uint64, error) {
	return nil, fmt.Errorf("%w: ethtool statistics need Linux", ErrUnsupported)
}
