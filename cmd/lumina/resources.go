package main

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/netlumina/lumina/config"
)

// memoryLimit is the --memory-limit flag of run and validate: the most
// memory a run may plan to use on this machine (config.Resources).
type memoryLimit struct {
	v   int64
	set bool
}

func (m *memoryLimit) String() string {
	if !m.set {
		return ""
	}
	if m.v == 0 {
		return "off"
	}
	return config.Bytes(m.v)
}

func (m *memoryLimit) Set(s string) error {
	if s == "off" {
		m.v, m.set = 0, true
		return nil
	}
	v, err := config.ParseBytes(s)
	if err != nil {
		return err
	}
	m.v, m.set = v, true
	return nil
}

// addMemoryLimit defines --memory-limit on fs.
func addMemoryLimit(fs *flag.FlagSet) *memoryLimit {
	m := &memoryLimit{}
	fs.Var(m, "memory-limit", "most `memory` a sim or netns run may need, e.g. 16GiB, or off (default: half of this machine's memory)")
	return m
}

// resources returns the limits lumina validate and lumina run check tests
// against: the memory limit (the flag, else config.DefaultMemoryFraction
// of physical memory, unchecked when that is unknown), the free disk
// under the results directory (outDir, when set, else the test's
// result-path) and in the spool directory (os.TempDir, where the sim and
// netns dumpers write).
func resources(m *memoryLimit, outDir string) config.Resources {
	r := config.Resources{MemoryBytes: m.v}
	if !m.set {
		if total, ok := physicalMemory(); ok {
			r.MemoryBytes = int64(float64(total) * config.DefaultMemoryFraction)
		}
	}
	r.DiskFree = func(resultPath string) (int64, bool) {
		dir := resultPath
		if outDir != "" {
			dir = outDir
		}
		return diskFree(existingAncestor(dir))
	}
	r.SpoolFree = func(resultPath string) (string, int64, bool, bool) {
		spool := os.TempDir()
		free, ok := diskFree(spool)
		dir := resultPath
		if outDir != "" {
			dir = outDir
		}
		return spool, free, sameFS(spool, existingAncestor(dir)), ok
	}
	return r
}

// physicalMemory returns MemTotal from /proc/meminfo, in bytes.
func physicalMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		return kb << 10, err == nil && kb > 0
	}
	return 0, false
}

// existingAncestor returns the nearest directory at or above dir that
// exists (the results directory may not exist yet).
func existingAncestor(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return d
		}
		d = parent
	}
}
