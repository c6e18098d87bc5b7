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

// macMirrorTraceFrames returns a dumper's view of a PFC exchange: the
// wrapped copy of an XOFF a host sent (received on switch port 1), a RoCE
// mirror copy, the switch's injected PAUSE (sent on port 2), the XON, a
// wrapped frame that is no MAC Control frame, one with an unknown opcode,
// one cut inside the PFC PDU, and one whose event byte is no event.
func macMirrorTraceFrames(t testing.TB) [][]byte {
	nic := [6]byte{0x02, 0, 0, 0, 0, 0x01}
	sw := [6]byte{0x0c, 0x42, 0xa1, 0x00, 0x00, 0x07}
	spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		UDPSrc: 0xC123, Opcode: roce.RCSendOnly, DestQP: 0x11, PSN: 1, Payload: []byte{1, 2, 3, 4}}
	rdma, err := spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !roce.ApplyMirror(rdma, roce.MirrorMeta{Seq: 2, TimestampNs: 1500}, roce.DefaultMirrorPort, 0x2222) || !roce.RestoreMirror(rdma, roce.DefaultMirrorPort) {
		t.Fatal("mirror codec failed")
	}
	wrap := func(seq uint64, ev roce.Event, sent bool, port uint16, frame []byte) []byte {
		return roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: seq, TimestampNs: seq * 1500, Event: ev}, sent, port, frame)
	}
	unknown := roce.BuildPause(nil, sw, 0)
	unknown[15] = 0x02 // opcode 0x0002 (EPON GATE)
	arp := append(append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, nic[:]...), 0x08, 0x06)
	arp = append(arp, make([]byte, 46)...)
	return [][]byte{
		wrap(1, roce.EventNone, false, 1, roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 0xFFFF})),
		rdma,
		wrap(3, roce.EventPause, true, 2, roce.BuildPause(nil, sw, 0xFFFF)),
		wrap(4, roce.EventNone, false, 1, roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 0})),
		wrap(5, roce.EventNone, false, 1, arp),
		wrap(6, roce.EventNone, true, 65535, unknown),
		wrap(7, roce.EventNone, false, 1, roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 1})[:30]),
		wrap(8, roce.Event(200), true, 2, roce.BuildPFC(nil, sw, 0x01, [8]uint16{0: 7})),
	}
}

func writeMACMirrorTrace(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "mac.pcap")
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
	for _, fr := range macMirrorTraceFrames(t) {
		_, ts, _ := trace.MirrorFields(fr)
		if err := w.WritePacket(int64(ts), fr, len(fr)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodeMACMirror(t *testing.T) {
	path := writeMACMirrorTrace(t)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"decode"}, []string{
			"0 0.000001500 PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 p3=65535 [mirror seq=1 ts=1500 event=none recv port 1]",
			"1 0.000001500 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok [mirror seq=2 ts=1500 event=none]",
			"2 0.000004500 PAUSE 0c:42:a1:00:00:07 > 01:80:c2:00:00:01 quanta=65535 [mirror seq=3 ts=4500 event=pause sent port 2]",
			"3 0.000006000 PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 p3=0(xon) [mirror seq=4 ts=6000 event=none recv port 1]",
			"4 0.000007500 non-RoCE (roce: not a MAC Control frame) len=78 [mirror seq=5 ts=7500 event=none recv port 1]",
			"5 0.000009000 MAC_CONTROL_0x0002 0c:42:a1:00:00:07 > 01:80:c2:00:00:01 [mirror seq=6 ts=9000 event=none sent port 65535]",
			"6 0.000010500 non-RoCE (roce: MAC Control frame truncated) len=48 [mirror seq=7 ts=10500 event=none recv port 1]",
			"7 0.000012000 PFC 0c:42:a1:00:00:07 > 01:80:c2:00:00:01 enable=0x01 p0=7 [mirror seq=8 ts=12000 event=event(200) sent port 2]",
		}},
		{[]string{"decode", "--mirror", "off"}, []string{
			"0 0.000001500 non-RoCE (roce: not a RoCEv2 frame) len=78",
			"1 0.000001500 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok",
		}},
		{[]string{"decode", "--format", "jsonl"}, []string{
			`{"index":0,"time_ns":1500,"frame_len":78,"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: not a RoCEv2 frame","mirror":{"seq":1,"ts_ns":1500,"event":"none","sent":false,"port":1},"mac_control":{"opcode":"PFC","opcode_num":257,"src_mac":"02:00:00:00:00:01","dst_mac":"01:80:c2:00:00:01","vlans":0,"enable_vector":8,"time":[0,0,0,65535,0,0,0,0]}}`,
			`{"index":1,"time_ns":1500,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":1,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"seq":2,"ts_ns":1500,"event":"none"},"payload_len":4}`,
			`{"index":2,"time_ns":4500,"frame_len":78,"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: not a RoCEv2 frame","mirror":{"seq":3,"ts_ns":4500,"event":"pause","sent":true,"port":2},"mac_control":{"opcode":"PAUSE","opcode_num":1,"src_mac":"0c:42:a1:00:00:07","dst_mac":"01:80:c2:00:00:01","vlans":0,"pause_time":65535}}`,
			`{"index":3,"time_ns":6000,"frame_len":78,"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: not a RoCEv2 frame","mirror":{"seq":4,"ts_ns":6000,"event":"none","sent":false,"port":1},"mac_control":{"opcode":"PFC","opcode_num":257,"src_mac":"02:00:00:00:00:01","dst_mac":"01:80:c2:00:00:01","vlans":0,"enable_vector":8,"time":[0,0,0,0,0,0,0,0]}}`,
			`{"index":4,"time_ns":7500,"frame_len":78,"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: not a MAC Control frame","mirror":{"seq":5,"ts_ns":7500,"event":"none","sent":false,"port":1}}`,
		}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(append(tt.args, path)...)
			if code != 0 || stderr != "" {
				t.Fatalf("lumina %s: exit %d, stderr %q", strings.Join(tt.args, " "), code, stderr)
			}
			got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			got = got[:min(len(got), len(tt.want))]
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lumina %s output (-want +got):\n-%s\n+%s", strings.Join(tt.args, " "), strings.Join(tt.want, "\n-"), strings.Join(got, "\n+"))
			}
		})
	}
}

func TestDecodeMACMirrorAllocs(t *testing.T) {
	var ps []trace.Packet
	for i, fr := range macMirrorTraceFrames(t) {
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
			t.Errorf("decoder.frame (jsonl=%v) allocs per %d frames = %v, want 0", jsonl, len(ps), n)
		}
	}
}
