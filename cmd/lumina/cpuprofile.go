package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the file a CPU profile of the whole command is
// written to (runtime/pprof's format, for go tool pprof). It is an
// environment variable rather than a flag so that every command, the
// agent and a lumina started by another program (a test, the lab) can be
// profiled alike; scripts/pgo.sh makes cmd/lumina/default.pgo, the
// profile the Go toolchain optimizes lumina with, from such profiles.
const cpuProfileEnv = "LUMINA_CPUPROFILE"

// startCPUProfile starts the CPU profile path names, when it is not
// empty, and returns the function that stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: %s: %w", cpuProfileEnv, path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %s: %w", cpuProfileEnv, path, err)
		}
		return nil
	}, nil
}

// profiled is run with the CPU profile of cpuProfileEnv around it: an
// error of the profile (the file cannot be created or written) is the
// command's error when the command succeeded, and is joined to its
// error otherwise.
func profiled(path string, run func() error) error {
	stop, err := startCPUProfile(path)
	if err != nil {
		return err
	}
	runErr := run()
	if err := stop(); err != nil {
		if runErr == nil {
			return err
		}
		return errors.Join(runErr, err)
	}
	return runErr
}
