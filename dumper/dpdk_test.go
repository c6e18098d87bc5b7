//go:build linux

package dumper

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/internal/testutil"
	"github.com/netlumina/lumina/roce"
)

var (
	dpdkOnce sync.Once
	dpdkExe  string
	dpdkErr  string
)

// dpdkLumina builds lumina with -tags dpdk once per test binary: CI runs
// go test without tags, so the dpdk backend is tested as a subprocess.
func dpdkLumina(t *testing.T) string {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "pkg-config", "pkg-config")
	if err := exec.Command("pkg-config", "--exists", "libdpdk").Run(); err != nil {
		testutil.RequireTool(t, "libdpdk (pkg-config --exists libdpdk)", "libdpdk-dev")
	}
	dpdkOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			dpdkErr = err.Error()
			return
		}
		exe := filepath.Join(dir, "lumina-dpdk")
		out, err := exec.Command("go", "build", "-tags", "dpdk", "-o", exe, "github.com/netlumina/lumina/cmd/lumina").CombinedOutput()
		if err != nil {
			dpdkErr = "go build -tags dpdk: " + err.Error() + "\n" + string(out)
			return
		}
		dpdkExe = exe
	})
	if dpdkErr != "" {
		t.Fatal(dpdkErr)
	}
	return dpdkExe
}

// dumpProc is a lumina dump child process.
type dumpProc struct {
	cmd      *exec.Cmd
	stdout   strings.Builder
	stderr   strings.Builder // written by the scanner until scanDone
	scanDone chan struct{}
}

// startDump runs "lumina dump args..." in ns and waits until it captures.
func startDump(t *testing.T, exe string, ns *testutil.Netns, args ...string) *dumpProc {
	t.Helper()
	p := &dumpProc{scanDone: make(chan struct{})}
	p.cmd = exec.Command("ip", append([]string{"netns", "exec", ns.Name, exe, "dump", "--format", "json"}, args...)...)
	p.cmd.Stdout = &p.stdout
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.scanDone
			p.cmd.Wait()
		}
	})
	ready := make(chan bool, 1)
	go func() {
		defer close(p.scanDone)
		sc := bufio.NewScanner(pipe)
		sent := false
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			if !sent && strings.HasPrefix(sc.Text(), "lumina: dump: capturing") {
				ready <- true
				sent = true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			<-p.scanDone
			p.cmd.Wait()
			t.Fatalf("lumina dump exited before capturing:\n%s", p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("lumina dump not ready after 60s")
	}
	return p
}

// stop sends SIGTERM and returns the JSON report.
func (p *dumpProc) stop(t *testing.T) Report {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.scanDone
	err := p.cmd.Wait()
	var r Report
	if jerr := json.Unmarshal([]byte(p.stdout.String()), &r); err != nil || jerr != nil {
		t.Fatalf("lumina dump: %v %v\nstdout:\n%s\nstderr:\n%s", err, jerr, p.stdout.String(), p.stderr.String())
	}
	return r
}

func TestDPDKStream(t *testing.T) {
	exe := dpdkLumina(t)
	for _, tc := range []struct {
		name     string
		workers  string
		vdev     string
		frameLen int
		n        uint64
	}{
		{"af_packet-2q", "2", "net_af_packet0,iface=lrx,qpairs=2,framecnt=8192", 202, 20000},
		{"af_packet-jumbo", "1", "net_af_packet0,iface=lrx,framesz=10240,blocksz=20480,framecnt=2048", 9002, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, rx := vethPair(t, 9500)
			s, _ := NewMirrorStream(tc.frameLen, roce.DefaultMirrorPort)
			out := filepath.Join(t.TempDir(), "dumper-0.pcap")
			p := startDump(t, exe, rx, "--backend", "dpdk", "--name", "dumper-0", "--workers", tc.workers,
				"--snaplen", "9216", "--capacity", "30000", "--out", out,
				"--eal", "--no-huge -m 256 --no-pci --log-level=lib.eal:error --vdev="+tc.vdev)
			blast(t, tx, s, 1, tc.n, true, [][]byte{s.Original(nil, 1)})
			time.Sleep(300 * time.Millisecond)
			r := p.stop(t)
			t.Logf("report %+v", r)
			// The EAL's runtime dir (the default file prefix) goes with the dumper.
			if _, err := os.Stat(filepath.Join(ealRuntimeDir(), fmt.Sprintf("lumina-%d", p.cmd.Process.Pid))); !os.IsNotExist(err) {
				t.Errorf("the EAL runtime dir of the stopped dumper is still there (%v)", err)
			}
			if r.Captured != tc.n || r.Dropped() != 0 || r.Foreign != 1 {
				t.Fatalf("captured %d dropped %d foreign %d, want %d 0 1", r.Captured, r.Dropped(), r.Foreign, tc.n)
			}
			checkStream(t, out, s, MaxSnapLen, seqRange(1, tc.n))
			v, err := integrity.CheckFiles(integrity.Counters{
				SwitchMirrored: integrity.Known(tc.n), SwitchRoCEReceived: integrity.Known(tc.n),
				Dumpers: []integrity.DumperCounters{r.Counters()},
			}, integrity.Options{ExpectFirstSeq: true}, out)
			if err != nil || !v.Pass {
				t.Errorf("integrity = %v, %v; want pass", v, err)
			}
		})
	}
}

// TestDPDKOverflow: a full buffer counts drops and frees every mbuf (the
// public dumper leaked them, so rx_nombuf followed), and every frame sent is
// accounted for: captured, dropped as over capacity, or dropped in the
// kernel ring when the lcore fell behind (net_af_packet does not report
// those itself; how many depends on the machine's load, their sum does
// not).
func TestDPDKOverflow(t *testing.T) {
	exe := dpdkLumina(t)
	tx, rx := vethPair(t, 1500)
	s, _ := NewMirrorStream(130, roce.DefaultMirrorPort)
	out := filepath.Join(t.TempDir(), "dumper-0.pcap")
	p := startDump(t, exe, rx, "--backend", "dpdk", "--capacity", "1000", "--out", out,
		"--eal", "--no-huge -m 256 --no-pci --log-level=lib.eal:error --vdev=net_af_packet0,iface=lrx,framecnt=8192")
	blast(t, tx, s, 1, 50000, false, nil)
	time.Sleep(300 * time.Millisecond)
	r := p.stop(t)
	const sent, pool = 50000, 2048 + 1024 - 1 // lum_setup's mbuf pool for one queue
	if len(r.PerWorker) != 1 {
		t.Fatalf("report %+v: want one worker", r)
	}
	rcv := r.PerWorker[0].Received
	t.Logf("received %d, kernel drops %d, foreign %d", rcv, r.KernelDropped, r.Foreign)
	if r.Captured != 1000 || !r.Full || r.BufferDropped != rcv-1000 || rcv+r.KernelDropped != sent+r.Foreign {
		t.Fatalf("report %+v, want 1000 captured, full, the other %d received as buffer drops, received + kernel drops = %d sent",
			r, rcv, sent)
	}
	if rcv <= pool {
		t.Errorf("received %d frames, no more than the mbuf pool holds (%d): mbufs not freed?", rcv, pool)
	}
	if ps := readAll(t, out); len(ps) != 1000 {
		t.Fatalf("%s has %d packets, want 1000", out, len(ps))
	}
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "lumina-dpdk-test-") }
