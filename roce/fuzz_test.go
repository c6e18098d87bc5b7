package roce

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/roce-vectors.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if b, err := hex.DecodeString(strings.TrimSpace(line)); err == nil && len(b) > 0 {
			f.Add(b, uint16(0))
			f.Add(b[:len(b)/2], uint16(0))
		}
	}
	mirrored, _ := vectorSpecs[1].Append(nil)
	ApplyMirror(mirrored, MirrorMeta{Seq: 9, TimestampNs: 100, Event: EventCorrupt}, DefaultMirrorPort, 1)
	f.Add(mirrored, uint16(DefaultMirrorPort))
	f.Fuzz(func(t *testing.T, frame []byte, mirrorPort uint16) {
		pr := Parser{VerifyICRC: true, MirrorPort: mirrorPort}
		var p Packet
		if err := pr.Parse(frame, 0, &p); err != nil {
			return
		}
		if p.PayloadOff > p.ICRCOff || p.PayloadLen < 0 || len(p.Payload) > p.PayloadLen || p.ICRCOff+ICRCLen != p.L3+p.IPLen {
			t.Fatalf("inconsistent offsets: %+v", p)
		}
		_ = p.Opcode.String()
		_ = p.Mirror()
		if p.Truncated() != (p.ICRC == ICRCTruncated) {
			t.Fatalf("Truncated() = %v but ICRC = %v", p.Truncated(), p.ICRC)
		}
		if !p.Truncated() && !p.MirrorRaw {
			cp := append([]byte(nil), frame...)
			if !SetICRC(cp) {
				t.Fatal("SetICRC failed on a frame that parsed")
			}
			var q Packet
			if err := pr.Parse(cp, 0, &q); err != nil || q.ICRC != ICRCOK {
				t.Fatalf("after SetICRC: %v, %v", err, q.ICRC)
			}
		}
		cp := append([]byte(nil), frame...)
		RestoreMirror(cp, mirrorPort)
		ApplyMirror(cp, MirrorMeta{}, mirrorPort, 0)
	})
}
