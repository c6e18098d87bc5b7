package softrnic

// Counters are the NIC's hardware counters, named after the Mellanox
// hw_counters and port counters they model (the mlx5 counters of the
// Linux kernel's Documentation/admin-guide/infiniband and NVIDIA's
// "Understanding mlx5 Linux Counters"). All are cumulative since the NIC
// was created. Typed fields, because the NIC increments them per packet;
// CounterMap gives the analyzers' name → value form (model.Counters), as
// a real port's nic.Counters.Map does.
type Counters struct {
	OutOfSequence          uint64 // responder: NAK-sequence-error episodes (out-of-sequence requests)
	PacketSeqErr           uint64 // requester: NAK-sequence-error packets received
	ImpliedNakSeqErr       uint64 // READ requester: response gaps (implied NAK)
	DuplicateRequest       uint64 // responder: duplicate requests (incl. re-issued READs)
	LocalAckTimeoutErr     uint64 // requester: ACK timer expirations
	RNRNakRetryErr         uint64 // requester: RNR NAKs received
	OutOfBuffer            uint64 // responder: RNR NAKs sent for lack of a receive WQE
	RxICRCEncapsulated     uint64 // packets dropped for a bad ICRC
	NPECNMarkedRoCEPackets uint64 // CE-marked data packets received
	NPCNPSent              uint64 // CNPs sent
	RPCNPHandled           uint64 // CNPs that throttled a QP
	RPCNPIgnored           uint64 // CNPs received with the reaction point disabled
	RxWriteRequests        uint64
	RxReadRequests         uint64
	RxSendRequests         uint64
	ReqCQEError            uint64
	RespCQEError           uint64
	ReqTransportRetriesExc uint64 // requester: RETRY_EXC_ERR completions
	ReqRNRRetriesExc       uint64 // requester: RNR_RETRY_EXC_ERR completions
	RoCEAdpRetrans         uint64 // retransmissions in adaptive mode
	RoCEAdpRetransTo       uint64 // timeouts in adaptive mode
	RoCESlowRestartCNPs    uint64 // CNPs sent with NAKs (slow restart)
	TxPackets              uint64 // port_xmit_packets
	RxPackets              uint64 // port_rcv_packets
	TxBytes                uint64
	RxBytes                uint64
	RxDiscards             uint64 // frames not for this NIC or malformed

	// PFC holds the PFC counters when Config.PFC is set (PFC.Enabled).
	PFC PFCCounters
	// ODP holds the ODP counters when Config.ODP is set (ODP.Enabled).
	ODP ODPCounters
}

// Counters returns a copy of the NIC's counters.
func (n *NIC) Counters() Counters {
	c := n.ctr
	if n.pfc != nil {
		c.PFC = n.pfc.counters(n.loop.Now())
	}
	if n.odp != nil {
		c.ODP = n.odp.ctr
	}
	return c
}

// Map returns the counters under their Mellanox names.
func (c Counters) Map() map[string]uint64 {
	m := map[string]uint64{
		"out_of_sequence":                c.OutOfSequence,
		"packet_seq_err":                 c.PacketSeqErr,
		"implied_nak_seq_err":            c.ImpliedNakSeqErr,
		"duplicate_request":              c.DuplicateRequest,
		"local_ack_timeout_err":          c.LocalAckTimeoutErr,
		"rnr_nak_retry_err":              c.RNRNakRetryErr,
		"out_of_buffer":                  c.OutOfBuffer,
		"rx_icrc_encapsulated":           c.RxICRCEncapsulated,
		"np_ecn_marked_roce_packets":     c.NPECNMarkedRoCEPackets,
		"np_cnp_sent":                    c.NPCNPSent,
		"rp_cnp_handled":                 c.RPCNPHandled,
		"rp_cnp_ignored":                 c.RPCNPIgnored,
		"rx_write_requests":              c.RxWriteRequests,
		"rx_read_requests":               c.RxReadRequests,
		"rx_send_requests":               c.RxSendRequests,
		"req_cqe_error":                  c.ReqCQEError,
		"resp_cqe_error":                 c.RespCQEError,
		"req_transport_retries_exceeded": c.ReqTransportRetriesExc,
		"req_rnr_retries_exceeded":       c.ReqRNRRetriesExc,
		"roce_adp_retrans":               c.RoCEAdpRetrans,
		"roce_adp_retrans_to":            c.RoCEAdpRetransTo,
		"roce_slow_restart_cnps":         c.RoCESlowRestartCNPs,
		"port_xmit_packets":              c.TxPackets,
		"port_rcv_packets":               c.RxPackets,
		"port_xmit_data":                 c.TxBytes / 4,
		"port_rcv_data":                  c.RxBytes / 4,
		"rx_discards":                    c.RxDiscards,
	}
	if c.PFC.Enabled {
		c.PFC.addTo(m)
	}
	if c.ODP.Enabled {
		c.ODP.addTo(m)
	}
	return m
}
