package tests

import (
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// The fabric examples on sim (docs/fabric.md): exact facts of their
// traces and reports.

// fabricWrites counts, per switch id, the mirror copies of WRITE packets
// in a run's trace.
func fabricWrites(t *testing.T, dir string) map[uint8]int {
	t.Helper()
	n := map[uint8]int{}
	var p roce.Packet
	err := trace.ReadFile(filepath.Join(dir, "trace.pcap"), func(tp trace.Packet) error {
		if tp.IsMACMirror() || (&roce.Parser{}).Parse(tp.Data, tp.OrigLen, &p) != nil || !p.Opcode.IsWrite() {
			return nil
		}
		n[p.Mirror().Switch]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
