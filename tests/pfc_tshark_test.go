package tests

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestTsharkDecodesRunPFC: the PFC frames of a run (pfc-storm on sim: the
// responder's XOFFs and the switch's XOFF/XON to the requester), unwrapped
// from their mirror copies, decode in tshark as lumina decodes them:
// source, opcode, enable vector and priority-3 quanta, frame by frame.
func TestTsharkDecodesRunPFC(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	dir := exampleRun(t, "../examples/pfc-storm.yaml")
	var frames [][]byte
	var mm roce.MACMirror
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if roce.ParseMACMirror(tp.Data, &mm) == nil {
			frames = append(frames, append([]byte(nil), mm.Frame...))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 100 {
		t.Fatalf("%d PFC frames in the run, want the storm's hundreds", len(frames))
	}
	path := filepath.Join(t.TempDir(), "pfc.pcap")
	if err := trace.WriteFramesFile(path, frames, 1000); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=|",
		"-e", "eth.src", "-e", "macc.opcode", "-e", "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c3").Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames", len(lines), len(frames))
	}
	xon := 0
	for i, line := range lines {
		var m roce.MACControlFrame
		if err := roce.ParseMACControl(frames[i], &m); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if m.Time[3] == 0 {
			xon++
		}
		s := m.SrcMAC
		want := fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x|%d|%d|%d", s[0], s[1], s[2], s[3], s[4], s[5], m.Opcode, m.EnableVector, m.Time[3])
		got := strings.Split(line, "|")
		for j := 1; j < len(got); j++ {
			got[j] = normTshark(got[j])
		}
		if strings.Join(got, "|") != want {
			t.Errorf("frame %d (%v): tshark %q, lumina %q", i, &m, strings.Join(got, "|"), want)
		}
	}
	if xon == 0 {
		t.Error("no XON among the run's PFC frames")
	}
}

// normTshark canonicalises a tshark number: any base becomes decimal.
func normTshark(s string) string {
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return strconv.FormatUint(v, 10)
	}
	return s
}
