package trace_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// writePcapFile writes frames to a pcap file in dir.
func writePcapFile(t *testing.T, dir, name string, frames [][]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := trace.WriteFramesFile(path, frames, 1000); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTsharkMACMirror: a trace of wrapped PFC/PAUSE copies shows in
// Wireshark as EtherType 0x88B5 frames, and once their 18-byte wrapper is
// stripped, as the very PFC and PAUSE frames the switch saw.
func TestTsharkMACMirror(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	nic := [6]byte{0x02, 0, 0, 0, 0, 0x01}
	orig := [][]byte{
		roce.BuildPFC(nil, nic, 0x08, [8]uint16{3: 0xFFFF}),
		roce.BuildPFC(nil, nic, 0x09, [8]uint16{0: 10, 3: 0}),
		roce.BuildPFC(nil, nic, 0xFF, [8]uint16{1, 2, 3, 4, 5, 6, 7, 8}),
		roce.BuildPause(nil, [6]byte{0x0c, 0x42, 0xa1, 0, 0, 7}, 0xFFFF),
		roce.BuildPause(nil, [6]byte{0x0c, 0x42, 0xa1, 0, 0, 7}, 0),
	}
	var wrapped, stripped [][]byte
	for i, f := range orig {
		w := roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: uint64(i + 1), TimestampNs: uint64(i) * 1000, Event: roce.EventPause}, i%2 == 0, uint16(i), f)
		if !trace.IsMACMirror(w) {
			t.Fatalf("copy %d: IsMACMirror = false", i)
		}
		wrapped = append(wrapped, w)
		stripped = append(stripped, w[roce.MACMirrorHeaderLen:])
	}
	dir := t.TempDir()
	fields := []string{"eth.type", "eth.src", "eth.dst", "macc.opcode", "macc.pause_time", "macc.cbfc.enbv"}
	for p := range roce.PFCPriorities {
		fields = append(fields, "macc.cbfc.pause_time.c"+strconv.Itoa(p))
	}
	run := func(path string) []string {
		args := []string{"-n", "-r", path, "-T", "fields", "-E", "separator=|"}
		for _, f := range fields {
			args = append(args, "-e", f)
		}
		out, err := exec.Command(tshark, args...).Output()
		if err != nil {
			t.Fatalf("tshark -r %s: %v\n%s", path, err, out)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	// tshark's formatting varies across versions: compare the stripped
	// copies with the original frames, and check that tshark read the
	// originals as MAC Control frames with the opcodes we built.
	want := run(writePcapFile(t, dir, "orig.pcap", orig))
	if got := run(writePcapFile(t, dir, "stripped.pcap", stripped)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tshark on the stripped copies (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
	if len(want) != len(orig) {
		t.Fatalf("tshark printed %d lines for %d frames", len(want), len(orig))
	}
	for i, line := range want {
		var m roce.MACControlFrame
		if err := roce.ParseMACControl(orig[i], &m); err != nil {
			t.Fatal(err)
		}
		f := strings.Split(line, "|")
		if op, err := strconv.ParseUint(strings.TrimPrefix(f[3], "0x"), 16, 16); f[0] != "0x8808" || err != nil || op != uint64(m.Opcode) {
			t.Errorf("tshark on frame %d (%v): %q, want EtherType 0x8808, opcode %#04x", i, &m, line, uint16(m.Opcode))
		}
	}
	for i, line := range run(writePcapFile(t, dir, "wrapped.pcap", wrapped)) {
		if !strings.HasPrefix(line, "0x88b5|") {
			t.Errorf("tshark on wrapped copy %d: %q, want EtherType 0x88b5", i, line)
		}
	}
}
