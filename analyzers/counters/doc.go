// Package counters cross-checks NIC hardware counters (Mellanox names,
// after − before) against what the trace shows (NVIDIA, "Understanding mlx5 Linux Counters"; Lumina
// §4 "hardware network stack counter"). A NIC is identified by its IP
// addresses; a relation is checked only when the NIC reports the counter.
//
//	out_of_sequence            responder of WRITE/SEND: NAKs (PSN sequence error) it sent
//	packet_seq_err             requester of WRITE/SEND: NAK-triggered go-backs
//	local_ack_timeout_err      requester: timeout go-backs (WRITE/SEND and READ)
//	implied_nak_seq_err        READ requester: READs re-issued after a response gap
//	duplicate_request          responder: requests delivered with an already executed PSN
//	rx_icrc_encapsulated       packets delivered corrupted to the NIC
//	np_ecn_marked_roce_packets CE-marked data packets delivered to the NIC
//	np_cnp_sent                CNPs the NIC sent
//	rp_cnp_handled+rp_cnp_ignored  CNPs delivered to the NIC (when either is reported)
//
// An Intel E810 (irdma) NIC reports cnpSent, RxECNMrkd, cnpHandled and
// cnpIgnored for np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled
// and rp_cnp_ignored; they are checked the same way.
//
// The host discard check (the public Lumina's host_check): every counter
// whose name contains "discard" (any case) must have a delta of 0, unless
// the NIC has PFC configured (it reports rx_prio*_pause/tx_prio*_pause):
// a paused software NIC discards frames by design, and the received-frame
// relations above allow for its rx_discards_phy.
//
// Verdict: skip without counters, fail on any mismatch.
package counters
