package main

import (
	"bufio"
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

var update = flag.Bool("update", false, "rewrite golden files and the sample traces in examples/traces")

// The sample traces in examples/traces are synthetic: built here with the
// roce builder (not captured from a NIC or produced by the simulator), so
// the README's first command works on a fresh clone. TestSampleTraces fails
// if the committed files differ from what this code builds; -update rewrites
// them.

var (
	reqMAC = [6]byte{0x02, 0x4c, 0x00, 0x00, 0x00, 0x01}
	rspMAC = [6]byte{0x02, 0x4c, 0x00, 0x00, 0x00, 0x02}
	reqIP  = netip.MustParseAddr("10.0.0.1")
	rspIP  = netip.MustParseAddr("10.0.0.2")
)

const (
	reqQPN  = 0x000abc
	rspQPN  = 0x000def
	reqIPSN = roce.PSN(0xFFFFFE) // the data PSNs cross the 24-bit wrap
)

type sampleFrame struct {
	spec  roce.FrameSpec
	event roce.Event
	delay int64 // ns after the previous frame
}

// writeDropFrames is a two-message WRITE (4 KB each, MTU 1024) on one QP:
// the switch drops the third packet of message 0 (relative PSN 2), the
// responder NAKs with the expected PSN when the fourth arrives, the
// requester goes back to it; message 1's first packet is ECN-marked and the
// responder answers with a CNP.
func writeDropFrames() []sampleFrame {
	data := func(rel int, op roce.Opcode, ack bool) roce.FrameSpec {
		f := roce.FrameSpec{
			SrcMAC: reqMAC, DstMAC: rspMAC, SrcIP: reqIP, DstIP: rspIP, TOS: 0x02, TTL: 64,
			UDPSrc: roce.UDPSourcePort(reqQPN, rspQPN), Opcode: op, DestQP: rspQPN,
			PSN: reqIPSN.Add(rel), AckReq: ack, Payload: bytes.Repeat([]byte{byte(rel)}, 1024),
		}
		if op.HasRETH() {
			f.RETH = roce.RETHFields{VA: 0x7f3a_0000_0000 + uint64(rel/4)*4096, RKey: 0x2a2a, Length: 4096}
		}
		return f
	}
	ack := func(rel int, s roce.Syndrome, msn uint32) roce.FrameSpec {
		return roce.FrameSpec{
			SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, TOS: 0x02, TTL: 64,
			UDPSrc: roce.UDPSourcePort(rspQPN, reqQPN), Opcode: roce.RCAcknowledge, DestQP: reqQPN,
			PSN: reqIPSN.Add(rel), AETH: roce.AETHFields{Syndrome: s, MSN: msn},
		}
	}
	cnp := roce.FrameSpec{
		SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, TOS: 0xC2, TTL: 64,
		Opcode: roce.CNP, BECN: true, DestQP: reqQPN,
	}
	ok := roce.ACKSyndrome(roce.CreditCountInvalid)
	nak := roce.NAKSyndrome(roce.NAKPSNSequenceError)
	marked := data(4, roce.RCWriteFirst, false)
	marked.TOS = 0x03 // CE as delivered
	return []sampleFrame{
		{data(0, roce.RCWriteFirst, false), roce.EventNone, 0},
		{data(1, roce.RCWriteMiddle, false), roce.EventNone, 420},
		{data(2, roce.RCWriteMiddle, false), roce.EventDrop, 420},
		{data(3, roce.RCWriteLast, true), roce.EventNone, 420},
		{ack(2, nak, 0), roce.EventNone, 1650},
		{data(2, roce.RCWriteMiddle, false), roce.EventNone, 4300},
		{data(3, roce.RCWriteLast, true), roce.EventNone, 420},
		{ack(3, ok, 1), roce.EventNone, 1900},
		{marked, roce.EventECN, 300},
		{data(5, roce.RCWriteMiddle, false), roce.EventNone, 420},
		{cnp, roce.EventNone, 600},
		{data(6, roce.RCWriteMiddle, false), roce.EventNone, 200},
		{data(7, roce.RCWriteLast, true), roce.EventNone, 420},
		{ack(7, ok, 2), roce.EventNone, 1900},
	}
}

// buildWriteDrop returns the trace as the dumpers write it (snaplen 128,
// ports restored, metadata in MACs and TTL, pcap time = switch time).
func buildWriteDrop(t testing.TB) []byte {
	var buf bytes.Buffer
	w, err := trace.NewPcapWriter(&buf, 128, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(5_000_000_000) // switch clock: ns since it started
	for i, f := range writeDropFrames() {
		ts += f.delay
		frame, err := f.spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		m := roce.MirrorMeta{Seq: uint64(i + 1), TimestampNs: uint64(ts), Event: f.event}
		if !roce.ApplyMirror(frame, m, roce.DefaultMirrorPort, uint16(0x1000+i*7919)) ||
			!roce.RestoreMirror(frame, roce.DefaultMirrorPort) {
			t.Fatal("mirror codec failed")
		}
		if err := w.WritePacket(ts, frame, len(frame)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// buildMixed returns a pcapng with what a decoder meets in the wild: ARP,
// TCP, IPv6 RoCE, a VLAN tag, an unrestored mirror copy, a corrupted frame.
func buildMixed(t testing.TB) []byte {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	w, err := trace.NewPcapngWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	arp := append(append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, reqMAC[:]...), 0x08, 0x06,
		0, 1, 8, 0, 6, 4, 0, 1)
	arp = append(append(append(append(arp, reqMAC[:]...), 10, 0, 0, 1), make([]byte, 6)...), 10, 0, 0, 2)
	tcp := append(append(append([]byte(nil), rspMAC[:]...), reqMAC[:]...), 0x08, 0x00,
		0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2)
	tcp = append(tcp, make([]byte, 20)...)
	send := roce.FrameSpec{SrcMAC: reqMAC, DstMAC: rspMAC, SrcIP: netip.MustParseAddr("fd00::1"),
		DstIP: netip.MustParseAddr("fd00::2"), UDPSrc: 0xC00F, Opcode: roce.RCSendOnlyWithImmediate,
		DestQP: rspQPN, PSN: 77, AckReq: true, Immediate: 0xdeadbeef, Payload: []byte("hello, world!")}
	vlan := roce.FrameSpec{SrcMAC: reqMAC, DstMAC: rspMAC, SrcIP: reqIP, DstIP: rspIP, HasVLAN: true, VLANID: 100,
		VLANPCP: 3, UDPSrc: 0xC010, Opcode: roce.RCReadRequest, DestQP: rspQPN, PSN: 1000, AckReq: true,
		RETH: roce.RETHFields{VA: 0x1000, RKey: 9, Length: 8192}}
	raw := roce.FrameSpec{SrcMAC: rspMAC, DstMAC: reqMAC, SrcIP: rspIP, DstIP: reqIP, UDPSrc: 0xC011,
		Opcode: roce.RCReadResponseOnly, DestQP: reqQPN, PSN: 1000, AETH: roce.AETHFields{Syndrome: 0x1F, MSN: 5},
		Payload: []byte("ABCDEFGH")}
	frames := [][]byte{arp, tcp}
	for _, s := range []roce.FrameSpec{send, vlan, raw, raw} {
		f, err := s.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	roce.ApplyMirror(frames[4], roce.MirrorMeta{Seq: 42, TimestampNs: 5000, Event: roce.EventNone}, roce.DefaultMirrorPort, 0x3333)
	frames[5][14+4] ^= 0xFF // IP identification flipped: the "corrupt" event, ICRC fails
	frames[5][14+10], frames[5][14+11] = 0, 0
	c := roce.IPv4Checksum(frames[5][14:34])
	frames[5][14+10], frames[5][14+11] = byte(c>>8), byte(c)
	for i, f := range frames {
		if err := w.WritePacket(int64(1_700_000_001_000_000_000+i*1000), f, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSampleTraces(t *testing.T) {
	for name, build := range map[string]func(testing.TB) []byte{
		"write-drop.pcap": buildWriteDrop,
		"mixed.pcapng":    buildMixed,
	} {
		path := filepath.Join("..", "..", "examples", "traces", name)
		want := build(t)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./cmd/lumina -run TestSampleTraces -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what samples_test.go builds; run with -update if the change is intended", path)
		}
	}
}
