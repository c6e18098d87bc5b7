package roce_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// tsharkMACControlFrames returns PFC and PAUSE frames covering every single
// priority, all eight, none, quanta 0 and 65535, times on disabled
// priorities, a non-zero reserved octet, a wrong destination, a VLAN tag and
// an all-zero source (as some switches send).
func tsharkMACControlFrames() [][]byte {
	src := [6]byte{0x0c, 0x42, 0xa1, 0x12, 0x34, 0x56}
	var frames [][]byte
	for p := range roce.PFCPriorities {
		var q [8]uint16
		q[p] = uint16(p*1000 + 1)
		q[(p+1)%8] = 0xFFFF // disabled: present on the wire, not acted on
		frames = append(frames, roce.BuildPFC(nil, src, 1<<p, q))
	}
	frames = append(frames,
		roce.BuildPFC(nil, src, 0xFF, [8]uint16{0, 1, 2, 0x00FF, 0x0100, 0x7FFF, 0x8000, 0xFFFF}),
		roce.BuildPFC(nil, src, 0xFF, [8]uint16{0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF}),
		roce.BuildPFC(nil, src, 0xFF, [8]uint16{}),
		roce.BuildPFC(nil, src, 0x00, [8]uint16{9, 9, 9, 9, 9, 9, 9, 9}),
		roce.BuildPFC(nil, src, 0x81, [8]uint16{0: 0xFFFF, 7: 0}),
		roce.BuildPFC(nil, [6]byte{}, 0x18, [8]uint16{3: 0xFFFF, 4: 0xFFFF}),
		roce.BuildPause(nil, src, 0xFFFF),
		roce.BuildPause(nil, src, 0),
		roce.BuildPause(nil, src, 1),
		roce.BuildPause(nil, [6]byte{}, 0x1234),
	)
	reserved := roce.BuildPFC(nil, src, 0x08, [8]uint16{3: 500})
	reserved[16] = 0x01 // high octet of the enable vector
	wrongDst := roce.BuildPFC(nil, src, 0x08, [8]uint16{3: 500})
	wrongDst[5] = 0x02 // 01:80:c2:00:00:02
	pfc := roce.BuildPFC(nil, src, 0x20, [8]uint16{5: 4242})
	tagged := append(append(append([]byte(nil), pfc[:12]...), 0x81, 0x00, 0xA0, 0x64), pfc[12:]...)
	return append(frames, reserved, wrongDst, tagged)
}

func TestTsharkAgreesMACControl(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	frames := tsharkMACControlFrames()
	path := filepath.Join(t.TempDir(), "pfc.pcap")
	if err := trace.WriteFramesFile(path, frames, 1000); err != nil {
		t.Fatal(err)
	}

	fields := []string{"eth.src", "eth.dst", "macc.opcode", "macc.pause_time", "macc.cbfc.enbv",
		"macc.cbfc.enbv.not_zero", "macc.dst_address_invalid"}
	for p := range roce.PFCPriorities {
		fields = append(fields, "macc.cbfc.enbv.c"+strconv.Itoa(p))
	}
	for p := range roce.PFCPriorities {
		fields = append(fields, "macc.cbfc.pause_time.c"+strconv.Itoa(p))
	}
	args := []string{"-n", "-r", path, "-T", "fields", "-E", "separator=|"}
	for _, fl := range fields {
		args = append(args, "-e", fl)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines, want %d:\n%s", len(lines), len(frames), out)
	}
	for i, line := range lines {
		var m roce.MACControlFrame
		if err := roce.ParseMACControl(frames[i], &m); err != nil {
			t.Fatalf("frame %d: our parse: %v", i, err)
		}
		want := make([]string, len(fields))
		want[0] = macString(m.SrcMAC)
		want[1] = macString(m.DstMAC)
		want[2] = strconv.Itoa(int(m.Opcode))
		if m.DstMAC != roce.MACControlDst {
			want[6] = "1"
		}
		switch m.Opcode {
		case roce.MACControlPause:
			want[3] = strconv.Itoa(int(m.PauseTime))
		case roce.MACControlPFC:
			want[4] = strconv.Itoa(int(m.EnableVector))
			if m.EnableVector>>8 != 0 {
				want[5] = "1"
			}
			for p := range roce.PFCPriorities {
				want[7+p] = tsharkBool(m.Enabled(p))
				want[15+p] = strconv.Itoa(int(m.Time[p]))
			}
		}
		got := strings.Split(line, "|")
		if len(got) != len(want) {
			t.Errorf("frame %d (%v): tshark fields %q", i, &m, line)
			continue
		}
		for j := range want {
			if normTsharkMACC(got[j]) != want[j] {
				t.Errorf("frame %d (%v): %s = %q (tshark), want %q (ours)", i, &m, fields[j], got[j], want[j])
			}
		}
	}
}

func macString(a [6]byte) string {
	var b bytes.Buffer
	for i, c := range a {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&0xF, 16))
	}
	return b.String()
}

// normTsharkMACC canonicalises a tshark field value: numbers in any base
// become decimal, booleans 1 or 0 (tshark versions differ).
func normTsharkMACC(s string) string {
	switch s {
	case "True":
		return "1"
	case "False":
		return "0"
	}
	return normTshark(s)
}
