// Package nic configures the RoCE knobs of a real RNIC and reads its
// counters: what `lumina agent` does on a traffic host before and after a
// test (Lumina §3.3, Listing 1; the public tool's config_traffic_gen and
// counter_dump.py).
//
// # Concepts
//
// A Device names one RNIC port: its kernel interface (IfName), its verbs
// device (IBDev, found from the interface when empty), the verbs port and
// the PCI function. Params are the knobs of Listing 1 (roce-parameters)
// plus the DSCP trust state (the orchestrator derives both from a test's
// config.Host; this package does not import config).
//
// A Host is the machine as the package sees it, with everything it touches
// injectable: the file system (FS; sysfs, configfs and procfs under one
// root), the command runner for mlxreg and mlnx_qos (Runner) and the
// ethtool statistics source (Ethtool). The zero Host is the local machine.
//
// Where each knob lives (NVIDIA's MLNX_OFED DCQCN sysfs and mlxreg
// ROCE_ACCL documentation; the Linux irdma driver's configfs, Intel E810
// RDMA user guide):
//
//	Mellanox (mlx5, MLNX_OFED sysfs)
//	  DCQCN NP per priority   /sys/class/net/IF/ecn/roce_np/enable/0..7
//	  DCQCN RP per priority   /sys/class/net/IF/ecn/roce_rp/enable/0..7
//	  CNP pacing (µs)         /sys/class/net/IF/ecn/roce_np/min_time_between_cnps
//	  adaptive retransmission mlxreg -d PCI --reg_name ROCE_ACCL --set roce_adp_retrans_en=0|1 --yes
//	  slow restart            mlxreg -d PCI --reg_name ROCE_ACCL --set roce_slow_restart_en=0|1 --yes
//	  DSCP trust              mlnx_qos -i IF --trust=dscp|pcp
//	  DSCP → priority         mlnx_qos -i IF --dscp2prio=set,DSCP,PRIO
//	Intel E810 (irdma, configfs)
//	  DCQCN                   mkdir /sys/kernel/config/irdma/IBDEV; echo 0|1 > roce_dcqcn_enable; rmdir
//
// The previous values come from the same files, from
// `mlxreg -d PCI --reg_name ROCE_ACCL --get --yes` (the "name | 0x…" table)
// and from `mlnx_qos -i IF` (its "Priority trust state:" and "prio:P
// dscp:…" lines): these two are the only command outputs parsed, because
// neither tool has another interface for reading. When mlnx_qos prints no
// dscp2prio table (trust pcp), the driver's default map (priority =
// DSCP / 8) is taken as the previous one.
//
// Counters (NVIDIA, "Understanding mlx5 Linux Counters and Status
// Parameters"; the Lumina paper's counter_dump.py): every file of
// /sys/class/infiniband/IBDEV/ports/PORT/hw_counters and …/counters,
// under their own names, and the driver statistics of `ethtool -S IF`
// (ETHTOOL_GSTRINGS/ETHTOOL_GSTATS over the SIOCETHTOOL ioctl: ethtool's
// netlink interface has no driver-private statistics) as "ethtool.<name>".
//
// ODP counters (ReadMRCounters; Fukuoka et al., Analyzing Performance
// Pitfalls of On-Demand Paging of InfiniBand): mlx5 counts page faults per
// ODP memory region, not per port, and reports them through the RDMA
// resource tracker's MR statistics (RDMA_NLDEV_CMD_STAT_GET on
// RDMA_NLDEV_ATTR_RES_MR; the kernel's drivers/infiniband/hw/mlx5/restrack.c,
// fill_stat_mr_entry). The package reads them with `rdma -j statistic show
// mr` (iproute2) and sums them over the device's MRs under the kernel's
// names: page_faults (pages faulted in), page_faults_handled (faults
// resolved, Linux 6.14 on), page_invalidations,
// page_invalidations_handled, page_prefetch (pages prefetched).
//
// Versions records the driver, driver version, firmware and kernel of a
// run from sysfs and procfs.
//
// # Pitfalls
//
//   - Configure is all or nothing. It reads every previous value and checks
//     that every file is writable before it writes anything; if a write or
//     command still fails, it restores what it had changed, in reverse
//     order, before returning. The restore function it returns undoes a
//     successful Configure the same way.
//   - sysfs attributes without a write bit refuse writes even from root;
//     the default FS mimics this on any directory tree, so a fake tree with
//     mode 0444 files behaves like the kernel.
//   - The mlx5 ecn/ files exist only with MLNX_OFED's mlx5_core; the
//     upstream driver keeps congestion control in debugfs (cc_params), which
//     this package does not write: Configure fails with ErrUnsupported and
//     names the missing file.
//   - mlxreg does a read-modify-write of ROCE_ACCL, so the *_field_select
//     bits the query returns (1 = configurable) travel with the set; a
//     field whose select bit reads 0 is not configurable on that firmware
//     and Configure refuses it up front.
//   - Counters are cumulative; analyzers use finish − start.
//   - MR statistics exist only while their MR is registered: read them
//     before the MRs are freed. They are summed over every MR of the
//     device, other processes' included. mlx5's page_faults counts pages,
//     not faults: one fault that maps 512 pages adds 512 to page_faults
//     and 1 to page_faults_handled.
package nic
