package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time of the calling thread (getrusage(2)
// RUSAGE_THREAD).
func threadCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// burnCPU spends d of its thread's CPU time: the profile's samples (one
// every 10 ms of CPU) then do not depend on what else the machine runs.
//
//go:noinline
func burnCPU(t *testing.T, d time.Duration) uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := uint64(88172645463325252)
	for end := threadCPU(t) + d; threadCPU(t) < end; {
		for range 1 << 14 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	return x
}

func TestProfiled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	if err := profiled(path, io.Discard, func() error { burnCPU(t, 300*time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	// The profile holds the samples of the function that ran (its name
	// is in the profile's string table).
	if b := gunzipFile(t, path); !bytes.Contains(b, []byte(".burnCPU")) {
		t.Errorf("the profile (%d bytes) has no sample of burnCPU", len(b))
	}

	// The command's error is returned as it is.
	boom := errors.New("boom")
	if err := profiled(filepath.Join(dir, "2.prof"), io.Discard, func() error { return boom }); err != boom {
		t.Errorf("profiled returned %v, want the command's error", err)
	}

	// A profile that cannot be written (a full device): the command's
	// success becomes an error; after its failure the error is printed
	// and the command's stands.
	t.Run("full", func(t *testing.T) {
		// null(4): writes to /dev/full fail with ENOSPC. Not a device
		// (a container without it): creating it would be a file.
		if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Skipf("no /dev/full device: %v", err)
		}
		var stderr strings.Builder
		short := func() error { burnCPU(t, 50*time.Millisecond); return nil }
		if err := profiled("/dev/full", &stderr, short); err == nil || !strings.Contains(err.Error(), cpuProfileEnv) {
			t.Errorf("a profile on /dev/full: %v, want an error naming %s", err, cpuProfileEnv)
		}
		if err := profiled("/dev/full", &stderr, func() error { short(); return boom }); err != boom || !strings.Contains(stderr.String(), "/dev/full") {
			t.Errorf("a failed command with a profile on /dev/full: %v, stderr %q; want its error, and the profile's on stderr", err, stderr.String())
		}
	})

	// No profile: the command runs alone.
	ran := false
	if err := profiled("", io.Discard, func() error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("without a profile: err %v, ran %v", err, ran)
	}

	// A file that cannot be created: an error naming the variable, and the
	// command does not run.
	ran = false
	err := profiled(filepath.Join(dir, "missing", "cpu.prof"), io.Discard, func() error { ran = true; return nil })
	if err == nil || !strings.Contains(err.Error(), cpuProfileEnv) || ran {
		t.Errorf("an uncreatable profile: err %v, ran %v; want an error naming %s and no run", err, ran, cpuProfileEnv)
	}
}
