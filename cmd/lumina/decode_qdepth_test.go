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

// TestDecodeQDepth: lumina decode prints a copy's egress queue depth
// (roce.DepthCode) as qdepth=N when exact, qdepth=A..B (B = A+unit-1) when
// rounded, nothing for an empty queue; the event stays the TTL's low bits;
// JSONL adds qdepth and qdepth_unit.
func TestDecodeQDepth(t *testing.T) {
	spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		UDPSrc: 0xC123, Opcode: roce.RCSendOnly, DestQP: 0x11, Payload: []byte{1, 2, 3, 4}}
	path := filepath.Join(t.TempDir(), "q.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	w, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []roce.MirrorMeta{
		{Event: roce.EventNone, QDepth: 0},
		{Event: roce.EventNone, QDepth: 200},
		{Event: roce.EventECN, QDepth: 3234},
		{Event: roce.EventDelay, QDepth: 102400, HoldNs: 88},
	} {
		spec.PSN = roce.PSN(i)
		fr, err := spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		m.Seq, m.TimestampNs = uint64(i+1), uint64(1000*(i+1))
		if !roce.ApplyMirror(fr, m, roce.DefaultMirrorPort, 0x2222) || !roce.RestoreMirror(fr, roce.DefaultMirrorPort) {
			t.Fatal("mirror codec failed")
		}
		if err := w.WritePacket(int64(m.TimestampNs), fr, len(fr)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"decode"}, []string{
			"0 0.000001000 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=0 len=4 icrc=ok [mirror seq=1 ts=1000 event=none]",
			"1 0.000002000 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok [mirror seq=2 ts=2000 event=none qdepth=200]",
			"2 0.000003000 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=2 len=4 icrc=ok [mirror seq=3 ts=3000 event=ecn qdepth=3200..3263]",
			"3 0.000004000 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=3 len=4 icrc=ok [mirror seq=4 ts=4000 event=delay hold=88ns qdepth=102400..102911]",
		}},
		{[]string{"decode", "--format", "jsonl"}, []string{
			`{"index":0,"time_ns":1000,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":0,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"seq":1,"ts_ns":1000,"event":"none"},"payload_len":4}`,
			`{"index":1,"time_ns":2000,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":1,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"seq":2,"ts_ns":2000,"event":"none","qdepth":200,"qdepth_unit":1},"payload_len":4}`,
			`{"index":2,"time_ns":3000,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":2,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"seq":3,"ts_ns":3000,"event":"ecn","qdepth":3200,"qdepth_unit":64},"payload_len":4}`,
			`{"index":3,"time_ns":4000,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":3,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"seq":4,"ts_ns":4000,"event":"delay","hold_ns":88,"hold_unit_ns":1,"qdepth":102400,"qdepth_unit":512},"payload_len":4}`,
		}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(append(tt.args, path)...)
			if code != 0 || stderr != "" {
				t.Fatalf("lumina %s: exit %d, stderr %q", strings.Join(tt.args, " "), code, stderr)
			}
			got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lumina %s output (-want +got):\n-%s\n+%s", strings.Join(tt.args, " "), strings.Join(tt.want, "\n-"), strings.Join(got, "\n+"))
			}
		})
	}
}
