package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers"
)

// swapMirrorTimestamps returns the pcap with the switch timestamps (the
// destination MACs) of packets i and i+1 swapped: the later copy's
// timestamp steps back.
func swapMirrorTimestamps(t *testing.T, pcap []byte, i int) []byte {
	t.Helper()
	b := append([]byte(nil), pcap...)
	var frames [][]byte
	for off := 24; off+16 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		frames = append(frames, b[off+16:off+16+n])
		off += 16 + n
	}
	var tmp [6]byte
	copy(tmp[:], frames[i][:6])
	copy(frames[i][:6], frames[i+1][:6])
	copy(frames[i+1][:6], tmp[:])
	return b
}

// TestTimestampTolerance: a timestamp stepping back fails integrity; the
// --timestamp-tolerance flag or a run's switch.timestamp-tolerance-ns
// allows it; the default stays 0.
func TestTimestampTolerance(t *testing.T) {
	pcap, err := os.ReadFile(filepath.Join("..", "..", "examples", "traces", "write-drop.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.pcap")
	write(t, dir, "t.pcap", swapMirrorTimestamps(t, pcap, 5))
	code, out, _ := runCLI("analyze", trace)
	if code != 1 || !strings.Contains(out, "timestamp") {
		t.Errorf("analyze: exit %d, want 1 and a timestamp integrity failure:\n%s", code, out)
	}
	code, out, _ = runCLI("analyze", trace, "--timestamp-tolerance", "1000000")
	if code != 0 {
		t.Errorf("analyze --timestamp-tolerance 1000000: exit %d, want 0:\n%s", code, out)
	}

	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, run, "report.json", []byte(`{"schema": "lumina.report/v1"}`))
	write(t, run, "config.yaml", []byte("name: x\nswitch:\n  timestamp-tolerance-ns: 50\n"))
	if o := analyzers.DirIntegrity(run); o.TimeToleranceNs != 50 || !o.ExpectFirstSeq {
		t.Errorf("DirIntegrity(run dir with tolerance 50) = %+v, want TimeToleranceNs 50, ExpectFirstSeq", o)
	}
	write(t, run, "config.yaml", []byte("name: x\n"))
	if o := analyzers.DirIntegrity(run); o.TimeToleranceNs != 0 {
		t.Errorf("DirIntegrity(run dir) = %+v, want TimeToleranceNs 0", o)
	}
}
