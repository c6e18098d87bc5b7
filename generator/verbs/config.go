package verbs

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/netlumina/lumina/sim"
)

// Config configures Open. Only Loop is required.
type Config struct {
	// Loop runs the device's completions (and must run every call to the
	// device). Required.
	Loop sim.Loop
	// Device is the verbs device name (mlx5_0, irdma0, rxe0). Default: the
	// device whose GIDs belong to IfName, else the first in name order.
	Device string
	// IfName is the RNIC's kernel interface: it picks the device, limits
	// the GIDs to its addresses and gives the MAC. Default: the interface
	// of the first selected GID.
	IfName string
	// Port is the verbs port. Default 1.
	Port int
	// IPs are the addresses the device offers (the config's ip-list):
	// each must have a RoCE v2 GID on the port. Default: every IPv4 RoCE v2
	// GID of the port, in GID index order.
	IPs []netip.Addr
	// Seed seeds the initial PSNs. Default 0: a random seed.
	Seed uint64
	// Root is where sys/class/infiniband and sys/class/net are found.
	// Default "/".
	Root string
	// MaxSendWR and MaxRecvWR size each QP's queues. Default: the device's
	// max_qp_wr / 4 (the public tool), capped at 4096. RECVs beyond the
	// receive queue wait in a software backlog (see PostRecv).
	MaxSendWR, MaxRecvWR int
	// CQDepth is the size of the device's one completion queue, shared by
	// all QPs. Default: the device's max_cqe, capped at 65536. Posts that
	// could overflow it fail with ErrQueueFull (sends) or wait in the
	// backlog (receives).
	CQDepth int
	// PollIdle is how long the polling goroutine sleeps after finding the
	// CQ empty. Default 0: busy polling (one core spins, as in the public
	// tool; completion times are the most accurate).
	PollIdle time.Duration
	// ODP registers every MR as On-Demand Paging memory
	// (IBV_ACCESS_ON_DEMAND): the NIC maps its pages on first access, with
	// a page fault (Fukuoka et al., Analyzing Performance Pitfalls of
	// On-Demand Paging of InfiniBand). Open fails with ErrNoODP unless the
	// device supports ODP on RC for SEND, RECV, WRITE and READ. Default
	// false: pinned memory.
	ODP bool
	// ODPPrefetch, with ODP, maps each MR for the NIC right after its
	// registration (ibv_advise_mr PREFETCH_WRITE with FLUSH), so traffic
	// meets no page fault. Default false. Ignored without ODP.
	ODPPrefetch bool
}

// psnSource draws initial PSNs: 24-bit, uniformly random, reproducible
// from a seed.
type psnSource struct{ r *rand.Rand }

func newPSNSource(seed uint64) *psnSource {
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	return &psnSource{r: rand.New(rand.NewPCG(seed, seed^0x6c756d696e61))}
}

func (s *psnSource) next() uint32 { return s.r.Uint32() & 0xFFFFFF }
