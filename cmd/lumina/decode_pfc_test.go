package main

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// pfcTraceFrames returns PFC, PAUSE and RoCE frames as a switch port sees
// them: an XOFF on priority 3, a link PAUSE, a RoCE WRITE, the XON, a PFC
// frame with an unknown opcode and one cut by the capture.
func pfcTraceFrames(t testing.TB) [][]byte {
	nic := [6]byte{0x02, 0, 0, 0, 0, 0x01}
	sw := [6]byte{0x0c, 0x42, 0xa1, 0x00, 0x00, 0x07}
	write := roce.FrameSpec{SrcMAC: [6]byte{0x0c, 0x42, 0xa1, 0, 0, 1}, DstMAC: [6]byte{0x0c, 0x42, 0xa1, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC123,
		Opcode: roce.RCWriteOnly, DestQP: 0x11, PSN: 7, AckReq: true,
		RETH: roce.RETHFields{VA: 0x1000, RKey: 5, Length: 4}, Payload: []byte{1, 2, 3, 4}}
	rdma, err := write.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	unknown := roce.BuildPause(nil, sw, 0)
	unknown[15] = 0x02 // opcode 0x0002 (EPON GATE)
	return [][]byte{
		roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 0xFFFF}),
		roce.BuildPause(nil, sw, 0xFFFF),
		rdma,
		roce.BuildPFC(nil, nic, 0x09, [8]uint16{0: 0, 3: 0, 5: 12}),
		unknown,
		roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 0xFFFF})[:30],
	}
}

func writePFCTrace(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "pfc.pcap")
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
	for i, fr := range pfcTraceFrames(t) {
		orig := len(fr)
		if i == 5 {
			orig = roce.MACControlMinLen // snaplen cut
		}
		if err := w.WritePacket(1_700_000_000_000_000_000+int64(i)*1500, fr, orig); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodePFCText(t *testing.T) {
	code, stdout, stderr := runCLI("decode", writePFCTrace(t))
	if code != 0 || stderr != "" {
		t.Fatalf("lumina decode: exit %d, stderr %q", code, stderr)
	}
	want := []string{
		"0 1700000000.000000000 PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 p3=65535",
		"1 1700000000.000001500 PAUSE 0c:42:a1:00:00:07 > 01:80:c2:00:00:01 quanta=65535",
		"2 1700000000.000003000 10.0.0.1:49443 > 10.0.0.2:4791 RC_RDMA_WRITE_ONLY qp=0x000011 psn=7 A va=0x1000 rkey=0x5 dlen=4 len=4 icrc=ok",
		"3 1700000000.000004500 PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x09 p0=0(xon) p3=0(xon)",
		"4 1700000000.000006000 MAC_CONTROL_0x0002 0c:42:a1:00:00:07 > 01:80:c2:00:00:01",
		"5 1700000000.000007500 non-RoCE (roce: MAC Control frame truncated) len=60",
	}
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lumina decode output (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
}

func TestDecodePFCJSONL(t *testing.T) {
	code, stdout, stderr := runCLI("decode", "--format", "jsonl", writePFCTrace(t))
	if code != 0 || stderr != "" {
		t.Fatalf("lumina decode: exit %d, stderr %q", code, stderr)
	}
	const nonRoCE = `"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: not a RoCEv2 frame"`
	want := []string{
		`{"index":0,"time_ns":1700000000000000000,"frame_len":60,` + nonRoCE + `,"mac_control":{"opcode":"PFC","opcode_num":257,"src_mac":"02:00:00:00:00:01","dst_mac":"01:80:c2:00:00:01","vlans":0,"enable_vector":8,"time":[0,0,0,65535,0,0,0,0]}}`,
		`{"index":1,"time_ns":1700000000000001500,"frame_len":60,` + nonRoCE + `,"mac_control":{"opcode":"PAUSE","opcode_num":1,"src_mac":"0c:42:a1:00:00:07","dst_mac":"01:80:c2:00:00:01","vlans":0,"pause_time":65535}}`,
		`{"index":2,"time_ns":1700000000000003000,"frame_len":78,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_RDMA_WRITE_ONLY","opcode_num":10,"dest_qp":17,"psn":7,"ack_req":true,"becn":false,"pad":0,"icrc":"ok","reth":{"va":4096,"rkey":5,"len":4},"payload_len":4}`,
		`{"index":3,"time_ns":1700000000000004500,"frame_len":60,` + nonRoCE + `,"mac_control":{"opcode":"PFC","opcode_num":257,"src_mac":"02:00:00:00:00:01","dst_mac":"01:80:c2:00:00:01","vlans":0,"enable_vector":9,"time":[0,0,0,0,0,12,0,0]}}`,
		`{"index":4,"time_ns":1700000000000006000,"frame_len":60,` + nonRoCE + `,"mac_control":{"opcode":"MAC_CONTROL_0x0002","opcode_num":2,"src_mac":"0c:42:a1:00:00:07","dst_mac":"01:80:c2:00:00:01","vlans":0}}`,
		`{"index":5,"time_ns":1700000000000007500,"frame_len":60,"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: MAC Control frame truncated"}`,
	}
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lumina decode --format jsonl output (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
}

// TestDecodePFCMirrorAuto checks that PAUSE and PFC frames neither carry
// mirror metadata nor make --mirror auto decide: the first RoCE frame after
// them, a restored mirror copy, still turns mirror decoding on.
func TestDecodePFCMirrorAuto(t *testing.T) {
	spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		UDPSrc: 0xC123, Opcode: roce.RCSendOnly, DestQP: 0x11, PSN: 1, Payload: []byte{1, 2, 3, 4}}
	copyFrame, err := spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := roce.MirrorMeta{Seq: 9, TimestampNs: 12345, Event: roce.EventDrop}
	if !roce.ApplyMirror(copyFrame, m, roce.DefaultMirrorPort, 0x2222) || !roce.RestoreMirror(copyFrame, roce.DefaultMirrorPort) {
		t.Fatal("mirror codec failed")
	}
	d := newTestDecoder(false)
	var lines []string
	for i, fr := range [][]byte{roce.BuildPFC(nil, [6]byte{}, 0x08, [8]uint16{3: 100}), copyFrame} {
		d.frame(trace.Packet{Index: i, Data: fr, OrigLen: len(fr), LinkType: trace.LinkTypeEthernet})
		lines = append(lines, string(bytes.TrimSuffix(d.buf, []byte("\n"))))
	}
	want := []string{
		"0 0.000000000 PFC 00:00:00:00:00:00 > 01:80:c2:00:00:01 enable=0x08 p3=100",
		"1 0.000000000 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok [mirror seq=9 ts=12345 event=drop]",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("decoded (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(lines, "\n+"))
	}
}

func TestDecodePFCFrameAllocs(t *testing.T) {
	var ps []trace.Packet
	for i, fr := range pfcTraceFrames(t) {
		ps = append(ps, trace.Packet{Index: i, TimeNs: int64(i), Data: fr, OrigLen: len(fr), LinkType: trace.LinkTypeEthernet})
	}
	for _, jsonl := range []bool{false, true} {
		d := newTestDecoder(jsonl)
		for _, p := range ps {
			d.frame(p) // grow the line buffer once
		}
		if n := testing.AllocsPerRun(200, func() {
			for _, p := range ps {
				d.frame(p)
			}
		}); n != 0 {
			t.Errorf("decoder.frame (jsonl=%v) allocs per %d PFC/PAUSE frames = %v, want 0", jsonl, len(ps), n)
		}
	}
}
