// Package counters cross-checks NIC hardware counters (Mellanox names,
// after − before) against what the trace shows (roce-facts §6.3, Lumina
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
// Verdict: skip without counters, fail on any mismatch.
package counters
