package main

import (
	"bufio"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// writeAckTrace writes an ACK, a NAK and RNR NAKs with timer codes 14
// (1.28 ms, Fukuoka et al., Analyzing Performance Pitfalls of On-Demand
// Paging of InfiniBand, Fig. 2), 0 (655.36 ms) and 1 (0.01 ms).
func writeAckTrace(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "acks.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	w, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, syn := range []roce.Syndrome{roce.ACKSyndrome(roce.CreditCountInvalid), roce.NAKSyndrome(roce.NAKPSNSequenceError),
		roce.RNRSyndrome(14), roce.RNRSyndrome(0), roce.RNRSyndrome(1)} {
		spec := roce.FrameSpec{SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1},
			SrcIP: netip.MustParseAddr("10.0.0.2"), DstIP: netip.MustParseAddr("10.0.0.1"), UDPSrc: 0xC001,
			Opcode: roce.RCAcknowledge, DestQP: 0x11, PSN: 7, AETH: roce.AETHFields{Syndrome: syn, MSN: 3}}
		b, err := spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WritePacket(1_700_000_000_000_000_000+int64(i)*1000, b, len(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDecodeRNRTimer: an RNR NAK's line shows its timer code and the delay
// it encodes; the ACK's and NAK's lines are as before.
func TestDecodeRNRTimer(t *testing.T) {
	path := writeAckTrace(t)
	code, stdout, stderr := runCLI("decode", path)
	if code != 0 || stderr != "" {
		t.Fatalf("lumina decode: exit %d, stderr %q", code, stderr)
	}
	const pre = " 10.0.0.2:49153 > 10.0.0.1:4791 RC_ACKNOWLEDGE qp=0x000011 psn=7 "
	want := []string{
		"0 1700000000.000000000" + pre + "ack(credit=31) msn=3 len=0 icrc=ok",
		"1 1700000000.000001000" + pre + "nak(psn_sequence_error) msn=3 len=0 icrc=ok",
		"2 1700000000.000002000" + pre + "rnr(timer=14 1.28ms) msn=3 len=0 icrc=ok",
		"3 1700000000.000003000" + pre + "rnr(timer=0 655.36ms) msn=3 len=0 icrc=ok",
		"4 1700000000.000004000" + pre + "rnr(timer=1 0.01ms) msn=3 len=0 icrc=ok",
	}
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lumina decode output (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
	code, stdout, stderr = runCLI("decode", "--format", "jsonl", path)
	if code != 0 || stderr != "" {
		t.Fatalf("lumina decode --format jsonl: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, want := range []string{`"aeth":{"type":"ack","code":31,"msn":3}`, `"aeth":{"type":"nak","code":0,"msn":3}`,
		`"aeth":{"type":"rnr","code":14,"msn":3,"timer_ns":1280000}`, `"aeth":{"type":"rnr","code":0,"msn":3,"timer_ns":655360000}`,
		`"aeth":{"type":"rnr","code":1,"msn":3,"timer_ns":10000}`} {
		if i >= len(lines) || !strings.Contains(lines[i], want) {
			t.Errorf("jsonl line %d = %q, want it to contain %s", i, lines[min(i, len(lines)-1)], want)
		}
	}
}
