//go:build verbs && linux && cgo

package verbs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/sim"
)

// TestCConstants checks the values the pure-Go code hard-codes against
// libibverbs' header.
func TestCConstants(t *testing.T) {
	for name, v := range cConstants() {
		if v[0] != v[1] {
			t.Errorf("%s: Go %d, C %d", name, v[0], v[1])
		}
	}
}

// TestHeaderABI checks the tests' fixture of libibverbs values (testABI)
// against the headers the package is built with (headerABI).
func TestHeaderABI(t *testing.T) {
	got, want := headerABI(), testABI
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		if g, w := gv.Field(i).Uint(), wv.Field(i).Uint(); g != w {
			t.Errorf("header %s = %#x, test fixture %#x", gv.Type().Field(i).Name, g, w)
		}
	}
	for i := range gv.NumField() {
		if gv.Field(i).Uint() == 0 {
			t.Errorf("header %s is 0", gv.Type().Field(i).Name)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	loop := sim.NewRealLoop()
	defer loop.Close()
	if _, err := Open(Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("Open without a Loop = %v, want ErrConfig", err)
	}
	if _, err := Open(Config{Loop: loop, Root: t.TempDir()}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open on an empty tree = %v, want ErrNoDevice", err)
	}
	// The fake tree names a device libibverbs does not have.
	if _, err := Open(Config{Loop: loop, Root: "testdata", Device: "mlx5_1"}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open(fake mlx5_1) = %v, want ErrNoDevice", err)
	}
}

// requireDevice skips unless the machine has an RDMA device; it returns
// its name (LUMINA_VERBS_DEVICE picks one).
func requireDevice(t *testing.T) string {
	t.Helper()
	devs, err := Devices("/")
	if err != nil {
		// Not testutil's skipOrFail: CI machines have no RDMA NIC, and
		// Soft-RoCE needs a kernel with CONFIG_RDMA_RXE.
		t.Skipf("%s (Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IF)", strings.TrimPrefix(err.Error(), "verbs: "))
	}
	if d := os.Getenv("LUMINA_VERBS_DEVICE"); d != "" {
		return d
	}
	return devs[0]
}

// TestLoopback connects two QPs of one device to each other and runs
// WRITE, WRITE with immediate, SEND with immediate and READ through the
// generator's interface.
func TestLoopback(t *testing.T) {
	name := requireDevice(t)
	loop := sim.NewRealLoop()
	loop.Start()
	defer loop.Close()
	d, err := Open(Config{Loop: loop, Device: name, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	loopback(t, loop, d)
}

// TestLoopbackODP runs the loopback over ODP memory, with and without
// prefetching, on a device that supports ODP (mlx5; rdma_rxe on kernels
// with its ODP support). On mlx5 the ODP MR statistics must show the
// faults (without prefetch) or the prefetched pages (with it).
func TestLoopbackODP(t *testing.T) {
	name := requireDevice(t)
	for _, prefetch := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefetch=%v", prefetch), func(t *testing.T) {
			loop := sim.NewRealLoop()
			loop.Start()
			defer loop.Close()
			d, err := Open(Config{Loop: loop, Device: name, Seed: 1, ODP: true, ODPPrefetch: prefetch})
			if errors.Is(err, ErrNoODP) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			loopback(t, loop, d)
			var m map[string]uint64
			generator.PostAndWait(loop.Post)(func() { m = d.CounterMap() })
			if _, ok := m["page_faults"]; !ok {
				t.Logf("%s reports no ODP MR statistics (not mlx5?): %v", name, m)
				return
			}
			t.Logf("%s: page_faults %d page_faults_handled %d page_prefetch %d", name, m["page_faults"], m["page_faults_handled"], m["page_prefetch"])
			if prefetch && m["page_prefetch"] == 0 {
				t.Errorf("prefetched MRs: page_prefetch = 0, want > 0")
			}
			if !prefetch && m["page_faults"] == 0 {
				t.Errorf("ODP MRs without prefetch: page_faults = 0, want > 0")
			}
		})
	}
}

// loopback runs the traffic of TestLoopback on d.
func loopback(t *testing.T, loop *sim.RealLoop, d *Device) {
	t.Helper()
	exec := generator.PostAndWait(loop.Post)
	var err error
	comps := make(chan generator.Completion, 64)
	var a, b generator.QP
	var ma, mb *generator.MR
	exec(func() {
		d.SetCompletionHandler(func(c generator.Completion) { comps <- c })
		a, b = d.NewQP(), d.NewQP()
		src := make([]byte, 8192)
		for i := range src {
			src[i] = byte(i * 7)
		}
		ma, mb = d.RegMR(src), d.RegMR(make([]byte, 8192))
		ip := d.IPs()[0]
		attr := func(peer generator.QP) generator.ConnectAttr {
			return generator.ConnectAttr{RemoteQPN: peer.QPN(), RemotePSN: peer.PSN(), RemoteIP: ip, LocalIP: ip, MTU: 1024}
		}
		if err = a.Connect(attr(b)); err == nil {
			err = b.Connect(attr(a))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(want generator.CompletionOp) generator.Completion {
		t.Helper()
		select {
		case c := <-comps:
			if c.Status != generator.StatusSuccess || c.Op != want {
				t.Fatalf("completion %+v, want %v SUCCESS", c, want)
			}
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("no %v completion", want)
		}
		return generator.Completion{}
	}
	post := func(fn func() error) {
		t.Helper()
		var err error
		exec(func() { err = fn() })
		if err != nil {
			t.Fatal(err)
		}
	}
	post(func() error {
		return a.PostSend(generator.SendWR{ID: 1, Op: generator.WRWrite, Local: ma, Length: 4096, RemoteAddr: mb.Addr, RKey: mb.RKey})
	})
	if c := wait(generator.CompWrite); c.WRID != 1 || c.QPN != a.QPN() {
		t.Errorf("WRITE completion %+v", c)
	}
	if !bytes.Equal(mb.Buf[:4096], ma.Buf[:4096]) {
		t.Error("WRITE: data differs")
	}
	post(func() error { return b.PostRecv(generator.RecvWR{ID: 2, MR: mb, Offset: 4096, Length: 4096}) })
	post(func() error {
		return a.PostSend(generator.SendWR{ID: 3, Op: generator.WRSendImm, Local: ma, Length: 100, Imm: 0xfeedbeef})
	})
	for range 2 {
		c := <-comps
		switch c.Op {
		case generator.CompSend:
		case generator.CompRecv:
			if c.WRID != 2 || !c.HasImm || c.Imm != 0xfeedbeef || c.ByteLen != 100 {
				t.Errorf("RECV completion %+v", c)
			}
		default:
			t.Errorf("completion %+v", c)
		}
	}
	post(func() error {
		return b.PostSend(generator.SendWR{ID: 4, Op: generator.WRRead, Local: mb, Offset: 4096, Length: 4096, RemoteAddr: ma.Addr + 4096, RKey: ma.RKey})
	})
	wait(generator.CompRead)
	if !bytes.Equal(mb.Buf[4096:], ma.Buf[4096:]) {
		t.Error("READ: data differs")
	}
	exec(func() {
		if m := d.CounterMap(); len(m) == 0 {
			t.Log("no counters readable")
		}
	})
}
