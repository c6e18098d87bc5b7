package softrnic

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/internal/testutil"
)

// TestTapDecodesInTshark writes a lossy WRITE and a READ exchange through
// the sim pcap tap and checks that tshark reads the same opcodes and PSNs
// the link carried.
func TestTapDecodesInTshark(t *testing.T) {
	tshark := testutil.RequireTshark(t)
	for _, op := range []WROpcode{WRWrite, WRRead, WRSendImm} {
		p := newPair(t, pairOpts{attr: ConnectAttr{Timeout: new(uint8(8))}})
		path := filepath.Join(t.TempDir(), "tap.pcap")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.net.Tap(p.tapEndpoint, f, 0); err != nil {
			t.Fatal(err)
		}
		p.drop = dropAt(3, 1)
		if op == WRSendImm {
			p.rs.PostRecv(RecvWR{MR: p.rspMR, Length: 8192})
		}
		p.rq.PostSend(SendWR{Op: op, Local: p.reqMR, Length: 8000, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey, Imm: 5})
		p.run(time.Second)
		if err := p.net.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=,",
			"-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn").Output()
		if err != nil {
			t.Fatalf("tshark: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		// The tap records frames at transmission start, after the hook: dropped
		// frames are not on it.
		var want []string
		for _, fr := range p.frames {
			if !fr.Dropped {
				psn := (uint32(fr.PSN) + uint32(p.rq.PSN())) & 0xFFFFFF
				if fr.Op.IsCNP() {
					psn = 0
				}
				want = append(want, strconv.Itoa(int(fr.Op))+","+strconv.Itoa(int(psn)))
			}
		}
		if strings.Join(lines, " ") != strings.Join(want, " ") {
			t.Errorf("%v: tshark read\n%s\nlink carried\n%s", op, strings.Join(lines, " "), strings.Join(want, " "))
		}
	}
}
