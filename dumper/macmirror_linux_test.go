//go:build linux

package dumper

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
)

// blastMixed sends copies first..last of the mixed stream (RoCE copies of
// s and wrapped PFC copies) from ltx in ns, then the extra frames.
func blastMixed(t *testing.T, ns *testutil.Netns, s *MirrorStream, first, last uint64, extra ...[]byte) {
	t.Helper()
	err := ns.Do(func() error {
		b, err := OpenBlaster("ltx")
		if err != nil {
			return err
		}
		defer b.Close()
		buf := make([]byte, 0, 10000)
		for seq := first; seq <= last; seq++ {
			if err := b.Send(mixedFrame(buf[:0], s, seq)); err != nil {
				return err
			}
		}
		for _, x := range extra {
			if err := b.Send(x); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAFPacketMACMirror: the kernel filter lets wrapped PFC copies in with
// the RoCE copies; the file holds both, in sequence order, and passes the
// integrity check. A raw PFC frame stays out (the filter drops it: it is
// not even counted as foreign).
func TestAFPacketMACMirror(t *testing.T) {
	const n = 5000
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	out := filepath.Join(t.TempDir(), "dumper-0.pcap")
	d := startDumper(t, rx, Config{Name: "dumper-0", Workers: 2, FanoutMode: "lb", Capacity: n, OutPath: out})
	blastMixed(t, tx, s, 1, n, roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 1}))
	waitFor(t, d, n)
	r, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if r.Captured != n || r.Dropped() != 0 || r.Foreign != 0 {
		t.Fatalf("captured %d dropped %d foreign %d, want %d 0 0", r.Captured, r.Dropped(), r.Foreign, n)
	}
	checkMixed(t, out, s, DefaultSnapLen, 1, n, r)
}

// TestDPDKMACMirror: the DPDK C filter keeps wrapped PFC copies too.
func TestDPDKMACMirror(t *testing.T) {
	const n = 5000
	exe := dpdkLumina(t)
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	out := filepath.Join(t.TempDir(), "dumper-0.pcap")
	p := startDump(t, exe, rx, "--backend", "dpdk", "--name", "dumper-0", "--capacity", "10000", "--out", out,
		"--eal", "--no-huge -m 256 --no-pci --log-level=lib.eal:error --vdev=net_af_packet0,iface=lrx,framecnt=8192")
	raw := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 1})
	blastMixed(t, tx, s, 1, n, raw)
	time.Sleep(300 * time.Millisecond)
	r := p.stop(t)
	if r.Captured != n || r.Dropped() != 0 || r.Foreign != 1 {
		t.Fatalf("captured %d dropped %d foreign %d, want %d 0 1", r.Captured, r.Dropped(), r.Foreign, n)
	}
	checkMixed(t, out, s, DefaultSnapLen, 1, n, r)
}
