package tests

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// luaDissector is the Wireshark dissector docs/wireshark.md ships.
const luaDissector = "../contrib/wireshark/lumina.lua"

// tsharkLines runs tshark (with env added to the environment, when given)
// and returns its output lines. It fails the test if tshark fails or
// reports a Lua error.
func tsharkLines(t *testing.T, tshark string, env []string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(tshark, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if strings.Contains(string(out), "Lua Error") {
		t.Fatalf("tshark %s: the dissector failed:\n%s", strings.Join(args, " "), out)
	}
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// luaFields runs tshark with the dissector on pcap and prints fields, one
// line per frame (filtered by the display filter when not empty), "|"
// between fields.
func luaFields(t *testing.T, tshark, pcap, filter string, fields ...string) []string {
	t.Helper()
	args := []string{"-n", "-X", "lua_script:" + luaDissector, "-r", pcap, "-T", "fields", "-E", "separator=|"}
	if filter != "" {
		args = append(args, "-Y", filter)
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	return tsharkLines(t, tshark, nil, args...)
}

// mac48 reads a 48-bit mirror field (timestamp or sequence number).
func mac48(m [6]byte) uint64 {
	return uint64(binary.BigEndian.Uint16(m[0:]))<<32 | uint64(binary.BigEndian.Uint32(m[2:]))
}

// epoch formats a pcap record time as tshark's frame.time_epoch does.
func epoch(ns int64) string { return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9) }

// wsOpcodeNames are the names the dissector gives the Info column of a
// truncated copy (IBTA vol. 1, 9.2.1), for the opcodes of the runs below.
var wsOpcodeNames = map[roce.Opcode]string{
	roce.RCWriteFirst:  "RC RDMA Write First",
	roce.RCWriteMiddle: "RC RDMA Write Middle",
	roce.RCWriteLast:   "RC RDMA Write Last",
	roce.RCWriteOnly:   "RC RDMA Write Only",
}

// TestWiresharkMirrorCopies: on the trace of a default run (quickstart on
// sim, snap-len 128), every frame shows in tshark with the dissector the
// mirror metadata lumina decodes (sequence number, switch timestamp, event),
// its record time is the switch timestamp, and the data packets the snap-len
// cut are "truncated" with their captured and wire lengths, with their
// opcode, QP and PSN in the Info column, never "Malformed" (tshark alone
// says "Invalid Packet Length from LRH! [Malformed Packet]").
func TestWiresharkMirrorCopies(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	pcap := filepath.Join(exampleRun(t, "../examples/quickstart.yaml"), "trace.pcap")
	var want []string
	truncated, drops := 0, 0
	var pr roce.Parser
	var p roce.Packet
	err := trace.ReadFile(pcap, func(tp trace.Packet) error {
		if err := pr.Parse(tp.Data, tp.OrigLen, &p); err != nil {
			return fmt.Errorf("frame %d: %w", tp.Index+1, err)
		}
		seq, ts, ev := mac48(p.SrcMAC), mac48(p.DstMAC), p.Mirror().Event
		if ev == roce.EventDrop {
			drops++
		}
		mirror := fmt.Sprintf("[mirror seq=%d ts=%d event=%v]", seq, ts, ev)
		caplen, wirelen, info := "", "", ""
		if len(tp.Data) < tp.OrigLen {
			truncated++
			name, ok := wsOpcodeNames[p.Opcode]
			if !ok {
				return fmt.Errorf("frame %d: truncated %v, not in wsOpcodeNames", tp.Index+1, p.Opcode)
			}
			n, w := len(tp.Data)-p.BTHOff, p.UDPLength-roce.UDPLen
			caplen, wirelen = fmt.Sprint(n), fmt.Sprint(w)
			info = fmt.Sprintf("%s QP=0x%06x PSN=%d [truncated: %d of %d bytes] %s", name, p.BTH.DestQP(), p.BTH.PSN(), n, w, mirror)
		} else {
			info = "… " + mirror // the InfiniBand dissector's text, then ours
		}
		want = append(want, fmt.Sprintf("%d|%s|eth:ethertype:ip:udp:lumina:infiniband|%d|%d|%d|%s|%s|%d|%s",
			tp.Index+1, epoch(tp.TimeNs), seq, ts, ev, caplen, wirelen, p.BTH.PSN(), info))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if truncated < 100 || truncated == len(want) || drops == 0 {
		t.Fatalf("the run has %d frames, %d truncated, %d drops: want hundreds truncated, some not, and a drop", len(want), truncated, drops)
	}
	got := luaFields(t, tshark, pcap, "", "frame.number", "frame.time_epoch", "frame.protocols", "lumina.seq", "lumina.ts",
		"lumina.event", "lumina.caplen", "lumina.len", "infiniband.bth.psn", "_ws.col.Info")
	if len(got) != len(want) {
		t.Fatalf("tshark printed %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if strings.Contains(g, "Malformed") {
			t.Errorf("frame %d: %q says Malformed", i+1, g)
		}
		if pre, suf, ok := strings.Cut(w, "… "); ok {
			if !strings.HasPrefix(g, pre) || !strings.HasSuffix(g, " "+suf) {
				t.Errorf("frame %d: tshark %q, want %q…%q", i+1, g, pre, " "+suf)
			}
		} else if g != w {
			t.Errorf("frame %d: tshark %q, want %q", i+1, g, w)
		}
	}
}

// TestWiresharkPFCCopies: the wrapped mirror copies of PFC frames in a run
// (pfc-storm on sim) show their mirror header (sequence number, timestamp,
// event, direction, switch port) and the original frame decoded by
// Wireshark's MAC Control dissector (source, opcode, enable vector,
// priority-3 quanta), frame by frame as lumina decodes them.
func TestWiresharkPFCCopies(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	pcap := filepath.Join(exampleRun(t, "../examples/pfc-storm.yaml"), "trace.pcap")
	var want []string
	var mm roce.MACMirror
	var m roce.MACControlFrame
	xon, sent := 0, 0
	err := trace.ReadFile(pcap, func(tp trace.Packet) error {
		if roce.ParseMACMirror(tp.Data, &mm) != nil {
			return nil
		}
		if err := roce.ParseMACControl(mm.Frame, &m); err != nil {
			return fmt.Errorf("frame %d: %w", tp.Index+1, err)
		}
		dir := "0"
		if mm.Sent {
			dir = "1"
			sent++
		}
		if m.Time[3] == 0 {
			xon++
		}
		outer := net48(tp.Data[6:12])
		want = append(want, fmt.Sprintf("%d|%s|eth:ethertype:lumina_mac:eth:ethertype:macc|%d|%d|%d|%s|%d|%s,%s|%d|%d|%d",
			tp.Index+1, epoch(tp.TimeNs), mm.Seq, mm.TimestampNs, mm.Event, dir, mm.Port, outer, net48(m.SrcMAC[:]),
			m.Opcode, m.EnableVector, m.Time[3]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 100 || xon == 0 || sent == 0 || sent == len(want) {
		t.Fatalf("%d PFC copies, %d XON, %d sent: want the storm's hundreds, XONs, sent and received", len(want), xon, sent)
	}
	got := luaFields(t, tshark, pcap, "lumina.port", "frame.number", "frame.time_epoch", "frame.protocols",
		"lumina.seq", "lumina.ts", "lumina.event", "lumina.sent", "lumina.port", "eth.src",
		"macc.opcode", "macc.cbfc.enbv", "macc.cbfc.pause_time.c3")
	if len(got) != len(want) {
		t.Fatalf("tshark printed %d wrapped copies, want %d", len(got), len(want))
	}
	for i := range want {
		f := strings.Split(got[i], "|")
		for j := len(f) - 3; j < len(f); j++ {
			f[j] = normTshark(f[j])
		}
		if g := strings.Join(f, "|"); g != want[i] {
			t.Errorf("copy %d: tshark %q, want %q", i, g, want[i])
		}
	}
}

func net48(b []byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

// TestWiresharkHold: the hold a delay or reorder copy carries (docs/events.md:
// a 16-bit code, e = code>>13, m = code&0x1fff, hold = m<<(3e) ns, in the
// UDP checksum of a restored copy, the UDP source port of a raw one),
// decoded from synthetic copies cut at snap-len 128 and shown as lumina
// decode shows it; other events carry none, and code 0 means none recorded.
func TestWiresharkHold(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	tests := []struct {
		name      string
		v6, raw   bool
		event     roce.Event
		holdNs    int64  // what the switch measured
		hold      string // lumina.hold|lumina.hold.code|lumina.hold.unit|lumina.udp_src
		infoAfter string // the end of the Info column
	}{
		{"delay-5us", false, false, roce.EventDelay, 5000, "5000|0x1388|1|", "event=delay hold=5000ns]"},
		{"reorder-e1-max", false, false, roce.EventReorder, 65535, "65528|0x3fff|8|", "event=reorder hold=65528..65535ns]"},
		{"delay-e2", false, false, roce.EventDelay, 80010, "80000|0x44e2|64|", "event=delay hold=80000..80063ns]"},
		{"delay-saturated", false, false, roce.EventDelay, 20e9, "17177772032|0xffff|2097152|", "event=delay hold=17177772032..17179869183ns]"},
		{"ipv6-delay-e5", true, false, roce.EventDelay, 242155620, "242155520|0xbcde|32768|", "event=delay hold=242155520..242188287ns]"},
		{"raw-delay", false, true, roce.EventDelay, 5000, "5000|0x1388|1|49443", "event=delay hold=5000ns]"},
		{"delay-not-recorded", false, false, roce.EventDelay, 0, "|||", "event=delay]"},
		{"none", false, false, roce.EventNone, 5000, "|||", "event=none]"},
		{"duplicate", false, false, roce.EventDuplicate, 5000, "|||", "event=duplicate]"},
		{"ipv6-drop", true, false, roce.EventDrop, 5000, "|||", "event=drop]"},
	}
	var copies []mirrorCopy
	for i, tc := range tests {
		spec := roce.FrameSpec{
			SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC123,
			IPID:   0x1388, // as a NIC sent it: not a hold
			Opcode: roce.RCWriteMiddle, DestQP: 0x12, PSN: roce.PSN(100 + i), Payload: bytes.Repeat([]byte{0xAB}, 1024),
		}
		if tc.v6 {
			spec.SrcIP, spec.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
			spec.IPID, spec.FlowLabel = 0, 0x1388
		}
		meta := roce.MirrorMeta{Seq: uint64(1000 + i), TimestampNs: uint64(5_000_000 + i), Event: tc.event, HoldNs: tc.holdNs}
		copies = append(copies, mirrorCopy{spec, meta, tc.raw})
	}
	path := writeMirrorCopies(t, 128, copies)
	got := luaFields(t, tshark, path, "", "lumina.seq", "lumina.event", "lumina.hold", "lumina.hold.code", "lumina.hold.unit",
		"lumina.udp_src", "lumina.caplen", "_ws.col.Info")
	if len(got) != len(tests) {
		t.Fatalf("tshark printed %d frames, want %d", len(got), len(tests))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := strings.Split(got[i], "|")
			if len(f) != 8 {
				t.Fatalf("tshark %q: want 8 fields", got[i])
			}
			if g, w := strings.Join(f[:6], "|"), fmt.Sprintf("%d|%d|%s", 1000+i, tc.event, tc.hold); g != w {
				t.Errorf("seq|event|hold|code|unit|udp_src = %q, want %q", g, w)
			}
			if f[6] == "" {
				t.Errorf("lumina.caplen empty: the copy is cut at snap-len 128, want it marked truncated")
			}
			if !strings.HasSuffix(f[7], tc.infoAfter) || strings.Contains(f[7], "Malformed") {
				t.Errorf("Info %q, want it to end with %q", f[7], tc.infoAfter)
			}
		})
	}
}

// TestWiresharkAgreesWithDecode: on the traces of sim runs with every kind
// of mirror copy (plain, drop, ECN, CNP, delay and reorder with their holds,
// wrapped PFC received and sent), the dissector ends each frame's Info
// column with the "[mirror …]" that lumina decode, the reference decoder,
// prints for it, and prints none where lumina decode prints none.
func TestWiresharkAgreesWithDecode(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	mirrorRe := regexp.MustCompile(` (\[mirror [^\]]*\])$`)
	for _, ex := range []struct {
		name string
		held int // copies with a hold in the trace
	}{
		{"quickstart", 0}, {"pfc-storm", 0}, {"delay-timeout", 1}, {"reorder-cx5", 3}, {"delayed-ack", 1},
	} {
		t.Run(ex.name, func(t *testing.T) {
			pcap := filepath.Join(exampleRun(t, "../examples/"+ex.name+".yaml"), "trace.pcap")
			r := luminaExit(t, 0, "decode", pcap)
			decoded := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			got := luaFields(t, tshark, pcap, "", "_ws.col.Info")
			if len(got) != len(decoded) {
				t.Fatalf("tshark printed %d frames, lumina decode %d", len(got), len(decoded))
			}
			held := 0
			for i := range decoded {
				var want string
				if m := mirrorRe.FindStringSubmatch(decoded[i]); m != nil {
					want = m[1]
				}
				if strings.Contains(want, " hold=") {
					held++
				}
				var g string
				if m := mirrorRe.FindStringSubmatch(got[i]); m != nil {
					g = m[1]
				}
				if g != want {
					t.Errorf("frame %d: tshark Info %q ends with %q, lumina decode %q", i+1, got[i], g, want)
				}
			}
			if held != ex.held {
				t.Errorf("%d copies with a hold, want %d", held, ex.held)
			}
		})
	}
}

// mirrorCopy is a synthetic mirror copy: the frame spec describes the packet
// the switch forwarded.
type mirrorCopy struct {
	spec roce.FrameSpec
	meta roce.MirrorMeta
	raw  bool // not restored: as it left the switch, to the mirror port
}

// writeMirrorCopies writes the copies as the dumper does (ApplyMirror, then
// RestoreMirror unless raw) into a pcap with the snap-len, record time = timestamp, and
// returns its path.
func writeMirrorCopies(t *testing.T, snaplen int, copies []mirrorCopy) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copies.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	w, err := trace.NewPcapWriter(bw, snaplen, trace.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range copies {
		frame, err := c.spec.Append(nil)
		if err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		if !roce.ApplyMirror(frame, c.meta, roce.DefaultMirrorPort, 0x4242) || !c.raw && !roce.RestoreMirror(frame, roce.DefaultMirrorPort) {
			t.Fatalf("copy %d: ApplyMirror/RestoreMirror refused the frame", i)
		}
		if err := w.WritePacket(int64(c.meta.TimestampNs), frame, len(frame)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWiresharkCutInHeaders: at snap-len 64 (the smallest lumina accepts)
// an IPv4 RDMA WRITE First is cut inside its RETH and an IPv6 copy inside
// its BTH; the InfiniBand dissector throws on both, and the Info column
// still says what the copy is, that it is truncated, and its mirror
// metadata.
func TestWiresharkCutInHeaders(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	base := roce.FrameSpec{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC123,
		Opcode: roce.RCWriteFirst, DestQP: 0x12, PSN: 7, RETH: roce.RETHFields{VA: 0x1000, RKey: 9, Length: 4096},
		Payload: bytes.Repeat([]byte{0xAB}, 1024),
	}
	v6 := base
	v6.SrcIP, v6.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	v6.Opcode, v6.PSN, v6.RETH = roce.RCWriteMiddle, 8, roce.RETHFields{}
	path := writeMirrorCopies(t, 64, []mirrorCopy{
		{base, roce.MirrorMeta{Seq: 1, TimestampNs: 1000, Event: roce.EventNone}, false},
		{v6, roce.MirrorMeta{Seq: 2, TimestampNs: 2000, Event: roce.EventDrop}, false},
	})
	got := luaFields(t, tshark, path, "", "lumina.seq", "lumina.caplen", "lumina.len", "_ws.col.Info")
	want := []string{
		// 64 - 14 - 20 - 8 = 22 RoCE bytes: the BTH and 10 of the RETH's 16.
		"1|22|1056|RC RDMA Write First QP=0x000012 PSN=7 [truncated: 22 of 1056 bytes] [mirror seq=1 ts=1000 event=none]",
		// 64 - 14 - 40 - 8 = 2 bytes of the BTH.
		"2|2|1040|RoCEv2, BTH cut [truncated: 2 of 1040 bytes] [mirror seq=2 ts=2000 event=drop]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tshark:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWiresharkMixedTrace: in the shipped mixed.pcapng (ARP, TCP, RoCE from
// hosts and one raw mirror copy addressed to the mirror port 9741) only the
// copy gets mirror metadata, with its original UDP source port from the UDP
// checksum field, as lumina decode shows it.
func TestWiresharkMixedTrace(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	const pcap = "../examples/traces/mixed.pcapng"
	var want []string
	pr := roce.Parser{MirrorPort: roce.DefaultMirrorPort}
	var p roce.Packet
	raw := 0
	err := trace.ReadFile(pcap, func(tp trace.Packet) error {
		line := fmt.Sprintf("%d||||", tp.Index+1)
		if pr.Parse(tp.Data, tp.OrigLen, &p) == nil && p.LooksMirrored() {
			line = fmt.Sprintf("%d|%d|%d|%d|", tp.Index+1, mac48(p.SrcMAC), mac48(p.DstMAC), p.TTL&7)
			if p.MirrorRaw {
				line += fmt.Sprint(p.UDPSrc)
				raw++
			}
		}
		want = append(want, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if raw != 1 {
		t.Fatalf("%s has %d raw mirror copies, want 1", pcap, raw)
	}
	got := luaFields(t, tshark, pcap, "", "frame.number", "lumina.seq", "lumina.ts", "lumina.event", "lumina.udp_src")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tshark:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWiresharkInstall runs the install command docs/wireshark.md gives
// (with HOME in a temporary directory) and checks that plain tshark, without
// -X, then decodes a shipped trace's mirror metadata as lumina decode does.
func TestWiresharkInstall(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	doc, err := os.ReadFile("../docs/wireshark.md")
	if err != nil {
		t.Fatal(err)
	}
	var install []string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "mkdir -p ~/.local/lib/wireshark/plugins") {
			install = append(install, line)
		}
	}
	if len(install) != 1 {
		t.Fatalf("docs/wireshark.md has %d install commands (lines starting mkdir -p ~/.local/lib/wireshark/plugins), want 1", len(install))
	}
	home := t.TempDir()
	env := []string{"HOME=" + home}
	sh := exec.Command("sh", "-c", install[0])
	sh.Dir, sh.Env = "..", append(os.Environ(), env...)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", install[0], err, out)
	}
	const pcap = "../examples/traces/write-drop.pcap"
	var want []string
	var pr roce.Parser
	var p roce.Packet
	err = trace.ReadFile(pcap, func(tp trace.Packet) error {
		if err := pr.Parse(tp.Data, tp.OrigLen, &p); err != nil {
			return fmt.Errorf("frame %d: %w", tp.Index+1, err)
		}
		want = append(want, fmt.Sprintf("%d|%d|%v", mac48(p.SrcMAC), mac48(p.DstMAC), p.Mirror().Event))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := tsharkLines(t, tshark, env, "-n", "-r", pcap, "-T", "fields", "-E", "separator=|",
		"-e", "lumina.seq", "-e", "lumina.ts", "-e", "lumina.event")
	for i := range got {
		// lumina.event prints as a number; compare names.
		f := strings.Split(got[i], "|")
		if len(f) == 3 {
			var e int
			if _, err := fmt.Sscan(f[2], &e); err == nil {
				f[2] = roce.Event(e).String()
			}
		}
		got[i] = strings.Join(f, "|")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tshark after the documented install:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWiresharkQDepth: the queue depth a copy carries (docs/decode.md "Queue
// depth": an 11-bit code, e = code>>8, m = code&0xff, depth = m<<(3e)
// bytes, its top 5 bits in TTL bits 3..7, its low 6 in the BTH's resv6)
// decoded from synthetic copies cut at snap-len 128, IPv4 and IPv6, raw and
// restored, shown as lumina decode shows it, the event still the TTL's low
// bits; depth 0 shows nothing.
func TestWiresharkQDepth(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	tests := []struct {
		name      string
		v6, raw   bool
		event     roce.Event
		depth     int64
		fields    string // lumina.event|lumina.qdepth|lumina.qdepth.code|lumina.qdepth.unit
		infoAfter string
	}{
		{"empty", false, false, roce.EventNone, 0, "0|||", "event=none]"},
		{"exact", false, false, roce.EventNone, 200, "0|200|0x00c8|1", "event=none qdepth=200]"},
		{"ecn-e1", false, false, roce.EventECN, 2041, "2|2040|0x01ff|8", "event=ecn qdepth=2040..2047]"},
		{"three-frames", false, false, roce.EventNone, 3234, "0|3200|0x0232|64", "event=none qdepth=3200..3263]"},
		{"ipv6-delay", true, false, roce.EventDelay, 409600, "4|409600|0x0464|4096", "event=delay hold=5000ns qdepth=409600..413695]"},
		{"raw-saturated", false, true, roce.EventDuplicate, 1 << 40, "6|534773760|0x07ff|2097152", "event=duplicate qdepth=534773760..536870911]"},
	}
	var copies []mirrorCopy
	for i, tc := range tests {
		spec := roce.FrameSpec{
			SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), UDPSrc: 0xC123,
			Opcode: roce.RCWriteMiddle, DestQP: 0x12, PSN: roce.PSN(100 + i), Payload: bytes.Repeat([]byte{0xAB}, 1024),
		}
		if tc.v6 {
			spec.SrcIP, spec.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
		}
		meta := roce.MirrorMeta{Seq: uint64(1000 + i), TimestampNs: uint64(5_000_000 + i), Event: tc.event, HoldNs: 5000, QDepth: tc.depth}
		copies = append(copies, mirrorCopy{spec, meta, tc.raw})
	}
	path := writeMirrorCopies(t, 128, copies)
	got := luaFields(t, tshark, path, "", "lumina.event", "lumina.qdepth", "lumina.qdepth.code", "lumina.qdepth.unit", "_ws.col.Info")
	if len(got) != len(tests) {
		t.Fatalf("tshark printed %d frames, want %d", len(got), len(tests))
	}
	decoded := strings.Split(strings.TrimSuffix(luminaExit(t, 0, "decode", path).stdout, "\n"), "\n")
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := strings.Split(got[i], "|")
			if len(f) != 5 {
				t.Fatalf("tshark %q: want 5 fields", got[i])
			}
			if g := strings.Join(f[:4], "|"); g != tc.fields {
				t.Errorf("event|qdepth|code|unit = %q, want %q", g, tc.fields)
			}
			if !strings.HasSuffix(f[4], tc.infoAfter) || strings.Contains(f[4], "Malformed") {
				t.Errorf("Info %q, want it to end with %q", f[4], tc.infoAfter)
			}
			if !strings.HasSuffix(decoded[i], tc.infoAfter) {
				t.Errorf("lumina decode %q, want it to end with %q", decoded[i], tc.infoAfter)
			}
		})
	}
}
