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

// writeFabricTrace writes copies of switches 0, 3 and 2 (a RoCE copy of
// switch 0, one of switch 3, a wrapped PFC copy of switch 2) to path.
func writeFabricTrace(t *testing.T, path string) {
	t.Helper()
	spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		UDPSrc: 0xC123, Opcode: roce.RCSendOnly, DestQP: 0x11, PSN: 1, Payload: []byte{1, 2, 3, 4}}
	roceCopy := func(sw uint8, seq, ts uint64) []byte {
		f, err := spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !roce.ApplyMirror(f, roce.MirrorMeta{Switch: sw, Seq: seq, TimestampNs: ts}, roce.DefaultMirrorPort, 0x2222) || !roce.RestoreMirror(f, roce.DefaultMirrorPort) {
			t.Fatal("mirror codec failed")
		}
		return f
	}
	nic := [6]byte{0x02, 0, 0, 0, 0, 0x01}
	frames := [][]byte{
		roceCopy(0, 1, 1500),
		roceCopy(3, 1, 2500),
		roce.AppendMACMirror(nil, roce.MirrorMeta{Switch: 2, Seq: 7, TimestampNs: 3000}, true, 201, roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 0xFFFF})),
	}
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
	for _, fr := range frames {
		_, ts, _ := trace.MirrorFields(fr)
		if err := w.WritePacket(int64(ts), fr, len(fr)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeSwitch: copies of a switch other than 0 print " sw=" with the
// switch's id, or its name from the run record of the run whose trace it
// is; switch 0's copies print as before fabrics, except in a run whose
// record names the fabric's switches: then switch 0 is named too.
func TestDecodeSwitch(t *testing.T) {
	run := t.TempDir()
	for name, data := range map[string]string{
		"report.json": `{"schema": "lumina.report/v1"}`,
		"config.yaml": "name: x\n",
		"meta.json":   `{"fabric": {"switches": ["tor1", "tor2", "spine", "leaf"], "ports": []}}`,
	} {
		if err := os.WriteFile(filepath.Join(run, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inRun := filepath.Join(run, "trace.pcap")
	writeFabricTrace(t, inRun)
	alone := filepath.Join(t.TempDir(), "fabric.pcap")
	writeFabricTrace(t, alone)
	const (
		line0 = "0 0.000001500 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok [mirror seq=1 ts=1500 event=none]"
		json0 = `{"index":0,"time_ns":1500,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":1,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"seq":1,"ts_ns":1500,"event":"none"},"payload_len":4}`
	)
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"ids", []string{"decode", alone}, []string{
			line0,
			"1 0.000002500 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok [mirror sw=3 seq=1 ts=2500 event=none]",
			"2 0.000003000 PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 p3=65535 [mirror sw=2 seq=7 ts=3000 event=none sent port 201]",
		}},
		{"names", []string{"decode", inRun}, []string{
			strings.Replace(line0, "[mirror seq=1", "[mirror sw=tor1 seq=1", 1),
			"1 0.000002500 10.0.0.1:49443 > 10.0.0.2:4791 RC_SEND_ONLY qp=0x000011 psn=1 len=4 icrc=ok [mirror sw=leaf seq=1 ts=2500 event=none]",
			"2 0.000003000 PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 p3=65535 [mirror sw=spine seq=7 ts=3000 event=none sent port 201]",
		}},
		{"jsonl-names", []string{"decode", "--format", "jsonl", inRun}, []string{
			strings.Replace(json0, `"mirror":{"seq":1`, `"mirror":{"switch":0,"switch_name":"tor1","seq":1`, 1),
			`{"index":1,"time_ns":2500,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":1,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"switch":3,"switch_name":"leaf","seq":1,"ts_ns":2500,"event":"none"},"payload_len":4}`,
			`{"index":2,"time_ns":3000,"frame_len":78,"src_ip":null,"dst_ip":null,"opcode":null,"error":"roce: not a RoCEv2 frame","mirror":{"switch":2,"switch_name":"spine","seq":7,"ts_ns":3000,"event":"none","sent":true,"port":201},"mac_control":{"opcode":"PFC","opcode_num":257,"src_mac":"02:00:00:00:00:01","dst_mac":"01:80:c2:00:00:01","vlans":0,"enable_vector":8,"time":[0,0,0,65535,0,0,0,0]}}`,
		}},
		{"jsonl-ids", []string{"decode", "--format", "jsonl", alone}, []string{
			json0,
			`{"index":1,"time_ns":2500,"frame_len":62,"src_ip":"10.0.0.1","dst_ip":"10.0.0.2","udp_src":49443,"udp_dst":4791,"ecn":0,"opcode":"RC_SEND_ONLY","opcode_num":4,"dest_qp":17,"psn":1,"ack_req":false,"becn":false,"pad":0,"icrc":"ok","mirror":{"switch":3,"seq":1,"ts_ns":2500,"event":"none"},"payload_len":4}`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tt.args...)
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
