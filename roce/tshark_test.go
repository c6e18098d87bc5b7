package roce_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// tsharkFrames is one frame of every RC opcode plus ACK, NAK, RNR NAK, CNP,
// padded SEND and a READ request/response exchange, over IPv4 and IPv6.
func tsharkFrames(t *testing.T) []roce.FrameSpec {
	base := roce.FrameSpec{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC123,
	}
	var specs []roce.FrameSpec
	psn := roce.PSN(0xFFFFF0) // crosses the 24-bit wrap
	qp := uint32(0x100)
	for op := 0; op < 0x20; op++ {
		o := roce.Opcode(op)
		if !o.Valid() {
			continue
		}
		f := base
		f.Opcode, f.DestQP, f.PSN, f.AckReq = o, qp, psn, o.IsLast()
		qp += 0x1111
		psn = psn.Next()
		f.RETH = roce.RETHFields{VA: 0x7f00_0000_1000 + uint64(op), RKey: 0xABC0 + uint32(op), Length: 4096}
		f.AETH = roce.AETHFields{Syndrome: roce.ACKSyndrome(roce.CreditCountInvalid), MSN: uint32(op)}
		if o.HasPayload() {
			f.Payload = bytes.Repeat([]byte{byte(op)}, 64)
		}
		if o == roce.RCAtomicWrite {
			f.Payload = f.Payload[:8]
		}
		specs = append(specs, f)
	}
	ack := func(s roce.Syndrome, p roce.PSN) roce.FrameSpec {
		f := base
		f.SrcIP, f.DstIP = f.DstIP, f.SrcIP
		f.Opcode, f.DestQP, f.PSN, f.AETH = roce.RCAcknowledge, 0x11, p, roce.AETHFields{Syndrome: s, MSN: 7}
		return f
	}
	specs = append(specs,
		ack(roce.ACKSyndrome(roce.CreditCountInvalid), 0x123456),
		ack(roce.NAKSyndrome(roce.NAKPSNSequenceError), 0x123457),
		ack(roce.NAKSyndrome(roce.NAKRemoteAccessError), 0x000001),
		ack(roce.RNRSyndrome(12), 0xFFFFFF),
	)
	cnp := base
	cnp.Opcode, cnp.BECN, cnp.DestQP, cnp.TOS = roce.CNP, true, 0x11, 0xC2
	specs = append(specs, cnp)
	send := base
	send.Opcode, send.DestQP, send.PSN, send.AckReq, send.Payload = roce.RCSendOnly, 0x22, 5, true, []byte("hello, world!")
	specs = append(specs, send)
	rd := base
	rd.Opcode, rd.DestQP, rd.PSN, rd.AckReq, rd.RETH = roce.RCReadRequest, 0x22, 100, true, roce.RETHFields{VA: 0x1000, RKey: 7, Length: 2500}
	specs = append(specs, rd)
	for i, op := range []roce.Opcode{roce.RCReadResponseFirst, roce.RCReadResponseMiddle, roce.RCReadResponseLast} {
		r := base
		r.SrcIP, r.DstIP = r.DstIP, r.SrcIP
		r.Opcode, r.DestQP, r.PSN = op, 0x11, roce.PSN(100+i)
		r.AETH = roce.AETHFields{Syndrome: 0x1F, MSN: 9}
		r.Payload = bytes.Repeat([]byte{0xEE}, []int{1024, 1024, 452}[i])
		specs = append(specs, r)
	}
	v6 := base
	v6.SrcIP, v6.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	v6.Opcode, v6.DestQP, v6.PSN, v6.AckReq = roce.RCWriteOnly, 0x33, 9, true
	v6.RETH, v6.Payload = roce.RETHFields{VA: 1, RKey: 2, Length: 3}, []byte{1, 2, 3}
	specs = append(specs, v6)
	return specs
}

func TestTsharkAgrees(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	specs := tsharkFrames(t)
	path := filepath.Join(t.TempDir(), "all.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	w, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i := range specs {
		frame, err := specs[i].Append(nil)
		if err != nil {
			t.Fatalf("frame %d (%v): %v", i, specs[i].Opcode, err)
		}
		if err := w.WritePacket(int64(i)*1000, frame, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	fields := []string{"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.a",
		"infiniband.bth.padcnt", "infiniband.aeth.syndrome", "infiniband.aeth.msn", "infiniband.reth.dmalen",
		"infiniband.invariant.crc"}
	args := []string{"-n", "-r", path, "-T", "fields", "-E", "separator=|", "-o", "gui.column.format:\"No.\",\"%m\""}
	for _, fl := range fields {
		args = append(args, "-e", fl)
	}
	out, err := exec.Command(tshark, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "Running as user") && l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(specs) {
		t.Fatalf("tshark printed %d lines, want %d:\n%s", len(lines), len(specs), out)
	}
	for i, line := range lines {
		frame, _ := specs[i].Append(nil)
		var p roce.Packet
		if err := (&roce.Parser{VerifyICRC: true}).Parse(frame, 0, &p); err != nil || p.ICRC != roce.ICRCOK {
			t.Fatalf("frame %d: our parse: %v %v", i, err, p.ICRC)
		}
		want := []string{
			strconv.Itoa(int(p.Opcode)), strconv.Itoa(int(p.BTH.DestQP())), strconv.Itoa(int(p.BTH.PSN())),
			tsharkBool(p.BTH.AckReq()), strconv.Itoa(p.PadLen), "", "", "", "",
		}
		if p.AETH != nil {
			want[5], want[6] = strconv.Itoa(int(p.AETH.Syndrome())), strconv.Itoa(int(p.AETH.MSN()))
		}
		if p.RETH != nil {
			want[7] = strconv.Itoa(int(p.RETH.DMALength()))
		}
		// tshark shows the ICRC as the big-endian reading of the wire bytes.
		w := p.ICRCOnWire
		want[8] = fmt.Sprintf("0x%08x", w>>24|w>>8&0xFF00|w<<8&0xFF0000|w<<24)
		got := strings.Split(line, "|")
		if len(got) != len(want) {
			t.Errorf("frame %d (%v): tshark fields %q", i, p.Opcode, line)
			continue
		}
		// tshark 4.0 predates IBTA 1.5 (FLUSH, ATOMIC_WRITE: BTH only) and
		// shows no invariant CRC field for CNPs.
		n := len(want)
		switch p.Opcode {
		case roce.RCFlush, roce.RCAtomicWrite:
			n = 5
		case roce.CNP:
			n = 8
		}
		for j := range want[:n] {
			if normTshark(got[j]) != normTshark(want[j]) {
				t.Errorf("frame %d (%v): %s = %q (tshark), want %q (ours)", i, p.Opcode, fields[j], got[j], want[j])
			}
		}
	}
}

func tsharkBool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// normTshark canonicalises a tshark field value: numbers in any base become
// decimal.
func normTshark(s string) string {
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return strconv.FormatUint(v, 10)
	}
	return s
}

// TestTsharkMirrorDepth: restored mirror copies carrying a queue depth (TTL
// bits 3..7, BTH resv6) still decode in tshark with the same opcode, QP,
// PSN and invariant CRC, and tshark reads the TTL / hop limit we wrote.
func TestTsharkMirrorDepth(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	specs := tsharkFrames(t)
	path := filepath.Join(t.TempDir(), "mirror.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	w, err := trace.NewPcapWriter(bw, 0, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, len(specs))
	for i := range specs {
		frame, err := specs[i].Append(nil)
		if err != nil {
			t.Fatalf("frame %d (%v): %v", i, specs[i].Opcode, err)
		}
		m := roce.MirrorMeta{Seq: uint64(i), TimestampNs: uint64(i) * 1000, Event: roce.Event(i % 7), QDepth: int64(i) * 4099, HoldNs: 500}
		if !roce.ApplyMirror(frame, m, roce.DefaultMirrorPort, 0x1234) || !roce.RestoreMirror(frame, roce.DefaultMirrorPort) {
			t.Fatalf("frame %d: mirror rewrite failed", i)
		}
		frames[i] = frame
		if err := w.WritePacket(int64(i)*1000, frame, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fields := []string{"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "ip.ttl", "ipv6.hlim", "infiniband.invariant.crc"}
	args := []string{"-n", "-r", path, "-T", "fields", "-E", "separator=|"}
	for _, fl := range fields {
		args = append(args, "-e", fl)
	}
	out, err := exec.Command(tshark, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "Running as user") && l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines, want %d:\n%s", len(lines), len(frames), out)
	}
	for i, line := range lines {
		var p roce.Packet
		if err := (&roce.Parser{VerifyICRC: true}).Parse(frames[i], 0, &p); err != nil || p.ICRC != roce.ICRCOK {
			t.Fatalf("frame %d: our parse: %v %v", i, err, p.ICRC)
		}
		code := roce.EncodeDepth(int64(i) * 4099)
		ttl := strconv.Itoa(i%7 | int(code>>6)<<3)
		if p.DepthCode() != code || p.Mirror().Event != roce.Event(i%7) {
			t.Errorf("frame %d: DepthCode() = %#x, event %v, want %#x, %v", i, p.DepthCode(), p.Mirror().Event, code, roce.Event(i%7))
		}
		w := p.ICRCOnWire
		want := []string{strconv.Itoa(int(p.Opcode)), strconv.Itoa(int(p.BTH.DestQP())), strconv.Itoa(int(p.BTH.PSN())),
			ttl, "", fmt.Sprintf("0x%08x", w>>24|w>>8&0xFF00|w<<8&0xFF0000|w<<24)}
		if p.IPVersion == 6 {
			want[3], want[4] = "", ttl
		}
		got := strings.Split(line, "|")
		if len(got) != len(want) {
			t.Errorf("frame %d (%v): tshark fields %q", i, p.Opcode, line)
			continue
		}
		n := len(want)
		switch p.Opcode {
		case roce.RCFlush, roce.RCAtomicWrite, roce.CNP: // see TestTsharkAgrees
			n = 5
		}
		for j := range want[:n] {
			if normTshark(got[j]) != normTshark(want[j]) {
				t.Errorf("frame %d (%v): %s = %q (tshark), want %q (ours)", i, p.Opcode, fields[j], got[j], want[j])
			}
		}
	}
}
