package config

// ODP is a traffic host NIC's On-Demand Paging (YAML key nic.odp; absent,
// nil: every memory region is pinned, as without the key). With Enabled
// the host's memory regions are ODP regions: their pages are mapped on
// first access, and an access to an unmapped page is a page fault that
// resolves PageFaultUs later (the software RNIC's model, docs/odp.md;
// Fukuoka et al., Analyzing Performance Pitfalls of On-Demand Paging of
// InfiniBand, Fig. 2). On a real RNIC the regions are registered with
// IBV_ACCESS_ON_DEMAND.
type ODP struct {
	// Enabled turns ODP on. YAML key enabled; default true (the mapping
	// turns ODP on; enabled: false turns it off and keeps the other keys).
	Enabled bool
	// PageFaultUs is how long a page fault takes to resolve, in µs,
	// 1..MaxPageFaultUs. YAML key page-fault-us; default 0: the
	// personality's odp-page-fault. The software RNIC only (a real NIC's
	// fault takes what it takes).
	PageFaultUs int
	// Prefetch maps every page at registration (ibv_advise_mr with
	// IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE on a real RNIC), so no access
	// faults. YAML key prefetch; default false.
	Prefetch bool
}

// MaxPageFaultUs bounds nic.odp.page-fault-us: 10 s.
const MaxPageFaultUs = 10_000_000

// MaxPostIntervalUs bounds traffic.post-interval-us: 10 s.
const MaxPostIntervalUs = 10_000_000

var odpSection = sect[ODP]("`odp` (traffic host `nic`)", []key{
	{name: "enabled", field: "Enabled", dec: decBool, def: true},
	{name: "page-fault-us", field: "PageFaultUs", dec: ints(1, MaxPageFaultUs, "(page-fault-us: µs until a page fault resolves)"), omit: true, doc: "the personality's `odp-page-fault`"},
	{name: "prefetch", field: "Prefetch", dec: decBool},
})

var decODP = decPtrSection[ODP](odpSection)

// ODPOn reports whether the NIC uses On-Demand Paging (nic.odp with
// enabled true).
func (n *NIC) ODPOn() bool { return n.ODP != nil && n.ODP.Enabled }

// ODPInTest reports whether any traffic host of t uses On-Demand Paging:
// then every software RNIC of the test takes the ODP duplicate-READ path
// (softrnic.Config.ODPInTest).
func (t *Test) ODPInTest() bool {
	for i := range t.Hosts {
		if t.Hosts[i].NIC.ODPOn() {
			return true
		}
	}
	if len(t.Hosts) == 0 && !t.HostsForm {
		return t.Requester.NIC.ODPOn() || t.Responder.NIC.ODPOn()
	}
	return false
}
