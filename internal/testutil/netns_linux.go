package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

var nsCounter atomic.Int64

// Netns is a network namespace a test created; it is deleted (with its
// interfaces) when the test ends.
type Netns struct {
	Name string
}

// RequireNetns skips unless the test can create network namespaces (root
// and the ip command from iproute2).
func RequireNetns(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	RequireTool(t, "ip", "iproute2")
}

// NewNetns creates a namespace named lumina-<tag>-<pid>-<n> and brings its
// loopback up.
func NewNetns(t testing.TB, tag string) *Netns {
	t.Helper()
	RequireNetns(t)
	n := &Netns{Name: fmt.Sprintf("lumina-%s-%d-%d", tag, os.Getpid(), nsCounter.Add(1))}
	MustRun(t, "ip", "netns", "add", n.Name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", n.Name).CombinedOutput(); err != nil {
			t.Errorf("deleting netns %s: %v: %s", n.Name, err, out)
		}
	})
	n.Run(t, "ip", "link", "set", "lo", "up")
	return n
}

// Run runs a command inside the namespace (ip netns exec) and fails the test
// if it fails.
func (n *Netns) Run(t testing.TB, args ...string) string {
	t.Helper()
	return MustRun(t, append([]string{"ip", "netns", "exec", n.Name}, args...)...)
}

// Do runs fn on an OS thread switched into the namespace: sockets fn opens
// belong to the namespace for their whole life.
func (n *Netns) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/var/run/netns/" + n.Name)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", n.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			errc <- fmt.Errorf("restoring netns: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Veth creates a veth pair with ifA in a and ifB in b, both up, with the
// given addresses (CIDR; empty for none).
func Veth(t testing.TB, a *Netns, ifA, addrA string, b *Netns, ifB, addrB string) {
	t.Helper()
	MustRun(t, "ip", "link", "add", ifA, "netns", a.Name, "type", "veth", "peer", "name", ifB, "netns", b.Name)
	for _, x := range []struct {
		ns        *Netns
		ifn, addr string
	}{{a, ifA, addrA}, {b, ifB, addrB}} {
		if x.addr != "" {
			x.ns.Run(t, "ip", "addr", "add", x.addr, "dev", x.ifn)
		}
		x.ns.Run(t, "ip", "link", "set", x.ifn, "up")
	}
}

// MustRun runs a command and fails the test with its output on error.
func MustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
