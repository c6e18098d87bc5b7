// Package tracetest builds RoCEv2 traces for the analyzers' tests from a
// compact script, with the roce frame builder and Lumina's mirror codec.
//
// A script is a space-separated list of packets, in trace order:
//
//	5      WRITE packet, PSN IPSN+5, requester → responder
//	s5     SEND packet
//	A5     ACK for PSN IPSN+5, responder → requester;  A5#3 with MSN 3
//	       (default 0; also N5#3, R5#3)
//	N5     NAK (PSN sequence error) with PSN IPSN+5
//	R5     RNR NAK (minimum RNR timer code 1);  R5:14 with timer code 14
//	       (R5:14#3 with MSN 3);  F5 a fatal NAK (remote access error)
//	Q5:3   READ request at IPSN+5 for 3 packets (3 MTU of data)
//	r5     READ response with PSN IPSN+5
//	C      CNP to the requester (WRITE/SEND);  Cr a CNP to the responder (READ)
//	@500   the next packet comes 500 ns after the previous one (default 100)
//
// Suffixes: x dropped, c corrupted, e ECN-marked, d delayed (held by the
// switch, mirrored when it left), o reordered, + a duplicate copy the
// switch made (write the original, untagged, before it), a AckReq set.
// Events are only tags: the script gives the trace order. A prefix "k/" puts the
// packet on connection k (default 0). PSNs wrap modulo 2^24.
package tracetest
