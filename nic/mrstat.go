package nic

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ODP counter names, as mlx5 reports them per MR (the kernel's
// drivers/infiniband/hw/mlx5/restrack.c, fill_stat_mr_entry). page_faults
// and page_invalidations count pages; page_faults_handled and
// page_invalidations_handled count fault and invalidation events (Linux
// 6.14 on; absent before); page_prefetch counts pages mapped by
// ibv_advise_mr.
const (
	CounterPageFaults                = "page_faults"
	CounterPageFaultsHandled         = "page_faults_handled"
	CounterPageInvalidations         = "page_invalidations"
	CounterPageInvalidationsHandled  = "page_invalidations_handled"
	CounterPagePrefetch              = "page_prefetch"
	rdmaStatMRCommand                = "rdma -j statistic show mr"
	rdmaStatMRDevKey, rdmaStatMRNKey = "ifname", "mrn"
)

// ReadMRCounters reads the per-MR statistics of the RDMA resource tracker
// (`rdma -j statistic show mr`, RDMA_NLDEV_CMD_STAT_GET for
// RDMA_NLDEV_ATTR_RES_MR) and returns verbs device ibdev's, summed over its
// MRs under the kernel's names. mlx5 reports the ODP counters of each ODP
// MR there (CounterPageFaults…); other drivers and pinned MRs report
// nothing, so the map is then empty.
//
// The counters live and die with their MRs: read them while the MRs are
// registered. The sum covers every MR on the device, other processes'
// included.
func (h *Host) ReadMRCounters(ibdev string) (map[string]uint64, error) {
	argv := strings.Fields(rdmaStatMRCommand)
	out, err := h.runner().Run(context.Background(), argv[0], argv[1:]...)
	if err != nil {
		return map[string]uint64{}, fmt.Errorf("%w: %s: %w", ErrCounter, rdmaStatMRCommand, err)
	}
	all, err := ParseRdmaStatMR(out)
	if err != nil {
		return map[string]uint64{}, err
	}
	if m, ok := all[ibdev]; ok {
		return m, nil
	}
	return map[string]uint64{}, nil
}

// ParseRdmaStatMR reads the JSON of `rdma -j statistic show mr` (iproute2
// rdma/stat-mr.c): an array with one object per MR, its device name
// ("ifname"), device index ("ifindex"), MR number ("mrn") and, for an ODP
// MR on mlx5, one member per counter:
//
//	[{"ifindex":0,"ifname":"mlx5_0","mrn":5,"page_faults":512,"page_faults_handled":1,
//	  "page_invalidations":0,"page_invalidations_handled":0,"page_prefetch":0}]
//
// It returns, by device name, each counter summed over the device's MRs
// (a device whose MRs have no counters maps to an empty map). Members other
// than ifname, ifindex and mrn must be unsigned integers.
func ParseRdmaStatMR(out []byte) (map[string]map[string]uint64, error) {
	var mrs []map[string]json.RawMessage
	if err := json.Unmarshal(out, &mrs); err != nil {
		return nil, fmt.Errorf("%w: %s: not a JSON array of MRs: %v: %q", ErrCounter, rdmaStatMRCommand, err, trimOut(string(out)))
	}
	res := map[string]map[string]uint64{}
	for i, mr := range mrs {
		var dev string
		if err := json.Unmarshal(mr[rdmaStatMRDevKey], &dev); err != nil || dev == "" {
			return nil, fmt.Errorf("%w: %s: MR %d has no device name (%q)", ErrCounter, rdmaStatMRCommand, i, mr[rdmaStatMRDevKey])
		}
		sums := res[dev]
		if sums == nil {
			sums = map[string]uint64{}
			res[dev] = sums
		}
		for _, k := range slices.Sorted(maps.Keys(mr)) {
			if k == rdmaStatMRDevKey || k == "ifindex" || k == rdmaStatMRNKey {
				continue
			}
			v, err := strconv.ParseUint(string(mr[k]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %s MR %s: %s is not a counter: %q", ErrCounter, rdmaStatMRCommand, dev, mr[rdmaStatMRNKey], k, mr[k])
			}
			sums[k] += v
		}
	}
	return res, nil
}
